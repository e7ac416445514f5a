//! A set of new input shapes rebuilt from a spare set of other shapes (`graph/prepare.rs`,
//! `graph/set_pool.rs`): the steps whose bindings and shapes did not change keep their
//! dispatches, a re-planned step whose output keeps its shape keeps its buffer, and every result
//! matches the host reference, run after run, as one input grows like a decoder's cache.

mod common;

use std::collections::BTreeMap;

use common::*;
use ep_kernels::graph::{build_program, thread_steps_kept, ExecOptions, Executable, HostTensor, Node, ValueInfo};
use ep_kernels::DType;
use rand::{Rng, SeedableRng};

fn value(name: &str, rank: usize) -> ValueInfo {
    common::graph::symbolic(name, rank)
}

fn matmul(name: &str, a: &ValueInfo, b: &ValueInfo, out: &ValueInfo) -> Node {
    Node {
        name: name.into(),
        op_type: "MatMul".into(),
        domain: String::new(),
        since_version: 13,
        inputs: vec![Some(a.clone()), Some(b.clone())],
        outputs: vec![Some(out.clone())],
        attrs: BTreeMap::new(),
        assigned_ep: None,
    }
}

fn matmul_ref(a: &[f32], b: &[f32], m: usize, k: usize, n: usize) -> Vec<f32> {
    (0..m * n).map(|i| (0..k).map(|p| a[i / n * k + p] * b[p * n + i % n]).sum()).collect()
}

/// `Y = X·B` (nothing in it grows) and `U = (Xt·P)·B`, where `Xt` is [5, n] and `P` [n, 7]:
/// `S = Xt·P` is re-planned for every `n` but keeps its [5, 7] shape, so `U`'s step reads the
/// same buffer with the same shape and keeps its dispatch.
#[test]
fn a_growing_input_replans_only_the_steps_that_read_it() {
    let gpu = gpu();
    let (x, b, xt, p) = (value("X", 2), value("B", 2), value("Xt", 2), value("P", 2));
    let (y, s, u) = (value("Y", 2), value("S", 2), value("U", 2));
    let nodes = vec![matmul("y", &x, &b, &y), matmul("s", &xt, &p, &s), matmul("u", &s, &b, &u)];
    let names: Vec<String> = ["X", "B", "Xt", "P"].iter().map(|s| s.to_string()).collect();
    let program = build_program(&nodes, &names, &["Y".to_string(), "U".to_string()], vec![]).unwrap();
    let exec = Executable::new(gpu, program, ExecOptions::default()).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(rand::random());
    let mut kept_per_run = Vec::new();
    for n in 3..12u64 {
        let mut fresh = |len: usize| (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect::<Vec<f32>>();
        let (xv, bv, xtv, pv) = (fresh(5 * 7), fresh(7 * 7), fresh(5 * n as usize), fresh(n as usize * 7));
        let shapes: [&[u64]; 4] = [&[5, 7], &[7, 7], &[5, n], &[n, 7]];
        let bytes: Vec<Vec<u8>> = [&xv, &bv, &xtv, &pv].iter().map(|v| to_bytes(v, DType::F32)).collect();
        let inputs: Vec<HostTensor> = shapes
            .iter()
            .zip(&bytes)
            .map(|(shape, data)| HostTensor { dtype: DType::F32.into(), shape, data })
            .collect();
        let mut got = vec![vec![f32::NAN; 35]; 2];
        let before = thread_steps_kept();
        exec.run(&inputs, &mut |i, shape, data| {
            assert_eq!(shape, [5, 7]);
            got[i] = from_bytes(data, DType::F32);
            Ok(())
        })
        .unwrap();
        kept_per_run.push(thread_steps_kept() - before);
        let want_y = matmul_ref(&xv, &bv, 5, 7, 7);
        let want_u = matmul_ref(&matmul_ref(&xtv, &pv, 5, n as usize, 7), &bv, 5, 7, 7);
        for (what, g, w) in [("Y", &got[0], &want_y), ("U", &got[1], &want_u)] {
            for (i, (a, e)) in g.iter().zip(w).enumerate() {
                assert!((a - e).abs() <= 1e-4 * (1.0 + e.abs()), "n={n} {what}[{i}]: {a} vs {e}");
            }
        }
    }
    // The first two sets are new; from the third on each is rebuilt from the older spare one,
    // keeping Y's and U's steps and re-planning S.
    assert_eq!(kept_per_run[..2], [0, 0], "{kept_per_run:?}");
    assert!(kept_per_run[2..].iter().all(|&k| k == 2), "{kept_per_run:?}");
}

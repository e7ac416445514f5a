//! SwiGLU over 4-bit weights as onnxruntime-genai's builder writes it (`MatMulNBits` gate and up
//! projections of one A, the gate's SiLU as `Mul(g, Sigmoid(g))`, then `Mul(silu, up)`): the up
//! projection joins the gate's step. One row runs one kernel over both weights (on adapters with
//! subgroups); more rows run the up projection into a scratch buffer, then the gate product gated
//! by it. Against float64 on fresh random weights, N off any tile multiple; an up projection with
//! zero points stays its own step.

mod common;

use common::graph::{node, run_graph, step_ops, val, T};
use ep_kernels::graph::{Attr, Node};
use ep_kernels::ElemType;
use rand::Rng;

const K: u64 = 96;
const N: u64 = 67;
const BLOCK: u64 = 32;

/// Random 4-bit weights `[N, K / BLOCK, BLOCK / 2]` and their scales; the dequantised `[N, K]`.
fn weights(rng: &mut impl Rng, ty: ElemType) -> (T, T, Vec<f64>) {
    let q: Vec<u8> = (0..N * K).map(|_| rng.random_range(0..16u8)).collect();
    let packed: Vec<u8> = q.chunks(2).map(|p| p[0] | (p[1] << 4)).collect();
    let blocks = K / BLOCK;
    let s: Vec<f32> = (0..N * blocks).map(|_| rng.random_range(0.01f32..0.05)).collect();
    let scales = if ty == ElemType::F16 { T::f16(&[N * blocks], &s) } else { T::f32(&[N * blocks], &s) };
    let sv = scales.values();
    let w = (0..N * K).map(|i| (f64::from(q[i as usize]) - 8.0) * sv[(i / BLOCK) as usize]).collect();
    (T::u8(&[N, blocks, BLOCK / 2], &packed), scales, w)
}

fn nbits(ty: ElemType, m: u64, name: &str, zp: bool) -> Node {
    let mut inputs =
        vec![Some(val("x", ty, &[m, K])), Some(val(&format!("{name}.b"), ElemType::U8, &[N, K / BLOCK, BLOCK / 2]))];
    inputs.push(Some(val(&format!("{name}.s"), ty, &[N * K / BLOCK])));
    if zp {
        inputs.push(Some(val(&format!("{name}.zp"), ElemType::U8, &[N * K / BLOCK / 2])));
    }
    let attrs = vec![
        ("K", Attr::Int(K as i64)),
        ("N", Attr::Int(N as i64)),
        ("bits", Attr::Int(4)),
        ("block_size", Attr::Int(BLOCK as i64)),
    ];
    let mut n = node("MatMulNBits", 1, inputs, vec![val(name, ty, &[m, N])], attrs);
    n.domain = "com.microsoft".into();
    n
}

fn swiglu(ty: ElemType, m: u64, up_zp: bool) -> Vec<Node> {
    let o = [m, N];
    vec![
        nbits(ty, m, "g", false),
        node("Sigmoid", 13, vec![Some(val("g", ty, &o))], vec![val("sg", ty, &o)], vec![]),
        node("Mul", 14, vec![Some(val("g", ty, &o)), Some(val("sg", ty, &o))], vec![val("silu", ty, &o)], vec![]),
        nbits(ty, m, "u", up_zp),
        node("Mul", 14, vec![Some(val("silu", ty, &o)), Some(val("u", ty, &o))], vec![val("y", ty, &o)], vec![]),
    ]
}

fn check(ty: ElemType, m: u64) {
    let nodes = swiglu(ty, m, false);
    let names = ["x", "g.b", "g.s", "u.b", "u.s"];
    assert_eq!(step_ops(&nodes, &names, &["y"]), ["MatMulNBits+MatMulNBits+Sigmoid+Mul+Mul"], "{ty} m={m}");
    let mut rng = common::rng(&format!("fusion_nbits_swiglu {ty} {m}"));
    let xs: Vec<f32> = (0..m * K).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let x = if ty == ElemType::F16 { T::f16(&[m, K], &xs) } else { T::f32(&[m, K], &xs) };
    let ((gb, gs, gw), (ub, us, uw)) = (weights(&mut rng, ty), weights(&mut rng, ty));
    let consts = [("g.b", &gb), ("g.s", &gs), ("u.b", &ub), ("u.s", &us)];
    let got = run_graph(&nodes, &[("x", &x)], &consts, &["y"]).unwrap().remove(0).values();
    let xv = x.values();
    let tol = if ty == ElemType::F16 { 2e-2 } else { 1e-4 };
    for row in 0..m as usize {
        for col in 0..N as usize {
            let dot =
                |w: &[f64]| (0..K as usize).map(|k| xv[row * K as usize + k] * w[col * K as usize + k]).sum::<f64>();
            let (g, u) = (dot(&gw), dot(&uw));
            let want = g / (1.0 + (-g).exp()) * u;
            let got = got[row * N as usize + col];
            assert!((got - want).abs() <= tol * (1.0 + want.abs()), "{ty} m={m} [{row}, {col}]: {got} vs {want}");
        }
    }
}

#[test]
fn one_row_and_more_rows_run_both_products_in_one_step() {
    for m in [1, 3, 40] {
        check(ElemType::F32, m);
        if common::gpu().caps().shader_f16 {
            check(ElemType::F16, m);
        }
    }
}

#[test]
fn an_up_projection_with_zero_points_stays_its_own_step() {
    let nodes = swiglu(ElemType::F32, 1, true);
    let mut ops = step_ops(&nodes, &["x", "g.b", "g.s", "u.b", "u.s", "u.zp"], &["y"]);
    ops.sort();
    assert_eq!(ops, ["MatMulNBits", "MatMulNBits+Sigmoid+Mul+Mul"]);
}

//! Whether a partition is worth running on a discrete GPU at all.
//!
//! A partition's inputs arrive from, and its outputs return to, host memory over PCIe, and each
//! run pays a fixed round trip (staging, one submission, the wait, the read-back). Measured on
//! the H200 (`bench/run.py --only island --option offload=all`, docs/PERFORMANCE.md): one Add of
//! two [2048,4096] f32 tensors took 4.8 ms on ours against 0.41 ms on the CPU EP, one of
//! [256,1024] 0.45 ms against 0.028 ms, a [6,1500,1500] Softmax 5.0 ms against 0.81 ms: a lone
//! memory-bound op loses at every size. Whole models win by 10–30× (one partition, little
//! traffic, tens of GFLOP). So the rule compares two estimates from these measurements:
//!
//! - ours: [`ROUND_TRIP_MS`] + boundary bytes over [`PCIE_BYTES_PER_S`];
//! - the CPU EP: FLOPs over [`CPU_FLOPS`] + boundary bytes over [`CPU_BYTES_PER_S`],
//!
//! and leaves the partition to the CPU EP when ours is the larger. `offload=all` turns it off.

use std::collections::{HashMap, HashSet};

use super::model::{Graph, ValueInfo};
use crate::caps::{DeviceCaps, DeviceKind};
use crate::ops::lookup;

/// The fixed cost of one run of a partition on a discrete GPU (a lone [6,128,128] Softmax:
/// 0.23 ms end to end).
pub const ROUND_TRIP_MS: f64 = 0.1;
/// Host↔GPU copies including staging (96 MB in 4.8 ms with the kernel: ~20 GB/s).
pub const PCIE_BYTES_PER_S: f64 = 16e9;
/// ONNX Runtime's CPU EP on products (the Whisper encoder: 0.86 TFLOP/s on 16 threads).
pub const CPU_FLOPS: f64 = 1e12;
/// The CPU EP streaming memory-bound ops (96 MB in 0.41 ms: ~240 GB/s).
pub const CPU_BYTES_PER_S: f64 = 200e9;

/// `Err(reason)` when the partition `group` (node indices) should stay on the CPU EP;
/// `consumers` is [`Graph::consumers`] of `graph`.
pub fn worth_offloading(
    graph: &Graph,
    consumers: &HashMap<&str, Vec<usize>>,
    group: &[usize],
    caps: &DeviceCaps,
) -> Result<(), String> {
    if caps.kind != DeviceKind::DiscreteGpu {
        return Ok(());
    }
    if group.iter().all(|&i| lookup(&graph.nodes[i]).is_some_and(|d| d.is_alias())) {
        return Err("its partition only renames buffers: nothing to compute, only host copies".into());
    }
    let (Some(flops), Some(bytes)) = (group_flops(graph, group), boundary_bytes(graph, consumers, group)) else {
        return Ok(()); // symbolic shapes: cannot judge, keep it
    };
    let ours_ms = ROUND_TRIP_MS + bytes as f64 / PCIE_BYTES_PER_S * 1e3;
    let cpu_ms = (flops / CPU_FLOPS + bytes as f64 / CPU_BYTES_PER_S) * 1e3;
    if ours_ms > cpu_ms {
        return Err(format!(
            "its partition would move {:.2} MB between host and GPU for {:.3} GFLOP: about {ours_ms:.2} ms here \
             against {cpu_ms:.2} ms on the CPU EP (offload=all claims it anyway)",
            bytes as f64 / 1e6,
            flops / 1e9
        ));
    }
    Ok(())
}

/// Saturating: a declared size past u64 is simply too much traffic.
fn bytes_of(v: &ValueInfo) -> Option<u64> {
    let elems = v.fixed_shape()?.iter().fold(1u64, |a, &d| a.saturating_mul(d));
    Some(elems.saturating_mul(v.dtype()?.size()))
}

/// Bytes of non-constant values entering the group plus values leaving it.
fn boundary_bytes(graph: &Graph, consumers: &HashMap<&str, Vec<usize>>, group: &[usize]) -> Option<u64> {
    let members: HashSet<usize> = group.iter().copied().collect();
    let produced: HashSet<&str> =
        group.iter().flat_map(|&i| graph.nodes[i].outputs.iter().flatten().map(|o| o.name.as_str())).collect();
    let mut seen = HashSet::new();
    let mut total = 0u64;
    for &i in group {
        let node = &graph.nodes[i];
        for v in node.inputs.iter().flatten() {
            if !v.name.is_empty() && !v.constant && !produced.contains(v.name.as_str()) && seen.insert(&v.name) {
                total = total.saturating_add(bytes_of(v)?);
            }
        }
        for o in node.outputs.iter().flatten() {
            let leaves = graph.outputs.contains(&o.name)
                || consumers.get(o.name.as_str()).is_some_and(|cs| cs.iter().any(|c| !members.contains(c)));
            if leaves {
                total = total.saturating_add(bytes_of(o)?);
            }
        }
    }
    Some(total)
}

/// Floating-point operations of the group's nodes, as each op's registry entry counts them.
fn group_flops(graph: &Graph, group: &[usize]) -> Option<f64> {
    let mut total = 0.0;
    for &i in group {
        let node = &graph.nodes[i];
        total += lookup(node).map_or(Some(0.0), |def| def.flops(node))?;
    }
    Some(total)
}

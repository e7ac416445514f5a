//! Whether a partition is worth running on a discrete GPU at all.
//!
//! Partition inputs arrive from, and outputs return to, host memory over PCIe (~10–25 GB/s),
//! while ONNX Runtime's CPU EP runs GEMMs at roughly 0.5–2 TFLOP/s: below ~50–100 FLOP per byte
//! crossing the boundary, the copies alone cost more than the CPU takes for the whole job. The
//! Whisper encoder's attention products (6×1500×1500 scores, ~30 FLOP/byte, between CPU
//! Softmax and Transposes) and large depthwise convs (~2 FLOP/byte) are such cases. Small
//! partitions are left alone: their copies are cheap whatever the ratio.

use std::collections::{HashMap, HashSet};

use super::model::{Graph, ValueInfo};
use crate::caps::{DeviceCaps, DeviceKind};
use crate::ops::lookup;

/// Below this many bytes crossing the host boundary per run, a partition is always kept.
pub const MIN_BOUNDARY_BYTES: u64 = 8 << 20;
/// FLOP per boundary byte below which a large partition is left to the CPU EP.
pub const MIN_INTENSITY: f64 = 64.0;

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
    let intensity = flops / bytes.max(1) as f64;
    if bytes >= MIN_BOUNDARY_BYTES && intensity < MIN_INTENSITY {
        return Err(format!(
            "its partition would move {:.1} MB between host and GPU for {:.2} GFLOP \
             ({intensity:.0} FLOP/byte < {MIN_INTENSITY}): faster on the CPU EP",
            bytes as f64 / 1e6,
            flops / 1e9
        ));
    }
    Ok(())
}

fn bytes_of(v: &ValueInfo) -> Option<u64> {
    let elems: u64 = v.fixed_shape()?.iter().product();
    Some(elems * v.dtype()?.size())
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
                total += bytes_of(v)?;
            }
        }
        for o in node.outputs.iter().flatten() {
            let leaves = graph.outputs.contains(&o.name)
                || consumers.get(o.name.as_str()).is_some_and(|cs| cs.iter().any(|c| !members.contains(c)));
            if leaves {
                total += bytes_of(o)?;
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

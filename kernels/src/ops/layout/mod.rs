//! The layout op family: ops that only move elements (Transpose, Concat, Slice, Split, Gather,
//! Expand). Their kernels work by element size, not type, so every element type runs and
//! float16 needs no shader capability. Transpose, Slice, Split and Expand share one strided
//! copy ([`strided`]); Concat and Gather have kernels of their own.

mod concat;
mod expand;
mod gather;
mod shader;
mod slice;
mod split;
pub mod strided;
mod transpose;

pub use shader::{LayoutSource, Pattern};
pub use slice::slice_axis;
pub use split::split_sizes;
pub use transpose::resolve_perm;

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::{Node, ValueInfo};
use crate::graph::support::PlacementOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::{check_types, KernelIo, OpDef, StepPlan};

/// The layout op definitions.
pub fn ops() -> Vec<&'static dyn OpDef> {
    vec![
        &transpose::TransposeDef,
        &concat::ConcatDef,
        &slice::SliceDef,
        &split::SplitDef,
        &gather::GatherDef,
        &expand::ExpandDef,
    ]
}

/// The checks every layout op shares: known element types, float16 unless the session turned
/// it off (the kernels move bytes, so the adapter's shader-f16 feature is not needed), the
/// data input present, and known ranks within what the kernels walk.
fn check_common(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    check_types(node, &ElemType::ALL)?;
    let has_f16 = node.inputs.iter().chain(&node.outputs).flatten().any(|v| v.elem_type == ElemType::F16.onnx());
    if has_f16 && !opts.enable_f16 {
        return Err("float16 is disabled by the enable_f16=0 option".into());
    }
    present(node, 0).ok_or_else(|| format!("{} without data", node.op_type))?;
    for v in node.inputs.iter().chain(&node.outputs).flatten() {
        if v.rank().is_some_and(|r| r > strided::MAX_RANK) {
            return Err(format!(
                "'{}' has rank {}; at most {} run here",
                v.name,
                v.rank().unwrap_or(0),
                strided::MAX_RANK
            ));
        }
    }
    Ok(())
}

/// Input `i` unless omitted.
fn present(node: &Node, i: usize) -> Option<&ValueInfo> {
    node.input(i).filter(|v| !v.name.is_empty())
}

/// The values of a small int32 or int64 constant.
fn const_ints(v: &ValueInfo) -> Option<Vec<i64>> {
    if v.elem_type == ElemType::I32.onnx() {
        let data = v.small_data.as_ref()?;
        return Some(data.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect());
    }
    v.ints()
}

/// Optional input `i` as a small integer constant: `None` when omitted, an error (declining
/// the node) when computed at run time or too large to read at build time.
fn const_input(node: &Node, i: usize, what: &str) -> Result<Option<Vec<i64>>, String> {
    match present(node, i) {
        None => Ok(None),
        Some(v) if !v.constant => {
            Err(format!("{} {what} '{}' is computed at run time; only constant {what} run here", node.op_type, v.name))
        }
        Some(v) => const_ints(v)
            .map(Some)
            .ok_or_else(|| format!("{} {what} '{}' is not a small int32/int64 constant", node.op_type, v.name)),
    }
}

/// The shape of bound input `i` for `infer`, or the op's error.
fn shape<'a>(inputs: &[Option<&'a [u64]>], i: usize, name: &str) -> Result<&'a [u64], String> {
    inputs.get(i).copied().flatten().ok_or_else(|| format!("'{name}' has no input {i}"))
}

/// Bytes per element of bound input `i` (the kernels only need the size).
fn elem_size(io: &KernelIo<'_>, i: usize) -> Result<u64, GpuError> {
    Ok(io.input(i)?.ty.size())
}

/// The declared element type of input `i`, which planning without buffers reads.
fn declared(node: &Node, i: usize) -> Option<ElemType> {
    present(node, i).and_then(|v| ElemType::from_onnx(v.elem_type))
}

/// The declared element size a plan needs, or why there is none.
fn planned_size(ty: Option<ElemType>, name: &str) -> Result<u64, String> {
    ty.map(ElemType::size).ok_or_else(|| format!("'{name}': its element type is not declared"))
}

/// The strided copies of `views` (one dispatch each): what the strided steps bind and plan.
fn plan_views(
    views: &[strided::Strided],
    size: u64,
    tuning: strided::Tuning,
    caps: &DeviceCaps,
) -> Result<Vec<OpDispatch>, GpuError> {
    views.iter().map(|view| strided::plan(caps, size, view, tuning)).collect()
}

/// The plan of a strided step over `views` of an input of `shape`.
fn views_plan(
    what: &str,
    shape: &[u64],
    views: &[strided::Strided],
    size: u64,
    tuning: strided::Tuning,
    caps: &DeviceCaps,
) -> Result<Option<StepPlan>, String> {
    let planned = plan_views(views, size, tuning, caps).map_err(|e| format!("{what}: {e}"))?;
    let outs: Vec<String> = views.iter().map(|v| format!("{:?}", v.dims)).collect();
    let line = format!("{what}: {shape:?} -> {}", outs.join(" "));
    Ok(Some(step_plan(line, format!("{}-byte elements", size), &planned)))
}

//! Ops that combine values along axes: LayerNormalization and RMSNormalization (`layer`),
//! Softmax and LogSoftmax (`softmax`), and ReduceSum/Mean/Max/Min (`reduce`); ONNX Runtime's
//! SimplifiedLayerNormalization (`simplified`) and the com.microsoft SkipLayerNormalization and
//! SkipSimplifiedLayerNormalization (`skip`) on the LayerNormalization/RMS row kernel.
//!
//! Every kernel reads its tensors in ONNX Runtime's bytes and accumulates in f32 (i32 for
//! integer reductions). Rows long enough to share use one workgroup per row with a workgroup
//! reduction; short or strided ones one invocation per row or column.

pub mod argreduce;
pub mod batch;
mod folded;
pub mod group;
pub mod layer;
pub mod reduce;
mod reduce_source;
pub mod simplified;
pub mod skip;
pub mod softmax;

use crate::caps::{DeviceCaps, DeviceKind};
use crate::dtype::ElemType;
use crate::error::{GpuError, PlanError};
use crate::gemm::layout::check_binding;
use crate::graph::model::Node;
use crate::ops::Tensor;

/// The norm op definitions.
pub fn ops() -> Vec<&'static dyn crate::ops::OpDef> {
    let mut all = Vec::new();
    all.extend(layer::OPS);
    all.extend(softmax::OPS);
    all.extend(reduce::OPS);
    all.extend(argreduce::OPS);
    all.extend(batch::OPS);
    all.extend(group::OPS);
    all.extend(simplified::OPS);
    all.extend(skip::OPS);
    all
}

/// How a row kernel shares a row among a workgroup. Each op plans with its default; tests and
/// benchmarks set others to run the workgroup-memory reduction on a device with subgroups, or
/// other sizes (variants the goldens do not list).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowTuning {
    /// Invocations per row: a power of two.
    pub threads: u32,
    /// Combine partials through subgroup operations when the device has them.
    pub subgroups: bool,
    /// Take [`WIDE_THREADS`] where rows are few (see [`RowTuning::for_rows`]).
    pub widen: bool,
}

/// Invocations per row where the rows alone leave the device mostly idle (a decode step's one
/// row): the row's loads spread over more invocations instead of queueing in a few.
pub const WIDE_THREADS: u32 = 256;

/// Loads one invocation of a row kernel issues per pass at most, where [`WIDE_THREADS`] allow:
/// each iteration of a pass waits for its loads (a skip kernel also stores in it, which no load
/// after it may pass), so a 2048-wide f16 row on 64 invocations took 8 round trips a pass
/// (Llama-3.2-1B's SkipSimplifiedLayerNormalization, 9 µs for 1024 rows on the H200).
pub const LOADS_PER_INVOCATION: u32 = 2;

impl RowTuning {
    pub const fn new(threads: u32) -> RowTuning {
        RowTuning { threads, subgroups: true, widen: true }
    }

    /// The invocations per row and subgroup use for `rows` rows of `loads` loads each on `caps`:
    /// this tuning's, or more (subgroup reductions only, up to [`WIDE_THREADS`]): all of them
    /// where the rows fill at most a quarter of the device's parallelism and each wide invocation
    /// still has a load; else enough that no invocation queues more than [`LOADS_PER_INVOCATION`].
    pub(crate) fn for_rows(self, rows: u32, loads: u32, caps: &DeviceCaps) -> Result<(u32, bool), GpuError> {
        let (threads, sg) = self.on(caps)?;
        if !(self.widen && sg && WIDE_THREADS <= caps.max_invocations_per_workgroup) || threads >= WIDE_THREADS {
            return Ok((threads, sg));
        }
        let few = u64::from(rows) * 4 <= u64::from(caps.parallelism);
        if few && loads >= WIDE_THREADS {
            return Ok((WIDE_THREADS, sg));
        }
        let spread = loads.div_ceil(LOADS_PER_INVOCATION).next_power_of_two().min(WIDE_THREADS);
        Ok((threads.max(spread), sg))
    }

    /// The threads and whether subgroups are used on `caps`, or why this tuning cannot run there.
    pub(crate) fn on(self, caps: &DeviceCaps) -> Result<(u32, bool), GpuError> {
        if !self.threads.is_power_of_two() || self.threads > caps.max_invocations_per_workgroup {
            return Err(GpuError::Internal(format!("{} invocations per row cannot run here", self.threads)));
        }
        Ok((self.threads, self.subgroups && caps.subgroups))
    }
}

/// A strided kernel runs an invocation per output, each walking its `n` elements one after the
/// other (coalesced across neighbouring outputs); a wide one a workgroup per output, its
/// invocations sharing the walk. An invocation walks at most [`STRIDED_MAX`] elements: llvmpipe
/// silently stops an invocation's loops after 65535 iterations in all, and on a GPU a long walk
/// is one chain of dependent loads. Fewer outputs than [`STRIDED_OUTPUTS`] leave a GPU mostly
/// idle, so from [`WIDE_MIN`] elements they take a workgroup each.
pub const STRIDED_MAX: u64 = 4096;
pub const STRIDED_OUTPUTS: u64 = 1024;
pub const WIDE_MIN: u64 = 256;

/// Loop iterations one invocation may run in all on llvmpipe (gallivm's
/// `LP_MAX_TGSI_LOOP_ITERATIONS`); past them it stops every loop of that invocation, silently.
pub const CPU_LOOP_LIMIT: u64 = 65535;

/// An error where one invocation of `what` would loop `iterations` times on a CPU adapter, whose
/// result would then be wrong: a clear failure instead (rows of millions of elements; real GPUs
/// have no such limit).
pub fn check_cpu_loops(caps: &DeviceCaps, what: impl Fn() -> String, iterations: u64) -> Result<(), PlanError> {
    if caps.kind == DeviceKind::Cpu && iterations > CPU_LOOP_LIMIT {
        return Err(PlanError::CpuLoopLimit { what: what(), iterations });
    }
    Ok(())
}

/// Whether `outputs` strided walks of `n` elements each run on a workgroup per output.
pub fn wide_walks(outputs: u64, n: u64) -> bool {
    n > STRIDED_MAX || (outputs < STRIDED_OUTPUTS && n >= WIDE_MIN)
}

/// Most (collapsed) dimensions a kernel's uniforms describe: two `vec4<u32>`.
pub const MAX_DIMS: usize = 8;

/// Up to [`MAX_DIMS`] numbers as the uniform `array<vec4<u32>, 2>` the templates index.
/// The capabilities of a row kernel over `types`, with subgroups when it reduces through them.
pub(crate) fn row_capabilities(types: &[ElemType], sg: bool) -> naga::valid::Capabilities {
    let caps = crate::ops::capabilities_for(types);
    if sg {
        caps | naga::valid::Capabilities::SUBGROUP
    } else {
        caps
    }
}

pub(crate) fn packed(values: &[u32]) -> Result<[[u32; 4]; 2], GpuError> {
    if values.len() > MAX_DIMS {
        return Err(GpuError::Internal(format!("{} dimensions exceed the kernel's {MAX_DIMS}", values.len())));
    }
    let mut out = [[0u32; 4]; 2];
    for (i, &v) in values.iter().enumerate() {
        out[i / 4][i % 4] = v;
    }
    Ok(out)
}

/// The float storage types a device runs: f16 only with `shader-f16`.
pub(crate) fn float_types(caps: &DeviceCaps) -> Vec<ElemType> {
    if caps.shader_f16 {
        vec![ElemType::F32, ElemType::F16]
    } else {
        vec![ElemType::F32]
    }
}

/// The element type of input `i`, which the op requires.
pub(crate) fn input_type(node: &Node, i: usize, what: &str) -> Result<ElemType, String> {
    let v = node
        .input(i)
        .filter(|v| !v.name.is_empty())
        .ok_or_else(|| format!("{} '{}' without its {what} input", node.op_type, node.name))?;
    ElemType::from_onnx(v.elem_type)
        .ok_or_else(|| format!("element type {} of '{}' is not supported", v.elem_type, v.name))
}

/// Declines a tensor one storage binding cannot hold (the kernels index it as one array).
pub(crate) fn check_bindings(tensors: &[Tensor<'_>], caps: &DeviceCaps) -> Result<(), GpuError> {
    for t in tensors {
        check_binding("a tensor", t.elems() * t.ty.size(), caps)?;
    }
    Ok(())
}

/// `shape` without its leading 1s (what decides how a broadcast operand lines up).
pub(crate) fn strip_leading_ones(shape: &[u64]) -> &[u64] {
    let first = shape.iter().position(|&d| d != 1).unwrap_or(shape.len());
    &shape[first..]
}

/// Whether `operand` broadcasts onto `target` without changing it (ONNX's unidirectional
/// broadcasting: right-aligned, each dimension equal or 1).
pub(crate) fn broadcasts_onto(operand: &[u64], target: &[u64]) -> bool {
    operand.len() <= target.len() && operand.iter().rev().zip(target.iter().rev()).all(|(&o, &t)| o == t || o == 1)
}

/// The strides (in elements) of a row-major `operand` broadcast onto `target`: 0 along
/// broadcast dimensions, one per dimension of `target`.
pub(crate) fn broadcast_strides(operand: &[u64], target: &[u64]) -> Vec<u64> {
    let lead = target.len().saturating_sub(operand.len());
    let mut strides = vec![0u64; target.len()];
    let mut step = 1u64;
    for (i, &d) in operand.iter().enumerate().rev() {
        if d != 1 {
            strides[lead + i] = step;
        }
        step *= d;
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_helpers() {
        assert!(broadcasts_onto(&[4], &[2, 3, 4]));
        assert!(broadcasts_onto(&[1, 3, 1], &[2, 3, 4]));
        assert!(!broadcasts_onto(&[3], &[2, 3, 4]));
        assert!(!broadcasts_onto(&[1, 2, 3, 4], &[2, 3, 4]));
        assert_eq!(broadcast_strides(&[3, 1], &[2, 3, 4]), vec![0, 1, 0]);
        assert_eq!(broadcast_strides(&[2, 1, 4], &[2, 3, 4]), vec![4, 0, 1]);
        assert_eq!(strip_leading_ones(&[1, 1, 4, 1]), &[4, 1]);
        assert_eq!(packed(&[1, 2, 3, 4, 5]).unwrap(), [[1, 2, 3, 4], [5, 0, 0, 0]]);
        assert!(packed(&[0; 9]).is_err());
    }
}

//! One planned dispatch of an op kernel, shared by a kernel's `prepare` (which binds it) and
//! its `plan` (which reports it): each kernel computes its dispatches once, without a device,
//! so the plan `inspect` shows is by construction what `prepare` binds.

use crate::error::GpuError;
use crate::ops::StepPlan;
use crate::runtime::{Dispatch, Gpu, GpuBuffer};
use crate::shader::ShaderVariant;

/// A kernel variant, its uniform bytes and its workgroup grid.
#[derive(Clone, Debug)]
pub struct OpDispatch {
    pub variant: ShaderVariant,
    pub params: Vec<u8>,
    pub grid: [u32; 3],
}

impl OpDispatch {
    pub fn new<P: bytemuck::Pod>(variant: ShaderVariant, params: &P, grid: [u32; 3]) -> OpDispatch {
        OpDispatch { variant, params: bytemuck::bytes_of(params).to_vec(), grid }
    }

    /// Binds the dispatch: `inputs` at bindings `0..n`, `outputs` after them.
    pub fn bind(&self, gpu: &Gpu, inputs: &[&GpuBuffer], outputs: &[&GpuBuffer]) -> Result<Dispatch, GpuError> {
        gpu.prepare_op(&self.variant, inputs, outputs, &self.params, self.grid)
    }

    /// The plan's entry: variant name and grid.
    pub fn entry(&self) -> (String, [u32; 3]) {
        (self.variant.name(), self.grid)
    }
}

/// A step plan of these dispatches.
pub fn step_plan(line: String, tiling: impl Into<String>, dispatches: &[OpDispatch]) -> StepPlan {
    StepPlan { line, tiling: tiling.into(), dispatches: dispatches.iter().map(OpDispatch::entry).collect() }
}

/// Input `i`'s shape, which the kernel requires, for planning.
pub fn required<'a>(inputs: &[Option<&'a [u64]>], i: usize) -> Result<&'a [u64], GpuError> {
    inputs.get(i).copied().flatten().ok_or_else(|| GpuError::Internal(format!("input {i} has no shape")))
}

/// The shapes a step's bound inputs have (`None` for omitted ones).
pub fn shapes_of<'a>(io: &crate::ops::KernelIo<'a>) -> Vec<Option<&'a [u64]>> {
    io.inputs.iter().map(|t| t.map(|t| t.shape)).collect()
}

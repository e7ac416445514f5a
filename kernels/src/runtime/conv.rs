//! Dispatches of a conv plan: the im2col scratch, the GEMM (reading X directly as an implicit B
//! operand in the implicit-GEMM schedule) and the direct kernel bound to the node's buffers.

use bytemuck::bytes_of;

use super::dispatch::{Dispatch, GemmBindings};
use super::pipelines::BindingLayout;
use super::{Gpu, GpuBuffer};
use crate::conv::{ConvPlan, ConvSchedule, Residual};
use crate::error::GpuError;
use crate::shader::ShaderVariant;

/// Buffers of one conv: X, the weights as `prepack_weights` returned them, the optional bias B
/// and the output (NCHW, or NCW for a 1-D conv: the same bytes).
#[derive(Clone, Copy, Debug)]
pub struct ConvBindings<'a> {
    pub x: &'a GpuBuffer,
    pub w: &'a GpuBuffer,
    pub bias: Option<&'a GpuBuffer>,
    pub out: &'a GpuBuffer,
    /// The fused residual operand (the output's shape), when the plan has one.
    pub residual: Option<&'a GpuBuffer>,
}

impl Gpu {
    /// The dispatches of a conv plan bound to `io`, in order. Allocates the im2col scratch;
    /// the dispatches keep it alive.
    pub fn prepare_conv(&self, plan: &ConvPlan, io: ConvBindings<'_>) -> Result<Vec<Dispatch>, GpuError> {
        check_sizes(plan, &io)?;
        match &plan.schedule {
            ConvSchedule::Pointwise { gemm } => {
                self.prepare_gemm_with(gemm, operands(io.x, &io), None, io.residual, Default::default())
            }
            ConvSchedule::Im2colGemm { im2col, gemm } => {
                let col = self.storage_buffer(plan.col_bytes, "im2col")?;
                let mut dispatches = vec![self.prepare(
                    ShaderVariant::Conv(im2col.variant),
                    BindingLayout::UNARY,
                    bytes_of(&im2col.params),
                    &[(0, io.x), (3, &col)],
                    im2col.grid,
                )?];
                let bindings = operands(&col, &io);
                dispatches.extend(self.prepare_gemm_with(gemm, bindings, None, io.residual, Default::default())?);
                Ok(dispatches)
            }
            ConvSchedule::Implicit { gemm, geometry } => self.prepare_gemm_with(
                gemm,
                operands(io.x, &io),
                Some(bytes_of(geometry)),
                io.residual,
                Default::default(),
            ),
            ConvSchedule::Direct { step } => {
                let bias = match io.bias {
                    Some(b) => b,
                    None => self.unused_input()?,
                };
                let shader = step.shader();
                let (layout, residual) = match (shader.reads_residual(), io.residual) {
                    (false, _) => (BindingLayout::PRODUCT, None),
                    (true, Some(r)) => (BindingLayout::PRODUCT_RESIDUAL, Some((6, r))),
                    (true, None) => return Err(GpuError::Internal("a conv reads a residual but none is bound".into())),
                };
                let buffers: Vec<_> =
                    [(0, io.x), (1, io.w), (2, bias), (3, io.out)].into_iter().chain(residual).collect();
                let dispatch = self.prepare(shader, layout, bytes_of(&step.params), &buffers, step.grid)?;
                Ok(vec![dispatch])
            }
        }
    }
}

/// A buffer shorter than its tensor would be read out of bounds (zeros under robust access,
/// garbage without): refuse it with a message instead.
/// The GEMM's operands: the weights times `col` (im2col's buffer, or X for a pointwise conv or
/// an implicit GEMM's gather);
/// a channels-last output differs only in the plan's output strides.
fn operands<'a>(col: &'a GpuBuffer, io: &ConvBindings<'a>) -> GemmBindings<'a> {
    GemmBindings { a: io.w, b: col, bias: io.bias, out: io.out }
}

fn check_sizes(plan: &ConvPlan, io: &ConvBindings<'_>) -> Result<(), GpuError> {
    let p = &plan.problem;
    let size = p.dtype.size();
    if p.has_bias != io.bias.is_some() {
        return Err(GpuError::Invalid(format!(
            "the conv plan has_bias={} but a bias was bound: {}",
            p.has_bias,
            io.bias.is_some()
        )));
    }
    let mut buffers =
        vec![("X", io.x, p.input_len()), ("W", io.w, p.weight_len()), ("the output", io.out, p.output_len())];
    if let Some(b) = io.bias {
        buffers.push(("B", b, p.m as u64));
    }
    if (p.residual != Residual::None) != io.residual.is_some() {
        return Err(GpuError::Invalid(format!(
            "the conv plan has residual {:?}; one bound: {}",
            p.residual,
            io.residual.is_some()
        )));
    }
    if let Some(r) = io.residual {
        buffers.push(("the residual", r, p.output_len()));
    }
    for (what, buf, elems) in buffers {
        if buf.len < elems * size {
            return Err(GpuError::Invalid(format!(
                "conv {what}: buffer of {} bytes, the tensor needs {}",
                buf.len,
                elems * size
            )));
        }
    }
    Ok(())
}

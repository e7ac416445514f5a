//! Run-time checks a kernel cannot fail on its own: a check dispatch writes a code into the run's
//! status word (`PrepareCx::status`), and the executor turns a non-zero word into the run's
//! error, naming the step, before any output is delivered.

use bytemuck::{Pod, Zeroable};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid_for, to_u32, PrepareCx, Tensor};
use crate::runtime::Dispatch;
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The index check of one element type of indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexCheck {
    pub i64: bool,
}

impl OpSource for IndexCheck {
    fn name(&self) -> String {
        format!("check_indices_{}", if self.i64 { "i64" } else { "i32" })
    }

    fn emit(&self) -> Result<String, String> {
        render("check_indices.wgsl.j2", minijinja::context! { i64 => self.i64 })
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct Params {
    count: u32,
    axis_len: u32,
    code: u32,
    pad: u32,
}

/// Every variant (goldens).
pub fn variants(_caps: &DeviceCaps) -> Vec<ShaderVariant> {
    [false, true].map(|i64| ShaderVariant::Op(OpShader::new(IndexCheck { i64 }))).to_vec()
}

/// What the check dispatch finds, on the host: whether every index is inside
/// `[-axis_len, axis_len)` (`Kernel::host_check` of the kernels that check indices).
pub fn in_range(indices: &[i64], axis_len: u64) -> bool {
    let n = i64::try_from(axis_len).unwrap_or(i64::MAX);
    indices.iter().all(|&i| -n <= i && i < n)
}

/// `Kernel::host_check` of a kernel whose one host-checked input is its indices: `Err(message)`
/// (the kernel's `check_message`) unless every index is inside `[-axis_len, axis_len)`.
pub fn host_indices(values: &[&[i64]], axis_len: u64, message: &str) -> Result<(), String> {
    match values.first() {
        Some(indices) if in_range(indices, axis_len) => Ok(()),
        _ => Err(message.into()),
    }
}

/// A dispatch failing the run when an index of `indices` is outside `[-axis_len, axis_len)`.
pub fn indices_in_range(cx: &PrepareCx<'_>, indices: &Tensor<'_>, axis_len: u64) -> Result<Dispatch, GpuError> {
    let planned = plan(cx.caps(), indices.ty, indices.elems(), axis_len, cx.status_code)?;
    planned.bind(cx.gpu, &[indices.buf], &[cx.status])
}

/// The check dispatch [`indices_in_range`] binds for `count` indices of type `ty`; `code` is
/// what it writes into the status word.
pub fn plan(caps: &DeviceCaps, ty: ElemType, count: u64, axis_len: u64, code: u32) -> Result<OpDispatch, GpuError> {
    let i64 = match ty {
        ElemType::I64 => true,
        ElemType::I32 => false,
        other => return Err(GpuError::Internal(format!("indices of type {other}"))),
    };
    let params = Params { count: to_u32("indices", count)?, axis_len: to_u32("indexed axis", axis_len)?, code, pad: 0 };
    let variant = ShaderVariant::Op(OpShader::new(IndexCheck { i64 }));
    Ok(OpDispatch::new(variant, &params, grid_for(count, caps)?))
}

#[cfg(test)]
mod tests {
    use super::in_range;

    #[test]
    fn host_range_matches_the_check_kernel() {
        assert!(in_range(&[0, 4, -5, -1], 5));
        assert!(!in_range(&[5], 5));
        assert!(!in_range(&[-6], 5));
        assert!(!in_range(&[0], 0));
        assert!(in_range(&[], 0));
        assert!(in_range(&[i64::MAX - 1], u64::MAX));
    }
}

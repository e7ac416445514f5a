//! Facts about operand layouts the planner proves before choosing a kernel: which dimension
//! is contiguous, whether wide loads are aligned, whether the batch folds into rows.

use super::problem::{GemmProblem, MatrixLayout, MAX_BATCH_DIMS};
use super::tiling::Contig;
use crate::caps::DeviceCaps;
use crate::error::PlanError;

/// The contiguous dimension of A (`[M, K]`): K when its columns are adjacent, else M when its
/// rows are; K for any other layout (loads then follow rows of A, the ONNX default).
pub fn a_contig(p: &GemmProblem) -> Contig {
    if p.a.col_stride != 1 && p.a.row_stride == 1 {
        Contig::Mn
    } else {
        Contig::K
    }
}

/// The contiguous dimension of B (`[K, N]`): N when its columns are adjacent, else K when its
/// rows are; N for any other layout.
pub fn b_contig(p: &GemmProblem) -> Contig {
    if p.b.col_stride != 1 && p.b.row_stride == 1 {
        Contig::K
    } else {
        Contig::Mn
    }
}

/// Whether `width`-element chunks along the contiguous dimension of both operands start at
/// multiples of `width` elements and lie wholly inside or wholly outside each matrix, so a
/// kernel may load them as one vector with one bounds check. Bindings start at offset 0 (or
/// at a multiple of the device's 256-byte storage offset alignment), so element alignment is
/// byte alignment.
pub fn wide_loads_ok(p: &GemmProblem, width: u32) -> bool {
    let a_ok = a_wide_loads_ok(p, width);
    let b_ok = match b_contig(p) {
        Contig::Mn => chunks_ok(&p.b, p.b.col_stride, p.b.row_stride, p.n, width),
        Contig::K => chunks_ok(&p.b, p.b.row_stride, p.b.col_stride, p.k, width),
    };
    a_ok && b_ok
}

/// [`wide_loads_ok`] for A alone (an implicit-GEMM conv gathers B element by element).
pub fn a_wide_loads_ok(p: &GemmProblem, width: u32) -> bool {
    match a_contig(p) {
        Contig::K => chunks_ok(&p.a, p.a.col_stride, p.a.row_stride, p.k, width),
        Contig::Mn => chunks_ok(&p.a, p.a.row_stride, p.a.col_stride, p.m, width),
    }
}

fn chunks_ok(l: &MatrixLayout, inner_stride: u32, outer_stride: u32, inner_len: u32, width: u32) -> bool {
    inner_stride == 1
        && inner_len % width == 0
        && outer_stride % width == 0
        && l.batch_strides.iter().all(|s| s % width == 0)
}

/// `Cᵀ = Bᵀ·Aᵀ`: the same output written through transposed strides.
pub(crate) fn transposed(p: &GemmProblem) -> GemmProblem {
    let mut q = *p;
    q.m = p.n;
    q.n = p.m;
    q.a = p.b.transposed();
    q.b = p.a.transposed();
    q.epilogue.bias = p.epilogue.bias.map(MatrixLayout::transposed);
    q
}

/// Every operand must fit one storage binding (the kernels index with 32 bits).
pub(crate) fn check_bindings(p: &GemmProblem, caps: &DeviceCaps) -> Result<(), PlanError> {
    check_operand_bindings(p, caps, true)
}

/// [`check_bindings`], leaving B out when `with_b` is false (an implicit B is gathered from a
/// buffer its caller checks).
pub(crate) fn check_operand_bindings(p: &GemmProblem, caps: &DeviceCaps, with_b: bool) -> Result<(), PlanError> {
    let size = p.dtype.size();
    let mut operands = vec![("A", p.a.extent(p.m, p.k, &p.batch)), ("the output", p.output_len())];
    if with_b {
        operands.push(("B", p.b.extent(p.k, p.n, &p.batch)));
    }
    if let Some(bias) = p.epilogue.bias {
        operands.push(("the bias", bias.extent(p.m, p.n, &p.batch)));
    }
    operands.into_iter().try_for_each(|(what, elems)| check_binding(what, elems * size, caps))
}

/// `needed` bytes of `what` must fit one storage binding.
pub(crate) fn check_binding(what: &'static str, needed: u64, caps: &DeviceCaps) -> Result<(), PlanError> {
    let limit = caps.binding_limit();
    if needed > limit {
        return Err(PlanError::BindingTooLarge { what, needed, limit });
    }
    Ok(())
}

/// When B is shared by every batch and A, the output and the bias continue row after row
/// across batches, the batch is just more rows: one tall GEMM fills the device better.
pub(crate) fn fold_batch_into_rows(p: &GemmProblem) -> GemmProblem {
    let count = p.batch_count();
    if count <= 1 || p.b.batch_strides.iter().any(|&s| s != 0) || count * p.m as u64 > u32::MAX as u64 {
        return *p;
    }
    let rows_continue = |l: &MatrixLayout| {
        let mut inner = p.m as u64;
        (0..MAX_BATCH_DIMS).rev().all(|i| {
            let ok = p.batch[i] == 1 || l.batch_strides[i] as u64 == l.row_stride as u64 * inner;
            inner *= p.batch[i] as u64;
            ok
        })
    };
    let bias_ok = match p.epilogue.bias {
        None => true,
        Some(b) => (b.row_stride == 0 && b.batch_strides == [0; 4]) || rows_continue(&b),
    };
    if !rows_continue(&p.a) || !bias_ok {
        return *p;
    }
    let mut q = *p;
    q.m = (count * p.m as u64) as u32;
    q.batch = [1; MAX_BATCH_DIMS];
    q.a.batch_strides = [0; MAX_BATCH_DIMS];
    if let Some(b) = q.epilogue.bias.as_mut() {
        b.batch_strides = [0; MAX_BATCH_DIMS];
    }
    q
}

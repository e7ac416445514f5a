//! What a GEMM computes, independent of how: `C = act(alpha · op(A)·op(B) + beta · bias)`.
//!
//! Operands are described by strides, so transposes and broadcasting never copy data:
//! element `(row, col)` of batch `b` of an operand is at
//! `offset(b) + row · row_stride + col · col_stride`, where `offset(b)` comes from the batch
//! coordinates and `batch_strides` (0 along broadcast dimensions).

use crate::dtype::DType;
use crate::error::PlanError;

/// Number of batch dimensions the kernels index directly; more are merged or declined.
pub const MAX_BATCH_DIMS: usize = 4;

/// Where the elements of a (batched) matrix operand live, in elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MatrixLayout {
    pub row_stride: u32,
    pub col_stride: u32,
    pub batch_strides: [u32; MAX_BATCH_DIMS],
}

impl MatrixLayout {
    /// A contiguous row-major `[rows, cols]` matrix, the same for every batch.
    pub const fn row_major(cols: u32) -> Self {
        MatrixLayout { row_stride: cols, col_stride: 1, batch_strides: [0; MAX_BATCH_DIMS] }
    }

    /// The transpose of this layout (rows become columns).
    pub const fn transposed(self) -> Self {
        MatrixLayout { row_stride: self.col_stride, col_stride: self.row_stride, ..self }
    }

    /// Index one past the last element reachable for `rows × cols` over `batch`.
    pub fn extent(&self, rows: u32, cols: u32, batch: &[u32; MAX_BATCH_DIMS]) -> u64 {
        if rows == 0 || cols == 0 || batch.contains(&0) {
            return 0;
        }
        let mut last = (rows as u64 - 1) * self.row_stride as u64 + (cols as u64 - 1) * self.col_stride as u64;
        for (d, s) in batch.iter().zip(self.batch_strides) {
            last += (*d as u64 - 1) * s as u64;
        }
        last + 1
    }
}

/// Elementwise function applied after the bias.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum Activation {
    #[default]
    None,
    Relu,
    Clip {
        min: f32,
        max: f32,
    },
    /// `max(0, min(1, alpha·x + beta))`.
    HardSigmoid {
        alpha: f32,
        beta: f32,
    },
    /// `x · HardSigmoid(x)` with alpha 1/6, beta 1/2.
    HardSwish,
    /// `x · sigmoid(x)` (SiLU, Swish with alpha 1).
    Silu,
    LeakyRelu {
        alpha: f32,
    },
    /// `x · Φ(x) = x/2 · (1 + erf(x/√2))`, the exact (erf) GELU.
    Gelu,
}

/// erf in float64 (the activations' reference): its Taylor series below 2.5, else 1 − erfc by
/// the continued fraction.
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.5 {
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term.abs() > 1e-18 * sum.abs() {
            n += 1.0;
            term *= -a * a / n;
            sum += term / (2.0 * n + 1.0);
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    } else if a.is_infinite() {
        1.0
    } else {
        // erfc(a) = exp(-a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + ...)))).
        let mut k = a;
        for j in (1..80).rev() {
            k = a + (j as f64 / 2.0) / k;
        }
        1.0 - (-a * a).exp() / std::f64::consts::PI.sqrt() / k
    };
    r.copysign(x)
}

/// The extended activations' code sits in bits 4–7 of the epilogue flags; only the variants
/// rendered with `ext_act` read it.
pub const EXT_ACT_SHIFT: u32 = 4;
/// A residual operand (binding 6, the output's shape) joins the result: flag bit 8; bit 9 adds
/// it after the activation instead of before. Only the `_res` variants read them; a conv sets
/// them (its alpha is 1, so the residual joins the accumulator).
pub const FLAG_RESIDUAL: u32 = 1 << 8;
pub const FLAG_RESIDUAL_AFTER_ACT: u32 = 1 << 9;
/// With bit 9: the residual multiplies the result instead of adding to it (a gated product).
pub const FLAG_RESIDUAL_MUL: u32 = 1 << 10;

impl Activation {
    /// Whether only the `ext_act` variants of the kernels apply it.
    pub fn is_extended(self) -> bool {
        !matches!(self, Activation::None | Activation::Relu | Activation::Clip { .. })
    }

    /// The function in f64, the reference the GPU tests compare with (NaN passes through).
    pub fn reference(self, x: f64) -> f64 {
        let hard_sigmoid = |a: f32, b: f32| (a as f64 * x + b as f64).clamp(0.0, 1.0);
        match self {
            Activation::None => x,
            Activation::Relu => x.max(0.0),
            Activation::Clip { min, max } => x.clamp(min as f64, max as f64),
            Activation::HardSigmoid { alpha, beta } => hard_sigmoid(alpha, beta),
            Activation::HardSwish => x * hard_sigmoid(1.0 / 6.0, 0.5),
            Activation::Silu => x / (1.0 + (-x).exp()),
            Activation::Gelu => 0.5 * x * (1.0 + erf(x * std::f64::consts::FRAC_1_SQRT_2)),
            Activation::LeakyRelu { alpha } => {
                if x < 0.0 {
                    alpha as f64 * x
                } else {
                    x
                }
            }
        }
    }

    /// Its uniforms: the flag bits (the basic code in bits 1–2, an extended one in bits 4–7)
    /// and the two parameters (the `clip_min`/`clip_max` slots).
    pub fn uniform(self) -> (u32, f32, f32) {
        let ext = |code: u32, a: f32, b: f32| (code << EXT_ACT_SHIFT, a, b);
        match self {
            Activation::None => (0, f32::NEG_INFINITY, f32::INFINITY),
            Activation::Relu => (1 << 1, 0.0, f32::INFINITY),
            Activation::Clip { min, max } => (2 << 1, min, max),
            Activation::HardSigmoid { alpha, beta } => ext(1, alpha, beta),
            Activation::HardSwish => ext(2, 1.0 / 6.0, 0.5),
            Activation::Silu => ext(3, 0.0, 0.0),
            Activation::LeakyRelu { alpha } => ext(4, alpha, 0.0),
            Activation::Gelu => ext(5, 0.0, 0.0),
        }
    }
}

/// `alpha`, `beta`, an optional broadcast bias and an activation, fused into the GEMM's store.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Epilogue {
    pub alpha: f32,
    pub beta: f32,
    /// Layout of the bias over the `[batch…, M, N]` output (strides 0 where it broadcasts).
    pub bias: Option<MatrixLayout>,
    pub activation: Activation,
}

impl Default for Epilogue {
    fn default() -> Self {
        Epilogue { alpha: 1.0, beta: 1.0, bias: None, activation: Activation::None }
    }
}

/// One (batched) matrix product. The output is always contiguous `[batch…, M, N]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmProblem {
    pub dtype: DType,
    pub m: u32,
    pub n: u32,
    pub k: u32,
    /// Output batch dimensions, outermost first, padded with 1.
    pub batch: [u32; MAX_BATCH_DIMS],
    pub a: MatrixLayout,
    pub b: MatrixLayout,
    pub epilogue: Epilogue,
}

impl GemmProblem {
    /// A plain `[M,K]·[K,N]` product of contiguous matrices, optionally transposed as in Gemm.
    pub fn simple(dtype: DType, m: u32, n: u32, k: u32, trans_a: bool, trans_b: bool) -> Self {
        let a = if trans_a { MatrixLayout::row_major(m).transposed() } else { MatrixLayout::row_major(k) };
        let b = if trans_b { MatrixLayout::row_major(k).transposed() } else { MatrixLayout::row_major(n) };
        GemmProblem { dtype, m, n, k, batch: [1; MAX_BATCH_DIMS], a, b, epilogue: Epilogue::default() }
    }

    pub fn batch_count(&self) -> u64 {
        self.batch.iter().map(|&d| d as u64).product()
    }

    /// Elements of the output tensor.
    pub fn output_len(&self) -> u64 {
        self.batch_count() * self.m as u64 * self.n as u64
    }

    pub fn flops(&self) -> f64 {
        2.0 * self.batch_count() as f64 * self.m as f64 * self.n as f64 * self.k as f64
    }

    /// Layout of the contiguous `[batch…, M, N]` output.
    pub fn output_layout(&self) -> MatrixLayout {
        contiguous_layout(&self.batch, self.m, self.n)
    }
}

/// Layout of a contiguous `[batch…, rows, cols]` tensor.
pub fn contiguous_layout(batch: &[u32; MAX_BATCH_DIMS], rows: u32, cols: u32) -> MatrixLayout {
    let mut strides = [0u32; MAX_BATCH_DIMS];
    let mut step = rows.saturating_mul(cols);
    for i in (0..MAX_BATCH_DIMS).rev() {
        strides[i] = if batch[i] == 1 { 0 } else { step };
        step = step.saturating_mul(batch[i]);
    }
    MatrixLayout { row_stride: cols, col_stride: 1, batch_strides: strides }
}

/// ONNX `MatMul` (numpy `matmul`) of a contiguous A and B: the problem and the output shape.
pub fn matmul_problem(a_shape: &[u64], b_shape: &[u64], dtype: DType) -> Result<(GemmProblem, Vec<u64>), PlanError> {
    matmul_problem_with_bias(a_shape, b_shape, None, dtype)
}

/// [`matmul_problem`] with a fused bias of `bias` shape broadcast over the output (A and B of
/// rank ≥ 2): the batch dims merge over A, B and the bias together, so the bias's batch strides
/// follow the product's (merged separately, a bias constant over a batch dim that B broadcasts
/// would group the dims differently).
pub fn matmul_problem_with_bias(
    a_shape: &[u64],
    b_shape: &[u64],
    bias: Option<&[u64]>,
    dtype: DType,
) -> Result<(GemmProblem, Vec<u64>), PlanError> {
    matmul_problem_strided([(a_shape, None), (b_shape, None)], bias, dtype)
}

/// An operand of [`matmul_problem_strided`]: its shape and, for a view of another tensor (a
/// Transpose absorbed into the product), its element strides per dimension (rank ≥ 2).
pub type OperandView<'a> = (&'a [u64], Option<&'a [u64]>);

/// [`matmul_problem_with_bias`] with A and B optionally strided views rather than contiguous
/// tensors. Batch dims merge only where every view's strides allow it.
pub fn matmul_problem_strided(
    [(a_shape, a_strides), (b_shape, b_strides)]: [OperandView<'_>; 2],
    bias: Option<&[u64]>,
    dtype: DType,
) -> Result<(GemmProblem, Vec<u64>), PlanError> {
    if a_shape.is_empty() || b_shape.is_empty() {
        return Err(PlanError::Invalid("MatMul operands must have rank ≥ 1".into()));
    }
    // 1-D operands are promoted to matrices and the added dimension is dropped from the output.
    let (a_mat, a_vec) = if a_shape.len() == 1 { (vec![1, a_shape[0]], true) } else { (a_shape.to_vec(), false) };
    let (b_mat, b_vec) = if b_shape.len() == 1 { (vec![b_shape[0], 1], true) } else { (b_shape.to_vec(), false) };
    let (m, k) = (a_mat[a_mat.len() - 2], a_mat[a_mat.len() - 1]);
    let (kb, n) = (b_mat[b_mat.len() - 2], b_mat[b_mat.len() - 1]);
    if k != kb {
        return Err(PlanError::Invalid(format!("MatMul inner dimensions differ: A {a_shape:?}, B {b_shape:?}")));
    }
    let a_batch = &a_mat[..a_mat.len() - 2];
    let b_batch = &b_mat[..b_mat.len() - 2];
    let out_batch = broadcast_shapes(a_batch, b_batch).ok_or_else(|| {
        PlanError::Invalid(format!("MatMul batch dimensions do not broadcast: A {a_shape:?}, B {b_shape:?}"))
    })?;
    let (m32, n32, k32) = (to_u32("M", m)?, to_u32("N", n)?, to_u32("K", k)?);
    let mut full = out_batch.clone();
    full.extend([m, n]);
    let bias = match bias {
        Some(_) if a_vec || b_vec => return Err(PlanError::Invalid("a bias after a MatMul with a 1-D operand".into())),
        Some(shape) => Some(padded_strides(shape, &full)?),
        None => None,
    };
    let rank = full.len();
    let mut operands = vec![a_batch, b_batch];
    operands.extend(bias.as_ref().map(|(padded, _)| &padded[..rank - 2]));
    let views = [view_strides(a_shape, a_strides, rank)?, view_strides(b_shape, b_strides, rank)?];
    let dims = merge_batch_dims(&out_batch, &operands, &views)?;
    let layout = |which: usize, rows: u32, cols: u32| -> Result<MatrixLayout, PlanError> {
        Ok(match &views[which] {
            None => MatrixLayout {
                batch_strides: dims.strides(which, rows as u64 * cols as u64)?,
                ..MatrixLayout::row_major(cols)
            },
            Some(st) => MatrixLayout {
                row_stride: to_u32("operand stride", st[rank - 2])?,
                col_stride: to_u32("operand stride", st[rank - 1])?,
                batch_strides: dims.strides_from(&st[..rank - 2])?,
            },
        })
    };
    let (a, b) = (layout(0, m32, k32)?, layout(1, k32, n32)?);
    let mut problem =
        GemmProblem { dtype, m: m32, n: n32, k: k32, batch: dims.out, a, b, epilogue: Epilogue::default() };
    if let Some((_, strides)) = bias {
        problem.epilogue.bias = Some(MatrixLayout {
            row_stride: to_u32("bias stride", strides[rank - 2])?,
            col_stride: to_u32("bias stride", strides[rank - 1])?,
            batch_strides: dims.strides_from(&strides[..rank - 2])?,
        });
    }
    let mut out_shape = out_batch;
    if !a_vec {
        out_shape.push(m);
    }
    if !b_vec {
        out_shape.push(n);
    }
    Ok((problem, out_shape))
}

/// A strided view's strides right-aligned to `rank` dims (0 on padded and size-1 dims), or
/// `None` for a contiguous operand.
fn view_strides(shape: &[u64], strides: Option<&[u64]>, rank: usize) -> Result<Option<Vec<u64>>, PlanError> {
    let Some(st) = strides else { return Ok(None) };
    if st.len() != shape.len() || shape.len() < 2 {
        return Err(PlanError::Invalid(format!("strided operand {shape:?}: strides {st:?} of another rank")));
    }
    let mut out = vec![0u64; rank - shape.len()];
    out.extend(shape.iter().zip(st).map(|(&d, &s)| if d == 1 { 0 } else { s }));
    Ok(Some(out))
}

/// Layout of a tensor of `shape` broadcast (numpy rules) over the product's full output
/// `[batch…, M, N]` (`full_shape`: no dimension dropped for 1-D operands). Used for Gemm's C
/// and for fused Add biases.
pub fn broadcast_layout(shape: &[u64], full_shape: &[u64], problem: &GemmProblem) -> Result<MatrixLayout, PlanError> {
    let rank = full_shape.len();
    let (padded, strides) = padded_strides(shape, full_shape)?;
    let dims = merge_batch_dims(&full_shape[..rank - 2], &[&padded[..rank - 2]], &[])?;
    if dims.out != problem.batch {
        return Err(PlanError::Invalid(format!("bias {shape:?}: batch dims differ from the product's")));
    }
    Ok(MatrixLayout {
        row_stride: to_u32("bias stride", strides[rank - 2])?,
        col_stride: to_u32("bias stride", strides[rank - 1])?,
        batch_strides: dims.strides_from(&strides[..rank - 2])?,
    })
}

/// `shape` right-aligned against `full_shape` (padded with 1s) and its contiguous strides, 0
/// where it broadcasts; an error when it does not broadcast to `full_shape` (rank ≥ 2).
fn padded_strides(shape: &[u64], full_shape: &[u64]) -> Result<(Vec<u64>, Vec<u64>), PlanError> {
    let rank = full_shape.len();
    if rank < 2 || shape.len() > rank || broadcast_shapes(shape, full_shape).as_deref() != Some(full_shape) {
        return Err(PlanError::Invalid(format!("bias shape {shape:?} does not broadcast to {full_shape:?}")));
    }
    let mut padded = vec![1u64; rank - shape.len()];
    padded.extend_from_slice(shape);
    let mut strides = vec![0u64; rank];
    let mut step = 1u64;
    for i in (0..rank).rev() {
        strides[i] = if padded[i] == 1 { 0 } else { step };
        step *= padded[i];
    }
    Ok((padded, strides))
}

/// Numpy broadcasting of two shapes; `None` when they are incompatible.
pub fn broadcast_shapes(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let rank = a.len().max(b.len());
    let dim = |s: &[u64], i: usize| {
        if i < rank - s.len() {
            1
        } else {
            s[i - (rank - s.len())]
        }
    };
    (0..rank)
        .map(|i| match (dim(a, i), dim(b, i)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

fn to_u32(what: &'static str, v: u64) -> Result<u32, PlanError> {
    u32::try_from(v).map_err(|_| PlanError::IndexOverflow { what, value: v })
}

/// Output batch dims merged to at most [`MAX_BATCH_DIMS`], remembering which original dims
/// went into each merged one, so operand strides can be derived per operand.
struct MergedBatch {
    out: [u32; MAX_BATCH_DIMS],
    /// For each merged dim: the range of original dims (right-aligned to the output).
    groups: Vec<std::ops::Range<usize>>,
    operands: Vec<Vec<u64>>,
    rank: usize,
}

/// Merges adjacent output batch dims when every operand either spans both or broadcasts both,
/// and every strided view (`views[i]` of operand i, right-aligned to the full rank) steps over
/// the pair as one dim.
fn merge_batch_dims(out: &[u64], operands: &[&[u64]], views: &[Option<Vec<u64>>]) -> Result<MergedBatch, PlanError> {
    let rank = out.len();
    let padded: Vec<Vec<u64>> = operands
        .iter()
        .map(|s| {
            let mut p = vec![1u64; rank - s.len()];
            p.extend_from_slice(s);
            p
        })
        .collect();
    let kind = |i: usize| -> Vec<bool> { padded.iter().map(|p| p[i] == out[i]).collect() };
    // Whether outer dim `o` and the next dim `i` step as one in every strided view.
    let flat =
        |o: usize, i: usize| views.iter().flatten().all(|st| st[o] == st[i] * out[i] || (st[o] == 0 && st[i] == 0));
    let mut groups: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, &dim) in out.iter().enumerate() {
        if dim == 1 {
            continue;
        }
        match groups.last_mut() {
            Some(g) if kind(g.start) == kind(i) && g.end == i && flat(i - 1, i) => g.end = i + 1,
            _ => groups.push(i..i + 1),
        }
    }
    if groups.len() > MAX_BATCH_DIMS {
        return Err(PlanError::Invalid(format!(
            "batch dimensions {out:?} need {} independent broadcast dims; at most {MAX_BATCH_DIMS} are supported",
            groups.len()
        )));
    }
    let mut merged = [1u32; MAX_BATCH_DIMS];
    let offset = MAX_BATCH_DIMS - groups.len();
    for (j, g) in groups.iter().enumerate() {
        let size: u64 = out[g.clone()].iter().product();
        merged[offset + j] = to_u32("batch", size)?;
    }
    Ok(MergedBatch { out: merged, groups, operands: padded, rank })
}

impl MergedBatch {
    /// Batch strides of operand `which`, a contiguous tensor with `matrix_elems` per matrix.
    fn strides(&self, which: usize, matrix_elems: u64) -> Result<[u32; MAX_BATCH_DIMS], PlanError> {
        let shape = &self.operands[which];
        let mut elem_strides = vec![0u64; self.rank];
        let mut step = matrix_elems;
        for i in (0..self.rank).rev() {
            elem_strides[i] = step;
            step *= shape[i];
        }
        let masked: Vec<u64> = (0..self.rank).map(|i| if shape[i] == 1 { 0 } else { elem_strides[i] }).collect();
        self.strides_from(&masked)
    }

    /// Merged strides from per-original-dim strides: a merged group steps by its innermost dim.
    fn strides_from(&self, strides: &[u64]) -> Result<[u32; MAX_BATCH_DIMS], PlanError> {
        let mut out = [0u32; MAX_BATCH_DIMS];
        let offset = MAX_BATCH_DIMS - self.groups.len();
        for (j, g) in self.groups.iter().enumerate() {
            out[offset + j] = to_u32("batch stride", strides[g.end - 1])?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matmul_shapes_follow_numpy() {
        let (p, out) = matmul_problem(&[2, 3, 4], &[4, 5], DType::F32).unwrap();
        assert_eq!(out, vec![2, 3, 5]);
        assert_eq!((p.m, p.n, p.k), (3, 5, 4));
        assert_eq!(p.batch, [1, 1, 1, 2]);
        assert_eq!(p.a.batch_strides, [0, 0, 0, 12]);
        assert_eq!(p.b.batch_strides, [0; 4]);

        let (_, out) = matmul_problem(&[4], &[4], DType::F32).unwrap();
        assert!(out.is_empty());
        let (p, out) = matmul_problem(&[4], &[2, 4, 3], DType::F32).unwrap();
        assert_eq!(out, vec![2, 3]);
        assert_eq!(p.m, 1);
        let (p, out) = matmul_problem(&[2, 1, 3, 4], &[5, 4, 6], DType::F32).unwrap();
        assert_eq!(out, vec![2, 5, 3, 6]);
        assert_eq!(p.batch, [1, 1, 2, 5]);
        assert_eq!(p.a.batch_strides, [0, 0, 12, 0]);
        assert_eq!(p.b.batch_strides, [0, 0, 0, 24]);
        assert!(matmul_problem(&[2, 3], &[4, 5], DType::F32).is_err());
        assert!(matmul_problem(&[2, 2, 3], &[3, 2, 5], DType::F32).is_err());
    }

    #[test]
    fn adjacent_batch_dims_merge() {
        let (p, _) = matmul_problem(&[2, 3, 4, 5, 6], &[6, 7], DType::F32).unwrap();
        assert_eq!(p.batch, [1, 1, 1, 24]);
        assert_eq!(p.a.batch_strides, [0, 0, 0, 30]);
    }

    #[test]
    fn bias_layouts() {
        let p = GemmProblem::simple(DType::F32, 3, 5, 4, false, false);
        assert_eq!(
            broadcast_layout(&[5], &[3, 5], &p).unwrap(),
            MatrixLayout { row_stride: 0, col_stride: 1, batch_strides: [0; 4] }
        );
        assert_eq!(
            broadcast_layout(&[3, 1], &[3, 5], &p).unwrap(),
            MatrixLayout { row_stride: 1, col_stride: 0, batch_strides: [0; 4] }
        );
        assert_eq!(
            broadcast_layout(&[], &[3, 5], &p).unwrap(),
            MatrixLayout { row_stride: 0, col_stride: 0, batch_strides: [0; 4] }
        );
        assert!(broadcast_layout(&[4], &[3, 5], &p).is_err());
        let (p, _) = matmul_problem(&[2, 3, 4], &[4, 5], DType::F32).unwrap();
        let l = broadcast_layout(&[2, 3, 5], &[2, 3, 5], &p).unwrap();
        assert_eq!((l.row_stride, l.col_stride, l.batch_strides), (5, 1, [0, 0, 0, 15]));
    }

    #[test]
    fn extent_counts_last_element() {
        let l = MatrixLayout::row_major(4);
        assert_eq!(l.extent(3, 4, &[1; 4]), 12);
        assert_eq!(l.transposed().extent(4, 3, &[1; 4]), 12);
    }
}

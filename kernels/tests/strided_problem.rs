//! MatMul problems over strided views (a Transpose absorbed into the product): the layouts the
//! kernels read, and batch dims merged only where every view steps over them as one.

use ep_kernels::gemm::{matmul_problem_strided, MatrixLayout};
use ep_kernels::DType;

/// `shape` seen through a Transpose of `perm`: the view's shape and strides.
fn view(shape: &[u64], perm: &[usize]) -> (Vec<u64>, Vec<u64>) {
    let mut strides = vec![1u64; shape.len()];
    for i in (0..shape.len() - 1).rev() {
        strides[i] = strides[i + 1] * shape[i + 1];
    }
    (perm.iter().map(|&p| shape[p]).collect(), perm.iter().map(|&p| strides[p]).collect())
}

#[test]
fn attention_operands_read_through_their_transposes() {
    // Q [1, 1500, 6, 64] → [1, 6, 1500, 64]; K [1, 1500, 6, 64] → [1, 6, 64, 1500].
    let (q, qs) = view(&[1, 1500, 6, 64], &[0, 2, 1, 3]);
    let (k, ks) = view(&[1, 1500, 6, 64], &[0, 2, 3, 1]);
    let (p, out) = matmul_problem_strided([(&q, Some(&qs)), (&k, Some(&ks))], None, DType::F32).unwrap();
    assert_eq!(out, vec![1, 6, 1500, 1500]);
    assert_eq!((p.m, p.n, p.k, p.batch), (1500, 1500, 64, [1, 1, 1, 6]));
    assert_eq!(p.a, MatrixLayout { row_stride: 384, col_stride: 1, batch_strides: [0, 0, 0, 64] });
    // Kᵀ is read down its rows: B steps by 1 along K and by 384 along N.
    assert_eq!(p.b, MatrixLayout { row_stride: 1, col_stride: 384, batch_strides: [0, 0, 0, 64] });
}

#[test]
fn batch_dims_merge_only_where_every_view_allows() {
    // Contiguous operands merge [2, 3] into one batch dim of 6.
    let (a, b) = ([2u64, 3, 5, 6], [2u64, 3, 6, 4]);
    let (p, _) = matmul_problem_strided([(&a, None), (&b, None)], None, DType::F32).unwrap();
    assert_eq!(p.batch, [1, 1, 1, 6]);
    // A seen as [3, 2, 5, 6] from [2, 3, 5, 6]: its batch dims step by 30 and 90, so they stay apart.
    let (v, vs) = view(&[2, 3, 5, 6], &[1, 0, 2, 3]);
    let b = [3u64, 2, 6, 4];
    let (p, out) = matmul_problem_strided([(&v, Some(&vs)), (&b, None)], None, DType::F32).unwrap();
    assert_eq!(out, vec![3, 2, 5, 4]);
    assert_eq!(p.batch, [1, 1, 3, 2]);
    assert_eq!(p.a.batch_strides, [0, 0, 30, 90]);
    assert_eq!(p.b.batch_strides, [0, 0, 48, 24]);
    // Strides of another rank are refused.
    assert!(matmul_problem_strided([(&v, Some(&vs[1..])), (&b, None)], None, DType::F32).is_err());
}

//! `reduce.rs`'s unit tests.

use super::*;

fn kernel(axes: &[i64], keepdims: bool, noop: bool) -> ReduceKernel {
    let tuning = RowTuning::new(ROW_THREADS);
    ReduceKernel { name: "r".into(), op: ReduceOp::Sum, ty: ElemType::F32, axes: axes.to_vec(), keepdims, noop, tuning }
}

#[test]
fn shapes() {
    let x: &[u64] = &[2, 3, 4];
    assert_eq!(kernel(&[1], true, false).infer(&[Some(x)]).unwrap(), vec![vec![2, 1, 4]]);
    assert_eq!(kernel(&[-1, 0], false, false).infer(&[Some(x)]).unwrap(), vec![vec![3]]);
    assert_eq!(kernel(&[], false, false).infer(&[Some(x)]).unwrap(), vec![Vec::<u64>::new()]);
    assert_eq!(kernel(&[], true, true).infer(&[Some(x)]).unwrap(), vec![vec![2, 3, 4]]);
    assert_eq!(kernel(&[], true, true).alias(0), Some(0));
    assert!(kernel(&[3], true, false).infer(&[Some(x)]).is_err());
    assert!(kernel(&[1, -2], true, false).infer(&[Some(x)]).is_err());
}

#[test]
fn layouts() {
    let layout = |shape: &[u64], mask: &[bool]| ReducePlan::new(shape, mask).unwrap().layout();
    // A contiguous run: the row kernel, unless it is long and the outputs few.
    assert_eq!(layout(&[4, 1500], &[false, true]), Layout::Row);
    assert_eq!(layout(&[300, 70_000], &[false, true]), Layout::Row);
    // Few long runs: chunks of at least 8192 (whole vec4s) towards 1024 workgroups in all.
    assert_eq!(layout(&[3, 200_000], &[false, true]), Layout::Wide { chunks: 24, chunk: 8336 });
    assert_eq!(layout(&[32, 262_400], &[false, true]), Layout::Wide { chunks: 32, chunk: 8200 });
    assert_eq!(layout(&[1 << 24], &[true]), Layout::Wide { chunks: 256, chunk: 65_536 });
    assert_eq!(layout(&[2, 65_535], &[false, true]), Layout::Row);
    // Many outputs, each longer than one workgroup takes.
    assert_eq!(layout(&[512, 2_000_000], &[false, true]), Layout::Wide { chunks: 2, chunk: 1_000_000 });
    // Strided elements: an invocation each where they are few or the outputs many.
    assert_eq!(layout(&[2, 3, 4], &[false, true, false]), Layout::General);
    assert_eq!(layout(&[3000, 3000], &[true, false]), Layout::General);
    assert_eq!(layout(&[1500, 3], &[true, false]), Layout::Wide { chunks: 1, chunk: 1500 });
    assert_eq!(layout(&[5000, 3000], &[true, false]), Layout::Wide { chunks: 1, chunk: 5000 });
    // Two reduced runs: each element also walks the outer one.
    assert_eq!(layout(&[70_000, 2, 3], &[true, false, true]), Layout::Wide { chunks: 25, chunk: 8400 });
}

#[test]
fn plans_collapse() {
    // Middle axis: kept (2, stride 12) and (4, stride 1); reduced (3, stride 4).
    let p = ReducePlan::new(&[2, 3, 4], &[false, true, false]).unwrap();
    assert_eq!((p.outputs, p.kept.clone(), p.reduced.clone()), (8, vec![(2, 12), (4, 1)], vec![(3, 4)]));
    assert!(!p.row());
    // Trailing axes collapse into one contiguous run.
    let p = ReducePlan::new(&[5, 1, 40, 2], &[false, true, true, true]).unwrap();
    assert_eq!((p.kept.clone(), p.reduced.clone()), (vec![(5, 80)], vec![(80, 1)]));
    assert!(p.row());
    // Nothing (of size > 1) reduced: a copy.
    let p = ReducePlan::new(&[2, 1, 3], &[false, true, false]).unwrap();
    assert_eq!((p.outputs, p.reduced.clone()), (6, vec![(1, 0)]));
    // Empty reduced axis.
    let p = ReducePlan::new(&[2, 0, 3], &[false, true, false]).unwrap();
    assert_eq!((p.outputs, p.reduced.clone()), (6, vec![(0, 3)]));
    let params = p.params(ReduceOp::Mean, ElemType::F32).unwrap();
    assert_eq!((params.r_last, params.divisor), (0, 1.0));
}

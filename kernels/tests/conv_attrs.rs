//! Conv attribute resolution: every auto_pad mode, every error (the planner's tests are in
//! `conv_planner.rs`).

use ep_kernels::conv::{resolve, AutoPad, ConvAttrs, ConvInputs, ConvProblem};
use ep_kernels::{DType, PlanError};

fn problem(x: &[u64], w: &[u64], attrs: &ConvAttrs) -> Result<ConvProblem, PlanError> {
    resolve(&ConvInputs { x, w, bias: None, dtype: DType::F32 }, attrs, true)
}

fn with(auto_pad: AutoPad, strides: &[i64], dilations: &[i64]) -> ConvAttrs {
    ConvAttrs { auto_pad, strides: strides.to_vec(), dilations: dilations.to_vec(), ..ConvAttrs::new() }
}

/// `(pads [top, left, bottom, right], output shape)` of a resolved 2-D problem.
fn pads_and_shape(x: &[u64], w: &[u64], attrs: &ConvAttrs) -> ([u32; 4], Vec<u64>) {
    let p = problem(x, w, attrs).unwrap();
    (p.pads, p.output_shape)
}

#[test]
fn explicit_asymmetric_pads() {
    let attrs = ConvAttrs { pads: vec![1, 2, 0, 1], strides: vec![2, 1], ..ConvAttrs::new() };
    let p = problem(&[2, 3, 10, 11], &[4, 3, 3, 3], &attrs).unwrap();
    // ONNX pads are [h_begin, w_begin, h_end, w_end].
    assert_eq!(p.pads, [1, 2, 0, 1]);
    assert_eq!(p.output_shape, vec![2, 4, 5, 12]);
    assert_eq!((p.oh, p.ow, p.strides), (5, 12, [2, 1]));
}

#[test]
fn valid_and_notset_without_pads() {
    assert_eq!(pads_and_shape(&[1, 1, 7], &[1, 1, 3], &with(AutoPad::Valid, &[2], &[])), ([0; 4], vec![1, 1, 3]));
    assert_eq!(pads_and_shape(&[1, 1, 7, 6], &[1, 1, 3, 2], &ConvAttrs::new()), ([0; 4], vec![1, 1, 5, 5]));
    // VALID ignores pads, as ONNX Runtime does with any auto_pad.
    let attrs = ConvAttrs { pads: vec![3, 3], ..with(AutoPad::Valid, &[], &[]) };
    assert_eq!(pads_and_shape(&[1, 1, 7], &[1, 1, 3], &attrs), ([0; 4], vec![1, 1, 5]));
}

#[test]
fn same_upper_and_lower() {
    // Stride 1, even total padding 3 for k=4: the odd pixel goes to the end (upper) or the
    // beginning (lower).
    let x = [1, 1, 10, 10];
    let w = [1, 1, 4, 4];
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameUpper, &[], &[])), ([1, 1, 2, 2], vec![1, 1, 10, 10]));
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameLower, &[], &[])), ([2, 2, 1, 1], vec![1, 1, 10, 10]));
    // Stride 2: out = ceil(in / 2); H: in 10 needs (5-1)·2+3-10 = 1, W: in 11 needs 2.
    let (x, w) = ([1, 1, 10, 11], [1, 1, 3, 3]);
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameUpper, &[2, 2], &[])), ([0, 1, 1, 1], vec![1, 1, 5, 6]));
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameLower, &[2, 2], &[])), ([1, 1, 0, 1], vec![1, 1, 5, 6]));
    // Stride 3, k=4 on 10: out 4, needs 3·3+4-10 = 3.
    let (x, w) = ([1, 1, 10], [1, 1, 4]);
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameUpper, &[3], &[])), ([0, 1, 0, 2], vec![1, 1, 4]));
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameLower, &[3], &[])), ([0, 2, 0, 1], vec![1, 1, 4]));
    // Dilation 2 makes k=3 span 5 pixels: total padding 4.
    let (x, w) = ([1, 1, 9], [1, 1, 3]);
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameUpper, &[], &[2])), ([0, 2, 0, 2], vec![1, 1, 9]));
    // Stride past the kernel: no padding needed (ONNX Runtime's negative tail trims nothing
    // that is read).
    let (x, w) = ([1, 1, 5], [1, 1, 1]);
    assert_eq!(pads_and_shape(&x, &w, &with(AutoPad::SameLower, &[3], &[])), ([0; 4], vec![1, 1, 2]));
}

#[test]
fn conv1d_is_conv2d_of_height_1() {
    let attrs = ConvAttrs { pads: vec![1, 1], ..ConvAttrs::new() };
    let p = problem(&[1, 80, 3000], &[384, 80, 3], &attrs).unwrap();
    assert_eq!((p.n, p.c, p.h, p.w, p.m, p.kh, p.kw, p.oh, p.ow), (1, 80, 1, 3000, 384, 1, 3, 1, 3000));
    assert_eq!(p.pads, [0, 1, 0, 1]);
    assert_eq!(p.output_shape, vec![1, 384, 3000]);
    let attrs = ConvAttrs { pads: vec![1, 1], strides: vec![2], ..ConvAttrs::new() };
    let p = problem(&[1, 384, 3000], &[384, 384, 3], &attrs).unwrap();
    assert_eq!((p.ow, p.strides, p.output_shape.clone()), (1500, [1, 2], vec![1, 384, 1500]));
    let err = resolve(&ConvInputs { x: &[1, 8, 9], w: &[4, 8, 3], bias: None, dtype: DType::F32 }, &attrs, false);
    assert!(matches!(err, Err(PlanError::Invalid(m)) if m.contains("conv1d_as_conv2d")));
}

#[test]
fn groups_and_kernel_shape() {
    let attrs = ConvAttrs { group: 4, kernel_shape: Some(vec![3, 3]), ..ConvAttrs::new() };
    let p = problem(&[1, 8, 5, 5], &[12, 2, 3, 3], &attrs).unwrap();
    assert_eq!((p.group, p.c_per_group(), p.m_per_group(), p.k_per_group()), (4, 2, 3, 18));
    let bias = resolve(
        &ConvInputs { x: &[1, 8, 5, 5], w: &[12, 2, 3, 3], bias: Some(&[12]), dtype: DType::F16 },
        &attrs,
        true,
    );
    assert!(bias.unwrap().has_bias);
}

fn invalid(x: &[u64], w: &[u64], attrs: &ConvAttrs, needle: &str) {
    match problem(x, w, attrs) {
        Err(PlanError::Invalid(m)) => assert!(m.contains(needle), "'{m}' lacks '{needle}'"),
        other => panic!("{x:?} {w:?} {attrs:?}: expected Invalid(…{needle}…), got {other:?}"),
    }
}

#[test]
fn invalid_nodes_are_declined_with_a_reason() {
    let plain = ConvAttrs::new();
    let group = |g| ConvAttrs { group: g, ..ConvAttrs::new() };
    invalid(&[1, 6, 5, 5], &[4, 4, 3, 3], &group(2), "channels");
    invalid(&[1, 6, 5, 5], &[5, 3, 3, 3], &group(2), "divisible by group");
    invalid(&[1, 6, 5, 5], &[4, 6, 3], &plain, "rank");
    invalid(
        &[1, 6, 5, 5],
        &[4, 6, 3, 3],
        &ConvAttrs { kernel_shape: Some(vec![3, 2]), ..plain.clone() },
        "kernel_shape",
    );
    invalid(&[1, 1, 2, 2], &[1, 1, 3, 3], &plain, "padded input");
    invalid(&[1, 1, 4], &[1, 1, 3], &with(AutoPad::NotSet, &[], &[2]), "padded input");
    invalid(&[1, 1, 4, 4, 4], &[1, 1, 3, 3, 3], &plain, "3-D");
    invalid(&[1, 4], &[1, 4], &plain, "rank 3 or 4");
    invalid(&[1, 1, 4], &[1, 1, 3], &with(AutoPad::NotSet, &[0], &[]), "strides");
    invalid(&[1, 1, 4], &[1, 1, 3], &with(AutoPad::NotSet, &[1, 1], &[]), "strides");
    invalid(&[1, 1, 4], &[1, 1, 3], &with(AutoPad::NotSet, &[], &[-1]), "dilations");
    invalid(&[1, 1, 4], &[1, 1, 3], &ConvAttrs { pads: vec![1], ..plain.clone() }, "pads");
    invalid(&[1, 1, 4], &[1, 1, 3], &ConvAttrs { pads: vec![-1, 0], ..plain.clone() }, "negative");
    invalid(&[1, 1, 4], &[1, 1, 3], &group(0), "group");
    invalid(&[0, 1, 4], &[1, 1, 3], &plain, "empty");
    let bad_bias =
        resolve(&ConvInputs { x: &[1, 1, 4], w: &[2, 1, 3], bias: Some(&[3]), dtype: DType::F32 }, &plain, true);
    assert!(matches!(bad_bias, Err(PlanError::Invalid(m)) if m.contains("bias")));
    let huge = problem(&[1, 1, 1 << 33], &[1, 1, 3], &plain);
    assert!(matches!(huge, Err(PlanError::IndexOverflow { .. })), "{huge:?}");
    assert_eq!("SAME_LOWER".parse::<AutoPad>(), Ok(AutoPad::SameLower));
    assert!("SAME".parse::<AutoPad>().is_err());
}

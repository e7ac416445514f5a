//! Resize (nearest and linear) and ConvTranspose, the upsampling ops of decoders.
use super::*;
use common::graph::run_graph_with;
use ep_kernels::conv::ConvAlgo;
use ep_kernels::graph::ExecOptions;

/// Resize of `x` ([N, C, H, W]) to `out` in float64: linear (half_pixel, clamped, as ONNX
/// Runtime) or nearest (asymmetric coordinates, floor).
fn resize_reference(x: &[f64], shape: &[u64], out: &[u64], linear: bool) -> Vec<f64> {
    let (h, w) = (shape[2] as usize, shape[3] as usize);
    let (sh, sw) = (out[2] as f64 / h as f64, out[3] as f64 / w as f64);
    let mut y = Vec::new();
    for plane in x.chunks(h * w).take((shape[0] * shape[1]) as usize) {
        for oy in 0..out[2] as usize {
            for ox in 0..out[3] as usize {
                if linear {
                    let cy = ((oy as f64 + 0.5) / sh - 0.5).clamp(0.0, (h - 1) as f64);
                    let cx = ((ox as f64 + 0.5) / sw - 0.5).clamp(0.0, (w - 1) as f64);
                    let (y0, x0) = (cy.floor() as usize, cx.floor() as usize);
                    let (y1, x1) = ((y0 + 1).min(h - 1), (x0 + 1).min(w - 1));
                    let (fy, fx) = (cy - y0 as f64, cx - x0 as f64);
                    let at = |r: usize, c: usize| plane[r * w + c];
                    let top = at(y0, x0) + (at(y0, x1) - at(y0, x0)) * fx;
                    let bottom = at(y1, x0) + (at(y1, x1) - at(y1, x0)) * fx;
                    y.push(top + (bottom - top) * fy);
                } else {
                    let sy = ((oy as f64 / sh).floor() as usize).min(h - 1);
                    let sx = ((ox as f64 / sw).floor() as usize).min(w - 1);
                    y.push(plane[sy * w + sx]);
                }
            }
        }
    }
    y
}

#[test]
fn resize_nearest_and_linear() {
    let mut rng = common::rng("resize_nearest_and_linear");
    let sizes = |v: &[i64]| common::graph::const_val("sizes", &T::i64(&[v.len() as u64], v));
    for ty in [ElemType::F32, ElemType::F16] {
        for (shape, out) in [([2u64, 3, 5, 7], [2u64, 3, 10, 13]), ([1, 2, 9, 8], [1, 2, 4, 5])] {
            let (xv, x) = random(&mut rng, ty, &shape);
            let o: Vec<i64> = out.iter().map(|&d| d as i64).collect();
            for (linear, attrs) in [
                (true, vec![("mode", Attr::String("linear".into()))]),
                (
                    false,
                    vec![
                        ("mode", Attr::String("nearest".into())),
                        ("coordinate_transformation_mode", Attr::String("asymmetric".into())),
                        ("nearest_mode", Attr::String("floor".into())),
                    ],
                ),
            ] {
                let inputs = vec![Some(val("x", ty, &shape)), None, None, Some(sizes(&o))];
                let n = node("Resize", 19, inputs, vec![val("y", ty, &out)], attrs);
                let got = run_graph(&[n], &[("x", &x)], &[], &["y"]).unwrap();
                assert_eq!(got[0].shape, out.to_vec());
                let want = resize_reference(&xv, &shape, &out, linear);
                let (atol, rtol) = if ty == ElemType::F16 { (4e-3, 4e-3) } else { (1e-5, 1e-5) };
                for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= atol + rtol * w.abs(), "{shape:?} linear={linear} {ty}: {i}: {g} vs {w}");
                }
            }
        }
    }
    // Cubic, a computed size and a linear resize of the channel axis decline.
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let x = Some(val("x", ElemType::F32, &[1, 2, 4, 4]));
    let decline = |inputs: Vec<Option<ep_kernels::graph::ValueInfo>>, mode: &str| {
        let n =
            node("Resize", 19, inputs, vec![val("y", ElemType::F32, &[])], vec![("mode", Attr::String(mode.into()))]);
        ep_kernels::ops::lookup(&n).unwrap().check(&n, &opts).unwrap_err()
    };
    assert!(decline(vec![x.clone(), None, None, Some(sizes(&[1, 2, 8, 8]))], "cubic").contains("cubic"));
    assert!(decline(vec![x.clone(), None, None, Some(val("s", ElemType::I64, &[4]))], "nearest").contains("run time"));
    assert!(decline(vec![x, None, None, Some(sizes(&[1, 3, 8, 8]))], "linear").contains("last two axes"));
}

/// ConvTranspose in float64 by scattering each input element through the kernel (the gather
/// the GPU does, written the other way round). 2-D shapes; `[begin_h, begin_w, end_h, end_w]` pads.
#[allow(clippy::too_many_arguments)]
fn conv_transpose_reference(
    x: &[f64],
    xs: &[u64],
    w: &[f64],
    ws: &[u64],
    b: Option<&[f64]>,
    group: usize,
    stride: [usize; 2],
    dil: [usize; 2],
    pads: [usize; 4],
    out_pad: [usize; 2],
) -> (Vec<u64>, Vec<f64>) {
    let (n, c, h, wd) = (xs[0] as usize, xs[1] as usize, xs[2] as usize, xs[3] as usize);
    let (mg, kh, kw) = (ws[1] as usize, ws[2] as usize, ws[3] as usize);
    let m = mg * group;
    let full_h = stride[0] * (h - 1) + out_pad[0] + (kh - 1) * dil[0] + 1;
    let full_w = stride[1] * (wd - 1) + out_pad[1] + (kw - 1) * dil[1] + 1;
    let (oh, ow) = (full_h - pads[0] - pads[2], full_w - pads[1] - pads[3]);
    let mut y = vec![0.0; n * m * oh * ow];
    for ni in 0..n {
        for ci in 0..c {
            let g = ci / (c / group);
            for ih in 0..h {
                for iw in 0..wd {
                    let xv = x[((ni * c + ci) * h + ih) * wd + iw];
                    for ml in 0..mg {
                        for a in 0..kh {
                            for bb in 0..kw {
                                let py = (ih * stride[0] + a * dil[0]) as i64 - pads[0] as i64;
                                let px = (iw * stride[1] + bb * dil[1]) as i64 - pads[1] as i64;
                                if py < 0 || px < 0 || py >= oh as i64 || px >= ow as i64 {
                                    continue;
                                }
                                let mi = g * mg + ml;
                                y[((ni * m + mi) * oh + py as usize) * ow + px as usize] +=
                                    xv * w[((ci * mg + ml) * kh + a) * kw + bb];
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some(b) = b {
        for (i, v) in y.iter_mut().enumerate() {
            *v += b[i / (oh * ow) % m];
        }
    }
    (vec![n as u64, m as u64, oh as u64, ow as u64], y)
}

/// The dispatches ConvTranspose node `n` plans at its declared shapes under `algo`.
fn conv_transpose_dispatches(n: &ep_kernels::graph::Node, algo: ConvAlgo) -> Vec<String> {
    let shapes: Vec<Vec<u64>> = n.inputs.iter().flatten().map(|v| v.fixed_shape().unwrap()).collect();
    let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| Some(&s[..])).collect();
    let kernel = ep_kernels::ops::lookup(n).unwrap().build(n).unwrap();
    let options = ExecOptions { conv_algo: algo, ..ExecOptions::default() };
    let plan = kernel.plan(&refs, common::gpu().caps(), &options).unwrap().unwrap();
    plan.dispatches.into_iter().map(|(name, _)| name).collect()
}

/// Both schedules (the direct gather and GEMM + col2im), each forced and as `Auto` picks, against
/// float64; the last two cases have enough channels for `Auto` to take the GEMM.
#[test]
fn conv_transpose_direct_and_gemm() {
    let mut rng = common::rng("conv_transpose_direct_and_gemm");
    // (X, W, group, strides, dilations, pads, output_padding, bias)
    type Case = (&'static [u64], &'static [u64], usize, [usize; 2], [usize; 2], [usize; 4], [usize; 2], bool);
    let cases: [Case; 7] = [
        (&[2, 4, 5, 6], &[4, 3, 2, 2], 1, [2, 2], [1, 1], [0, 0, 0, 0], [0, 0], true),
        (&[1, 6, 7, 5], &[6, 2, 3, 3], 3, [2, 1], [1, 2], [1, 0, 1, 2], [1, 0], false),
        (&[1, 3, 4, 4], &[3, 5, 3, 3], 1, [3, 3], [1, 1], [1, 1, 1, 1], [2, 1], true),
        (&[2, 2, 1, 9], &[2, 3, 1, 4], 1, [1, 2], [1, 1], [0, 1, 0, 0], [0, 1], true),
        // A UNet up-sampling (k 2, stride 2) with odd sizes, and a grouped overlapping one.
        (&[2, 40, 7, 9], &[40, 19, 2, 2], 1, [2, 2], [1, 1], [0, 0, 0, 0], [0, 0], true),
        (&[1, 64, 5, 6], &[64, 7, 3, 3], 2, [2, 2], [1, 1], [1, 0, 0, 1], [1, 1], true),
        (&[3, 17, 1, 11], &[17, 9, 1, 5], 1, [1, 3], [1, 2], [0, 2, 0, 1], [0, 2], false),
    ];
    for ty in [ElemType::F32, ElemType::F16] {
        for (xs, ws, group, stride, dil, pads, out_pad, bias) in cases {
            let (xv, x) = random(&mut rng, ty, xs);
            let (wv, w) = random(&mut rng, ty, ws);
            let m = ws[1] * group as u64;
            let (bv, b) = random(&mut rng, ty, &[m]);
            let (out_shape, want) =
                conv_transpose_reference(&xv, xs, &wv, ws, bias.then_some(&bv[..]), group, stride, dil, pads, out_pad);
            let ints = |v: &[usize]| Attr::Ints(v.iter().map(|&d| d as i64).collect());
            let attrs = vec![
                ("group", Attr::Int(group as i64)),
                ("strides", ints(&stride)),
                ("dilations", ints(&dil)),
                ("pads", ints(&pads)),
                ("output_padding", ints(&out_pad)),
            ];
            let mut inputs = vec![Some(val("x", ty, xs)), Some(val("w", ty, ws))];
            let mut feeds = vec![("x", &x), ("w", &w)];
            if bias {
                inputs.push(Some(val("b", ty, &[m])));
                feeds.push(("b", &b));
            }
            let n = node("ConvTranspose", 11, inputs, vec![val("y", ty, &out_shape)], attrs);
            let auto_gemm = xs[1] / group as u64 >= ep_kernels::ops::convtranspose::GEMM_MIN_CHANNELS;
            for algo in [ConvAlgo::Auto, ConvAlgo::Direct, ConvAlgo::Gemm] {
                let gemm = algo == ConvAlgo::Gemm || (algo == ConvAlgo::Auto && auto_gemm);
                let planned = conv_transpose_dispatches(&n, algo);
                let col2im = format!("convtranspose_col2im_{}", ty.name());
                assert_eq!(planned.last() == Some(&col2im), gemm, "{xs:?} {ws:?} {algo:?}: {planned:?}");
                assert_eq!(planned.len() > 1, gemm, "{xs:?} {ws:?} {algo:?}: {planned:?}");
                let options = ExecOptions { conv_algo: algo, ..ExecOptions::default() };
                let got = run_graph_with(std::slice::from_ref(&n), &feeds, &[], &["y"], options).unwrap();
                assert_eq!(got[0].shape, out_shape, "{xs:?} {ws:?}");
                let (atol, rtol) = if ty == ElemType::F16 { (3e-2, 1e-2) } else { (1e-5, 1e-5) };
                for (i, (g, w)) in got[0].values().iter().zip(&want).enumerate() {
                    assert!((g - w).abs() <= atol + rtol * w.abs(), "{xs:?} {ws:?} {ty} {algo:?}: {i}: {g} vs {w}");
                }
            }
        }
    }
    let opts = PlacementOptions::defaults(profiles::get("llvmpipe").unwrap());
    let ins = || vec![Some(val("x", ElemType::F32, &[1, 2, 4, 4])), Some(val("w", ElemType::F32, &[2, 3, 3, 3]))];
    let check = |attrs: Vec<(&str, Attr)>| {
        let n = node("ConvTranspose", 11, ins(), vec![val("y", ElemType::F32, &[])], attrs);
        ep_kernels::ops::lookup(&n).unwrap().check(&n, &opts)
    };
    assert!(check(vec![]).is_ok());
    assert!(check(vec![("strides", Attr::Ints(vec![0, 1]))]).is_err());
    assert!(check(vec![("pads", Attr::Ints(vec![-1, 0, 0, 0]))]).is_err());
    assert!(check(vec![("output_shape", Attr::Ints(vec![7, 6]))]).is_ok());
    assert!(check(vec![("output_shape", Attr::Ints(vec![0, 6]))]).unwrap_err().contains("out of reach"));
    assert!(check(vec![("group", Attr::Int(3))]).is_err());
}

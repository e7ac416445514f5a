//! Bounds on values' magnitudes known when the program is built, from the constants' data, so
//! that a split f32 product or attention (`gemm/split.rs`, `attn_coop.wgsl.j2` with x3) can take
//! its operand's scale from the bound instead of a maxima pass over the data at every run. A
//! split only needs a scale at or above the largest magnitude: it brings the bound into
//! [2^14, 2^15) and splits each element into f16 parts of 11 significant bits each, so a bound
//! 2^7 times the true largest magnitude still keeps 22 bits for every element down to 2^-10 of
//! it (what lies below adds less than f32's own rounding of the sum).
//!
//! - A normalisation's output over `N` elements per row: LayerNormalization's standardised
//!   values satisfy |z| ≤ √(N−1) (the deviations sum to zero, so one of them squared is at most
//!   (N−1)/N of their sum of squares), RMSNormalization's |x / rms| ≤ √N; then times γ, plus β.
//!   Each row's Euclidean norm is at most √N (max|γ| + max|β|).
//! - A product of a bounded operand by constant weights W (and a constant bias b): column j is
//!   at most min(‖row‖₂·‖W_j‖₂, max|a|·‖W_j‖₁) + |b_j| (Cauchy–Schwarz, Hölder).
//!
//! Bounds ride on internal node attributes ([`A_BOUND`], [`KV_BOUND`]), which placement
//! declines on a model's own nodes.

use std::collections::HashMap;

use super::fusion::Fusion;
use super::model::{Attr, Node, ValueInfo};
use super::packed_proj::Pack;
use super::program::Constant;
use crate::dtype::ElemType;

/// A MatMul's or Gemm's bound on |A| (f32), where A is a normalisation's output.
pub const A_BOUND: &str = "__ep_wgpu_a_bound";
/// A FlashAttention's bounds on |K| and |V| (f32), where they are a packed projection of a
/// normalisation's output.
pub const KV_BOUND: &str = "__ep_wgpu_kv_bound";

/// Slack over the exact bounds for the kernels' own rounding (a variance computed in f32 is off
/// by a few ulps times the row length). A split leaves its scaled bound 2× below f16's largest
/// value besides.
const SLACK: f64 = 1.0 + 1.0 / 64.0;

/// What is known of a value: every element's magnitude and each row's Euclidean norm are at
/// most these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Bound {
    pub max: f64,
    pub row_norm: f64,
}

/// `nodes` with the bounds their kernels use set as attributes; `fusion`'s rewrites and the
/// packed attentions annotated in place (packing applied).
pub(super) fn annotate(nodes: &[Node], fusion: &mut Fusion, packs: &mut [Pack], constants: &[Constant]) -> Vec<Node> {
    let mut out = nodes.to_vec();
    let mut bounds: HashMap<String, Bound> = HashMap::new();
    // In topological order: a norm's output, then what only moves its elements (ONNX Runtime's
    // MatMul+Add fusion leaves a 3-D Linear as Reshape → Gemm → Reshape).
    for i in (0..nodes.len()).filter(|i| !fusion.absorbed.contains(i)) {
        let node = fusion.rewrites.get(&i).unwrap_or(&nodes[i]);
        let bound = norm_bound(node, constants).or_else(|| moved(node, &bounds));
        if let (Some(b), Some(o)) = (bound, node.output(0)) {
            bounds.insert(o.name.clone(), b);
        }
    }
    if bounds.is_empty() {
        return out;
    }
    for i in (0..nodes.len()).filter(|i| !fusion.absorbed.contains(i)) {
        let node = match fusion.rewrites.get_mut(&i) {
            Some(n) => n,
            None => &mut out[i],
        };
        // A product by constant weights, whose maxima are taken once (`Gpu::prepare_gemm_constant_b`).
        let product = node.is_onnx()
            && matches!(node.op_type.as_str(), "MatMul" | "Gemm")
            && node.input(1).is_some_and(|b| b.constant);
        if let Some(b) = node.input(0).and_then(|a| bounds.get(&a.name)).filter(|_| product) {
            node.attrs.insert(A_BOUND.into(), Attr::Float(b.max as f32));
        }
    }
    for p in packs.iter_mut() {
        let Some(&b) = bounds.get(&p.input.name) else { continue };
        out[p.product].attrs.insert(A_BOUND.into(), Attr::Float(b.max as f32));
        if let Some(kv) = product_bound(b, &p.weights, &p.bias) {
            let kv = Attr::Floats(vec![kv, kv]);
            p.node.attrs.insert(KV_BOUND.into(), kv.clone());
            if let Some(n) = fusion.rewrites.get_mut(&p.attention) {
                n.attrs.insert(KV_BOUND.into(), kv);
            }
        }
    }
    out
}

/// The bound on the output of a node that only moves its input's elements (Reshape, Flatten,
/// Squeeze, Unsqueeze, Identity, Transpose): the same largest magnitude; the same rows where
/// the last axis stays (known shapes), else rows of at most √(last axis) times it.
fn moved(node: &Node, bounds: &HashMap<String, Bound>) -> Option<Bound> {
    let layout =
        matches!(node.op_type.as_str(), "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" | "Identity" | "Transpose");
    if !node.is_onnx() || !layout {
        return None;
    }
    let b = *bounds.get(&node.input(0)?.name)?;
    let last = |v: Option<&ValueInfo>| v.and_then(ValueInfo::fixed_shape).and_then(|s| s.last().copied());
    let (from, to) = (last(node.input(0)), last(node.output(0)));
    let row_norm = match to {
        Some(_) if node.op_type != "Transpose" && from == to => b.row_norm,
        Some(d) => b.max * (d as f64).sqrt(),
        None => f64::MAX,
    };
    Some(Bound { max: b.max, row_norm })
}

/// The f32 values of a constant named `name` (`None` when absent, of another type, or without
/// its bytes, as the offline inspector plans).
fn values<'c>(constants: &'c [Constant], name: &str) -> Option<impl Iterator<Item = f64> + 'c> {
    let c = constants.iter().find(|c| c.name == name).filter(|c| c.dtype == ElemType::F32 && !c.data.is_empty())?;
    Some(c.data.chunks_exact(4).map(|b| f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))))
}

/// The largest magnitude of a constant input of `node`, 0 where the input is omitted; `None`
/// where it is not a finite f32 constant.
fn largest(node: &Node, k: usize, constants: &[Constant]) -> Option<f64> {
    if !node.has_input(k) {
        return Some(0.0);
    }
    let v = node.input(k)?;
    if !v.constant {
        return None;
    }
    let mut m = 0.0f64;
    for x in values(constants, &v.name)? {
        if !x.is_finite() {
            return None;
        }
        m = m.max(x.abs());
    }
    Some(m)
}

/// The bound on output 0 of a LayerNormalization or RMS norm (ONNX's, or ONNX Runtime's skip
/// norms, which normalise input + skip + bias) over f32 rows with constant γ (and β), a positive
/// epsilon (without it, a row of equal values divides by zero) and a known row length.
pub(super) fn norm_bound(node: &Node, constants: &[Constant]) -> Option<Bound> {
    let standardised = |n: f64| (n - 1.0).max(0.0).sqrt();
    let rms = |n: f64| n.sqrt();
    // The spread of the normalised values, and the inputs holding γ and β.
    let (spread, gamma, beta): (fn(f64) -> f64, usize, Option<usize>) =
        match (node.domain.as_str(), node.op_type.as_str()) {
            ("" | "ai.onnx", "LayerNormalization") => (standardised, 1, Some(2)),
            ("" | "ai.onnx", "RMSNormalization" | "SimplifiedLayerNormalization") => (rms, 1, None),
            ("com.microsoft", "SkipLayerNormalization") => (standardised, 2, Some(3)),
            ("com.microsoft", "SkipSimplifiedLayerNormalization") => (rms, 2, None),
            _ => return None,
        };
    let x = node.input(0)?;
    if x.dtype() != Some(crate::dtype::DType::F32) || node.float("epsilon").unwrap_or(1e-5) <= 0.0 {
        return None;
    }
    let dims = x.shape.as_ref()?;
    let axis = node.int("axis").unwrap_or(-1);
    let axis = if axis < 0 { axis + dims.len() as i64 } else { axis };
    let from = usize::try_from(axis).ok().filter(|&a| a < dims.len())?;
    let n = dims[from..].iter().map(|d| d.fixed()).product::<Option<u64>>()? as f64;
    let gamma = largest(node, gamma, constants)?;
    let beta = match beta {
        Some(k) => largest(node, k, constants)?,
        None => 0.0,
    };
    let max = (spread(n) * gamma + beta) * SLACK;
    let row_norm = n.sqrt() * (gamma + beta) * SLACK;
    (max.is_finite() && max > 0.0).then_some(Bound { max, row_norm })
}

/// The largest magnitude of `a · W + b` for W `[K, N]` and b `[N]` (f32 constants), over every
/// column.
pub(super) fn product_bound(a: Bound, w: &Constant, b: &Constant) -> Option<f32> {
    let [k, n] = <[u64; 2]>::try_from(w.shape.as_slice()).ok()?.map(|d| d as usize);
    let data: Vec<f64> = values(std::slice::from_ref(w), &w.name)?.collect();
    let bias: Vec<f64> = values(std::slice::from_ref(b), &b.name)?.collect();
    if data.len() != k * n || bias.len() != n {
        return None;
    }
    let mut norms = vec![(0.0f64, 0.0f64); n];
    for row in data.chunks_exact(n) {
        for (s, &x) in norms.iter_mut().zip(row) {
            *s = (s.0 + x.abs(), s.1 + x * x);
        }
    }
    let bound = norms
        .iter()
        .zip(&bias)
        .map(|(&(l1, l2), &b)| (a.row_norm * l2.sqrt()).min(a.max * l1) + b.abs())
        .fold(0.0f64, f64::max)
        * SLACK;
    (bound.is_finite() && bound > 0.0 && bound < f64::from(f32::MAX)).then_some(bound as f32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::model::{Dim, ValueInfo, ONNX_FLOAT};

    fn value(name: &str, dims: &[u64], constant: bool) -> ValueInfo {
        ValueInfo {
            name: name.into(),
            elem_type: ONNX_FLOAT,
            shape: Some(dims.iter().map(|&d| Dim::Fixed(d)).collect()),
            constant,
            small_data: None,
        }
    }

    fn constant(name: &str, shape: &[u64], data: &[f32]) -> Constant {
        Constant {
            name: name.into(),
            dtype: ElemType::F32,
            shape: shape.to_vec(),
            data: data.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }

    fn layer_norm(n: u64, eps: f32) -> Node {
        Node {
            name: "ln".into(),
            op_type: "LayerNormalization".into(),
            domain: String::new(),
            since_version: 17,
            inputs: vec![Some(value("x", &[3, n], false)), Some(value("g", &[n], true)), Some(value("b", &[n], true))],
            outputs: vec![Some(value("y", &[3, n], false))],
            attrs: [("epsilon".to_string(), Attr::Float(eps))].into(),
            assigned_ep: None,
        }
    }

    /// Rows whose one outlier reaches √(N−1) standard deviations: the bound holds them with
    /// no more than its slack to spare.
    #[test]
    fn layer_norm_bound_holds_the_extreme_row() {
        let n = 384usize;
        let gamma: Vec<f32> = (0..n).map(|i| if i == 0 { -2.5 } else { 1.0 }).collect();
        let beta: Vec<f32> = (0..n).map(|i| if i == 0 { -0.5 } else { 0.0 }).collect();
        let cs = [constant("g", &[n as u64], &gamma), constant("b", &[n as u64], &beta)];
        let b = norm_bound(&layer_norm(n as u64, 1e-5), &cs).unwrap();
        // x = (1, 0, …, 0): z_0 = √(N−1) exactly (eps aside).
        let mut x = vec![0.0f64; n];
        x[0] = 1.0;
        let mean = x.iter().sum::<f64>() / n as f64;
        let var = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
        let y: Vec<f64> =
            (0..n).map(|i| (x[i] - mean) / (var + 1e-5).sqrt() * f64::from(gamma[i]) + f64::from(beta[i])).collect();
        let largest = y.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let norm = y.iter().map(|v| v * v).sum::<f64>().sqrt();
        assert!(largest <= b.max && b.max <= largest * 1.02, "{largest} against {}", b.max);
        assert!(norm <= b.row_norm, "{norm} against {}", b.row_norm);
        // Without a positive epsilon, or with a γ the program does not hold, no bound.
        assert!(norm_bound(&layer_norm(n as u64, 0.0), &cs).is_none());
        assert!(norm_bound(&layer_norm(n as u64, 1e-5), &cs[1..]).is_none());
        let inf = [constant("g", &[n as u64], &vec![f32::INFINITY; n]), cs[1].clone()];
        assert!(norm_bound(&layer_norm(n as u64, 1e-5), &inf).is_none());
    }

    /// ONNX Runtime's skip norms read γ (and β) after the skip: the same bounds as the plain ones.
    #[test]
    fn skip_norms_take_gamma_after_the_skip() {
        let n = 16u64;
        let mut skip = layer_norm(n, 1e-5);
        skip.domain = "com.microsoft".into();
        skip.op_type = "SkipLayerNormalization".into();
        skip.inputs.insert(1, Some(value("s", &[3, n], false)));
        let gamma: Vec<f32> = (0..n).map(|i| i as f32 / 4.0).collect();
        let cs = [constant("g", &[n], &gamma), constant("b", &[n], &[0.25; 16])];
        let b = norm_bound(&skip, &cs).unwrap();
        assert!((b.max - ((15.0f64).sqrt() * 3.75 + 0.25) * SLACK).abs() < 1e-9, "{b:?}");
        skip.op_type = "SkipSimplifiedLayerNormalization".into();
        skip.inputs.truncate(3);
        let b = norm_bound(&skip, &cs).unwrap();
        assert!((b.max - (16.0f64).sqrt() * 3.75 * SLACK).abs() < 1e-9, "{b:?}");
        // The plain op in another domain is not ONNX's.
        let mut other = layer_norm(n, 1e-5);
        other.domain = "com.example".into();
        assert!(norm_bound(&other, &cs).is_none());
    }

    /// Only products by constant weights reading the norm's output get its bound: not one whose
    /// B is computed, nor one reading the norm's input.
    #[test]
    fn products_of_the_norm_output_by_constant_weights_get_its_bound() {
        let n = 8u64;
        let product = |name: &str, a: &str, b: ValueInfo| Node {
            name: name.into(),
            op_type: "MatMul".into(),
            domain: String::new(),
            since_version: 13,
            inputs: vec![Some(value(a, &[3, n], false)), Some(b)],
            outputs: vec![Some(value(&format!("{name}_out"), &[3, n], false))],
            attrs: Default::default(),
            assigned_ep: None,
        };
        // What ONNX Runtime's MatMul+Add fusion leaves: a Reshape before the product.
        let reshape = Node {
            name: "flatten".into(),
            op_type: "Reshape".into(),
            inputs: vec![Some(value("y", &[3, n], false)), Some(value("shape", &[2], true))],
            outputs: vec![Some(value("yr", &[3, n], false))],
            ..product("r", "y", value("w", &[n, n], true))
        };
        let nodes = vec![
            layer_norm(n, 1e-5),
            product("by_weights", "y", value("w", &[n, n], true)),
            product("by_values", "y", value("v", &[n, n], false)),
            product("of_input", "x", value("w", &[n, n], true)),
            reshape,
            product("after_reshape", "yr", value("w", &[n, n], true)),
        ];
        let ones = vec![1.0f32; n as usize];
        let cs = [constant("g", &[n], &ones), constant("b", &[n], &ones), constant("w", &[n, n], &vec![0.5; 64])];
        let outputs: Vec<String> =
            nodes[1..].iter().filter(|p| p.op_type == "MatMul").map(|p| format!("{}_out", p.name)).collect();
        let mut fusion = super::super::fusion::plan(&nodes, &outputs, crate::graph::FlashMode::Off);
        let annotated = annotate(&nodes, &mut fusion, &mut [], &cs);
        let bound = |i: usize| annotated[i].float(A_BOUND);
        // √7 + 1, with the slack.
        let want = ((7.0f64).sqrt() + 1.0) * SLACK;
        assert!((f64::from(bound(1).unwrap()) - want).abs() < 1e-5, "{:?}", bound(1));
        assert_eq!((bound(2), bound(3)), (None, None));
        assert_eq!(bound(5), bound(1), "through the Reshape");
    }

    /// Against a float64 product over rows at the bound: every column within it, the column
    /// built to meet it close to it.
    #[test]
    fn product_bound_holds_every_column() {
        let (k, n) = (6usize, 5usize);
        let w: Vec<f32> = (0..k * n).map(|i| ((i * 7919 % 23) as f32 - 11.0) / 8.0).collect();
        let bias: Vec<f32> = (0..n).map(|j| j as f32 - 2.0).collect();
        let a = Bound { max: 3.0, row_norm: 4.0 };
        let got = product_bound(a, &constant("w", &[k as u64, n as u64], &w), &constant("b", &[n as u64], &bias));
        let got = f64::from(got.unwrap());
        // A row of norm 4 along column j (within max 3 where it can) reaches ‖W_j‖₂·4 + |b_j|.
        let mut reached = 0.0f64;
        for j in 0..n {
            let col: Vec<f64> = (0..k).map(|r| f64::from(w[r * n + j])).collect();
            let l2 = col.iter().map(|x| x * x).sum::<f64>().sqrt();
            let row: Vec<f64> = col.iter().map(|x| (x / l2 * 4.0).clamp(-3.0, 3.0)).collect();
            let dot: f64 = row.iter().zip(&col).map(|(a, b)| a * b).sum();
            reached = reached.max(dot.abs() + f64::from(bias[j]).abs());
        }
        assert!(reached <= got && got <= reached * 1.5, "{reached} against {got}");
    }
}

//! Per-node "can we run this?" predicates: each returns `Ok` or the reason ONNX Runtime's log
//! shows when the node is left to another provider.

use super::model::{Node, ValueInfo};
use crate::caps::DeviceCaps;
use crate::conv::{plan_conv_with, resolve, AutoPad, ConvAlgo, ConvAttrs, ConvInputs};
use crate::dtype::DType;
use crate::gemm::{broadcast_layout, broadcast_shapes, matmul_problem, plan_gemm, GemmOptions, GemmProblem};

/// What placement decisions depend on besides the graph.
#[derive(Clone, Debug)]
pub struct PlacementOptions {
    pub caps: DeviceCaps,
    pub enable_f16: bool,
    /// Tiling, tensor cores and precision of every GEMM (and conv GEMM).
    pub gemm: GemmOptions,
    pub conv1d_as_conv2d: bool,
    /// The conv algorithm (`conv_algorithm`): `Auto` or forced.
    pub conv_algo: ConvAlgo,
}

/// The compute ops we claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ComputeOp {
    MatMul,
    Gemm,
    Conv,
}

impl ComputeOp {
    pub fn of(node: &Node) -> Option<ComputeOp> {
        if !node.is_onnx() {
            return None;
        }
        match node.op_type.as_str() {
            "MatMul" => Some(ComputeOp::MatMul),
            "Gemm" => Some(ComputeOp::Gemm),
            "Conv" => Some(ComputeOp::Conv),
            _ => None,
        }
    }
}

/// Elementwise ops we fuse into the store of the product that feeds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpilogueOp {
    Add,
    Relu,
    Clip,
}

impl EpilogueOp {
    pub fn of(node: &Node) -> Option<EpilogueOp> {
        if !node.is_onnx() {
            return None;
        }
        match node.op_type.as_str() {
            "Add" => Some(EpilogueOp::Add),
            "Relu" => Some(EpilogueOp::Relu),
            "Clip" => Some(EpilogueOp::Clip),
            _ => None,
        }
    }
}

/// The element type shared by `values`, if it is one we run and the device allows it.
pub fn common_dtype(node: &Node, values: &[&ValueInfo], opts: &PlacementOptions) -> Result<DType, String> {
    let first = values.first().ok_or_else(|| format!("{} has no inputs", node.op_type))?;
    let dtype = first
        .dtype()
        .ok_or_else(|| format!("element type {} of '{}' is not float or float16", first.elem_type, first.name))?;
    if let Some(other) = values.iter().find(|v| v.elem_type != first.elem_type) {
        return Err(format!("'{}' and '{}' have different element types", first.name, other.name));
    }
    if dtype == DType::F16 && !opts.enable_f16 {
        return Err("float16 is disabled by the enable_f16=0 option".into());
    }
    if dtype == DType::F16 && !opts.caps.shader_f16 {
        return Err("float16 needs the shader-f16 feature, which this adapter lacks".into());
    }
    Ok(dtype)
}

fn required<'a>(node: &'a Node, i: usize, what: &str) -> Result<&'a ValueInfo, String> {
    node.input(i).ok_or_else(|| format!("{} without input {what}", node.op_type))
}

/// Whether the product node can run here (shape checks wherever shapes are known).
pub fn check_compute(node: &Node, op: ComputeOp, opts: &PlacementOptions) -> Result<(), String> {
    if node.assigned_ep.is_some() {
        return Err(format!("already assigned to {}", node.assigned_ep.as_deref().unwrap_or("?")));
    }
    match op {
        ComputeOp::MatMul => check_matmul(node, opts),
        ComputeOp::Gemm => check_gemm(node, opts),
        ComputeOp::Conv => check_conv(node, opts),
    }
}

fn check_matmul(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    let (a, b) = (required(node, 0, "A")?, required(node, 1, "B")?);
    let dtype = common_dtype(node, &[a, b], opts)?;
    if a.rank() == Some(0) || b.rank() == Some(0) {
        return Err("MatMul of a scalar is invalid".into());
    }
    let inner = |v: &ValueInfo, from_end: usize| {
        v.shape.as_ref().and_then(|s| s.len().checked_sub(from_end).and_then(|i| s[i].fixed()))
    };
    let ka = inner(a, 1);
    let kb = if b.rank() == Some(1) { inner(b, 1) } else { inner(b, 2) };
    if let (Some(ka), Some(kb)) = (ka, kb) {
        if ka != kb {
            return Err(format!("inner dimensions differ ({ka} vs {kb})"));
        }
    }
    if let (Some(sa), Some(sb)) = (a.fixed_shape(), b.fixed_shape()) {
        let (problem, _) = matmul_problem(&sa, &sb, dtype).map_err(|e| e.to_string())?;
        plan_gemm(&problem, &opts.caps, &opts.gemm).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Gemm attributes with ONNX defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmAttrs {
    pub trans_a: bool,
    pub trans_b: bool,
    pub alpha: f32,
    pub beta: f32,
}

impl GemmAttrs {
    pub fn of(node: &Node) -> GemmAttrs {
        GemmAttrs {
            trans_a: node.int("transA").unwrap_or(0) != 0,
            trans_b: node.int("transB").unwrap_or(0) != 0,
            alpha: node.float("alpha").unwrap_or(1.0),
            beta: node.float("beta").unwrap_or(1.0),
        }
    }

    /// The problem for `A`/`B` shapes (rank 2), with C's broadcast layout when given.
    pub fn problem(&self, dtype: DType, a: &[u64], b: &[u64], c: Option<&[u64]>) -> Result<GemmProblem, String> {
        if a.len() != 2 || b.len() != 2 {
            return Err(format!("Gemm needs 2-D A and B, got {a:?} and {b:?}"));
        }
        let (m, ka) = if self.trans_a { (a[1], a[0]) } else { (a[0], a[1]) };
        let (kb, n) = if self.trans_b { (b[1], b[0]) } else { (b[0], b[1]) };
        if ka != kb {
            return Err(format!("Gemm inner dimensions differ ({ka} vs {kb})"));
        }
        let to32 = |v: u64| u32::try_from(v).map_err(|_| format!("dimension {v} is too large"));
        let mut p = GemmProblem::simple(dtype, to32(m)?, to32(n)?, to32(ka)?, self.trans_a, self.trans_b);
        p.epilogue.alpha = self.alpha;
        p.epilogue.beta = self.beta;
        if let Some(c) = c {
            let layout = broadcast_layout(c, &[m, n], &p).map_err(|e| e.to_string())?;
            // With beta = 0 ONNX Runtime's CPU EP never reads C, so NaN or Inf in C must not
            // reach the output as 0·NaN; C's shape is still checked, as the CPU EP does.
            p.epilogue.bias = (self.beta != 0.0).then_some(layout);
        }
        Ok(p)
    }
}

fn check_gemm(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    let (a, b) = (required(node, 0, "A")?, required(node, 1, "B")?);
    let mut values = vec![a, b];
    let c = node.input(2);
    values.extend(c);
    let dtype = common_dtype(node, &values, opts)?;
    for v in [a, b] {
        if matches!(v.rank(), Some(r) if r != 2) {
            return Err(format!("Gemm input '{}' is not 2-D", v.name));
        }
    }
    if matches!(c.and_then(ValueInfo::rank), Some(r) if r > 2) {
        return Err("Gemm C has rank > 2".into());
    }
    if let (Some(sa), Some(sb)) = (a.fixed_shape(), b.fixed_shape()) {
        let sc = c.map(ValueInfo::fixed_shape);
        if sc != Some(None) {
            let problem = GemmAttrs::of(node).problem(dtype, &sa, &sb, sc.flatten().as_deref())?;
            plan_gemm(&problem, &opts.caps, &opts.gemm).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Clip bounds from attributes (opset < 11) or constant inputs (opset ≥ 11). An absent bound is
/// the type's lowest or highest finite value, as ONNX specifies: so ±Inf are clamped to finite
/// values, exactly as ONNX Runtime's CPU EP does.
pub fn clip_bounds(node: &Node) -> Result<(f32, f32), String> {
    if node.since_version < 11 {
        return Ok((node.float("min").unwrap_or(f32::MIN), node.float("max").unwrap_or(f32::MAX)));
    }
    let (lowest, highest) = node.input(0).and_then(ValueInfo::dtype).unwrap_or(DType::F32).finite_range();
    let bound = |i: usize, default: f32| match node.input(i) {
        None => Ok(default),
        Some(v) if v.name.is_empty() => Ok(default),
        Some(v) => v.scalar_f32().ok_or_else(|| format!("Clip bound '{}' is not a constant scalar", v.name)),
    };
    Ok((bound(1, lowest)?, bound(2, highest)?))
}

/// Whether an Add operand of `shape` can be the bias of a product whose output is `out`.
pub fn check_bias_shape(bias: &ValueInfo, out: Option<&[u64]>, out_rank: Option<usize>) -> Result<(), String> {
    match (bias.rank(), out_rank) {
        (Some(r), Some(o)) if r > o => return Err("the Add would broadcast the product's output".into()),
        _ => {}
    }
    if let (Some(b), Some(o)) = (bias.fixed_shape(), out) {
        if broadcast_shapes(&b, o).as_deref() != Some(o) {
            return Err(format!("Add operand {b:?} does not broadcast onto the product's {o:?}"));
        }
    }
    Ok(())
}

/// The Conv attributes of a node (ONNX defaults where absent).
pub fn conv_attrs(node: &Node) -> Result<ConvAttrs, String> {
    let auto_pad: AutoPad =
        node.string("auto_pad").unwrap_or("NOTSET").parse().map_err(|e: crate::PlanError| e.to_string())?;
    let ints = |name: &str| node.ints(name).map(<[i64]>::to_vec).unwrap_or_default();
    Ok(ConvAttrs {
        auto_pad,
        pads: ints("pads"),
        strides: ints("strides"),
        dilations: ints("dilations"),
        group: node.int("group").unwrap_or(1),
        kernel_shape: node.ints("kernel_shape").map(<[i64]>::to_vec),
    })
}

fn check_conv(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    let (x, w) = (required(node, 0, "X")?, required(node, 1, "W")?);
    let mut values = vec![x, w];
    let b = node.input(2).filter(|v| !v.name.is_empty());
    values.extend(b);
    let dtype = common_dtype(node, &values, opts)?;
    let attrs = conv_attrs(node)?;
    match x.rank().or(w.rank()) {
        Some(3) if !opts.conv1d_as_conv2d => return Err("1-D Conv needs conv1d_as_conv2d=1".into()),
        Some(3 | 4) | None => {}
        Some(r) => return Err(format!("{}-D Conv is not supported (only 1-D and 2-D)", r.saturating_sub(2))),
    }
    if let (Some(xs), Some(ws)) = (x.fixed_shape(), w.fixed_shape()) {
        let bs = b.map(ValueInfo::fixed_shape);
        if bs != Some(None) {
            let bs = bs.flatten();
            let inputs = ConvInputs { x: &xs, w: &ws, bias: bs.as_deref(), dtype };
            let problem = resolve(&inputs, &attrs, opts.conv1d_as_conv2d).map_err(|e| e.to_string())?;
            plan_conv_with(&problem, &opts.caps, &opts.gemm, opts.conv_algo).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

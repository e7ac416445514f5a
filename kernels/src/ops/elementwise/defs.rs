//! The ONNX elementwise ops as IR: each node lowers to a few IR nodes whose `Arg::Input(k)` is
//! the node's input `k`. Checking, building and fusing all go through the same lowering, so a
//! node placed here is one the kernel runs.

use super::shape::{broadcast_all, Layout};
use super::variants;
use super::{check_ir, named, Arg, ElemNode, ElemOp};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::ops::{check_f16, check_types, Kernel, OpDef};
use crate::shader::ShaderVariant;

/// One family of ops sharing a lowering and a set of variants.
struct Family {
    names: &'static [&'static str],
    variants: fn(&DeviceCaps) -> Vec<ShaderVariant>,
    /// "" for ONNX's ops.
    domain: &'static str,
}

static UNARY: Family = Family {
    names: &[
        "Abs",
        "Neg",
        "Exp",
        "Log",
        "Sqrt",
        "Reciprocal",
        "Erf",
        "Tanh",
        "Sigmoid",
        "Relu",
        "LeakyRelu",
        "Gelu",
        "HardSwish",
        "Softplus",
        "Mish",
        "HardSigmoid",
        "Elu",
        "Selu",
        "Sin",
        "Cos",
        "Floor",
        "Ceil",
        "Round",
        "Not",
        "IsNaN",
        "IsInf",
    ],
    variants: variants::unary,
    domain: "",
};
static CLIP: Family = Family { names: &["Clip"], variants: variants::clip, domain: "" };
static BINARY: Family = Family {
    names: &["Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "PRelu"],
    variants: variants::binary,
    domain: "",
};
static VARIADIC: Family = Family { names: &["Max", "Min", "Sum", "Mean"], variants: variants::variadic, domain: "" };
static COMPARE: Family = Family {
    names: &["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"],
    variants: variants::compare,
    domain: "",
};
static WHERE: Family = Family { names: &["Where"], variants: variants::select, domain: "" };
static CAST: Family = Family { names: &["Cast", "CastLike"], variants: variants::cast, domain: "" };
/// onnxruntime's GELU family as its transformer optimizer and genai's builder emit them.
static CONTRIB: Family = Family {
    names: &["Gelu", "FastGelu", "BiasGelu", "QuickGelu"],
    variants: variants::contrib,
    domain: "com.microsoft",
};

/// The elementwise op definitions (the binary family also lists the fused chains' variants).
pub fn ops() -> Vec<&'static dyn OpDef> {
    vec![&UNARY, &CLIP, &BINARY, &VARIADIC, &COMPARE, &WHERE, &CAST, &CONTRIB]
}

impl OpDef for Family {
    fn names(&self) -> &'static [&'static str] {
        self.names
    }

    fn domain(&self) -> &'static str {
        self.domain
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &ElemType::ALL)?;
        check_f16(node, opts)?;
        let (used, _) = compact(node)?;
        let limit = opts.caps.max_storage_buffers_per_stage as usize;
        if used.len() + 1 > limit {
            return Err(format!("{} inputs and an output exceed the device's {limit} storage buffers", used.len()));
        }
        let shapes: Option<Vec<Vec<u64>>> = used.iter().map(|&k| node.input(k).and_then(|v| v.fixed_shape())).collect();
        if let Some(shapes) = shapes {
            let shapes: Vec<&[u64]> = shapes.iter().map(Vec::as_slice).collect();
            let out = broadcast_all(&shapes).map_err(|e| format!("{}: {e}", node.op_type))?;
            Layout::of(&shapes, &out)?;
        }
        Ok(())
    }

    /// The inputs the IR reads (the kernel's, in order). CastLike's second input only gives a
    /// type; it is listed after them so that the program still counts it as read.
    fn gpu_inputs(&self, node: &Node) -> Vec<usize> {
        match lower(node) {
            Ok(ir) if node.op_type == "CastLike" => [used_inputs(&ir), vec![1]].concat(),
            Ok(ir) => used_inputs(&ir),
            Err(_) => (0..node.inputs.len()).collect(),
        }
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        let (used, ir) = compact(node)?;
        named(node.name.clone(), input_types(node, &used)?, ir)
    }

    fn elementwise(&self, node: &Node) -> Option<Vec<ElemNode>> {
        lower(node).ok()
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.output(0)?.fixed_shape()?.iter().product();
        let per: f64 = lower(node).ok()?.iter().map(|n| cost(&n.op)).sum();
        Some(elems as f64 * per)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        (self.variants)(caps)
    }
}

/// Rough operations per element of one IR node (the transcendental ones are polynomials).
fn cost(op: &ElemOp) -> f64 {
    use ElemOp::*;
    match op {
        Erf | Gelu | GeluTanh | Tanh | Pow | Mish => 20.0,
        Softplus | Elu | Selu => 8.0,
        Exp | Log | Sqrt | Sigmoid | Sin | Cos | Reciprocal | Div => 4.0,
        Scalar(_) | Cast => 0.0,
        _ => 1.0,
    }
}

/// The node inputs the IR reads, in order.
fn used_inputs(ir: &[ElemNode]) -> Vec<usize> {
    let mut used: Vec<usize> =
        ir.iter().flat_map(|n| &n.args).filter_map(|a| if let Arg::Input(k) = a { Some(*k) } else { None }).collect();
    used.sort_unstable();
    used.dedup();
    used
}

/// The node's IR over only the inputs it reads (renumbered in order), type-checked.
fn compact(node: &Node) -> Result<(Vec<usize>, Vec<ElemNode>), String> {
    let mut ir = lower(node)?;
    let used = used_inputs(&ir);
    for arg in ir.iter_mut().flat_map(|n| n.args.iter_mut()) {
        if let Arg::Input(k) = arg {
            *k = used.iter().position(|u| u == k).unwrap_or(*k);
        }
    }
    check_ir(&input_types(node, &used)?, &ir).map_err(|e| format!("{}: {e}", node.op_type))?;
    Ok((used, ir))
}

/// The element types of the node's inputs `used`.
fn input_types(node: &Node, used: &[usize]) -> Result<Vec<ElemType>, String> {
    used.iter()
        .map(|&k| {
            let v = node.input(k).filter(|v| !v.name.is_empty()).ok_or_else(|| format!("input {k} is omitted"))?;
            ElemType::from_onnx(v.elem_type)
                .ok_or_else(|| format!("input '{}' has element type {}", v.name, v.elem_type))
        })
        .collect()
}

fn n(op: ElemOp, args: Vec<Arg>, ty: ElemType) -> ElemNode {
    ElemNode { op, args, ty }
}

/// The node's IR; `Err` says why it does not lower.
pub fn lower(node: &Node) -> Result<Vec<ElemNode>, String> {
    let contrib = node.domain == "com.microsoft";
    if !node.is_onnx() && !contrib {
        return Err(format!("{} of domain '{}' is not an elementwise op", node.op_type, node.domain));
    }
    let out = node.output(0).ok_or_else(|| format!("{} without an output", node.op_type))?;
    let ty = ElemType::from_onnx(out.elem_type)
        .ok_or_else(|| format!("output '{}' has element type {}", out.name, out.elem_type))?;
    if contrib {
        return gelu_family(node, ty);
    }
    if let Some(op) = unary(node)? {
        return Ok(vec![n(op, vec![Arg::Input(0)], ty)]);
    }
    let op = node.op_type.as_str();
    match op {
        "Clip" => clip(node, ty),
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "And" | "Or" | "Xor" | "Equal" | "Less" | "Greater" | "LessOrEqual"
        | "GreaterOrEqual" => {
            legacy_broadcast(node)?;
            Ok(vec![n(binary(op), vec![Arg::Input(0), Arg::Input(1)], ty)])
        }
        "Max" | "Min" | "Sum" | "Mean" => variadic(node, ty),
        "HardSigmoid" | "Elu" | "Selu" => with_params(node, ty),
        "PRelu" if node.since_version < 7 => {
            Err("PRelu before opset 7 (legacy slope broadcasting) is not supported".into())
        }
        "PRelu" => Ok(vec![n(ElemOp::PRelu, vec![Arg::Input(0), Arg::Input(1)], ty)]),
        "Where" => Ok(vec![n(ElemOp::Where, vec![Arg::Input(0), Arg::Input(1), Arg::Input(2)], ty)]),
        "Cast" | "CastLike" => cast(node, ty),
        other => Err(format!("{other} is not an elementwise op")),
    }
}

/// `com.microsoft` Gelu (erf), FastGelu (tanh approximation) and BiasGelu (erf) of X plus the
/// optional bias input, and QuickGelu `x · sigmoid(alpha · x)` (alpha 1.702 by default), as
/// ONNX Runtime's CPU kernels compute them.
fn gelu_family(node: &Node, ty: ElemType) -> Result<Vec<ElemNode>, String> {
    if !ty.is_float() {
        return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
    }
    let with_bias = |op: ElemOp| -> Vec<ElemNode> {
        if node.has_input(1) {
            vec![n(ElemOp::Add, vec![Arg::Input(0), Arg::Input(1)], ty), n(op, vec![Arg::Node(0)], ty)]
        } else {
            vec![n(op, vec![Arg::Input(0)], ty)]
        }
    };
    match node.op_type.as_str() {
        "Gelu" => Ok(vec![n(ElemOp::Gelu, vec![Arg::Input(0)], ty)]),
        "BiasGelu" if !node.has_input(1) => Err("BiasGelu needs its bias input".into()),
        "BiasGelu" => Ok(with_bias(ElemOp::Gelu)),
        "FastGelu" => Ok(with_bias(ElemOp::GeluTanh)),
        "QuickGelu" => {
            let alpha = node.float("alpha").unwrap_or(1.702);
            Ok(vec![
                n(ElemOp::Scalar(alpha), vec![], ty),
                n(ElemOp::Mul, vec![Arg::Input(0), Arg::Node(0)], ty),
                n(ElemOp::Sigmoid, vec![Arg::Node(1)], ty),
                n(ElemOp::Mul, vec![Arg::Input(0), Arg::Node(2)], ty),
            ])
        }
        other => Err(format!("{other} of domain 'com.microsoft' is not an elementwise op")),
    }
}

/// The operation of a one-input op, `None` for other ops.
fn unary(node: &Node) -> Result<Option<ElemOp>, String> {
    use ElemOp::*;
    Ok(Some(match node.op_type.as_str() {
        "Abs" => Abs,
        "Neg" => Neg,
        "Exp" => Exp,
        "Log" => Log,
        "Sqrt" => Sqrt,
        "Reciprocal" => Reciprocal,
        "Erf" => Erf,
        "Tanh" => Tanh,
        "Sigmoid" => Sigmoid,
        "Relu" => Relu,
        "LeakyRelu" => LeakyRelu(node.float("alpha").unwrap_or(0.01)),
        "Gelu" => match node.string("approximate").unwrap_or("none") {
            "none" => Gelu,
            "tanh" => GeluTanh,
            other => return Err(format!("Gelu approximate='{other}' is not supported")),
        },
        "HardSwish" => HardSwish,
        "Softplus" => Softplus,
        "Mish" => Mish,
        "Sin" => Sin,
        "Cos" => Cos,
        "Floor" => Floor,
        "Ceil" => Ceil,
        "Round" => Round,
        "Not" => Not,
        "IsNaN" => IsNaN,
        "IsInf" => IsInf {
            positive: node.int("detect_positive").unwrap_or(1) != 0,
            negative: node.int("detect_negative").unwrap_or(1) != 0,
        },
        _ => return Ok(None),
    }))
}

fn binary(op: &str) -> ElemOp {
    use ElemOp::*;
    match op {
        "Add" | "Sum" | "Mean" => Add,
        "Sub" => Sub,
        "Mul" => Mul,
        "Div" => Div,
        "Pow" => Pow,
        "And" => And,
        "Or" => Or,
        "Xor" => Xor,
        "Equal" => Equal,
        "Less" => Less,
        "Greater" => Greater,
        "LessOrEqual" => LessOrEqual,
        "GreaterOrEqual" => GreaterOrEqual,
        "Max" => Max,
        _ => Min,
    }
}

/// Before opset 7 a binary op broadcast only with `broadcast=1`, optionally from `axis`; numpy
/// broadcasting agrees with it unless an axis is given.
fn legacy_broadcast(node: &Node) -> Result<(), String> {
    if node.since_version < 7 && node.attrs.contains_key("axis") {
        return Err(format!("{} with the legacy 'axis' broadcast attribute is not supported", node.op_type));
    }
    Ok(())
}

/// Clip as Max with the lower bound, then Min with the upper. Bounds are attributes before
/// opset 11, then optional inputs: a float constant goes to the uniform, anything else is read
/// as an input. An absent float bound is the type's lowest or highest finite value, as ONNX
/// specifies (so ±Inf clamp to finite values, as in ONNX Runtime); an absent integer bound is
/// no bound.
fn clip(node: &Node, ty: ElemType) -> Result<Vec<ElemNode>, String> {
    let (lowest, highest) = match ty {
        ElemType::F16 => (-65504.0, 65504.0),
        _ => (f32::MIN, f32::MAX),
    };
    let mut ir: Vec<ElemNode> = Vec::new();
    let mut value = Arg::Input(0);
    for (k, name, op, default) in [(1, "min", ElemOp::Max, lowest), (2, "max", ElemOp::Min, highest)] {
        let constant = if node.since_version < 11 {
            Some(node.float(name).unwrap_or(default))
        } else if node.has_input(k) {
            node.input(k).filter(|v| v.constant && ty.is_float()).and_then(|v| v.scalar_f32())
        } else {
            ty.is_float().then_some(default)
        };
        let bound = match constant {
            Some(v) => {
                ir.push(n(ElemOp::Scalar(v), vec![], ty));
                Arg::Node(ir.len() - 1)
            }
            None if node.has_input(k) => Arg::Input(k),
            None => continue,
        };
        ir.push(n(op, vec![value, bound], ty));
        value = Arg::Node(ir.len() - 1);
    }
    if ir.is_empty() {
        ir.push(n(ElemOp::Cast, vec![Arg::Input(0)], ty));
    }
    Ok(ir)
}

/// HardSigmoid, Elu and Selu: their float attributes as `Scalar` nodes (uniform values), then
/// the op over X and them.
fn with_params(node: &Node, ty: ElemType) -> Result<Vec<ElemNode>, String> {
    let (op, params) = match node.op_type.as_str() {
        "HardSigmoid" => (ElemOp::HardSigmoid, vec![("alpha", 0.2), ("beta", 0.5)]),
        "Elu" => (ElemOp::Elu, vec![("alpha", 1.0)]),
        _ => (ElemOp::Selu, vec![("alpha", 1.673_263_2), ("gamma", 1.050_701)]),
    };
    let mut ir: Vec<ElemNode> =
        params.iter().map(|&(a, d)| n(ElemOp::Scalar(node.float(a).unwrap_or(d)), vec![], ty)).collect();
    let args = [Arg::Input(0)].into_iter().chain((0..ir.len()).map(Arg::Node)).collect();
    ir.push(n(op, args, ty));
    Ok(ir)
}

/// Max, Min and Sum of any number of inputs as a chain of binary nodes; Mean divides the sum.
fn variadic(node: &Node, ty: ElemType) -> Result<Vec<ElemNode>, String> {
    let count = node.inputs.len();
    if count == 0 || (0..count).any(|k| !node.has_input(k)) {
        return Err(format!("{} with an omitted input", node.op_type));
    }
    let op = binary(&node.op_type);
    let mut ir = vec![n(if count == 1 { ElemOp::Cast } else { op.clone() }, vec![Arg::Input(0)], ty)];
    if count > 1 {
        ir[0].args.push(Arg::Input(1));
    }
    for k in 2..count {
        ir.push(n(op.clone(), vec![Arg::Node(ir.len() - 1), Arg::Input(k)], ty));
    }
    if node.op_type == "Mean" {
        ir.push(n(ElemOp::Scalar(count as f32), vec![], ty));
        ir.push(n(ElemOp::Div, vec![Arg::Node(ir.len() - 2), Arg::Node(ir.len() - 1)], ty));
    }
    Ok(ir)
}

/// Cast to `to` (which must be the output's type); CastLike to its second input's type. The
/// `saturate` and `round_mode` attributes only concern float8 types, which are declined.
fn cast(node: &Node, ty: ElemType) -> Result<Vec<ElemNode>, String> {
    let to = if node.op_type == "CastLike" {
        node.input(1).map(|v| v.elem_type)
    } else {
        node.int("to").and_then(|t| i32::try_from(t).ok())
    };
    if to != Some(ty.onnx()) {
        return Err(format!("{} to type {to:?} disagrees with its output type {}", node.op_type, ty.onnx()));
    }
    Ok(vec![n(ElemOp::Cast, vec![Arg::Input(0)], ty)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::model::{Attr, ValueInfo};
    use crate::ops::lookup;

    fn value(name: &str, ty: ElemType, data: Option<Vec<u8>>) -> Option<ValueInfo> {
        let constant = data.is_some();
        Some(ValueInfo { name: name.into(), elem_type: ty.onnx(), shape: None, constant, small_data: data })
    }

    fn nd(op: &str, opset: i32, inputs: Vec<Option<ValueInfo>>, out: ElemType, attrs: &[(&str, Attr)]) -> Node {
        Node {
            name: "n".into(),
            op_type: op.into(),
            domain: String::new(),
            since_version: opset,
            inputs,
            outputs: value("y", out, None).into_iter().map(Some).collect(),
            attrs: attrs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect(),
            assigned_ep: None,
        }
    }

    fn ops(ir: &[ElemNode]) -> Vec<String> {
        ir.iter().map(|n| format!("{}{:?}", n.op.tag(), n.args)).collect()
    }

    #[test]
    fn clip_lowering() {
        use ElemType::F32;
        let x = value("x", F32, None);
        let attrs = nd("Clip", 6, vec![x.clone()], F32, &[("max", Attr::Float(2.0))]);
        let ir = lower(&attrs).unwrap();
        assert_eq!(ops(&ir), ["scalar[]", "max[Input(0), Node(0)]", "scalar[]", "min[Node(1), Node(2)]"]);
        assert_eq!((&ir[0].op, &ir[2].op), (&ElemOp::Scalar(f32::MIN), &ElemOp::Scalar(2.0)));
        let lo = value("lo", F32, Some(1.5f32.to_le_bytes().to_vec()));
        let hi = value("hi", F32, None);
        let mixed = nd("Clip", 13, vec![x.clone(), lo, hi], F32, &[]);
        let ir = lower(&mixed).unwrap();
        assert_eq!(ops(&ir), ["scalar[]", "max[Input(0), Node(0)]", "min[Node(1), Input(2)]"]);
        assert_eq!(ir[0].op, ElemOp::Scalar(1.5));
        // The lone step binds x and the runtime bound only, renumbered.
        assert_eq!(CLIP.gpu_inputs(&mixed), vec![0, 2]);
        assert_eq!(ops(&compact(&mixed).unwrap().1)[2], "min[Node(1), Input(1)]");
        let none = nd("Clip", 13, vec![x, value("", F32, None), None], F32, &[]);
        assert_eq!(lower(&none).unwrap()[2].op, ElemOp::Scalar(f32::MAX));
        let int = nd(
            "Clip",
            13,
            vec![value("i", ElemType::I32, None), None, value("hi", ElemType::I32, None)],
            ElemType::I32,
            &[],
        );
        assert_eq!(ops(&lower(&int).unwrap()), ["min[Input(0), Input(2)]"]);
        let int = nd("Clip", 13, vec![value("i", ElemType::I32, None)], ElemType::I32, &[]);
        assert_eq!(ops(&lower(&int).unwrap()), ["cast[Input(0)]"]);
    }

    #[test]
    fn contrib_gelu_lowering() {
        use ElemType::F32;
        let ms = |op: &str, inputs: Vec<Option<ValueInfo>>| Node {
            domain: "com.microsoft".into(),
            ..nd(op, 1, inputs, F32, &[])
        };
        let x = value("x", F32, None);
        let b = value("b", F32, None);
        assert_eq!(
            ops(&lower(&ms("FastGelu", vec![x.clone(), b.clone()])).unwrap()),
            ["add[Input(0), Input(1)]", "gelutanh[Node(0)]"]
        );
        assert_eq!(ops(&lower(&ms("FastGelu", vec![x.clone()])).unwrap()), ["gelutanh[Input(0)]"]);
        assert_eq!(ops(&lower(&ms("Gelu", vec![x.clone()])).unwrap()), ["gelu[Input(0)]"]);
        let quick = lower(&ms("QuickGelu", vec![x.clone()])).unwrap();
        assert_eq!(quick[0].op, ElemOp::Scalar(1.702));
        assert!(lower(&ms("BiasGelu", vec![x.clone(), None])).unwrap_err().contains("needs its bias"));
        assert!(lower(&ms("BiasGelu", vec![x.clone(), b])).is_ok());
        // ONNX's own Gelu and the contrib one are two registry entries.
        let onnx = lookup(&nd("Gelu", 20, vec![x.clone()], F32, &[])).map(|d| d.domain());
        assert_eq!((onnx, lookup(&ms("Gelu", vec![x])).map(|d| d.domain())), (Some(""), Some("com.microsoft")));
    }

    #[test]
    fn variadic_and_cast_lowering() {
        use ElemType::{F32, I64};
        let x = |n: &str| value(n, F32, None);
        let mean = nd("Mean", 13, vec![x("a"), x("b"), x("c")], F32, &[]);
        assert_eq!(
            ops(&lower(&mean).unwrap()),
            ["add[Input(0), Input(1)]", "add[Node(0), Input(2)]", "scalar[]", "div[Node(1), Node(2)]"]
        );
        let cast = nd("Cast", 13, vec![x("a")], I64, &[("to", Attr::Int(7))]);
        assert!(lower(&cast).is_ok());
        let wrong = nd("Cast", 13, vec![x("a")], I64, &[("to", Attr::Int(6))]);
        assert!(lower(&wrong).is_err());
        let like = nd("CastLike", 15, vec![x("a"), value("t", I64, None)], I64, &[]);
        assert_eq!(CAST.gpu_inputs(&like), vec![0, 1]);
        assert_eq!(compact(&like).unwrap().0, vec![0]);
        let gelu = nd("Gelu", 20, vec![x("a")], F32, &[("approximate", Attr::String("fast".into()))]);
        assert!(lower(&gelu).unwrap_err().contains("fast"));
        let pow = nd("Pow", 15, vec![value("a", I64, None), x("b")], I64, &[]);
        assert!(compact(&pow).is_err());
    }
}

//! The fused-kernel IR: which operand types each operation takes, and the WGSL expression of
//! one node. Values are held in a compute type per element type: floats (f16 too) as `f32`,
//! `i32`, `i64` as `vec2<u32>` (low word, high word) and `bool`.

use super::{Arg, ElemNode, ElemOp};
use crate::dtype::ElemType;

/// The WGSL type a value of `t` is computed in.
pub fn compute_type(t: ElemType) -> &'static str {
    match t {
        ElemType::F32 | ElemType::F16 => "f32",
        ElemType::I32 => "i32",
        ElemType::I64 => "vec2<u32>",
        ElemType::Bool => "bool",
        // Never claimed by an elementwise op (not in `ElemType::ALL`).
        ElemType::U8 => "u32",
    }
}

/// The WGSL element type of a storage array of `t` (bools are packed four to a word).
pub fn storage_type(t: ElemType) -> &'static str {
    match t {
        ElemType::F32 => "f32",
        ElemType::F16 => "f16",
        ElemType::I32 => "i32",
        ElemType::I64 => "vec2<u32>",
        ElemType::Bool | ElemType::U8 => "u32",
    }
}

impl ElemOp {
    /// How many operands the operation takes.
    pub fn arity(&self) -> usize {
        use ElemOp::*;
        match self {
            Scalar(_) => 0,
            Add | Sub | Mul | Div | Pow | Max | Min | Equal | Less | Greater | LessOrEqual | GreaterOrEqual | And
            | Or | Xor | Elu | PRelu => 2,
            Where | HardSigmoid | Selu => 3,
            _ => 1,
        }
    }

    /// The float the operation reads from the uniform (its slot is its rank among such nodes).
    pub fn param(&self) -> Option<f32> {
        match self {
            ElemOp::Scalar(v) | ElemOp::LeakyRelu(v) => Some(*v),
            _ => None,
        }
    }

    /// The operation's name in variant names (parameter values are not part of it).
    pub fn tag(&self) -> String {
        use ElemOp::*;
        let s = match self {
            Abs => "abs",
            Neg => "neg",
            Exp => "exp",
            Log => "log",
            Sqrt => "sqrt",
            Reciprocal => "recip",
            Erf => "erf",
            Tanh => "tanh",
            Sigmoid => "sigmoid",
            Relu => "relu",
            LeakyRelu(_) => "leakyrelu",
            Gelu => "gelu",
            GeluTanh => "gelutanh",
            HardSwish => "hardswish",
            Softplus => "softplus",
            Mish => "mish",
            HardSigmoid => "hardsigmoid",
            Elu => "elu",
            Selu => "selu",
            PRelu => "prelu",
            Sin => "sin",
            Cos => "cos",
            Floor => "floor",
            Ceil => "ceil",
            Round => "round",
            Not => "not",
            IsNaN => "isnan",
            IsInf { positive, negative } => {
                return format!("isinf{}{}", if *positive { "p" } else { "" }, if *negative { "n" } else { "" })
            }
            Scalar(_) => "scalar",
            Add => "add",
            Sub => "sub",
            Mul => "mul",
            Div => "div",
            Pow => "pow",
            Max => "max",
            Min => "min",
            Equal => "eq",
            Less => "lt",
            Greater => "gt",
            LessOrEqual => "le",
            GreaterOrEqual => "ge",
            And => "and",
            Or => "or",
            Xor => "xor",
            Where => "where",
            Cast => "cast",
        };
        s.to_string()
    }
}

const NUMERIC: [ElemType; 4] = [ElemType::F32, ElemType::F16, ElemType::I32, ElemType::I64];

/// The element type of `arg` as node `at` reads it.
pub fn arg_type(inputs: &[ElemType], nodes: &[ElemNode], at: usize, arg: Arg) -> Result<ElemType, String> {
    match arg {
        Arg::Input(k) => inputs.get(k).copied().ok_or_else(|| format!("node {at} reads input {k} of {}", inputs.len())),
        Arg::Node(j) if j < at => Ok(nodes[j].ty),
        Arg::Node(j) => Err(format!("node {at} reads node {j}, which is not before it")),
    }
}

/// Checks that every node's operands and result have types its operation takes.
pub fn check_ir(inputs: &[ElemType], nodes: &[ElemNode]) -> Result<(), String> {
    if nodes.is_empty() {
        return Err("an elementwise kernel without nodes".into());
    }
    for (i, n) in nodes.iter().enumerate() {
        if n.args.len() != n.op.arity() {
            return Err(format!("{} takes {} operands, node {i} has {}", n.op.tag(), n.op.arity(), n.args.len()));
        }
        let args = n.args.iter().map(|&a| arg_type(inputs, nodes, i, a)).collect::<Result<Vec<_>, _>>()?;
        if !types_ok(&n.op, &args, n.ty) {
            let args: Vec<&str> = args.iter().map(|t| t.name()).collect();
            return Err(format!("{} does not take ({}) -> {}", n.op.tag(), args.join(", "), n.ty));
        }
    }
    Ok(())
}

/// The typing rule of each operation.
fn types_ok(op: &ElemOp, args: &[ElemType], ty: ElemType) -> bool {
    use ElemOp::*;
    use ElemType::*;
    let same = |allowed: &[ElemType]| args.iter().all(|&a| a == ty) && allowed.contains(&ty);
    match op {
        Abs | Neg | Relu | Add | Sub | Mul | Div | Max | Min => same(&NUMERIC),
        Exp | Log | Sqrt | Reciprocal | Erf | Tanh | Sigmoid | LeakyRelu(_) | Gelu | GeluTanh | Sin | Cos | Floor
        | Ceil | Round | HardSwish | Softplus | Mish | HardSigmoid | Elu | Selu | PRelu => same(&[F32, F16]),
        Not | And | Or | Xor => same(&[Bool]),
        IsNaN | IsInf { .. } => ty == Bool && args[0].is_float(),
        Scalar(_) => ty.is_float(),
        Pow => ty.is_float() && args[0] == ty && NUMERIC.contains(&args[1]),
        Equal => ty == Bool && args[0] == args[1],
        Less | Greater | LessOrEqual | GreaterOrEqual => ty == Bool && args[0] == args[1] && NUMERIC.contains(&args[0]),
        Where => args[0] == Bool && args[1] == ty && args[2] == ty,
        Cast => true,
    }
}

/// One node's WGSL: its expression over `args` (names of values with their types), with the
/// uniform slot of its parameter, and the helper functions it calls.
pub struct Expr {
    pub text: String,
    pub helpers: Vec<&'static str>,
}

impl Expr {
    fn new(text: impl Into<String>) -> Expr {
        Expr { text: text.into(), helpers: Vec::new() }
    }

    fn with(text: impl Into<String>, helpers: &[&'static str]) -> Expr {
        Expr { text: text.into(), helpers: helpers.to_vec() }
    }
}

/// The expression of a node of type `ty`. f16 values compute in f32 through a chain and round
/// when stored; only a Cast to f16 (and a constant of an f16 node) rounds on the way, as its
/// meaning requires.
pub fn node_expr(op: &ElemOp, ty: ElemType, args: &[(String, ElemType)], slot: Option<usize>, stored: bool) -> Expr {
    let mut e = raw_expr(op, ty, args, slot);
    let rounds = match op {
        ElemOp::Cast => args.first().is_some_and(|a| a.1 != ElemType::F16),
        ElemOp::Scalar(_) => true,
        _ => false,
    };
    if ty == ElemType::F16 && !stored && rounds {
        e.text = format!("ew_r16({})", e.text);
        e.helpers.push("f16");
    }
    e
}

/// The uniform float at `slot`.
fn uniform(slot: Option<usize>) -> String {
    let s = slot.unwrap_or(0);
    format!("P.f[{}][{}]", s / 4, s % 4)
}

fn raw_expr(op: &ElemOp, ty: ElemType, args: &[(String, ElemType)], slot: Option<usize>) -> Expr {
    use ElemOp::*;
    let a = args.first().map(|x| x.0.as_str()).unwrap_or("");
    let b = args.get(1).map(|x| x.0.as_str()).unwrap_or("");
    let c = args.get(2).map(|x| x.0.as_str()).unwrap_or("");
    let at = args.first().map(|x| x.1).unwrap_or(ty);
    let long = at == ElemType::I64;
    match op {
        Abs if long => Expr::with(format!("ew_abs64({a})"), &["i64"]),
        Neg if long => Expr::with(format!("ew_neg64({a})"), &["i64"]),
        Relu if long => Expr::new(format!("select({a}, vec2<u32>(), {a}.y >= 0x80000000u)")),
        Abs => Expr::new(format!("abs({a})")),
        Neg => Expr::new(format!("-{a}")),
        Relu if at == ElemType::I32 => Expr::new(format!("max({a}, 0)")),
        // Keeps NaN, as ONNX Runtime's max(x, 0) does, found by its bits: a driver that assumes no NaN
        // compiles the inner select as a hardware max, which returns 0 for NaN (`wgsl/activation.wgsl.j2`).
        Relu => Expr::with(format!("select(select({a}, 0.0, {a} < 0.0), {a}, ew_nan({a}))"), &["nan"]),
        Exp => Expr::with(format!("ew_exp({a})"), &["nan", "log"]),
        Log => Expr::with(format!("ew_log({a})"), &["nan", "log"]),
        Sqrt => Expr::with(format!("ew_sqrt({a})"), &["nan", "log"]),
        Reciprocal => Expr::new(format!("1.0 / {a}")),
        Erf => Expr::with(format!("ew_erf({a})"), &["nan", "erf"]),
        Tanh => Expr::with(format!("ew_tanh({a})"), &["nan", "tanh"]),
        Sigmoid => Expr::with(format!("ew_sigmoid({a})"), &["sigmoid"]),
        LeakyRelu(_) => Expr::new(format!("select({a}, {a} * {}, {a} < 0.0)", uniform(slot))),
        Gelu => Expr::with(format!("0.5 * {a} * (1.0 + ew_erf({a} * 0.70710678118654752))"), &["nan", "erf"]),
        GeluTanh => Expr::with(
            format!("0.5 * {a} * (1.0 + ew_tanh(0.79788456080286536 * ({a} + 0.044715 * {a} * {a} * {a})))"),
            &["nan", "tanh"],
        ),
        HardSwish => Expr::new(format!("{a} * clamp({a} * 0.16666666666666667 + 0.5, 0.0, 1.0)")),
        Softplus => Expr::with(format!("ew_softplus({a})"), &["softplus"]),
        Mish => Expr::with(format!("{a} * ew_tanh(ew_softplus({a}))"), &["nan", "tanh", "softplus"]),
        // NaN passes through, as in ONNX Runtime's CPU EP (a clamp returns a bound for it).
        HardSigmoid => Expr::with(format!("select(clamp({b} * {a} + {c}, 0.0, 1.0), {a}, ew_nan({a}))"), &["nan"]),
        Elu => Expr::new(format!("select({a}, {b} * (exp({a}) - 1.0), {a} < 0.0)")),
        Selu => Expr::new(format!("{c} * select({a}, {b} * (exp({a}) - 1.0), {a} <= 0.0)")),
        PRelu => Expr::new(format!("select({a}, {a} * {b}, {a} < 0.0)")),
        Sin => Expr::with(format!("ew_sincos({a}, 0u)"), &["trig"]),
        Cos => Expr::with(format!("ew_sincos({a}, 1u)"), &["trig"]),
        Floor => Expr::new(format!("floor({a})")),
        Ceil => Expr::new(format!("ceil({a})")),
        // WGSL's round() rounds half to even, as ONNX's Round.
        Round => Expr::new(format!("round({a})")),
        Not => Expr::new(format!("!{a}")),
        IsNaN => Expr::with(format!("ew_nan({a})"), &["nan"]),
        IsInf { positive, negative } => {
            let bits = match (positive, negative) {
                (true, true) => format!("(bitcast<u32>({a}) & 0x7fffffffu) == 0x7f800000u"),
                (true, false) => format!("bitcast<u32>({a}) == 0x7f800000u"),
                (false, true) => format!("bitcast<u32>({a}) == 0xff800000u"),
                (false, false) => "false".to_string(),
            };
            Expr::new(bits)
        }
        Scalar(_) => Expr::new(uniform(slot)),
        Add | Sub | Mul | Div if long => {
            let (f, helpers): (&str, &[&'static str]) = match op {
                Add => ("add64", &["i64"]),
                Sub => ("sub64", &["i64"]),
                Mul => ("mul64", &["i64", "mul64"]),
                _ => ("div64", &["i64", "div64"]),
            };
            Expr::with(format!("ew_{f}({a}, {b})"), helpers)
        }
        Add => Expr::new(format!("{a} + {b}")),
        Sub => Expr::new(format!("{a} - {b}")),
        Mul => Expr::new(format!("{a} * {b}")),
        Div => Expr::new(format!("{a} / {b}")),
        Pow => {
            let e = to_f32(b, args.get(1).map(|x| x.1).unwrap_or(ty));
            let mut h = vec!["nan", "pow"];
            h.extend(e.helpers);
            Expr { text: format!("ew_pow({a}, {})", e.text), helpers: h }
        }
        Max | Min if long => {
            let pick = if matches!(op, Max) { format!("ew_lt64({a}, {b})") } else { format!("ew_lt64({b}, {a})") };
            Expr::with(format!("select({a}, {b}, {pick})"), &["i64"])
        }
        Max | Min if at == ElemType::I32 => {
            Expr::new(format!("{}({a}, {b})", if matches!(op, Max) { "max" } else { "min" }))
        }
        Max => Expr::with(format!("ew_max({a}, {b})"), &["nan", "minmax"]),
        Min => Expr::with(format!("ew_min({a}, {b})"), &["nan", "minmax"]),
        Equal if long => Expr::new(format!("all({a} == {b})")),
        Less if long => Expr::with(format!("ew_lt64({a}, {b})"), &["i64"]),
        Greater if long => Expr::with(format!("ew_lt64({b}, {a})"), &["i64"]),
        LessOrEqual if long => Expr::with(format!("!ew_lt64({b}, {a})"), &["i64"]),
        GreaterOrEqual if long => Expr::with(format!("!ew_lt64({a}, {b})"), &["i64"]),
        Equal => Expr::new(format!("{a} == {b}")),
        Less => Expr::new(format!("{a} < {b}")),
        Greater => Expr::new(format!("{a} > {b}")),
        LessOrEqual => Expr::new(format!("{a} <= {b}")),
        GreaterOrEqual => Expr::new(format!("{a} >= {b}")),
        And => Expr::new(format!("{a} && {b}")),
        Or => Expr::new(format!("{a} || {b}")),
        Xor => Expr::new(format!("{a} != {b}")),
        Where => Expr::new(format!("select({c}, {b}, {a})")),
        Cast => cast(a, at, ty),
    }
}

/// A value of type `from` as an f32 (a Pow exponent).
fn to_f32(a: &str, from: ElemType) -> Expr {
    match from {
        ElemType::I32 => Expr::new(format!("f32({a})")),
        ElemType::I64 => Expr::with(format!("ew_l2f({a})"), &["i64", "l2f"]),
        _ => Expr::new(a),
    }
}

/// Cast between the compute types. Float to integer truncates toward zero; NaN and values out
/// of the target's range give its lowest value (the x86 "integer indefinite" ONNX Runtime's
/// CPU cast produces). To bool is `x != 0` (NaN is true).
fn cast(a: &str, from: ElemType, to: ElemType) -> Expr {
    use ElemType::*;
    match (from, to) {
        (f, t) if f == t || (f.is_float() && t.is_float()) => Expr::new(a),
        (F32 | F16, I32) => Expr::with(format!("ew_f2i({a})"), &["nan", "f2i"]),
        (F32 | F16, I64) => Expr::with(format!("ew_f2l({a})"), &["nan", "i64", "f2l"]),
        (F32 | F16, Bool) => Expr::new(format!("(bitcast<u32>({a}) & 0x7fffffffu) != 0u")),
        (I32, F32 | F16) => Expr::new(format!("f32({a})")),
        (I32, I64) => Expr::new(format!("vec2<u32>(bitcast<u32>({a}), select(0u, 0xffffffffu, {a} < 0))")),
        (I32, Bool) => Expr::new(format!("{a} != 0")),
        (I64, F32 | F16) => Expr::with(format!("ew_l2f({a})"), &["i64", "l2f"]),
        (I64, I32) => Expr::new(format!("bitcast<i32>({a}.x)")),
        (I64, Bool) => Expr::new(format!("any({a} != vec2<u32>())")),
        (Bool, F32 | F16) => Expr::new(format!("select(0.0, 1.0, {a})")),
        (Bool, I32) => Expr::new(format!("select(0, 1, {a})")),
        (Bool, I64) => Expr::new(format!("vec2<u32>(select(0u, 1u, {a}), 0u)")),
        // Every pair is covered above; identity keeps this total.
        _ => Expr::new(a),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(op: ElemOp, args: Vec<Arg>, ty: ElemType) -> ElemNode {
        ElemNode { op, args, ty }
    }

    #[test]
    fn typing() {
        use ElemType::*;
        let ok = |inputs: &[ElemType], nodes: Vec<ElemNode>| check_ir(inputs, &nodes).is_ok();
        assert!(ok(&[F32, F32], vec![n(ElemOp::Add, vec![Arg::Input(0), Arg::Input(1)], F32)]));
        assert!(!ok(&[F32, F16], vec![n(ElemOp::Add, vec![Arg::Input(0), Arg::Input(1)], F32)]));
        assert!(!ok(&[Bool], vec![n(ElemOp::Exp, vec![Arg::Input(0)], Bool)]));
        assert!(ok(&[F16, I64], vec![n(ElemOp::Pow, vec![Arg::Input(0), Arg::Input(1)], F16)]));
        assert!(!ok(&[I64, F32], vec![n(ElemOp::Pow, vec![Arg::Input(0), Arg::Input(1)], I64)]));
        assert!(ok(&[Bool, I64, I64], vec![n(ElemOp::Where, vec![Arg::Input(0), Arg::Input(1), Arg::Input(2)], I64)]));
        assert!(!ok(&[F32], vec![n(ElemOp::Neg, vec![Arg::Node(0)], F32)]));
        assert!(!ok(&[F32], vec![n(ElemOp::Neg, vec![Arg::Input(1)], F32)]));
        assert!(!ok(&[F32], vec![n(ElemOp::Add, vec![Arg::Input(0)], F32)]));
        assert!(ok(&[], vec![n(ElemOp::Scalar(1.0), vec![], F16)]));
        assert!(!ok(&[F32], vec![]));
    }
}

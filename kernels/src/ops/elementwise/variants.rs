//! Every kernel the elementwise ops emit alone (each op at each element type it takes, inputs
//! of the output's shape), one per family with scalar and broadcast inputs, and the fused
//! chains of the target models: what the goldens render and validate.

use super::shape::Mode::{self, Broadcast as B, Same as L, Scalar as S};
use super::source::ElemSource;
use super::{Arg, ElemNode, ElemOp};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType::{self, Bool, F16, F32, I32, I64};
use crate::shader::{OpShader, ShaderVariant};

const FLOATS: [ElemType; 2] = [F32, F16];
const NUMERIC: [ElemType; 4] = [F32, F16, I32, I64];

const fn i(k: usize) -> Arg {
    Arg::Input(k)
}

const fn nd(j: usize) -> Arg {
    Arg::Node(j)
}

fn n(op: ElemOp, args: &[Arg], ty: ElemType) -> ElemNode {
    ElemNode { op, args: args.to_vec(), ty }
}

/// Collects variants, leaving out f16 ones where the device lacks shader-f16.
struct Set<'a> {
    caps: &'a DeviceCaps,
    out: Vec<ShaderVariant>,
}

impl Set<'_> {
    fn add(&mut self, inputs: &[(ElemType, Mode)], nodes: Vec<ElemNode>) {
        let f16 = inputs.iter().any(|x| x.0 == F16) || nodes.iter().any(|x| x.ty == F16);
        if !f16 || self.caps.shader_f16 {
            let scalar = ElemSource { inputs: inputs.to_vec(), nodes, width: 1 };
            // The vector form too, where a run can take it.
            let vector = scalar.vector_width().map(|width| ElemSource { width, ..scalar.clone() });
            self.out.extend([Some(scalar), vector].into_iter().flatten().map(|s| ShaderVariant::Op(OpShader::new(s))));
        }
    }

    /// `op` over inputs of types `args` (all of the output's shape) giving `ty`.
    fn op(&mut self, op: ElemOp, args: &[ElemType], ty: ElemType) {
        let inputs: Vec<(ElemType, Mode)> = args.iter().map(|&t| (t, L)).collect();
        let refs: Vec<Arg> = (0..args.len()).map(i).collect();
        self.add(&inputs, vec![n(op, &refs, ty)]);
    }
}

fn collect(caps: &DeviceCaps, fill: impl FnOnce(&mut Set<'_>)) -> Vec<ShaderVariant> {
    let mut set = Set { caps, out: Vec::new() };
    fill(&mut set);
    set.out
}

pub fn unary(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::*;
    collect(caps, |s| {
        let float_ops = [
            Exp,
            Log,
            Sqrt,
            Reciprocal,
            Erf,
            Tanh,
            Sigmoid,
            LeakyRelu(0.01),
            Gelu,
            GeluTanh,
            HardSwish,
            Softplus,
            Mish,
            Sin,
            Cos,
            Floor,
            Ceil,
            Round,
        ];
        for t in FLOATS {
            for op in &float_ops {
                s.op(op.clone(), &[t], t);
            }
            // HardSigmoid, Elu and Selu read their attributes as scalar nodes.
            for (op, k) in [(HardSigmoid, 2), (Elu, 1), (Selu, 2)] {
                let mut nodes: Vec<ElemNode> = (0..k).map(|_| n(Scalar(0.0), &[], t)).collect();
                let args: Vec<Arg> = [i(0)].into_iter().chain((0..k).map(nd)).collect();
                nodes.push(n(op, &args, t));
                s.add(&[(t, L)], nodes);
            }
            s.op(IsNaN, &[t], Bool);
            for (positive, negative) in [(true, true), (true, false), (false, true), (false, false)] {
                s.op(IsInf { positive, negative }, &[t], Bool);
            }
        }
        for t in NUMERIC {
            for op in [Abs, Neg, Relu] {
                s.op(op, &[t], t);
            }
        }
        s.op(Not, &[Bool], Bool);
    })
}

pub fn clip(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::{Cast, Max, Min, Scalar};
    collect(caps, |s| {
        for t in NUMERIC {
            // Runtime bounds (and integer constants) are inputs.
            s.add(&[(t, L), (t, S), (t, S)], vec![n(Max, &[i(0), i(1)], t), n(Min, &[nd(0), i(2)], t)]);
        }
        for t in [I32, I64] {
            // An absent integer bound is no bound.
            s.add(&[(t, L), (t, S)], vec![n(Max, &[i(0), i(1)], t)]);
            s.add(&[(t, L), (t, S)], vec![n(Min, &[i(0), i(1)], t)]);
            s.add(&[(t, L)], vec![n(Cast, &[i(0)], t)]);
        }
        for t in FLOATS {
            // Float bounds always apply (absent ones are the type's extremes); constants are
            // in the uniform.
            let lo = [n(Scalar(0.0), &[], t), n(Max, &[i(0), nd(0)], t)];
            let consts: Vec<ElemNode> =
                lo.iter().cloned().chain([n(Scalar(0.0), &[], t), n(Min, &[nd(1), nd(2)], t)]).collect();
            s.add(&[(t, L)], consts);
            s.add(&[(t, L), (t, S)], lo.iter().cloned().chain([n(Min, &[nd(1), i(1)], t)]).collect());
            let runtime_lo = [n(Max, &[i(0), i(1)], t), n(Scalar(0.0), &[], t), n(Min, &[nd(0), nd(1)], t)];
            s.add(&[(t, L), (t, S)], runtime_lo.to_vec());
        }
    })
}

pub fn binary(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::*;
    collect(caps, |s| {
        for t in NUMERIC {
            for op in [Add, Sub, Mul, Div] {
                s.op(op, &[t, t], t);
            }
        }
        for base in FLOATS {
            for exponent in NUMERIC {
                s.op(Pow, &[base, exponent], base);
            }
        }
        for op in [And, Or, Xor] {
            s.op(op, &[Bool, Bool], Bool);
        }
        for t in FLOATS {
            // PRelu's slope per channel ([C, 1, 1]) broadcasts onto X.
            s.add(&[(t, L), (t, B)], vec![n(PRelu, &[i(0), i(1)], t)]);
        }
        s.add(&[(F32, L), (F32, B)], vec![n(Add, &[i(0), i(1)], F32)]);
        s.add(&[(F32, B), (F32, S)], vec![n(Add, &[i(0), i(1)], F32)]);
        s.add(&[(F32, B), (F32, B)], vec![n(Mul, &[i(0), i(1)], F32)]);
        s.add(&[(F32, L), (F32, S)], vec![n(Pow, &[i(0), i(1)], F32)]);
        chains(s);
    })
}

/// The fused chains the target models produce.
fn chains(s: &mut Set<'_>) {
    use ElemOp::*;
    for t in FLOATS {
        // Erf GELU: x · (erf(x / √2) + 1) · 0.5.
        let gelu = vec![
            n(Div, &[i(0), i(1)], t),
            n(Erf, &[nd(0)], t),
            n(Add, &[nd(1), i(2)], t),
            n(Mul, &[i(0), nd(2)], t),
            n(Mul, &[nd(3), i(3)], t),
        ];
        s.add(&[(t, L), (t, S), (t, S), (t, S)], gelu);
        // SiLU: x · sigmoid(x).
        s.add(&[(t, L)], vec![n(Sigmoid, &[i(0)], t), n(Mul, &[i(0), nd(0)], t)]);
        // BERT's attention mask: (1 - float(mask)) · -10000.
        for mask in [Bool, I64] {
            let nodes = vec![n(Cast, &[i(0)], t), n(Sub, &[i(1), nd(0)], t), n(Mul, &[nd(1), i(2)], t)];
            s.add(&[(mask, L), (t, S), (t, S)], nodes);
        }
        // A residual sum scaled by a broadcast row.
        s.add(&[(t, L), (t, L), (t, B)], vec![n(Add, &[i(0), i(1)], t), n(Mul, &[nd(0), i(2)], t)]);
    }
}

/// `com.microsoft` Gelu (erf), FastGelu and BiasGelu with their bias rows, QuickGelu.
pub fn contrib(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::*;
    collect(caps, |s| {
        for t in FLOATS {
            for op in [Gelu, GeluTanh] {
                s.add(&[(t, L), (t, B)], vec![n(Add, &[i(0), i(1)], t), n(op, &[nd(0)], t)]);
            }
            let quick = vec![
                n(Scalar(1.702), &[], t),
                n(Mul, &[i(0), nd(0)], t),
                n(Sigmoid, &[nd(1)], t),
                n(Mul, &[i(0), nd(2)], t),
            ];
            s.add(&[(t, L)], quick);
        }
    })
}

pub fn variadic(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::*;
    collect(caps, |s| {
        for t in NUMERIC {
            s.op(Max, &[t, t], t);
            s.op(Min, &[t, t], t);
        }
        for t in FLOATS {
            s.add(&[(t, L), (t, L), (t, L)], vec![n(Add, &[i(0), i(1)], t), n(Add, &[nd(0), i(2)], t)]);
            let mean = vec![n(Add, &[i(0), i(1)], t), n(Scalar(2.0), &[], t), n(Div, &[nd(0), nd(1)], t)];
            s.add(&[(t, L), (t, L)], mean);
        }
        s.add(&[(F32, B), (F32, L), (F32, S)], vec![n(Max, &[i(0), i(1)], F32), n(Max, &[nd(0), i(2)], F32)]);
    })
}

pub fn compare(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    use ElemOp::*;
    collect(caps, |s| {
        for t in [F32, F16, I32, I64, Bool] {
            s.op(Equal, &[t, t], Bool);
        }
        for t in NUMERIC {
            for op in [Less, Greater, LessOrEqual, GreaterOrEqual] {
                s.op(op, &[t, t], Bool);
            }
        }
        s.add(&[(F32, L), (F32, B)], vec![n(Less, &[i(0), i(1)], Bool)]);
    })
}

pub fn select(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    collect(caps, |s| {
        for t in [F32, F16, I32, I64, Bool] {
            s.op(ElemOp::Where, &[Bool, t, t], t);
        }
        s.add(&[(Bool, B), (F32, L), (F32, S)], vec![n(ElemOp::Where, &[i(0), i(1), i(2)], F32)]);
    })
}

pub fn cast(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    collect(caps, |s| {
        for from in ElemType::ALL {
            for to in ElemType::ALL {
                s.op(ElemOp::Cast, &[from], to);
            }
        }
    })
}

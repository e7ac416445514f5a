//! Conv + BatchNormalization folded into one Conv at program-build time: ONNX Runtime folds
//! this pair before partitioning when its optimisations run; a model run without them (or
//! exported after ORT's pass) still reaches us with the BatchNormalization, which then costs a
//! dispatch and a round trip of the conv's output through memory.
//!
//! With `s = γ / √(var + ε)`, `BN(W ⊛ x + b) = (s·W) ⊛ x + (b − mean)·s + β`: new constant
//! weights and bias, computed in f64 and rounded once to the conv's type.

use super::model::{Node, ValueInfo};
use super::program::Constant;
use crate::dtype::ElemType;

/// Whether BatchNormalization `bn`, the only reader of `conv`'s output `tail`, can fold into
/// the conv: inference mode, one output, its four operands and the conv's weights and bias
/// constants of a known `[M]` / `[M, …]` shape, all of the conv's float type.
pub fn foldable(conv: &Node, bn: &Node, tail: &str) -> bool {
    let float = |v: &ValueInfo| matches!(ElemType::from_onnx(v.elem_type), Some(ElemType::F32 | ElemType::F16));
    let Some(w) = conv.input(1).filter(|w| w.constant && float(w)) else { return false };
    let Some(&m) = w.fixed_shape().as_deref().and_then(<[u64]>::first) else { return false };
    let per_channel =
        |v: Option<&ValueInfo>| v.is_some_and(|v| v.constant && float(v) && v.fixed_shape() == Some(vec![m]));
    let bias_ok = match conv.input(2).filter(|b| !b.name.is_empty()) {
        None => true,
        Some(b) => per_channel(Some(b)),
    };
    let same_type = bn.output(0).zip(conv.output(0)).is_some_and(|(a, b)| a.elem_type == b.elem_type);
    bn.is_onnx()
        && bn.input(0).is_some_and(|x| x.name == tail)
        && (1..5).all(|i| per_channel(bn.input(i)))
        && bn.int("training_mode").unwrap_or(0) == 0
        && (bn.since_version >= 9 || bn.int("spatial").unwrap_or(1) != 0)
        && !bn.outputs.iter().skip(1).flatten().any(|v| !v.name.is_empty())
        && bias_ok
        && same_type
}

/// The folded weights and bias of `conv` followed by `bn`, named after them so that two
/// folds never share a name.
pub fn fold(conv: &Node, bn: &Node, constants: &[Constant]) -> Result<(Constant, Constant), String> {
    let find = |v: Option<&ValueInfo>, what: &str| -> Result<&Constant, String> {
        let name = v.map(|v| v.name.as_str()).unwrap_or_default();
        constants
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| format!("folding '{}' into '{}': {what} '{name}' is not a constant", bn.name, conv.name))
    };
    let w = find(conv.input(1), "the weight")?;
    let m = *w.shape.first().ok_or("a Conv weight of rank 0")? as usize;
    let [gamma, beta, mean, var] = [1, 2, 3, 4].map(|i| find(bn.input(i), "an operand").and_then(|c| floats(c, m)));
    let (gamma, beta, mean, var) = (gamma?, beta?, mean?, var?);
    let bias = match conv.input(2).filter(|b| !b.name.is_empty()) {
        Some(b) => floats(find(Some(b), "the bias")?, m)?,
        None => vec![0.0; m],
    };
    let eps = bn.float("epsilon").unwrap_or(1e-5) as f64;
    let scale: Vec<f64> = (0..m).map(|c| gamma[c] / (var[c] + eps).sqrt()).collect();
    let weights = floats(w, w.shape.iter().product::<u64>() as usize)?;
    let per = weights.len() / m.max(1);
    let folded_w: Vec<f64> = weights.iter().enumerate().map(|(i, v)| v * scale[i / per.max(1)]).collect();
    let folded_b: Vec<f64> = (0..m).map(|c| (bias[c] - mean[c]) * scale[c] + beta[c]).collect();
    let tag = format!("::bn({})", bn.name);
    Ok((
        Constant {
            name: format!("{}{tag}", w.name),
            dtype: w.dtype,
            shape: w.shape.clone(),
            data: encode(&folded_w, w.dtype)?,
        },
        Constant {
            name: format!("{}::bias{tag}", conv.name),
            dtype: w.dtype,
            shape: vec![m as u64],
            data: encode(&folded_b, w.dtype)?,
        },
    ))
}

/// A float constant's `len` values as f64.
fn floats(c: &Constant, len: usize) -> Result<Vec<f64>, String> {
    let values: Vec<f64> = match c.dtype {
        ElemType::F32 => c.data.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64).collect(),
        ElemType::F16 => c.data.chunks_exact(2).map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f64()).collect(),
        other => return Err(format!("constant '{}' of type {other} cannot be folded", c.name)),
    };
    if values.len() != len {
        return Err(format!("constant '{}' holds {} values, expected {len}", c.name, values.len()));
    }
    Ok(values)
}

fn encode(values: &[f64], dtype: ElemType) -> Result<Vec<u8>, String> {
    match dtype {
        ElemType::F32 => Ok(values.iter().flat_map(|&v| (v as f32).to_le_bytes()).collect()),
        ElemType::F16 => Ok(values.iter().flat_map(|&v| half::f16::from_f64(v).to_le_bytes()).collect()),
        other => Err(format!("cannot fold into a constant of type {other}")),
    }
}

//! SimplifiedLayerNormalization (ONNX Runtime's RMS norm, registered in the ONNX domain at
//! opset 1): `y = x / sqrt(mean(x²) + epsilon) * scale` over the dimensions from `axis`, with
//! the optional output inv_std_var. It runs on the RMSNormalization kernel (`layer`), which
//! writes the statistics in f32 or X's type; `stash_type` is accepted (statistics are always
//! computed in f32, at least as accurate as asked).

use super::input_type;
use super::layer::{variants, NormKernel, NormKind, THREADS};
use super::RowTuning;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::ops::{check_f16, check_types, Kernel, OpDef};
use crate::shader::ShaderVariant;

/// The definitions of this file.
pub static OPS: &[&dyn OpDef] = &[&SimplifiedDef];

struct SimplifiedDef;

impl OpDef for SimplifiedDef {
    fn names(&self) -> &'static [&'static str] {
        &["SimplifiedLayerNormalization"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        kernel(node)?.check_shapes(node)
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0, 1]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(kernel(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(6.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(NormKind::Rms, caps, true)
    }
}

/// The RMS kernel of one SimplifiedLayerNormalization node: outputs Y and, when listed,
/// inv_std_var (the kernel's third output; it writes no mean).
pub fn kernel(node: &Node) -> Result<NormKernel, String> {
    let ty = input_type(node, 0, "X")?;
    if !ty.is_float() {
        return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
    }
    let listed = |i: usize| node.output(i).filter(|v| !v.name.is_empty());
    let y = listed(0).ok_or_else(|| format!("{} '{}' without its output Y", node.op_type, node.name))?;
    let types = [input_type(node, 1, "scale")?, ElemType::from_onnx(y.elem_type).ok_or("unsupported type of Y")?];
    if types.iter().any(|&t| t != ty) {
        return Err(format!("{} with mixed element types (X is {}) is not supported", node.op_type, ty.name()));
    }
    let stats = match listed(1) {
        None => None,
        Some(v) => match ElemType::from_onnx(v.elem_type) {
            Some(t) if t == ElemType::F32 || t == ty => Some(t),
            _ => return Err(format!("inv_std_var of element type {} is not supported", v.elem_type)),
        },
    };
    if node.outputs.len() > 2 {
        return Err(format!("{} with {} outputs (it has at most 2)", node.op_type, node.outputs.len()));
    }
    Ok(NormKernel {
        name: node.name.clone(),
        kind: NormKind::Rms,
        ty,
        axis: node.int("axis").unwrap_or(-1),
        epsilon: node.float("epsilon").unwrap_or(1e-5),
        bias: false,
        outputs: [true, false, stats.is_some()],
        stats,
        tuning: RowTuning::new(THREADS),
    })
}

//! Per-node "can we run this?" predicates: each returns `Ok` or the reason ONNX Runtime's log
//! shows when the node is left to another provider.

use super::model::{Node, ValueInfo};
use crate::caps::DeviceCaps;
use crate::conv::ConvAlgo;
use crate::dtype::DType;
use crate::gemm::{broadcast_shapes, GemmOptions};

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
    /// Leave partitions the CPU EP runs faster to it (`offload=auto`); off (`offload=all`)
    /// claims every node this EP can run, whatever the host traffic.
    pub cost_rule: bool,
    /// Which attention the flash kernels take (`attention=`): ONNX `Attention` and
    /// `MultiHeadAttention` are claimed, and the exported pattern rewritten (`build_program_with`),
    /// only for the element types it allows.
    pub flash_attention: FlashMode,
}

/// Which attention runs on the flash kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlashMode {
    /// None (`attention=unfused`, or `auto` on a device without tensor cores): the pattern runs
    /// unfused and the attention ops are declined.
    #[default]
    Off,
    /// f16, and f32 at the head sizes where it runs split in three f16 products, on the
    /// tensor-core kernel (`attention=auto` on a device that has it).
    TensorCores,
    /// Every float type (`attention=flash`; f32 at other head sizes, and devices without tensor
    /// cores, on the SIMT kernel, not yet tuned).
    All,
}

impl FlashMode {
    /// Why attention stays off the flash kernels, or `Ok` (f32 head sizes: [`Self::allows_head`]).
    pub fn allows(self) -> Result<(), String> {
        match self {
            FlashMode::All | FlashMode::TensorCores => Ok(()),
            FlashMode::Off => Err("the flash-attention kernels are off (attention=unfused, or a device without \
                 cooperative-matrix support; attention=flash forces the SIMT kernel, which is not yet tuned)"
                .into()),
        }
    }

    /// Why attention of `ty` with head size `d` stays off the flash kernels, or `Ok`: by default
    /// f32 runs fused only where the tensor cores take it split in three f16 products.
    pub fn allows_head(self, ty: crate::dtype::ElemType, d: u64) -> Result<(), String> {
        self.allows()?;
        let sizes = crate::ops::attention::coop::X3_HEAD_SIZES;
        if self == FlashMode::TensorCores && ty == crate::dtype::ElemType::F32 && !sizes.contains(&d) {
            return Err(format!(
                "f32 attention of head size {d} runs unfused: by default f32 runs fused only at head size(s) \
                 {sizes:?}, on the tensor cores in three f16 products (session option attention=flash forces \
                 the SIMT flash kernel, which is not yet tuned)"
            ));
        }
        Ok(())
    }
}

impl PlacementOptions {
    /// The EP's defaults on a device: f16 on, automatic tiling and conv algorithm, the cost rule.
    pub fn defaults(caps: DeviceCaps) -> PlacementOptions {
        PlacementOptions {
            caps,
            enable_f16: true,
            gemm: GemmOptions::default(),
            conv1d_as_conv2d: true,
            conv_algo: ConvAlgo::Auto,
            cost_rule: true,
            flash_attention: FlashMode::Off,
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

/// More elements than any device holds (2^53): a value declared this large is declined before
/// any op's size arithmetic sees it (so no product of its dims, times an element size or a
/// FLOP factor, can overflow).
pub const MAX_DECLARED_ELEMENTS: u64 = 1 << 53;

/// Declines a node any of whose values declares more than [`MAX_DECLARED_ELEMENTS`] elements
/// (counting a 0 dim as 1, since ops multiply subsets of the dims).
pub fn check_declared_sizes(node: &Node) -> Result<(), String> {
    for v in node.inputs.iter().chain(&node.outputs).flatten() {
        let Some(shape) = v.fixed_shape() else { continue };
        let fits = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d.max(1)).filter(|&n| n <= MAX_DECLARED_ELEMENTS));
        if fits.is_none() {
            return Err(format!("'{}' declares the shape {shape:?}: more elements than any device holds", v.name));
        }
    }
    Ok(())
}

pub fn required<'a>(node: &'a Node, i: usize, what: &str) -> Result<&'a ValueInfo, String> {
    node.input(i).ok_or_else(|| format!("{} without input {what}", node.op_type))
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::graph::model::Dim;

    fn node_with(shape: &[u64]) -> Node {
        let v = ValueInfo {
            name: "x".into(),
            elem_type: 1,
            shape: Some(shape.iter().map(|&d| Dim::Fixed(d)).collect()),
            constant: false,
            small_data: None,
        };
        Node {
            name: "n".into(),
            op_type: "Relu".into(),
            domain: String::new(),
            since_version: 14,
            inputs: vec![Some(v.clone())],
            outputs: vec![Some(ValueInfo { name: "y".into(), ..v })],
            attrs: BTreeMap::new(),
            assigned_ep: None,
        }
    }

    #[test]
    fn declared_sizes_beyond_any_device_are_declined() {
        assert!(check_declared_sizes(&node_with(&[2, 1500, 384])).is_ok());
        assert!(check_declared_sizes(&node_with(&[1 << 26, 1 << 27])).is_ok());
        let err = check_declared_sizes(&node_with(&[1 << 27, 1 << 27])).unwrap_err();
        assert!(err.contains("more elements than any device holds"), "{err}");
        // A zero dim does not hide an overflowing product of the others.
        assert!(check_declared_sizes(&node_with(&[0, 1 << 40, 1 << 40])).is_err());
    }
}

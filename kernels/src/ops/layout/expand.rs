//! Expand: numpy's bidirectional broadcast of the input onto a constant shape, as a strided
//! copy whose broadcast dims step by 0.

use super::shader::{variants, Pattern};
use super::strided::{self, contiguous, Strided, Tuning};
use super::{check_common, declared, elem_size, planned_size, present, shape, views_plan};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::{broadcast, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::ShaderVariant;

pub struct ExpandDef;

impl OpDef for ExpandDef {
    fn names(&self) -> &'static [&'static str] {
        &["Expand"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        let target = target_shape(node)?;
        if target.len() > strided::MAX_RANK {
            return Err(format!("Expand to rank {}; at most {} run here", target.len(), strided::MAX_RANK));
        }
        if let Some(s) = node.input(0).and_then(|v| v.fixed_shape()) {
            expand_view(&s, &target)?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ExpandKernel { name: node.name.clone(), target: target_shape(node)?, ty: declared(node, 0) }))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Strided])
    }
}

/// The `shape` input, which must be a small int64 constant of sizes ≥ 0.
fn target_shape(node: &Node) -> Result<Vec<u64>, String> {
    let v = present(node, 1).ok_or("Expand without shape")?;
    if !v.constant {
        return Err(format!("Expand shape '{}' is computed at run time; only a constant shape runs here", v.name));
    }
    let dims = v.ints().ok_or_else(|| format!("Expand shape '{}' is not a small int64 constant", v.name))?;
    dims.iter().map(|&d| u64::try_from(d).map_err(|_| format!("Expand shape {dims:?} has a negative size"))).collect()
}

/// The view of an input of `input` shape broadcast against `target` (both ways).
pub fn expand_view(input: &[u64], target: &[u64]) -> Result<Strided, String> {
    let dims = broadcast(input, target).ok_or_else(|| format!("{input:?} does not broadcast with {target:?}"))?;
    let strides = contiguous(input);
    let lead = dims.len() - input.len();
    let strides = (0..dims.len())
        .map(|d| match d.checked_sub(lead) {
            Some(k) if input[k] != 1 => strides[k],
            _ => 0,
        })
        .collect();
    Ok(Strided { dims, strides, base: 0 })
}

#[derive(Clone, Debug)]
struct ExpandKernel {
    name: String,
    target: Vec<u64>,
    ty: Option<ElemType>,
}

impl Kernel for ExpandKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let view = expand_view(shape(inputs, 0, &self.name)?, &self.target)
            .map_err(|e| format!("Expand '{}': {e}", self.name))?;
        Ok(vec![view.dims])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let x = io.input(0)?;
        let view = expand_view(x.shape, &self.target).map_err(GpuError::Invalid)?;
        let size = elem_size(io, 0)?;
        Ok(PreparedStep::one(strided::prepare(cx, x.buf, io.output(0)?.buf, size, &view, Tuning::strided(cx.caps()))?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = shape(inputs, 0, &self.name)?;
        let view = expand_view(x, &self.target).map_err(|e| format!("Expand '{}': {e}", self.name))?;
        let size = planned_size(self.ty, &self.name)?;
        views_plan(&format!("Expand '{}'", self.name), x, &[view], size, Tuning::strided(caps), caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views() {
        let v = expand_view(&[3, 1], &[2, 1, 4]).unwrap();
        assert_eq!(v, Strided { dims: vec![2, 3, 4], strides: vec![0, 1, 0], base: 0 });
        // A 1 in the shape keeps the input's size; the output may have a lower-rank shape.
        let v = expand_view(&[2, 3], &[1]).unwrap();
        assert_eq!(v, Strided { dims: vec![2, 3], strides: vec![3, 1], base: 0 });
        assert_eq!(expand_view(&[1], &[0]).unwrap().dims, vec![0]);
        assert!(expand_view(&[2, 3], &[4, 3]).is_err());
    }
}

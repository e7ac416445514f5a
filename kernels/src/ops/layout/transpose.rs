//! Transpose: the strided copy, or the tiled kernel when the input's contiguous axis moves
//! (attention's `[.., a, b] -> [.., b, a]`), where strided reads would each touch a new line.

use super::shader::{variants, Pattern};
use super::strided::{self, contiguous, Strided, Tuning};
use super::{check_common, declared, elem_size, planned_size, shape, views_plan};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::{Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::ShaderVariant;

pub struct TransposeDef;

impl OpDef for TransposeDef {
    fn names(&self) -> &'static [&'static str] {
        &["Transpose"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            resolve_perm(node.ints("perm"), rank)?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(TransposeKernel {
            name: node.name.clone(),
            perm: node.ints("perm").map(<[i64]>::to_vec),
            ty: declared(node, 0),
        }))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Strided, Pattern::Tiled])
    }
}

/// The permutation of a rank-`rank` input: `perm`, or the axes reversed when absent.
pub fn resolve_perm(perm: Option<&[i64]>, rank: usize) -> Result<Vec<usize>, String> {
    let Some(perm) = perm else { return Ok((0..rank).rev().collect()) };
    if perm.len() != rank {
        return Err(format!("perm {perm:?} has {} entries for an input of rank {rank}", perm.len()));
    }
    let mut seen = vec![false; rank];
    for &p in perm {
        let ok = usize::try_from(p).ok().filter(|&p| p < rank && !seen[p]);
        let p = ok.ok_or_else(|| format!("perm {perm:?} is not a permutation of 0..{rank}"))?;
        seen[p] = true;
    }
    Ok(perm.iter().map(|&p| p as usize).collect())
}

#[derive(Clone, Debug)]
struct TransposeKernel {
    name: String,
    perm: Option<Vec<i64>>,
    ty: Option<ElemType>,
}

impl TransposeKernel {
    fn view(&self, input: &[u64]) -> Result<Strided, String> {
        let perm =
            resolve_perm(self.perm.as_deref(), input.len()).map_err(|e| format!("Transpose '{}': {e}", self.name))?;
        let strides = contiguous(input);
        Ok(Strided {
            dims: perm.iter().map(|&p| input[p]).collect(),
            strides: perm.iter().map(|&p| strides[p]).collect(),
            base: 0,
        })
    }
}

impl Kernel for TransposeKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        Ok(vec![self.view(shape(inputs, 0, &self.name)?)?.dims])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let x = io.input(0)?;
        let view = self.view(x.shape).map_err(GpuError::Invalid)?;
        let size = elem_size(io, 0)?;
        Ok(PreparedStep::one(strided::prepare(cx, x.buf, io.output(0)?.buf, size, &view, Tuning::of(cx.caps()))?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = shape(inputs, 0, &self.name)?;
        let view = self.view(x)?;
        let size = planned_size(self.ty, &self.name)?;
        views_plan(&format!("Transpose '{}'", self.name), x, &[view], size, Tuning::of(caps), caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perms() {
        assert_eq!(resolve_perm(None, 3).unwrap(), vec![2, 1, 0]);
        assert_eq!(resolve_perm(Some(&[0, 2, 1]), 3).unwrap(), vec![0, 2, 1]);
        assert!(resolve_perm(Some(&[0, 0, 1]), 3).is_err());
        assert!(resolve_perm(Some(&[0, 1]), 3).is_err());
        assert!(resolve_perm(Some(&[0, -1, 1]), 3).is_err());
        assert!(resolve_perm(Some(&[0, 3, 1]), 3).is_err());
        assert_eq!(resolve_perm(None, 0).unwrap(), Vec::<usize>::new());
    }
}

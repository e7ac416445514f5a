//! Split: one strided copy per non-empty output, each a slice of the input along the axis.
//! Sizes come from `split` (attribute before opset 13, constant input after), `num_outputs`
//! (opset 18, the last chunk smaller) or an equal split into the node's outputs.

use super::shader::{variants, Pattern};
use super::strided::{self, contiguous, Strided, Tuning};
use super::{check_common, const_input, declared, elem_size, planned_size, present, shape, views_plan};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::{normalize_axis, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::ShaderVariant;

pub struct SplitDef;

impl OpDef for SplitDef {
    fn names(&self) -> &'static [&'static str] {
        &["Split"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        let k = SplitKernel::of(node)?;
        if let Some(s) = node.input(0).and_then(|v| v.fixed_shape()) {
            k.sizes(&s)?;
        } else if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            normalize_axis(k.axis, rank)?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(SplitKernel::of(node)?))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Strided])
    }
}

/// The sizes along an axis of `dim` of the node's `outputs` outputs, as ONNX Runtime computes
/// them: `split` as given (summing to `dim`), else `num_outputs` chunks of `ceil(dim / n)` with
/// a smaller, non-empty last one, else equal parts.
pub fn split_sizes(
    dim: u64,
    split: Option<&[i64]>,
    num_outputs: Option<i64>,
    outputs: usize,
) -> Result<Vec<u64>, String> {
    if let Some(split) = split {
        if split.len() != outputs {
            return Err(format!("split {split:?} has {} entries for {outputs} outputs", split.len()));
        }
        let sizes = split.iter().map(|&s| u64::try_from(s)).collect::<Result<Vec<u64>, _>>();
        return match sizes {
            Ok(s) if s.iter().sum::<u64>() == dim => Ok(s),
            _ => Err(format!("split {split:?} does not add up to the axis size {dim}")),
        };
    }
    let n = outputs as u64;
    if n == 0 {
        return Err("Split without outputs".into());
    }
    if num_outputs.is_some() {
        let chunk = dim.div_ceil(n);
        let rest = dim.checked_sub(chunk * (n - 1)).filter(|&r| r > 0 && n <= dim);
        let last = rest.ok_or_else(|| format!("{n} outputs do not split an axis of size {dim}"))?;
        let mut sizes = vec![chunk; outputs];
        sizes[outputs - 1] = last;
        return Ok(sizes);
    }
    if dim % n != 0 {
        return Err(format!("an axis of size {dim} does not split evenly into {n} outputs"));
    }
    Ok(vec![dim / n; outputs])
}

#[derive(Clone, Debug)]
struct SplitKernel {
    name: String,
    axis: i64,
    split: Option<Vec<i64>>,
    num_outputs: Option<i64>,
    /// The node's output count, and which outputs are named (the step writes only those).
    outputs: usize,
    named: Vec<usize>,
    ty: Option<ElemType>,
}

impl SplitKernel {
    fn of(node: &Node) -> Result<SplitKernel, String> {
        let split = match node.ints("split") {
            Some(s) if node.since_version < 13 => Some(s.to_vec()),
            _ if node.since_version >= 13 || present(node, 1).is_some() => const_input(node, 1, "split")?,
            _ => None,
        };
        let num_outputs = if node.since_version >= 18 { node.int("num_outputs") } else { None };
        let outputs = node.outputs.len();
        match num_outputs {
            Some(n) if split.is_some() => return Err(format!("Split with both split and num_outputs {n}")),
            Some(n) if n != outputs as i64 => return Err(format!("Split num_outputs {n} with {outputs} outputs")),
            _ => {}
        }
        let named = (0..outputs).filter(|&k| node.output(k).is_some_and(|o| !o.name.is_empty())).collect();
        Ok(SplitKernel {
            name: node.name.clone(),
            axis: node.int("axis").unwrap_or(0),
            split,
            num_outputs,
            outputs,
            named,
            ty: declared(node, 0),
        })
    }

    /// Each named output's view of an input of `shape`.
    fn views(&self, shape: &[u64]) -> Result<Vec<Strided>, String> {
        let a = normalize_axis(self.axis, shape.len())?;
        let sizes = split_sizes(shape[a], self.split.as_deref(), self.num_outputs, self.outputs)?;
        let strides = contiguous(shape);
        let mut first = 0u64;
        let mut views = Vec::with_capacity(sizes.len());
        for &len in &sizes {
            let mut dims = shape.to_vec();
            dims[a] = len;
            views.push(Strided { dims, strides: strides.clone(), base: first * strides[a] as u64 });
            first += len;
        }
        self.named.iter().map(|&k| views.get(k).cloned().ok_or_else(|| format!("no output {k}"))).collect()
    }

    fn sizes(&self, shape: &[u64]) -> Result<Vec<Vec<u64>>, String> {
        let views = self.views(shape).map_err(|e| format!("Split '{}': {e}", self.name))?;
        Ok(views.into_iter().map(|v| v.dims).collect())
    }
}

impl Kernel for SplitKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        self.sizes(shape(inputs, 0, &self.name)?)
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let x = io.input(0)?;
        let size = elem_size(io, 0)?;
        let views = self.views(x.shape).map_err(GpuError::Invalid)?;
        let mut dispatches = Vec::new();
        for (k, view) in views.iter().enumerate().filter(|(_, v)| v.count() > 0) {
            dispatches.push(strided::prepare(cx, x.buf, io.output(k)?.buf, size, view, Tuning::strided(cx.caps()))?);
        }
        Ok(PreparedStep { dispatches, plan: None })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = shape(inputs, 0, &self.name)?;
        let views = self.views(x).map_err(|e| format!("Split '{}': {e}", self.name))?;
        let copied: Vec<Strided> = views.into_iter().filter(|v| v.count() > 0).collect();
        let size = planned_size(self.ty, &self.name)?;
        views_plan(&format!("Split '{}'", self.name), x, &copied, size, Tuning::strided(caps), caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(split_sizes(7, None, Some(3), 3).unwrap(), vec![3, 3, 1]);
        assert_eq!(split_sizes(6, None, Some(3), 3).unwrap(), vec![2, 2, 2]);
        assert!(split_sizes(6, None, Some(4), 4).is_err());
        assert!(split_sizes(2, None, Some(3), 3).is_err());
        assert_eq!(split_sizes(6, None, None, 3).unwrap(), vec![2, 2, 2]);
        assert!(split_sizes(7, None, None, 3).is_err());
        assert_eq!(split_sizes(5, Some(&[2, 0, 3]), None, 3).unwrap(), vec![2, 0, 3]);
        assert!(split_sizes(5, Some(&[2, 2]), None, 3).is_err());
        assert!(split_sizes(5, Some(&[6, -1]), None, 2).is_err());
        assert_eq!(split_sizes(0, Some(&[0, 0]), None, 2).unwrap(), vec![0, 0]);
    }
}

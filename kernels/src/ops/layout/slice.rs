//! Slice: starts, ends, axes and steps are read at build time (attributes before opset 10,
//! constant int32/int64 inputs after), then each run's shape resolves them with ONNX's
//! clamping into a strided view: a start offset and a (possibly negative) step per axis.

use super::shader::{variants, Pattern};
use super::strided::{self, contiguous, Strided, Tuning};
use super::{check_common, const_input, declared, elem_size, planned_size, shape, views_plan};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::{normalize_axis, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::ShaderVariant;

pub struct SliceDef;

impl OpDef for SliceDef {
    fn names(&self) -> &'static [&'static str] {
        &["Slice"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        let spec = SliceSpec::of(node)?;
        if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            spec.axes(rank)?;
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(SliceKernel { name: node.name.clone(), spec: SliceSpec::of(node)?, ty: declared(node, 0) }))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Strided])
    }
}

/// A Slice's parameters as the node gives them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    pub starts: Vec<i64>,
    pub ends: Vec<i64>,
    pub axes: Option<Vec<i64>>,
    pub steps: Option<Vec<i64>>,
}

impl SliceSpec {
    pub fn of(node: &Node) -> Result<SliceSpec, String> {
        let spec = if node.since_version < 10 {
            let attr = |name: &str| node.ints(name).map(<[i64]>::to_vec);
            SliceSpec {
                starts: attr("starts").ok_or("Slice without starts")?,
                ends: attr("ends").ok_or("Slice without ends")?,
                axes: attr("axes"),
                steps: None,
            }
        } else {
            SliceSpec {
                starts: const_input(node, 1, "starts")?.ok_or("Slice without starts")?,
                ends: const_input(node, 2, "ends")?.ok_or("Slice without ends")?,
                axes: const_input(node, 3, "axes")?,
                steps: const_input(node, 4, "steps")?,
            }
        };
        let n = spec.starts.len();
        let lens = [Some(spec.ends.len()), spec.axes.as_ref().map(Vec::len), spec.steps.as_ref().map(Vec::len)];
        if lens.into_iter().flatten().any(|l| l != n) {
            return Err(format!("Slice starts, ends, axes and steps differ in length ({spec:?})"));
        }
        if spec.steps.as_ref().is_some_and(|s| s.contains(&0)) {
            return Err("Slice step 0".into());
        }
        Ok(spec)
    }

    /// The sliced axes at `rank`, checked in range and distinct.
    fn axes(&self, rank: usize) -> Result<Vec<usize>, String> {
        let axes: Vec<usize> = match &self.axes {
            None => (0..self.starts.len()).map(|a| normalize_axis(a as i64, rank)).collect::<Result<_, _>>()?,
            Some(axes) => axes.iter().map(|&a| normalize_axis(a, rank)).collect::<Result<_, _>>()?,
        };
        let mut seen = vec![false; rank];
        for &a in &axes {
            if std::mem::replace(&mut seen[a], true) {
                return Err(format!("Slice axis {a} is repeated"));
            }
        }
        Ok(axes)
    }

    /// The strided view of an input of `shape` that the slice reads.
    pub fn view(&self, shape: &[u64]) -> Result<Strided, String> {
        let strides = contiguous(shape);
        let mut view = Strided { dims: shape.to_vec(), strides: strides.clone(), base: 0 };
        for (k, a) in self.axes(shape.len())?.into_iter().enumerate() {
            let step = self.steps.as_ref().map_or(1, |s| s[k]);
            let (start, len) = slice_axis(shape[a], self.starts[k], self.ends[k], step);
            view.dims[a] = len;
            view.strides[a] = strides[a].wrapping_mul(step);
            if len > 0 {
                view.base += start * strides[a] as u64;
            }
        }
        Ok(view)
    }
}

/// The first index and the length of one sliced axis of size `dim`, with ONNX's rules:
/// negative starts and ends count from the end, then clamp to `[0, dim]` (step > 0) or
/// `[0, dim-1]` / `[-1, dim-1]` (step < 0), so the INT64_MAX/MIN sentinels mean "to the end".
/// `step` must not be 0.
pub fn slice_axis(dim: u64, start: i64, end: i64, step: i64) -> (u64, u64) {
    let dim = i128::from(dim);
    let wrap = |v: i64| if v < 0 { i128::from(v) + dim } else { i128::from(v) };
    let (start, end, step) = (wrap(start), wrap(end), i128::from(step));
    let (start, span) = if step > 0 {
        let start = start.max(0).min(dim);
        (start, end.max(0).min(dim) - start)
    } else {
        let start = start.max(0).min(dim - 1);
        (start, start - end.max(-1).min(dim - 1))
    };
    let len = if span > 0 { (span + step.abs() - 1) / step.abs() } else { 0 };
    (start.max(0) as u64, len as u64)
}

#[derive(Clone, Debug)]
struct SliceKernel {
    name: String,
    spec: SliceSpec,
    ty: Option<ElemType>,
}

impl Kernel for SliceKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let view = self.spec.view(shape(inputs, 0, &self.name)?).map_err(|e| format!("Slice '{}': {e}", self.name))?;
        Ok(vec![view.dims])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let x = io.input(0)?;
        let view = self.spec.view(x.shape).map_err(GpuError::Invalid)?;
        let size = elem_size(io, 0)?;
        Ok(PreparedStep::one(strided::prepare(cx, x.buf, io.output(0)?.buf, size, &view, Tuning::strided(cx.caps()))?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = shape(inputs, 0, &self.name)?;
        let view = self.spec.view(x).map_err(|e| format!("Slice '{}': {e}", self.name))?;
        let size = planned_size(self.ty, &self.name)?;
        views_plan(&format!("Slice '{}'", self.name), x, &[view], size, Tuning::strided(caps), caps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamping() {
        const MAX: i64 = i64::MAX;
        const MIN: i64 = i64::MIN;
        assert_eq!(slice_axis(10, 1, 4, 1), (1, 3));
        assert_eq!(slice_axis(10, -3, MAX, 1), (7, 3));
        assert_eq!(slice_axis(10, 0, 1000, 3), (0, 4));
        assert_eq!(slice_axis(10, 1000, 1000, 1), (10, 0));
        assert_eq!(slice_axis(10, -1000, 2, 1), (0, 2));
        assert_eq!(slice_axis(10, MAX, MIN, -1), (9, 10));
        assert_eq!(slice_axis(10, -1, -1000, -3), (9, 4));
        assert_eq!(slice_axis(10, 5, 5, -1), (5, 0));
        assert_eq!(slice_axis(10, 2, 7, -1), (2, 0));
        assert_eq!(slice_axis(0, 0, 5, 1), (0, 0));
        assert_eq!(slice_axis(0, MAX, MIN, -1), (0, 0));
        assert_eq!(slice_axis(10, 0, 10, MIN), (0, 0));
        assert_eq!(slice_axis(10, 9, MIN, MIN), (9, 1));
    }

    #[test]
    fn views() {
        let spec =
            SliceSpec { starts: vec![-1, 1], ends: vec![MIN_, 3], axes: Some(vec![-1, 0]), steps: Some(vec![-2, 1]) };
        let view = spec.view(&[4, 5]).unwrap();
        assert_eq!(view, Strided { dims: vec![2, 3], strides: vec![5, -2], base: 5 + 4 });
        let repeated = SliceSpec { starts: vec![0, 0], ends: vec![1, 1], axes: Some(vec![1, -1]), steps: None };
        assert!(repeated.view(&[4, 5]).is_err());
        let out_of_range = SliceSpec { starts: vec![0], ends: vec![1], axes: Some(vec![2]), steps: None };
        assert!(out_of_range.view(&[4, 5]).is_err());
    }

    const MIN_: i64 = i64::MIN;
}

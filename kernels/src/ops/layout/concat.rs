//! Concat: every dispatch covers the whole output and binds up to [`CONCAT_INPUTS`] inputs;
//! output elements of inputs bound by another dispatch keep their value. So each invocation
//! owns whole output words (no race on packed bool/f16 words), and a Concat of a few inputs
//! is a single dispatch.

use bytemuck::{Pod, Zeroable};

use super::shader::{variants, LayoutSource, Pattern, CONCAT_INPUTS};
use super::strided::check_extent;
use super::{check_common, declared, elem_size, planned_size};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::{grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::GpuBuffer;
use crate::shader::ShaderVariant;

pub struct ConcatDef;

/// The axis attribute (required from opset 4; opset 1 defaulted to 1).
fn axis_of(node: &Node) -> Result<i64, String> {
    node.int("axis").or((node.since_version < 4).then_some(1)).ok_or_else(|| "Concat without axis".to_string())
}

impl OpDef for ConcatDef {
    fn names(&self) -> &'static [&'static str] {
        &["Concat"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        let axis = axis_of(node)?;
        if node.inputs.iter().any(|v| v.as_ref().is_none_or(|v| v.name.is_empty())) {
            return Err("Concat with an omitted input".into());
        }
        if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            normalize_axis(axis, rank)?;
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ConcatKernel { name: node.name.clone(), axis: axis_of(node)?, ty: declared(node, 0) }))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Concat])
    }
}

/// The output shape of concatenating `shapes` along `axis`.
pub fn concat_shape(shapes: &[&[u64]], axis: i64) -> Result<(Vec<u64>, usize), String> {
    let first = shapes.first().ok_or("Concat has no inputs")?;
    let a = normalize_axis(axis, first.len())?;
    let mut out = first.to_vec();
    out[a] = 0;
    for s in shapes {
        let same = s.len() == first.len() && s.iter().zip(*first).enumerate().all(|(d, (x, y))| d == a || x == y);
        if !same {
            return Err(format!("input shapes {first:?} and {s:?} differ off axis {axis}"));
        }
        out[a] += s[a];
    }
    Ok((out, a))
}

/// Concat's uniforms (mirrors `layout_concat.wgsl.j2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ConcatParams {
    count: u32,
    words: u32,
    run: u32,
    items: u32,
    inner: u32,
    axis: u32,
    pad: [u32; 2],
    first: [u32; CONCAT_INPUTS],
    len: [u32; CONCAT_INPUTS],
}

#[derive(Clone, Debug)]
struct ConcatKernel {
    name: String,
    axis: i64,
    ty: Option<ElemType>,
}

impl Kernel for ConcatKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let shapes = inputs
            .iter()
            .map(|s| s.ok_or_else(|| format!("Concat '{}' has an unbound input", self.name)))
            .collect::<Result<Vec<_>, _>>()?;
        let (out, _) = concat_shape(&shapes, self.axis).map_err(|e| format!("Concat '{}': {e}", self.name))?;
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let inputs = (0..io.inputs.len()).map(|i| io.input(i)).collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<&[u64]> = inputs.iter().map(|t| t.shape).collect();
        let out = io.output(0)?;
        let mut dispatches = Vec::new();
        for (planned, parts) in self.dispatches(&shapes, elem_size(io, 0)?, cx.caps())? {
            // Unused slots bind the first input again, with length 0.
            let bufs: Vec<&GpuBuffer> =
                (0..CONCAT_INPUTS).map(|k| inputs[*parts.get(k).unwrap_or(&parts[0])].buf).collect();
            dispatches.push(planned.bind(cx.gpu, &bufs, &[out.buf])?);
        }
        Ok(PreparedStep { dispatches, plan: None })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let shapes: Vec<&[u64]> = inputs.iter().flatten().copied().collect();
        let size = planned_size(self.ty, &self.name)?;
        let err = |e: GpuError| format!("Concat '{}': {e}", self.name);
        let planned: Vec<OpDispatch> =
            self.dispatches(&shapes, size, caps).map_err(err)?.into_iter().map(|(d, _)| d).collect();
        let line = format!("Concat '{}': {} inputs -> {out:?}", self.name, shapes.len());
        Ok(Some(step_plan(line, format!("up to {CONCAT_INPUTS} inputs per dispatch"), &planned)))
    }
}

impl ConcatKernel {
    /// One dispatch per [`CONCAT_INPUTS`] non-empty inputs, each with the inputs it binds: what
    /// `prepare` binds and `plan` reports.
    fn dispatches(
        &self,
        shapes: &[&[u64]],
        size: u64,
        caps: &DeviceCaps,
    ) -> Result<Vec<(OpDispatch, Vec<usize>)>, GpuError> {
        let (out_shape, a) = concat_shape(shapes, self.axis).map_err(GpuError::Invalid)?;
        let count: u64 = out_shape.iter().product();
        check_extent(caps, "Concat output", count, size)?;
        let (words, run) = (LayoutSource::words(size, count), LayoutSource::run(caps));
        let items = words.div_ceil(run);
        let base = ConcatParams {
            count: to_u32("Concat output", count)?,
            words: to_u32("Concat output", words)?,
            run: run as u32,
            items: to_u32("Concat output", items)?,
            inner: to_u32("Concat inner", out_shape[a + 1..].iter().product())?,
            axis: to_u32("Concat axis", out_shape[a])?,
            pad: [0; 2],
            first: [0; CONCAT_INPUTS],
            len: [0; CONCAT_INPUTS],
        };
        // Each non-empty input with its offset along the axis.
        let mut first = 0u64;
        let mut parts: Vec<(usize, u64)> = Vec::new();
        for (i, s) in shapes.iter().enumerate() {
            let elems: u64 = s.iter().product();
            if elems > 0 {
                check_extent(caps, "Concat input", elems, size)?;
                parts.push((i, first));
            }
            first += s[a];
        }
        let variant = LayoutSource::variant(Pattern::Concat, size);
        let grid = grid_for(items, caps)?;
        let mut dispatches = Vec::new();
        for chunk in parts.chunks(CONCAT_INPUTS) {
            let mut params = base;
            for (k, &(i, first)) in chunk.iter().enumerate() {
                params.first[k] = to_u32("Concat axis", first)?;
                params.len[k] = to_u32("Concat axis", shapes[i][a])?;
            }
            let bound = chunk.iter().map(|&(i, _)| i).collect();
            dispatches.push((OpDispatch::new(variant.clone(), &params, grid), bound));
        }
        Ok(dispatches)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(concat_shape(&[&[2, 3], &[2, 0], &[2, 4]], -1).unwrap(), (vec![2, 7], 1));
        assert_eq!(concat_shape(&[&[2, 3], &[1, 3]], 0).unwrap(), (vec![3, 3], 0));
        assert!(concat_shape(&[&[2, 3], &[1, 3]], 1).is_err());
        assert!(concat_shape(&[&[2, 3], &[2, 3, 1]], 0).is_err());
        assert!(concat_shape(&[&[2, 3]], 2).is_err());
    }
}

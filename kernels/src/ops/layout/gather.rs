//! Gather along one axis with int32 or int64 indices, computed at run time or constant.
//!
//! ONNX Runtime's CPU EP fails a run whose index is out of range. So do we: a check dispatch
//! (`ops::check`) flags the run's status word and the executor fails the run naming the node;
//! the gather itself reads nothing out of range (it writes zeros there). Constant indices are
//! checked at placement, so such a node stays on the CPU EP and fails there as without us.

use bytemuck::{Pod, Zeroable};

use super::shader::{variants, LayoutSource, Pattern};
use super::strided::check_extent;
use super::{check_common, const_ints, declared, planned_size, present, shape};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::{grid_for, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::ShaderVariant;

pub struct GatherDef;

impl OpDef for GatherDef {
    fn names(&self) -> &'static [&'static str] {
        &["Gather"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_common(node, opts)?;
        let indices = present(node, 1).ok_or("Gather without indices")?;
        if ![ElemType::I32.onnx(), ElemType::I64.onnx()].contains(&indices.elem_type) {
            return Err(format!("Gather indices '{}' of element type {}", indices.name, indices.elem_type));
        }
        let axis = node.int("axis").unwrap_or(0);
        let Some(data) = node.input(0).and_then(|v| v.shape.as_ref()) else { return Ok(()) };
        let a = normalize_axis(axis, data.len())?;
        let n = data.get(a).and_then(|d| d.fixed());
        if let (Some(n), Some(values)) = (n, indices.constant.then(|| const_ints(indices)).flatten()) {
            let n = n as i64;
            if let Some(bad) = values.iter().find(|&&i| i < -n || i >= n) {
                return Err(format!("Gather index {bad} is out of range for an axis of size {n}"));
            }
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(GatherKernel {
            name: node.name.clone(),
            axis: node.int("axis").unwrap_or(0),
            ty: declared(node, 0),
            index_ty: declared(node, 1),
        }))
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(&[Pattern::Gather { i64: false }, Pattern::Gather { i64: true }])
    }
}

/// Gather's output shape and its axis: `data[..axis] ++ indices ++ data[axis + 1..]`.
pub fn gather_shape(data: &[u64], indices: &[u64], axis: i64) -> Result<(Vec<u64>, usize), String> {
    let a = normalize_axis(axis, data.len())?;
    let count: u64 = indices.iter().product();
    if data[a] == 0 && count > 0 {
        return Err(format!("{count} indices into an empty axis {axis} of {data:?}"));
    }
    let out = data[..a].iter().chain(indices).chain(&data[a + 1..]).copied().collect();
    Ok((out, a))
}

/// Gather's uniforms (mirrors `layout_gather.wgsl.j2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct GatherParams {
    count: u32,
    words: u32,
    run: u32,
    items: u32,
    inner: u32,
    axis_len: u32,
    indices: u32,
    pad: u32,
}

#[derive(Clone, Debug)]
struct GatherKernel {
    name: String,
    axis: i64,
    ty: Option<ElemType>,
    index_ty: Option<ElemType>,
}

impl Kernel for GatherKernel {
    fn checks(&self) -> bool {
        true
    }

    /// Indices handed in host memory (a decoder's token ids) are checked there.
    fn host_checked(&self) -> &'static [usize] {
        &[1]
    }

    fn host_check(&self, inputs: &[Option<&[u64]>], _: &[&[u64]], values: &[&[i64]]) -> Result<(), String> {
        let data = shape(inputs, 0, &self.name)?;
        let axis_len = data[normalize_axis(self.axis, data.len())?];
        crate::ops::check::host_indices(values, axis_len, self.check_message())
    }

    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let (data, indices) = (shape(inputs, 0, &self.name)?, shape(inputs, 1, &self.name)?);
        let (out, _) = gather_shape(data, indices, self.axis).map_err(|e| format!("Gather '{}': {e}", self.name))?;
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (data, indices, out) = (io.input(0)?, io.input(1)?, io.output(0)?);
        let [check, gather] =
            self.dispatches(data.shape, indices.shape, data.ty.size(), indices.ty, cx.caps(), cx.status_code)?;
        Ok(PreparedStep {
            dispatches: vec![
                check.bind(cx.gpu, &[indices.buf], &[cx.status])?,
                gather.bind(cx.gpu, &[data.buf, indices.buf], &[out.buf])?,
            ],
            plan: None,
        })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let (data, indices) = (shape(inputs, 0, &self.name)?, shape(inputs, 1, &self.name)?);
        let size = planned_size(self.ty, &self.name)?;
        let index_ty =
            self.index_ty.ok_or_else(|| format!("Gather '{}': its indices' type is not declared", self.name))?;
        let planned = self
            .dispatches(data, indices, size, index_ty, caps, 0)
            .map_err(|e| format!("Gather '{}': {e}", self.name))?;
        let line = format!("Gather '{}': {data:?} by {indices:?} on axis {}", self.name, self.axis);
        Ok(Some(step_plan(line, "index check, then the gather", &planned)))
    }
}

impl GatherKernel {
    /// The index check and the gather: what `prepare` binds and `plan` reports.
    fn dispatches(
        &self,
        data: &[u64],
        indices: &[u64],
        size: u64,
        index_ty: ElemType,
        caps: &DeviceCaps,
        code: u32,
    ) -> Result<[OpDispatch; 2], GpuError> {
        let (out_shape, a) = gather_shape(data, indices, self.axis).map_err(GpuError::Invalid)?;
        let i64 = match index_ty {
            ElemType::I64 => true,
            ElemType::I32 => false,
            other => return Err(GpuError::Invalid(format!("Gather indices of type {other}"))),
        };
        let index_count: u64 = indices.iter().product();
        check_extent(caps, "Gather data", data.iter().product(), size)?;
        check_extent(caps, "Gather indices", index_count, index_ty.size())?;
        let count: u64 = out_shape.iter().product();
        check_extent(caps, "Gather output", count, size)?;
        // The kernel wraps indices in i32.
        let axis_len = data[a];
        if axis_len > i32::MAX as u64 {
            return Err(crate::PlanError::IndexOverflow { what: "Gather axis", value: axis_len }.into());
        }
        let (words, run) = (LayoutSource::words(size, count), LayoutSource::run(caps));
        let items = words.div_ceil(run);
        let params = GatherParams {
            count: to_u32("Gather output", count)?,
            words: to_u32("Gather output", words)?,
            run: run as u32,
            items: to_u32("Gather output", items)?,
            inner: to_u32("Gather inner", data[a + 1..].iter().product())?,
            axis_len: axis_len as u32,
            indices: to_u32("Gather indices", index_count)?,
            pad: 0,
        };
        let variant = LayoutSource::variant(Pattern::Gather { i64 }, size);
        let check = crate::ops::check::plan(caps, index_ty, index_count, axis_len, code)?;
        Ok([check, OpDispatch::new(variant, &params, grid_for(items, caps)?)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(gather_shape(&[5, 4, 3], &[2, 7], 1).unwrap(), (vec![5, 2, 7, 3], 1));
        assert_eq!(gather_shape(&[5, 4, 3], &[], -1).unwrap(), (vec![5, 4], 2));
        assert_eq!(gather_shape(&[5, 0], &[0], 1).unwrap(), (vec![5, 0], 1));
        assert!(gather_shape(&[5, 0], &[1], 1).is_err());
        assert!(gather_shape(&[5], &[1], 1).is_err());
        assert!(gather_shape(&[], &[1], 0).is_err());
    }
}

//! Pooling: MaxPool, AveragePool (count_include_pad), GlobalMaxPool and GlobalAveragePool over
//! 1 to 3 spatial axes, in f32 and f16. One generated kernel (`wgsl/pool.wgsl.j2`) visits each
//! output's window; a global pool is the same kernel with a window of the whole input, or,
//! over planes of at least [`GLOBAL_ROW_MIN`] elements, one workgroup per plane
//! (`wgsl/pool_global.wgsl.j2`). Windows of more than 4096 positions, or of 256 where the outputs
//! are fewer than 1024, take a workgroup per output (`norm::wide_walks`).
//! MaxPool's optional Indices output is declined.

pub mod geometry;

use bytemuck::{Pod, Zeroable};

pub use geometry::{PoolAttrs, PoolGeometry};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, check_cpu_loops, float_types, input_type, wide_walks};
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, check_types, grid, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// Shortest plane a global pool shares among a workgroup (ResNet's 7×7 planes take one
/// invocation each; MobileNet's squeeze-excite pools over 28×28 and 14×14 planes share).
pub const GLOBAL_ROW_MIN: u64 = 128;
/// Invocations per plane of the shared global pool.
pub const GLOBAL_THREADS: u32 = 64;

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&PoolDef];

struct PoolDef;

impl OpDef for PoolDef {
    fn names(&self) -> &'static [&'static str] {
        &["MaxPool", "AveragePool", "GlobalMaxPool", "GlobalAveragePool"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        if node.output(1).is_some_and(|v| !v.name.is_empty()) {
            return Err("MaxPool's Indices output is not supported".into());
        }
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        if node.op_type == "MaxPool" && node.since_version < 8 && node.attrs.contains_key("storage_order") {
            return Err("MaxPool storage_order is not supported".into());
        }
        let kernel = PoolKernel::of(node)?;
        kernel.attrs.validate().map_err(|e| format!("{} '{}': {e}", node.op_type, node.name))?;
        if let Some(x) = node.input(0).and_then(|v| v.fixed_shape()) {
            kernel.attrs.resolve(&x).map_err(|e| format!("{} '{}': {e}", node.op_type, node.name))?;
        } else if let Some(r) = node.input(0).and_then(|v| v.rank()) {
            if !(3..=5).contains(&r) {
                return Err(format!("{} of rank {r} is not supported (1 to 3 spatial axes)", node.op_type));
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(PoolKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let x = node.input(0)?.fixed_shape()?;
        let g = PoolAttrs::of(node).resolve(&x).ok()?;
        Some((g.out_elems() * g.window()) as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out = Vec::new();
        for ty in float_types(caps) {
            for max in [true, false] {
                for (threads, wide) in [(None, false), (Some(GLOBAL_THREADS), false), (None, true)] {
                    out.push(ShaderVariant::Op(OpShader::new(PoolSource { max, ty, threads, wide })));
                }
            }
        }
        out
    }
}

/// One pooling node.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolKernel {
    pub name: String,
    pub max: bool,
    pub ty: ElemType,
    pub include_pad: bool,
    pub attrs: PoolAttrs,
}

impl PoolKernel {
    pub fn of(node: &Node) -> Result<PoolKernel, String> {
        let ty = input_type(node, 0, "X")?;
        if !ty.is_float() {
            return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
        }
        Ok(PoolKernel {
            name: node.name.clone(),
            max: node.op_type.ends_with("MaxPool"),
            ty,
            include_pad: node.int("count_include_pad").unwrap_or(0) != 0,
            attrs: PoolAttrs::of(node),
        })
    }

    fn op(&self) -> &'static str {
        match (self.attrs.global, self.max) {
            (true, true) => "GlobalMaxPool",
            (true, false) => "GlobalAveragePool",
            (false, true) => "MaxPool",
            (false, false) => "AveragePool",
        }
    }

    fn geometry(&self, x: &[u64]) -> Result<PoolGeometry, String> {
        self.attrs.resolve(x).map_err(|e| format!("{} '{}': {e}", self.op(), self.name))
    }
}

impl Kernel for PoolKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let x =
            inputs.first().copied().flatten().ok_or_else(|| format!("{} '{}' has no input", self.op(), self.name))?;
        Ok(vec![self.geometry(x)?.out_shape])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, y) = (io.input(0)?, io.output(0)?);
        check_bindings(&[x, y], cx.caps())?;
        let (planned, _) = self.dispatch(x.shape, cx.caps())?;
        Ok(PreparedStep::one(planned.bind(cx.gpu, &[x.buf], &[y.buf])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let x = inputs.first().copied().flatten().unwrap_or_default();
        let what = format!("{} '{}'", self.op(), self.name);
        let (planned, rows) = self.dispatch(x, caps).map_err(|e| format!("{what}: {e}"))?;
        let tiling = match (rows, self.attrs.global) {
            (false, _) => "one invocation per output",
            (true, true) => "one workgroup per plane",
            (true, false) => "one workgroup per output",
        };
        Ok(Some(step_plan(format!("{what}: {x:?} -> {out:?}"), tiling, &[planned])))
    }
}

impl PoolKernel {
    /// The kernel pooling X of `shape` and whether it runs a workgroup per plane (a global pool
    /// over large planes) or per output (a large window): what `prepare` binds and `plan` reports.
    fn dispatch(&self, shape: &[u64], caps: &DeviceCaps) -> Result<(OpDispatch, bool), GpuError> {
        let g = self.geometry(shape).map_err(GpuError::Invalid)?;
        to_u32("pool input elements", shape.iter().product())?;
        let count = g.out_elems();
        let plane = g.window();
        // A workgroup's invocation walks every 64th position of a plane or window; an
        // invocation alone, all of its window.
        let shared = self.attrs.global && plane >= GLOBAL_ROW_MIN || wide_walks(count, plane);
        let walk = if shared { plane.div_ceil(u64::from(GLOBAL_THREADS)) } else { plane };
        check_cpu_loops(caps, || format!("{} '{}' over windows of {plane}", self.op(), self.name), walk)?;
        if self.attrs.global && plane >= GLOBAL_ROW_MIN {
            let params = [to_u32("pool planes", g.planes)?, to_u32("pool plane", plane)?, 0, 0];
            let source = PoolSource { max: self.max, ty: self.ty, threads: Some(GLOBAL_THREADS), wide: false };
            let variant = ShaderVariant::Op(OpShader::new(source));
            return Ok((OpDispatch::new(variant, &params, grid(g.planes, caps)?), true));
        }
        let v4 = |a: [u32; 3]| [a[0], a[1], a[2], 0];
        let params = PoolParams {
            head: [to_u32("pool output elements", count)?, u32::from(self.include_pad), 0, 0],
            axes: [v4(g.input), v4(g.out), v4(g.kernel), v4(g.stride), v4(g.dilation), v4(g.pad_begin), v4(g.pad_end)],
        };
        // Large windows where the outputs are few: a workgroup per output (no invocation walks
        // more than `norm::STRIDED_MAX` positions; llvmpipe stops it after 65535 iterations).
        let wide = wide_walks(count, plane);
        let source = PoolSource { max: self.max, ty: self.ty, threads: None, wide };
        let variant = ShaderVariant::Op(OpShader::new(source));
        let grid = if wide { grid(count, caps)? } else { grid_for(count, caps)? };
        Ok((OpDispatch::new(variant, &params, grid), wide))
    }
}

/// The uniforms of `pool.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct PoolParams {
    head: [u32; 4],
    axes: [[u32; 4]; 7],
}

/// One pooling kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolSource {
    pub max: bool,
    pub ty: ElemType,
    /// `Some(invocations per plane)`: the shared global pool.
    pub threads: Option<u32>,
    /// A workgroup of [`GLOBAL_THREADS`] per output element, sharing its window.
    pub wide: bool,
}

impl OpSource for PoolSource {
    fn name(&self) -> String {
        let op = if self.max { "max" } else { "avg" };
        match (self.threads, self.wide) {
            (None, false) => format!("pool_{op}_{}", self.ty.name()),
            (None, true) => format!("pool_{op}_{}_wide_t{GLOBAL_THREADS}", self.ty.name()),
            (Some(t), _) => format!("pool_global_{op}_{}_t{t}", self.ty.name()),
        }
    }

    fn emit(&self) -> Result<String, String> {
        let (t, f16, max) = (self.ty.name(), self.ty == ElemType::F16, self.max);
        match self.threads {
            None if self.wide => {
                render("pool.wgsl.j2", minijinja::context! { t, f16, max, wide => true, threads => GLOBAL_THREADS })
            }
            None => render("pool.wgsl.j2", minijinja::context! { t, f16, max, wide => false }),
            Some(threads) => render("pool_global.wgsl.j2", minijinja::context! { t, f16, max, threads }),
        }
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

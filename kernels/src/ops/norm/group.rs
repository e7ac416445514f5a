//! GroupNormalization (opset 18: scale and bias per group; opset 21: per channel) and
//! InstanceNormalization (one group per channel) of X `[N, C, …]`: one workgroup per
//! (n, group) row (`norm_group.wgsl.j2`), statistics in f32 whatever `stash_type` says.

use bytemuck::{Pod, Zeroable};

use super::{check_bindings, float_types, input_type};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{required, step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, check_types, grid, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&GroupNormDef];

/// Invocations per row, and per row or chunk of whole vec4s (a spatial size that is a multiple of
/// 4): 64 one-element loads each had left an H100 streaming the UNet case's norms at a fraction of
/// its bandwidth.
pub const THREADS: u32 = 64;
pub const THREADS_V4: u32 = 256;

struct GroupNormDef;

impl OpDef for GroupNormDef {
    fn names(&self) -> &'static [&'static str] {
        &["GroupNormalization", "InstanceNormalization"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        let kernel = GroupNormKernel::of(node)?;
        let shapes: Option<Vec<Vec<u64>>> = (0..3).map(|i| node.input(i).and_then(|v| v.fixed_shape())).collect();
        if let Some(shapes) = shapes {
            let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| Some(s.as_slice())).collect();
            kernel.infer(&refs)?;
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(GroupNormKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(8.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out = Vec::new();
        for ty in float_types(caps) {
            for (v4, threads) in [(false, THREADS), (true, THREADS_V4)] {
                out.push(ShaderVariant::Op(OpShader::new(GroupNormSource { ty, threads, v4 })));
                for apply in [false, true] {
                    out.push(ShaderVariant::Op(OpShader::new(GroupNormSplitSource { ty, threads, apply, v4 })));
                }
            }
        }
        out
    }
}

/// One GroupNormalization or InstanceNormalization node. Inputs: X, scale, bias.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupNormKernel {
    pub name: String,
    pub op: &'static str,
    pub ty: ElemType,
    /// `None`: InstanceNormalization (a group per channel).
    pub groups: Option<u64>,
    pub epsilon: f32,
}

impl GroupNormKernel {
    pub fn of(node: &Node) -> Result<GroupNormKernel, String> {
        let ty = input_type(node, 0, "X")?;
        for (i, what) in [(1, "scale"), (2, "bias")] {
            if input_type(node, i, what)? != ty {
                return Err(format!("{} '{}': {what} has another element type than X", node.op_type, node.name));
            }
        }
        let (op, groups) = if node.op_type == "InstanceNormalization" {
            ("InstanceNormalization", None)
        } else {
            let g = node.int("num_groups").ok_or("GroupNormalization without num_groups")?;
            let g = u64::try_from(g).ok().filter(|&g| g > 0).ok_or(format!("num_groups {g} is not positive"))?;
            ("GroupNormalization", Some(g))
        };
        Ok(GroupNormKernel { name: node.name.clone(), op, ty, groups, epsilon: node.float("epsilon").unwrap_or(1e-5) })
    }

    /// `(groups, per_group)` for X `x` and scale/bias shapes.
    fn geometry(&self, x: &[u64], scale: &[u64], bias: &[u64]) -> Result<(u64, bool), String> {
        let err = |e: String| format!("{} '{}': {e}", self.op, self.name);
        if x.len() < 3 {
            return Err(err(format!("X {x:?} must be [N, C, spatial…]")));
        }
        let c = x[1];
        let groups = self.groups.unwrap_or(c);
        if c % groups != 0 {
            return Err(err(format!("{c} channels are not divisible by num_groups {groups}")));
        }
        if scale != bias {
            return Err(err(format!("scale {scale:?} and bias {bias:?} differ")));
        }
        match scale {
            [n] if *n == c => Ok((groups, false)),
            [n] if *n == groups => Ok((groups, true)),
            _ => Err(err(format!("scale {scale:?} must be [{c}] (or [{groups}] before opset 21)"))),
        }
    }
}

impl Kernel for GroupNormKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let get = |i: usize| {
            inputs.get(i).copied().flatten().ok_or_else(|| format!("{} '{}': input {i} is missing", self.op, self.name))
        };
        let x = get(0)?;
        self.geometry(x, get(1)?, get(2)?)?;
        Ok(vec![x.to_vec()])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, s, b, y) = (io.input(0)?, io.input(1)?, io.input(2)?, io.output(0)?);
        check_bindings(&[x, s, b, y], cx.caps())?;
        let Some(planned) = self.dispatch(x.shape, s.shape, b.shape, cx.caps())? else {
            return Ok(PreparedStep::default());
        };
        let dispatches = match &planned {
            Planned::Whole(d) => vec![d.bind(cx.gpu, &[x.buf, s.buf, b.buf], &[y.buf])?],
            Planned::Split { stats, apply, part_bytes, .. } => {
                let part = cx.gpu.storage_buffer(*part_bytes, "GroupNormalization chunk statistics")?;
                vec![
                    stats.bind(cx.gpu, &[x.buf], &[&part])?,
                    apply.bind(cx.gpu, &[x.buf, s.buf, b.buf, &part], &[y.buf])?,
                ]
            }
        };
        Ok(PreparedStep { dispatches, plan: None })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = self.infer(inputs)?.remove(0);
        let what = format!("{} '{}'", self.op, self.name);
        let planned = (|| self.dispatch(&x, required(inputs, 1)?, required(inputs, 2)?, caps))()
            .map_err(|e| format!("{what}: {e}"))?;
        Ok(planned.map(|p| match p {
            Planned::Whole(d) => step_plan(format!("{what}: {x:?}"), "one workgroup per group", &[d]),
            Planned::Split { stats, apply, chunks, .. } => {
                step_plan(format!("{what}: {x:?}"), format!("{chunks} chunks per group"), &[stats, apply])
            }
        }))
    }
}

/// Rows below which a long row is split over several workgroups (one per row would leave
/// most of a large GPU idle), the fewest elements per chunk, and the most chunks per row.
const SPLIT_ROWS: u64 = 256;
const MIN_CHUNK: u64 = 4096;
const MAX_CHUNKS: u64 = 256;

/// Chunks per row for `rows` rows of `len` elements (1: one workgroup per row).
pub fn chunks_for(rows: u64, len: u64) -> u64 {
    if rows >= SPLIT_ROWS {
        return 1;
    }
    (len / MIN_CHUNK).min(4 * SPLIT_ROWS / rows.max(1)).clamp(1, MAX_CHUNKS)
}

/// The dispatches of one step.
enum Planned {
    /// One workgroup per row.
    Whole(OpDispatch),
    /// Per-chunk statistics into a buffer of `part_bytes`, then per-chunk normalisation.
    Split { stats: OpDispatch, apply: OpDispatch, part_bytes: u64, chunks: u64 },
}

impl GroupNormKernel {
    /// The kernel at these shapes (`None` for an empty X): what `prepare` binds and `plan` reports.
    fn dispatch(&self, x: &[u64], s: &[u64], b: &[u64], caps: &DeviceCaps) -> Result<Option<Planned>, GpuError> {
        let (groups, per_group) = self.geometry(x, s, b).map_err(GpuError::Invalid)?;
        let elems: u64 = x.iter().product();
        if elems == 0 {
            return Ok(None);
        }
        let (n, c) = (x[0], x[1]);
        let spatial: u64 = x[2..].iter().product();
        to_u32("normalized elements", elems)?;
        let params = GroupNormParams {
            rows: to_u32("normalized rows", n * groups)?,
            len: to_u32("normalized row", c / groups * spatial)?,
            spatial: to_u32("spatial size", spatial)?,
            channels_per_group: to_u32("channels per group", c / groups)?,
            channels: to_u32("channels", c)?,
            per_group: u32::from(per_group),
            epsilon: self.epsilon,
            pad: 0,
        };
        let (rows, len) = (n * groups, c / groups * spatial);
        let v4 = spatial % 4 == 0;
        let threads = if v4 { THREADS_V4 } else { THREADS };
        let wanted = chunks_for(rows, len);
        if wanted <= 1 {
            let variant = ShaderVariant::Op(OpShader::new(GroupNormSource { ty: self.ty, threads, v4 }));
            return Ok(Some(Planned::Whole(OpDispatch::new(variant, &params, grid(rows, caps)?))));
        }
        // Chunks of whole vec4s where X is read as such.
        let chunk = len.div_ceil(wanted).next_multiple_of(if v4 { 4 } else { 1 });
        let chunks = len.div_ceil(chunk);
        let split = SplitParams {
            base: params,
            chunks: to_u32("group chunks", chunks)?,
            chunk: to_u32("group chunk", chunk)?,
            pad: [0; 2],
        };
        let source = |apply| ShaderVariant::Op(OpShader::new(GroupNormSplitSource { ty: self.ty, threads, apply, v4 }));
        let g = grid(rows * chunks, caps)?;
        Ok(Some(Planned::Split {
            stats: OpDispatch::new(source(false), &split, g),
            apply: OpDispatch::new(source(true), &split, g),
            part_bytes: rows * chunks * 3 * 4,
            chunks,
        }))
    }
}

/// The uniforms of `norm_group_split.wgsl.j2`: the whole kernel's, then the chunking.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct SplitParams {
    base: GroupNormParams,
    chunks: u32,
    chunk: u32,
    pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct GroupNormParams {
    rows: u32,
    len: u32,
    spatial: u32,
    channels_per_group: u32,
    channels: u32,
    per_group: u32,
    epsilon: f32,
    pad: u32,
}

/// The group-normalization kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupNormSource {
    pub ty: ElemType,
    pub threads: u32,
    /// X and Y as whole vec4s (a spatial size that is a multiple of 4).
    pub v4: bool,
}

/// A stage of the split group-normalization kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GroupNormSplitSource {
    pub ty: ElemType,
    pub threads: u32,
    /// `false`: chunk statistics; `true`: combine and normalise.
    pub apply: bool,
    /// X and Y as whole vec4s (spatial size and chunk multiples of 4).
    pub v4: bool,
}

impl OpSource for GroupNormSplitSource {
    fn name(&self) -> String {
        let stage = if self.apply { "apply" } else { "stats" };
        let v4 = if self.v4 { "_v4" } else { "" };
        format!("norm_group_{stage}_{}{v4}_t{}", self.ty.name(), self.threads)
    }

    fn emit(&self) -> Result<String, String> {
        let stage = if self.apply { "apply" } else { "stats" };
        render(
            "norm_group_split.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(), f16 => self.ty == ElemType::F16, threads => self.threads, stage, v4 => self.v4
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

impl OpSource for GroupNormSource {
    fn name(&self) -> String {
        let v4 = if self.v4 { "_v4" } else { "" };
        format!("norm_group_{}{v4}_t{}", self.ty.name(), self.threads)
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "norm_group.wgsl.j2",
            minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16, threads => self.threads, v4 => self.v4 },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn few_long_rows_are_split_into_chunks() {
        // UNet's 2 × 32 groups of 2 channels × 128²: 8 chunks of 4,096.
        assert_eq!(chunks_for(64, 32768), 8);
        assert_eq!(chunks_for(64, 4095), 1);
        assert_eq!(chunks_for(256, 1 << 20), 1);
        assert_eq!(chunks_for(1, 1 << 30), MAX_CHUNKS);
        assert_eq!(std::mem::size_of::<SplitParams>(), 48);
    }
}

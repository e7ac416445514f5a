//! LayerNormalization (opset 17) and RMSNormalization (opset 23): one workgroup per
//! normalized row (`norm_row.wgsl.j2`), statistics in f32 whatever `stash_type` says (at least
//! as accurate as asked), the row read twice, reduced through subgroup operations where the
//! device has them (one workgroup barrier instead of one per halving).
//!
//! Scale and bias broadcast onto X as ONNX allows: the usual operand covering exactly the
//! normalized dimensions indexes by the position in the row; any other broadcast (per-batch
//! scales, a scalar scale) takes the `bcast` variant, which walks the collapsed dimensions.

use bytemuck::{Pod, Zeroable};

use super::{
    broadcast_strides, broadcasts_onto, check_bindings, check_cpu_loops, float_types, input_type, packed,
    strip_leading_ones, RowTuning, WIDE_THREADS,
};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::planned::{required, step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{
    check_f16, check_types, grid, normalize_axis, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, Tensor,
};
use crate::runtime::GpuBuffer;
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&NormDef(NormKind::Layer), &NormDef(NormKind::Rms)];

/// Invocations per row: two subgroups on NVIDIA, enough loads in flight for rows of a few
/// thousand elements; on llvmpipe 64 ran rows of 384 and 1500 2-4x faster than 128 or 256
/// (fewer idle invocations, cheaper barriers).
pub const THREADS: u32 = 64;

/// Which normalisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// `(x - mean) / sqrt(var + eps) * scale + bias`.
    Layer,
    /// `x / sqrt(mean(x²) + eps) * scale`.
    Rms,
}

struct NormDef(NormKind);

impl OpDef for NormDef {
    fn names(&self) -> &'static [&'static str] {
        match self.0 {
            NormKind::Layer => &["LayerNormalization"],
            NormKind::Rms => &["RMSNormalization"],
        }
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &[ElemType::F32, ElemType::F16])?;
        check_f16(node, opts)?;
        NormKernel::of(node, self.0)?.check_shapes(node)
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        match self.0 {
            NormKind::Layer => vec![0, 1, 2],
            NormKind::Rms => vec![0, 1],
        }
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(NormKernel::of(node, self.0)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(8.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        variants(self.0, caps, false)
    }
}

/// The variants of `kind` on `caps`: RMS ones with statistics only when `rms_stats`
/// (SimplifiedLayerNormalization's optional inv_std_var).
pub(crate) fn variants(kind: NormKind, caps: &DeviceCaps, rms_stats: bool) -> Vec<ShaderVariant> {
    let sg = caps.subgroups;
    let mut out = Vec::new();
    for ty in float_types(caps) {
        for (bcast, v4) in [(false, false), (false, true), (true, false)] {
            let base = NormSource { kind, ty, bias: false, stats: None, bcast, v4, sg, threads: THREADS, skip: false };
            let stats =
                if ty == ElemType::F16 { vec![None, Some(ElemType::F32), Some(ty)] } else { vec![None, Some(ty)] };
            if kind == NormKind::Rms {
                if rms_stats {
                    out.extend(stats.iter().map(|&stats| NormSource { stats, ..base }));
                } else {
                    out.push(base);
                }
                continue;
            }
            for bias in [false, true] {
                out.extend(stats.iter().map(|&stats| NormSource { bias, stats, ..base }));
            }
        }
    }
    // Few long rows (a decode step's) take WIDE_THREADS with subgroup reductions.
    let wide =
        out.iter().filter(|s| sg && !s.bcast).map(|&s| NormSource { threads: WIDE_THREADS, ..s }).collect::<Vec<_>>();
    out.extend(wide);
    out.into_iter().map(|s| ShaderVariant::Op(OpShader::new(s))).collect()
}

impl NormKernel {
    /// Declines the node when its known rank or shapes cannot run.
    pub(crate) fn check_shapes(&self, node: &Node) -> Result<(), String> {
        if let Some(rank) = node.input(0).and_then(|v| v.rank()) {
            normalize_axis(self.axis, rank)?;
        }
        let shapes: Option<Vec<Vec<u64>>> =
            node.inputs.iter().take(self.inputs()).map(|v| v.as_ref().and_then(|v| v.fixed_shape())).collect();
        if let Some([x, scale, bias @ ..]) = shapes.as_deref() {
            let refs: Vec<Option<&[u64]>> = [x, scale].into_iter().chain(bias).map(|s| Some(s.as_slice())).collect();
            self.infer(&refs)?;
            self.geometry(x, scale, bias.first().map(Vec::as_slice)).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// One LayerNormalization or RMSNormalization node.
#[derive(Clone, Debug, PartialEq)]
pub struct NormKernel {
    pub name: String,
    pub kind: NormKind,
    pub ty: ElemType,
    pub axis: i64,
    pub epsilon: f32,
    pub bias: bool,
    /// Which of Y, Mean and InvStdDev the node lists (the step writes those, in order).
    pub outputs: [bool; 3],
    /// The type of Mean and InvStdDev when either is listed.
    pub stats: Option<ElemType>,
    pub tuning: RowTuning,
}

impl NormKernel {
    pub fn of(node: &Node, kind: NormKind) -> Result<NormKernel, String> {
        let ty = input_type(node, 0, "X")?;
        if !ty.is_float() {
            return Err(format!("{} of {} is not supported", node.op_type, ty.name()));
        }
        let bias = kind == NormKind::Layer && node.input(2).is_some_and(|v| !v.name.is_empty());
        let mut operands = vec![input_type(node, 1, "scale")?];
        if bias {
            operands.push(input_type(node, 2, "B")?);
        }
        let listed = |i: usize| node.output(i).filter(|v| !v.name.is_empty());
        let y = listed(0).ok_or_else(|| format!("{} '{}' without its output Y", node.op_type, node.name))?;
        operands.push(ElemType::from_onnx(y.elem_type).ok_or("unsupported type of Y")?);
        if operands.iter().any(|&t| t != ty) {
            return Err(format!("{} with mixed element types (X is {}) is not supported", node.op_type, ty.name()));
        }
        let outputs = [true, listed(1).is_some(), listed(2).is_some()];
        if kind == NormKind::Rms && (outputs[1] || outputs[2]) {
            return Err("RMSNormalization has one output".into());
        }
        let stat_types: Vec<i32> = (1..3).filter_map(listed).map(|v| v.elem_type).collect();
        let stats = match stat_types.first() {
            None => None,
            // ONNX types them float (or bfloat16); ONNX Runtime also accepts X's float16.
            Some(&code) if stat_types.iter().all(|&c| c == code) => match ElemType::from_onnx(code) {
                Some(t) if t == ElemType::F32 || t == ty => Some(t),
                _ => return Err(format!("Mean/InvStdDev of element type {code} are not supported")),
            },
            Some(_) => return Err("Mean and InvStdDev have different element types".into()),
        };
        Ok(NormKernel {
            name: node.name.clone(),
            kind,
            ty,
            axis: node.int("axis").unwrap_or(-1),
            epsilon: node.float("epsilon").unwrap_or(1e-5),
            bias,
            outputs,
            stats,
            tuning: RowTuning::new(THREADS),
        })
    }

    fn op(&self) -> &'static str {
        match self.kind {
            NormKind::Layer => "LayerNormalization",
            NormKind::Rms => "RMSNormalization",
        }
    }

    /// Inputs the step binds: X, scale and (LayerNormalization) B.
    fn inputs(&self) -> usize {
        if self.bias {
            3
        } else {
            2
        }
    }

    /// Rows, row length and how scale and bias are indexed, at these shapes.
    pub fn geometry(&self, x: &[u64], scale: &[u64], bias: Option<&[u64]>) -> Result<NormGeometry, GpuError> {
        let axis = normalize_axis(self.axis, x.len()).map_err(GpuError::Invalid)?;
        let rows = to_u32("LayerNormalization rows", x[..axis].iter().product())?;
        let n = to_u32("LayerNormalization row length", x[axis..].iter().product())?;
        to_u32("LayerNormalization elements", x.iter().product())?;
        let normalized = strip_leading_ones(&x[axis..]);
        let exact = std::iter::once(scale).chain(bias).all(|s| strip_leading_ones(s) == normalized);
        if exact {
            return Ok(NormGeometry { rows, n, dims: Vec::new() });
        }
        let s_str = broadcast_strides(scale, x);
        let b_str = bias.map(|b| broadcast_strides(b, x)).unwrap_or_else(|| vec![0; x.len()]);
        let mut dims: Vec<[u64; 3]> = Vec::new();
        for ((&d, &s), &b) in x.iter().zip(&s_str).zip(&b_str) {
            match dims.last_mut() {
                _ if d == 1 => {}
                Some(last) if last[1] == s * d && last[2] == b * d => *last = [last[0] * d, s, b],
                _ => dims.push([d, s, b]),
            }
        }
        if dims.len() > super::MAX_DIMS {
            return Err(GpuError::Invalid(format!(
                "{} broadcasts its scale or bias over more than {} separate dimensions",
                self.op(),
                super::MAX_DIMS
            )));
        }
        let dims = dims
            .into_iter()
            .map(|[d, s, b]| Ok([to_u32("a dimension", d)?, to_u32("a stride", s)?, to_u32("a stride", b)?]))
            .collect::<Result<_, GpuError>>()?;
        Ok(NormGeometry { rows, n, dims })
    }
}

/// How one normalisation runs at given shapes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormGeometry {
    pub rows: u32,
    pub n: u32,
    /// Empty when scale and bias cover exactly the row; else X's collapsed dimensions with the
    /// strides of scale and bias along them.
    pub dims: Vec<[u32; 3]>,
}

impl Kernel for NormKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let get = |i: usize| {
            inputs.get(i).copied().flatten().ok_or_else(|| format!("{} '{}' lacks input {i}", self.op(), self.name))
        };
        let x = get(0)?;
        let axis = normalize_axis(self.axis, x.len()).map_err(|e| format!("{} '{}': {e}", self.op(), self.name))?;
        for i in 1..self.inputs() {
            let s = get(i)?;
            if !broadcasts_onto(s, x) {
                let what = if i == 1 { "scale" } else { "B" };
                return Err(format!("{} '{}': {what} {s:?} does not broadcast onto X {x:?}", self.op(), self.name));
            }
        }
        let stats: Vec<u64> = x.iter().enumerate().map(|(d, &v)| if d < axis { v } else { 1 }).collect();
        let shapes = [x.to_vec(), stats.clone(), stats];
        Ok(shapes.into_iter().zip(self.outputs).filter(|(_, listed)| *listed).map(|(s, _)| s).collect())
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let (x, scale) = (io.input(0)?, io.input(1)?);
        let bias = if self.bias { Some(io.input(2)?) } else { None };
        let inputs: Vec<Tensor<'_>> = [x, scale].into_iter().chain(bias).collect();
        check_bindings(&inputs, cx.caps())?;
        check_bindings(&io.outputs, cx.caps())?;
        let planned = self.dispatch(x.shape, scale.shape, bias.map(|b| b.shape), cx.caps())?;
        let unused = if self.stats.is_some() { Some(cx.gpu.storage_buffer(16, "unused")?) } else { None };
        let outs = self.output_buffers(io, unused.as_ref())?;
        let inputs: Vec<&GpuBuffer> = inputs.iter().map(|t| t.buf).collect();
        Ok(PreparedStep::one(planned.bind(cx.gpu, &inputs, &outs)?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        self.infer(inputs)?;
        let what = format!("{} '{}'", self.op(), self.name);
        let planned = (|| {
            let bias = if self.bias { Some(required(inputs, 2)?) } else { None };
            self.dispatch(required(inputs, 0)?, required(inputs, 1)?, bias, caps)
        })()
        .map_err(|e| format!("{what}: {e}"))?;
        let line = format!("{what}: {:?}", required(inputs, 0).unwrap_or_default());
        Ok(Some(step_plan(line, "one workgroup per row", &[planned])))
    }
}

impl NormKernel {
    /// The row kernel at these shapes: what `prepare` binds and `plan` reports.
    fn dispatch(
        &self,
        x: &[u64],
        scale: &[u64],
        bias: Option<&[u64]>,
        caps: &DeviceCaps,
    ) -> Result<OpDispatch, GpuError> {
        let g = self.geometry(x, scale, bias)?;
        let (bcast, v4) = (!g.dims.is_empty(), g.dims.is_empty() && g.n % 4 == 0);
        let loads = if bcast {
            0
        } else if v4 {
            g.n / 4
        } else {
            g.n
        };
        let (threads, sg) = self.tuning.for_rows(g.rows, loads, caps)?;
        // Two passes over the row; a broadcast scale also walks its dimensions per element.
        let len = if v4 { g.n / 4 } else { g.n };
        let iterations = 2 * u64::from(len.div_ceil(threads)) * (1 + g.dims.len() as u64);
        check_cpu_loops(caps, || format!("{:?} '{}' over rows of {}", self.kind, self.name, g.n), iterations)?;
        let source = NormSource {
            kind: self.kind,
            ty: self.ty,
            bias: self.bias,
            stats: self.stats,
            bcast,
            v4,
            sg,
            threads,
            skip: false,
        };
        let variant = ShaderVariant::Op(OpShader::new(source));
        Ok(OpDispatch::new(variant, &self.params(&g)?, grid(u64::from(g.rows), caps)?))
    }
}

impl NormKernel {
    /// Y, then (when the kernel writes statistics) Mean and InvStdDev, `unused` standing in
    /// for the one the node does not list.
    fn output_buffers<'a>(
        &self,
        io: &'a KernelIo<'a>,
        unused: Option<&'a GpuBuffer>,
    ) -> Result<Vec<&'a GpuBuffer>, GpuError> {
        let mut listed = io.outputs.iter().map(|t| t.buf);
        let mut outs = vec![listed.next().ok_or_else(|| GpuError::Internal("Y is not bound".into()))?];
        if let Some(unused) = unused {
            for k in 1..3 {
                let buf = if self.outputs[k] { listed.next() } else { Some(unused) };
                outs.push(buf.ok_or_else(|| GpuError::Internal("a statistics output is not bound".into()))?);
            }
        }
        Ok(outs)
    }

    fn params(&self, g: &NormGeometry) -> Result<NormParams, GpuError> {
        let column = |c: usize| g.dims.iter().map(|d| d[c]).collect::<Vec<u32>>();
        Ok(NormParams {
            rows: g.rows,
            n: g.n,
            eps: self.epsilon,
            flags: u32::from(self.outputs[1]) | (u32::from(self.outputs[2]) << 1),
            nd: g.dims.len() as u32,
            pad: [0; 3],
            dims: packed(&column(0))?,
            s_str: packed(&column(1))?,
            b_str: packed(&column(2))?,
        })
    }
}

/// The uniforms of `norm_row.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(crate) struct NormParams {
    pub rows: u32,
    pub n: u32,
    pub eps: f32,
    pub flags: u32,
    pub nd: u32,
    /// `pad[0]`: skip's element count (vec4s with `v4`) in the skip kernels.
    pub pad: [u32; 3],
    pub dims: [[u32; 4]; 2],
    pub s_str: [[u32; 4]; 2],
    pub b_str: [[u32; 4]; 2],
}

/// One normalisation kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NormSource {
    pub kind: NormKind,
    pub ty: ElemType,
    pub bias: bool,
    /// The element type of Mean and InvStdDev, when the kernel writes them.
    pub stats: Option<ElemType>,
    /// Scale and bias index through the collapsed broadcast dimensions.
    pub bcast: bool,
    /// Rows are whole vec4s, loaded and stored as such (not with `bcast`).
    pub v4: bool,
    /// The row reduces through subgroup operations.
    pub sg: bool,
    pub threads: u32,
    /// The row is x + skip (+ an optional bias), whose sum the kernel may also write
    /// (SkipLayerNormalization, SkipSimplifiedLayerNormalization; with `stats`, not `bcast`).
    pub skip: bool,
}

impl OpSource for NormSource {
    fn name(&self) -> String {
        let kind = match self.kind {
            NormKind::Layer => "layer",
            NormKind::Rms => "rms",
        };
        let mut name = format!("norm_{kind}_{}", self.ty.name());
        if self.bias {
            name.push_str("_bias");
        }
        if let Some(st) = self.stats {
            name.push_str(&format!("_stats_{}", st.name()));
        }
        if self.bcast {
            name.push_str("_bcast");
        }
        if self.v4 {
            name.push_str("_v4");
        }
        if self.sg {
            name.push_str("_sg");
        }
        if self.skip {
            name.push_str("_skip");
        }
        name + &format!("_t{}", self.threads)
    }

    fn emit(&self) -> Result<String, String> {
        // x, [skip], scale, [bias], [skip bias], y, [mean, inv], [sum], params.
        let skip = u32::from(self.skip);
        let b_s = 1 + skip;
        let b_y = b_s + 1 + u32::from(self.bias) + skip;
        let b_p = b_y + if self.stats.is_some() { 3 } else { 1 } + skip;
        render(
            "norm_row.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(),
                f16 => self.ty == ElemType::F16 || self.stats == Some(ElemType::F16),
                rms => self.kind == NormKind::Rms,
                bias => self.bias,
                stats => self.stats.is_some(),
                st => self.stats.unwrap_or(ElemType::F32).name(),
                bcast => self.bcast,
                v4 => self.v4,
                sg => self.sg,
                threads => self.threads,
                skip => self.skip,
                b_s, b_y, b_p,
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        super::row_capabilities(&[self.ty, self.stats.unwrap_or(self.ty)], self.sg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(axis: i64, bias: bool) -> NormKernel {
        NormKernel {
            name: "ln".into(),
            kind: NormKind::Layer,
            ty: ElemType::F32,
            axis,
            epsilon: 1e-5,
            bias,
            outputs: [true, false, true],
            stats: Some(ElemType::F32),
            tuning: RowTuning::new(THREADS),
        }
    }

    #[test]
    fn shapes_and_stats() {
        let k = kernel(1, true);
        let got = k.infer(&[Some(&[2, 3, 5, 7]), Some(&[3, 5, 7]), Some(&[7])]).unwrap();
        assert_eq!(got, vec![vec![2, 3, 5, 7], vec![2, 1, 1, 1]]);
        assert!(k.infer(&[Some(&[2, 3, 5, 7]), Some(&[5, 5, 7]), Some(&[7])]).is_err());
        assert!(kernel(4, false).infer(&[Some(&[2, 3, 5, 7]), Some(&[7])]).is_err());
        let got = kernel(-4, false).infer(&[Some(&[2, 3, 5, 7]), Some(&[7])]).unwrap();
        assert_eq!(got[1], vec![1, 1, 1, 1]);
    }

    #[test]
    fn geometry_exact_and_broadcast() {
        let k = kernel(-1, true);
        let g = k.geometry(&[1, 1500, 384], &[384], Some(&[1, 1, 384])).unwrap();
        assert_eq!((g.rows, g.n, g.dims.len()), (1500, 384, 0));
        // A per-batch scale: X [2,3,4] axis 2, scale [2,1,4] → dims (2: s 4), (3: s 0), (4: s 1).
        let g = k.geometry(&[2, 3, 4], &[2, 1, 4], Some(&[4])).unwrap();
        assert_eq!(g.dims, vec![[2, 4, 0], [3, 0, 0], [4, 1, 1]]);
        // A scalar scale with a full bias collapses to one dimension.
        let g = kernel(1, true).geometry(&[2, 3, 4], &[1], Some(&[2, 3, 4])).unwrap();
        assert_eq!(g.dims, vec![[24, 0, 1]]);
    }
}

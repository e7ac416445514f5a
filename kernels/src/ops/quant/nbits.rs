//! MatMulNBits (com.microsoft): `Y = A × dequant(B)ᵀ (+ bias)` with B blockwise quantised along K,
//! as ONNX Runtime's CPU kernel computes it. B is uint8 `[N, k_blocks, blob]` (a block's
//! `block_size` values of `bits` bits, low bits first; the last block padded), scales one per
//! (column, block), zero points optional (packed uint8 or of A's type; absent: the middle of
//! the range, 2, 8 or 128 for 2, 4 or 8 bits): `w[n, k] = (q[n, k] - zp[n, k / bs]) * scale[n, k / bs]`. `accuracy_level`
//! is accepted (we always accumulate in f32); `g_idx` (act-order) is declined.

use bytemuck::{Pod, Zeroable};

use super::source::{
    chunk_values, LanesShape, NbitsKind, NbitsSource, ZeroPoints, GEMV_COLS, GEMV_ROWS, GEMV_WG_ROWS, LANES_COLS,
    LANES_MAX, LANES_UNROLL,
};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::gemm::{
    broadcast_layout, plan_gemm, GemmOptions, GemmPlan, GemmProblem, FLAG_RESIDUAL, FLAG_RESIDUAL_AFTER_ACT,
    FLAG_RESIDUAL_MUL,
};
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::float_types;
use crate::ops::planned::{step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, grid, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, Tensor};
use crate::runtime::{GemmBindings, GpuBuffer};
use crate::shader::{OpShader, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&NbitsDef];

/// Rows and columns of Y per workgroup of the tiled kernel.
const TILE: u64 = 64;

/// Inputs by index.
const A: usize = 0;
const B: usize = 1;
const SCALES: usize = 2;
const ZERO_POINTS: usize = 3;
const G_IDX: usize = 4;
const BIAS: usize = 5;
/// A fused gate's operand, after the node's own inputs.
pub const GATE: usize = 6;

struct NbitsDef;

impl OpDef for NbitsDef {
    fn names(&self) -> &'static [&'static str] {
        &["MatMulNBits"]
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_f16(node, opts)?;
        let kernel = NbitsKernel::of(node)?;
        crate::ops::infer_declared(node, &kernel, BIAS + 1)
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(NbitsKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let a = node.input(A)?.fixed_shape()?;
        let n = node.int("N")?;
        Some(2.0 * a.iter().product::<u64>() as f64 * n as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out = Vec::new();
        for kind in [NbitsKind::Gemv, NbitsKind::Lanes, NbitsKind::Tiled, NbitsKind::Dequant] {
            let shapes: Vec<LanesShape> = match (kind, lanes_for(caps)) {
                (NbitsKind::Lanes, Some(l)) => LANES_COLS.iter().map(|&c| LanesShape::new(l, c)).collect(),
                (NbitsKind::Lanes, None) => continue,
                _ => vec![LanesShape::default()],
            };
            for ty in float_types(caps) {
                for bits in [2, 4, 8] {
                    if kind == NbitsKind::Lanes && !LANES_BITS.contains(&bits) {
                        continue;
                    }
                    for zp in ZeroPoints::ALL {
                        for &rows in NbitsSource::rows_for(kind) {
                            for &kn in NbitsSource::layouts_for(kind) {
                                for &lanes in &shapes {
                                    let source = NbitsSource { kind, ty, bits, zp, rows, kn, lanes };
                                    out.push(ShaderVariant::Op(OpShader::new(source)));
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// One MatMulNBits node.
#[derive(Clone, Debug, PartialEq)]
pub struct NbitsKernel {
    pub name: String,
    pub ty: ElemType,
    pub k: u64,
    pub n: u64,
    pub bits: u32,
    pub block: u64,
    pub zp: ZeroPoints,
    pub bias: bool,
    /// A fused SiLU after the bias (the exported `Mul(y, Sigmoid(y))`).
    pub silu: bool,
    /// A fused gate: the result times input [`GATE`] (Y's shape; SwiGLU's up projection).
    pub gate: bool,
    /// Forces the kernel (tests, benchmarks); `None` picks the GEMV kernel up to [`GEMV_ROWS`]
    /// rows; from [`DEQUANT_ROWS`] rows, when the weights are constants and the GEMM engine has
    /// tensor cores, B dequantised once into `dequantized` and the GEMM engine (on the H200,
    /// 38 ms → well under 1 ms for a 512-token prefill of a 2048×8192 weight); else the tiled kernel.
    pub force: Option<NbitsKind>,
    /// B, its scales and zero points are initializers (the same every run).
    pub weights_constant: bool,
    /// B at A's precision, `[K, N]`: made by the first prepare that needs it and shared by every
    /// shape set of this node (one full-precision copy of this node's weights).
    pub dequantized: DequantSlot,
}

/// Rows of A from which constant weights are dequantised once for the GEMM engine.
pub const DEQUANT_ROWS: u64 = 32;

/// Bit widths the one-row kernel is generated for.
const LANES_BITS: [u32; 2] = [4, 8];

/// Invocations per column group of the one-row kernel on `caps`: a power of two of at most
/// [`LANES_MAX`] and the smallest subgroup (a group's shuffles stay inside one subgroup), or
/// `None` without subgroups.
pub fn lanes_for(caps: &DeviceCaps) -> Option<u32> {
    let most = caps.subgroup_min_size.min(LANES_MAX);
    (caps.subgroups && most >= 4).then(|| 1 << (31 - most.leading_zeros()))
}

/// The node's dequantised weights, once made (shared by clones of the kernel).
#[derive(Clone, Default)]
pub struct DequantSlot(std::sync::Arc<parking_lot::Mutex<Option<GpuBuffer>>>);

impl std::fmt::Debug for DequantSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.lock().is_some() { "DequantSlot(made)" } else { "DequantSlot(empty)" })
    }
}

impl PartialEq for DequantSlot {
    /// Kernels compare by what they compute; the cache is not part of it.
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl NbitsKernel {
    pub fn of(node: &Node) -> Result<NbitsKernel, String> {
        let (ty, zp, bias) = operand_types(node)?;
        let op = &node.op_type;
        let attr = |name: &str| node.int(name).ok_or_else(|| format!("{op} without its attribute {name}"));
        let (k, n) = (attr("K")?, attr("N")?);
        let bits = node.int("bits").unwrap_or(4);
        let block = attr("block_size")?;
        if k < 1 || n < 1 {
            return Err(format!("{op} with K {k} and N {n}: both must be positive"));
        }
        if ![2, 4, 8].contains(&bits) {
            return Err(format!("{op} with bits={bits} is not supported (2, 4 and 8 are)"));
        }
        if block < 16 || !(block as u64).is_power_of_two() {
            return Err(format!("{op} with block_size={block}: it must be a power of 2 of at least 16"));
        }
        // B, scales and (if given) zero points.
        let weights_constant = [B, SCALES, ZERO_POINTS]
            .into_iter()
            .filter_map(|i| node.input(i).filter(|v| !v.name.is_empty()))
            .all(|v| v.constant);
        Ok(NbitsKernel {
            weights_constant,
            dequantized: DequantSlot::default(),
            name: node.name.clone(),
            ty,
            k: k as u64,
            n: n as u64,
            bits: bits as u32,
            block: block as u64,
            zp,
            bias,
            silu: false,
            gate: false,
            force: None,
        })
    }

    fn k_blocks(&self) -> u64 {
        self.k.div_ceil(self.block)
    }

    /// Packed bytes per column of B and of the zero points.
    fn strides(&self) -> (u64, u64) {
        let blob = self.block * u64::from(self.bits) / 8;
        (self.k_blocks() * blob, (self.k_blocks() * u64::from(self.bits)).div_ceil(8))
    }

    /// Checks every operand's size against the attributes.
    fn check_operands(&self, inputs: &[Option<&[u64]>]) -> Result<(), String> {
        let elems = |i: usize| inputs.get(i).copied().flatten().map(|s| s.iter().product::<u64>());
        let (col_bytes, zp_bytes) = self.strides();
        let zp_elems = if self.zp == ZeroPoints::Packed { self.n * zp_bytes } else { self.n * self.k_blocks() };
        let want = [
            (B, "B", Some(self.n * col_bytes)),
            (SCALES, "scales", Some(self.n * self.k_blocks())),
            (ZERO_POINTS, "zero_points", (self.zp != ZeroPoints::None).then_some(zp_elems)),
            (BIAS, "bias", self.bias.then_some(self.n)),
        ];
        for (i, what, want) in want {
            let Some(want) = want else { continue };
            match elems(i) {
                Some(got) if got == want => {}
                Some(got) => {
                    return Err(format!("{what} has {got} elements, not the {want} K, N, bits and block_size give"))
                }
                None => return Err(format!("lacks its {what} input")),
            }
        }
        Ok(())
    }

    fn params(&self, m: u64) -> Result<NbitsParams, GpuError> {
        let (col_bytes, zp_bytes) = self.strides();
        Ok(NbitsParams {
            m: to_u32("MatMulNBits rows", m)?,
            n: to_u32("MatMulNBits N", self.n)?,
            k: to_u32("MatMulNBits K", self.k)?,
            k_blocks: to_u32("MatMulNBits blocks", self.k_blocks())?,
            block: to_u32("MatMulNBits block_size", self.block)?,
            col_words: to_u32("MatMulNBits packed words", col_bytes / 4)?,
            zp_stride: to_u32("MatMulNBits zero points", zp_bytes)?,
            flags: u32::from(self.bias) | (u32::from(self.silu) << 1) | (u32::from(self.gate) << 2),
        })
    }

    /// The kernel of `kind` for `m` rows of A (the GEMV kernel has a one-row form).
    fn source(&self, kind: NbitsKind, m: u64, caps: &DeviceCaps) -> NbitsSource {
        let rows = if kind == NbitsKind::Gemv && m > 1 { GEMV_WG_ROWS } else { 1 };
        let kn = kind == NbitsKind::Dequant && self.untransposed();
        let lanes = match (kind, lanes_for(caps)) {
            (NbitsKind::Lanes, Some(l)) => experiment_lanes(l).unwrap_or(LanesShape::new(l, self.lanes_cols(l, caps))),
            _ => LanesShape::default(),
        };
        NbitsSource { kind, ty: self.ty, bits: self.bits, zp: self.zp, rows, kn, lanes }
    }

    /// Whether the one-row kernel can run this node for `m` rows on `caps`: one row, 4 or 8
    /// bits, blocks of whole 16-byte chunks and K a multiple of a chunk's values.
    fn lanes_can_run(&self, m: u64, caps: &DeviceCaps) -> bool {
        let cv = u64::from(chunk_values(self.bits));
        m == 1
            && lanes_for(caps).is_some()
            && LANES_BITS.contains(&self.bits)
            && self.block % cv == 0
            && self.k % cv == 0
    }

    /// Whether the planner takes the one-row kernel: it can run, and each invocation's chunks of
    /// a column are all in flight at once. On the H200 a longer K (8192 → 2048, 8 chunks per
    /// invocation) ran 8% slower than the GEMV kernel, whose invocations issue all their loads
    /// up front (`docs/PERFORMANCE.md`).
    fn lanes_chosen(&self, m: u64, caps: &DeviceCaps) -> bool {
        let span = |l: u32| u64::from(LANES_UNROLL * l * chunk_values(self.bits));
        self.lanes_can_run(m, caps) && lanes_for(caps).is_some_and(|l| self.k <= span(l))
    }

    /// Columns per group of the one-row kernel: the most of [`LANES_COLS`] that still give the
    /// device workgroups for three quarters of its parallelism (on the H200, 4 for N = 8192 and
    /// the LM head, 1 for N = 2048 and 3072; `docs/PERFORMANCE.md`).
    fn lanes_cols(&self, lanes: u32, caps: &DeviceCaps) -> u32 {
        let fills = |c: u32| {
            let groups = self.n.div_ceil(u64::from(c));
            let workgroups = groups.div_ceil(u64::from(LanesShape::new(lanes, c).groups_per_workgroup()));
            4 * workgroups >= 3 * u64::from(caps.parallelism)
        };
        LANES_COLS.iter().copied().find(|&c| fills(c)).unwrap_or(1)
    }

    /// Whether B is dequantised as `[K, N]`: constant weights, dequantised once (where neighbouring
    /// invocations store neighbouring columns), so the GEMM engine reads B untransposed and takes
    /// its widest tiles (on the H200 the 128×256 tile, which a transposed B does not get). Weights
    /// dequantised every run keep `[N, K]`, which each invocation stores contiguously.
    fn untransposed(&self) -> bool {
        self.weights_constant
    }

    /// The kernel for `m` rows: the tiled one needs 256 invocations and 16 KiB of workgroup
    /// memory (WebGPU's minimums); the GEMV kernel runs anywhere.
    fn kind(&self, m: u64, caps: &DeviceCaps) -> NbitsKind {
        let tiled_fits = caps.max_invocations_per_workgroup >= 256 && caps.max_workgroup_storage_bytes >= 16384;
        let dequant = self.weights_constant && m >= DEQUANT_ROWS && crate::gemm::coop_device_check(caps).is_ok();
        let auto = if self.lanes_chosen(m, caps) {
            NbitsKind::Lanes
        } else if m <= u64::from(GEMV_ROWS) {
            NbitsKind::Gemv
        } else if dequant {
            NbitsKind::Dequant
        } else if tiled_fits {
            NbitsKind::Tiled
        } else {
            NbitsKind::Gemv
        };
        self.force.unwrap_or(auto)
    }
}

/// An experiment build's one-row kernel shape: `EXP_NBITS_LANES=cols x unroll` (`bench/README.md`).
/// Release builds never read it.
#[cfg(feature = "wgsl-override")]
fn experiment_lanes(lanes: u32) -> Option<LanesShape> {
    let spec = std::env::var("EXP_NBITS_LANES").ok()?;
    let (cols, unroll) = spec.split_once('x')?;
    Some(LanesShape { lanes, cols: cols.parse().ok()?, unroll: unroll.parse().ok()? })
}

#[cfg(not(feature = "wgsl-override"))]
fn experiment_lanes(_: u32) -> Option<LanesShape> {
    None
}

/// A's type (also the scales', bias' and Y's), how zero points are given and whether a bias is,
/// or why the node's types cannot run.
fn operand_types(node: &Node) -> Result<(ElemType, ZeroPoints, bool), String> {
    let op = &node.op_type;
    let given = |i: usize| node.input(i).filter(|v| !v.name.is_empty());
    let ty_of = |i: usize, what: &str| {
        let v = given(i).ok_or_else(|| format!("{op} '{}' without its {what} input", node.name))?;
        ElemType::from_onnx(v.elem_type).ok_or_else(|| format!("{op}: {what} of element type {}", v.elem_type))
    };
    let ty = ty_of(A, "A")?;
    if !ty.is_float() {
        return Err(format!("{op} with A of {} is not supported", ty.name()));
    }
    if ty_of(B, "B")? != ElemType::U8 {
        return Err(format!("{op} with B not uint8 is not supported"));
    }
    if ty_of(SCALES, "scales")? != ty {
        return Err(format!("{op} with scales of another type than A is not supported"));
    }
    let zp = match given(ZERO_POINTS) {
        None => ZeroPoints::None,
        Some(_) => match ty_of(ZERO_POINTS, "zero_points")? {
            ElemType::U8 => ZeroPoints::Packed,
            t if t == ty => ZeroPoints::Typed,
            t => return Err(format!("{op} with zero points of {} is not supported", t.name())),
        },
    };
    if given(G_IDX).is_some() {
        return Err(format!("{op} with g_idx (act-order quantisation) is not supported"));
    }
    let bias = given(BIAS).is_some();
    if bias && ty_of(BIAS, "bias")? != ty {
        return Err(format!("{op} with a bias of another type than A is not supported"));
    }
    let y = node.output(0).filter(|v| !v.name.is_empty()).ok_or_else(|| format!("{op} without its output"))?;
    if ElemType::from_onnx(y.elem_type) != Some(ty) || node.outputs.len() > 1 {
        return Err(format!("{op} with an output of another type than A is not supported"));
    }
    Ok((ty, zp, bias))
}

/// The uniforms of both templates.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct NbitsParams {
    m: u32,
    n: u32,
    k: u32,
    k_blocks: u32,
    block: u32,
    col_words: u32,
    zp_stride: u32,
    flags: u32,
}

impl Kernel for NbitsKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let err = |e: String| format!("MatMulNBits '{}': {e}", self.name);
        let a = inputs.first().copied().flatten().ok_or_else(|| err("lacks its input A".into()))?;
        if a.last() != Some(&self.k) {
            return Err(err(format!("A {a:?} does not end in K = {}", self.k)));
        }
        self.check_operands(inputs).map_err(err)?;
        let mut out = a.to_vec();
        if let Some(last) = out.last_mut() {
            *last = self.n;
        }
        if self.gate {
            let g = inputs.get(GATE).copied().flatten().ok_or_else(|| err("the fused gate is missing".into()))?;
            if g.iter().product::<u64>() != out.iter().product::<u64>() {
                return Err(err(format!("the fused gate {g:?} does not match the output {out:?}")));
            }
        }
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        self.infer(&shapes).map_err(GpuError::Invalid)?;
        let given: Vec<Tensor<'_>> = io.inputs.iter().flatten().copied().collect();
        crate::ops::norm::check_bindings(&given, cx.caps())?;
        crate::ops::norm::check_bindings(&io.outputs, cx.caps())?;
        let a = io.input(A)?;
        let m = a.elems() / self.k;
        let ops = Operands {
            a: a.buf,
            b: io.input(B)?.buf,
            scales: io.input(SCALES)?.buf,
            zp: if self.zp == ZeroPoints::None { None } else { Some(io.input(ZERO_POINTS)?.buf) },
            bias: if self.bias { Some(io.input(BIAS)?.buf) } else { None },
            gate: if self.gate { Some(io.input(GATE)?.buf) } else { None },
            y: io.output(0)?.buf,
        };
        match self.route(m, cx.caps(), &cx.options.gemm)? {
            Route::Direct(kind, planned) => {
                let spare = cx.gpu.unused_input()?;
                let inputs: Vec<&GpuBuffer> = [ops.a, ops.b, ops.scales]
                    .into_iter()
                    .chain(ops.zp)
                    .chain([ops.bias.unwrap_or(spare), ops.gate.unwrap_or(spare)])
                    .collect();
                let d = planned.bind(cx.gpu, &inputs, &[ops.y])?;
                let line = format!("MatMulNBits '{}': {kind:?}, M {m}", self.name);
                Ok(PreparedStep { dispatches: vec![d], plan: Some(line) })
            }
            Route::Dequant(dequant, gemm) => self.prepare_dequant(cx, &ops, &dequant, &gemm),
        }
    }

    fn plan(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        let out = self.infer(inputs)?.remove(0);
        let m = inputs.first().copied().flatten().unwrap_or_default().iter().product::<u64>() / self.k.max(1);
        let what = format!("MatMulNBits '{}'", self.name);
        let route = self.route(m, caps, &options.gemm).map_err(|e| format!("{what}: {e}"))?;
        let line = format!("{what}: M={m} N={} K={} {}-bit -> {out:?}", self.n, self.k, self.bits);
        Ok(Some(match route {
            Route::Direct(kind, planned) => step_plan(line, format!("{kind:?}"), &[planned]),
            Route::Dequant(dequant, gemm) => {
                let when = if self.weights_constant { "once" } else { "per run" };
                let mut plan = step_plan(line, format!("Dequant ({when}), GEMM {:?}", gemm.tiling), &[dequant]);
                plan.dispatches.extend(gemm.steps.iter().map(|s| (s.variant.name(), s.grid)));
                plan
            }
        }))
    }
}

/// How a MatMulNBits step runs at one M: what `prepare` binds and `plan` reports.
enum Route {
    /// The GEMV or tiled kernel: one dispatch reading the packed weights.
    Direct(NbitsKind, OpDispatch),
    /// B dequantised into a `[K, N]` (constant weights) or `[N, K]` buffer, then the GEMM engine's plan.
    Dequant(OpDispatch, GemmPlan),
}

/// The buffers a MatMulNBits step binds.
struct Operands<'a> {
    a: &'a GpuBuffer,
    b: &'a GpuBuffer,
    scales: &'a GpuBuffer,
    zp: Option<&'a GpuBuffer>,
    bias: Option<&'a GpuBuffer>,
    gate: Option<&'a GpuBuffer>,
    y: &'a GpuBuffer,
}

impl NbitsKernel {
    /// The dispatches for `m` rows of A on `caps`.
    fn route(&self, m: u64, caps: &DeviceCaps, options: &GemmOptions) -> Result<Route, GpuError> {
        let params = self.params(m)?;
        let kind = self.kind(m, caps);
        if kind == NbitsKind::Lanes && !self.lanes_can_run(m, caps) {
            return Err(GpuError::Internal(format!("the one-row MatMulNBits kernel cannot run {m} rows of this node")));
        }
        if kind != NbitsKind::Dequant {
            let source = self.source(kind, m, caps);
            let groups = match kind {
                NbitsKind::Gemv => self.n.div_ceil(u64::from(GEMV_COLS)) * m.div_ceil(u64::from(source.rows)),
                NbitsKind::Lanes => {
                    let l = source.lanes;
                    self.n.div_ceil(u64::from(l.cols)).div_ceil(u64::from(l.groups_per_workgroup()))
                }
                _ => self.n.div_ceil(TILE) * m.div_ceil(TILE),
            };
            let dispatch = OpDispatch::new(ShaderVariant::Op(OpShader::new(source)), &params, grid(groups, caps)?);
            return Ok(Route::Direct(kind, dispatch));
        }
        let grid = grid_for(self.n * u64::from(params.col_words), caps)?;
        let dequant =
            OpDispatch::new(ShaderVariant::Op(OpShader::new(self.source(NbitsKind::Dequant, m, caps))), &params, grid);
        let dtype = self.ty.float().ok_or_else(|| GpuError::Internal("MatMulNBits of a non-float type".into()))?;
        let mut problem = GemmProblem::simple(dtype, params.m, params.n, params.k, false, !self.untransposed());
        if self.bias {
            problem.epilogue.bias = Some(broadcast_layout(&[self.n], &[m, self.n], &problem)?);
        }
        if self.silu {
            problem.epilogue.activation = crate::gemm::Activation::Silu;
        }
        let mut plan = plan_gemm(&problem, caps, options)?;
        if self.gate {
            plan.add_output_flags(FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT | FLAG_RESIDUAL_MUL);
        }
        Ok(Route::Dequant(dequant, plan))
    }

    /// B dequantised into a scratch buffer (`[K, N]` for constant weights, else `[N, K]`, read as
    /// a transposed B), then the GEMM engine (with the bias in its epilogue).
    fn prepare_dequant(
        &self,
        cx: &PrepareCx<'_>,
        ops: &Operands<'_>,
        dequant: &OpDispatch,
        plan: &GemmPlan,
    ) -> Result<PreparedStep, GpuError> {
        let inputs: Vec<&GpuBuffer> = [ops.b, ops.scales].into_iter().chain(ops.zp).collect();
        let mut dispatches = Vec::new();
        let w = if self.weights_constant {
            // Constant weights: dequantised once, on the first prepare (queued before any run
            // that uses them), and kept for every shape set.
            let mut slot = self.dequantized.0.lock();
            match slot.as_ref() {
                Some(w) => w.clone(),
                None => {
                    let w = cx.gpu.storage_buffer(self.n * self.k * self.ty.size(), "MatMulNBits weights")?;
                    let once = dequant.bind(cx.gpu, &inputs, &[&w])?;
                    cx.gpu.run(&[&once])?;
                    slot.insert(w).clone()
                }
            }
        } else {
            let w = cx.gpu.storage_buffer(self.n * self.k * self.ty.size(), "MatMulNBits weights")?;
            dispatches.push(dequant.bind(cx.gpu, &inputs, &[&w])?);
            w
        };
        let bindings = GemmBindings { a: ops.a, b: &w, bias: ops.bias, out: ops.y };
        dispatches.extend(match ops.gate {
            Some(gate) => cx.gpu.prepare_gemm_residual(plan, bindings, gate)?,
            None => cx.gpu.prepare_gemm(plan, bindings)?,
        });
        let line = format!("MatMulNBits '{}': dequantised B, GEMM {:?}", self.name, plan.tiling);
        Ok(PreparedStep { dispatches, plan: Some(line) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(bits: u32, block: u64, zp: ZeroPoints) -> NbitsKernel {
        NbitsKernel {
            name: "q".into(),
            ty: ElemType::F32,
            k: 80,
            n: 67,
            bits,
            block,
            zp,
            bias: true,
            silu: false,
            gate: false,
            force: None,
            weights_constant: true,
            dequantized: DequantSlot::default(),
        }
    }

    #[test]
    fn operand_sizes() {
        // K 80, block 16: 5 blocks of 8 bytes (4 bits); 3 bytes of packed zero points per column.
        let k = kernel(4, 16, ZeroPoints::Packed);
        assert_eq!(k.strides(), (40, 3));
        let ok = k.infer(&[Some(&[3, 80]), Some(&[67, 5, 8]), Some(&[335]), Some(&[201]), None, Some(&[67])]);
        assert_eq!(ok.unwrap(), vec![vec![3, 67]]);
        assert!(k.infer(&[Some(&[3, 81]), Some(&[67, 5, 8]), Some(&[335]), Some(&[201]), None, Some(&[67])]).is_err());
        assert!(k.infer(&[Some(&[3, 80]), Some(&[67, 5, 8]), Some(&[335]), Some(&[200]), None, Some(&[67])]).is_err());
        // 8 bits, block 32: 3 blocks of 32 bytes, one zero point byte per block.
        let k = kernel(8, 32, ZeroPoints::Typed);
        assert_eq!(k.strides(), (96, 3));
        assert!(k.infer(&[Some(&[80]), Some(&[67, 3, 32]), Some(&[67, 3]), Some(&[201]), None, Some(&[67])]).is_ok());
    }

    #[test]
    fn kernel_choice() {
        let caps = crate::caps::profiles::get("llvmpipe").unwrap();
        let mut k = kernel(4, 16, ZeroPoints::None);
        assert_eq!(
            (k.kind(1, &caps), k.kind(8, &caps), k.kind(9, &caps)),
            (NbitsKind::Gemv, NbitsKind::Gemv, NbitsKind::Tiled)
        );
        let small = DeviceCaps { max_workgroup_storage_bytes: 8192, ..caps.clone() };
        assert_eq!(k.kind(512, &small), NbitsKind::Gemv);
        k.force = Some(NbitsKind::Dequant);
        assert_eq!(k.kind(1, &caps), NbitsKind::Dequant);
    }

    /// Llama-3.2-1B's int4 decode products on the H200 (32 invocations per group): the one-row
    /// kernel with 4 columns a group where that still fills the device (gate/up, the LM head), 1
    /// where it would not (QKV, O); the GEMV kernel for K = 8192 (down) and for 2 rows.
    #[test]
    fn decode_products_on_the_h200() {
        let caps = crate::caps::profiles::get("h200").unwrap();
        let name = |k: u64, n: u64, m: u64| {
            let node = NbitsKernel { ty: ElemType::F16, k, n, block: 32, ..kernel(4, 32, ZeroPoints::None) };
            match node.route(m, &caps, &GemmOptions::default()).unwrap() {
                Route::Direct(_, d) => d.variant.name(),
                Route::Dequant(..) => panic!("decode takes a direct kernel"),
            }
        };
        assert_eq!(name(2048, 8192, 1), "quant_nbits_gemv_l32_c4_u2_f16_b4_zp_none");
        assert_eq!(name(2048, 128256, 1), "quant_nbits_gemv_l32_c4_u2_f16_b4_zp_none");
        assert_eq!(name(2048, 3072, 1), "quant_nbits_gemv_l32_c1_u2_f16_b4_zp_none");
        assert_eq!(name(2048, 2048, 1), "quant_nbits_gemv_l32_c1_u2_f16_b4_zp_none");
        assert_eq!(name(8192, 2048, 1), "quant_nbits_gemv_r1_c8_t256_f16_b4_zp_none");
        assert_eq!(name(2048, 8192, 2), "quant_nbits_gemv_r4_c8_t256_f16_b4_zp_none");
    }

    /// A prefill's product on the H200: constant weights dequantised as `[K, N]` take the widest
    /// tile an fp16 MatMul of that shape gets (a transposed B got the 128×128 one).
    #[test]
    fn constant_weights_take_an_untransposed_gemm() {
        let caps = crate::caps::profiles::get("h200").unwrap();
        let mut k = NbitsKernel { ty: ElemType::F16, k: 2048, n: 8192, block: 32, ..kernel(4, 32, ZeroPoints::None) };
        let names = |k: &NbitsKernel| match k.route(512, &caps, &GemmOptions::default()).unwrap() {
            Route::Dequant(dq, plan) => (dq.variant.name(), plan.steps[0].variant.name()),
            Route::Direct(..) => panic!("512 rows on the H200 take the dequantised route"),
        };
        let wide = "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss".to_string();
        assert_eq!(names(&k), ("quant_nbits_dequant_kn_f16_b4_zp_none".to_string(), wide));
        // Weights dequantised every run stay `[N, K]`, read transposed.
        k.weights_constant = false;
        k.force = Some(NbitsKind::Dequant);
        let (dq, gemm) = names(&k);
        assert_eq!(dq, "quant_nbits_dequant_f16_b4_zp_none");
        assert!(gemm.ends_with("_bt_ss"), "{gemm}");
    }
}

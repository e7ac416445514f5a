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
use crate::ops::norm::skip::SkipNormKernel;
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
/// A fused up projection's packed weights and scales (SwiGLU's other product of the same A),
/// after the gate slot.
pub const UP_B: usize = 7;
pub const UP_SCALES: usize = 8;
/// A folded SkipSimplifiedLayerNormalization's skip and γ (its input is A), after the up
/// projection's slots.
pub const NORM_SKIP: usize = 9;
pub const NORM_GAMMA: usize = 10;

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
                                    let duals: &[bool] = if kind == NbitsKind::Lanes && zp == ZeroPoints::None {
                                        &[false, true]
                                    } else {
                                        &[false]
                                    };
                                    for &dual in duals {
                                        // The folded norm: where zero points are absent, as for the dual.
                                        for &norm in duals {
                                            let source =
                                                NbitsSource { kind, ty, bits, zp, rows, kn, lanes, dual, norm };
                                            out.push(ShaderVariant::Op(OpShader::new(source)));
                                        }
                                    }
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
    /// A fused up projection (same A, K, N, bits and block size; no zero points or bias): the
    /// result times it. One row runs one kernel over both weights; other rows run the up
    /// projection into a scratch buffer, then this product gated by it.
    pub up: Option<Box<NbitsKernel>>,
    /// A SkipSimplifiedLayerNormalization whose output 0 is A, folded into this step (A is then
    /// the norm's input; its sum output, if listed, the step's output 1): one row on the one-row
    /// kernel makes A on the way (`nbits_norm.rs`); other rows run the norm into a scratch buffer.
    pub norm: Option<Box<SkipNormKernel>>,
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
            up: None,
            norm: None,
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
            // A folded norm's epsilon where no zero points are read (`nbits_norm.rs`).
            zp_stride: match &self.norm {
                Some(norm) => norm.epsilon.to_bits(),
                None => to_u32("MatMulNBits zero points", zp_bytes)?,
            },
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
        let dual = kind == NbitsKind::Lanes && self.up.is_some();
        let norm = kind == NbitsKind::Lanes && self.norm.is_some();
        NbitsSource { kind, ty: self.ty, bits: self.bits, zp: self.zp, rows, kn, lanes, dual, norm }
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
        if self.norm.is_some() {
            return self.infer_norm(inputs);
        }
        let a = inputs.first().copied().flatten().ok_or_else(|| err("lacks its input A".into()))?;
        if a.last() != Some(&self.k) {
            return Err(err(format!("A {a:?} does not end in K = {}", self.k)));
        }
        self.check_operands(inputs).map_err(err)?;
        let mut out = a.to_vec();
        if let Some(last) = out.last_mut() {
            *last = self.n;
        }
        if let Some(up) = &self.up {
            let at = |i: usize| inputs.get(i).copied().flatten();
            up.check_operands(&[at(A), at(UP_B), at(UP_SCALES)])
                .map_err(|e| err(format!("the fused up projection {e}")))?;
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
        if self.norm.is_some() {
            return self.prepare_norm(cx, io);
        }
        let a = io.input(A)?;
        let m = a.elems() / self.k;
        if let Some(up) = &self.up {
            return self.prepare_dual(cx, io, up, m);
        }
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
        if self.norm.is_some() {
            return self.plan_norm(inputs, caps, options);
        }
        let out = self.infer(inputs)?.remove(0);
        let m = inputs.first().copied().flatten().unwrap_or_default().iter().product::<u64>() / self.k.max(1);
        if let (Some(up), false) = (&self.up, self.kind(m, caps) == NbitsKind::Lanes) {
            // The up projection into a scratch buffer, then this product gated by it.
            let mut gated: Vec<Option<&[u64]>> = inputs.iter().take(GATE).copied().collect();
            gated.resize(GATE, None);
            gated.push(Some(out.as_slice()));
            let ups = [inputs.first().copied().flatten(), inputs.get(UP_B).copied().flatten()];
            let up_plan = up.plan(&[ups[0], ups[1], inputs.get(UP_SCALES).copied().flatten()], caps, options)?;
            let mut plan = self.gated().plan(&gated, caps, options)?;
            if let (Some(p), Some(u)) = (plan.as_mut(), up_plan) {
                p.line = format!("{} (after its up projection: {})", p.line, u.line);
                p.dispatches.splice(0..0, u.dispatches);
            }
            return Ok(plan);
        }
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

#[path = "nbits_norm.rs"]
mod norm;
#[path = "nbits_route.rs"]
mod route;
use route::{Operands, Route};

#[cfg(test)]
#[path = "nbits_tests.rs"]
mod tests;

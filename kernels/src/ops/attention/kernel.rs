//! The flash-attention step: resolves the operands' layouts into logical (batch, head, seq, dim)
//! strides at run time, picks the tiling for the head size and binds one dispatch.

use bytemuck::{Pod, Zeroable};

use super::coop;
use super::decode::{self, DECODE_MAX_ROWS};
use super::{plan_tiles, storage_bytes, unsupported, AttnSource};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::ExecOptions;
use crate::ops::norm::{broadcast_strides, broadcasts_onto, check_bindings};
use crate::ops::planned::{required, step_plan, OpDispatch};
use crate::ops::{grid, to_u32, Kernel, KernelIo, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::GpuBuffer;
use crate::shader::{OpShader, ShaderVariant};

/// The mask operand: none, added to the scaled scores, boolean (false excludes the key), or
/// GroupQueryAttention's `seqlens_k` (i32 `[B]`): with causal masking, batch b's offset is
/// `max(seqlens_k[b] + 1 − Sq, 0)` instead of the uniform one, so no `[B, Sq, Skv]` mask is
/// written or read and key tiles past each batch's last key are never loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    None,
    Add,
    Bool,
    SeqLens,
}

impl MaskKind {
    /// Every kind, in the order the variant lists take them.
    pub const ALL: [MaskKind; 4] = [MaskKind::None, MaskKind::Add, MaskKind::Bool, MaskKind::SeqLens];

    pub fn name(self) -> &'static str {
        match self {
            MaskKind::None => "none",
            MaskKind::Add => "add",
            MaskKind::Bool => "bool",
            MaskKind::SeqLens => "seqlens",
        }
    }
}

/// Causal masking: query i sees key j when `j ≤ i + offset`; the offset is 0 (top-left, ONNX
/// `Attention`) or `Skv − Sq` (bottom-right: the queries are the last of the keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Causal {
    None,
    TopLeft,
    BottomRight,
}

/// How a stored tensor is viewed as (batch, head, seq, dim).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// Logical dim i (batch, head, seq, dim) is dim `perm[i]` of the 4-D view.
    pub perm: [usize; 4],
    /// `Some(h)`: a rank-3 `[B, S, h·D]` tensor viewed as `[B, S, h, D]`; else a rank-2..4 tensor
    /// with leading 1s added up to rank 4.
    pub packed_heads: Option<u64>,
    /// With `packed_heads`: the operand is `width` columns from column `offset` of wider rows (one
    /// projection of several packed into one product, `graph/packed_proj.rs`); the kernel binds
    /// the tensor from that column on.
    pub columns: Option<Columns>,
}

/// A column range of a `[B, S, row]` tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Columns {
    pub offset: u64,
    pub width: u64,
}

impl Layout {
    pub const BHSD: Layout = Layout { perm: [0, 1, 2, 3], packed_heads: None, columns: None };

    /// `[B, S, h·D]` with `h` heads.
    pub fn packed(heads: u64) -> Layout {
        Layout { perm: [0, 2, 1, 3], packed_heads: Some(heads), columns: None }
    }

    /// `h` heads in `width` columns from column `offset` of `[B, S, row]` rows.
    pub fn columns(heads: u64, offset: u64, width: u64) -> Layout {
        Layout { columns: Some(Columns { offset, width }), ..Layout::packed(heads) }
    }

    /// The element offset the operand's binding starts at (its first column).
    pub fn offset(&self) -> u64 {
        self.columns.map_or(0, |c| c.offset)
    }

    /// Logical dims and strides (elements) of a tensor stored with `shape`, counted from
    /// [`Layout::offset`].
    pub fn view(&self, shape: &[u64]) -> Result<([u64; 4], [u64; 4]), String> {
        let mut four = [1u64; 4];
        let mut row = None;
        match self.packed_heads {
            Some(h) => {
                let &[b, s, width] = shape else {
                    return Err(format!("expected a rank-3 [B, S, H·D] tensor, got {shape:?}"));
                };
                let hd = match self.columns {
                    Some(c) if c.offset + c.width <= width => c.width,
                    Some(c) => return Err(format!("columns {}..{} of {shape:?}", c.offset, c.offset + c.width)),
                    None => width,
                };
                if h == 0 || hd % h != 0 {
                    return Err(format!("the last dimension {hd} of {shape:?} is not a multiple of {h} heads"));
                }
                four = [b, s, h, hd / h];
                row = Some(width);
            }
            None => {
                if !(2..=4).contains(&shape.len()) {
                    return Err(format!("expected a tensor of rank 2 to 4, got {shape:?}"));
                }
                four[4 - shape.len()..].copy_from_slice(shape);
            }
        }
        let mut strides = [1u64; 4];
        for i in (0..3).rev() {
            strides[i] = strides[i + 1] * four[i + 1];
        }
        if let Some(row) = row {
            // [B, S, h, D] inside rows of `row` elements.
            strides[1] = row;
            strides[0] = four[1] * row;
        }
        let mut dims = [0u64; 4];
        let mut out = [0u64; 4];
        for i in 0..4 {
            dims[i] = four[self.perm[i]];
            out[i] = strides[self.perm[i]];
        }
        Ok((dims, out))
    }
}

/// How the output is stored: `[B, H, S, D]` with leading 1s dropped to `rank`, packed
/// `[B, S, H·D]`, or `[B, S, H, D]` (`Heads`: the same bytes as packed, in 4-D).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutLayout {
    Plain(usize),
    Packed,
    Heads,
}

/// One attention node's step.
#[derive(Clone, Debug, PartialEq)]
pub struct FlashKernel {
    pub name: String,
    pub op: &'static str,
    pub ty: ElemType,
    /// `None`: 1/√D.
    pub scale: Option<f32>,
    /// Scaled scores become `softcap · tanh(s / softcap)` before the mask where this is positive
    /// (GroupQueryAttention's `softcap`); 0: not capped.
    pub softcap: f32,
    pub causal: Causal,
    pub mask: MaskKind,
    pub q: Layout,
    pub k: Layout,
    pub v: Layout,
    pub out: OutLayout,
    /// Forced (query rows, keys) per tile of the flash kernel; `None`: planned from the device.
    /// Tests set it to run the tilings this adapter's planner does not pick.
    pub tiles: Option<(u32, u32)>,
    /// Which flash kernel runs more than a few query rows.
    pub engine: Engine,
    /// Forced key splits of the tensor-core kernel and of the K/V-head decode kernel (about as
    /// many: whole steps of keys); `None`: planned from the device.
    pub splits: Option<u64>,
    /// Forced invocations per key row of the K/V-head decode kernel; `None`: planned from the
    /// device. Tests set it below the subgroup size, where a subgroup holds several key groups.
    pub lanes: Option<u32>,
    /// Bounds on |K| and |V| known before any run (`graph/bounds.rs`): the split f32 kernel
    /// takes their scales from them, without a maxima pass.
    pub kv_bound: Option<[f32; 2]>,
    /// GroupQueryAttention's preparation folded into the decode kernel (`decode::PrepFields`).
    pub prep: Option<decode::PrepFields>,
}

/// The kernel for prefill-sized problems.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// Tensor cores for f16 where the device has them, else SIMT.
    #[default]
    Auto,
    /// The SIMT kernel.
    Simt,
    /// The tensor-core kernel in its emulated form (tests on adapters without tensor cores).
    CoopEmulated,
}

/// The problem at one set of shapes.
#[derive(Clone, Debug, PartialEq)]
pub struct Geometry {
    pub batch: u64,
    pub heads: u64,
    pub kv_heads: u64,
    pub sq: u64,
    pub skv: u64,
    pub d: u64,
    pub strides: [[u64; 4]; 3],
}

impl FlashKernel {
    /// A kernel of `op` over Q, K and V stored as `layouts` (in that order), writing `out`: scale
    /// 1/√D, no cap, mask or causal masking, tiling, engine and splits planned from the device.
    pub fn new(name: &str, op: &'static str, ty: ElemType, layouts: [Layout; 3], out: OutLayout) -> FlashKernel {
        let [q, k, v] = layouts;
        FlashKernel {
            name: name.to_string(),
            op,
            ty,
            scale: None,
            softcap: 0.0,
            causal: Causal::None,
            mask: MaskKind::None,
            q,
            k,
            v,
            out,
            tiles: None,
            engine: Engine::Auto,
            splits: None,
            lanes: None,
            kv_bound: None,
            prep: None,
        }
    }

    fn err(&self, m: String) -> String {
        format!("{} '{}': {m}", self.op, self.name)
    }

    /// Logical sizes and Q/K/V strides, checked against each other.
    pub fn geometry(&self, q: &[u64], k: &[u64], v: &[u64]) -> Result<Geometry, String> {
        let (qd, qs) = self.q.view(q).map_err(|e| self.err(format!("Q: {e}")))?;
        let (kd, ks) = self.k.view(k).map_err(|e| self.err(format!("K: {e}")))?;
        let (vd, vs) = self.v.view(v).map_err(|e| self.err(format!("V: {e}")))?;
        if qd[0] != kd[0] || kd[0] != vd[0] {
            return Err(self.err(format!("batch sizes of Q {q:?}, K {k:?} and V {v:?} differ")));
        }
        if kd[1] != vd[1] || kd[1] == 0 || qd[1] % kd[1] != 0 {
            return Err(self.err(format!("{} query heads are not a multiple of {} K/V heads", qd[1], kd[1])));
        }
        if kd[2] != vd[2] {
            return Err(self.err(format!("K has {} keys, V {} values", kd[2], vd[2])));
        }
        if qd[3] != kd[3] || vd[3] != qd[3] {
            return Err(self.err(format!("head sizes of Q ({}), K ({}) and V ({}) must be equal", qd[3], kd[3], vd[3])));
        }
        Ok(Geometry {
            batch: qd[0],
            heads: qd[1],
            kv_heads: kd[1],
            sq: qd[2],
            skv: kd[2],
            d: qd[3],
            strides: [qs, ks, vs],
        })
    }

    /// The stored output shape and its (batch, head, seq, dim) strides.
    pub(super) fn output(&self, g: &Geometry) -> Result<(Vec<u64>, [u64; 4]), String> {
        let (b, h, s, d) = (g.batch, g.heads, g.sq, g.d);
        Ok(match self.out {
            OutLayout::Packed => (vec![b, s, h * d], [s * h * d, d, h * d, 1]),
            OutLayout::Heads => (vec![b, s, h, d], [s * h * d, d, h * d, 1]),
            OutLayout::Plain(rank) => {
                let full = [b, h, s, d];
                if !(2..=4).contains(&rank) || full[..4 - rank].iter().any(|&x| x != 1) {
                    return Err(self.err(format!("the output [{b}, {h}, {s}, {d}] cannot have rank {rank}")));
                }
                (full[4 - rank..].to_vec(), [h * s * d, s * d, d, 1])
            }
        })
    }
}

impl FlashKernel {
    /// The uniforms both kernels share.
    fn uniforms(&self, g: &Geometry, o_stride: [u64; 4], m_stride: [u64; 4]) -> Result<SharedParams, GpuError> {
        let u4 = |s: [u64; 4]| -> Result<[u32; 4], GpuError> {
            let mut out = [0u32; 4];
            for (o, &x) in out.iter_mut().zip(&s) {
                *o = to_u32("attention stride", x)?;
            }
            Ok(out)
        };
        let causal_offset = match self.causal {
            Causal::BottomRight => i32::try_from(g.skv as i64 - g.sq as i64)
                .map_err(|_| GpuError::Invalid(self.err("the sequences are too long".into())))?,
            _ => 0,
        };
        Ok(SharedParams {
            sq: to_u32("query length", g.sq)?,
            skv: to_u32("key length", g.skv)?,
            heads: to_u32("heads", g.heads)?,
            group: to_u32("query heads per K/V head", g.heads / g.kv_heads)?,
            strides: [u4(g.strides[0])?, u4(g.strides[1])?, u4(g.strides[2])?, u4(o_stride)?, u4(m_stride)?],
            scale: self.scale.unwrap_or(1.0 / (g.d as f32).sqrt()),
            causal: u32::from(self.causal != Causal::None),
            causal_offset,
            softcap: self.softcap,
        })
    }
}

impl FlashKernel {
    /// The plan line of a step: `kernel` and `tiling` around the problem's sizes and masks.
    pub(super) fn describe(&self, g: &Geometry, kernel: &str, tiling: &str) -> String {
        format!(
            "{} '{}': {kernel} B={} H={}/{} Sq={} Skv={} D={} {tiling}, mask {}, causal {:?}",
            self.op,
            self.name,
            g.batch,
            g.heads,
            g.kv_heads,
            g.sq,
            g.skv,
            g.d,
            self.mask.name(),
            self.causal
        )
    }

    /// The tensor-core tiling, when that kernel runs this problem.
    fn coop_tiling(&self, g: &Geometry, caps: &DeviceCaps) -> Result<Option<coop::Tiling>, GpuError> {
        // f32 runs split in three f16 products, where that form exists (not GroupQueryAttention's
        // seqlens or capped scores).
        let x3 = self.ty == ElemType::F32;
        let typed = self.ty == ElemType::F16 || (x3 && self.mask != MaskKind::SeqLens && self.softcap == 0.0);
        // Auto takes the emulated form on a device that emulates tensor cores (`emulate_tensor_cores`), and the
        // SIMT kernel where that form cannot run the head size; only a test's forced engine must get it.
        let (emulate, forced) = match self.engine {
            Engine::Simt => return Ok(None),
            Engine::Auto if !typed || self.tiles.is_some() => return Ok(None),
            Engine::Auto => (caps.coop_emulated, false),
            Engine::CoopEmulated if !typed => {
                return Err(GpuError::Internal(format!(
                    "the tensor-core attention kernel has no form for {:?} with this mask",
                    self.ty
                )))
            }
            Engine::CoopEmulated => (true, true),
        };
        let tiles = |rows: u64| g.batch * g.heads * g.sq.div_ceil(rows);
        match coop::plan(g.d, caps, emulate, x3, tiles) {
            Some((nsg, bc)) => Ok(Some(coop::Tiling { nsg, bc, emulate, x3 })),
            None if forced => {
                Err(GpuError::Internal("the emulated tensor-core attention kernel cannot run here".into()))
            }
            None => Ok(None),
        }
    }
}

impl Kernel for FlashKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let get = |i: usize| inputs.get(i).copied().flatten().ok_or_else(|| self.err(format!("input {i} is missing")));
        let g = self.geometry(get(0)?, get(1)?, get(2)?)?;
        if self.mask == MaskKind::SeqLens {
            let m = get(3)?;
            if m != [g.batch] || self.causal == Causal::None {
                return Err(self.err(format!("seqlens {m:?} for batch {} without causal masking", g.batch)));
            }
        } else if self.mask != MaskKind::None {
            let m = get(3)?;
            if !broadcasts_onto(m, &[g.batch, g.heads, g.sq, g.skv]) {
                return Err(self.err(format!(
                    "the mask {m:?} does not broadcast onto the scores [{}, {}, {}, {}]",
                    g.batch, g.heads, g.sq, g.skv
                )));
            }
        }
        Ok(vec![self.output(&g)?.0])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        if cx.options.interim_plan {
            return self.prepare_unfused(cx, io);
        }
        let (q, k, v, o) = (io.input(0)?, io.input(1)?, io.input(2)?, io.output(0)?);
        let mut bound = vec![q, k, v, o];
        // Operands packed into one tensor are bound from their first column.
        let mut views = Vec::with_capacity(3);
        for (t, layout) in [(q, self.q), (k, self.k), (v, self.v)] {
            views.push(match layout.offset() {
                0 => None,
                o => Some(t.buf.from_offset(o * self.ty.size())?),
            });
        }
        let mut reads: Vec<&GpuBuffer> =
            [q, k, v].iter().zip(&views).map(|(t, view)| view.as_ref().unwrap_or(t.buf)).collect();
        let mask = if self.mask != MaskKind::None { Some(io.input(3)?) } else { None };
        if let Some(m) = mask {
            reads.push(m.buf);
            bound.push(m);
        }
        check_bindings(&bound, cx.caps())?;
        let planned = self.dispatches(q.shape, k.shape, v.shape, mask.map(|m| m.shape), cx.caps())?;
        let mut dispatches = Vec::with_capacity(3);
        let maxima = match &planned.pre {
            Some(Maxima::Pass(pre, bytes)) => {
                let buf = cx.gpu.storage_buffer(*bytes, "attention K/V maxima")?;
                dispatches.push(pre.bind(cx.gpu, &[reads[1], reads[2]], &[&buf])?);
                Some(buf)
            }
            Some(Maxima::Bound(b)) => {
                let bits: Vec<u8> = b.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
                Some(cx.gpu.upload(&bits, "attention K/V bounds")?)
            }
            None => None,
        };
        if let Some(buf) = &maxima {
            reads.push(buf);
        }
        match planned.tail {
            Tail::None => dispatches.push(planned.main.bind(cx.gpu, &reads, &[o.buf])?),
            Tail::Reduce(reduce, bytes) => {
                let work = cx.gpu.storage_buffer(bytes, "attention partials")?;
                dispatches.push(planned.main.bind(cx.gpu, &reads, &[&work])?);
                dispatches.push(reduce.bind(cx.gpu, &[&work], &[o.buf])?);
            }
            Tail::Counted(counted) => {
                let (work, done) = counted.buffers(cx.gpu)?;
                dispatches.push(planned.main.bind(cx.gpu, &reads, &[&work, o.buf, &done])?);
                if let Some(combine) = counted.combine {
                    dispatches.push(combine.bind(cx.gpu, &[&work], &[o.buf])?);
                }
            }
        }
        Ok(PreparedStep { dispatches, plan: Some(planned.line) })
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        self.infer(inputs)?;
        let planned = (|| {
            let mask = if self.mask != MaskKind::None { Some(required(inputs, 3)?) } else { None };
            self.dispatches(required(inputs, 0)?, required(inputs, 1)?, required(inputs, 2)?, mask, caps)
        })()
        .map_err(|e| self.err(e.to_string()))?;
        let mut dispatches: Vec<OpDispatch> = match planned.pre {
            Some(Maxima::Pass(d, _)) => vec![d],
            _ => Vec::new(),
        };
        dispatches.push(planned.main);
        dispatches.extend(planned.tail.dispatch());
        Ok(Some(step_plan(planned.line, planned.tiling, &dispatches)))
    }
}

/// The largest |K| and |V| the split f32 kernel reads (one entry per workgroup of the pass).
pub(super) enum Maxima {
    /// A pass reading K and V that writes them, and its bytes.
    Pass(OpDispatch, u64),
    /// One entry, written once: the bounds (`FlashKernel::kv_bound`).
    Bound([f32; 2]),
}

/// An attention step's dispatches: what `prepare` binds and `plan` reports.
pub(super) struct AttnPlan {
    /// The engine and its tiling around the problem (the plan log's line).
    pub line: String,
    /// The engine and its tiling alone.
    pub tiling: String,
    /// What `main` reads after K and V: the split f32 kernel's maxima.
    pub pre: Option<Maxima>,
    /// Reads Q, K, V (and the mask, and `pre`'s output); writes the output, or with a `tail` the
    /// partials.
    pub main: OpDispatch,
    pub tail: Tail,
}

/// What follows an attention kernel: nothing where it writes the output itself, else the
/// combination of its partials.
pub(super) enum Tail {
    None,
    /// A reduction of the partials (their bytes) into the output.
    Reduce(OpDispatch, u64),
    /// The K/V-head decode kernel's.
    Counted(Counted),
}

impl Tail {
    /// The dispatch after the kernel, if any.
    pub fn dispatch(self) -> Option<OpDispatch> {
        match self {
            Tail::None => None,
            Tail::Reduce(d, _) => Some(d),
            Tail::Counted(c) => c.combine,
        }
    }
}

/// The K/V-head decode kernel binds its partials, the output and a counter per row block, in that
/// order, after its other buffers. Its last workgroup of each row block combines the partials
/// into the output, unless a combine dispatch follows (`combine`).
pub(super) struct Counted {
    pub partials: u64,
    pub counters: u64,
    pub combine: Option<OpDispatch>,
}

impl Counted {
    /// The partials' buffer and the counters' (zero when created; the kernel leaves them zero).
    pub fn buffers(&self, gpu: &crate::runtime::Gpu) -> Result<(GpuBuffer, GpuBuffer), GpuError> {
        let work = gpu.storage_buffer(self.partials, "attention partials")?;
        Ok((work, gpu.storage_buffer(self.counters, "attention chunk counters")?))
    }
}

impl FlashKernel {
    /// The engine for these shapes (split-KV for a few query rows, tensor cores where they
    /// run it, else the SIMT flash kernel) and its dispatches.
    pub(super) fn dispatches(
        &self,
        q: &[u64],
        k: &[u64],
        v: &[u64],
        mask: Option<&[u64]>,
        caps: &DeviceCaps,
    ) -> Result<AttnPlan, GpuError> {
        let g = self.geometry(q, k, v).map_err(GpuError::Invalid)?;
        let (br, bc) = plan_tiles(g.d, caps)
            .ok_or_else(|| GpuError::Invalid(self.err(unsupported(g.d, caps).unwrap_or_default())))?;
        let (br, bc) = match self.tiles {
            Some((r, c))
                if storage_bytes(r, c, g.d as u32) > caps.max_workgroup_storage_bytes || r % 8 != 0 || c % 8 != 0 =>
            {
                return Err(GpuError::Internal(format!("attention tiles {r}x{c} cannot run here")));
            }
            Some(t) => t,
            None => (br, bc),
        };
        let mut m_stride = [0u64; 4];
        if let Some(m) = mask.filter(|_| self.mask != MaskKind::SeqLens) {
            m_stride.copy_from_slice(&broadcast_strides(m, &[g.batch, g.heads, g.sq, g.skv]));
        }
        let (_, o_stride) = self.output(&g).map_err(GpuError::Invalid)?;
        let shared = self.uniforms(&g, o_stride, m_stride)?;
        if g.sq <= DECODE_MAX_ROWS {
            return decode::plan(self, caps, &g, shared);
        }
        if let Some(tiling) = self.coop_tiling(&g, caps)? {
            return coop::plan_dispatches(self, caps, &g, shared, tiling);
        }
        let q_tiles = g.sq.div_ceil(u64::from(br));
        let count = g.batch * g.heads * q_tiles;
        let params = AttnParams {
            shared,
            q_tiles: to_u32("query tiles", q_tiles)?,
            count: to_u32("attention workgroups", count)?,
            pad: [0; 2],
        };
        let source = AttnSource { ty: self.ty, d: g.d as u32, br, bc, mask: self.mask };
        let main = OpDispatch::new(ShaderVariant::Op(OpShader::new(source)), &params, grid(count, caps)?);
        let tiling = format!("tiles {br}x{bc}");
        Ok(AttnPlan { line: self.describe(&g, "flash attention", &tiling), tiling, pre: None, main, tail: Tail::None })
    }
}

/// The uniforms both attention kernels start with: sizes, Q/K/V/O/mask strides (logical batch,
/// head, seq, dim), scale and causal masking.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct SharedParams {
    pub sq: u32,
    pub skv: u32,
    pub heads: u32,
    pub group: u32,
    pub strides: [[u32; 4]; 5],
    pub scale: f32,
    pub causal: u32,
    pub causal_offset: i32,
    pub softcap: f32,
}

/// The uniforms of `attn_flash.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct AttnParams {
    shared: SharedParams,
    q_tiles: u32,
    count: u32,
    pad: [u32; 2],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniforms_match_the_template() {
        // sq, skv, heads, group, five vec4 strides, scale, causal, offset, softcap, q_tiles, count, 2 pads.
        assert_eq!(std::mem::size_of::<AttnParams>(), 128);
    }

    #[test]
    fn layouts_view_logical_strides() {
        assert_eq!(Layout::BHSD.view(&[2, 3, 5, 8]).unwrap(), ([2, 3, 5, 8], [120, 40, 8, 1]));
        assert_eq!(Layout::BHSD.view(&[3, 5, 8]).unwrap(), ([1, 3, 5, 8], [120, 40, 8, 1]));
        // [B, S, H·D] with 2 heads of 4.
        assert_eq!(Layout::packed(2).view(&[2, 5, 8]).unwrap(), ([2, 2, 5, 4], [40, 4, 8, 1]));
        // Kᵀ stored [B, H, D, S].
        let kt = Layout { perm: [0, 1, 3, 2], packed_heads: None, columns: None };
        assert_eq!(kt.view(&[1, 2, 8, 5]).unwrap(), ([1, 2, 5, 8], [80, 40, 1, 5]));
        assert!(Layout::packed(3).view(&[2, 5, 8]).is_err());
        assert!(Layout::BHSD.view(&[8]).is_err());
        // K as 2 heads of 4 in columns 16..24 of rows of 32 (Q, K and V packed, padded).
        let k = Layout::columns(2, 16, 8);
        assert_eq!(k.view(&[2, 5, 32]).unwrap(), ([2, 2, 5, 4], [160, 4, 32, 1]));
        assert_eq!(k.offset(), 16);
        assert!(Layout::columns(2, 28, 8).view(&[2, 5, 32]).is_err());
    }
}

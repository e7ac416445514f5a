//! The tensor-core flash kernel (`wgsl/attn_coop.wgsl.j2`): f16 attention whose two products run
//! on cooperative matrices (16×16×16, f32 accumulation), with the online softmax and the output
//! accumulator in registers. Chosen over the SIMT kernel for f16 when the device has the fragment
//! configuration and subgroups of 32; its emulated form (plain WGSL with the same semantics) lets
//! adapters without tensor cores test its indexing.

use bytemuck::{Pod, Zeroable};

use super::kernel::{AttnPlan, FlashKernel, Geometry, MaskKind, Maxima, SharedParams, Tail};
use super::HEAD_SIZES;
use crate::caps::DeviceCaps;
use crate::error::GpuError;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid, to_u32};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// Output columns per P·V chunk (the scratch a subgroup stores them through is this wide).
pub const CHUNK: u32 = 64;

/// The largest head size the tensor-core kernel takes. At 256 (Gemma) its output accumulators
/// alone would take 128 registers per invocation and its one fitting tiling 45 KB, and its
/// emulated form fits no test adapter's workgroup memory, so such heads run on the SIMT kernel.
pub const MAX_HEAD_SIZE: u64 = 128;

/// (subgroups, keys per tile) in order of preference; each subgroup owns 16 query rows. Eight
/// subgroups (128 query rows, Q staged in two rounds, a 32-column scratch) share each K/V tile
/// twice as widely as four. Measured on an H100 (docs/PERFORMANCE.md, thirty-eighth session):
/// S=4096 with 8 heads ran 0.58 against 0.97 ms at head size 128 and 0.376 against 0.447 at 64,
/// Llama's causal prefill 0.866 against 1.065; Whisper-tiny's 72 query tiles of 128 rows ran 2%
/// slower than 144 of 64, so eight subgroups are taken only where their tiles fill the device.
/// The emulated form, which also keeps Q staged, takes the small ones (adapters without tensor
/// cores have less workgroup memory, and each emulated invocation multiplies its fragments'
/// share alone).
const TILINGS: [(u32, u32); 4] = [(8, 32), (4, 64), (4, 32), (2, 32)];
const EMULATED_TILINGS: [(u32, u32); 2] = [(2, 32), (2, 16)];
/// The names of the tensor-core attention kernels start so.
const COOP_FLASH_PREFIX: &str = "attn_coop_";

/// The split f32 form stages two parts of K, V and P: 32-key tiles fit 48 KB at head size 64.
const X3_TILINGS: [(u32, u32); 1] = [(4, 32)];
const X3_EMULATED_TILINGS: [(u32, u32); 1] = [(2, 16)];

/// The head sizes f32 attention runs on the tensor cores at split precision (`x3`): where four
/// subgroups fit (larger heads would run on two, which the f16 kernel measured 2–3× slower).
pub const X3_HEAD_SIZES: [u64; 1] = [64];

/// Rounds in which Q is staged through the K/V area (`2·bc` rows of head size `d` each): one
/// unless the workgroup owns more query rows than that area holds (the real-fragment f16 form
/// only; the emulated and split f32 forms keep `nsg·16 ≤ 2·bc`).
fn q_rounds(nsg: u32, bc: u32) -> u32 {
    (nsg * 16).div_ceil(2 * bc)
}

/// Output columns per chunk for a tiling: [`CHUNK`], or the tile's keys where Q is staged in
/// rounds: such tilings own many query rows, whose score scratch must stay narrow to fit.
fn chunk_width(nsg: u32, bc: u32) -> u32 {
    if q_rounds(nsg, bc) > 1 {
        bc.min(CHUNK)
    } else {
        CHUNK
    }
}

/// Words between rows of a subgroup's score/output scratch: ≡ 4 (mod 32), which the lanes'
/// column order needs to read 32 distinct banks.
fn row_words(nsg: u32, bc: u32) -> u32 {
    bc.max(chunk_width(nsg, bc)) + 4
}

/// Whether the f16 kernel loads the next K/V tile into registers during a step
/// (`wgsl/attn_coop_fetch.wgsl.j2`): where that takes one 16-byte chunk of K and one of V per
/// invocation, which the eight-subgroup tiling at head size 64 has. Measured on an H100
/// (docs/PERFORMANCE.md, thirty-ninth session): S=4096 with 8 heads 0.376–0.379 → 0.348 ms, Llama's
/// causal prefill 0.866 → 0.805–0.811; with more chunks the registers cost more than the loads
/// in flight gain (head size 128 on eight subgroups 0.577 → 0.616, Whisper's four 0.095 → 0.100,
/// the split f32 form 0.194 → 0.197). The emulated form, whose tilings hold more chunks, takes
/// it everywhere, so adapters without tensor cores test its staging.
fn prefetches(nsg: u32, bc: u32, d: u32, emulate: bool, x3: bool) -> bool {
    !x3 && (emulate || bc * d / 8 <= nsg * 32)
}

/// Whether a tiling can hold its Q rows: the emulated and split f32 forms stage all of them at
/// once in the K/V area.
fn holds_q(nsg: u32, bc: u32, emulate: bool, x3: bool) -> bool {
    !(emulate || x3) || q_rounds(nsg, bc) == 1
}

/// Workgroup memory of a tiling: K and V tiles (f16 rows padded by 8), the per-subgroup score
/// scratch (f32) and P (f16); the emulated form also keeps Q. The split f32 form (`x3`) keeps
/// two parts of each f16 tile and three maxima.
pub fn storage_bytes(nsg: u32, bc: u32, d: u32, emulate: bool, x3: bool) -> u32 {
    let parts = if x3 { 2 } else { 1 };
    let q = if emulate { nsg * 16 * (d + 8) * 2 * parts } else { 0 };
    // x3: a vec4<u32> per subgroup of at least 4 invocations.
    let maxima = if x3 { nsg * 32 / 4 * 16 } else { 0 };
    parts * (2 * bc * (d + 8) * 2 + nsg * 16 * (bc + 8) * 2) + nsg * 16 * row_words(nsg, bc) * 4 + q + maxima
}

/// Why the tensor-core kernel cannot run on `caps` (real fragments unless `emulate`).
pub fn device_check(caps: &DeviceCaps, emulate: bool) -> Result<(), String> {
    if !caps.subgroups || !caps.shader_f16 {
        return Err("the tensor-core attention kernel needs subgroups and shader-f16".into());
    }
    if emulate {
        return Ok(());
    }
    if caps.coop_emulated {
        return Err("the device runs the tensor-core kernels emulated (emulate_tensor_cores)".into());
    }
    if !caps.subgroup_barrier {
        return Err("the tensor-core attention kernel needs subgroup barriers".into());
    }
    crate::gemm::coop_device_check(caps)
}

/// Whether the device holds a tiling's workgroup.
fn fits(nsg: u32, bc: u32, d: u64, caps: &DeviceCaps, emulate: bool, x3: bool) -> bool {
    storage_bytes(nsg, bc, d as u32, emulate, x3) <= caps.max_workgroup_storage_bytes
        && caps.allows_workgroup(nsg * 32, 1, 1)
        && holds_q(nsg, bc, emulate, x3)
}

/// The tilings the planner may take for head size `d` (f32 at split precision with `x3`): the
/// first that fits, then, where that one has more than four subgroups, the first of at most four
/// (for problems whose query tiles do not fill the device). Empty when the kernel cannot run.
pub fn candidates(d: u64, caps: &DeviceCaps, emulate: bool, x3: bool) -> Vec<(u32, u32)> {
    if !HEAD_SIZES.contains(&d) || d > MAX_HEAD_SIZE || device_check(caps, emulate).is_err() {
        return Vec::new();
    }
    if x3 && !X3_HEAD_SIZES.contains(&d) {
        return Vec::new();
    }
    #[cfg(feature = "wgsl-override")]
    if let Some((nsg, bc)) = experiment_tiling(d, x3).filter(|_| !emulate) {
        // A tiling the device cannot hold is not run (the process would end without a word).
        return if fits(nsg, bc, d, caps, false, x3) { vec![(nsg, bc)] } else { Vec::new() };
    }
    let tilings: &[(u32, u32)] = match (emulate, x3) {
        (false, false) => &TILINGS,
        (true, false) => &EMULATED_TILINGS,
        (false, true) => &X3_TILINGS,
        (true, true) => &X3_EMULATED_TILINGS,
    };
    let mut fitting = tilings.iter().copied().filter(|&(nsg, bc)| fits(nsg, bc, d, caps, emulate, x3));
    let Some(first) = fitting.next() else { return Vec::new() };
    let mut out = vec![first];
    if first.0 > 4 {
        out.extend(fitting.find(|&(nsg, _)| nsg <= 4));
    }
    out
}

/// (subgroups, keys per tile) for head size `d` and `tiles(rows)`, the query tiles of `rows`
/// rows the problem has (over all batches and heads), or `None` when the kernel cannot run: the
/// first candidate, unless it has more than four subgroups and its query tiles do not fill the
/// device (as [`plan_splits`] counts it), or half of it where that tiling prefetches (H100,
/// thirty-ninth session: Whisper-tiny's 72 tiles of 128 rows, 56% of the guess for a discrete
/// GPU, ran 0.093 against 0.095 ms on four subgroups once the eight prefetched).
pub fn plan(d: u64, caps: &DeviceCaps, emulate: bool, x3: bool, tiles: impl Fn(u64) -> u64) -> Option<(u32, u32)> {
    let candidates = candidates(d, caps, emulate, x3);
    let fill = |&&(nsg, bc): &&(u32, u32)| {
        let share = if prefetches(nsg, bc, d as u32, emulate, x3) { 2 } else { 1 };
        nsg <= 4 || tiles(u64::from(nsg) * 16) * share >= u64::from(caps.parallelism.max(1)) * 4 / u64::from(nsg)
    };
    candidates.iter().find(fill).or(candidates.first()).copied()
}

/// An experiment build's forced tiling for head size `d`: `EXP_ATTN_TILING=d128=8x64,d64=4x32`
/// (subgroups x keys per tile; `x3d64=2x32` for the split f32 form; `bench/README.md`). Release
/// builds never read it.
#[cfg(feature = "wgsl-override")]
fn experiment_tiling(d: u64, x3: bool) -> Option<(u32, u32)> {
    let spec = std::env::var("EXP_ATTN_TILING").ok()?;
    let key = format!("{}d{d}", if x3 { "x3" } else { "" });
    let (_, t) = spec.split(',').filter_map(|e| e.split_once('=')).find(|(k, _)| *k == key)?;
    let (nsg, bc) = t.split_once('x')?;
    Some((nsg.parse().ok()?, bc.parse().ok()?))
}

/// One tensor-core flash kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CoopSource {
    pub d: u32,
    pub nsg: u32,
    pub bc: u32,
    pub mask: MaskKind,
    pub emulate: bool,
    /// Writes split-KV partials (f32) instead of the output.
    pub split: bool,
    /// Caps the scores (GroupQueryAttention's `softcap`). Only such kernels carry the capping
    /// code: unrolled over a row's scores it made every pipeline ~20% slower to create.
    pub softcap: bool,
    /// f32 at split precision: three f16 products per fragment pair (never capped).
    pub x3: bool,
    /// Never causal, K/V rows in whole chunks (8 halves, or 4 floats in the split f32 form), never
    /// capped, not seqlens ([`plain_fits`]): the kernel leaves out the element-wise staging and
    /// the causal paths. On an H100 the Whisper-tiny f16 kernel then compiled in 113 instead of
    /// 170 ms (rolled, one thread, the driver's cache off; docs/PERFORMANCE.md).
    pub plain: bool,
}

/// Whether a problem may take the plain kernel ([`CoopSource::plain`]).
fn plain_fits(mask: MaskKind, softcap: bool, causal: bool, whole_chunks: bool) -> bool {
    !softcap && !causal && whole_chunks && mask != MaskKind::SeqLens
}

impl OpSource for CoopSource {
    fn name(&self) -> String {
        let split = if self.split { "_split" } else { "" };
        let emu = if self.emulate { "_emu" } else { "" };
        let cap = if self.softcap { "_cap" } else { "" };
        let plain = if self.plain { "_plain" } else { "" };
        let ty = if self.x3 { "f32x3" } else { "f16" };
        let (d, rows, bc, mask) = (self.d, self.nsg * 16, self.bc, self.mask.name());
        format!("{COOP_FLASH_PREFIX}{ty}_d{d}_{rows}x{bc}_mask_{mask}{cap}{plain}{split}{emu}")
    }

    fn emit(&self) -> Result<String, String> {
        render(
            "attn_coop.wgsl.j2",
            minijinja::context! {
                d => self.d,
                nsg => self.nsg,
                bc => self.bc,
                cw => chunk_width(self.nsg, self.bc),
                rw => row_words(self.nsg, self.bc),
                mask => self.mask.name(),
                emulate => self.emulate,
                split => self.split,
                softcap => self.softcap,
                x3 => self.x3,
                plain => self.plain,
                prefetch => prefetches(self.nsg, self.bc, self.d, self.emulate, self.x3),
            },
        )
    }

    /// The key loop runs from `split · chunk` to at most `skv` by BC (no wrap: `skv` is a
    /// bound tensor's dimension, far below 2³² − BC); the staging loops (`attn_coop_q`,
    /// `attn_coop_x3_stage`, the emulated fragments) run over constants, `kv_groups` (a
    /// workgroup count) or `threads / subgroup_size`, by constant steps or by one.
    fn loops_terminate(&self) -> bool {
        true
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        // K and V load as eight f16 per vec4<u32> (the split f32 form loads f32).
        let base = naga::valid::Capabilities::SHADER_FLOAT16 | naga::valid::Capabilities::SUBGROUP;
        let caps = if self.x3 { base } else { base | crate::shader::F16X8_CAPS };
        if self.emulate {
            caps
        } else {
            caps | naga::valid::Capabilities::COOPERATIVE_MATRIX | naga::valid::Capabilities::SUBGROUP_BARRIER
        }
    }
}

/// Every tensor-core variant on `caps`: real fragments where the device has them, else the
/// emulated form (what this adapter's tests run).
pub fn variants(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    let emulate = device_check(caps, false).is_err();
    let mut out = Vec::new();
    for (d, (nsg, bc)) in
        HEAD_SIZES.iter().flat_map(|&d| candidates(d, caps, emulate, false).into_iter().map(move |t| (d, t)))
    {
        let d = d as u32;
        for mask in MaskKind::ALL {
            // Capped scores come from GroupQueryAttention only, whose mask is boolean or its seqlens.
            let gqa = matches!(mask, MaskKind::Bool | MaskKind::SeqLens);
            let softcaps: &[bool] = if gqa { &[false, true] } else { &[false] };
            for split in [false, true] {
                for &softcap in softcaps {
                    for plain in [false, true] {
                        if plain && !plain_fits(mask, softcap, false, true) {
                            continue;
                        }
                        let source = CoopSource { d, nsg, bc, mask, emulate, split, softcap, x3: false, plain };
                        out.push(ShaderVariant::Op(OpShader::new(source)));
                    }
                }
            }
        }
    }
    out.extend(x3_variants(caps, emulate));
    out
}

/// The split f32 variants: every mask but GroupQueryAttention's seqlens (GroupQueryAttention in
/// f32 runs on the SIMT kernel), never capped.
fn x3_variants(caps: &DeviceCaps, emulate: bool) -> Vec<ShaderVariant> {
    let mut out = Vec::new();
    for d in X3_HEAD_SIZES {
        let Some(&(nsg, bc)) = candidates(d, caps, emulate, true).first() else { continue };
        for mask in MaskKind::ALL.into_iter().filter(|&m| m != MaskKind::SeqLens) {
            for split in [false, true] {
                for plain in [false, true] {
                    let source =
                        CoopSource { d: d as u32, nsg, bc, mask, emulate, split, softcap: false, x3: true, plain };
                    out.push(ShaderVariant::Op(OpShader::new(source)));
                }
            }
        }
    }
    if !out.is_empty() {
        out.push(ShaderVariant::Op(OpShader::new(KvMaxSource)));
    }
    out
}

/// The split f32 kernel's maxima pass (`wgsl/attn_kv_absmax.wgsl.j2`): the largest |K| and |V|
/// per workgroup, which the attention reads before its first tile (a per-tile maximum cost it
/// 17–20% on the H200, docs/PERFORMANCE.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KvMaxSource;

/// Invocations of the maxima pass, and at most its workgroups (the attention reads every entry).
const KV_MAX_THREADS: u32 = 256;
const KV_MAX_GROUPS: u64 = 256;

impl OpSource for KvMaxSource {
    fn name(&self) -> String {
        format!("attn_kv_absmax_t{KV_MAX_THREADS}")
    }

    fn emit(&self) -> Result<String, String> {
        render("attn_kv_absmax.wgsl.j2", minijinja::context! { threads => KV_MAX_THREADS })
    }
}

/// The uniforms of `attn_kv_absmax.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct KvMaxParams {
    dims: [u32; 4],
    k_stride: [u32; 4],
    v_stride: [u32; 4],
    total: u32,
    groups: u32,
    pad: [u32; 2],
}

/// The maxima pass over K and V and the bytes of its output: a workgroup per 8 elements per
/// invocation, at most [`KV_MAX_GROUPS`].
fn kv_max_pass(g: &Geometry, shared: &SharedParams) -> Result<(OpDispatch, u64), GpuError> {
    let total = g.batch * g.kv_heads * g.skv * g.d;
    let groups = total.div_ceil(u64::from(KV_MAX_THREADS) * 8).clamp(1, KV_MAX_GROUPS);
    let params = KvMaxParams {
        dims: [to_u32("batch", g.batch)?, to_u32("K/V heads", g.kv_heads)?, to_u32("keys", g.skv)?, g.d as u32],
        k_stride: shared.strides[1],
        v_stride: shared.strides[2],
        total: to_u32("K/V elements", total)?,
        groups: groups as u32,
        pad: [0; 2],
    };
    let dispatch = OpDispatch::new(ShaderVariant::Op(OpShader::new(KvMaxSource)), &params, [groups as u32, 1, 1]);
    Ok((dispatch, groups * 8))
}

/// A tiling chosen for one problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tiling {
    pub nsg: u32,
    pub bc: u32,
    pub emulate: bool,
    /// f32 at split precision.
    pub x3: bool,
}

/// The uniforms of `attn_coop.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct CoopParams {
    shared: SharedParams,
    q_tiles: u32,
    count: u32,
    grid_x: u32,
    grid_y: u32,
    splits: u32,
    chunk: u32,
    vec_kv: u32,
    /// The maxima pass's entries (split f32 form; 0 otherwise).
    kv_groups: u32,
}

/// Whether K and V rows can be staged in whole 8-half chunks: contiguous rows whose every start
/// (batch, head and row strides) is a multiple of 8 halves.
fn whole_chunks(g: &Geometry, x3: bool) -> bool {
    let ty = if x3 { crate::dtype::ElemType::F32 } else { crate::dtype::ElemType::F16 };
    super::decode::whole_chunks(g, ty)
}

/// Fewest key tiles per split: shorter chunks cost more in partials than they gain.
const MIN_SPLIT_TILES: u64 = 4;

/// (splits, keys per split) for `tiles` query tiles of `nsg` subgroups over `skv` keys in tiles of
/// `bc`: a workgroup per unit of the device's parallelism (counted in workgroups of up to four
/// subgroups: one of eight takes the registers of two), each split at least [`MIN_SPLIT_TILES`]
/// tiles; one split when the query tiles alone fill the device. (On the H200 more splits bought
/// nothing: 6 splits of the Whisper-tiny problem ran as long as 1, and 3 splits of S=4096 took 10%
/// longer.)
pub fn plan_splits(tiles: u64, skv: u64, nsg: u32, bc: u32, caps: &DeviceCaps) -> (u64, u64) {
    let bc = u64::from(bc);
    let target = u64::from(caps.parallelism.max(1)) * 4 / u64::from(nsg.max(4));
    let max_splits = (skv.div_ceil(bc) / MIN_SPLIT_TILES).max(1);
    split_keys(skv, target.div_ceil(tiles.max(1)).clamp(1, max_splits), bc)
}

/// (splits, keys per split) for about `splits` chunks of whole `bc`-key tiles over `skv` keys.
fn split_keys(skv: u64, splits: u64, bc: u64) -> (u64, u64) {
    let chunk = skv.div_ceil(splits.max(1)).div_ceil(bc).max(1) * bc;
    (skv.div_ceil(chunk).max(1), chunk)
}

/// The tensor-core kernel's dispatch (after the split f32 form's maxima pass, and with key
/// splits before the reduction of its partials).
pub(super) fn plan_dispatches(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    shared: SharedParams,
    Tiling { nsg, bc, emulate, x3 }: Tiling,
) -> Result<AttnPlan, GpuError> {
    let br = u64::from(nsg * 16);
    let q_tiles = g.sq.div_ceil(br);
    let tiles = g.batch * g.heads * q_tiles;
    let (splits, chunk) = match k.splits {
        Some(s) => (s, split_keys(g.skv, s, u64::from(bc)).1),
        None => plan_splits(tiles, g.skv, nsg, bc, caps),
    };
    let count = tiles * splits;
    let dims = grid(count, caps)?;
    let pre = match (x3, k.kv_bound) {
        (false, _) => None,
        (true, Some(b)) if b.iter().all(|x| x.is_finite() && *x > 0.0) => Some(Maxima::Bound(b)),
        (true, _) => {
            let (pass, bytes) = kv_max_pass(g, &shared)?;
            Some(Maxima::Pass(pass, bytes))
        }
    };
    let params = CoopParams {
        shared,
        q_tiles: to_u32("query tiles", q_tiles)?,
        count: to_u32("attention workgroups", count)?,
        grid_x: dims[0],
        grid_y: dims[1],
        splits: to_u32("key splits", splits)?,
        chunk: to_u32("keys per split", chunk)?,
        vec_kv: u32::from(whole_chunks(g, x3)),
        kv_groups: match &pre {
            Some(Maxima::Pass(_, bytes)) => (bytes / 8) as u32,
            Some(Maxima::Bound(_)) => 1,
            None => 0,
        },
    };
    let split = splits > 1;
    let softcap = k.softcap > 0.0;
    let plain = plain_fits(k.mask, softcap, params.shared.causal != 0, params.vec_kv != 0);
    let source = CoopSource { d: g.d as u32, nsg, bc, mask: k.mask, emulate, split, softcap, x3, plain };
    let main = OpDispatch::new(ShaderVariant::Op(OpShader::new(source)), &params, dims);
    let reduce = if split {
        let work = g.batch * g.heads * g.sq * splits * (g.d + 2) * 4;
        Some((super::decode::reduce(k, caps, g, params.splits, &shared)?, work))
    } else {
        None
    };
    let kernel = match (emulate, x3) {
        (false, false) => "flash attention on tensor cores",
        (true, false) => "flash attention on tensor cores (emulated)",
        (false, true) => "flash attention on tensor cores, f32 split in three f16 products",
        (true, true) => "flash attention on tensor cores, f32 split in three f16 products (emulated)",
    };
    let bounds = if matches!(pre, Some(Maxima::Bound(_))) { ", K/V scales from their bounds" } else { "" };
    let plain_note = if plain { ", plain (never causal, K/V in whole chunks)" } else { "" };
    let tiling = format!("tiles {br}x{bc}, {splits} key split(s) of {chunk}{bounds}{plain_note}");
    let tail = reduce.map_or(Tail::None, |(d, bytes)| Tail::Reduce(d, bytes));
    Ok(AttnPlan { line: k.describe(g, kernel, &tiling), tiling, pre, main, tail })
}

#[cfg(test)]
#[path = "coop_tests.rs"]
mod tests;

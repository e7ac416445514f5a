//! Split-KV attention for a few query rows (decode: one new token against a long cache). The
//! flash kernel's 32-row query tiles would mostly idle there, and one workgroup per head would
//! leave most of a large GPU idle; instead each (row, key chunk) gets a workgroup
//! (`wgsl/attn_decode.wgsl.j2`) writing a partial (acc, max, sum) to a workspace of
//! rows × splits × (D + 2) floats, which `attn_decode_reduce` combines into the output.
//!
//! Where K and V rows are whole 16-byte chunks and the device has subgroups, the K/V-head form
//! (`wgsl/attn_decode_kv.wgsl.j2`) runs instead: one workgroup per (batch, K/V head, block of
//! query rows, key chunk), so the query heads that share a K/V head read it once, in whole-row
//! loads; the last workgroup of each row block combines the chunks itself where they are few
//! (`wgsl/attn_decode_last.wgsl.j2`), else `attn_decode_combine` does.

use bytemuck::{Pod, Zeroable};

use super::kernel::{AttnPlan, Causal, Counted, FlashKernel, Geometry, MaskKind, SharedParams, Tail};
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid, grid_for, to_u32};
use crate::shader::{OpShader, ShaderVariant};

pub use super::decode_source::{variants, DecodeKvSource, DecodeReduceSource, DecodeSource};

/// Query rows up to which the split-KV kernel runs instead of the flash kernel.
pub const DECODE_MAX_ROWS: u64 = 4;
/// Keys a workgroup scores per step.
const STEP: u64 = 64;
/// Fewest keys per chunk: one step. A chunk's partial is D + 2 floats, far less than its keys'
/// K and V rows, and decode on the H200 is latency-bound, so short chunks pay.
const MIN_CHUNK: u64 = 64;

/// (splits, keys per chunk) for `rows` query rows over `skv` keys: enough workgroups for the
/// device (4 per unit of its parallelism), chunks of at least [`MIN_CHUNK`] keys.
pub fn plan_splits(rows: u64, skv: u64, caps: &DeviceCaps) -> (u64, u64) {
    let target = 4 * u64::from(caps.parallelism.max(1));
    let max_splits = skv.div_ceil(MIN_CHUNK).max(1);
    let splits = target.div_ceil(rows.max(1)).clamp(1, max_splits);
    let chunk = skv.div_ceil(splits).div_ceil(STEP).max(1) * STEP;
    (skv.div_ceil(chunk).max(1), chunk)
}

/// Head sizes the K/V-head kernel is generated for (whole 16-byte chunks of f16 and f32 rows in
/// a power of two of lanes).
pub const KV_HEAD_SIZES: [u64; 3] = [64, 128, 256];
/// Invocations per workgroup of the K/V-head kernel, and keys each key group scores per step.
pub(super) const KV_THREADS: u32 = 128;
pub(super) const KV_KEYS_PER_GROUP: u32 = 4;
/// Keys each key group of the wide form (`DecodeKvSource::wide`) scores per step.
pub(super) const WIDE_KEYS_PER_GROUP: u32 = 8;
/// Most steps over the keys for which a workgroup per query row reads them all (the wide form)
/// instead of key chunks whose partials the last of them combines. On the H100, in a Llama-3.2-1B
/// token (d = 64, steps of 512 keys): 2 steps take 7–9 µs against the chunks' 15–16 (whose
/// partials, stores and last combine cost about 7), 5 steps 14.5 against 16.3 (with the combine
/// dispatch); alone, 8 steps took 19 µs against 16 (`docs/performance/sessions-58-61.md`,
/// sixtieth session).
const WIDE_MAX_STEPS: u64 = 5;
/// Most elements of a row one invocation of the K/V-head kernel holds.
const KV_MAX_ELEMENTS: u64 = 16;
/// Query rows per workgroup of the K/V-head kernel: the smallest that holds a K/V head's rows.
pub(super) const ROW_BLOCKS: [u32; 4] = [1, 2, 4, 8];
/// Key chunks per row from which the per-row combine replaces the per-element reduction.
const COMBINE_MIN_SPLITS: u64 = 8;
/// Most rounds of four chunks' loads per invocation for the kernel's last workgroup of a row
/// block to combine the chunks itself; past that the combine dispatch, 256 invocations per row,
/// finishes sooner.
pub(super) const LAST_MAX_ROUNDS: u64 = 8;
/// Storage buffers the K/V-head kernel binds with a mask: Q, K, V, the mask, its partials, the
/// output and the chunk counters.
const KV_STORAGE: u32 = 7;

/// Invocations sharing a key row in the K/V-head kernel on `caps` (each loads whole 16-byte
/// chunks of it, and a subgroup shuffle sums their dot products), or `None` where it does not run.
pub fn kv_lanes(ty: ElemType, d: u64, caps: &DeviceCaps) -> Option<u32> {
    if !caps.subgroups || !KV_HEAD_SIZES.contains(&d) || caps.max_storage_buffers_per_stage < KV_STORAGE {
        return None;
    }
    let chunks = u32::try_from(d * ty.size() / 16).ok()?;
    let most = chunks.min(caps.subgroup_min_size).min(32);
    if most < 4 {
        return None;
    }
    let lanes = 1 << (31 - most.leading_zeros());
    lanes_fit(ty, d, lanes).then_some(lanes)
}

/// Whether `lanes` invocations can share a key row of head size `d`: whole 16-byte chunks each,
/// and at most 16 elements of a row per invocation (of Q, of the output, of each K/V row in
/// flight): more would spill, and the unrolled text grows with it.
fn lanes_fit(ty: ElemType, d: u64, lanes: u32) -> bool {
    let chunks = d * ty.size() / 16;
    lanes.is_power_of_two() && chunks % u64::from(lanes) == 0 && d / u64::from(lanes) <= KV_MAX_ELEMENTS
}

/// `lanes` per key row forced by a test, where the K/V-head kernel can run them.
fn forced_lanes(ty: ElemType, d: u64, lanes: u32, caps: &DeviceCaps) -> Result<u32, GpuError> {
    let fits = kv_lanes(ty, d, caps).is_some() && lanes <= caps.subgroup_min_size && lanes_fit(ty, d, lanes);
    fits.then_some(lanes).ok_or_else(|| {
        GpuError::Internal(format!("the K/V-head decode kernel cannot run {lanes} lanes per key row of head size {d}"))
    })
}

/// Keys per step of the K/V-head kernel with `lanes` per key row.
fn kv_step(lanes: u32) -> u64 {
    u64::from(KV_THREADS / lanes * KV_KEYS_PER_GROUP)
}

/// (splits, keys per chunk) of the K/V-head kernel for `units` workgroups per key chunk, each
/// over `rows` query rows, over `skv` keys in steps of `step`: about two workgroups per unit of
/// the device's parallelism (the kernel is bound by memory latency), but no more chunks than
/// `skv / (8 · rows)`, so a row's partials (D + 2 floats per chunk) stay under an eighth of the
/// K/V bytes its chunks read, and the combine has few chunks to walk.
pub fn kv_splits(units: u64, rows: u64, skv: u64, step: u64, caps: &DeviceCaps) -> (u64, u64) {
    let target = 2 * u64::from(caps.parallelism.max(1));
    let most = skv.div_ceil(step).min(skv / (8 * rows.max(1))).max(1);
    let splits = target.div_ceil(units.max(1)).clamp(1, most);
    let chunk = skv.div_ceil(splits).div_ceil(step).max(1) * step;
    (skv.div_ceil(chunk).max(1), chunk)
}

/// The uniforms of `attn_decode.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct DecodeParams {
    shared: SharedParams,
    chunk: u32,
    count: u32,
    splits: u32,
    pad: u32,
}

/// The uniforms of `attn_decode_kv.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct DecodeKvParams {
    shared: SharedParams,
    chunk: u32,
    count: u32,
    splits: u32,
    rows: u32,
    row_blocks: u32,
    kv_heads: u32,
    /// Nonzero: the kernel's last workgroups combine the partials (no combine dispatch).
    fused: u32,
    pad: u32,
}

/// GroupQueryAttention's preparation folded into the K/V-head kernel for one new token per batch
/// (`_prep`): the uniforms after the kernel's own. Q is read from the node's query, the new K and V
/// rows from their sources (`[B, 1, row]`, heads from an offset), the past rows from the past caches
/// unless the present is the past's own range.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PrepFields {
    /// Elements per token row of the query and of the K/V sources (packed Q/K/V: the same).
    pub q_row: u32,
    pub kv_row: u32,
    /// Where Q's, K's and V's heads start in their rows.
    pub q_off: u32,
    pub k_off: u32,
    pub v_off: u32,
    /// rot / 2 (0: no rotation) and the cos/sin caches' rows.
    pub half: u32,
    pub max_seq: u32,
    /// Bit 0: interleaved pairs; bit 1: Q's RMS norm; bit 2: K's; bits 3 and 4: the present K, V
    /// is the past's own range (its rows are in place).
    pub flags: u32,
    /// Rows of the past caches.
    pub past: u32,
    /// The status word's code for a length the caches cannot hold.
    pub code: u32,
    pub q_eps: f32,
    pub k_eps: f32,
}

/// Storage buffers the `_prep` kernel binds.
const PREP_STORAGE: u32 = 16;

/// Whether the device binds the `_prep` kernel's storage buffers.
pub fn prep_fits(caps: &DeviceCaps) -> bool {
    caps.max_storage_buffers_per_stage >= PREP_STORAGE
}

/// Whether the K/V-head kernel runs one new token per batch over a `[B, H_kv, T, d]` cache of
/// `ty` on `caps`, with the preparation folded in.
pub fn prep_runs(ty: ElemType, d: u64, caps: &DeviceCaps) -> bool {
    prep_fits(caps) && kv_lanes(ty, d, caps).is_some_and(|l| lanes_fit(ty, d, l))
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct DecodePrepParams {
    kv: DecodeKvParams,
    prep: PrepFields,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct ReduceParams {
    rows: u32,
    d: u32,
    splits: u32,
    sq: u32,
    heads: u32,
    pad: [u32; 3],
    o_stride: [u32; 4],
}

/// The two dispatches of a split-KV run.
pub(super) fn plan(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    shared: SharedParams,
) -> Result<AttnPlan, GpuError> {
    let lanes = match k.lanes {
        Some(lanes) => Some(forced_lanes(k.ty, g.d, lanes, caps)?),
        None => kv_lanes(k.ty, g.d, caps),
    };
    if let Some(lanes) = lanes.filter(|_| whole_chunks(g, k.ty)) {
        return plan_kv(k, caps, g, shared, lanes);
    }
    if k.prep.is_some() {
        return Err(GpuError::Internal(format!(
            "{} '{}': the folded preparation needs the K/V-head kernel",
            k.op, k.name
        )));
    }
    let rows = g.batch * g.heads * g.sq;
    let (splits, chunk) = plan_splits(rows, g.skv, caps);
    let count = rows * splits;
    let params = DecodeParams {
        shared,
        chunk: to_u32("keys per chunk", chunk)?,
        count: to_u32("attention workgroups", count)?,
        splits: to_u32("key splits", splits)?,
        pad: 0,
    };
    let part = ShaderVariant::Op(OpShader::new(DecodeSource { ty: k.ty, d: g.d as u32, mask: k.mask }));
    let main = OpDispatch::new(part, &params, grid(count, caps)?);
    let reduce = reduce(k, caps, g, params.splits, &shared)?;
    let causal = if k.causal == Causal::None { "" } else { ", causal" };
    let tiling = format!("{splits} chunks of {chunk} keys");
    let line = format!(
        "{} '{}': split-KV attention B={} H={}/{} Sq={} Skv={} D={}: {tiling}, mask {}{causal}",
        k.op,
        k.name,
        g.batch,
        g.heads,
        g.kv_heads,
        g.sq,
        g.skv,
        g.d,
        k.mask.name()
    );
    Ok(AttnPlan {
        line,
        tiling: format!("split-KV, {tiling}"),
        pre: None,
        main,
        tail: Tail::Reduce(reduce, count * (g.d + 2) * 4),
    })
}

/// Whether K and V rows are whole 16-byte chunks of `ty`: contiguous rows whose every start
/// (batch, head and row strides) is a multiple of a chunk.
pub(super) fn whole_chunks(g: &Geometry, ty: ElemType) -> bool {
    let per = 16 / ty.size();
    g.strides[1..].iter().all(|s| s[3] == 1 && s[..3].iter().all(|x| x % per == 0))
}

/// An experiment build's key chunks for the K/V-head kernel: `EXP_DECODE_SPLITS=N` (about N, in
/// whole steps; `bench/README.md`). Release builds never read the variable.
fn forced_kv_splits() -> Option<u64> {
    if !cfg!(feature = "wgsl-override") {
        return None;
    }
    std::env::var("EXP_DECODE_SPLITS").ok()?.trim().parse().ok()
}

/// The K/V-head kernel, and the combine dispatch after it unless its last workgroups combine.
fn plan_kv(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    shared: SharedParams,
    lanes: u32,
) -> Result<AttnPlan, GpuError> {
    let rows = (g.heads / g.kv_heads) * g.sq;
    let prep = k.prep.filter(|_| k.mask == MaskKind::SeqLens && g.sq == 1 && prep_fits(caps));
    if k.prep.is_some() && prep.is_none() {
        return Err(GpuError::Internal(format!("{} '{}': no folded preparation for these shapes", k.op, k.name)));
    }
    if k.splits.is_none() && forced_kv_splits().is_none() {
        let wide = DecodeKvSource { prep: prep.is_some(), ..kv_source(k, caps, g, 1, lanes, true) };
        if g.skv.div_ceil(wide.step()) <= wide_max_steps() && wide_fits(&wide, caps) {
            return plan_wide(k, caps, g, (shared, prep), wide, rows);
        }
    }
    let rb = ROW_BLOCKS.into_iter().find(|&r| u64::from(r) >= rows.min(8)).unwrap_or(8);
    let row_blocks = rows.div_ceil(u64::from(rb));
    let units = g.batch * g.kv_heads * row_blocks;
    let (splits, chunk) = match k.splits.or_else(forced_kv_splits) {
        Some(s) => {
            let chunk = g.skv.div_ceil(s.max(1)).div_ceil(kv_step(lanes)).max(1) * kv_step(lanes);
            (g.skv.div_ceil(chunk).max(1), chunk)
        }
        None => kv_splits(units, rows.min(u64::from(rb)), g.skv, kv_step(lanes), caps),
    };
    let count = units * splits;
    let source = DecodeKvSource { prep: prep.is_some(), ..kv_source(k, caps, g, rb, lanes, false) };
    let fused = source.combines_last(splits);
    let params = DecodeKvParams {
        shared,
        chunk: to_u32("keys per chunk", chunk)?,
        count: to_u32("attention workgroups", count)?,
        splits: to_u32("key splits", splits)?,
        rows: to_u32("query rows per K/V head", rows)?,
        row_blocks: to_u32("query row blocks", row_blocks)?,
        kv_heads: to_u32("K/V heads", g.kv_heads)?,
        fused: u32::from(fused),
        pad: 0,
    };
    let (variant, grid) = (ShaderVariant::Op(OpShader::new(source)), grid(count, caps)?);
    let main = match prep {
        Some(prep) => OpDispatch::new(variant, &DecodePrepParams { kv: params, prep }, grid),
        None => OpDispatch::new(variant, &params, grid),
    };
    let combine = if fused {
        None
    } else if splits >= COMBINE_MIN_SPLITS {
        Some(combine(k, caps, g, params.splits, &shared)?)
    } else {
        Some(reduce(k, caps, g, params.splits, &shared)?)
    };
    let partials = g.batch * g.heads * g.sq * splits * (g.d + 2) * 4;
    let combined = if fused { ", combined by the last" } else { "" };
    let tiling = format!("{splits} chunks of {chunk} keys{combined}, {rb} query rows per K/V head and workgroup");
    let line = k.describe(g, "split-KV attention per K/V head", &tiling);
    Ok(AttnPlan {
        line,
        tiling: format!("split-KV per K/V head, {tiling}"),
        pre: None,
        main,
        tail: Tail::Counted(Counted { partials, counters: units * 4, combine }),
    })
}

/// The K/V-head kernel's source for `rows` query rows per workgroup (no folded preparation).
fn kv_source(k: &FlashKernel, caps: &DeviceCaps, g: &Geometry, rows: u32, lanes: u32, wide: bool) -> DecodeKvSource {
    let subgroup = caps.subgroup_min_size;
    DecodeKvSource { ty: k.ty, d: g.d as u32, mask: k.mask, rows, lanes, subgroup, prep: false, wide }
}

/// [`WIDE_MAX_STEPS`], or an experiment build's `EXP_WIDE_MAX_STEPS=N` (0: never wide).
fn wide_max_steps() -> u64 {
    let forced = || std::env::var("EXP_WIDE_MAX_STEPS").ok()?.trim().parse().ok();
    cfg!(feature = "wgsl-override").then(forced).flatten().unwrap_or(WIDE_MAX_STEPS)
}

/// Whether the device runs the wide form: its invocations in one workgroup, and its combine's
/// partial rows (one per subgroup) in workgroup memory.
fn wide_fits(source: &DecodeKvSource, caps: &DeviceCaps) -> bool {
    let subgroups = u64::from(source.threads() / caps.subgroup_min_size.max(source.lanes).max(1));
    let bytes = 4 * subgroups * (u64::from(source.d) + 2) + 4;
    source.threads() <= caps.max_invocations_per_workgroup && bytes <= u64::from(caps.max_workgroup_storage_bytes)
}

/// The wide form: a workgroup per (batch, query row) over every key, writing the output itself;
/// with a folded preparation every workgroup of a K/V head writes the new K and V rows (the same
/// values) before its loop reads them, and the first copies a past that is not the present's range.
fn plan_wide(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    (shared, prep): (SharedParams, Option<PrepFields>),
    source: DecodeKvSource,
    rows: u64,
) -> Result<AttnPlan, GpuError> {
    let step = source.step();
    let chunk = g.skv.div_ceil(step).max(1) * step;
    let count = g.batch * g.kv_heads * rows;
    let params = DecodeKvParams {
        shared,
        chunk: to_u32("keys per chunk", chunk)?,
        count: to_u32("attention workgroups", count)?,
        splits: 1,
        rows: to_u32("query rows per K/V head", rows)?,
        row_blocks: to_u32("query row blocks", rows)?,
        kv_heads: to_u32("K/V heads", g.kv_heads)?,
        fused: 0,
        pad: 0,
    };
    let (variant, grid) = (ShaderVariant::Op(OpShader::new(source)), grid(count, caps)?);
    let main = match prep {
        Some(prep) => OpDispatch::new(variant, &DecodePrepParams { kv: params, prep }, grid),
        None => OpDispatch::new(variant, &params, grid),
    };
    let tiling =
        format!("one workgroup of {} per query row over {} steps of {step} keys", source.threads(), chunk / step);
    Ok(AttnPlan {
        line: k.describe(g, "split-KV attention per K/V head", &tiling),
        tiling: format!("K/V-head decode, {tiling}"),
        pre: None,
        main,
        // The kernel binds a partials buffer and counters it never touches.
        tail: Tail::Counted(Counted { partials: 16, counters: 16, combine: None }),
    })
}

/// The per-row combine of `splits` partials (the layout `reduce` reads), for many splits.
fn combine(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    splits: u32,
    shared: &SharedParams,
) -> Result<OpDispatch, GpuError> {
    let rows = g.batch * g.heads * g.sq;
    let params = reduce_params(rows, g.d, splits, shared)?;
    let source = ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty: k.ty, per_row: true }));
    Ok(OpDispatch::new(source, &params, grid(rows, caps)?))
}

fn reduce_params(rows: u64, d: u64, splits: u32, shared: &SharedParams) -> Result<ReduceParams, GpuError> {
    Ok(ReduceParams {
        rows: to_u32("attention rows", rows)?,
        d: d as u32,
        splits,
        sq: shared.sq,
        heads: shared.heads,
        pad: [0; 3],
        o_stride: shared.strides[3],
    })
}

/// The dispatch that combines `splits` partials per row into the output (what the split-KV
/// kernels write: per (row, split) `d` accumulator columns, the max and the sum); it binds the
/// partials, then the output.
pub(super) fn reduce(
    k: &FlashKernel,
    caps: &DeviceCaps,
    g: &Geometry,
    splits: u32,
    shared: &SharedParams,
) -> Result<OpDispatch, GpuError> {
    if g.d % 4 != 0 {
        return Err(GpuError::Internal(format!("the split-KV reduction takes four columns at a time, not of {}", g.d)));
    }
    let rows = g.batch * g.heads * g.sq;
    let params = reduce_params(rows, g.d, splits, shared)?;
    let red = ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty: k.ty, per_row: false }));
    // An invocation per four columns of a row.
    Ok(OpDispatch::new(red, &params, grid_for(rows * g.d.div_ceil(4), caps)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::profiles;

    #[test]
    fn every_head_size_reduces_four_columns_at_a_time() {
        assert!(super::super::HEAD_SIZES.iter().all(|d| d % 4 == 0));
    }

    #[test]
    fn uniforms_match_the_templates() {
        assert_eq!(std::mem::size_of::<DecodeParams>(), 128);
        assert_eq!(std::mem::size_of::<ReduceParams>(), 48);
        assert_eq!(std::mem::size_of::<DecodeKvParams>(), 144);
        assert_eq!(std::mem::size_of::<DecodePrepParams>(), 192);
    }

    #[test]
    fn splits_fill_the_device_in_whole_steps() {
        let h200 = profiles::get("h200").unwrap();
        // Llama decode: 32 rows over 4096 keys: 32 chunks of 128.
        assert_eq!(plan_splits(32, 4096, &h200), (32, 128));
        // ... over 513 keys: chunks of one step.
        assert_eq!(plan_splits(32, 513, &h200), (9, 64));
        // Many rows: no split.
        assert_eq!(plan_splits(4096, 4096, &h200), (1, 4096));
        // Short sequences: chunks of one step.
        assert_eq!(plan_splits(1, 100, &h200), (2, 64));
        let llvmpipe = profiles::get("llvmpipe").unwrap();
        let (splits, chunk) = plan_splits(2, 1000, &llvmpipe);
        assert!(splits > 1 && chunk % STEP == 0 && splits * chunk >= 1000 && (splits - 1) * chunk < 1000);
    }

    #[test]
    fn kv_lanes_follow_the_subgroup_size_and_whole_chunks() {
        let h200 = profiles::get("h200").unwrap();
        // f16: 8 halves a chunk; f32: 4 floats. At most 32 lanes (one NVIDIA subgroup).
        assert_eq!(kv_lanes(ElemType::F16, 64, &h200), Some(8));
        assert_eq!(kv_lanes(ElemType::F16, 128, &h200), Some(16));
        assert_eq!(kv_lanes(ElemType::F16, 256, &h200), Some(32));
        assert_eq!(kv_lanes(ElemType::F32, 256, &h200), Some(32));
        // Head sizes 80 and 96 keep the per-row kernel.
        assert_eq!(kv_lanes(ElemType::F16, 80, &h200), None);
        let llvmpipe = profiles::get("llvmpipe").unwrap();
        assert_eq!(kv_lanes(ElemType::F16, 128, &llvmpipe), Some(8));
        // 32 elements per invocation: the per-row kernel.
        assert_eq!(kv_lanes(ElemType::F16, 256, &llvmpipe), None);
        assert_eq!(kv_lanes(ElemType::F16, 128, &profiles::get("no_subgroups").unwrap()), None);
    }

    #[test]
    fn kv_splits_fill_the_device_in_whole_steps() {
        let h200 = profiles::get("h200").unwrap();
        let step = kv_step(16);
        // Llama decode (8 K/V heads, one block of 4 rows each) over 4096 keys: about two workgroups
        // per unit of parallelism.
        let (splits, chunk) = kv_splits(8, 4, 4096, step, &h200);
        assert_eq!(chunk % step, 0);
        assert!(splits * chunk >= 4096 && (splits - 1) * chunk < 4096);
        assert!((264..=2 * 264 + 8).contains(&(8 * splits)), "{splits} chunks of {chunk}");
        // Gemma's one K/V head of 4 rows: no more than 4096 / 32 chunks.
        let (splits, chunk) = kv_splits(1, 4, 4096, step, &h200);
        assert_eq!((splits, chunk), (128, 32));
        // A short cache: whole steps, and at least one chunk.
        assert_eq!(kv_splits(8, 1, 100, step, &h200), (100u64.div_ceil(step), step));
        assert_eq!(kv_splits(8, 8, 40, step, &h200), (1, 64));
        // Many rows: one chunk.
        assert_eq!(kv_splits(4096, 1, 4096, step, &h200), (1, 4096u64.div_ceil(step) * step));
    }
}

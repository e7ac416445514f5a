//! The strided copy shared by Transpose, Slice, Split and Expand: every output element reads
//! one input element at `base + Σ coord[d]·stride[d]`. Each op only says how its output dims
//! walk the input ([`Strided`]); dims are coalesced here so the kernel divides as little as
//! possible, and a transpose whose contiguous input axis moves takes the tiled kernel.

use bytemuck::{Pod, Zeroable};

use super::shader::{LayoutSource, Pattern};
use crate::caps::{DeviceCaps, DeviceKind};
use crate::error::GpuError;
use crate::gemm::layout::check_binding;
use crate::ops::planned::OpDispatch;
use crate::ops::{grid, grid_for, to_u32, PrepareCx, WORKGROUP};
use crate::runtime::{Dispatch, GpuBuffer};

/// Most dims a layout kernel walks (after coalescing).
pub const MAX_RANK: usize = 8;

/// Tile edge of the tiled transpose (elements).
const TILE: u64 = 32;

/// Smallest rows and columns for which the tiled transpose pays (below it most of a tile
/// idles, and the strided kernel's reads are short anyway).
const TILE_MIN: u64 = 8;

/// How the output's dims (outermost first) walk the input, in elements; strides may be zero
/// (broadcast) or negative (reversed Slice).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Strided {
    pub dims: Vec<u64>,
    pub strides: Vec<i64>,
    pub base: u64,
}

/// Row-major strides of `shape`, in elements.
pub fn contiguous(shape: &[u64]) -> Vec<i64> {
    let mut strides = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(shape[d + 1] as i64);
    }
    strides
}

impl Strided {
    /// The same walk with dims of size 1 dropped and neighbours that step through the input
    /// as one dim merged (a contiguous run, or two broadcast dims).
    pub fn coalesce(&self) -> Strided {
        let mut dims: Vec<u64> = Vec::new();
        let mut strides: Vec<i64> = Vec::new();
        for (&d, &s) in self.dims.iter().zip(&self.strides).filter(|(&d, _)| d != 1) {
            match (dims.last_mut(), strides.last_mut()) {
                (Some(pd), Some(ps)) if *ps == s.wrapping_mul(d as i64) => {
                    *pd *= d;
                    *ps = s;
                }
                _ => {
                    dims.push(d);
                    strides.push(s);
                }
            }
        }
        Strided { dims, strides, base: self.base }
    }

    pub fn count(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// The strided kernel's uniforms (mirrors `layout_strided.wgsl.j2`); dims innermost first.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct StridedParams {
    count: u32,
    items: u32,
    rank: u32,
    base: u32,
    run: u32,
    pad: [u32; 3],
    dims: [u32; MAX_RANK],
    strides: [u32; MAX_RANK],
}

/// The tiled transpose's uniforms (mirrors `layout_transpose_tiled.wgsl.j2`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct TiledParams {
    cols: u32,
    rows: u32,
    col_stride: u32,
    tiles_j: u32,
    tiles_i: u32,
    workgroups: u32,
    rank: u32,
    pad: u32,
    dims: [u32; MAX_RANK],
    strides: [u32; MAX_RANK],
}

/// A buffer of `elems` elements of `size` bytes must fit a binding, and every element and
/// u32-word index the kernels compute must fit 32 bits.
pub fn check_extent(caps: &DeviceCaps, what: &'static str, elems: u64, size: u64) -> Result<(), GpuError> {
    let bytes = elems.saturating_mul(size);
    check_binding(what, bytes, caps)?;
    to_u32(what, elems)?;
    to_u32(what, bytes.div_ceil(4))?;
    Ok(())
}

/// Dims (innermost first, unused ones 1) and two's-complement strides as the kernels' uniform
/// arrays: the kernels' u32 arithmetic wraps, so a negative stride lands exactly once the sum
/// is in range.
fn uniform_dims(dims: &[u64], strides: &[i64]) -> Result<([u32; MAX_RANK], [u32; MAX_RANK]), GpuError> {
    if dims.len() > MAX_RANK {
        return Err(GpuError::Invalid(format!("{} dims after merging exceed the {MAX_RANK} supported", dims.len())));
    }
    let (mut d, mut s) = ([1u32; MAX_RANK], [0u32; MAX_RANK]);
    for (k, (&dim, &stride)) in dims.iter().rev().zip(strides.iter().rev()).enumerate() {
        d[k] = to_u32("layout dim", dim)?;
        s[k] = stride as u32;
    }
    Ok((d, s))
}

/// How the strided copy spreads its work over invocations: chosen per device by [`Tuning::of`],
/// set by tests (to cover every path on one adapter) and benchmarks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// Output words per invocation ([`LayoutSource::run`]).
    pub run: u64,
    /// Whether a transpose may take the tiled kernel. On llvmpipe it is slower than long runs
    /// of the strided one (Whisper's [1,1500,6,64] -> [1,6,64,1500]: 9.7 ms against 3.6 ms),
    /// as its workgroup barrier costs a CPU adapter a thread switch.
    pub tiled: bool,
}

impl Tuning {
    pub fn of(caps: &DeviceCaps) -> Tuning {
        Tuning { run: LayoutSource::run(caps), tiled: caps.kind != DeviceKind::Cpu }
    }

    /// [`Tuning::of`] without the tiled transpose (views that are not transposes).
    pub fn strided(caps: &DeviceCaps) -> Tuning {
        Tuning { tiled: false, ..Tuning::of(caps) }
    }
}

/// The dispatch copying `view` of `src` into the contiguous `dst` (`size`-byte elements).
pub fn prepare(
    cx: &PrepareCx<'_>,
    src: &GpuBuffer,
    dst: &GpuBuffer,
    size: u64,
    view: &Strided,
    tuning: Tuning,
) -> Result<Dispatch, GpuError> {
    plan(cx.caps(), size, view, tuning)?.bind(cx.gpu, &[src], &[dst])
}

/// The dispatch [`prepare`] binds: the tiled transpose where it applies, else the strided copy.
pub fn plan(caps: &DeviceCaps, size: u64, view: &Strided, tuning: Tuning) -> Result<OpDispatch, GpuError> {
    let view = view.coalesce();
    check_extent(caps, "layout output", view.count(), size)?;
    if tuning.tiled {
        if let Some(d) = plan_tiled(caps, size, &view)? {
            return Ok(d);
        }
    }
    let (dims, strides) = uniform_dims(&view.dims, &view.strides)?;
    let count = view.count();
    // Runs of whole words.
    let run = tuning.run.max(1) * LayoutSource::per_word(size);
    let items = count.div_ceil(run);
    let params = StridedParams {
        count: to_u32("layout output", count)?,
        items: to_u32("layout output", items)?,
        // The kernel reads the innermost dim even of a scalar (a 1).
        rank: view.dims.len().max(1) as u32,
        base: to_u32("layout offset", view.base)?,
        run: to_u32("layout run", run)?,
        pad: [0; 3],
        dims,
        strides,
    };
    let variant = LayoutSource::variant(Pattern::Strided, size);
    Ok(OpDispatch::new(variant, &params, grid_for(items, caps)?))
}

/// The tiled transpose, when the coalesced view is a batch of 2-D transposes: the output's
/// second-innermost dim is the input's contiguous one, the innermost is not, both span a
/// tile's worth, and (for packed elements) rows hold whole words.
fn plan_tiled(caps: &DeviceCaps, size: u64, view: &Strided) -> Result<Option<OpDispatch>, GpuError> {
    let r = view.dims.len();
    if r < 2 || view.base != 0 || view.strides[r - 2] != 1 || view.strides[r - 1] <= 1 {
        return Ok(None);
    }
    let (rows, cols) = (view.dims[r - 2], view.dims[r - 1]);
    let tile_words = u64::from(caps.max_workgroup_storage_bytes) / 4;
    if rows < TILE_MIN
        || cols < TILE_MIN
        || cols % LayoutSource::per_word(size) != 0
        || caps.max_invocations_per_workgroup < WORKGROUP
        || TILE * (TILE + 1) * size.div_ceil(4) > tile_words
    {
        return Ok(None);
    }
    let (dims, strides) = uniform_dims(&view.dims[..r - 2], &view.strides[..r - 2])?;
    let (tiles_j, tiles_i) = (cols.div_ceil(TILE), rows.div_ceil(TILE));
    let batches: u64 = view.dims[..r - 2].iter().product();
    let workgroups = tiles_j * tiles_i * batches;
    let params = TiledParams {
        cols: to_u32("layout dim", cols)?,
        rows: to_u32("layout dim", rows)?,
        col_stride: to_u32("layout stride", view.strides[r - 1] as u64)?,
        tiles_j: to_u32("layout tiles", tiles_j)?,
        tiles_i: to_u32("layout tiles", tiles_i)?,
        workgroups: to_u32("layout tiles", workgroups)?,
        rank: (r - 2) as u32,
        pad: 0,
        dims,
        strides,
    };
    let variant = LayoutSource::variant(Pattern::Tiled, size);
    Ok(Some(OpDispatch::new(variant, &params, grid(workgroups, caps)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_merges_runs_and_drops_ones() {
        // [1,1500,6,64] -> perm (0,2,3,1): one 2-D transpose of [1500, 384].
        let s = contiguous(&[1, 1500, 6, 64]);
        let view = Strided { dims: vec![1, 6, 64, 1500], strides: vec![s[0], s[2], s[3], s[1]], base: 0 };
        assert_eq!(view.coalesce(), Strided { dims: vec![384, 1500], strides: vec![1, 384], base: 0 });
        // A contiguous copy is one dim; broadcast dims merge with each other.
        let plain = Strided { dims: vec![2, 3, 4], strides: contiguous(&[2, 3, 4]), base: 5 };
        assert_eq!(plain.coalesce(), Strided { dims: vec![24], strides: vec![1], base: 5 });
        let bcast = Strided { dims: vec![2, 3, 4], strides: vec![0, 0, 1], base: 0 };
        assert_eq!(bcast.coalesce(), Strided { dims: vec![6, 4], strides: vec![0, 1], base: 0 });
        // A scalar has no dims.
        assert_eq!(Strided { dims: vec![1, 1], strides: vec![1, 1], base: 0 }.coalesce().dims, Vec::<u64>::new());
    }

    #[test]
    fn negative_strides_wrap() {
        let (d, s) = uniform_dims(&[3, 4], &[-4, 1]).unwrap();
        assert_eq!((d[0], d[1], d[2]), (4, 3, 1));
        assert_eq!((s[0], s[1]), (1, (-4i32) as u32));
        assert!(uniform_dims(&[2; 9], &[1; 9]).is_err());
    }
}

//! The split-KV decode kernels' sources: what changes each one's text, and every variant the
//! planner may emit on a device (`decode.rs` plans and binds them).

use super::decode::{
    kv_lanes, prep_fits, KV_HEAD_SIZES, KV_KEYS_PER_GROUP, KV_THREADS, LAST_MAX_ROUNDS, ROW_BLOCKS, WIDE_KEYS_PER_GROUP,
};
use super::kernel::MaskKind;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The K/V-head kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeKvSource {
    pub ty: ElemType,
    pub d: u32,
    pub mask: MaskKind,
    /// Query rows per workgroup.
    pub rows: u32,
    /// Invocations per key row.
    pub lanes: u32,
    /// The narrowest subgroup it is sized for (the device's smallest): a subgroup's key groups
    /// merge by shuffles, so workgroup memory holds one partial per subgroup.
    pub subgroup: u32,
    /// GroupQueryAttention's preparation folded in (`_prep`, seqlens masks only): see [`PrepFields`].
    pub prep: bool,
    /// One workgroup per query row reads every key (`_w{threads}`: [`wide_threads`] invocations,
    /// [`WIDE_KEYS_PER_GROUP`] keys per key group and step) and writes the output itself: no key
    /// chunks, no partials, no combine.
    pub wide: bool,
}

/// Invocations per workgroup of the wide form for subgroups of at least `subgroup`: its
/// workgroup memory holds one partial row per subgroup.
pub fn wide_threads(subgroup: u32) -> u32 {
    if subgroup >= 32 {
        512
    } else {
        256
    }
}

impl DecodeKvSource {
    /// The most subgroups in a workgroup, and the query rows combined per pass through
    /// workgroup memory (as many as keep it at one row per key group).
    fn combine_geometry(&self) -> (u32, u32) {
        let subgroup = self.subgroup.max(self.lanes);
        (self.threads() / subgroup, (subgroup / self.lanes).min(self.rows))
    }

    /// Invocations per workgroup.
    pub fn threads(&self) -> u32 {
        if self.wide {
            wide_threads(self.subgroup)
        } else {
            KV_THREADS
        }
    }

    /// Keys each key group scores per step.
    fn keys_per_group(&self) -> u32 {
        if self.wide {
            WIDE_KEYS_PER_GROUP
        } else {
            KV_KEYS_PER_GROUP
        }
    }

    /// Keys per step of the workgroup.
    pub fn step(&self) -> u64 {
        u64::from(self.threads() / self.lanes * self.keys_per_group())
    }

    /// Whether the kernel's last workgroup of each row block combines the `splits` chunks'
    /// partials itself (`attn_decode_last.wgsl.j2`) instead of a combine dispatch: the weights of
    /// its rows' chunks fit its workgroup memory, and each invocation's share of the sums takes
    /// at most [`LAST_MAX_ROUNDS`] rounds of four chunks. (An experiment build takes the dispatch
    /// with `EXP_NO_FOLD=last`.)
    pub fn combines_last(&self, splits: u64) -> bool {
        let (msg, rp) = self.combine_geometry();
        let (rows, d) = (u64::from(self.rows), u64::from(self.d));
        let per_invocation = (rows * d / 4).div_ceil(u64::from(self.threads()));
        rows * splits <= u64::from(msg * rp) * d
            && per_invocation * splits.div_ceil(4) <= last_max_rounds()
            && !crate::fold_off("last")
    }
}

/// [`LAST_MAX_ROUNDS`], or an experiment build's `EXP_LAST_MAX_ROUNDS=N`.
fn last_max_rounds() -> u64 {
    let forced = || std::env::var("EXP_LAST_MAX_ROUNDS").ok()?.trim().parse().ok();
    cfg!(feature = "wgsl-override").then(forced).flatten().unwrap_or(LAST_MAX_ROUNDS)
}

impl OpSource for DecodeKvSource {
    fn name(&self) -> String {
        format!(
            "attn_decode_kv_{}_d{}_l{}_r{}_s{}_mask_{}{}{}",
            self.ty.name(),
            self.d,
            self.lanes,
            self.rows,
            self.subgroup,
            self.mask.name(),
            if self.prep { "_prep" } else { "" },
            if self.wide { format!("_w{}", self.threads()) } else { String::new() }
        )
    }

    fn emit(&self) -> Result<String, String> {
        let (msg, rp) = self.combine_geometry();
        let ctx = minijinja::context! {
            t => self.ty.name(), f16 => self.ty == ElemType::F16, d => self.d, mask => self.mask.name(),
            rb => self.rows, l => self.lanes, threads => self.threads(), kpt => self.keys_per_group(),
            sg => self.subgroup, msg => msg, rp => rp, prep => self.prep, wide => self.wide,
            // The butterfly across a key row's lanes: xor by half of them, a quarter, ... 1.
            shuffles => (0..self.lanes.trailing_zeros()).rev().map(|i| 1u32 << i).collect::<Vec<_>>(),
        };
        render("attn_decode_kv.wgsl.j2", ctx)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        let caps = crate::ops::capabilities_for(&[self.ty]) | naga::valid::Capabilities::SUBGROUP;
        if self.ty == ElemType::F16 {
            caps | crate::shader::F16X8_CAPS
        } else {
            caps
        }
    }
}

/// The partial kernel: what changes its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeSource {
    pub ty: ElemType,
    pub d: u32,
    pub mask: MaskKind,
}

impl OpSource for DecodeSource {
    fn name(&self) -> String {
        format!("attn_decode_{}_d{}_mask_{}", self.ty.name(), self.d, self.mask.name())
    }

    fn emit(&self) -> Result<String, String> {
        let ctx = minijinja::context! {
            t => self.ty.name(), f16 => self.ty == ElemType::F16, d => self.d, mask => self.mask.name(),
        };
        render("attn_decode.wgsl.j2", ctx)
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// The reduction of the partials into the output: one invocation per four columns of a row
/// (`attn_decode_reduce`, for many rows of few chunks), or with `per_row` one workgroup per row
/// (`attn_decode_combine`, for a few rows of many chunks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DecodeReduceSource {
    pub ty: ElemType,
    pub per_row: bool,
}

impl DecodeReduceSource {
    fn template(&self) -> &'static str {
        if self.per_row {
            "attn_decode_combine"
        } else {
            "attn_decode_reduce"
        }
    }
}

impl OpSource for DecodeReduceSource {
    fn name(&self) -> String {
        format!("{}_{}", self.template(), self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render(
            &format!("{}.wgsl.j2", self.template()),
            minijinja::context! { t => self.ty.name(), f16 => self.ty == ElemType::F16 },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

/// Every split-KV variant on `caps`.
pub fn variants(caps: &DeviceCaps) -> Vec<ShaderVariant> {
    let mut out = Vec::new();
    for ty in crate::ops::norm::float_types(caps) {
        for d in super::HEAD_SIZES {
            for mask in MaskKind::ALL {
                out.push(ShaderVariant::Op(OpShader::new(DecodeSource { ty, d: d as u32, mask })));
            }
        }
        out.push(ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty, per_row: false })));
        for d in KV_HEAD_SIZES {
            let Some(lanes) = kv_lanes(ty, d, caps) else { continue };
            for mask in MaskKind::ALL {
                for rows in ROW_BLOCKS {
                    let subgroup = caps.subgroup_min_size;
                    let source =
                        DecodeKvSource { ty, d: d as u32, mask, rows, lanes, subgroup, prep: false, wide: false };
                    out.push(ShaderVariant::Op(OpShader::new(source)));
                    let prep = mask == MaskKind::SeqLens && prep_fits(caps);
                    if prep {
                        out.push(ShaderVariant::Op(OpShader::new(DecodeKvSource { prep: true, ..source })));
                    }
                    if rows == 1 {
                        out.push(ShaderVariant::Op(OpShader::new(DecodeKvSource { wide: true, ..source })));
                        if prep {
                            let wide = DecodeKvSource { wide: true, prep: true, ..source };
                            out.push(ShaderVariant::Op(OpShader::new(wide)));
                        }
                    }
                }
            }
        }
        if KV_HEAD_SIZES.iter().any(|&d| kv_lanes(ty, d, caps).is_some()) {
            out.push(ShaderVariant::Op(OpShader::new(DecodeReduceSource { ty, per_row: true })));
        }
    }
    out
}

//! Session options of the EP: `add_provider_for_devices(devices, {key: value})` stores each as
//! the session config entry `ep.wgpuexecutionprovider.<key>`. Parsing is pure, so the provider
//! (at session creation) and the offline `inspect` tool read options the same way.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
pub use crate::conv::ConvAlgo;
pub use crate::gemm::CoopMode;
use crate::gemm::{GemmOptions, TilingChoice};
use crate::graph::{ExecOptions, PlacementOptions};
use crate::runtime::{AdapterSelector, PipelineCacheSetting};

/// Prefix of our keys in the session config (ORT lower-cases the EP name).
pub const PREFIX: &str = "ep.wgpuexecutionprovider.";

/// `validation`: wgpu's API validation always runs; `debug` adds the backend's validation layers
/// and keeps wgpu's shader runtime checks on every kernel (by default the self-guarding GEMM
/// kernels are compiled without them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Validation {
    #[default]
    Basic,
    Debug,
}

/// Parsed options with their defaults.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct EpOptions {
    /// `None`: the adapter of the selected OrtEpDevice.
    pub adapter: Option<AdapterSelector>,
    pub tiling: TilingChoice,
    pub enable_f16: bool,
    /// `cooperative_matrix`: use tensor-core kernels when the adapter offers them.
    pub cooperative_matrix: CoopMode,
    /// `f32_via_f16`: let fp32 products run on the f16 tensor-core path (opt-in precision).
    pub f32_via_f16: bool,
    /// `f32_split`: large fp32 products as three f16 tensor-core products of split operands.
    pub f32_split: CoopMode,
    /// `f32_split_fused`: run a split product's three parts in one pass over K.
    pub f32_split_fused: CoopMode,
    pub conv1d_as_conv2d: bool,
    /// `conv_algorithm`: how a Conv runs; `Auto` lets the planner choose.
    pub conv_algorithm: ConvAlgo,
    pub validation: Validation,
    /// `offload`: whether the cost rule may leave partitions to the CPU EP.
    pub offload: Offload,
    /// `attention`: which attention runs on the flash kernels (the exported pattern rewritten,
    /// ONNX `Attention` and `MultiHeadAttention` claimed); see [`Attention`].
    pub attention: Attention,
    /// `pipeline_cache`: where the persistent pipeline cache lives, or off (read when the
    /// session opens the adapter's device; the first session to open it decides).
    pub pipeline_cache: PipelineCacheSetting,
    /// `max_storage_buffers`: plan as if the device bound at most this many storage buffers per
    /// shader stage (the forms made for devices with WebGPU's minimum of 8).
    pub max_storage_buffers: Option<u32>,
    /// `decode_attention_fold`: GroupQueryAttention's one-token preparation inside its decode
    /// kernel (fewer dispatches; measured slower on the H200, so off unless asked for).
    pub decode_attention_fold: bool,
    /// `interim_kernels`: runs take plans without tensor cores until the tensor-core pipelines
    /// have compiled (a cold start's first runs). On unless the session sets it to 0.
    pub interim_kernels: bool,
    /// `interim_grace_ms`: until how long after a set is made its runs wait for the pipelines
    /// its interim plans stand in for, before they take those plans (0: not at all).
    pub interim_grace_ms: u32,
    /// `emulate_tensor_cores`: plan and run the tensor-core kernels in their emulated form on any
    /// adapter (tests of the tensor-core plans on CI's llvmpipe; slow).
    pub emulate_tensor_cores: bool,
    /// `rolled_loops`: tensor-core kernels compiled from SPIR-V whose product loop the driver is
    /// asked not to unroll (`runtime::rolled`), where the device takes SPIR-V as is (Vulkan). On
    /// unless the session sets it to 0.
    pub rolled_loops: bool,
}

/// The `attention` option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Attention {
    /// f16 attention, and f32 of head size 64 split into three f16 products, on the tensor-core
    /// flash kernel where the device has one; else unfused.
    #[default]
    Auto,
    /// Never fused.
    Unfused,
    /// Every float type fused (f32 at other head sizes, and devices without tensor cores, on the SIMT kernel, which
    /// is not yet tuned: slower than unfused on the H200).
    Flash,
}

impl EpOptions {
    /// Which attention the flash kernels take on a device of `caps`.
    pub fn flash_mode(&self, caps: &DeviceCaps) -> crate::graph::FlashMode {
        match self.attention {
            Attention::Auto => crate::ops::attention::auto_mode(caps),
            Attention::Unfused => crate::graph::FlashMode::Off,
            Attention::Flash => crate::graph::FlashMode::All,
        }
    }
}

/// The session config entry that disables the CPU EP's fallback.
pub const NO_CPU_FALLBACK: &str = "session.disable_cpu_ep_fallback";

/// `offload=auto`: partitions the CPU EP runs faster (host traffic outweighing the work on a
/// discrete GPU) stay on it; `offload=all`: every node this EP can run is claimed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Offload {
    #[default]
    Auto,
    All,
}

/// Every key we accept, with a one-line description (shown in errors).
pub const KEYS: &[(&str, &str)] = &[
    ("adapter", "wgpu adapter: its index or a substring of its name (default: the selected device's)"),
    ("tiling", "auto | 128x128 | 64x64 | splitk | gemv"),
    ("enable_f16", "1 | 0: run float16 nodes"),
    ("cooperative_matrix", "auto | 0 | 1: tensor-core kernels"),
    ("f32_via_f16", "0 | 1: run float32 products on the f16 tensor-core path (operands rounded to f16)"),
    (
        "f32_split",
        "auto | 0 | 1: large float32 products on tensor cores as three f16 products of split operands (0: SIMT only)",
    ),
    (
        "f32_split_fused",
        "auto | 0 | 1: a split float32 product's three parts in one pass over K (1) or three (0); auto: one where measured faster",
    ),
    ("conv1d_as_conv2d", "1 | 0: run 1-D Conv as 2-D with height 1"),
    ("conv_algorithm", "auto | im2col | implicit | direct: how a Conv runs"),
    ("validation", "basic | debug: add the backend's validation layers and shader runtime checks"),
    ("offload", "auto | all: all claims every supported node even where the CPU EP would be faster"),
    ("attention", "auto | unfused | flash: auto fuses f16, and f32 of head size 64, on tensor cores; flash fuses every type"),
    ("pipeline_cache", "off | on | DIR: the persistent pipeline cache (on: $XDG_CACHE_HOME/onnxruntime-ep-wgpu)"),
    (
        "max_storage_buffers",
        "N >= 8: plan as if the device bound at most N storage buffers per shader stage (WebGPU's minimum is 8)",
    ),
    (
        "decode_attention_fold",
        "0 | 1: GroupQueryAttention's one-token preparation inside its decode kernel (fewer dispatches; slower on the H200)",
    ),
    (
        "interim_kernels",
        "1 (default) | 0: while tensor-core pipelines compile, runs take plans without tensor cores (a cold start's first runs)",
    ),
    (
        "interim_grace_ms",
        "0 (default) ..= 10000: until how long after Compile runs wait for tensor-core pipelines before taking interim plans",
    ),
    (
        "emulate_tensor_cores",
        "0 | 1: the tensor-core kernels in plain WGSL on any adapter, for testing their plans without tensor cores (slow)",
    ),
    (
        "rolled_loops",
        "1 (default) | 0: on Vulkan, tensor-core kernels whose product loop the driver keeps rolled (NVIDIA: compiles 3-5x faster)",
    ),
];

fn parse_storage_buffers(v: &str) -> Result<u32, String> {
    match v.parse::<u32>() {
        Ok(n) if n >= 8 => Ok(n),
        _ => Err(format!("option 'max_storage_buffers': '{v}' is not a number of at least 8 (WebGPU's minimum)")),
    }
}

fn parse_grace(v: &str) -> Result<u32, String> {
    match v.trim().parse::<u32>() {
        Ok(ms) if ms <= MAX_INTERIM_GRACE_MS => Ok(ms),
        _ => Err(format!(
            "option 'interim_grace_ms': '{v}' is not a whole number of ms from 0 to {MAX_INTERIM_GRACE_MS}"
        )),
    }
}

/// The longest `interim_grace_ms` (a first run that waits longer should not take interim plans).
const MAX_INTERIM_GRACE_MS: u32 = 10_000;

fn parse_bool(key: &str, v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "on" | "yes" => Ok(true),
        "0" | "false" | "off" | "no" => Ok(false),
        _ => Err(format!("option '{key}': '{v}' is not 1 or 0")),
    }
}

impl EpOptions {
    /// Reads our entries out of all session config entries; unknown keys and bad values are
    /// errors that name the key.
    pub fn from_config(entries: &BTreeMap<String, String>) -> Result<EpOptions, String> {
        let mut o = EpOptions {
            enable_f16: true,
            conv1d_as_conv2d: true,
            interim_kernels: true,
            rolled_loops: true,
            ..EpOptions::default()
        };
        // With the CPU EP's fallback disabled, a partition the cost rule left to it would fail the
        // session: every node this EP can run is then claimed, unless `offload` says otherwise.
        if entries.get(NO_CPU_FALLBACK).is_some_and(|v| v.trim() == "1") {
            o.offload = Offload::All;
        }
        for (full_key, value) in entries {
            let Some(key) = full_key.strip_prefix(PREFIX) else { continue };
            let v = value.trim();
            match key {
                "adapter" => o.adapter = Some(v.parse().map_err(|e| format!("option 'adapter': {e}"))?),
                "tiling" => o.tiling = v.parse().map_err(|e| format!("option 'tiling': {e}"))?,
                "enable_f16" => o.enable_f16 = parse_bool(key, v)?,
                "cooperative_matrix" => {
                    o.cooperative_matrix = v.parse().map_err(|e| format!("option 'cooperative_matrix': {e}"))?
                }
                "f32_via_f16" => o.f32_via_f16 = parse_bool(key, v)?,
                "f32_split" => o.f32_split = v.parse().map_err(|e| format!("option 'f32_split': {e}"))?,
                "f32_split_fused" => {
                    o.f32_split_fused = v.parse().map_err(|e| format!("option 'f32_split_fused': {e}"))?
                }
                "conv1d_as_conv2d" => o.conv1d_as_conv2d = parse_bool(key, v)?,
                "decode_attention_fold" => o.decode_attention_fold = parse_bool(key, v)?,
                "interim_kernels" => o.interim_kernels = parse_bool(key, v)?,
                "interim_grace_ms" => o.interim_grace_ms = parse_grace(v)?,
                "emulate_tensor_cores" => o.emulate_tensor_cores = parse_bool(key, v)?,
                "rolled_loops" => o.rolled_loops = parse_bool(key, v)?,
                "conv_algorithm" => {
                    o.conv_algorithm = v.parse().map_err(|e| format!("option 'conv_algorithm': {e}"))?
                }
                "offload" => {
                    o.offload = match v {
                        "auto" => Offload::Auto,
                        "all" => Offload::All,
                        _ => return Err(format!("option 'offload': '{v}' is not auto or all")),
                    }
                }
                "attention" => {
                    o.attention = match v {
                        "auto" => Attention::Auto,
                        "unfused" => Attention::Unfused,
                        "flash" => Attention::Flash,
                        _ => return Err(format!("option 'attention': '{v}' is not auto, unfused or flash")),
                    }
                }
                "pipeline_cache" => {
                    o.pipeline_cache = v.parse().map_err(|e| format!("option 'pipeline_cache': {e}"))?
                }
                "max_storage_buffers" => o.max_storage_buffers = Some(parse_storage_buffers(v)?),
                "validation" => {
                    o.validation = match v {
                        "basic" => Validation::Basic,
                        "debug" => Validation::Debug,
                        _ => return Err(format!("option 'validation': '{v}' is not basic or debug")),
                    }
                }
                _ => {
                    let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
                    return Err(format!("unknown option '{key}' (known: {})", known.join(", ")));
                }
            }
        }
        Ok(o)
    }

    /// What the GEMM planner (and the conv GEMMs) take from these options.
    pub fn gemm_options(&self) -> GemmOptions {
        GemmOptions {
            tiling: self.tiling,
            cooperative_matrix: self.cooperative_matrix,
            f32_via_f16: self.f32_via_f16,
            f32_split: self.f32_split,
            f32_split_fused: self.f32_split_fused,
            unsplit_short_k: false,
            quick_compile: false,
        }
    }

    /// How compiled partitions plan their ops; placement checks claims with the same choices.
    pub fn exec_options(&self) -> ExecOptions {
        ExecOptions {
            gemm: self.gemm_options(),
            conv1d_as_conv2d: self.conv1d_as_conv2d,
            conv_algo: self.conv_algorithm,
            fold_decode_attention: self.decode_attention_fold,
            interim: self.interim_kernels,
            interim_grace: std::time::Duration::from_millis(self.interim_grace_ms.into()),
            interim_plan: false,
        }
    }

    /// What placement (GetCapability) decides with on a device of `caps`.
    pub fn placement_options(&self, caps: DeviceCaps) -> PlacementOptions {
        let exec = self.exec_options();
        let flash_attention = self.flash_mode(&caps);
        PlacementOptions {
            caps,
            enable_f16: self.enable_f16,
            gemm: exec.gemm,
            conv1d_as_conv2d: exec.conv1d_as_conv2d,
            conv_algo: exec.conv_algo,
            cost_rule: self.offload == Offload::Auto,
            flash_attention,
        }
    }

    /// Parses `key=value` pairs given without the prefix (the inspector's `--option`).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<EpOptions, String> {
        let map = pairs.into_iter().map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string())).collect();
        EpOptions::from_config(&map)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<EpOptions, String> {
        let map = pairs.iter().map(|(k, v)| (format!("{PREFIX}{k}"), v.to_string())).collect();
        EpOptions::from_config(&map)
    }

    #[test]
    fn storage_buffers_go_no_lower_than_webgpus_minimum() {
        assert_eq!(parse(&[("max_storage_buffers", "8")]).unwrap().max_storage_buffers, Some(8));
        assert_eq!(parse(&[]).unwrap().max_storage_buffers, None);
        for bad in ["7", "-1", "many"] {
            let e = parse(&[("max_storage_buffers", bad)]).unwrap_err();
            assert!(e.contains("max_storage_buffers") && e.contains(bad), "{e}");
        }
    }

    #[test]
    fn defaults() {
        let o = parse(&[]).unwrap();
        assert!(o.enable_f16 && o.conv1d_as_conv2d);
        assert_eq!((o.tiling, o.cooperative_matrix, o.adapter), (TilingChoice::Auto, CoopMode::Auto, None));
    }

    #[test]
    fn values_parse() {
        let o = parse(&[("tiling", "64x64"), ("enable_f16", "0"), ("adapter", "llvm"), ("cooperative_matrix", "1")])
            .unwrap();
        assert_eq!(o.tiling, TilingChoice::Tile64);
        assert!(!o.enable_f16);
        assert_eq!(o.adapter, Some(AdapterSelector::Name("llvm".into())));
        assert_eq!(o.cooperative_matrix, CoopMode::On);
        assert!(!o.f32_via_f16 && parse(&[("f32_via_f16", "1")]).unwrap().gemm_options().f32_via_f16);
        assert_eq!(parse(&[("cooperative_matrix", "0")]).unwrap().gemm_options().cooperative_matrix, CoopMode::Off);
        assert_eq!(parse(&[]).unwrap().gemm_options().f32_split, CoopMode::Auto);
        assert_eq!(parse(&[("f32_split", "0")]).unwrap().gemm_options().f32_split, CoopMode::Off);
        assert!(parse(&[]).unwrap().exec_options().interim, "on by default");
        assert!(!parse(&[("interim_kernels", "0")]).unwrap().exec_options().interim);
        assert!(parse(&[("interim_kernels", "sometimes")]).unwrap_err().contains("option 'interim_kernels'"));
        let grace = |v: &str| parse(&[("interim_grace_ms", v)]).map(|o| o.exec_options().interim_grace.as_millis());
        assert_eq!(grace("0").unwrap(), 0);
        assert_eq!(grace(" 80 ").unwrap(), 80);
        assert_eq!(grace("10000").unwrap(), 10_000);
        assert!(parse(&[]).unwrap().exec_options().interim_grace.is_zero());
        for bad in ["-1", "10001", "0.5", "soon"] {
            assert!(grace(bad).unwrap_err().contains("option 'interim_grace_ms'"), "{bad}");
        }
        assert!(parse(&[("f32_split", "maybe")]).unwrap_err().contains("f32_split"));
        assert!(!parse(&[]).unwrap().emulate_tensor_cores);
        assert!(parse(&[("emulate_tensor_cores", "1")]).unwrap().emulate_tensor_cores);
        assert!(parse(&[("emulate_tensor_cores", "maybe")]).unwrap_err().contains("emulate_tensor_cores"));
        assert!(parse(&[]).unwrap().rolled_loops);
        assert!(!parse(&[("rolled_loops", "0")]).unwrap().rolled_loops);
        assert!(parse(&[("rolled_loops", "2")]).unwrap_err().contains("option 'rolled_loops'"));
        assert_eq!(parse(&[("f32_split_fused", "1")]).unwrap().gemm_options().f32_split_fused, CoopMode::On);
        assert!(parse(&[("f32_split_fused", "x")]).unwrap_err().contains("f32_split_fused"));
        assert_eq!(parse(&[("adapter", "1")]).unwrap().adapter, Some(AdapterSelector::Index(1)));
        assert_eq!(parse(&[]).unwrap().conv_algorithm, ConvAlgo::Auto);
        for (v, algo) in [
            ("auto", ConvAlgo::Auto),
            ("im2col", ConvAlgo::Gemm),
            ("implicit", ConvAlgo::Implicit),
            ("direct", ConvAlgo::Direct),
        ] {
            assert_eq!(parse(&[("conv_algorithm", v)]).unwrap().conv_algorithm, algo);
        }
    }

    #[test]
    fn errors_name_the_key() {
        assert!(parse(&[("tile", "1")]).unwrap_err().contains("unknown option 'tile'"));
        assert!(parse(&[("tiling", "huge")]).unwrap_err().contains("tiling"));
        assert!(parse(&[("enable_f16", "maybe")]).unwrap_err().contains("enable_f16"));
        assert!(parse(&[("conv_algorithm", "winograd")]).unwrap_err().contains("option 'conv_algorithm'"));
        assert!(parse(&[("offload", "never")]).unwrap_err().contains("option 'offload'"));
        assert_eq!(parse(&[("offload", "all")]).unwrap().offload, Offload::All);
        assert_eq!(parse(&[]).unwrap().offload, Offload::Auto);
        assert!(EpOptions::from_pairs([("offload", "all")])
            .is_ok_and(|o| !o.placement_options(DeviceCaps::default()).cost_rule));
        assert!(EpOptions::from_pairs([("enable_f16", "0")])
            .is_ok_and(|o| !o.placement_options(DeviceCaps::default()).enable_f16));
        let other: BTreeMap<String, String> = [("session.x".to_string(), "1".to_string())].into();
        assert!(EpOptions::from_config(&other).is_ok());
    }

    #[test]
    fn no_cpu_fallback_claims_every_node_unless_offload_is_set() {
        let config = |pairs: &[(&str, &str)]| {
            let map: BTreeMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
            EpOptions::from_config(&map).unwrap().offload
        };
        assert_eq!(config(&[(NO_CPU_FALLBACK, "1")]), Offload::All);
        assert_eq!(config(&[(NO_CPU_FALLBACK, "0")]), Offload::Auto);
        assert_eq!(config(&[(NO_CPU_FALLBACK, "1"), ("ep.wgpuexecutionprovider.offload", "auto")]), Offload::Auto);
    }
}

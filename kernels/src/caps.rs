//! What a device can do, as plain numbers.
//!
//! Every planning decision is a function of a [`DeviceCaps`], never of a wgpu type, so each
//! fallback can be unit-tested by changing one field (the approach of ONNX Runtime's WebGPU EP,
//! `matmul_workgroup_config.h`). `DeviceCaps::from_adapter` is the only place that reads wgpu.

use serde::{Deserialize, Serialize};

/// Scalar type of a cooperative-matrix operand or accumulator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CoopScalar {
    F16,
    F32,
    I32,
    U32,
}

/// One cooperative-matrix shape the adapter supports: `C[M×N] += A[M×K] · B[K×N]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CoopMatrixConfig {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub ab: CoopScalar,
    pub cr: CoopScalar,
}

/// Kind of device, as the adapter reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    DiscreteGpu,
    IntegratedGpu,
    VirtualGpu,
    Cpu,
    Other,
}

/// Everything a kernel-planning decision may depend on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceCaps {
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    pub kind: DeviceKind,
    pub max_workgroup_storage_bytes: u32,
    pub max_invocations_per_workgroup: u32,
    pub max_workgroup_size: [u32; 3],
    pub max_workgroups_per_dimension: u32,
    pub max_buffer_size: u64,
    pub max_storage_binding_size: u64,
    pub max_storage_buffers_per_stage: u32,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub shader_f16: bool,
    pub subgroups: bool,
    /// `subgroupBarrier()` (wgpu's `SUBGROUP_BARRIER`): the tensor-core attention syncs a
    /// subgroup's own scratch with it.
    #[serde(default)]
    pub subgroup_barrier: bool,
    pub timestamp_query: bool,
    pub coop_matrix: Vec<CoopMatrixConfig>,
    /// Plan the tensor-core kernels in their emulated form (plain WGSL with the fragments'
    /// semantics, workgroup barriers instead of subgroup ones), as if the device had the 16×16×16
    /// configuration: the EP option `emulate_tensor_cores`, so that a device without tensor cores
    /// (CI's llvmpipe) runs the plans a tensor-core device makes, end to end. Only on devices
    /// without a cooperative-matrix configuration (the goldens cover those profiles' emulated
    /// plans). Never recorded.
    #[serde(default, skip_serializing)]
    pub coop_emulated: bool,
    /// Workgroups the device runs at once, roughly; decides when split-K pays.
    pub parallelism: u32,
}

impl Default for DeviceCaps {
    /// The WebGPU specification's minimum limits, with no optional feature.
    fn default() -> Self {
        DeviceCaps {
            name: "webgpu-minimum".into(),
            vendor_id: 0,
            device_id: 0,
            kind: DeviceKind::Other,
            max_workgroup_storage_bytes: 16384,
            max_invocations_per_workgroup: 256,
            max_workgroup_size: [256, 256, 64],
            max_workgroups_per_dimension: 65535,
            max_buffer_size: 256 << 20,
            max_storage_binding_size: 128 << 20,
            max_storage_buffers_per_stage: 8,
            subgroup_min_size: 0,
            subgroup_max_size: 0,
            shader_f16: false,
            subgroups: false,
            subgroup_barrier: false,
            timestamp_query: false,
            coop_matrix: Vec::new(),
            coop_emulated: false,
            parallelism: 64,
        }
    }
}

/// Profiles recorded from real adapters (and two constrained ones), checked in as JSON.
pub mod profiles {
    use super::DeviceCaps;

    const H200: &str = include_str!("../profiles/h200.json");
    const LLVMPIPE: &str = include_str!("../profiles/llvmpipe.json");
    const MOBILE: &str = include_str!("../profiles/mobile.json");
    const NO_SUBGROUPS: &str = include_str!("../profiles/no_subgroups.json");

    /// `(file stem, caps)` for every recorded profile.
    pub fn all() -> Vec<(&'static str, DeviceCaps)> {
        [("h200", H200), ("llvmpipe", LLVMPIPE), ("mobile", MOBILE), ("no_subgroups", NO_SUBGROUPS)]
            .into_iter()
            .map(|(name, json)| (name, parse(name, json)))
            .collect()
    }

    /// One recorded profile by file stem.
    pub fn get(name: &str) -> Option<DeviceCaps> {
        all().into_iter().find(|(n, _)| *n == name).map(|(_, c)| c)
    }

    fn parse(name: &str, json: &str) -> DeviceCaps {
        // The JSON is compiled into the binary and covered by `profiles_parse` below, so a bad
        // file can only ever be a build-time defect, never user input.
        serde_json::from_str(json).unwrap_or_else(|e| panic!("profile {name}.json: {e}"))
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn profiles_parse() {
            assert_eq!(super::all().len(), 4);
        }
    }
}

impl DeviceCaps {
    /// The most bytes one storage binding can hold: one binding never spans two buffers.
    pub fn binding_limit(&self) -> u64 {
        self.max_storage_binding_size.min(self.max_buffer_size)
    }

    /// Reads the limits, features and cooperative-matrix shapes of a wgpu adapter.
    pub fn from_adapter(adapter: &wgpu::Adapter) -> Self {
        let info = adapter.get_info();
        let limits = crate::runtime::adapter_limits(adapter);
        let features = adapter.features();
        let kind = match info.device_type {
            wgpu::DeviceType::DiscreteGpu => DeviceKind::DiscreteGpu,
            wgpu::DeviceType::IntegratedGpu => DeviceKind::IntegratedGpu,
            wgpu::DeviceType::VirtualGpu => DeviceKind::VirtualGpu,
            wgpu::DeviceType::Cpu => DeviceKind::Cpu,
            wgpu::DeviceType::Other => DeviceKind::Other,
        };
        let has_coop = features.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX);
        let coop_matrix = if has_coop {
            adapter.cooperative_matrix_properties().iter().filter_map(coop_config).collect()
        } else {
            Vec::new()
        };
        DeviceCaps {
            name: info.name.clone(),
            vendor_id: info.vendor,
            device_id: info.device,
            kind,
            max_workgroup_storage_bytes: limits.max_compute_workgroup_storage_size,
            max_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_workgroup_size: [
                limits.max_compute_workgroup_size_x,
                limits.max_compute_workgroup_size_y,
                limits.max_compute_workgroup_size_z,
            ],
            max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_buffer_size: limits.max_buffer_size,
            max_storage_binding_size: limits.max_storage_buffer_binding_size,
            max_storage_buffers_per_stage: limits.max_storage_buffers_per_shader_stage,
            subgroup_min_size: info.subgroup_min_size,
            subgroup_max_size: info.subgroup_max_size,
            shader_f16: features.contains(wgpu::Features::SHADER_F16),
            subgroups: features.contains(wgpu::Features::SUBGROUP),
            subgroup_barrier: features.contains(wgpu::Features::SUBGROUP_BARRIER),
            timestamp_query: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            coop_matrix,
            coop_emulated: false,
            parallelism: estimated_parallelism(kind),
        }
    }

    /// The same device without tensor cores (neither real nor emulated): what the interim plans
    /// of a cold start are made for (`graph/interim.rs`).
    pub fn without_tensor_cores(&self) -> DeviceCaps {
        DeviceCaps { coop_matrix: Vec::new(), coop_emulated: false, ..self.clone() }
    }

    /// Whether the device has real tensor cores (not the emulated form).
    pub fn real_tensor_cores(&self) -> bool {
        !self.coop_matrix.is_empty() && !self.coop_emulated
    }

    /// True when the adapter offers a cooperative-matrix shape with these sizes and types.
    pub fn has_coop(&self, want: CoopMatrixConfig) -> bool {
        self.coop_matrix.contains(&want)
    }

    /// Whether a workgroup of `x × y × z` invocations is allowed.
    pub fn allows_workgroup(&self, x: u32, y: u32, z: u32) -> bool {
        let [mx, my, mz] = self.max_workgroup_size;
        x <= mx && y <= my && z <= mz && x * y * z <= self.max_invocations_per_workgroup
    }
}

fn coop_config(p: &wgpu::CooperativeMatrixProperties) -> Option<CoopMatrixConfig> {
    let scalar = |s: wgpu::CooperativeScalarType| match s {
        wgpu::CooperativeScalarType::F16 => CoopScalar::F16,
        wgpu::CooperativeScalarType::F32 => CoopScalar::F32,
        wgpu::CooperativeScalarType::I32 => CoopScalar::I32,
        wgpu::CooperativeScalarType::U32 => CoopScalar::U32,
    };
    Some(CoopMatrixConfig { m: p.m_size, n: p.n_size, k: p.k_size, ab: scalar(p.ab_type), cr: scalar(p.cr_type) })
}

/// wgpu reports no compute-unit count, so the split-K heuristic works from a per-kind guess.
fn estimated_parallelism(kind: DeviceKind) -> u32 {
    match kind {
        DeviceKind::DiscreteGpu => 256,
        DeviceKind::IntegratedGpu | DeviceKind::VirtualGpu | DeviceKind::Other => 64,
        DeviceKind::Cpu => 16,
    }
}

//! Finding and choosing wgpu adapters.

use crate::caps::DeviceKind;
use crate::error::GpuError;

/// Which adapter to open (option `adapter`: an index into [`list_adapters`] or a substring of
/// its name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum AdapterSelector {
    /// The most capable: discrete, then integrated, virtual, other, then software.
    #[default]
    Auto,
    Index(usize),
    Name(String),
}

impl std::str::FromStr for AdapterSelector {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() || s == "auto" {
            return Ok(AdapterSelector::Auto);
        }
        Ok(s.parse::<usize>().map(AdapterSelector::Index).unwrap_or_else(|_| AdapterSelector::Name(s.to_string())))
    }
}

impl std::fmt::Display for AdapterSelector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AdapterSelector::Auto => f.write_str("auto"),
            AdapterSelector::Index(i) => write!(f, "index {i}"),
            AdapterSelector::Name(n) => write!(f, "name containing '{n}'"),
        }
    }
}

/// What an adapter is, as plain data (used for ORT device metadata and logs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    pub index: usize,
    pub name: String,
    pub backend: String,
    pub kind: DeviceKind,
    pub vendor_id: u32,
    pub device_id: u32,
    pub driver: String,
    pub driver_info: String,
}

impl AdapterSummary {
    /// A software rasterizer (llvmpipe/lavapipe, SwiftShader, WARP).
    pub fn is_software(&self) -> bool {
        self.kind == DeviceKind::Cpu
    }

    fn preference(&self) -> u8 {
        match self.kind {
            DeviceKind::DiscreteGpu => 0,
            DeviceKind::IntegratedGpu => 1,
            DeviceKind::VirtualGpu => 2,
            DeviceKind::Other => 3,
            DeviceKind::Cpu => 4,
        }
    }
}

fn backends() -> wgpu::Backends {
    wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12
}

fn instance(debug_validation: bool) -> wgpu::Instance {
    let mut flags = wgpu::InstanceFlags::default();
    if debug_validation {
        flags |= wgpu::InstanceFlags::VALIDATION | wgpu::InstanceFlags::DEBUG;
    } else {
        flags.remove(wgpu::InstanceFlags::VALIDATION);
    }
    // We never dispatch indirectly. With this flag (release builds' default) wgpu compiles two
    // validation pipelines into every device it opens, which a cold driver cache makes dear.
    // Its cap on buffer sizes is kept (`limits`), so the limits we plan with do not change.
    flags.remove(wgpu::InstanceFlags::VALIDATION_INDIRECT_CALL);
    wgpu::Instance::new(wgpu::InstanceDescriptor {
        backends: backends(),
        flags,
        ..wgpu::InstanceDescriptor::new_without_display_handle()
    })
}

/// The adapter's limits as we plan with and ask for them: buffers and bindings capped to what a
/// 32-bit offset reaches, as wgpu caps them when it validates indirect calls (which we turn off:
/// `instance`), so that turning that validation off changes no plan.
pub(crate) fn limits(adapter: &wgpu::Adapter) -> wgpu::Limits {
    let mut limits = adapter.limits();
    limits.max_buffer_size = limits.max_buffer_size.min(u64::from(u32::MAX));
    limits.max_uniform_buffer_binding_size = limits.max_uniform_buffer_binding_size.min(u64::from(u32::MAX));
    // wgpu-types' STORAGE_BINDING_SIZE_ALIGNMENT (4), which wgpu does not re-export.
    let aligned = u64::from(u32::MAX) & !3;
    limits.max_storage_buffer_binding_size = limits.max_storage_buffer_binding_size.min(aligned);
    limits
}

fn summarize(index: usize, adapter: &wgpu::Adapter) -> AdapterSummary {
    let info = adapter.get_info();
    let caps = crate::caps::DeviceCaps::from_adapter(adapter);
    AdapterSummary {
        index,
        name: info.name,
        backend: info.backend.to_string(),
        kind: caps.kind,
        vendor_id: info.vendor,
        device_id: info.device,
        driver: info.driver,
        driver_info: info.driver_info,
    }
}

fn enumerate(instance: &wgpu::Instance) -> Vec<wgpu::Adapter> {
    pollster::block_on(instance.enumerate_adapters(backends()))
}

/// The process's instance and adapters without backend validation, made once: registration
/// enumerates them and every device opened later reuses them (creating a Vulkan instance and
/// enumerating loads the drivers, the dearest part of registration).
fn shared() -> &'static (wgpu::Instance, Vec<wgpu::Adapter>) {
    static SHARED: std::sync::OnceLock<(wgpu::Instance, Vec<wgpu::Adapter>)> = std::sync::OnceLock::new();
    SHARED.get_or_init(|| {
        super::startup::time(super::startup::Phase::Enumerate, || {
            let instance = instance(false);
            let adapters = enumerate(&instance);
            (instance, adapters)
        })
    })
}

/// The adapters of an instance (the shared ones unless `debug_validation`, which needs an
/// instance of its own).
fn adapters(debug_validation: bool) -> Vec<wgpu::Adapter> {
    if debug_validation {
        let instance = super::startup::time(super::startup::Phase::Enumerate, || instance(true));
        return enumerate(&instance);
    }
    shared().1.clone()
}

/// Every compute-capable adapter wgpu finds, in a stable order (the order of `adapter=N`).
pub fn list_adapters() -> Vec<AdapterSummary> {
    shared().1.iter().enumerate().map(|(i, a)| summarize(i, a)).collect()
}

/// The capabilities of the selected adapter as the EP plans with them (cooperative-matrix shapes
/// as the adapter reports them: the EP uses them unless `cooperative_matrix=0`), without
/// opening a device: what `inspect --capture-profile` records.
pub fn adapter_caps(selector: &AdapterSelector) -> Result<(AdapterSummary, crate::caps::DeviceCaps), GpuError> {
    let (adapter, summary) = select(false, selector)?;
    Ok((summary, crate::caps::DeviceCaps::from_adapter(&adapter)))
}

pub(super) fn select(
    debug_validation: bool,
    selector: &AdapterSelector,
) -> Result<(wgpu::Adapter, AdapterSummary), GpuError> {
    let adapters: Vec<(wgpu::Adapter, AdapterSummary)> = adapters(debug_validation)
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let s = summarize(i, &a);
            (a, s)
        })
        .collect();
    let found = match selector {
        AdapterSelector::Auto => adapters.into_iter().min_by_key(|(_, s)| (s.preference(), s.index)),
        AdapterSelector::Index(i) => adapters.into_iter().find(|(_, s)| s.index == *i),
        AdapterSelector::Name(n) => {
            let needle = n.to_lowercase();
            adapters.into_iter().find(|(_, s)| s.name.to_lowercase().contains(&needle))
        }
    };
    found.ok_or_else(|| GpuError::NoAdapter(selector.to_string()))
}

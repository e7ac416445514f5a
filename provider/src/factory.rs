//! `OrtEpFactory`: one per loaded library. It lists an `OrtEpDevice` per usable wgpu adapter,
//! opens devices (shared by every session on the same adapter) and creates EPs.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, CString};
use std::ptr::{null, null_mut};
use std::sync::Arc;

use ep_kernels::runtime::memory::{DeviceAllocator, GpuSource, DEFAULT_CACHE_LIMIT};
use ep_kernels::runtime::{list_adapters, AdapterSelector, AdapterSummary, Gpu};
use ep_kernels::GpuError;
use ort_sys::{
    OrtAllocator, OrtEpDevice, OrtErrorCode, OrtHardwareDevice, OrtKeyValuePairs, OrtLogger, OrtLoggingLevel,
    OrtMemoryInfo, OrtSessionOptions,
};
use parking_lot::Mutex;

use crate::abi::{OrtDataTransferImpl, OrtEp, OrtEpFactory, ABI_VERSION};
use crate::devices::{pair, HwDevice, SoftwareAdapter, SOFTWARE_ADAPTER_ENV};
use crate::ep::Ep;
use crate::fault::{self, Site};
use crate::gpus::Devices;
use crate::memory::{Allocator, DataTransfer, MemoryInfo};
use crate::options::EpOptions;
use crate::ort::{c_string, check, cstr, guard, guard_value, ort, EpError, Logger, Status};

pub const EP_NAME: &str = "WgpuExecutionProvider";
pub const VENDOR: &str = "onnxruntime-ep-wgpu";

/// Metadata key holding the wgpu adapter index of an `OrtEpDevice`.
pub const META_ADAPTER_INDEX: &str = "wgpu.adapter_index";

#[repr(C)]
pub struct Factory {
    /// Must stay the first field: ORT hands this pointer back to every callback.
    base: OrtEpFactory,
    name: CString,
    vendor: CString,
    version: CString,
    adapters: Vec<AdapterSummary>,
    devices: Arc<Devices>,
    /// The DEFAULT memory info of each adapter we offer, registered on its `OrtEpDevice`s.
    memory: Mutex<HashMap<usize, MemoryInfo>>,
    logger: Logger,
}

impl Factory {
    pub fn new(logger: Logger) -> Box<Factory> {
        let adapters = list_adapters();
        for a in &adapters {
            logger.log(
                OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
                &format!("found adapter {}: {} ({:?}, {})", a.index, a.name, a.kind, a.backend),
            );
        }
        Box::new(Factory {
            base: OrtEpFactory {
                ort_version_supported: ABI_VERSION,
                GetName: get_name,
                GetVendor: get_vendor,
                GetSupportedDevices: get_supported_devices,
                CreateEp: create_ep,
                ReleaseEp: release_ep,
                GetVendorId: get_vendor_id,
                GetVersion: get_version,
                ValidateCompiledModelCompatibilityInfo: None,
                CreateAllocator: Some(create_allocator),
                ReleaseAllocator: Some(release_allocator),
                CreateDataTransfer: create_data_transfer,
                IsStreamAware: is_stream_aware,
                CreateSyncStreamForDevice: None,
                GetHardwareDeviceIncompatibilityDetails: None,
                CreateExternalResourceImporterForDevice: None,
                GetNumCustomOpDomains: Some(get_num_custom_op_domains),
                GetCustomOpDomains: Some(get_custom_op_domains),
            },
            name: c_string(EP_NAME),
            vendor: c_string(VENDOR),
            version: c_string(env!("CARGO_PKG_VERSION")),
            adapters,
            devices: Devices::new(logger),
            memory: Mutex::new(HashMap::new()),
            logger,
        })
    }

    /// # Safety
    /// `this` is a pointer ORT got from `CreateEpFactories`.
    unsafe fn from_ptr<'a>(this: *const OrtEpFactory) -> &'a Factory {
        // SAFETY: `base` is the first field of the #[repr(C)] Factory we boxed.
        unsafe { &*(this as *const Factory) }
    }

    /// The DEFAULT memory info of an adapter, made once.
    fn memory_info(&self, adapter: usize) -> Result<*const OrtMemoryInfo, EpError> {
        let mut memory = self.memory.lock();
        if let Some(m) = memory.get(&adapter) {
            return Ok(m.0);
        }
        let m = MemoryInfo::new(adapter)?;
        let p = m.0 as *const OrtMemoryInfo;
        memory.insert(adapter, m);
        Ok(p)
    }

    /// The adapter whose memory info this is (ORT hands back the pointer we registered).
    fn adapter_of(&self, info: *const OrtMemoryInfo) -> Option<usize> {
        self.memory.lock().iter().find(|(_, m)| std::ptr::eq(m.0, info)).map(|(&a, _)| a)
    }

    /// Logs the GPU memory our open devices hold (wgpu's allocator report), so tests and users
    /// can watch for leaks across sessions.
    fn log_memory(&self, event: &str) {
        let gpus: Vec<Arc<Gpu>> = self.devices.open_gpus();
        let bytes: u64 = gpus.iter().filter_map(|g| g.allocated_bytes()).sum();
        self.logger.log(
            OrtLoggingLevel::ORT_LOGGING_LEVEL_VERBOSE,
            &format!("{event}; GPU memory held: {bytes} bytes on {} device(s)", gpus.len()),
        );
    }

    /// Which software adapters get an EP device ([`SOFTWARE_ADAPTER_ENV`]); a bad value is a warning.
    fn software_adapter(&self) -> SoftwareAdapter {
        SoftwareAdapter::parse(std::env::var(SOFTWARE_ADAPTER_ENV).ok().as_deref()).unwrap_or_else(|e| {
            self.logger.log(OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING, &e);
            SoftwareAdapter::Alone
        })
    }

    /// An info line for each software adapter the default left without a device beside a
    /// hardware adapter that has one.
    fn log_software_left_out(&self, pairs: &[(usize, usize)], setting: SoftwareAdapter) {
        let paired = |ai: usize| pairs.iter().any(|&(_, p)| p == ai);
        let Some(hardware) = self.adapters.iter().enumerate().find(|&(ai, a)| !a.is_software() && paired(ai)) else {
            return;
        };
        if setting != SoftwareAdapter::Alone {
            return;
        }
        for (_, a) in self.adapters.iter().enumerate().filter(|&(ai, a)| a.is_software() && !paired(ai)) {
            self.logger.log(
                OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
                &format!(
                    "software adapter {}: {} gets no EP device beside {}: ONNX Runtime's selection policies would \
                     rank it before the CPU EP ({SOFTWARE_ADAPTER_ENV}=1 lists it; the `adapter` option still \
                     selects it)",
                    a.index, a.name, hardware.1.name
                ),
            );
        }
    }

    /// Resolves the `adapter` option against the adapters found at load time.
    fn resolve_adapter(&self, selector: &AdapterSelector) -> Result<usize, EpError> {
        let found = match selector {
            AdapterSelector::Auto => self.adapters.first().map(|a| a.index),
            AdapterSelector::Index(i) => self.adapters.iter().find(|a| a.index == *i).map(|a| a.index),
            AdapterSelector::Name(n) => {
                let n = n.to_lowercase();
                self.adapters.iter().find(|a| a.name.to_lowercase().contains(&n)).map(|a| a.index)
            }
        };
        found.ok_or_else(|| {
            let names: Vec<String> = self.adapters.iter().map(|a| format!("{}: {}", a.index, a.name)).collect();
            EpError::invalid(format!("option 'adapter': no adapter matches {selector} (found: {})", names.join(", ")))
        })
    }
}

unsafe extern "system" fn get_name(this: *const OrtEpFactory) -> *const c_char {
    // SAFETY: ORT passes back our factory.
    guard_value("OrtEpFactory::GetName", null(), || unsafe { Factory::from_ptr(this) }.name.as_ptr())
}

unsafe extern "system" fn get_vendor(this: *const OrtEpFactory) -> *const c_char {
    // SAFETY: ORT passes back our factory.
    guard_value("OrtEpFactory::GetVendor", null(), || unsafe { Factory::from_ptr(this) }.vendor.as_ptr())
}

unsafe extern "system" fn get_version(this: *const OrtEpFactory) -> *const c_char {
    // SAFETY: ORT passes back our factory.
    guard_value("OrtEpFactory::GetVersion", null(), || unsafe { Factory::from_ptr(this) }.version.as_ptr())
}

unsafe extern "system" fn get_vendor_id(_this: *const OrtEpFactory) -> u32 {
    guard_value("OrtEpFactory::GetVendorId", 0, || 0)
}

unsafe extern "system" fn is_stream_aware(_this: *const OrtEpFactory) -> bool {
    guard_value("OrtEpFactory::IsStreamAware", false, || false)
}

unsafe extern "system" fn create_data_transfer(_this: *mut OrtEpFactory, out: *mut *mut OrtDataTransferImpl) -> Status {
    guard("CreateDataTransfer", || {
        if out.is_null() {
            return Err(EpError::invalid("CreateDataTransfer: NULL out-pointer"));
        }
        // SAFETY: ORT passes a valid out-pointer and releases the transfer through its Release.
        unsafe { *out = DataTransfer::create() };
        Ok(())
    })
}

/// The allocator of an adapter's memory. ORT calls this when the library is registered (the
/// environment's shared allocator, e.g. for Python `OrtValue`s on our device) and for sessions
/// without an allocator of their own, so it opens no device until the first allocation.
unsafe extern "system" fn create_allocator(
    this: *mut OrtEpFactory,
    info: *const OrtMemoryInfo,
    _options: *const OrtKeyValuePairs,
    out: *mut *mut OrtAllocator,
) -> Status {
    guard("OrtEpFactory::CreateAllocator", || {
        if out.is_null() {
            return Err(EpError::invalid("CreateAllocator: NULL out-pointer"));
        }
        // SAFETY: ORT passes back our factory.
        let factory = unsafe { Factory::from_ptr(this) };
        let adapter = factory.adapter_of(info).ok_or_else(|| {
            EpError::invalid("CreateAllocator: the memory info is not one WgpuExecutionProvider made")
        })?;
        let devices = factory.devices.clone();
        let options = EpOptions::from_config(&BTreeMap::new()).map_err(EpError::fail)?;
        let source: GpuSource = Box::new(move || {
            devices
                .gpu(adapter, &options)
                .map_err(|e| GpuError::DeviceCreation { adapter: adapter.to_string(), reason: e.message })
        });
        let inner = DeviceAllocator::new(source, DEFAULT_CACHE_LIMIT);
        // SAFETY: ORT passes a valid out-pointer; the memory info lives in the factory, which
        // outlives its allocators.
        unsafe { *out = Allocator::create(info, inner, factory.logger) };
        Ok(())
    })
}

unsafe extern "system" fn release_allocator(_this: *mut OrtEpFactory, allocator: *mut OrtAllocator) {
    guard_value("OrtEpFactory::ReleaseAllocator", (), || {
        // SAFETY: made by create_allocator (or OrtEp::CreateAllocator); ORT releases it once.
        unsafe { Allocator::destroy(allocator) }
    })
}

unsafe extern "system" fn get_num_custom_op_domains(_this: *mut OrtEpFactory, n: *mut usize) -> Status {
    guard("GetNumCustomOpDomains", || {
        if !n.is_null() {
            // SAFETY: ORT passes a valid out-pointer.
            unsafe { *n = 0 };
        }
        Ok(())
    })
}

unsafe extern "system" fn get_custom_op_domains(
    _this: *mut OrtEpFactory,
    _domains: *mut *mut ort_sys::OrtCustomOpDomain,
    _n: usize,
) -> Status {
    guard("GetCustomOpDomains", || Ok(()))
}

/// # Safety
/// `kvp` is a live key-value-pairs object or NULL.
unsafe fn key_values(kvp: *const OrtKeyValuePairs) -> Result<BTreeMap<String, String>, EpError> {
    let mut map = BTreeMap::new();
    if kvp.is_null() {
        return Ok(map);
    }
    let o = ort()?;
    let (mut keys, mut values, mut n) = (null(), null(), 0usize);
    // SAFETY: kvp is live; ORT fills arrays of n C strings owned by kvp.
    unsafe {
        (o.api.GetKeyValuePairs)(kvp, &mut keys, &mut values, &mut n);
        for i in 0..n {
            map.insert(cstr(*keys.add(i)), cstr(*values.add(i)));
        }
    }
    Ok(map)
}

unsafe extern "system" fn get_supported_devices(
    this: *mut OrtEpFactory,
    devices: *const *const OrtHardwareDevice,
    num_devices: usize,
    ep_devices: *mut *mut OrtEpDevice,
    max_ep_devices: usize,
    num_ep_devices: *mut usize,
) -> Status {
    guard("GetSupportedDevices", || {
        let o = ort()?;
        // SAFETY: ORT passes back our factory, `num_devices` live hardware devices and an
        // output array of `max_ep_devices` slots; HardwareDevice_Type returns a C enum that we
        // read as i32 (same ABI) so an unknown kind from a newer ORT is just a number.
        unsafe {
            *num_ep_devices = 0;
            let factory = Factory::from_ptr(this);
            let handles = if num_devices == 0 { &[][..] } else { std::slice::from_raw_parts(devices, num_devices) };
            let kind_of: unsafe extern "system" fn(*const OrtHardwareDevice) -> i32 =
                std::mem::transmute(o.api.HardwareDevice_Type);
            let hw: Vec<HwDevice> = handles
                .iter()
                .map(|&d| HwDevice {
                    kind: kind_of(d),
                    vendor_id: (o.api.HardwareDevice_VendorId)(d),
                    device_id: (o.api.HardwareDevice_DeviceId)(d),
                })
                .collect();
            let setting = factory.software_adapter();
            let pairs = pair(&factory.adapters, &hw, setting);
            factory.log_software_left_out(&pairs, setting);
            // The device a session most likely asks for (a hardware one before a software one):
            // opening it now overlaps what the process does before its session's Compile (`gpus.rs`).
            let listed = &pairs[..pairs.len().min(max_ep_devices)];
            if let Some(&(_, ai)) = listed.iter().min_by_key(|&&(_, ai)| factory.adapters[ai].is_software()) {
                factory.devices.open_early(factory.adapters[ai].index);
            }
            for (di, ai) in pairs.into_iter().take(max_ep_devices) {
                let a = &factory.adapters[ai];
                let mut meta = null_mut();
                (o.api.CreateKeyValuePairs)(&mut meta);
                let entries = [
                    (META_ADAPTER_INDEX, a.index.to_string()),
                    ("wgpu.adapter", a.name.clone()),
                    ("wgpu.backend", a.backend.clone()),
                    ("wgpu.driver", format!("{} {}", a.driver, a.driver_info).trim().to_string()),
                    ("wgpu.software", if a.is_software() { "1" } else { "0" }.to_string()),
                ];
                for (k, v) in entries {
                    let (k, v) = (c_string(k), c_string(&v));
                    (o.api.AddKeyValuePair)(meta, k.as_ptr(), v.as_ptr());
                }
                let mut dev = null_mut();
                let status = (o.ep.CreateEpDevice)(this, handles[di], meta, null(), &mut dev);
                (o.api.ReleaseKeyValuePairs)(meta);
                check(status)?;
                // Our device memory: ORT then hands Compute device tensors and copies through
                // our data transfer at the boundaries.
                let info = factory.memory_info(a.index)?;
                check((o.ep.EpDevice_AddAllocatorInfo)(dev, info))?;
                *ep_devices.add(*num_ep_devices) = dev;
                *num_ep_devices += 1;
            }
        }
        Ok(())
    })
}

unsafe extern "system" fn create_ep(
    this: *mut OrtEpFactory,
    _devices: *const *const OrtHardwareDevice,
    ep_metadata: *const *const OrtKeyValuePairs,
    num_devices: usize,
    session_options: *const OrtSessionOptions,
    logger: *const OrtLogger,
    out: *mut *mut OrtEp,
) -> Status {
    guard("CreateEp", || {
        fault::check_spec().map_err(EpError::invalid)?;
        fault::panic_point(Site::CreateEp);
        let o = ort()?;
        // SAFETY: ORT passes back our factory, live metadata for each device and live session
        // options that we read (and copy) only during this call.
        unsafe {
            let factory = Factory::from_ptr(this);
            let mut config = null_mut();
            check((o.api.GetSessionOptionsConfigEntries)(session_options, &mut config))?;
            let entries = key_values(config);
            (o.api.ReleaseKeyValuePairs)(config);
            let options = EpOptions::from_config(&entries?).map_err(EpError::invalid)?;
            let meta =
                if num_devices > 0 && !ep_metadata.is_null() { key_values(*ep_metadata)? } else { BTreeMap::new() };
            let adapter = match &options.adapter {
                Some(sel) => factory.resolve_adapter(sel)?,
                None => match meta.get(META_ADAPTER_INDEX).and_then(|v| v.parse().ok()) {
                    Some(i) => i,
                    None => factory.resolve_adapter(&AdapterSelector::Auto)?,
                },
            };
            let gpu = factory.devices.open(adapter, &options)?;
            // The session logger lives as long as the EP, which ORT releases before the session.
            let logger = Logger::new(logger);
            logger.log(
                OrtLoggingLevel::ORT_LOGGING_LEVEL_INFO,
                &format!("session on adapter {adapter}: {}", gpu.adapter().name),
            );
            *out = Ep::create(gpu, options, logger);
        }
        Ok(())
    })
}

unsafe extern "system" fn release_ep(this: *mut OrtEpFactory, ep: *mut OrtEp) {
    guard_value("ReleaseEp", (), || {
        // SAFETY: `ep` came from `create_ep` and ORT releases it once.
        unsafe { Ep::destroy(ep) };
        fault::panic_point(Site::ReleaseEp);
        // SAFETY: ORT passes back our factory.
        unsafe { Factory::from_ptr(this) }.log_memory("session released");
    });
}

/// Frees a factory made by [`Factory::new`].
///
/// # Safety
/// `f` came from `Box::into_raw(Factory::new(..))` and is released once.
pub unsafe fn destroy(f: *mut OrtEpFactory) -> Result<(), EpError> {
    if f.is_null() {
        return Err(EpError::new(OrtErrorCode::ORT_INVALID_ARGUMENT, "ReleaseEpFactory(NULL)"));
    }
    // SAFETY: guaranteed by the caller.
    drop(unsafe { Box::from_raw(f as *mut Factory) });
    // ORT may unload the library next: no pipeline-compile thread may still be running our code.
    ep_kernels::runtime::join_compile_workers();
    crate::workers::shut_down();
    crate::ort::factory_released();
    Ok(())
}

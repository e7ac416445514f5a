//! Our device memory as ONNX Runtime sees it: the `OrtMemoryInfo` registered on each
//! `OrtEpDevice`, the `OrtAllocator`s over [`DeviceAllocator`], the `OrtDataTransferImpl`, and
//! reading tensors wherever they live.
//!
//! An address `Alloc` returns is not dereferenceable: it names a byte of a wgpu buffer
//! (`ep_kernels::runtime::memory`), so ORT's pointer arithmetic (memory patterns, tensor byte
//! offsets) keeps working and every use goes back through [`resolve`].

use std::ffi::c_void;
use std::ptr::{null, null_mut};

use ep_kernels::runtime::memory::{self, resolve, DeviceAllocator};
use ep_kernels::runtime::transfer::{self, Copy};
use ep_kernels::GpuError;
use ort_sys::{
    OrtAllocator, OrtAllocatorType, OrtDeviceMemoryType, OrtLoggingLevel, OrtMemoryInfo, OrtMemoryInfoDeviceType,
    OrtSyncStream, OrtValue,
};

use crate::abi::{OrtDataTransferImpl, OrtMemoryDevice, ABI_VERSION};
use crate::fault::{self, Fault, Site};
use crate::ort::{c_string, check, guard, guard_value, ort, EpError, Logger, Ort, Status};

/// The vendor id of our memory in `OrtDevice`s: "WGPU" in ASCII. Not a PCI vendor id (those
/// have 16 bits), so no other plugin EP claims it, and not 0, which the WebGPU EP uses.
pub const VENDOR_ID: u32 = 0x5747_5055;

/// The name of our memory infos.
pub const MEMORY_NAME: &str = "WgpuExecutionProvider";

const DEVICE_TYPE_CPU: i32 = 0;
const DEVICE_TYPE_GPU: i32 = 1;
const MEMORY_TYPE_DEFAULT: i32 = 0;

/// An `OrtMemoryInfo` we created (released on drop).
pub struct MemoryInfo(pub *mut OrtMemoryInfo);

// SAFETY: an OrtMemoryInfo is immutable after creation; ORT reads it from any thread.
unsafe impl Send for MemoryInfo {}
// SAFETY: as above.
unsafe impl Sync for MemoryInfo {}

impl MemoryInfo {
    /// The DEFAULT memory of adapter `device_id`.
    pub fn new(device_id: usize) -> Result<MemoryInfo, EpError> {
        let o = ort()?;
        let name = c_string(MEMORY_NAME);
        let mut info = null_mut();
        // SAFETY: CreateMemoryInfo_V2 (API 23) copies the name and writes a new info we own.
        check(unsafe {
            (o.api.CreateMemoryInfo_V2)(
                name.as_ptr(),
                OrtMemoryInfoDeviceType::OrtMemoryInfoDeviceType_GPU,
                VENDOR_ID,
                device_id as i32,
                OrtDeviceMemoryType::OrtDeviceMemoryType_DEFAULT,
                0,
                OrtAllocatorType::OrtDeviceAllocator,
                &mut info,
            )
        })?;
        Ok(MemoryInfo(info))
    }
}

impl Drop for MemoryInfo {
    fn drop(&mut self) {
        if let Ok(o) = ort() {
            // SAFETY: we created it and release it once.
            unsafe { (o.api.ReleaseMemoryInfo)(self.0) };
        }
    }
}

/// Whether a memory device is ours: GPU, DEFAULT memory, our vendor id.
///
/// # Safety
/// `d` is NULL or a live `OrtMemoryDevice`.
pub unsafe fn is_ours(o: &Ort, d: *const OrtMemoryDevice) -> bool {
    // SAFETY: guaranteed by the caller.
    !d.is_null()
        && unsafe {
            (o.ep.MemoryDevice_GetDeviceType)(d) == DEVICE_TYPE_GPU
                && (o.ep.MemoryDevice_GetMemoryType)(d) == MEMORY_TYPE_DEFAULT
                && (o.ep.MemoryDevice_GetVendorId)(d) == VENDOR_ID
        }
}

/// # Safety
/// `d` is NULL or a live `OrtMemoryDevice`.
unsafe fn is_cpu(o: &Ort, d: *const OrtMemoryDevice) -> bool {
    // SAFETY: guaranteed by the caller.
    !d.is_null() && unsafe { (o.ep.MemoryDevice_GetDeviceType)(d) == DEVICE_TYPE_CPU }
}

/// Where a tensor's bytes are (host memory, or a range of our device memory).
pub use ep_kernels::graph::InputData as Place;

/// Where a live tensor's bytes are, before an address of ours is resolved.
pub struct RawTensor {
    ptr: *const c_void,
    size: usize,
    /// In our device memory (else host memory).
    ours: bool,
}

impl RawTensor {
    /// The host slice, or the range of our device memory the address names (a failure keeps its
    /// kind: a lost device, a failed allocation, a released address).
    ///
    /// # Safety
    /// The tensor this came from is alive for `'a`.
    pub unsafe fn place<'a>(&self) -> Result<Place<'a>, GpuError> {
        if self.size == 0 {
            return Ok(Place::Host(&[]));
        }
        if !self.ours {
            if self.ptr.is_null() {
                return Ok(Place::Host(&[]));
            }
            // SAFETY: a host tensor's data covers GetTensorSizeInBytes bytes (guaranteed by the caller).
            return Ok(Place::Host(unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.size) }));
        }
        resolve(self.ptr as u64, self.size as u64).map(Place::Device)
    }
}

/// A live tensor's data pointer, size and memory. Device memory of another provider is an
/// error, not a read.
///
/// # Safety
/// `value` is a live tensor `OrtValue`.
pub unsafe fn tensor_raw(o: &Ort, value: *const OrtValue, mutable: bool) -> Result<RawTensor, EpError> {
    // SAFETY (whole block): value is live; we only read its size, data pointer and memory device.
    unsafe {
        let mut size = 0usize;
        check((o.api.GetTensorSizeInBytes)(value, &mut size))?;
        let mut p: *const c_void = null();
        if mutable {
            let mut m: *mut c_void = null_mut();
            check((o.api.GetTensorMutableData)(value as *mut OrtValue, &mut m))?;
            p = m;
        } else {
            check((o.api.GetTensorData)(value, &mut p))?;
        }
        let device = (o.ep.Value_GetMemoryDevice)(value);
        if device.is_null() || is_cpu(o, device) {
            return Ok(RawTensor { ptr: p, size, ours: false });
        }
        if !is_ours(o, device) {
            return Err(EpError::invalid(format!(
                "a tensor in device memory of another provider (device type {}, vendor id {:#x}) reached \
                 WgpuExecutionProvider; bind our device's memory (vendor id {VENDOR_ID:#x}) or host memory",
                (o.ep.MemoryDevice_GetDeviceType)(device),
                (o.ep.MemoryDevice_GetVendorId)(device)
            )));
        }
        Ok(RawTensor { ptr: p, size, ours: true })
    }
}

/// The bytes of a live tensor: a host slice, or the range of our device memory it names.
///
/// # Safety
/// `value` is a live tensor `OrtValue` that ORT keeps alive for `'a`.
pub unsafe fn tensor_place<'a>(o: &Ort, value: *const OrtValue, mutable: bool) -> Result<Place<'a>, EpError> {
    // SAFETY: guaranteed by the caller.
    unsafe { Ok(tensor_raw(o, value, mutable)?.place()?) }
}

/// An `OrtAllocator` over our device memory.
#[repr(C)]
pub struct Allocator {
    /// Must stay the first field: ORT hands this pointer back to every callback.
    base: OrtAllocator,
    info: *const OrtMemoryInfo,
    inner: DeviceAllocator,
    logger: Logger,
}

impl Allocator {
    /// Boxes an allocator; `info` must outlive it (the factory keeps ours).
    pub fn create(info: *const OrtMemoryInfo, inner: DeviceAllocator, logger: Logger) -> *mut OrtAllocator {
        let base = OrtAllocator {
            // The layout with GetStats and AllocOnStream (API 23).
            version: 23,
            Alloc: Some(alloc),
            Free: Some(free),
            Info: Some(info_of),
            Reserve: Some(reserve),
            GetStats: None,
            AllocOnStream: Some(alloc_on_stream),
        };
        Box::into_raw(Box::new(Allocator { base, info, inner, logger })) as *mut OrtAllocator
    }

    /// # Safety
    /// `a` came from [`Allocator::create`] and is released once.
    pub unsafe fn destroy(a: *mut OrtAllocator) {
        if !a.is_null() {
            // SAFETY: guaranteed by the caller.
            drop(unsafe { Box::from_raw(a as *mut Allocator) });
        }
    }

    /// # Safety
    /// `this` came from [`Allocator::create`].
    unsafe fn from_ptr<'a>(this: *const OrtAllocator) -> &'a Allocator {
        // SAFETY: `base` is the first field of the #[repr(C)] Allocator we boxed.
        unsafe { &*(this as *const Allocator) }
    }

    fn alloc(&self, size: usize) -> *mut c_void {
        let result = if size >= fault::ALLOC_FAULT_MIN_BYTES && fault::fires(Fault::OutOfMemory, Site::Alloc) {
            Err(GpuError::OutOfMemory(format!("test fault {}=oom:alloc", fault::ENV)))
        } else {
            self.inner.alloc(size as u64)
        };
        match result {
            Ok(addr) => addr as *mut c_void,
            Err(e) => {
                // ORT turns NULL into its own allocation error; say why here, once.
                self.logger.log(
                    OrtLoggingLevel::ORT_LOGGING_LEVEL_WARNING,
                    &format!("device allocation of {size} bytes failed: {e}"),
                );
                null_mut()
            }
        }
    }
}

unsafe extern "system" fn alloc(this: *mut OrtAllocator, size: usize) -> *mut c_void {
    // SAFETY: ORT passes back our allocator.
    guard_value("OrtAllocator::Alloc", null_mut(), || unsafe { Allocator::from_ptr(this) }.alloc(size))
}

unsafe extern "system" fn reserve(this: *const OrtAllocator, size: usize) -> *mut c_void {
    // SAFETY: ORT passes back our allocator.
    guard_value("OrtAllocator::Reserve", null_mut(), || unsafe { Allocator::from_ptr(this) }.alloc(size))
}

unsafe extern "system" fn alloc_on_stream(this: *mut OrtAllocator, size: usize, _s: *mut OrtSyncStream) -> *mut c_void {
    // SAFETY: ORT passes back our allocator; we have no streams (every copy is ordered on the
    // device's one queue).
    guard_value("OrtAllocator::AllocOnStream", null_mut(), || unsafe { Allocator::from_ptr(this) }.alloc(size))
}

unsafe extern "system" fn free(this: *mut OrtAllocator, p: *mut c_void) {
    guard_value("OrtAllocator::Free", (), || {
        if !memory::free(p as u64) {
            // SAFETY: ORT passes back our allocator.
            let a = unsafe { Allocator::from_ptr(this) };
            a.logger.log(
                OrtLoggingLevel::ORT_LOGGING_LEVEL_ERROR,
                &format!("internal error (an EP bug): Free({p:p}) is not a live allocation of ours"),
            );
        }
    })
}

unsafe extern "system" fn info_of(this: *const OrtAllocator) -> *const OrtMemoryInfo {
    // SAFETY: ORT passes back our allocator.
    guard_value("OrtAllocator::Info", null(), || unsafe { Allocator::from_ptr(this) }.info)
}

/// Our `OrtDataTransferImpl`: CPU ↔ our device and within our memory.
#[repr(C)]
pub struct DataTransfer {
    base: OrtDataTransferImpl,
}

impl DataTransfer {
    pub fn create() -> *mut OrtDataTransferImpl {
        let base = OrtDataTransferImpl {
            ort_version_supported: ABI_VERSION,
            Release: release_transfer,
            CanCopy: can_copy,
            CopyTensors: copy_tensors,
        };
        Box::into_raw(Box::new(DataTransfer { base })) as *mut OrtDataTransferImpl
    }
}

unsafe extern "system" fn release_transfer(this: *mut OrtDataTransferImpl) {
    guard_value("OrtDataTransferImpl::Release", (), || {
        if !this.is_null() {
            // SAFETY: made by DataTransfer::create; ORT releases it once.
            drop(unsafe { Box::from_raw(this as *mut DataTransfer) });
        }
    })
}

unsafe extern "system" fn can_copy(
    _this: *const OrtDataTransferImpl,
    src: *const OrtMemoryDevice,
    dst: *const OrtMemoryDevice,
) -> bool {
    guard_value("OrtDataTransferImpl::CanCopy", false, || {
        let Ok(o) = ort() else { return false };
        // SAFETY: ORT passes live memory devices (or NULL, which is_ours/is_cpu reject).
        unsafe {
            match (is_ours(o, src), is_ours(o, dst)) {
                (true, true) => true,
                (true, false) => is_cpu(o, dst),
                (false, true) => is_cpu(o, src),
                (false, false) => false,
            }
        }
    })
}

unsafe extern "system" fn copy_tensors(
    _this: *mut OrtDataTransferImpl,
    src: *const *const OrtValue,
    dst: *mut *mut OrtValue,
    _streams: *mut *mut OrtSyncStream,
    count: usize,
) -> Status {
    guard("OrtDataTransferImpl::CopyTensors", || {
        let o = ort()?;
        if count > 0 && (src.is_null() || dst.is_null()) {
            return Err(EpError::invalid("CopyTensors: NULL tensor arrays"));
        }
        let mut copies = Vec::with_capacity(count);
        for i in 0..count {
            // SAFETY: ORT passes `count` live source and destination tensors, each alive for
            // this call; host destinations are ours to write during it.
            let (s, d) = unsafe { (tensor_place(o, *src.add(i), false)?, tensor_place(o, *dst.add(i), true)?) };
            if s.len() != d.len() {
                return Err(EpError::invalid(format!(
                    "CopyTensors: tensor {i} has {} bytes, its destination {}",
                    s.len(),
                    d.len()
                )));
            }
            copies.push(match (s, d) {
                (Place::Host(s), Place::Device(d)) => Copy::ToDevice { src: s, dst: d },
                (Place::Device(s), Place::Host(d)) => {
                    // SAFETY: `d` is the destination tensor's own host memory, writable by us
                    // for this call and not aliased by any source of this batch.
                    let d = unsafe { std::slice::from_raw_parts_mut(d.as_ptr() as *mut u8, d.len()) };
                    Copy::ToHost { src: s, dst: d }
                }
                (Place::Device(s), Place::Device(d)) => Copy::OnDevice { src: s, dst: d },
                (Place::Host(s), Place::Host(d)) if s.is_empty() && d.is_empty() => continue,
                (Place::Host(_), Place::Host(_)) => {
                    return Err(EpError::invalid("CopyTensors: neither tensor is in WgpuExecutionProvider memory"))
                }
            });
        }
        transfer::transfer(copies).map_err(EpError::from)
    })
}

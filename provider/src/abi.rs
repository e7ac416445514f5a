//! The EP-side structs of ONNX Runtime's plugin-EP C ABI that ort-sys does not declare, laid
//! out for API version 24 (`include/onnxruntime/core/session/onnxruntime_ep_c_api.h`; slot
//! order verified against ORT 1.24.4, 1.30.0 and 1.31.1, see `docs/ARCHITECTURE.md`).
//!
//! Every struct ORT reads from us starts with `ort_version_supported`; ORT ignores fields past
//! that version. Enums that ORT hands us are typed `i32`: an unknown value from a newer ORT
//! would be undefined behaviour in a Rust enum.
#![allow(non_snake_case, non_camel_case_types, clippy::upper_case_acronyms)]

use std::ffi::{c_char, c_void};

use ort_sys::{
    OrtCustomOpDomain, OrtEpDevice, OrtGraph, OrtHardwareDevice, OrtKernelContext, OrtKeyValuePairs, OrtLogger,
    OrtMemoryInfo, OrtNode, OrtRunOptions, OrtSessionOptions, OrtStatusPtr, OrtSyncStream, OrtValue,
};

/// The layout version of every struct below.
pub const ABI_VERSION: u32 = 24;

macro_rules! opaque {
    ($($name:ident),*) => {$(
        #[repr(C)]
        pub struct $name {
            _private: [u8; 0],
        }
    )*};
}

opaque!(OrtEpGraphSupportInfo, OrtMemoryDevice, OrtNodeComputeContext, OrtSyncStreamImpl, OrtKernelRegistry);

type Status = OrtStatusPtr;

/// `OrtEpApi`, slots 0–15 (the API-23 prefix; we never index past it).
#[repr(C)]
pub struct OrtEpApi {
    pub CreateEpDevice: unsafe extern "system" fn(
        factory: *mut OrtEpFactory,
        hardware_device: *const OrtHardwareDevice,
        ep_metadata: *const OrtKeyValuePairs,
        ep_options: *const OrtKeyValuePairs,
        ep_device: *mut *mut OrtEpDevice,
    ) -> Status,
    pub ReleaseEpDevice: unsafe extern "system" fn(device: *mut OrtEpDevice),
    pub EpGraphSupportInfo_AddNodesToFuse: unsafe extern "system" fn(
        info: *mut OrtEpGraphSupportInfo,
        nodes: *const *const OrtNode,
        num_nodes: usize,
        options: *const OrtNodeFusionOptions,
    ) -> Status,
    pub EpGraphSupportInfo_AddSingleNode:
        unsafe extern "system" fn(info: *mut OrtEpGraphSupportInfo, node: *const OrtNode) -> Status,
    pub NodeComputeContext_NodeName: unsafe extern "system" fn(context: *const OrtNodeComputeContext) -> *const c_char,
    pub EpDevice_AddAllocatorInfo:
        unsafe extern "system" fn(device: *mut OrtEpDevice, info: *const OrtMemoryInfo) -> Status,
    pub MemoryInfo_GetMemoryDevice: unsafe extern "system" fn(info: *const OrtMemoryInfo) -> *const OrtMemoryDevice,
    pub Value_GetMemoryDevice: unsafe extern "system" fn(value: *const OrtValue) -> *const OrtMemoryDevice,
    pub MemoryDevice_AreEqual: unsafe extern "system" fn(a: *const OrtMemoryDevice, b: *const OrtMemoryDevice) -> bool,
    pub MemoryDevice_GetDeviceType: unsafe extern "system" fn(device: *const OrtMemoryDevice) -> i32,
    pub MemoryDevice_GetMemoryType: unsafe extern "system" fn(device: *const OrtMemoryDevice) -> i32,
    pub MemoryDevice_GetVendorId: unsafe extern "system" fn(device: *const OrtMemoryDevice) -> u32,
    pub MemoryDevice_GetDeviceId: unsafe extern "system" fn(device: *const OrtMemoryDevice) -> u32,
    pub SyncStream_GetImpl: *const c_void,
    pub SyncStream_GetSyncId: *const c_void,
    pub GetSyncIdForLastWaitOnSyncStream: *const c_void,
}

#[repr(C)]
pub struct OrtNodeFusionOptions {
    pub ort_version_supported: u32,
    pub drop_constant_initializers: bool,
}

#[repr(C)]
pub struct OrtNodeComputeInfo {
    pub ort_version_supported: u32,
    pub CreateState: unsafe extern "system" fn(
        this: *mut OrtNodeComputeInfo,
        context: *mut OrtNodeComputeContext,
        state: *mut *mut c_void,
    ) -> Status,
    pub Compute: unsafe extern "system" fn(
        this: *mut OrtNodeComputeInfo,
        state: *mut c_void,
        context: *mut OrtKernelContext,
    ) -> Status,
    pub ReleaseState: unsafe extern "system" fn(this: *mut OrtNodeComputeInfo, state: *mut c_void),
}

#[repr(C)]
pub struct OrtDataTransferImpl {
    pub ort_version_supported: u32,
    pub Release: unsafe extern "system" fn(this: *mut OrtDataTransferImpl),
    pub CanCopy: unsafe extern "system" fn(
        this: *const OrtDataTransferImpl,
        src: *const OrtMemoryDevice,
        dst: *const OrtMemoryDevice,
    ) -> bool,
    pub CopyTensors: unsafe extern "system" fn(
        this: *mut OrtDataTransferImpl,
        src: *const *const OrtValue,
        dst: *mut *mut OrtValue,
        streams: *mut *mut OrtSyncStream,
        count: usize,
    ) -> Status,
}

/// `OrtEpFactory`, slots 0–17 (API 24).
#[repr(C)]
pub struct OrtEpFactory {
    pub ort_version_supported: u32,
    pub GetName: unsafe extern "system" fn(this: *const OrtEpFactory) -> *const c_char,
    pub GetVendor: unsafe extern "system" fn(this: *const OrtEpFactory) -> *const c_char,
    pub GetSupportedDevices: unsafe extern "system" fn(
        this: *mut OrtEpFactory,
        devices: *const *const OrtHardwareDevice,
        num_devices: usize,
        ep_devices: *mut *mut OrtEpDevice,
        max_ep_devices: usize,
        num_ep_devices: *mut usize,
    ) -> Status,
    pub CreateEp: unsafe extern "system" fn(
        this: *mut OrtEpFactory,
        devices: *const *const OrtHardwareDevice,
        ep_metadata: *const *const OrtKeyValuePairs,
        num_devices: usize,
        session_options: *const OrtSessionOptions,
        logger: *const OrtLogger,
        ep: *mut *mut OrtEp,
    ) -> Status,
    pub ReleaseEp: unsafe extern "system" fn(this: *mut OrtEpFactory, ep: *mut OrtEp),
    pub GetVendorId: unsafe extern "system" fn(this: *const OrtEpFactory) -> u32,
    pub GetVersion: unsafe extern "system" fn(this: *const OrtEpFactory) -> *const c_char,
    pub ValidateCompiledModelCompatibilityInfo: Option<
        unsafe extern "system" fn(
            this: *mut OrtEpFactory,
            devices: *const *const OrtHardwareDevice,
            num_devices: usize,
            info: *const c_char,
            out: *mut i32,
        ) -> Status,
    >,
    pub CreateAllocator: Option<
        unsafe extern "system" fn(
            this: *mut OrtEpFactory,
            info: *const OrtMemoryInfo,
            options: *const OrtKeyValuePairs,
            out: *mut *mut ort_sys::OrtAllocator,
        ) -> Status,
    >,
    pub ReleaseAllocator:
        Option<unsafe extern "system" fn(this: *mut OrtEpFactory, allocator: *mut ort_sys::OrtAllocator)>,
    /// Must be non-NULL: ORT 1.24–1.31 call it unconditionally at registration.
    pub CreateDataTransfer:
        unsafe extern "system" fn(this: *mut OrtEpFactory, out: *mut *mut OrtDataTransferImpl) -> Status,
    pub IsStreamAware: unsafe extern "system" fn(this: *const OrtEpFactory) -> bool,
    pub CreateSyncStreamForDevice: Option<
        unsafe extern "system" fn(
            this: *mut OrtEpFactory,
            device: *const OrtMemoryDevice,
            options: *const OrtKeyValuePairs,
            out: *mut *mut OrtSyncStreamImpl,
        ) -> Status,
    >,
    pub GetHardwareDeviceIncompatibilityDetails: Option<
        unsafe extern "system" fn(
            this: *mut OrtEpFactory,
            device: *const OrtHardwareDevice,
            details: *mut c_void,
        ) -> Status,
    >,
    pub CreateExternalResourceImporterForDevice: Option<
        unsafe extern "system" fn(this: *mut OrtEpFactory, device: *const OrtEpDevice, out: *mut *mut c_void) -> Status,
    >,
    pub GetNumCustomOpDomains: Option<unsafe extern "system" fn(this: *mut OrtEpFactory, num: *mut usize) -> Status>,
    pub GetCustomOpDomains: Option<
        unsafe extern "system" fn(this: *mut OrtEpFactory, domains: *mut *mut OrtCustomOpDomain, num: usize) -> Status,
    >,
}

/// `OrtEp`, slots 0–14 (API 24).
#[repr(C)]
pub struct OrtEp {
    pub ort_version_supported: u32,
    pub GetName: unsafe extern "system" fn(this: *const OrtEp) -> *const c_char,
    pub GetCapability: unsafe extern "system" fn(
        this: *mut OrtEp,
        graph: *const OrtGraph,
        support: *mut OrtEpGraphSupportInfo,
    ) -> Status,
    pub Compile: unsafe extern "system" fn(
        this: *mut OrtEp,
        graphs: *const *const OrtGraph,
        fused_nodes: *const *const OrtNode,
        count: usize,
        compute_infos: *mut *mut OrtNodeComputeInfo,
        ep_context_nodes: *mut *mut OrtNode,
    ) -> Status,
    pub ReleaseNodeComputeInfos:
        unsafe extern "system" fn(this: *mut OrtEp, infos: *mut *mut OrtNodeComputeInfo, count: usize),
    pub GetPreferredDataLayout: Option<unsafe extern "system" fn(this: *mut OrtEp, layout: *mut i32) -> Status>,
    pub ShouldConvertDataLayoutForOp: Option<
        unsafe extern "system" fn(
            this: *mut OrtEp,
            domain: *const c_char,
            op_type: *const c_char,
            target: i32,
            should_convert: *mut i32,
        ) -> Status,
    >,
    pub SetDynamicOptions: Option<
        unsafe extern "system" fn(
            this: *mut OrtEp,
            keys: *const *const c_char,
            values: *const *const c_char,
            num: usize,
        ) -> Status,
    >,
    pub OnRunStart: Option<unsafe extern "system" fn(this: *mut OrtEp, options: *const OrtRunOptions) -> Status>,
    pub OnRunEnd:
        Option<unsafe extern "system" fn(this: *mut OrtEp, options: *const OrtRunOptions, sync: bool) -> Status>,
    pub CreateAllocator: Option<
        unsafe extern "system" fn(
            this: *mut OrtEp,
            info: *const OrtMemoryInfo,
            out: *mut *mut ort_sys::OrtAllocator,
        ) -> Status,
    >,
    pub CreateSyncStreamForDevice: Option<
        unsafe extern "system" fn(
            this: *mut OrtEp,
            device: *const OrtMemoryDevice,
            out: *mut *mut OrtSyncStreamImpl,
        ) -> Status,
    >,
    pub GetCompiledModelCompatibilityInfo:
        Option<unsafe extern "system" fn(this: *mut OrtEp, graph: *const OrtGraph) -> *const c_char>,
    pub GetKernelRegistry:
        Option<unsafe extern "system" fn(this: *mut OrtEp, registry: *mut *const OrtKernelRegistry) -> Status>,
    pub IsConcurrentRunSupported: Option<unsafe extern "system" fn(this: *mut OrtEp, supported: *mut bool) -> Status>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// Slot n of a function-pointer table sits at byte 8·n on 64-bit targets (slot 0 is the
    /// padded u32 version).
    #[test]
    fn slots_are_where_ort_reads_them() {
        assert_eq!(offset_of!(OrtEpFactory, GetName), 8);
        assert_eq!(offset_of!(OrtEpFactory, CreateDataTransfer), 8 * 11);
        assert_eq!(offset_of!(OrtEpFactory, GetCustomOpDomains), 8 * 17);
        assert_eq!(size_of::<OrtEpFactory>(), 8 * 18);
        assert_eq!(offset_of!(OrtEp, GetCapability), 8 * 2);
        assert_eq!(offset_of!(OrtEp, IsConcurrentRunSupported), 8 * 14);
        assert_eq!(size_of::<OrtEp>(), 8 * 15);
        assert_eq!(offset_of!(OrtEpApi, EpGraphSupportInfo_AddNodesToFuse), 8 * 2);
        assert_eq!(offset_of!(OrtEpApi, MemoryDevice_GetDeviceId), 8 * 12);
        assert_eq!(offset_of!(OrtNodeComputeInfo, ReleaseState), 8 * 3);
        assert_eq!(offset_of!(OrtDataTransferImpl, CopyTensors), 8 * 3);
    }
}

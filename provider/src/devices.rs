//! Pairing wgpu adapters with the hardware devices ONNX Runtime discovered.
//!
//! ORT offers `OrtHardwareDevice`s (GPU with PCI ids, CPU, NPU). A hardware adapter pairs with
//! the GPU device of the same PCI vendor and device id (vendor alone when it is unambiguous);
//! a software adapter (llvmpipe/lavapipe) pairs with ORT's CPU device, so a machine whose only
//! adapter is the software one still lists a `WgpuExecutionProvider` device. Each ORT device
//! gets at most one adapter: the first, i.e. the most capable, in wgpu's order.
//!
//! Beside a hardware adapter the software one gets no device unless asked for
//! (`ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER`, [`SoftwareAdapter`]): ORT's selection policies rank
//! every CPU device's EP before its own CPU EP, so `PREFER_CPU` (and `DEFAULT`, and the CPU
//! fallback of `PREFER_GPU`) would otherwise run a GPU machine's models on llvmpipe.

use ep_kernels::runtime::AdapterSummary;

/// ORT's `OrtHardwareDeviceType` values.
pub const HW_CPU: i32 = 0;
pub const HW_GPU: i32 = 1;

/// An ORT hardware device as plain data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HwDevice {
    pub kind: i32,
    pub vendor_id: u32,
    pub device_id: u32,
}

/// Which software adapters get an EP device: `ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SoftwareAdapter {
    /// Unset: only where no hardware adapter got one (a machine without a GPU driver, CI).
    #[default]
    Alone,
    /// `1`: beside hardware adapters too.
    Always,
    /// `0`: never.
    Never,
}

/// The environment variable that sets [`SoftwareAdapter`].
pub const SOFTWARE_ADAPTER_ENV: &str = "ONNXRUNTIME_EP_WGPU_SOFTWARE_ADAPTER";

impl SoftwareAdapter {
    /// The setting for a value of [`SOFTWARE_ADAPTER_ENV`]; `Err` names what is accepted.
    pub fn parse(value: Option<&str>) -> Result<SoftwareAdapter, String> {
        match value.map(str::trim) {
            None | Some("") => Ok(SoftwareAdapter::Alone),
            Some("1") => Ok(SoftwareAdapter::Always),
            Some("0") => Ok(SoftwareAdapter::Never),
            Some(other) => Err(format!(
                "{SOFTWARE_ADAPTER_ENV}={other:?} is not 1 (list software adapters beside hardware ones) or 0 \
                 (never list them); using the default (only where no hardware adapter is listed)"
            )),
        }
    }
}

/// `(hardware device index, adapter index)` pairs.
pub fn pair(adapters: &[AdapterSummary], devices: &[HwDevice], software: SoftwareAdapter) -> Vec<(usize, usize)> {
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let taken = |pairs: &Vec<(usize, usize)>, d: usize| pairs.iter().any(|&(pd, _)| pd == d);
    // Hardware adapters first, by exact PCI ids, then by an unambiguous vendor id.
    for (ai, a) in adapters.iter().enumerate().filter(|(_, a)| !a.is_software()) {
        let exact = devices.iter().enumerate().find(|(di, d)| {
            d.kind == HW_GPU && d.vendor_id == a.vendor_id && d.device_id == a.device_id && !taken(&pairs, *di)
        });
        let by_vendor = || {
            let same: Vec<usize> = devices
                .iter()
                .enumerate()
                .filter(|(di, d)| d.kind == HW_GPU && d.vendor_id == a.vendor_id && !taken(&pairs, *di))
                .map(|(di, _)| di)
                .collect();
            (same.len() == 1).then(|| same[0])
        };
        if let Some(di) = exact.map(|(di, _)| di).or_else(by_vendor) {
            pairs.push((di, ai));
        }
    }
    let software_too = match software {
        SoftwareAdapter::Always => true,
        SoftwareAdapter::Alone => pairs.is_empty(),
        SoftwareAdapter::Never => false,
    };
    for (ai, _) in adapters.iter().enumerate().filter(|(_, a)| software_too && a.is_software()) {
        if let Some(di) = devices.iter().position(|d| d.kind == HW_CPU) {
            if !taken(&pairs, di) {
                pairs.push((di, ai));
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

#[cfg(test)]
mod tests {
    use super::*;
    use ep_kernels::DeviceKind;

    fn adapter(index: usize, name: &str, kind: DeviceKind, vendor_id: u32, device_id: u32) -> AdapterSummary {
        AdapterSummary {
            index,
            name: name.into(),
            backend: "vulkan".into(),
            kind,
            vendor_id,
            device_id,
            driver: String::new(),
            driver_info: String::new(),
        }
    }

    #[test]
    fn software_adapter_pairs_with_the_cpu_device() {
        let adapters = [adapter(0, "llvmpipe", DeviceKind::Cpu, 0x10005, 0)];
        let devices = [HwDevice { kind: HW_CPU, vendor_id: 0x8086, device_id: 0 }];
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Alone), vec![(0, 0)]);
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Always), vec![(0, 0)]);
        assert!(pair(&adapters, &devices, SoftwareAdapter::Never).is_empty());
    }

    #[test]
    fn gpu_pairs_by_pci_ids() {
        let adapters = [
            adapter(0, "NVIDIA H200", DeviceKind::DiscreteGpu, 0x10de, 0x2335),
            adapter(1, "llvmpipe", DeviceKind::Cpu, 0x10005, 0),
        ];
        let devices = [
            HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x2335 },
            HwDevice { kind: HW_CPU, vendor_id: 0x8086, device_id: 0 },
        ];
        // llvmpipe beside the GPU only when asked for: policies would prefer it to ORT's CPU EP.
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Alone), vec![(0, 0)]);
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Always), vec![(0, 0), (1, 1)]);
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Never), vec![(0, 0)]);
    }

    #[test]
    fn a_hardware_adapter_without_an_ort_device_keeps_the_software_one() {
        // A hardware adapter that pairs with nothing (ORT found no such GPU) leaves llvmpipe alone.
        let adapters = [
            adapter(0, "GPU", DeviceKind::DiscreteGpu, 0x1002, 0x73bf),
            adapter(1, "llvmpipe", DeviceKind::Cpu, 0x10005, 0),
        ];
        let devices = [HwDevice { kind: HW_CPU, vendor_id: 0x8086, device_id: 0 }];
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Alone), vec![(0, 1)]);
    }

    #[test]
    fn the_setting_parses_its_three_values_and_names_a_bad_one() {
        assert_eq!(SoftwareAdapter::parse(None), Ok(SoftwareAdapter::Alone));
        assert_eq!(SoftwareAdapter::parse(Some("")), Ok(SoftwareAdapter::Alone));
        assert_eq!(SoftwareAdapter::parse(Some("1")), Ok(SoftwareAdapter::Always));
        assert_eq!(SoftwareAdapter::parse(Some(" 0 ")), Ok(SoftwareAdapter::Never));
        let err = SoftwareAdapter::parse(Some("yes")).unwrap_err();
        assert!(err.contains(SOFTWARE_ADAPTER_ENV) && err.contains("\"yes\""), "{err}");
    }

    #[test]
    fn vendor_only_match_must_be_unambiguous() {
        let adapters = [adapter(0, "GPU", DeviceKind::DiscreteGpu, 0x10de, 0x9999)];
        let one = [HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x2335 }];
        assert_eq!(pair(&adapters, &one, SoftwareAdapter::Alone), vec![(0, 0)]);
        let two = [
            HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x1 },
            HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x2 },
        ];
        assert!(pair(&adapters, &two, SoftwareAdapter::Alone).is_empty());
    }

    #[test]
    fn one_adapter_per_device() {
        let adapters = [adapter(0, "a", DeviceKind::Cpu, 1, 0), adapter(1, "b", DeviceKind::Cpu, 1, 0)];
        let devices = [HwDevice { kind: HW_CPU, vendor_id: 0, device_id: 0 }];
        assert_eq!(pair(&adapters, &devices, SoftwareAdapter::Alone), vec![(0, 0)]);
    }
}

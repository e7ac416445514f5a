//! Pairing wgpu adapters with the hardware devices ONNX Runtime discovered.
//!
//! ORT offers `OrtHardwareDevice`s (GPU with PCI ids, CPU, NPU). A hardware adapter pairs with
//! the GPU device of the same PCI vendor and device id (vendor alone when it is unambiguous);
//! a software adapter (llvmpipe/lavapipe) pairs with ORT's CPU device, so a machine whose only
//! adapter is the software one still lists a `WgpuExecutionProvider` device. Each ORT device
//! gets at most one adapter: the first, i.e. the most capable, in wgpu's order.

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

/// `(hardware device index, adapter index)` pairs.
pub fn pair(adapters: &[AdapterSummary], devices: &[HwDevice]) -> Vec<(usize, usize)> {
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
    for (ai, _) in adapters.iter().enumerate().filter(|(_, a)| a.is_software()) {
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
        assert_eq!(pair(&adapters, &devices), vec![(0, 0)]);
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
        assert_eq!(pair(&adapters, &devices), vec![(0, 0), (1, 1)]);
    }

    #[test]
    fn vendor_only_match_must_be_unambiguous() {
        let adapters = [adapter(0, "GPU", DeviceKind::DiscreteGpu, 0x10de, 0x9999)];
        let one = [HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x2335 }];
        assert_eq!(pair(&adapters, &one), vec![(0, 0)]);
        let two = [
            HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x1 },
            HwDevice { kind: HW_GPU, vendor_id: 0x10de, device_id: 0x2 },
        ];
        assert!(pair(&adapters, &two).is_empty());
    }

    #[test]
    fn one_adapter_per_device() {
        let adapters = [adapter(0, "a", DeviceKind::Cpu, 1, 0), adapter(1, "b", DeviceKind::Cpu, 1, 0)];
        let devices = [HwDevice { kind: HW_CPU, vendor_id: 0, device_id: 0 }];
        assert_eq!(pair(&adapters, &devices), vec![(0, 0)]);
    }
}

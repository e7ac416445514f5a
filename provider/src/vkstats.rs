//! What the Vulkan driver makes of our kernels: registers, spills, binary size and compile time
//! per pipeline (`VK_KHR_pipeline_executable_properties`), for `bench`'s `pipeline_stats` tool.
//!
//! Raw Vulkan through `ash`, beside wgpu rather than through it: wgpu neither enables the
//! extension nor passes the capture flags at pipeline creation. The device enables every feature
//! the adapter reports (as wgpu enables what our kernels need), without or with robust buffer
//! access (wgpu turns it on where the driver has it), and uses no pipeline cache unless `keep_cache`
//! asks for each pipeline's own.

use std::ffi::{c_char, CStr};
use std::time::Instant;

use ash::{khr, vk};

/// One resource binding of a shader, as its pipeline layout must declare it.
#[derive(Clone, Copy, Debug)]
pub struct Binding {
    pub group: u32,
    pub binding: u32,
    pub uniform: bool,
}

/// One driver statistic of one executable, already formatted.
#[derive(Clone, Debug)]
pub struct Stat {
    pub name: String,
    pub value: String,
}

/// One internal representation (an IR or a disassembly) the driver offers.
#[derive(Clone, Debug)]
pub struct Representation {
    pub name: String,
    pub text: Option<String>,
    pub bytes: usize,
}

/// A compiled pipeline: the time `vkCreateComputePipelines` took and what the driver reports.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub compile_ms: f64,
    pub stats: Vec<Stat>,
    pub representations: Vec<Representation>,
    /// The data of a pipeline cache that held only this pipeline, where `keep_cache` asked for it.
    pub cache_data: Option<Vec<u8>>,
}

/// A Vulkan device with pipeline statistics enabled.
pub struct StatsDevice {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    /// `None` where the driver lacks `VK_KHR_pipeline_executable_properties` (only compile
    /// times are reported then).
    exec: Option<khr::pipeline_executable_properties::Device>,
    /// The adapter's name and driver, for the report.
    pub adapter: String,
    /// Compile each pipeline into a fresh pipeline cache and return that cache's data (the
    /// driver's compiled binary, in its own container), for offline disassembly.
    pub keep_cache: bool,
}

fn text(chars: &[c_char]) -> String {
    // The driver fills fixed arrays with NUL-terminated text; a missing NUL keeps the whole array.
    let bytes: Vec<u8> = chars.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn vk_err(what: &str) -> impl Fn(vk::Result) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl StatsDevice {
    /// Opens the first discrete GPU (else the first adapter) that has the extension.
    pub fn open(robust: bool) -> Result<StatsDevice, String> {
        // SAFETY: loading the system's Vulkan loader runs its initialisers; nothing else in this
        // process depends on their order.
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("no Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `info` and what it points to live across the call.
        let instance = unsafe { entry.create_instance(&info, None) }.map_err(vk_err("vkCreateInstance"))?;
        match Self::open_device(&instance, robust) {
            Ok((device, adapter, stats)) => {
                let exec = stats.then(|| khr::pipeline_executable_properties::Device::new(&instance, &device));
                Ok(StatsDevice { _entry: entry, instance, device, exec, adapter, keep_cache: false })
            }
            Err(e) => {
                // SAFETY: no object made from this instance is alive.
                unsafe { instance.destroy_instance(None) };
                Err(e)
            }
        }
    }

    fn open_device(instance: &ash::Instance, robust: bool) -> Result<(ash::Device, String, bool), String> {
        // SAFETY: `instance` is a live instance.
        let devices = unsafe { instance.enumerate_physical_devices() }.map_err(vk_err("enumerate"))?;
        let mut chosen = None;
        for pd in devices {
            // SAFETY: `pd` came from this instance.
            let props = unsafe { instance.get_physical_device_properties(pd) };
            // SAFETY: as above.
            let exts = unsafe { instance.enumerate_device_extension_properties(pd) }.map_err(vk_err("extensions"))?;
            let names: Vec<String> = exts.iter().map(|e| text(&e.extension_name)).collect();
            let discrete = props.device_type == vk::PhysicalDeviceType::DISCRETE_GPU;
            if chosen.is_none() || discrete {
                chosen = Some((pd, props, names));
            }
            if discrete {
                break;
            }
        }
        let (pd, props, names) = chosen.ok_or("no Vulkan adapter")?;
        let has = |n: &str| names.iter().any(|x| x == n);
        let (coop_ext, rob_ext) = (has("VK_KHR_cooperative_matrix"), has("VK_EXT_robustness2"));
        let (base, mut v11, mut v12, mut v13, mut coop, mut rob2) = query_features(instance, pd, coop_ext, rob_ext);
        let mut base = base;
        if !robust {
            base.robust_buffer_access = vk::FALSE;
            rob2.robust_buffer_access2 = vk::FALSE;
            rob2.robust_image_access2 = vk::FALSE;
            coop.cooperative_matrix_robust_buffer_access = vk::FALSE;
        }
        let mut exec =
            vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
        let mut feats = vk::PhysicalDeviceFeatures2::default()
            .features(base)
            .push_next(&mut v11)
            .push_next(&mut v12)
            .push_next(&mut v13);
        let mut ext_names: Vec<&CStr> = Vec::new();
        let stats = has("VK_KHR_pipeline_executable_properties");
        if stats {
            feats = feats.push_next(&mut exec);
            ext_names.push(khr::pipeline_executable_properties::NAME);
        }
        if coop_ext {
            feats = feats.push_next(&mut coop);
            ext_names.push(khr::cooperative_matrix::NAME);
        }
        if rob_ext {
            feats = feats.push_next(&mut rob2);
            ext_names.push(ash::ext::robustness2::NAME);
        }
        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default().queue_family_index(0).queue_priorities(&priorities)];
        let ext_ptrs: Vec<*const c_char> = ext_names.iter().map(|n| n.as_ptr()).collect();
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&ext_ptrs)
            .push_next(&mut feats);
        // SAFETY: every structure `info` points to lives across the call; the features enabled
        // are the ones the driver just reported.
        let device = unsafe { instance.create_device(pd, &info, None) }.map_err(vk_err("vkCreateDevice"))?;
        let v = props.driver_version;
        let adapter = format!("{} (driver {}.{}.{})", text(&props.device_name), v >> 22, (v >> 14) & 0xff, v & 0x3fff);
        Ok((device, adapter, stats))
    }

    /// Compiles one compute shader (entry point `main`) and reads the driver's report.
    pub fn compile(&self, spirv: &[u32], bindings: &[Binding]) -> Result<Compiled, String> {
        let groups = bindings.iter().map(|b| b.group + 1).max().unwrap_or(0);
        let mut set_layouts = Vec::new();
        let result = self.compile_with(spirv, bindings, groups, &mut set_layouts);
        for layout in set_layouts {
            // SAFETY: the layout is ours and no pipeline creation using it is in flight.
            unsafe { self.device.destroy_descriptor_set_layout(layout, None) };
        }
        result
    }

    fn compile_with(
        &self,
        spirv: &[u32],
        bindings: &[Binding],
        groups: u32,
        set_layouts: &mut Vec<vk::DescriptorSetLayout>,
    ) -> Result<Compiled, String> {
        for g in 0..groups {
            let list: Vec<vk::DescriptorSetLayoutBinding> = bindings
                .iter()
                .filter(|b| b.group == g)
                .map(|b| {
                    let ty =
                        if b.uniform { vk::DescriptorType::UNIFORM_BUFFER } else { vk::DescriptorType::STORAGE_BUFFER };
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(ty)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&list);
            // SAFETY: `info` and `list` live across the call.
            let layout =
                unsafe { self.device.create_descriptor_set_layout(&info, None) }.map_err(vk_err("set layout"))?;
            set_layouts.push(layout);
        }
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(set_layouts);
        // SAFETY: the set layouts are live.
        let layout = unsafe { self.device.create_pipeline_layout(&info, None) }.map_err(vk_err("pipeline layout"))?;
        let result = self.compile_in(spirv, layout);
        // SAFETY: pipeline creation with this layout has returned.
        unsafe { self.device.destroy_pipeline_layout(layout, None) };
        result
    }

    fn compile_in(&self, spirv: &[u32], layout: vk::PipelineLayout) -> Result<Compiled, String> {
        let info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: `spirv` is naga's output for a validated module and lives across the call.
        let module = unsafe { self.device.create_shader_module(&info, None) }.map_err(vk_err("shader module"))?;
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let capture = match self.exec {
            Some(_) => {
                vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR
                    | vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR
            }
            None => vk::PipelineCreateFlags::empty(),
        };
        let info = vk::ComputePipelineCreateInfo::default().flags(capture).stage(stage).layout(layout);
        let cache = if self.keep_cache {
            // SAFETY: an empty cache, destroyed below after its data is read.
            unsafe { self.device.create_pipeline_cache(&vk::PipelineCacheCreateInfo::default(), None) }
                .map_err(vk_err("pipeline cache"))?
        } else {
            vk::PipelineCache::null()
        };
        let start = Instant::now();
        // SAFETY: `info` points to a live module and layout; `cache` is null or ours, used by this call alone.
        let created = unsafe { self.device.create_compute_pipelines(cache, std::slice::from_ref(&info), None) };
        let compile_ms = start.elapsed().as_secs_f64() * 1e3;
        // SAFETY: pipeline creation has returned; the module is not needed any more.
        unsafe { self.device.destroy_shader_module(module, None) };
        let cache_data = if self.keep_cache {
            // SAFETY: the cache is ours and no pipeline creation with it is in flight.
            let data = unsafe { self.device.get_pipeline_cache_data(cache) };
            // SAFETY: as above; the cache is not used again.
            unsafe { self.device.destroy_pipeline_cache(cache, None) };
            data.ok()
        } else {
            None
        };
        let pipeline = created.map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"))?[0];
        let report = self.report(pipeline);
        // SAFETY: the pipeline was never bound to a command buffer.
        unsafe { self.device.destroy_pipeline(pipeline, None) };
        let (stats, representations) = report?;
        Ok(Compiled { compile_ms, stats, representations, cache_data })
    }

    fn report(&self, pipeline: vk::Pipeline) -> Result<(Vec<Stat>, Vec<Representation>), String> {
        let Some(exec) = &self.exec else { return Ok((Vec::new(), Vec::new())) };
        let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
        // SAFETY: the pipeline was created with the capture flags on a device with the extension.
        let executables = unsafe { exec.get_pipeline_executable_properties(&info) }.map_err(vk_err("executables"))?;
        let (mut stats, mut reps) = (Vec::new(), Vec::new());
        for index in 0..executables.len() as u32 {
            let exe = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index);
            // SAFETY: `index` is below the executable count the driver reported.
            let list = unsafe { exec.get_pipeline_executable_statistics(&exe) }.map_err(vk_err("statistics"))?;
            for s in list {
                // SAFETY: `format` names the union member the driver wrote.
                let value = unsafe {
                    match s.format {
                        vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                        vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                        _ => format!("{:.3}", s.value.f64),
                    }
                };
                stats.push(Stat { name: text(&s.name), value });
            }
            reps.extend(representations(exec, &exe)?);
        }
        Ok((stats, reps))
    }
}

fn representations(
    exec: &khr::pipeline_executable_properties::Device,
    exe: &vk::PipelineExecutableInfoKHR<'_>,
) -> Result<Vec<Representation>, String> {
    // SAFETY: the first call only asks for the count and each representation's size.
    let sized =
        unsafe { exec.get_pipeline_executable_internal_representations(exe) }.map_err(vk_err("representations"))?;
    let mut buffers: Vec<Vec<u8>> = sized.iter().map(|r| vec![0u8; r.data_size]).collect();
    let mut reps: Vec<vk::PipelineExecutableInternalRepresentationKHR> = sized
        .iter()
        .zip(buffers.iter_mut())
        .map(|(r, buf)| vk::PipelineExecutableInternalRepresentationKHR {
            data_size: r.data_size,
            p_data: buf.as_mut_ptr().cast(),
            ..Default::default()
        })
        .collect();
    let mut count = reps.len() as u32;
    // SAFETY: `reps` holds `count` structures whose `p_data` point to buffers of `data_size`
    // bytes that outlive the call.
    let r = unsafe {
        (exec.fp().get_pipeline_executable_internal_representations_khr)(
            exec.device(),
            exe,
            &mut count,
            reps.as_mut_ptr(),
        )
    };
    if r != vk::Result::SUCCESS && r != vk::Result::INCOMPLETE {
        return Err(format!("representations: {r}"));
    }
    Ok(reps
        .iter()
        .zip(buffers)
        .take(count as usize)
        .map(|(rep, mut buf)| {
            buf.truncate(rep.data_size);
            let text_form = (rep.is_text != 0).then(|| {
                let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
                String::from_utf8_lossy(&buf[..end]).into_owned()
            });
            Representation { name: text(&rep.name), text: text_form, bytes: rep.data_size }
        })
        .collect())
}

type Features = (
    vk::PhysicalDeviceFeatures,
    vk::PhysicalDeviceVulkan11Features<'static>,
    vk::PhysicalDeviceVulkan12Features<'static>,
    vk::PhysicalDeviceVulkan13Features<'static>,
    vk::PhysicalDeviceCooperativeMatrixFeaturesKHR<'static>,
    vk::PhysicalDeviceRobustness2FeaturesEXT<'static>,
);

/// Every feature the adapter reports, each structure detached from the query's chain.
fn query_features(instance: &ash::Instance, pd: vk::PhysicalDevice, coop_ext: bool, rob_ext: bool) -> Features {
    let mut v11 = vk::PhysicalDeviceVulkan11Features::default();
    let mut v12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut v13 = vk::PhysicalDeviceVulkan13Features::default();
    let mut coop = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
    let mut rob2 = vk::PhysicalDeviceRobustness2FeaturesEXT::default();
    let base = {
        let mut feats =
            vk::PhysicalDeviceFeatures2::default().push_next(&mut v11).push_next(&mut v12).push_next(&mut v13);
        if coop_ext {
            feats = feats.push_next(&mut coop);
        }
        if rob_ext {
            feats = feats.push_next(&mut rob2);
        }
        // SAFETY: `feats` heads a chain of live structures the driver fills.
        unsafe { instance.get_physical_device_features2(pd, &mut feats) };
        feats.features
    };
    let detach = std::ptr::null_mut();
    v11.p_next = detach;
    v12.p_next = detach;
    v13.p_next = detach;
    coop.p_next = detach;
    rob2.p_next = detach;
    (base, v11, v12, v13, coop, rob2)
}

impl Drop for StatsDevice {
    fn drop(&mut self) {
        // SAFETY: every object made from the device was destroyed by the call that made it.
        unsafe {
            let _ = self.device.device_wait_idle();
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}

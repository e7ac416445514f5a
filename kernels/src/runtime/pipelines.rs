//! Compiled pipelines, cached by shader variant (not by shape: shapes are uniforms).

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use parking_lot::Mutex;

use super::Gpu;
use crate::error::GpuError;
use crate::shader::ShaderVariant;

/// How a binding is used by a shader.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    ReadWrite,
    Uniform,
}

/// The bindings a family of shaders declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BindingLayout {
    /// `(binding, access)` pairs.
    Fixed(&'static [(u32, Access)]),
    /// Op-registry kernels: `reads` read-only storage buffers at bindings `0..reads`, `writes`
    /// read-write ones after them, then one uniform buffer.
    Op { reads: u32, writes: u32 },
}

impl BindingLayout {
    /// Every `(binding, access)` of the layout.
    pub fn entries(self) -> Vec<(u32, Access)> {
        match self {
            BindingLayout::Fixed(e) => e.to_vec(),
            BindingLayout::Op { reads, writes } => (0..reads)
                .map(|b| (b, Access::Read))
                .chain((reads..reads + writes).map(|b| (b, Access::ReadWrite)))
                .chain(std::iter::once((reads + writes, Access::Uniform)))
                .collect(),
        }
    }

    /// `a, b, bias → out`: GEMM products (the split-K partial kernel leaves bias unused).
    pub const PRODUCT: BindingLayout = BindingLayout::Fixed(&[
        (0, Access::Read),
        (1, Access::Read),
        (2, Access::Read),
        (3, Access::ReadWrite),
        (4, Access::Uniform),
    ]);
    /// `a, b, bias → out` plus the conv geometry: implicit-GEMM conv products.
    pub const PRODUCT_IMPLICIT: BindingLayout = BindingLayout::Fixed(&[
        (0, Access::Read),
        (1, Access::Read),
        (2, Access::Read),
        (3, Access::ReadWrite),
        (4, Access::Uniform),
        (5, Access::Uniform),
    ]);
    /// `partials, bias → out`: the split-K reduction.
    pub const REDUCE: BindingLayout =
        BindingLayout::Fixed(&[(0, Access::Read), (2, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)]);
    /// `input → out`: data movement such as im2col.
    pub const UNARY: BindingLayout =
        BindingLayout::Fixed(&[(0, Access::Read), (3, Access::ReadWrite), (4, Access::Uniform)]);
}

pub(super) struct PipelineCache {
    layouts: Mutex<HashMap<BindingLayout, Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)>>>,
    pipelines: Mutex<HashMap<ShaderVariant, Arc<wgpu::ComputePipeline>>>,
    trusted: Option<Arc<dyn super::TrustedShaders>>,
}

impl PipelineCache {
    pub(super) fn new(trusted: Option<Arc<dyn super::TrustedShaders>>) -> Self {
        PipelineCache { layouts: Mutex::new(HashMap::new()), pipelines: Mutex::new(HashMap::new()), trusted }
    }
}

fn entry(binding: u32, access: Access) -> wgpu::BindGroupLayoutEntry {
    let ty = match access {
        Access::Uniform => wgpu::BufferBindingType::Uniform,
        Access::Read => wgpu::BufferBindingType::Storage { read_only: true },
        Access::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
    };
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::COMPUTE,
        ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
        count: None,
    }
}

impl Gpu {
    pub(crate) fn layout(&self, layout: BindingLayout) -> Arc<(wgpu::BindGroupLayout, wgpu::PipelineLayout)> {
        let mut layouts = self.pipelines.layouts.lock();
        layouts
            .entry(layout)
            .or_insert_with(|| {
                let entries: Vec<_> = layout.entries().into_iter().map(|(b, a)| entry(b, a)).collect();
                let bgl = self
                    .device
                    .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor { label: None, entries: &entries });
                let pl = self.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                    label: None,
                    bind_group_layouts: &[Some(&bgl)],
                    immediate_size: 0,
                });
                Arc::new((bgl, pl))
            })
            .clone()
    }

    /// The compiled pipeline of `variant`, compiling it on first use.
    pub fn pipeline(
        &self,
        variant: &ShaderVariant,
        layout: BindingLayout,
    ) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
        if let Some(p) = self.pipelines.pipelines.lock().get(variant) {
            return Ok(p.clone());
        }
        let name = variant.name();
        let source = variant.emit().map_err(|message| GpuError::ShaderCompile { variant: name.clone(), message })?;
        let layouts = self.layout(layout);
        let trusted = self.pipelines.trusted.as_ref().filter(|_| variant.guards_every_access());
        let compile = || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(&name),
                source: wgpu::ShaderSource::Wgsl(source.as_str().into()),
            };
            let module = match trusted {
                Some(t) => t.create(&self.device, desc),
                None => self.device.create_shader_module(desc),
            };
            self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(&name),
                layout: Some(&layouts.1),
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        // naga has panicked inside its SPIR-V backend on some inputs (gpu-machine.md): a panic
        // here must become an error, never unwind into the host process.
        let pipeline = self
            .scoped(&name, || {
                catch_unwind(AssertUnwindSafe(compile))
                    .map_err(|panic| GpuError::ShaderCompile { variant: name.clone(), message: panic_message(&panic) })
            })
            .map_err(|e| match e {
                GpuError::Validation { message, .. } => GpuError::ShaderCompile { variant: name.clone(), message },
                other => other,
            })?;
        let pipeline = Arc::new(pipeline);
        self.pipelines.pipelines.lock().insert(variant.clone(), pipeline.clone());
        tracing::debug!(target: "ep_wgpu", "compiled pipeline {name}");
        Ok(pipeline)
    }

    /// Number of pipelines compiled so far (tests check that new shapes reuse them).
    pub fn pipeline_count(&self) -> usize {
        self.pipelines.pipelines.lock().len()
    }
}

/// The text of a caught panic payload.
pub fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-string payload".into())
}

//! Prepared dispatches: a pipeline, its bind group (buffers + uniforms) and a grid, built once
//! per shape and recorded into command encoders on every run.

use bytemuck::bytes_of;

use super::pipelines::{BindingLayout, PendingPipeline};
use super::uniforms::UniformSlot;
use super::{Gpu, GpuBuffer};
use crate::error::GpuError;
use crate::gemm::{GemmPlan, StepIo};
use crate::shader::ShaderVariant;

/// One ready-to-record dispatch. Its bind group keeps the bound buffers (uniforms, scratch)
/// alive.
#[derive(Debug)]
pub struct Dispatch {
    pub label: String,
    pipeline: std::sync::Arc<PendingPipeline>,
    bind_group: wgpu::BindGroup,
    grid: [u32; 3],
    /// Whether its kernel runs on tensor cores (real or emulated).
    tensor_cores: bool,
    /// Reserves the slot the bind group reads its uniforms from.
    _uniforms: UniformSlot,
}

impl Dispatch {
    /// Records the dispatch, waiting for its pipeline if it is still compiling; one whose
    /// pipeline failed to compile is left out ([`Gpu::encode`] reports the failure).
    pub fn record(&self, pass: &mut wgpu::ComputePass<'_>) {
        let Ok(pipeline) = self.pipeline.wait() else { return };
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        let [x, y, z] = self.grid;
        pass.dispatch_workgroups(x, y, z);
    }

    pub fn grid(&self) -> [u32; 3] {
        self.grid
    }

    /// Whether its pipeline's compile has finished (successfully or not).
    pub fn is_ready(&self) -> bool {
        self.pipeline.is_ready()
    }

    /// Whether its kernel runs on tensor cores (real or emulated) and is still compiling: what
    /// an interim plan can spare a run from waiting for (`graph/interim.rs`).
    pub fn compiling_on_tensor_cores(&self) -> bool {
        self.tensor_cores && !self.is_ready()
    }

    /// Lets its pipeline's compile start as soon as a core is free, if it was deferred
    /// (`compile_order.rs`).
    pub fn promote(&self) {
        self.pipeline.promote();
    }

    /// Waits until its pipeline's compile finished or `deadline` passed (a deferred one is
    /// promoted first); whether it finished.
    pub fn wait_until(&self, deadline: std::time::Instant) -> bool {
        self.pipeline.wait_until(deadline)
    }

    /// Whether it runs `other`'s pipeline.
    pub fn same_pipeline(&self, other: &Dispatch) -> bool {
        std::sync::Arc::ptr_eq(&self.pipeline, &other.pipeline)
    }
}

/// Buffers of one GEMM: inputs, optional bias and the output.
#[derive(Clone, Copy, Debug)]
pub struct GemmBindings<'a> {
    pub a: &'a GpuBuffer,
    pub b: &'a GpuBuffer,
    pub bias: Option<&'a GpuBuffer>,
    pub out: &'a GpuBuffer,
}

impl Gpu {
    /// Builds a dispatch of `variant` with `params` as its uniforms and `buffers` bound at the
    /// given binding indices.
    pub fn prepare(
        &self,
        variant: ShaderVariant,
        layout: BindingLayout,
        params: &[u8],
        buffers: &[(u32, &GpuBuffer)],
        grid: [u32; 3],
    ) -> Result<Dispatch, GpuError> {
        self.prepare_at(&variant, layout, params, 4, buffers, grid)
    }

    /// A dispatch of an op-registry kernel: `inputs` at bindings `0..n`, `outputs` after them,
    /// `params` as the uniform buffer after those ([`BindingLayout::Op`]).
    pub fn prepare_op(
        &self,
        variant: &ShaderVariant,
        inputs: &[&GpuBuffer],
        outputs: &[&GpuBuffer],
        params: &[u8],
        grid: [u32; 3],
    ) -> Result<Dispatch, GpuError> {
        let (reads, writes) = (inputs.len() as u32, outputs.len() as u32);
        let buffers: Vec<(u32, &GpuBuffer)> =
            inputs.iter().chain(outputs).enumerate().map(|(i, &b)| (i as u32, b)).collect();
        self.prepare_at(variant, BindingLayout::Op { reads, writes }, params, reads + writes, &buffers, grid)
    }

    fn prepare_at(
        &self,
        variant: &ShaderVariant,
        layout: BindingLayout,
        params: &[u8],
        uniform_binding: u32,
        buffers: &[(u32, &GpuBuffer)],
        grid: [u32; 3],
    ) -> Result<Dispatch, GpuError> {
        // Compiles on a worker while this thread plans and binds the other dispatches.
        let pipeline = self.pipeline_async(variant, layout);
        let label = variant.name();
        let uniforms = self.uniform_slot(params, &label)?;
        let layouts = self.layout(layout);
        let mut entries: Vec<wgpu::BindGroupEntry> =
            buffers.iter().map(|&(binding, buf)| wgpu::BindGroupEntry { binding, resource: buf.binding() }).collect();
        entries.push(wgpu::BindGroupEntry { binding: uniform_binding, resource: uniforms.binding() });
        let bind_group = super::startup::time(super::startup::Phase::BindGroups, || {
            self.scoped(&label, || {
                Ok(self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some(&label),
                    layout: &layouts.0,
                    entries: &entries,
                }))
            })
        })?;
        let tensor_cores = variant.uses_tensor_cores();
        Ok(Dispatch { label, pipeline, bind_group, grid, tensor_cores, _uniforms: uniforms })
    }

    /// A uniform buffer holding `params`, written through its mapping at creation: no staging
    /// buffer and no submission (a set of a few hundred dispatches used to cost as many of each).
    fn uniform_buffer(&self, params: &[u8], label: &str) -> Result<GpuBuffer, GpuError> {
        let size = (params.len() as u64).next_multiple_of(16).max(16);
        let buffer = self.scoped(label, || {
            let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: true,
            });
            {
                let mut view = buffer
                    .slice(..)
                    .get_mapped_range_mut()
                    .map_err(|e| GpuError::OutOfMemory(format!("uniforms of {label}: {e}")))?;
                view.slice(..params.len()).copy_from_slice(params);
            }
            buffer.unmap();
            Ok(buffer)
        })?;
        Ok(GpuBuffer::new(buffer, params.len() as u64))
    }

    /// The dispatches of a GEMM plan, bound to `io`. Allocates the split-K workspace.
    pub fn prepare_gemm(&self, plan: &GemmPlan, io: GemmBindings<'_>) -> Result<Vec<Dispatch>, GpuError> {
        self.prepare_gemm_with(plan, io, None, None, Known::default())
    }

    /// [`Gpu::prepare_gemm`] for a plan whose `_res` steps read `residual` (binding 6).
    pub fn prepare_gemm_residual(
        &self,
        plan: &GemmPlan,
        io: GemmBindings<'_>,
        residual: &GpuBuffer,
    ) -> Result<Vec<Dispatch>, GpuError> {
        self.prepare_gemm_with(plan, io, None, Some(residual), Known::default())
    }

    /// [`Gpu::prepare_gemm`] (with the residual, if any) for a product whose B is a constant of
    /// the program: a split f32 product's max pass runs once now over both operands, which
    /// leaves B's maxima in the workspace, and the returned pass takes A's alone (a run then
    /// reads the weight once, in the product, instead of twice). With `a_bound` (at least every
    /// |A| of every run: `graph/bounds.rs`), A's maxima are that bound, written once, and no
    /// pass runs.
    pub fn prepare_gemm_constant_b(
        &self,
        plan: &GemmPlan,
        io: GemmBindings<'_>,
        residual: Option<&GpuBuffer>,
        a_bound: Option<f32>,
    ) -> Result<Vec<Dispatch>, GpuError> {
        let known = Known { constant_b: !plan.swap_operands, a_bound: a_bound.filter(|b| b.is_finite() && *b > 0.0) };
        self.prepare_gemm_with(plan, io, None, residual, known)
    }

    /// [`Gpu::prepare_gemm`]; `geometry` is the second uniform (binding 5) of the product steps
    /// whose variant gathers B implicitly (an implicit-GEMM conv), required by them; `known` as
    /// in [`Gpu::prepare_gemm_constant_b`].
    pub(super) fn prepare_gemm_with(
        &self,
        plan: &GemmPlan,
        io: GemmBindings<'_>,
        geometry: Option<&[u8]>,
        residual: Option<&GpuBuffer>,
        known: Known,
    ) -> Result<Vec<Dispatch>, GpuError> {
        let geometry = geometry.map(|g| self.uniform_buffer(g, "conv geometry")).transpose()?;
        let (a, b) = if plan.swap_operands { (io.b, io.a) } else { (io.a, io.b) };
        let bias = match io.bias {
            Some(b) => b,
            None => self.unused_input()?,
        };
        let workspace = if plan.workspace_bytes > 0 {
            Some(self.storage_buffer(plan.workspace_bytes, "split-k workspace")?)
        } else {
            None
        };
        let mut out = Vec::with_capacity(plan.steps.len());
        // The max pass over both operands that runs once, before any run (`constant_b`), and
        // A's maxima written after it: the bound, then zeros (`a_bound`).
        let mut once = Vec::new();
        let mut a_maxima = None;
        for step in &plan.steps {
            let variant = step.shader();
            let params = bytes_of(&step.params);
            // A product writes the output, or its split's partial sums to the workspace; an
            // implicit-GEMM product also binds the conv geometry, a split f32 product the max pass's
            // maxima (the workspace).
            // A `_res` program also reads the residual operand.
            let residual = match (variant.reads_residual(), residual) {
                (false, _) => None,
                (true, Some(r)) => Some((6, r)),
                (true, None) => {
                    return Err(GpuError::Internal(format!("{} reads a residual but none is bound", variant.name())))
                }
            };
            let (fifth, layouts) = fifth_binding(step.variant, &variant, workspace.as_ref(), geometry.as_ref())?;
            let product = |target: &GpuBuffer| -> Result<Dispatch, GpuError> {
                let buffers: Vec<_> = [(0, a), (1, b), (2, bias), (3, target)]
                    .into_iter()
                    .chain(fifth.map(|f| (5, f)))
                    .chain(residual)
                    .collect();
                let layout = layouts[usize::from(residual.is_some())];
                self.prepare(variant.clone(), layout, params, &buffers, step.grid)
            };
            let dispatch = match (step.io, &workspace) {
                (StepIo::Product { to_workspace: false }, _) => product(io.out)?,
                (StepIo::Product { to_workspace: true }, Some(ws)) => product(ws)?,
                (StepIo::Reduce, Some(ws)) => {
                    let buffers: Vec<_> = [(0, ws), (2, bias), (3, io.out)].into_iter().chain(residual).collect();
                    let layout =
                        if residual.is_some() { BindingLayout::REDUCE_RESIDUAL } else { BindingLayout::REDUCE };
                    self.prepare(variant, layout, params, &buffers, step.grid)?
                }
                (StepIo::AbsMax, Some(ws)) => {
                    let buffers = [(0, a), (1, b), (3, ws)];
                    if known.constant_b {
                        once.push(self.prepare(variant.clone(), BindingLayout::ABSMAX, params, &buffers, step.grid)?);
                        if let Some(bound) = known.a_bound {
                            let mut maxima = vec![0u8; step.params.tiles_n as usize * 4];
                            maxima[..4].copy_from_slice(&bound.abs().to_bits().to_le_bytes());
                            a_maxima = Some((ws, maxima));
                            continue;
                        }
                        let a_only = crate::gemm::max_pass_of_a(step, self.caps()).map_err(GpuError::Internal)?;
                        let params = bytes_of(&a_only.params);
                        self.prepare(variant, BindingLayout::ABSMAX, params, &buffers, a_only.grid)?
                    } else {
                        self.prepare(variant, BindingLayout::ABSMAX, params, &buffers, step.grid)?
                    }
                }
                (_, None) => return Err(GpuError::Internal("split-K step without a workspace".into())),
            };
            out.push(dispatch);
        }
        if !once.is_empty() {
            // Queued now, so it runs before any run's submission; nothing waits for it.
            self.scoped("constant operand maxima", || {
                let mut encoder =
                    self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("maxima") });
                self.encode(&mut encoder, &once.iter().collect::<Vec<_>>());
                self.submit([encoder.finish()]);
                Ok(())
            })?;
        }
        if let Some((ws, maxima)) = a_maxima {
            // A later submission than the pass's: A's share of the workspace holds the bound.
            self.write(ws, &maxima)?;
        }
        Ok(out)
    }

    /// Records `dispatches` into one compute pass of `encoder` (wgpu orders dependent
    /// dispatches inside a pass). Waits for pipelines still compiling; a pipeline that failed
    /// to compile fails the enclosing [`Gpu::scoped`] call.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, dispatches: &[&Dispatch]) {
        if super::pipelines::log_compiles() {
            for d in dispatches.iter().filter(|d| !d.is_ready()) {
                eprintln!("ep-wgpu waiting for {} at {:.1} ms", d.label, super::log_clock_ms());
            }
        }
        self.await_pipelines(dispatches.iter().map(|d| &*d.pipeline));
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor { label: None, timestamp_writes: None });
        for d in dispatches {
            d.record(&mut pass);
        }
    }

    /// Records, submits and waits for `dispatches` (tests and tools).
    pub fn run(&self, dispatches: &[&Dispatch]) -> Result<(), GpuError> {
        self.scoped("run", || {
            let mut encoder =
                self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("run") });
            self.encode(&mut encoder, dispatches);
            self.submit([encoder.finish()]);
            Ok(())
        })?;
        self.wait()
    }
}

/// What a product's operands are known to be before any run.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Known {
    /// B is a constant of the program.
    pub constant_b: bool,
    /// Every |A| is at most this (with `constant_b` only).
    pub a_bound: Option<f32>,
}

/// What a product step binds at 5 (the conv geometry of an implicit-GEMM product, the maxima of
/// a split f32 product, or nothing) and its binding layouts without and with a residual.
fn fifth_binding<'b>(
    v: crate::gemm::GemmVariant,
    shader: &ShaderVariant,
    maxima: Option<&'b GpuBuffer>,
    geometry: Option<&'b GpuBuffer>,
) -> Result<(Option<&'b GpuBuffer>, [BindingLayout; 2]), GpuError> {
    let missing = |what: &str| GpuError::Internal(format!("{} needs {what}, which is not bound", shader.name()));
    if v.reads_scales() {
        let layouts = [BindingLayout::PRODUCT_SPLIT, BindingLayout::PRODUCT_SPLIT_RESIDUAL];
        return Ok((Some(maxima.ok_or_else(|| missing("its operands' maxima"))?), layouts));
    }
    if v.is_implicit() {
        let layouts = [BindingLayout::PRODUCT_IMPLICIT, BindingLayout::PRODUCT_IMPLICIT_RESIDUAL];
        return Ok((Some(geometry.ok_or_else(|| missing("the conv geometry"))?), layouts));
    }
    Ok((None, [BindingLayout::PRODUCT, BindingLayout::PRODUCT_RESIDUAL]))
}

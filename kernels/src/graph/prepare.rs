//! Preparing a set of input shapes: every step's shapes inferred, its output buffers allocated,
//! its kernel planned and bound. A set can be rebuilt from a spare set of other shapes (see
//! `set_pool.rs`): a step whose inputs are bound to the same buffers with the same shapes, and
//! whose outputs keep their shapes, keeps its output buffers and its dispatches (no new buffer,
//! plan, uniform or bind group); a step whose output keeps its shape keeps the output's buffer,
//! so the steps after it still find their inputs where they were. In a decoder whose cache
//! grows every token, only the steps that read the cache are planned again.

use std::ops::Range;

use super::{Executable, Prepared, RunInput};
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::program::Operand;
use crate::ops::{KernelIo, PrepareCx, Tensor};
use crate::runtime::{Dispatch, GpuBuffer, Readback, Staged};

thread_local! {
    static KEPT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many steps this thread's rebuilt sets kept from a spare set (their dispatches reused).
pub fn thread_steps_kept() -> u64 {
    KEPT.with(std::cell::Cell::get)
}

/// One step of a prepared set: what it was bound to and what it made.
pub(super) struct StepSlot {
    /// Each input as bound (`None` where omitted).
    inputs: Vec<Option<BoundAs>>,
    /// Each output's buffer and shape.
    outputs: Vec<(GpuBuffer, Vec<u64>)>,
    /// Its dispatches in [`Prepared::dispatches`] and its lines in [`Prepared::plans`].
    dispatches: Range<usize>,
    plans: Range<usize>,
}

/// An input binding: the buffer, where the binding starts, its length and whether it ends
/// there, and the tensor's shape, type and constness.
#[derive(PartialEq)]
struct BoundAs {
    buffer: wgpu::Buffer,
    offset: u64,
    len: u64,
    sized: bool,
    shape: Vec<u64>,
    ty: ElemType,
    constant: bool,
}

impl BoundAs {
    fn of(t: &Tensor<'_>) -> BoundAs {
        BoundAs {
            buffer: t.buf.buffer.clone(),
            offset: t.buf.offset,
            len: t.buf.len,
            sized: t.buf.sized,
            shape: t.shape.to_vec(),
            ty: t.ty,
            constant: t.constant,
        }
    }
}

/// A step's input shapes (`None` where omitted) and output shapes.
pub(super) type StepShapes<'a> = (Vec<Option<&'a [u64]>>, Vec<&'a [u64]>);

/// One of a set's own buffers bound, for a run, to a range of one of ORT's at `base`
/// (`direct.rs`: device tensors bound in place).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Rebind {
    pub own: wgpu::Buffer,
    pub to: wgpu::Buffer,
    pub base: u64,
}

impl Prepared {
    /// Whether `own` can be bound in place of a range of its size: every binding of it is sized
    /// or ends at its end, and no step that dispatches writes it unless `written` (an output).
    pub(super) fn rebindable(&self, own: &wgpu::Buffer, written: bool) -> bool {
        let whole = |offset: u64, len: u64, sized: bool| sized || offset + len == own.size();
        self.steps.iter().all(|s| {
            let computes = !s.dispatches.is_empty();
            s.inputs.iter().flatten().filter(|b| &b.buffer == own).all(|b| whole(b.offset, b.len, b.sized))
                && s.outputs
                    .iter()
                    .filter(|(g, _)| &g.buffer == own)
                    .all(|(g, _)| (written || !computes) && whole(g.offset, g.len, g.sized))
        })
    }

    /// The steps that dispatch and bind one of these buffers.
    pub(super) fn steps_binding(&self, own: &[&wgpu::Buffer]) -> Vec<usize> {
        let hit = |b: &wgpu::Buffer| own.contains(&b);
        let binds = |s: &StepSlot| {
            s.inputs.iter().flatten().any(|b| hit(&b.buffer)) || s.outputs.iter().any(|(g, _)| hit(&g.buffer))
        };
        self.steps.iter().enumerate().filter(|(_, s)| !s.dispatches.is_empty() && binds(s)).map(|(i, _)| i).collect()
    }

    /// Step `index`'s input and output shapes as prepared.
    pub(super) fn step_shapes(&self, index: usize) -> Option<StepShapes<'_>> {
        let slot = self.steps.get(index)?;
        let inputs = slot.inputs.iter().map(|b| b.as_ref().map(|b| b.shape.as_slice())).collect();
        Some((inputs, slot.outputs.iter().map(|(_, s)| s.as_slice()).collect()))
    }

    /// This set's dispatches in order, with the steps `remade` holds (step index, dispatches)
    /// in place of their own, and else the interim ones (`interim.rs`).
    pub(super) fn dispatch_list<'a>(&'a self, remade: &'a [(usize, Vec<Dispatch>)]) -> Vec<&'a Dispatch> {
        let mut list = Vec::with_capacity(self.dispatches.len());
        for (index, slot) in self.steps.iter().enumerate() {
            let find = |set: &'a [(usize, Vec<Dispatch>)]| set.iter().find(|(i, _)| *i == index).map(|(_, ds)| ds);
            match find(remade).or_else(|| find(&self.interim)) {
                Some(ds) => list.extend(ds),
                None => list.extend(self.dispatches.get(slot.dispatches.clone()).into_iter().flatten()),
            }
        }
        list
    }

    /// Step `index`'s own dispatches (none for an unknown step).
    pub(super) fn step_dispatches(&self, index: usize) -> &[Dispatch] {
        self.steps.get(index).and_then(|s| self.dispatches.get(s.dispatches.clone())).unwrap_or(&[])
    }
}

/// A dispatch of the set being prepared: made now, or kept from the spare set (its index there).
enum Made {
    New(Dispatch),
    Kept(usize),
}

/// What preparing the steps made: the dispatches, plans, spans, allocations, slots and values.
#[derive(Default)]
struct Steps {
    made: Vec<Made>,
    plans: Vec<String>,
    spans: Vec<(String, Range<usize>)>,
    allocations: Vec<(String, u64)>,
    slots: Vec<StepSlot>,
}

impl Executable {
    /// Infers every step's shapes, allocates buffers and binds the dispatches; from `spare`
    /// where its steps still fit. `spare` is changed only once the new set is complete: on an
    /// error it is as it was, and goes back to the pool.
    pub(super) fn prepare(
        &self,
        inputs: &[RunInput<'_>],
        values: &[Option<Vec<i64>>],
        spare: Option<&mut Prepared>,
    ) -> Result<Prepared, GpuError> {
        let lens: Vec<u64> = inputs.iter().map(|t| t.len()).collect();
        self.prepare_with_lens(inputs, &lens, values, spare)
    }

    /// [`Executable::prepare`] with each input's byte length given.
    pub(super) fn prepare_with_lens(
        &self,
        inputs: &[RunInput<'_>],
        lens: &[u64],
        host_values: &[Option<Vec<i64>>],
        spare: Option<&mut Prepared>,
    ) -> Result<Prepared, GpuError> {
        let gpu = &self.gpu;
        let old = spare.as_deref();
        // The spare set's input buffers where the length is unchanged.
        let mut input_bufs = Vec::with_capacity(lens.len());
        for (i, (&len, name)) in lens.iter().zip(&self.program.inputs).enumerate() {
            match old.and_then(|p| p.inputs.get(i)).filter(|b| b.len == len) {
                Some(b) => input_bufs.push(b.clone()),
                None => input_bufs.push(gpu.storage_buffer(len, name)?),
            }
        }
        // Its status word too: its dispatches write it.
        let (status, status_readback) = match old {
            Some(p) => (p.status.clone(), p.status_readback.clone()),
            None => (gpu.storage_buffer(4, "run status")?, gpu.readback(4)?),
        };
        let mut values: Vec<Option<(GpuBuffer, Vec<u64>, ElemType)>> = vec![None; self.program.values];
        let mut steps = Steps::default();
        // Tensor-core compiles that interim plans may stand in for start after the others.
        let defer = self.interim_possible().then(crate::runtime::defer_tensor_cores);
        for index in 0..self.program.steps.len() {
            self.prepare_step(index, inputs, &input_bufs, &mut values, host_values, &status, old, &mut steps)?;
        }
        let mut output_shapes = Vec::new();
        let mut output_bytes = Vec::new();
        let mut sources = Vec::new();
        for &o in &self.program.outputs {
            let t = self.operand(o, inputs, &input_bufs, &values)?;
            output_shapes.push(t.shape.to_vec());
            output_bytes.push(t.elems() * t.ty.size());
            sources.push(t.buf.clone());
        }
        // Complete: now the spare set gives up what the new one keeps.
        let (dispatches, staging, readbacks) = match spare {
            Some(p) => take_kept(p, steps.made, &input_bufs, &output_bytes)?,
            None => {
                let made = steps.made.into_iter().map(|m| match m {
                    Made::New(d) => Ok(d),
                    Made::Kept(_) => Err(GpuError::Internal("a kept dispatch without a spare set".into())),
                });
                (made.collect::<Result<_, _>>()?, inputs.iter().map(|_| None).collect(), vec![None; output_bytes.len()])
            }
        };
        let mut prepared = Prepared {
            inputs: input_bufs,
            staging,
            checks: self.program.steps.iter().any(|s| s.kernel.checks()),
            temps: values.into_iter().flatten().map(|(b, ..)| b).collect(),
            sources,
            readbacks,
            dispatches,
            output_shapes,
            output_bytes,
            plans: steps.plans,
            spans: steps.spans,
            allocations: steps.allocations,
            status,
            status_readback,
            steps: steps.slots,
            copies: Default::default(),
            in_place: Default::default(),
            in_place_plan: Default::default(),
            interim: Vec::new(),
            made: std::time::Instant::now(),
        };
        prepared.in_place_plan = self.in_place_plan(&prepared);
        prepared.interim = self.interim_steps(&prepared);
        prepared.promote_waited_for();
        drop(defer);
        Ok(prepared)
    }

    /// Prepares step `index`: its output shapes and buffers, and its dispatches (kept from the
    /// spare set's same step when they still fit).
    #[allow(clippy::too_many_arguments)]
    fn prepare_step(
        &self,
        index: usize,
        inputs: &[RunInput<'_>],
        input_bufs: &[GpuBuffer],
        values: &mut [Option<(GpuBuffer, Vec<u64>, ElemType)>],
        host_values: &[Option<Vec<i64>>],
        status: &GpuBuffer,
        old: Option<&Prepared>,
        out: &mut Steps,
    ) -> Result<(), GpuError> {
        let gpu = &self.gpu;
        let step = &self.program.steps[index];
        let cx = PrepareCx {
            gpu,
            caps: gpu.caps(),
            options: &self.options,
            status,
            status_code: index as u32 + 1,
            scratch: None,
        };
        let bound = step
            .inputs
            .iter()
            .map(|o| o.map(|o| self.operand(o, inputs, input_bufs, values)).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        let shapes: Vec<Option<&[u64]>> = bound.iter().map(|t| t.map(|t| t.shape)).collect();
        let out_shapes =
            crate::graph::values::infer(step, step.kernel.as_ref(), &shapes, host_values, &self.program.constants)?;
        if out_shapes.len() != step.outputs.len() {
            return Err(GpuError::Internal(format!(
                "'{}' inferred {} outputs, the step writes {}",
                step.name,
                out_shapes.len(),
                step.outputs.len()
            )));
        }
        let bound_as: Vec<Option<BoundAs>> = bound.iter().map(|t| t.as_ref().map(BoundAs::of)).collect();
        let slot = old.and_then(|p| p.steps.get(index));
        let mut outs = Vec::with_capacity(out_shapes.len());
        for (k, (shape, &(_, ty))) in out_shapes.iter().zip(&step.outputs).enumerate() {
            let bytes = shape.iter().product::<u64>() * ty.size();
            let kept = slot.and_then(|s| s.outputs.get(k)).filter(|(_, s)| s == shape).map(|(b, _)| b);
            outs.push(match step.kernel.alias(k) {
                Some(j) => bound.get(j).copied().flatten().map(|t| t.buf.clone()).ok_or_else(|| {
                    GpuError::Internal(format!("'{}' aliases input {j}, which is not bound", step.name))
                })?,
                None => {
                    out.allocations.push((step.name.clone(), bytes));
                    match kept {
                        Some(b) => b.clone(),
                        None => gpu.storage_buffer(bytes, &step.name)?,
                    }
                }
            });
        }
        // Its dispatches still fit when it reads the same bindings and writes the same shapes
        // (then into the same buffers).
        let fits = slot.filter(|s| {
            s.inputs == bound_as
                && s.outputs.len() == out_shapes.len()
                && s.outputs.iter().zip(&out_shapes).all(|((_, a), b)| a == b)
        });
        let computes = (0..outs.len()).any(|k| step.kernel.alias(k).is_none());
        let non_empty = out_shapes.iter().any(|s| s.iter().product::<u64>() > 0);
        let (start, plan_start) = (out.made.len(), out.plans.len());
        if computes && non_empty {
            match (fits, old) {
                (Some(s), Some(p)) => {
                    out.made.extend(s.dispatches.clone().map(Made::Kept));
                    out.plans.extend(p.plans.get(s.plans.clone()).into_iter().flatten().cloned());
                    KEPT.with(|c| c.set(c.get() + 1));
                }
                _ => {
                    let io = KernelIo {
                        inputs: bound.clone(),
                        outputs: outs
                            .iter()
                            .zip(&out_shapes)
                            .zip(&step.outputs)
                            .map(|((buf, shape), &(_, ty))| Tensor { buf, shape, ty, constant: false })
                            .collect(),
                    };
                    let prepared = step.kernel.prepare(&cx, &io).map_err(|e| match e {
                        GpuError::Invalid(m) if !m.contains(&step.name) => {
                            GpuError::Invalid(format!("{} '{}': {m}", step.ops, step.name))
                        }
                        other => other,
                    })?;
                    out.made.extend(prepared.dispatches.into_iter().map(Made::New));
                    out.plans.extend(prepared.plan);
                }
            }
            out.spans.push((step.ops.clone(), start..out.made.len()));
        }
        out.slots.push(StepSlot {
            inputs: bound_as,
            outputs: outs.iter().cloned().zip(out_shapes.iter().cloned()).collect(),
            dispatches: start..out.made.len(),
            plans: plan_start..out.plans.len(),
        });
        for ((buf, shape), &(v, ty)) in outs.into_iter().zip(out_shapes).zip(&step.outputs) {
            values[v] = Some((buf, shape, ty));
        }
        Ok(())
    }

    /// Step `index` of `prepared` planned and bound again, with the buffers `rebinds` replaces
    /// bound to ORT's ranges (same shapes: the same plan).
    pub(super) fn remake_step(
        &self,
        prepared: &Prepared,
        index: usize,
        rebinds: &[Rebind],
    ) -> Result<Vec<Dispatch>, GpuError> {
        self.prepare_again(prepared, index, rebinds, self.gpu.caps(), &self.options, None)
    }

    /// Step `index` of `prepared` planned and bound again for a device of `caps` with `options`,
    /// with the buffers `rebinds` replaces bound to ORT's ranges.
    pub(super) fn prepare_again(
        &self,
        prepared: &Prepared,
        index: usize,
        rebinds: &[Rebind],
        caps: &crate::caps::DeviceCaps,
        options: &super::ExecOptions,
        scratch: Option<&crate::ops::Scratch>,
    ) -> Result<Vec<Dispatch>, GpuError> {
        let missing = || GpuError::Internal(format!("step {index} of a prepared set is missing"));
        let (step, slot) =
            (self.program.steps.get(index).ok_or_else(missing)?, prepared.steps.get(index).ok_or_else(missing)?);
        let bind =
            |buffer: &wgpu::Buffer, offset: u64, len: u64, sized: bool| match rebinds.iter().find(|r| &r.own == buffer)
            {
                Some(r) => GpuBuffer::range(r.to.clone(), r.base + offset, len),
                None => GpuBuffer { buffer: buffer.clone(), len, offset, sized },
            };
        let ins: Vec<Option<(GpuBuffer, &BoundAs)>> =
            slot.inputs.iter().map(|b| b.as_ref().map(|b| (bind(&b.buffer, b.offset, b.len, b.sized), b))).collect();
        let outs: Vec<GpuBuffer> =
            slot.outputs.iter().map(|(g, _)| bind(&g.buffer, g.offset, g.len, g.sized)).collect();
        let io = KernelIo {
            inputs: ins
                .iter()
                .map(|t| t.as_ref().map(|(buf, b)| Tensor { buf, shape: &b.shape, ty: b.ty, constant: b.constant }))
                .collect(),
            outputs: outs
                .iter()
                .zip(&slot.outputs)
                .zip(&step.outputs)
                .map(|((buf, (_, shape)), &(_, ty))| Tensor { buf, shape, ty, constant: false })
                .collect(),
        };
        let status = &prepared.status;
        let cx = PrepareCx { gpu: &self.gpu, caps, options, status, status_code: index as u32 + 1, scratch };
        Ok(step.kernel.prepare(&cx, &io)?.dispatches)
    }

    /// The tensor an operand names in a set being prepared.
    fn operand<'a>(
        &'a self,
        o: Operand,
        inputs: &'a [RunInput<'_>],
        input_bufs: &'a [GpuBuffer],
        values: &'a [Option<(GpuBuffer, Vec<u64>, ElemType)>],
    ) -> Result<Tensor<'a>, GpuError> {
        let missing = || GpuError::Internal(format!("{o:?} is read before it is written"));
        Ok(match o {
            Operand::Input(i) => {
                let t = inputs.get(i).ok_or_else(missing)?;
                Tensor { buf: input_bufs.get(i).ok_or_else(missing)?, shape: t.shape, ty: t.dtype, constant: false }
            }
            Operand::Const(i) => {
                let c = self.program.constants.get(i).ok_or_else(missing)?;
                Tensor { buf: self.constants.get(i).ok_or_else(missing)?, shape: &c.shape, ty: c.dtype, constant: true }
            }
            Operand::Temp(v) => {
                let (buf, shape, ty) = values.get(v).and_then(Option::as_ref).ok_or_else(missing)?;
                Tensor { buf, shape, ty: *ty, constant: false }
            }
        })
    }
}

/// The new set's dispatches (its own and those kept from `spare`), and the staging and read-back
/// buffers it takes over from `spare` where an input or output kept its length.
type Taken = (Vec<Dispatch>, Vec<Option<Staged>>, Vec<Option<Readback>>);

fn take_kept(
    spare: &mut Prepared,
    made: Vec<Made>,
    input_bufs: &[GpuBuffer],
    output_bytes: &[u64],
) -> Result<Taken, GpuError> {
    let mut old: Vec<Option<Dispatch>> = std::mem::take(&mut spare.dispatches).into_iter().map(Some).collect();
    let dispatches = made
        .into_iter()
        .map(|m| match m {
            Made::New(d) => Ok(d),
            Made::Kept(i) => old
                .get_mut(i)
                .and_then(Option::take)
                .ok_or_else(|| GpuError::Internal(format!("kept dispatch {i} of a spare set is missing"))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let staging = input_bufs
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let same = spare.inputs.get(i).is_some_and(|o| o.buffer == b.buffer);
            spare.staging.get_mut(i).filter(|_| same).and_then(Option::take)
        })
        .collect();
    let readbacks = output_bytes
        .iter()
        .enumerate()
        .map(|(i, &bytes)| {
            let same = spare.output_bytes.get(i) == Some(&bytes);
            spare.readbacks.get_mut(i).filter(|_| same).and_then(Option::take)
        })
        .collect();
    Ok((dispatches, staging, readbacks))
}

//! Large device tensors bound in place. A set binds its own buffers, and a run copies ORT's
//! device inputs into them and its results out into ORT's tensors (`execute.rs`). For tensors
//! of at least [`MIN_DIRECT`] bytes, those copies cost more than binding ORT's ranges: such a run
//! plans and binds again the steps that read or write those buffers, with ORT's ranges in their
//! place, and keeps those dispatches for the next runs that hand the same ranges (a bound loop
//! hands the same few tensors run after run). What is kept holds ORT's buffers, so it lives in
//! `runtime::held`, which an out-of-memory empties.
//!
//! Nothing is bound in place while a set runs interim plans (`interim.rs`): the steps planned
//! again would wait for their own pipelines.
//!
//! Bound in place only where no result changes:
//! - a range at an offset the device binds storage at, of whole 16-byte words, exactly as long
//!   as the set's buffer;
//! - an input whose buffer no step writes and no output aliases; or whose aliasing outputs go to
//!   exactly its range (the steps then write ORT's range as they wrote the set's buffer), with no
//!   other tensor bound in place in its buffer;
//! - an output that is one step's whole result, shared with no other output, in a buffer no
//!   other tensor bound in place lies in: wgpu refuses one buffer bound for reading and writing in
//!   one dispatch, at any ranges, and memory patterns put a partition's tensors in one buffer.
//!   Except an output going to exactly the range of an input that only its step reads, whose
//!   kernel then binds that range once (`Kernel::shares_input`: genai's cache shared by past and
//!   present, no copy per token).

use std::sync::Arc;

use super::prepare::Rebind;
use super::{Executable, InputData, OutputTarget, Prepared, RunInput};
use crate::error::GpuError;
use crate::graph::Operand;
use crate::runtime::held::Held;
use crate::runtime::memory::DeviceSlice;
use crate::runtime::Dispatch;

/// Device tensors shorter than this are copied (a copy of 256 KiB takes about a microsecond).
pub const MIN_DIRECT: u64 = crate::runtime::devcopy::MIN_KERNEL_COPY;

/// Lists of in-place bindings a set keeps the dispatches of (a bound loop alternates between
/// two sets of outputs).
const KEPT_BINDINGS: usize = 4;

/// Steps planned again for one list of in-place bindings: (step index, its dispatches).
type Remade = Arc<Vec<(usize, Vec<Dispatch>)>>;

/// A set's steps remade for the in-place bindings of recent runs.
#[derive(Debug, Default)]
pub(super) struct InPlaceSets(Held<Vec<(Vec<Rebind>, Remade)>>);

thread_local! {
    static BOUND: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    static REMADE: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Device tensors this thread's runs bound in place, and the steps they planned again for it.
pub fn thread_in_place() -> (u64, u64) {
    (BOUND.with(std::cell::Cell::get), REMADE.with(std::cell::Cell::get))
}

/// What of a set can be bound in place, whatever the ranges ([`Executable::in_place_plan`]).
#[derive(Debug, Default)]
pub(super) struct InPlacePlan {
    /// Per input: `None` where never; else the outputs that alias it (empty: read only).
    inputs: Vec<Option<Vec<usize>>>,
    /// Per output: whether it can be, and the input whose exact range it may share.
    outputs: Vec<(bool, Option<usize>)>,
}

/// The tensors of one run bound in place: the bindings, and which inputs and outputs they are.
pub(super) struct InPlace {
    pub rebinds: Vec<Rebind>,
    pub inputs: Vec<bool>,
    pub outputs: Vec<bool>,
}

impl Executable {
    /// Whether a device range of ours can be bound as it is.
    fn bindable(&self, s: &DeviceSlice) -> bool {
        let align = u64::from(self.gpu.device().limits().min_storage_buffer_offset_alignment).max(16);
        Arc::ptr_eq(&s.gpu, &self.gpu)
            && s.len >= MIN_DIRECT
            && s.len % 16 == 0
            && s.offset % align == 0
            && s.len <= self.gpu.caps().binding_limit()
    }

    /// What of `prepared` can be bound in place whatever ranges a run hands (once per set: a
    /// decoder's partition has hundreds of steps).
    pub(super) fn in_place_plan(&self, prepared: &Prepared) -> InPlacePlan {
        let inputs = prepared
            .inputs
            .iter()
            .map(|own| {
                let aliased: Vec<usize> = prepared
                    .sources
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b.buffer == own.buffer)
                    .map(|(o, _)| o)
                    .collect();
                prepared.rebindable(&own.buffer, !aliased.is_empty()).then_some(aliased)
            })
            .collect();
        let outputs = (0..prepared.sources.len())
            .map(|o| {
                let src = &prepared.sources[o];
                let shared = prepared.sources.iter().filter(|b| b.buffer == src.buffer).count() > 1;
                let a_steps_own = !prepared.inputs.iter().any(|b| b.buffer == src.buffer)
                    && !self.constants.iter().any(|c| c.buffer == src.buffer);
                let fits = src.offset == 0 && !shared && a_steps_own && prepared.rebindable(&src.buffer, true);
                (fits, self.shared_input(prepared, o))
            })
            .collect();
        InPlacePlan { inputs, outputs }
    }

    /// The input whose range output `o` may share: its step's kernel allows it
    /// (`Kernel::shares_input`: genai's shared past/present cache) and no other step binds it.
    fn shared_input(&self, prepared: &Prepared, o: usize) -> Option<usize> {
        let Some(Operand::Temp(v)) = self.program.outputs.get(o).copied() else { return None };
        let (index, step) =
            self.program.steps.iter().enumerate().find(|(_, st)| st.outputs.iter().any(|&(w, _)| w == v))?;
        let k = step.outputs.iter().position(|&(w, _)| w == v)?;
        let Some(Operand::Input(i)) = step.inputs.get(step.kernel.shares_input(k)?).copied().flatten() else {
            return None;
        };
        let own = prepared.inputs.get(i)?;
        (prepared.steps_binding(&[&own.buffer]) == [index]).then_some(i)
    }

    /// Which of this run's device tensors `prepared` binds in place (see the module's note).
    pub(super) fn in_place(&self, prepared: &Prepared, inputs: &[RunInput<'_>], targets: &[OutputTarget]) -> InPlace {
        let plan = &prepared.in_place_plan;
        let mut d =
            InPlace { rebinds: Vec::new(), inputs: vec![false; inputs.len()], outputs: vec![false; targets.len()] };
        if !prepared.interim.is_empty() {
            // Steps planned again for in-place bindings take the device's own pipelines, so a run
            // on interim plans (`interim.rs`) would wait for their compiles: it copies instead.
            return d;
        }
        let mut ranges: Vec<&DeviceSlice> = Vec::new();
        // ORT buffers of inputs written in place: no other tensor may be bound in them.
        let mut written: Vec<&wgpu::Buffer> = Vec::new();
        for (i, t) in inputs.iter().enumerate() {
            let (InputData::Device(s), Some(own), Some(Some(aliased))) =
                (&t.data, prepared.inputs.get(i), plan.inputs.get(i))
            else {
                continue;
            };
            if !self.bindable(s) || own.buffer.size() != s.len || written.contains(&&s.buffer) {
                continue;
            }
            if !aliased.is_empty() {
                // Written in place: only where every output aliasing it goes to exactly its range.
                let same = |o: &usize| {
                    let src = &prepared.sources[*o];
                    matches!(targets.get(*o), Some(OutputTarget::Device(t))
                        if t.buffer == s.buffer && t.offset == s.offset + src.offset && t.len == src.len)
                };
                if !aliased.iter().all(same) || ranges.iter().any(|r| r.buffer == s.buffer) {
                    continue;
                }
                written.push(&s.buffer);
                aliased.iter().for_each(|&o| d.outputs[o] = true);
            }
            d.rebinds.push(Rebind { own: own.buffer.clone(), to: s.buffer.clone(), base: s.offset });
            d.inputs[i] = true;
            ranges.push(s);
        }
        for (o, t) in targets.iter().enumerate() {
            let (OutputTarget::Device(s), Some(src), Some(&(true, shares)), false) =
                (t, prepared.sources.get(o), plan.outputs.get(o), d.outputs[o])
            else {
                continue;
            };
            // wgpu refuses a buffer bound for reading and writing in one dispatch, at any ranges
            // (memory patterns place tensors in one buffer): an output needs a buffer of its own,
            // or exactly the range of the input its kernel shares it with.
            let same = |r: &DeviceSlice| r.buffer == s.buffer && r.offset == s.offset && r.len == s.len;
            let sharing =
                shares.is_some_and(|i| d.inputs[i] && matches!(&inputs[i].data, InputData::Device(x) if same(x)));
            let apart = ranges.iter().all(|r| r.buffer != s.buffer || (sharing && same(r)));
            if self.bindable(s) && src.buffer.size() == s.len && apart {
                d.rebinds.push(Rebind { own: src.buffer.clone(), to: s.buffer.clone(), base: s.offset });
                d.outputs[o] = true;
                ranges.push(s);
            }
        }
        BOUND.with(|c| c.set(c.get() + d.rebinds.len() as u64));
        d
    }

    /// The steps of `prepared` that bind `rebinds`' buffers, planned and bound again with ORT's
    /// ranges in their place: kept from an earlier run with the same bindings, else made now.
    pub(super) fn remade(&self, prepared: &Prepared, rebinds: &[Rebind]) -> Result<Remade, GpuError> {
        let lost = || GpuError::Internal("a set's in-place bindings are not a list".into());
        let kept = prepared.in_place.0.with(|kept| kept.iter().find(|(k, _)| k == rebinds).map(|(_, r)| r.clone()));
        if let Some(r) = kept.ok_or_else(lost)? {
            return Ok(r);
        }
        // Made without the registry's lock: making may run out of memory.
        let steps = prepared.steps_binding(&rebinds.iter().map(|r| &r.own).collect::<Vec<_>>());
        REMADE.with(|c| c.set(c.get() + steps.len() as u64));
        let remade = steps
            .into_iter()
            .map(|i| self.remake_step(prepared, i, rebinds).map(|d| (i, d)))
            .collect::<Result<Vec<_>, _>>()?;
        let remade = Arc::new(remade);
        let evicted = prepared
            .in_place
            .0
            .with(|kept| {
                kept.push((rebinds.to_vec(), remade.clone()));
                (kept.len() > KEPT_BINDINGS).then(|| kept.remove(0))
            })
            .ok_or_else(lost)?;
        drop(evicted);
        Ok(remade)
    }
}

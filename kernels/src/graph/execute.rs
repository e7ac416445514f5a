//! One run of a prepared set: inputs into the set's bound buffers (uploads from the host, copies
//! on the GPU from device tensors), the dispatches, the outputs out (read-backs to the host,
//! copies on the GPU into device tensors), in one submission.

use super::{Executable, InputData, OutputTarget, Prepared, RunInput, RunOutputs};
use crate::error::GpuError;
use crate::graph::Operand;
use crate::runtime::devcopy::{CopyKey, KeptCopies, Region};
use crate::runtime::memory::DeviceSlice;
use crate::runtime::startup::{self, Phase};
use crate::runtime::transfer::{self, Direction};
use crate::runtime::{Dispatch, Gpu, Readback};

/// Dispatches recorded per submission of a run that finds the GPU idle, in order; the last chunk
/// takes the rest. They double: the GPU runs one chunk while the next, twice as long, is encoded
/// (wgpu encodes a pass when its command buffer is finished, 2–3 µs per dispatch on the H200's
/// host), so it starts after 4 dispatches and does not wait for a long tail.
const CHUNKS: [usize; 8] = [4, 8, 16, 32, 64, 128, 256, usize::MAX];

/// The dispatches per submission of a run: [`CHUNKS`] when the GPU was last seen idle (a run
/// whose result is waited for: its latency), else one submission. Runs back to back, which no
/// wait separates, keep the GPU busy with earlier runs, and each submission costs the H200's host
/// 60–100 µs: a 131-dispatch decode token made six, more host time than its GPU time
/// (`docs/PERFORMANCE.md`). An experiment build takes `EXP_SUBMIT_CHUNKS=4,8,...` for either (the
/// last chunk takes the rest; `bench/README.md`).
fn submit_chunks(gpu: &Gpu) -> Vec<usize> {
    #[cfg(feature = "wgsl-override")]
    if let Ok(spec) = std::env::var("EXP_SUBMIT_CHUNKS") {
        let mut sizes: Vec<usize> = spec.split(',').filter_map(|s| s.trim().parse().ok()).collect();
        sizes.push(usize::MAX);
        return sizes;
    }
    if gpu.seen_idle() {
        CHUNKS.to_vec()
    } else {
        vec![usize::MAX]
    }
}

/// Records the copy kernels of `keys` as one compute pass, with the dispatches `kept` holds from
/// earlier runs (an out-of-memory drops them: `runtime::devcopy::drop_kept`).
fn encode_copies(
    gpu: &Gpu,
    kept: &KeptCopies,
    keys: &[CopyKey],
    encoder: &mut wgpu::CommandEncoder,
) -> Result<(), GpuError> {
    if keys.is_empty() {
        return Ok(());
    }
    let list = kept.dispatches(gpu, keys)?;
    gpu.encode(encoder, &list.iter().map(|d| &**d).collect::<Vec<_>>());
    crate::runtime::devcopy::recorded(list.len());
    Ok(())
}

/// Finishes and submits one of a run's command buffers (start-up phase `run_submit`).
fn submit(gpu: &Gpu, encoder: wgpu::CommandEncoder) {
    let started = std::time::Instant::now();
    gpu.submit([encoder.finish()]);
    startup::record(Phase::RunSubmit, started.elapsed(), 1);
}

/// Host inputs up to this long go through a staging buffer made for the run, not the set's own:
/// that one is mapped again only once the run is done, so a run with one waited for the GPU (a
/// decoder's lengths are a few bytes). Not `Queue::write_buffer`, whose out-of-memory loses the
/// device (`docs/RELIABILITY.md` §6).
const SMALL_UPLOAD: u64 = 4096;

/// Host values up to this long are checked on the host (`Kernel::host_check`); longer ones by
/// the step's check dispatch, whose status word the run then waits for.
const HOST_CHECK_BYTES: usize = 1 << 18;

/// 4-byte multiple of `len` (wgpu's copy unit).
fn padded(len: u64) -> u64 {
    len.next_multiple_of(4)
}

impl Executable {
    /// Whether this run must read the status word back: a step checks values on the device and
    /// cannot check them on the host (`Kernel::host_checked`: their inputs came in host memory).
    /// A failed host check fails the run before anything is submitted.
    fn device_checks(&self, prepared: &Prepared, inputs: &[RunInput<'_>]) -> Result<bool, GpuError> {
        if !prepared.checks {
            return Ok(false);
        }
        for (index, step) in self.program.steps.iter().enumerate().filter(|(_, s)| s.kernel.checks()) {
            let mut values = Vec::new();
            for &k in step.kernel.host_checked() {
                let Some(Operand::Input(i)) = step.inputs.get(k).copied().flatten() else { return Ok(true) };
                let bytes: std::borrow::Cow<'_, [u8]> = match inputs.get(i).map(|t| &t.data) {
                    Some(InputData::Host(bytes)) if bytes.len() <= HOST_CHECK_BYTES => (*bytes).into(),
                    // Uploaded from the host and not written since: its host copy (`runtime::shadow`).
                    Some(InputData::Device(s)) => match crate::runtime::shadow::lookup(s) {
                        Some(bytes) => bytes.into(),
                        None => return Ok(true),
                    },
                    _ => return Ok(true),
                };
                values.push(crate::graph::values::integers(inputs[i].dtype, &bytes, &step.name)?);
            }
            let Some((ins, outs)) = prepared.step_shapes(index).filter(|_| !values.is_empty()) else { return Ok(true) };
            let values: Vec<&[i64]> = values.iter().map(Vec::as_slice).collect();
            step.kernel
                .host_check(&ins, &outs, &values)
                .map_err(|m| GpuError::Invalid(format!("{} '{}': {m}", step.ops, step.name)))?;
        }
        Ok(false)
    }

    /// Whether a device input can be copied into its bound buffer inside the run's encoder:
    /// same device, a 4-byte aligned offset, and room for the padded length in its buffer.
    fn direct_input(&self, s: &DeviceSlice) -> bool {
        std::sync::Arc::ptr_eq(&s.gpu, &self.gpu) && s.offset % 4 == 0 && s.offset + padded(s.len) <= s.buffer.size()
    }

    /// Records and submits one run; waits only when something must come back to the host.
    /// `Ok(false)`: the outputs were delivered but the set cannot be reused.
    pub(super) fn execute(
        &self,
        prepared: &mut Prepared,
        inputs: &[RunInput<'_>],
        outputs: &mut dyn RunOutputs,
    ) -> Result<bool, GpuError> {
        let gpu = &self.gpu;
        let setup = std::time::Instant::now();
        // Device inputs that cannot be copied in the encoder come through the host.
        let mut owned: Vec<Option<Vec<u8>>> = Vec::with_capacity(inputs.len());
        for t in inputs {
            owned.push(match &t.data {
                InputData::Device(s) if !self.direct_input(s) => {
                    let mut bytes = vec![0u8; s.len as usize];
                    transfer::read(s, &mut bytes)?;
                    transfer::count(Direction::DeviceToHost, s.len);
                    Some(bytes)
                }
                _ => None,
            });
        }
        let mut targets = Vec::with_capacity(prepared.output_shapes.len());
        for (i, shape) in prepared.output_shapes.iter().enumerate() {
            let target = outputs.target(i, shape)?;
            if let OutputTarget::Device(s) = &target {
                crate::runtime::shadow::forget(&s.buffer, s.offset, s.len);
                let want = prepared.output_bytes[i];
                if s.len != want {
                    return Err(GpuError::Internal(format!(
                        "output {i}: the device tensor holds {} bytes, the result has {want}",
                        s.len
                    )));
                }
            }
            targets.push(target);
        }
        let checks = self.device_checks(prepared, inputs)?;
        prepared.retire_interim(self.options.interim_grace);
        let in_place = self.in_place(prepared, inputs, &targets);
        let remade = if in_place.rebinds.is_empty() { None } else { Some(self.remade(prepared, &in_place.rebinds)?) };
        let mut staged_any = false;
        let mut deferred = Vec::new();
        startup::record(Phase::RunSetup, setup.elapsed(), 1);
        gpu.scoped("run", || {
            let mut encoder =
                gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("partition") });
            let mut copy_in = Vec::new();
            for (i, t) in inputs.iter().enumerate() {
                if in_place.inputs[i] {
                    continue;
                }
                let dst = &prepared.inputs[i];
                let host = match (&t.data, &owned[i]) {
                    (_, Some(bytes)) => bytes.as_slice(),
                    (InputData::Host(bytes), None) => bytes,
                    (InputData::Device(s), None) => {
                        if gpu.kernel_copies(s.offset, dst.offset, s.len) {
                            let from = Region { buffer: s.buffer.clone(), offset: s.offset };
                            copy_in.push((from, Region { buffer: dst.buffer.clone(), offset: dst.offset }, s.len));
                        } else if s.len > 0 {
                            encoder.copy_buffer_to_buffer(&s.buffer, s.offset, &dst.buffer, 0, padded(s.len));
                        }
                        if s.len > 0 {
                            transfer::count(Direction::DeviceToDevice, s.len);
                        }
                        continue;
                    }
                };
                if host.is_empty() {
                    continue;
                }
                if host.len() as u64 <= SMALL_UPLOAD {
                    // A staging buffer for this run alone: the set's own is mapped again only once
                    // the run is done.
                    let mut once = gpu.staging(host.len() as u64, &self.program.inputs[i])?;
                    gpu.fill(&mut once, host)?;
                    once.copy_to(&mut encoder, &dst.buffer);
                    transfer::count(Direction::HostToDevice, host.len() as u64);
                    continue;
                }
                let staged = match &mut prepared.staging[i] {
                    Some(s) => s,
                    slot => slot.insert(gpu.staging(host.len() as u64, &self.program.inputs[i])?),
                };
                gpu.fill(staged, host)?;
                staged.copy_to(&mut encoder, &dst.buffer);
                transfer::count(Direction::HostToDevice, host.len() as u64);
                staged_any = true;
            }
            encode_copies(gpu, &prepared.copies[0], &copy_in, &mut encoder)?;
            if checks {
                encoder.clear_buffer(&prepared.status.buffer, 0, None);
            }
            // The first dispatches go to the GPU while the rest are recorded (recording costs the CPU
            // about as long as small kernels take the GPU); the chunks grow, so a long partition
            // costs a few submissions.
            let recording = std::time::Instant::now();
            if !prepared.interim.is_empty() {
                startup::record(Phase::Interim, std::time::Duration::ZERO, prepared.interim.len() as u64);
                if crate::runtime::log_compiles() {
                    let at = crate::runtime::log_clock_ms();
                    eprintln!("ep-wgpu run on {} interim step(s) at {at:.1} ms", prepared.interim.len());
                }
            }
            let dispatches: Vec<&Dispatch> = match &remade {
                Some(r) => prepared.dispatch_list(r),
                None if !prepared.interim.is_empty() => prepared.dispatch_list(&[]),
                None => prepared.dispatches.iter().collect(),
            };
            let mut start = 0;
            let chunks = submit_chunks(gpu);
            for (k, &size) in chunks.iter().enumerate() {
                let end = if k + 1 == chunks.len() { dispatches.len() } else { (start + size).min(dispatches.len()) };
                if start < end {
                    gpu.encode(&mut encoder, &dispatches[start..end]);
                }
                start = end;
                if start == dispatches.len() {
                    break;
                }
                let next =
                    gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("partition") });
                submit(gpu, std::mem::replace(&mut encoder, next));
            }
            startup::record(Phase::RunRecord, recording.elapsed(), dispatches.len() as u64);
            let mut copy_out = Vec::new();
            if checks {
                gpu.copy_to_readback(&mut encoder, &prepared.status, &prepared.status_readback);
            }
            for (i, target) in targets.iter().enumerate() {
                let src = &prepared.sources[i];
                match target {
                    OutputTarget::Host => {
                        let rb = match &mut prepared.readbacks[i] {
                            Some(rb) => rb,
                            slot => slot.insert(gpu.readback(prepared.output_bytes[i])?),
                        };
                        gpu.copy_to_readback(&mut encoder, src, rb);
                    }
                    OutputTarget::Device(_) if in_place.outputs[i] => {}
                    OutputTarget::Device(s) => {
                        let whole = DeviceSlice { gpu: gpu.clone(), buffer: src.buffer.clone(), offset: 0, len: s.len };
                        let same_device = std::sync::Arc::ptr_eq(&s.gpu, gpu);
                        if same_device && gpu.kernel_copies(src.offset, s.offset, s.len) {
                            let from = Region { buffer: src.buffer.clone(), offset: src.offset };
                            copy_out.push((from, Region { buffer: s.buffer.clone(), offset: s.offset }, s.len));
                            transfer::count(Direction::DeviceToDevice, s.len);
                        } else if transfer::direct(&whole, s) {
                            transfer::encode_copy(&mut encoder, &whole, s);
                            transfer::count(Direction::DeviceToDevice, s.len);
                        } else {
                            deferred.push(i);
                        }
                    }
                }
            }
            encode_copies(gpu, &prepared.copies[1], &copy_out, &mut encoder)?;
            submit(gpu, encoder);
            Ok(())
        })?;
        let host_outputs = targets.iter().any(|t| matches!(t, OutputTarget::Host));
        if !(checks || host_outputs || staged_any || !deferred.is_empty()) {
            return Ok(true);
        }
        startup::time(Phase::RunWait, || self.finish(prepared, checks, &targets, &deferred, outputs))?;
        if !staged_any {
            return Ok(true);
        }
        // The submission is done: map the staging buffers for the next run of this set. The
        // outputs are already delivered, so a failure here only keeps the set out of the pool.
        let mut staging: Vec<&mut crate::runtime::Staged> = prepared.staging.iter_mut().flatten().collect();
        Ok(gpu.remap(&mut staging).is_ok())
    }

    /// Waits for the run: checks the status word first where `checks` (a failed check delivers no output),
    /// then hands host outputs over and copies the outputs the encoder could not.
    fn finish(
        &self,
        prepared: &Prepared,
        checks: bool,
        targets: &[OutputTarget],
        deferred: &[usize],
        outputs: &mut dyn RunOutputs,
    ) -> Result<(), GpuError> {
        let gpu = &self.gpu;
        let mut readbacks: Vec<(Option<usize>, &Readback)> = Vec::new();
        if checks {
            readbacks.push((None, &prepared.status_readback));
        }
        for (i, t) in targets.iter().enumerate() {
            if let (OutputTarget::Host, Some(rb)) = (t, &prepared.readbacks[i]) {
                readbacks.push((Some(i), rb));
            }
        }
        let mut failure = None;
        let list: Vec<&Readback> = readbacks.iter().map(|(_, rb)| *rb).collect();
        if list.is_empty() {
            gpu.wait()?;
        }
        gpu.read(&list, |k, bytes| match readbacks[k].0 {
            None => {
                let code = bytes.get(..4).and_then(|b| b.try_into().ok()).map_or(0, u32::from_le_bytes);
                if code != 0 {
                    failure = Some(self.check_failure(code));
                }
            }
            Some(i) if failure.is_none() => {
                transfer::count(Direction::DeviceToHost, bytes.len() as u64);
                if let Err(e) = outputs.host(i, &prepared.output_shapes[i], bytes) {
                    failure = Some(e);
                }
            }
            Some(_) => {}
        })?;
        failure.map_or(Ok(()), |e| Err(GpuError::Invalid(e)))?;
        for &i in deferred {
            if let OutputTarget::Device(dst) = &targets[i] {
                let src = DeviceSlice {
                    gpu: gpu.clone(),
                    buffer: prepared.sources[i].buffer.clone(),
                    offset: 0,
                    len: dst.len,
                };
                transfer::transfer(vec![transfer::Copy::OnDevice { src, dst: dst.clone() }])?;
            }
        }
        Ok(())
    }
}

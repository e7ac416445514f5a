//! Runs a compiled [`Program`] on the GPU. Everything shape-dependent (plans, buffers, bind
//! groups) is prepared once per set of input shapes and pooled, so a repeated run costs one
//! upload per input, one submission and one read-back per output; concurrent runs of the same
//! shapes take separate pooled sets. A set of new shapes is rebuilt from a spare set of other
//! shapes where one is going spare (`set_pool.rs`), keeping every step whose bindings and shapes
//! did not change (`prepare.rs`): a decoder whose cache grows every token plans again only the
//! steps that read the cache.

use std::sync::Arc;

use parking_lot::Mutex;

use super::program::Program;

#[path = "direct.rs"]
mod direct;
pub use direct::{thread_in_place, MIN_DIRECT};
#[path = "execute.rs"]
mod execute;
#[path = "prepare.rs"]
mod prepare;
pub use prepare::thread_steps_kept;
#[path = "interim.rs"]
mod interim;
#[path = "set_pool.rs"]
mod set_pool;
use crate::conv::ConvAlgo;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::gemm::GemmOptions;
use crate::runtime::memory::DeviceSlice;
use crate::runtime::startup::{self, Phase};
use crate::runtime::{Dispatch, Gpu, GpuBuffer, Readback, Staged};

/// An input tensor in host memory.
#[derive(Clone, Copy, Debug)]
pub struct HostTensor<'a> {
    pub dtype: ElemType,
    pub shape: &'a [u64],
    pub data: &'a [u8],
}

/// Receives each output: `(index, shape, bytes)`; an error aborts the run.
pub type OutputSink<'a> = dyn FnMut(usize, &[u64], &[u8]) -> Result<(), String> + 'a;

/// Where a tensor's bytes are: host memory, or a range of our device memory (ONNX Runtime's
/// tensors once the EP has its own memory).
#[derive(Clone, Debug)]
pub enum InputData<'a> {
    Host(&'a [u8]),
    Device(DeviceSlice),
}

/// One input of a run.
#[derive(Clone, Debug)]
pub struct RunInput<'a> {
    pub dtype: ElemType,
    pub shape: &'a [u64],
    pub data: InputData<'a>,
}

impl InputData<'_> {
    pub fn len(&self) -> u64 {
        match self {
            InputData::Host(b) => b.len() as u64,
            InputData::Device(s) => s.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RunInput<'_> {
    pub fn len(&self) -> u64 {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

impl<'a> From<&HostTensor<'a>> for RunInput<'a> {
    fn from(t: &HostTensor<'a>) -> RunInput<'a> {
        RunInput { dtype: t.dtype, shape: t.shape, data: InputData::Host(t.data) }
    }
}

/// Where an output goes.
#[derive(Clone, Debug)]
pub enum OutputTarget {
    /// Read back and handed to [`RunOutputs::host`].
    Host,
    /// Copied on the GPU into this range (exactly the output's bytes).
    Device(DeviceSlice),
}

/// Receives a run's outputs.
pub trait RunOutputs {
    /// Where output `i`, of this shape, goes; asked once per output before the run is recorded.
    fn target(&mut self, i: usize, shape: &[u64]) -> Result<OutputTarget, GpuError>;
    /// The bytes of an output whose target is [`OutputTarget::Host`], once the run is done.
    fn host(&mut self, i: usize, shape: &[u64], bytes: &[u8]) -> Result<(), String>;
}

/// Every output to the host, through a sink.
struct HostOutputs<'s, 'a>(&'s mut OutputSink<'a>);

impl RunOutputs for HostOutputs<'_, '_> {
    fn target(&mut self, _i: usize, _shape: &[u64]) -> Result<OutputTarget, GpuError> {
        Ok(OutputTarget::Host)
    }

    fn host(&mut self, i: usize, shape: &[u64], bytes: &[u8]) -> Result<(), String> {
        (self.0)(i, shape, bytes)
    }
}

/// Planning choices that apply to every op of a program.
#[derive(Clone, Copy, Debug)]
pub struct ExecOptions {
    /// Tiling, tensor cores and precision of every GEMM (and conv GEMM).
    pub gemm: GemmOptions,
    pub conv1d_as_conv2d: bool,
    /// The conv algorithm (`conv_algorithm`): `Auto` or forced.
    pub conv_algo: ConvAlgo,
    /// `decode_attention_fold`: GroupQueryAttention's one-token preparation inside its decode
    /// kernel (off by default: slower on the H200, `docs/PERFORMANCE.md`).
    pub fold_decode_attention: bool,
    /// `interim_kernels`: while a set's tensor-core pipelines compile, its runs take plans
    /// without tensor cores (`interim.rs`; on by default).
    pub interim: bool,
    /// `interim_grace_ms`: until how long after a set is made its runs wait for the pipelines
    /// its interim plans stand in for (`interim.rs`).
    pub interim_grace: std::time::Duration,
    /// Set while `interim.rs` plans a step again for an interim plan: an attention step takes
    /// its unfused form (`ops/attention/unfused.rs`) or none.
    pub interim_plan: bool,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            gemm: GemmOptions::default(),
            conv1d_as_conv2d: true,
            conv_algo: ConvAlgo::Auto,
            fold_decode_attention: false,
            interim: false,
            interim_grace: std::time::Duration::ZERO,
            interim_plan: false,
        }
    }
}

/// A program with its constants on the GPU.
pub struct Executable {
    gpu: Arc<Gpu>,
    program: Program,
    constants: Vec<GpuBuffer>,
    options: ExecOptions,
    pool: Mutex<set_pool::SetPool<Prepared>>,
    /// The inputs whose values decide shapes (`super::values`).
    value_inputs: Vec<usize>,
}

/// Everything one run of a given set of input shapes needs.
struct Prepared {
    /// The buffer each input is bound from: host inputs are uploaded into it, device inputs
    /// copied into it on the GPU, so the bind groups stay valid whatever buffers ORT hands us
    /// (large device tensors are bound in place instead: `direct.rs`).
    inputs: Vec<GpuBuffer>,
    /// Host-writable staging buffer of each host input, made on first use and mapped between
    /// runs: an upload is one copy into it, no allocation.
    staging: Vec<Option<Staged>>,
    /// Whether a dispatch checks values at run time (the status word must be read back).
    checks: bool,
    /// Every value's buffer (kept alive with the bind groups).
    #[allow(dead_code)]
    temps: Vec<GpuBuffer>,
    /// The buffer each output is read back from.
    sources: Vec<GpuBuffer>,
    /// Read-back buffer of each output, made the first time it goes to the host.
    readbacks: Vec<Option<Readback>>,
    dispatches: Vec<Dispatch>,
    output_shapes: Vec<Vec<u64>>,
    /// Each output's byte length.
    output_bytes: Vec<u64>,
    /// One line per op: its problem and the chosen plan.
    plans: Vec<String>,
    /// The run's status word, cleared at the start of each run; a check dispatch writes the
    /// failing step's code (its index + 1) into it.
    status: GpuBuffer,
    status_readback: Readback,
    /// Each step that dispatches: its op types and its range of `dispatches`.
    spans: Vec<(String, std::ops::Range<usize>)>,
    /// Every buffer allocated for a step's output: (step name, bytes).
    allocations: Vec<(String, u64)>,
    /// Each step's bindings, outputs and dispatches, for a set rebuilt from this one.
    steps: Vec<prepare::StepSlot>,
    /// The copy kernels of this set's runs, of inputs and of outputs (`super::execute`).
    copies: [crate::runtime::devcopy::KeptCopies; 2],
    /// Its steps remade for device tensors bound in place (`direct.rs`), and which can be.
    in_place: direct::InPlaceSets,
    in_place_plan: direct::InPlacePlan,
    /// Steps whose pipelines were still compiling when the set was made, each with dispatches
    /// planned without tensor cores that its runs take until its own are ready (`interim.rs`).
    interim: Vec<(usize, Vec<Dispatch>)>,
    /// When the set was made: until `interim_grace` after it, runs wait for the pipelines its
    /// interim plans stand in for (`interim.rs`).
    made: std::time::Instant,
}

/// How [`Executable::profile`] groups a run's dispatches for timing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfileGroups {
    /// Each step's dispatches together.
    Steps,
    /// Each dispatch alone, named after its program.
    Dispatches,
    /// The whole run in one pass (`(run)`): with the barriers and idle between its dispatches,
    /// which the steps' sum leaves out.
    Run,
    /// The run's first k dispatches in one pass, for every k (named after the k-th): the
    /// differences are what each dispatch adds in the run's context, its barrier included.
    Prefixes,
}

/// GPU time of one step of a run (see [`Executable::profile`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StepProfile {
    /// The op types the step computes, e.g. `MatMul+Add` or `Div+Erf+Add+Mul+Mul`.
    pub ops: String,
    pub dispatches: usize,
    /// Workgroups over the step's dispatches (tells one shape's dispatch from another's).
    pub workgroups: u64,
    pub seconds: f64,
}

impl Executable {
    /// Uploads the program's constants.
    pub fn new(gpu: Arc<Gpu>, program: Program, options: ExecOptions) -> Result<Executable, GpuError> {
        let constants =
            program.constants.iter().map(|c| gpu.upload(&c.data, &c.name)).collect::<Result<Vec<_>, _>>()?;
        let value_inputs = super::values::value_inputs(&program)?;
        Ok(Executable { gpu, program, constants, options, pool: Mutex::new(Default::default()), value_inputs })
    }

    /// Prepares the set of these input shapes before the first run (Compile calls it when the
    /// shapes are static): plans, buffers and bind groups are made now and every pipeline starts
    /// compiling on the workers, so the first run finds the set pooled. Returns its plan lines
    /// and dispatch count (none when shapes depend on input values, which come with the first run).
    pub fn warm_up(&self, shapes: &[Vec<u64>]) -> Result<Vec<String>, GpuError> {
        if shapes.len() != self.program.inputs.len() {
            return Err(GpuError::Internal("warm_up: one shape per input expected".into()));
        }
        if !self.value_inputs.is_empty() {
            // Shapes depend on values that come with the first run.
            return Ok(Vec::new());
        }
        let zeros = [0u8; 0];
        let inputs: Vec<RunInput<'_>> = shapes
            .iter()
            .zip(&self.program.input_dtypes)
            .map(|(shape, &dtype)| RunInput { dtype, shape, data: InputData::Host(&zeros) })
            .collect();
        // Only lengths and shapes are read while preparing: each input's bytes come at run time.
        let lens: Vec<u64> =
            shapes.iter().zip(&self.program.input_dtypes).map(|(s, t)| s.iter().product::<u64>() * t.size()).collect();
        let prepared = crate::runtime::startup::time(crate::runtime::startup::Phase::Prepare, || {
            self.prepare_with_lens(&inputs, &lens, &[], None)
        })?;
        let mut plans = prepared.plans.clone();
        plans.push(format!("{} dispatches per run (prepared at Compile)", prepared.dispatches.len()));
        self.pool.lock().put(Self::key(inputs.iter().map(|t| t.shape)), prepared);
        Ok(plans)
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The device the program runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Runs once with host inputs and outputs: `inputs` in the fused node's order;
    /// `outputs(i, shape, bytes)` receives each result. Returns a description of each op's plan
    /// when these shapes were seen for the first time (for logs), else `None`.
    pub fn run(
        &self,
        inputs: &[HostTensor<'_>],
        outputs: &mut OutputSink<'_>,
    ) -> Result<Option<Vec<String>>, GpuError> {
        let inputs: Vec<RunInput<'_>> = inputs.iter().map(RunInput::from).collect();
        self.run_io(&inputs, &mut HostOutputs(outputs))
    }

    /// Runs once with inputs and outputs in host or device memory (see [`RunInput`],
    /// [`RunOutputs`]). The report of a new set ends with its dispatch count. When every output is on the device and no dispatch checks values at run
    /// time, it returns once the work is submitted: later uses of the outputs are ordered
    /// after it on the device's queue.
    pub fn run_io(
        &self,
        inputs: &[RunInput<'_>],
        outputs: &mut dyn RunOutputs,
    ) -> Result<Option<Vec<String>>, GpuError> {
        startup::time(Phase::Run, || self.run_timed(inputs, outputs))
    }

    fn run_timed(
        &self,
        inputs: &[RunInput<'_>],
        outputs: &mut dyn RunOutputs,
    ) -> Result<Option<Vec<String>>, GpuError> {
        self.check_inputs(inputs)?;
        let (values, key) = startup::time(Phase::RunValues, || -> Result<_, GpuError> {
            let values = super::values::read(inputs, &self.value_inputs)?;
            let mut key = Self::key(inputs.iter().map(|t| t.shape));
            if !self.value_inputs.is_empty() {
                key.extend(super::values::shape_key(&self.program, inputs, &values)?);
            }
            Ok((values, key))
        })?;
        let (pooled, spare) = {
            let mut pool = self.pool.lock();
            match pool.take(&key) {
                Some(p) => (Some(p), None),
                None => (None, pool.template(&key)),
            }
        };
        let (mut prepared, report) = match pooled {
            Some(p) => (p, None),
            None => {
                let mut spare = spare;
                let made =
                    startup::time(Phase::Prepare, || self.prepare(inputs, &values, spare.as_mut().map(|(_, set)| set)));
                let p = match made {
                    Ok(p) => p,
                    Err(e) => {
                        // A failed rebuild left the spare set as it was.
                        if let Some((old, set)) = spare {
                            self.pool.lock().put(old, set);
                        }
                        return Err(e);
                    }
                };
                let mut report = p.plans.clone();
                report.push(format!("{} dispatches per run", p.dispatches.len()));
                (p, Some(report))
            }
        };
        let result = self.execute(&mut prepared, inputs, outputs);
        if let Ok(true) = result {
            self.pool.lock().put(key, prepared);
        }
        result.map(|_| report)
    }

    /// Runs once, then times every step's dispatches with timestamp queries (`repeat` times
    /// each, averaged). `None` when the device has no timestamp queries. For benchmarks and
    /// `ONNXRUNTIME_EP_WGPU_PROFILE`; a normal run never pays for it.
    pub fn profile(
        &self,
        inputs: &[RunInput<'_>],
        repeat: u32,
        grouping: ProfileGroups,
    ) -> Result<Option<Vec<StepProfile>>, GpuError> {
        let Some(timer) = crate::runtime::GpuTimer::new(&self.gpu) else { return Ok(None) };
        self.check_inputs(inputs)?;
        let values = super::values::read(inputs, &self.value_inputs)?;
        let mut prepared = self.prepare(inputs, &values, None)?;
        self.execute(&mut prepared, inputs, &mut HostOutputs(&mut |_, _, _| Ok(())))?;
        let repeat = repeat.max(1);
        let mut groups: Vec<(String, Vec<&Dispatch>)> = Vec::new();
        for (ops, range) in &prepared.spans {
            let dispatches = &prepared.dispatches[range.clone()];
            match grouping {
                ProfileGroups::Steps => groups.push((ops.clone(), dispatches.iter().collect())),
                ProfileGroups::Dispatches => {
                    groups.extend(dispatches.iter().map(|d| (format!("{ops} [{}]", d.label), vec![d])))
                }
                ProfileGroups::Run => {}
                ProfileGroups::Prefixes => {
                    for i in range.clone() {
                        let name = format!("(prefix) {ops} [{}]", prepared.dispatches[i].label);
                        groups.push((name, prepared.dispatches[..=i].iter().collect()));
                    }
                }
            }
        }
        if grouping == ProfileGroups::Run {
            groups.push(("(run)".to_string(), prepared.dispatches.iter().collect()));
        }
        let mut out = Vec::with_capacity(groups.len());
        for (ops, dispatches) in groups {
            let seconds = timer.time(&self.gpu, &dispatches, repeat)? / f64::from(repeat);
            let workgroups = dispatches.iter().map(|d| d.grid().iter().map(|&g| u64::from(g)).product::<u64>()).sum();
            out.push(StepProfile { ops, dispatches: dispatches.len(), workgroups, seconds });
        }
        Ok(Some(out))
    }

    /// Dispatches one run of these input shapes records (0 until the shapes were prepared).
    pub fn dispatch_count(&self, shapes: &[&[u64]]) -> usize {
        let key = Self::key(shapes.iter().copied());
        self.pool.lock().peek(&key).map_or(0, |p| p.dispatches.len())
    }

    /// The buffers allocated for the steps' outputs at these input shapes, as (step name, bytes)
    /// (empty until the shapes were prepared): what tests assert fused kernels never allocate.
    pub fn allocations(&self, inputs: &[HostTensor<'_>]) -> Vec<(String, u64)> {
        let key = Self::key(inputs.iter().map(|t| t.shape));
        self.pool.lock().peek(&key).map_or_else(Vec::new, |p| p.allocations.clone())
    }

    fn key<'s>(shapes: impl Iterator<Item = &'s [u64]>) -> Vec<u64> {
        shapes.flat_map(|s| std::iter::once(s.len() as u64).chain(s.iter().copied())).collect()
    }

    fn check_inputs(&self, inputs: &[RunInput<'_>]) -> Result<(), GpuError> {
        if inputs.len() != self.program.inputs.len() {
            return Err(GpuError::Invalid(format!(
                "expected {} inputs, got {}",
                self.program.inputs.len(),
                inputs.len()
            )));
        }
        for ((t, name), &dtype) in inputs.iter().zip(&self.program.inputs).zip(&self.program.input_dtypes) {
            if t.dtype != dtype {
                return Err(GpuError::Invalid(format!("input '{name}' is {}, expected {dtype}", t.dtype)));
            }
            let elems: u64 = t.shape.iter().product();
            if elems * dtype.size() != t.len() {
                return Err(GpuError::Invalid(format!("input '{name}' of shape {:?} has {} bytes", t.shape, t.len())));
            }
        }
        Ok(())
    }

    /// The message of a failed run-time check: code = the step's index + 1.
    fn check_failure(&self, code: u32) -> String {
        match self.program.steps.get(code as usize - 1) {
            Some(step) => format!("{} '{}': {}", step.ops, step.name, step.kernel.check_message()),
            None => format!("a run-time check failed with code {code}"),
        }
    }
}

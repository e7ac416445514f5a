//! Runs a compiled [`Program`] on the GPU. Everything shape-dependent (plans, buffers, bind
//! groups) is prepared once per set of input shapes and pooled, so a repeated run costs one
//! upload per input, one submission and one read-back per output; concurrent runs of the same
//! shapes take separate pooled sets.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::program::{Operand, ProductOp, Program, Step};
use super::support::ComputeOp;
use crate::conv::{plan_conv_with, resolve, ConvAlgo, ConvInputs};
use crate::dtype::DType;
use crate::error::GpuError;
use crate::gemm::{broadcast_layout, broadcast_shapes, matmul_problem, plan_gemm, GemmOptions, GemmProblem};
use crate::runtime::{ConvBindings, Dispatch, GemmBindings, Gpu, GpuBuffer, Readback, Staged};

/// An input tensor in host memory.
#[derive(Clone, Copy, Debug)]
pub struct HostTensor<'a> {
    pub dtype: DType,
    pub shape: &'a [u64],
    pub data: &'a [u8],
}

/// Receives each output: `(index, shape, bytes)`; an error aborts the run.
pub type OutputSink<'a> = dyn FnMut(usize, &[u64], &[u8]) -> Result<(), String> + 'a;

/// Planning choices that apply to every op of a program.
#[derive(Clone, Copy, Debug)]
pub struct ExecOptions {
    /// Tiling, tensor cores and precision of every GEMM (and conv GEMM).
    pub gemm: GemmOptions,
    pub conv1d_as_conv2d: bool,
    /// The conv algorithm (`conv_algorithm`): `Auto` or forced.
    pub conv_algo: ConvAlgo,
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions { gemm: GemmOptions::default(), conv1d_as_conv2d: true, conv_algo: ConvAlgo::Auto }
    }
}

/// Pooled sets kept per shape key; more concurrent runs than this allocate and then drop.
const POOL_DEPTH: usize = 4;

/// A program with its constants on the GPU.
pub struct Executable {
    gpu: Arc<Gpu>,
    program: Program,
    constants: Vec<GpuBuffer>,
    options: ExecOptions,
    pool: Mutex<HashMap<Vec<u64>, Vec<Prepared>>>,
}

/// Everything one run of a given set of input shapes needs.
struct Prepared {
    inputs: Vec<GpuBuffer>,
    /// Host-writable staging buffer of each input (`None` for an empty one), mapped between
    /// runs: an upload is one copy into it, no allocation.
    staging: Vec<Option<Staged>>,
    temps: Vec<GpuBuffer>,
    readbacks: Vec<Readback>,
    dispatches: Vec<Dispatch>,
    output_shapes: Vec<Vec<u64>>,
    /// One line per op: its problem and the chosen plan.
    plans: Vec<String>,
}

impl Executable {
    /// Uploads the program's constants.
    pub fn new(gpu: Arc<Gpu>, program: Program, options: ExecOptions) -> Result<Executable, GpuError> {
        let constants =
            program.constants.iter().map(|c| gpu.upload(&c.data, &c.name)).collect::<Result<Vec<_>, _>>()?;
        Ok(Executable { gpu, program, constants, options, pool: Mutex::new(HashMap::new()) })
    }

    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The device the program runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Runs once: `inputs` in the fused node's order; `outputs(i, shape, bytes)` receives each
    /// result. Returns a description of each op's plan when these shapes were seen for the
    /// first time (for logs), else `None`.
    pub fn run(
        &self,
        inputs: &[HostTensor<'_>],
        outputs: &mut OutputSink<'_>,
    ) -> Result<Option<Vec<String>>, GpuError> {
        self.check_inputs(inputs)?;
        let key: Vec<u64> =
            inputs.iter().flat_map(|t| std::iter::once(t.shape.len() as u64).chain(t.shape.iter().copied())).collect();
        let pooled = self.pool.lock().get_mut(&key).and_then(Vec::pop);
        let (mut prepared, report) = match pooled {
            Some(p) => (p, None),
            None => {
                let p = self.prepare(inputs)?;
                let report = p.plans.clone();
                (p, Some(report))
            }
        };
        let result = self.execute(&mut prepared, inputs, outputs);
        if let Ok(true) = result {
            let mut pool = self.pool.lock();
            let slot = pool.entry(key).or_default();
            if slot.len() < POOL_DEPTH {
                slot.push(prepared);
            }
        }
        result.map(|_| report)
    }

    fn check_inputs(&self, inputs: &[HostTensor<'_>]) -> Result<(), GpuError> {
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
            if elems * dtype.size() != t.data.len() as u64 {
                return Err(GpuError::Invalid(format!(
                    "input '{name}' of shape {:?} has {} bytes",
                    t.shape,
                    t.data.len()
                )));
            }
        }
        Ok(())
    }

    fn execute(
        &self,
        prepared: &mut Prepared,
        inputs: &[HostTensor<'_>],
        outputs: &mut OutputSink<'_>,
    ) -> Result<bool, GpuError> {
        let gpu = &self.gpu;
        gpu.scoped("run", || {
            // Uploads go through our own staging buffers, copied at the start of the run's
            // encoder (not `Queue::write_buffer`, where wgpu counts an out-of-memory as a lost
            // device).
            let mut encoder =
                gpu.device().create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("partition") });
            for ((staged, buf), t) in prepared.staging.iter_mut().zip(&prepared.inputs).zip(inputs) {
                if let Some(staged) = staged {
                    gpu.fill(staged, t.data)?;
                    staged.copy_to(&mut encoder, &buf.buffer);
                }
            }
            let dispatches: Vec<&Dispatch> = prepared.dispatches.iter().collect();
            if !dispatches.is_empty() {
                gpu.encode(&mut encoder, &dispatches);
            }
            for (rb, &t) in prepared.readbacks.iter().zip(&self.program.outputs) {
                gpu.copy_to_readback(&mut encoder, &prepared.temps[t], rb);
            }
            gpu.queue().submit([encoder.finish()]);
            Ok(())
        })?;
        let mut failure = None;
        let readbacks: Vec<&Readback> = prepared.readbacks.iter().collect();
        gpu.read(&readbacks, |i, bytes| {
            if failure.is_none() {
                if let Err(e) = outputs(i, &prepared.output_shapes[i], bytes) {
                    failure = Some(e);
                }
            }
        })?;
        failure.map_or(Ok(()), |e| Err(GpuError::Invalid(e)))?;
        // The submission is done: map the staging buffers for the next run of this set. The
        // outputs are already delivered, so a failure here only keeps the set out of the pool.
        let mut staging: Vec<&mut Staged> = prepared.staging.iter_mut().flatten().collect();
        Ok(gpu.remap(&mut staging).is_ok())
    }

    /// Infers every op's shapes, plans it, allocates buffers and binds the dispatches.
    fn prepare(&self, inputs: &[HostTensor<'_>]) -> Result<Prepared, GpuError> {
        let gpu = &self.gpu;
        let input_bufs = inputs
            .iter()
            .zip(&self.program.inputs)
            .map(|(t, name)| gpu.storage_buffer(t.data.len() as u64, name))
            .collect::<Result<Vec<_>, _>>()?;
        let staging = inputs
            .iter()
            .zip(&self.program.inputs)
            .map(|(t, name)| (!t.data.is_empty()).then(|| gpu.staging(t.data.len() as u64, name)).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        let n = self.program.steps.len();
        let mut shapes: Vec<Option<Vec<u64>>> = vec![None; n];
        let mut temps: Vec<Option<GpuBuffer>> = vec![None; n];
        let mut dispatches = Vec::new();
        let mut plans = Vec::new();
        for (t, step) in self.program.steps.iter().enumerate() {
            let shape_of = |o: Operand| -> Result<Vec<u64>, GpuError> {
                match o {
                    Operand::Input(i) => Ok(inputs[i].shape.to_vec()),
                    Operand::Const(i) => Ok(self.program.constants[i].shape.clone()),
                    Operand::Temp(t) => {
                        shapes[t].clone().ok_or_else(|| GpuError::Invalid("temp used before set".into()))
                    }
                }
            };
            let buf = |o: Operand| -> Result<&GpuBuffer, GpuError> {
                match o {
                    Operand::Input(i) => Ok(&input_bufs[i]),
                    Operand::Const(i) => Ok(&self.constants[i]),
                    Operand::Temp(t) => {
                        temps[t].as_ref().ok_or_else(|| GpuError::Invalid("temp used before set".into()))
                    }
                }
            };
            let (out, out_shape) = match step {
                Step::Reshape { name, input, spec } => {
                    let shape = spec
                        .apply(&shape_of(*input)?)
                        .map_err(|e| GpuError::Invalid(format!("Reshape '{name}': {e}")))?;
                    (buf(*input)?.clone(), shape)
                }
                Step::Conv(op) => {
                    let (x, w) = (shape_of(op.x)?, shape_of(op.w)?);
                    let b = op.bias.map(shape_of).transpose()?;
                    let inputs = ConvInputs { x: &x, w: &w, bias: b.as_deref(), dtype: op.dtype };
                    let fail = |e: crate::PlanError| GpuError::Invalid(format!("Conv '{}': {e}", op.name));
                    let mut problem = resolve(&inputs, &op.attrs, self.options.conv1d_as_conv2d).map_err(fail)?;
                    problem.activation = op.activation;
                    let plan = plan_conv_with(&problem, gpu.caps(), &self.options.gemm, self.options.conv_algo)
                        .map_err(fail)?;
                    let fallbacks = if plan.fallbacks.is_empty() {
                        String::new()
                    } else {
                        format!(" (fell back: {})", plan.fallbacks.join("; "))
                    };
                    plans.push(format!("Conv '{}': {}{fallbacks}", op.name, plan.describe()));
                    let out = gpu.storage_buffer(problem.output_len() * op.dtype.size(), &op.name)?;
                    if problem.output_len() > 0 {
                        let bias = op.bias.map(buf).transpose()?;
                        let io = ConvBindings { x: buf(op.x)?, w: buf(op.w)?, bias, out: &out };
                        dispatches.extend(gpu.prepare_conv(&plan, io)?);
                    }
                    (out, problem.output_shape.clone())
                }
                Step::Product(op) => {
                    let bias_shape = op.bias.map(shape_of).transpose()?;
                    let (problem, out_shape) = op_problem(op, &shape_of(op.a)?, &shape_of(op.b)?, bias_shape)
                        .map_err(|e| GpuError::Invalid(format!("{} '{}': {e}", kind_name(op.kind), op.name)))?;
                    let plan = plan_gemm(&problem, gpu.caps(), &self.options.gemm)?;
                    plans.push(describe(op, &problem, &plan));
                    let out = gpu.storage_buffer(problem.output_len() * op.dtype.size(), &op.name)?;
                    if problem.output_len() > 0 {
                        let bias = op.bias.map(buf).transpose()?;
                        let io = GemmBindings { a: buf(op.a)?, b: buf(op.b)?, bias, out: &out };
                        dispatches.extend(gpu.prepare_gemm(&plan, io)?);
                    }
                    (out, out_shape)
                }
            };
            shapes[t] = Some(out_shape);
            temps[t] = Some(out);
        }
        let temps: Vec<GpuBuffer> = temps
            .into_iter()
            .map(|t| t.ok_or_else(|| GpuError::Invalid("unset temp".into())))
            .collect::<Result<_, _>>()?;
        let output_shapes: Vec<Vec<u64>> =
            self.program.outputs.iter().map(|&t| shapes[t].clone().unwrap_or_default()).collect();
        let readbacks =
            self.program.outputs.iter().map(|&t| gpu.readback(temps[t].len)).collect::<Result<Vec<_>, _>>()?;
        Ok(Prepared { inputs: input_bufs, staging, temps, readbacks, dispatches, output_shapes, plans })
    }
}

/// One log line: the op, its problem and the chosen plan (with any fallbacks).
fn describe(op: &ProductOp, problem: &GemmProblem, plan: &crate::gemm::GemmPlan) -> String {
    let variants: Vec<String> = plan.variants().map(|v| v.name()).collect();
    let fallbacks =
        if plan.fallbacks.is_empty() { String::new() } else { format!(" (fell back: {})", plan.fallbacks.join("; ")) };
    format!(
        "{} '{}': M={} N={} K={} batch={} {:?} [{}]{fallbacks}",
        kind_name(op.kind),
        op.name,
        problem.m,
        problem.n,
        problem.k,
        problem.batch_count(),
        plan.tiling,
        variants.join(" + "),
    )
}

fn kind_name(kind: ComputeOp) -> &'static str {
    match kind {
        ComputeOp::MatMul => "MatMul",
        ComputeOp::Gemm => "Gemm",
        ComputeOp::Conv => "Conv",
    }
}

/// The GEMM problem of one op at these shapes and its ONNX output shape.
pub fn op_problem(
    op: &ProductOp,
    a: &[u64],
    b: &[u64],
    bias: Option<Vec<u64>>,
) -> Result<(GemmProblem, Vec<u64>), String> {
    let (mut problem, out_shape) = match op.kind {
        ComputeOp::MatMul => {
            let (mut p, out) = matmul_problem(a, b, op.dtype).map_err(|e| e.to_string())?;
            if let Some(bias) = &bias {
                if broadcast_shapes(bias, &out).as_deref() != Some(out.as_slice()) {
                    return Err(format!("Add operand {bias:?} does not broadcast onto {out:?}"));
                }
                if a.len() < 2 || b.len() < 2 {
                    return Err("Add fused after a MatMul with a 1-D operand".into());
                }
                p.epilogue.bias = Some(broadcast_layout(bias, &out, &p).map_err(|e| e.to_string())?);
            }
            (p, out)
        }
        ComputeOp::Gemm => {
            let p = op.gemm.problem(op.dtype, a, b, bias.as_deref())?;
            let out = vec![p.m as u64, p.n as u64];
            (p, out)
        }
        ComputeOp::Conv => return Err("a Conv is not a product step".into()),
    };
    problem.epilogue.activation = op.activation;
    Ok((problem, out_shape))
}

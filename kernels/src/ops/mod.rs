//! The op registry: every ONNX op this EP runs is one [`OpDef`] in [`REGISTRY`], and everything
//! about it lives with it: the support check placement asks, the step the program runs (shape
//! inference and dispatches), its FLOPs for the offload rule, its elementwise form when it fuses,
//! and the shader variants the goldens cover.
//!
//! Placement, program building, the executor, offload and the goldens only go through this
//! table; adding an op is a definition in a family folder and one line below.

pub mod alias;
pub mod attention;
pub mod check;
pub mod conv;
pub mod convtranspose;
pub mod elementwise;
pub mod layout;
pub mod matmul;
pub mod norm;
pub mod pad;
pub mod planned;
pub mod pool;
pub mod quant;
pub mod resize;
pub mod rotary;

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::{GpuError, PlanError};
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::runtime::{Dispatch, Gpu, GpuBuffer};
use crate::shader::ShaderVariant;

pub use elementwise::{Arg, ElemNode};

/// One ONNX op (or a family of ops sharing a kernel).
pub trait OpDef: Sync {
    /// The op types handled, in `domain()`.
    fn names(&self) -> &'static [&'static str];

    /// `""` for the default ONNX domain, else e.g. `"com.microsoft"`.
    fn domain(&self) -> &'static str {
        ""
    }

    /// Whether this node can run here: element types, attributes, and any known shapes.
    /// `Err(reason)` declines it; ONNX Runtime's log shows the reason.
    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String>;

    /// The node inputs the step reads on the GPU, by index (the others, such as constant axes,
    /// are read at build time). Omitted optional inputs may be listed: they bind as `None`.
    fn gpu_inputs(&self, node: &Node) -> Vec<usize> {
        (0..node.inputs.len()).collect()
    }

    /// Small integer inputs placement leaves to the CPU, with the nodes computing them: the ones
    /// the step reads on the host ([`Kernel::value_inputs`]), and ones derived from inputs whose
    /// shape changes every run (an attention mask that grows each decode step: computed inside a
    /// partition, it would change the partition's input shapes, and so its prepared set, every run).
    fn host_inputs(&self, _node: &Node) -> Vec<usize> {
        Vec::new()
    }

    /// The step that computes the node; reads attributes and constant inputs now.
    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String>;

    /// The op's elementwise form, when it fuses with its neighbours into one kernel: nodes of
    /// the fused-kernel IR whose `Arg::Input(k)` is the node's input `k`; the last node's value
    /// is the op's output.
    fn elementwise(&self, _node: &Node) -> Option<Vec<ElemNode>> {
        None
    }

    /// Floating-point operations of the node at its static shapes (offload cost); `None` when
    /// shapes are unknown.
    fn flops(&self, _node: &Node) -> Option<f64> {
        Some(0.0)
    }

    /// Whether the node only renames a buffer (Reshape and friends): no GPU work.
    fn is_alias(&self) -> bool {
        false
    }

    /// Every shader variant the op can emit on `caps`: what the goldens render and validate.
    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant>;
}

/// Whether two shapes hold the same elements in the same row-major order: equal once their
/// leading 1s are dropped (a residual `[L, C]` read at the index of an output `[1, L, C]`).
pub fn same_elements(a: &[u64], b: &[u64]) -> bool {
    let strip = |s: &[u64]| s.iter().position(|&d| d != 1).map_or(&[][..], |i| &s[i..]).to_vec();
    strip(a) == strip(b)
}

/// What a step may use while it prepares: the device and the session's planning options.
#[derive(Clone, Copy, Debug)]
pub struct PrepareCx<'a> {
    pub gpu: &'a Gpu,
    /// What the plans are made for: the device's capabilities, or those without tensor cores
    /// for a cold start's interim plans (`graph/interim.rs`).
    pub caps: &'a DeviceCaps,
    pub options: &'a crate::graph::ExecOptions,
    /// The run's status word (see `ops::check`): a check dispatch writes `status_code` into
    /// it to fail the run with this step's name.
    pub status: &'a GpuBuffer,
    pub status_code: u32,
    /// Buffers the steps of one set share (an interim plan's: `graph/interim.rs`); `None`: each
    /// step allocates its own.
    pub scratch: Option<&'a Scratch>,
}

impl<'a> PrepareCx<'a> {
    /// A step prepared on its own (tests, tools): the device's capabilities, status code 1, no
    /// shared scratch.
    pub fn on(gpu: &'a Gpu, options: &'a crate::graph::ExecOptions, status: &'a GpuBuffer) -> Self {
        PrepareCx { gpu, caps: gpu.caps(), options, status, status_code: 1, scratch: None }
    }

    pub fn caps(&self) -> &DeviceCaps {
        self.caps
    }

    /// A buffer of at least `bytes` that holds nothing past this step's dispatches: shared with
    /// the other steps of the set under `label` where the set keeps [`Scratch`], else new.
    pub fn scratch_buffer(&self, bytes: u64, label: &'static str) -> Result<GpuBuffer, GpuError> {
        match self.scratch {
            Some(s) => s.buffer(self.gpu, bytes, label),
            None => self.gpu.storage_buffer(bytes, label),
        }
    }
}

/// Scratch buffers shared by the steps of one set, by label: a set's dispatches run in order, so
/// buffers that hold nothing past a step's own dispatches (the unfused interim attention's
/// scores) serve every step; each label keeps the largest asked for.
#[derive(Default, Debug)]
pub struct Scratch(std::cell::RefCell<Vec<(&'static str, GpuBuffer)>>);

impl Scratch {
    fn buffer(&self, gpu: &Gpu, bytes: u64, label: &'static str) -> Result<GpuBuffer, GpuError> {
        let mut held = self.0.borrow_mut();
        if let Some((_, b)) = held.iter().find(|(l, b)| *l == label && b.len >= bytes) {
            return Ok(b.clone());
        }
        let buffer = gpu.storage_buffer(bytes, label)?;
        held.retain(|(l, _)| *l != label);
        held.push((label, buffer.clone()));
        Ok(buffer)
    }
}

/// A tensor bound to a step at run time.
#[derive(Clone, Copy, Debug)]
pub struct Tensor<'a> {
    pub buf: &'a GpuBuffer,
    pub shape: &'a [u64],
    pub ty: ElemType,
    /// A constant of the program (its buffer never changes between runs).
    pub constant: bool,
}

impl Tensor<'_> {
    pub fn elems(&self) -> u64 {
        self.shape.iter().product()
    }
}

/// A step's inputs (`None` for omitted optional ones) and outputs.
#[derive(Clone, Debug)]
pub struct KernelIo<'a> {
    pub inputs: Vec<Option<Tensor<'a>>>,
    pub outputs: Vec<Tensor<'a>>,
}

impl<'a> KernelIo<'a> {
    /// Input `i`, which the kernel requires.
    pub fn input(&self, i: usize) -> Result<Tensor<'a>, GpuError> {
        self.inputs.get(i).copied().flatten().ok_or_else(|| GpuError::Internal(format!("input {i} is not bound")))
    }

    /// Output `i`.
    pub fn output(&self, i: usize) -> Result<Tensor<'a>, GpuError> {
        self.outputs.get(i).copied().ok_or_else(|| GpuError::Internal(format!("output {i} is not bound")))
    }
}

/// What a step prepared for one set of shapes.
#[derive(Debug, Default)]
pub struct PreparedStep {
    pub dispatches: Vec<Dispatch>,
    /// One log line describing the plan (products and convs), if worth logging.
    pub plan: Option<String>,
}

impl PreparedStep {
    pub fn one(d: Dispatch) -> PreparedStep {
        PreparedStep { dispatches: vec![d], plan: None }
    }
}

/// What the executor asks of a compiled step.
pub trait Kernel: Send + Sync + std::fmt::Debug {
    /// The output shapes for these input shapes (`None` for omitted optional inputs), with
    /// ONNX's shape rules; a mismatch is the user's error, said with the op's name.
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String>;

    /// The inputs (by position) whose values, not only shapes, decide the output shapes: small
    /// integer tensors such as `GroupQueryAttention`'s `total_sequence_length`. The executor reads
    /// them on the host and calls [`Kernel::infer_values`]; placement keeps their producers off the
    /// GPU, so they arrive as inputs of the partition.
    fn value_inputs(&self) -> &'static [usize] {
        &[]
    }

    /// [`Kernel::infer`] with the values of [`Kernel::value_inputs`] (in that order, `None` for an
    /// omitted input).
    fn infer_values(&self, inputs: &[Option<&[u64]>], _values: &[Option<&[i64]>]) -> Result<Vec<Vec<u64>>, String> {
        self.infer(inputs)
    }

    /// `Some(j)` when output `i` is input `j`'s buffer under a new shape (no GPU work).
    fn alias(&self, _output: usize) -> Option<usize> {
        None
    }

    /// `Some(j)` when output `i` may be bound to exactly input `j`'s range (a cache ORT shares
    /// between past and present): the kernel then finds input `j`'s contents already in the
    /// output, does not bind input `j`, and writes only what changes (`graph/direct.rs`).
    fn shares_input(&self, _output: usize) -> Option<usize> {
        None
    }

    /// Binds the dispatches that compute the outputs from the inputs at these shapes.
    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError>;

    /// Whether its dispatches check values at run time (`ops::check`): the executor then
    /// reads the run's status word back before it returns.
    fn checks(&self) -> bool {
        false
    }

    /// Inputs whose values let [`Kernel::host_check`] make the run-time check on the host when
    /// a run hands them in host memory: that run does not wait for the device's status word.
    fn host_checked(&self) -> &'static [usize] {
        &[]
    }

    /// The run-time check on the host, from the input and output shapes and the values of
    /// [`Kernel::host_checked`] in that order; `Err` fails the run before it is submitted.
    fn host_check(&self, _inputs: &[Option<&[u64]>], _outputs: &[&[u64]], _values: &[&[i64]]) -> Result<(), String> {
        Err("no check on the host".into())
    }

    /// What a failed check of this step means (the run's error message, after the step's name).
    fn check_message(&self) -> &'static str {
        "an index is out of range for the indexed axis"
    }

    /// The plan `prepare` would choose at these input shapes on `caps`, without a device (the
    /// offline `inspect` tool shows it); `Ok(None)` for steps without GPU work (renames, empty
    /// outputs). Kernels compute their dispatches in one function that `prepare` binds and
    /// `plan` reports (`ops::planned`), so the two cannot disagree.
    fn plan(
        &self,
        _inputs: &[Option<&[u64]>],
        _caps: &DeviceCaps,
        _options: &crate::graph::ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        Ok(None)
    }
}

/// A planned step, described without a device: one line (as the plan log writes it), the
/// tiling and every dispatch's shader variant and workgroup grid.
#[derive(Clone, Debug, PartialEq)]
pub struct StepPlan {
    pub line: String,
    pub tiling: String,
    pub dispatches: Vec<(String, [u32; 3])>,
}

/// The registry: one line per op family.
pub fn registry() -> &'static [&'static dyn OpDef] {
    static REGISTRY: OnceLock<Vec<&'static dyn OpDef>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut all: Vec<&'static dyn OpDef> = Vec::new();
        all.extend(matmul::OPS);
        all.extend(conv::OPS);
        all.extend(alias::OPS);
        all.extend(elementwise::ops());
        all.extend(norm::ops());
        all.extend(layout::ops());
        all.extend(attention::ops());
        all.extend(pool::OPS);
        all.extend(pad::OPS);
        all.extend(resize::OPS);
        all.extend(convtranspose::OPS);
        all.extend(quant::ops());
        all.extend(rotary::OPS);
        all
    })
}

/// The definition that handles `node`, if any.
pub fn lookup(node: &Node) -> Option<&'static dyn OpDef> {
    static INDEX: OnceLock<HashMap<(&'static str, &'static str), &'static dyn OpDef>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut map = HashMap::new();
        for &def in registry() {
            for &name in def.names() {
                map.insert((def.domain(), name), def);
            }
        }
        map
    });
    let domain = if node.domain == "ai.onnx" { "" } else { node.domain.as_str() };
    index.get(&(domain, node.op_type.as_str())).copied()
}

/// Every variant of every registered op on `caps`, by name.
pub fn registry_variants(caps: &DeviceCaps) -> std::collections::BTreeMap<String, ShaderVariant> {
    registry()
        .iter()
        .flat_map(|def| def.variants(caps))
        .chain(check::variants(caps))
        .chain(std::iter::once(crate::runtime::devcopy::variant()))
        .map(|v| (v.name(), v))
        .collect()
}

/// Workgroup size of the one-dimensional op kernels.
pub const WORKGROUP: u32 = 256;

/// A grid of `workgroups` workgroups folded into x (and y, z) within the device's
/// per-dimension limit; kernels recover the linear id as `x + y·nx + z·nx·ny` and return past
/// `workgroups`. WGSL's `num_workgroups` gives `nx`, `ny`.
pub fn grid(workgroups: u64, caps: &DeviceCaps) -> Result<[u32; 3], PlanError> {
    let limit = u64::from(caps.max_workgroups_per_dimension.max(1));
    let workgroups = workgroups.max(1);
    let x = workgroups.min(limit);
    let rest = workgroups.div_ceil(x);
    let y = rest.min(limit);
    let z = rest.div_ceil(y);
    if z > limit {
        return Err(PlanError::GridTooLarge { workgroups, limit: caps.max_workgroups_per_dimension });
    }
    Ok([x as u32, y as u32, z as u32])
}

/// The grid for one invocation per item, [`WORKGROUP`] items per workgroup.
pub fn grid_for(items: u64, caps: &DeviceCaps) -> Result<[u32; 3], PlanError> {
    grid(items.div_ceil(u64::from(WORKGROUP)), caps)
}

/// A count as the `u32` the kernels index with, or the op's error.
pub fn to_u32(what: &'static str, value: u64) -> Result<u32, PlanError> {
    u32::try_from(value).map_err(|_| PlanError::IndexOverflow { what, value })
}

/// When the first `count` inputs' declared shapes are all known (absent optional inputs count as
/// known), `kernel` infers from them: a decline with the op's own message when they do not fit.
pub fn infer_declared(node: &Node, kernel: &dyn Kernel, count: usize) -> Result<(), String> {
    let shapes: Option<Vec<Option<Vec<u64>>>> = (0..count)
        .map(|i| match node.input(i).filter(|v| !v.name.is_empty()) {
            None => Some(None),
            Some(v) => v.fixed_shape().map(Some),
        })
        .collect();
    if let Some(shapes) = shapes {
        let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| s.as_deref()).collect();
        kernel.infer(&refs)?;
    }
    Ok(())
}

/// Decline unless the node's declared input/output element types are among `allowed`.
pub fn check_types(node: &Node, allowed: &[ElemType]) -> Result<(), String> {
    for v in node.inputs.iter().chain(&node.outputs).flatten().filter(|v| !v.name.is_empty()) {
        match ElemType::from_onnx(v.elem_type) {
            Some(t) if allowed.contains(&t) => {}
            _ => {
                return Err(format!(
                    "element type {} of '{}' is not supported by {}",
                    v.elem_type, v.name, node.op_type
                ))
            }
        }
    }
    Ok(())
}

/// Decline a float16 tensor when the session or the device cannot run it.
pub fn check_f16(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    let has_f16 = node.inputs.iter().chain(&node.outputs).flatten().any(|v| v.elem_type == ElemType::F16.onnx());
    if has_f16 && !opts.enable_f16 {
        return Err("float16 is disabled by the enable_f16=0 option".into());
    }
    if has_f16 && !opts.caps.shader_f16 {
        return Err("float16 needs the shader-f16 feature, which this adapter lacks".into());
    }
    Ok(())
}

/// The naga capabilities a kernel over these element types needs.
pub fn capabilities_for(types: &[ElemType]) -> naga::valid::Capabilities {
    if types.contains(&ElemType::F16) {
        naga::valid::Capabilities::SHADER_FLOAT16
    } else {
        naga::valid::Capabilities::empty()
    }
}

/// Numpy broadcasting of two shapes (right-aligned), or `None` when they do not broadcast.
pub fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    crate::gemm::broadcast_shapes(a, b)
}

/// A negative ONNX axis counted from the end, checked against `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

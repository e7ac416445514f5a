//! MatMul and Gemm: one product kernel over the GEMM planner, with the bias and activation
//! that fusion folds into its store.

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::error::GpuError;
use crate::gemm::{
    broadcast_layout, broadcast_shapes, matmul_problem, matmul_problem_strided, plan_gemm, Activation, CoopMode,
    GemmOptions, GemmPlan, GemmProblem, GemmStep, StepIo, TilingChoice, FLAG_RESIDUAL, FLAG_RESIDUAL_AFTER_ACT,
    FLAG_RESIDUAL_MUL,
};
use crate::graph::model::{Node, ValueInfo};
use crate::graph::support::{common_dtype, required, PlacementOptions};
use crate::graph::ExecOptions;
use crate::ops::layout::resolve_perm;
use crate::ops::layout::strided::contiguous;
use crate::ops::norm::skip::SkipNormKernel;
use crate::ops::{Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::runtime::GemmBindings;
use crate::shader::ShaderVariant;

#[path = "matmul_dual.rs"]
mod dual;
#[path = "matmul_norm.rs"]
mod norm;
pub use dual::UP_B;
pub use norm::{GemvNormSource, NORM_GAMMA, NORM_SKIP};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&MatMulDef, &GemmDef];

/// Which product a [`ProductKernel`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProductKind {
    MatMul,
    Gemm,
}

impl ProductKind {
    pub fn name(self) -> &'static str {
        match self {
            ProductKind::MatMul => "MatMul",
            ProductKind::Gemm => "Gemm",
        }
    }
}

struct MatMulDef;
struct GemmDef;

impl OpDef for MatMulDef {
    fn names(&self) -> &'static [&'static str] {
        &["MatMul"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_matmul(node, opts)
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ProductKernel::of(node, ProductKind::MatMul)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let dtype = node.input(0)?.dtype()?;
        let perms = operand_perms(node).ok()?;
        let [a, b] = [0, 1].map(|k| {
            let shape = node.input(k)?.fixed_shape()?;
            Some(view(&shape, perms[k].as_deref()).ok()?.0)
        });
        Some(matmul_problem(&a?, &b?, dtype).ok()?.0.flops())
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out: Vec<ShaderVariant> = gemm_variants(caps).into_values().collect();
        out.extend(norm::variants(caps));
        out
    }
}

/// The attributes by which a MatMul reads A or B through an absorbed Transpose
/// (`graph/patterns.rs`): input k is the Transpose's input, and the operand is its view under
/// that Transpose's `perm`. Only the rewrite sets them: ONNX's MatMul has no attributes, and the
/// prefix keeps a model's stray attribute from being read as one (placement declines it).
pub const OPERAND_PERMS: [&str; 2] = ["__ep_wgpu_a_perm", "__ep_wgpu_b_perm"];

/// The absorbed Transposes' permutations of a MatMul node, checked.
fn operand_perms(node: &Node) -> Result<[Option<Vec<usize>>; 2], String> {
    let perm = |k: usize| node.ints(OPERAND_PERMS[k]).map(|p| resolve_perm(Some(p), p.len())).transpose();
    Ok([perm(0)?, perm(1)?])
}

/// A tensor of `shape` seen through a Transpose of `perm`: the view's shape and element strides
/// (`None` without a permutation: the tensor itself, contiguous).
fn view(shape: &[u64], perm: Option<&[usize]>) -> Result<(Vec<u64>, Option<Vec<u64>>), String> {
    let Some(perm) = perm else { return Ok((shape.to_vec(), None)) };
    if perm.len() != shape.len() {
        return Err(format!("a permutation of rank {} over a tensor of shape {shape:?}", perm.len()));
    }
    let strides = contiguous(shape);
    Ok((perm.iter().map(|&p| shape[p]).collect(), Some(perm.iter().map(|&p| strides[p] as u64).collect())))
}

impl OpDef for GemmDef {
    fn names(&self) -> &'static [&'static str] {
        &["Gemm"]
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_gemm(node, opts)
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(ProductKernel::of(node, ProductKind::Gemm)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let dtype = node.input(0)?.dtype()?;
        let (a, b) = (node.input(0)?.fixed_shape()?, node.input(1)?.fixed_shape()?);
        Some(GemmAttrs::of(node).problem(dtype, &a, &b, None).ok()?.flops())
    }

    /// Gemm runs the same kernels as MatMul (listed there).
    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        Vec::new()
    }
}

/// One product (MatMul or Gemm) with its fused epilogue. Inputs: A, B, the bias (Gemm's C or a
/// fused Add's other operand) when `has_bias`, and at index 3 the residual when `residual`.
#[derive(Clone, Debug, PartialEq)]
pub struct ProductKernel {
    pub name: String,
    pub kind: ProductKind,
    pub gemm: GemmAttrs,
    pub dtype: DType,
    pub has_bias: bool,
    pub activation: Activation,
    /// A residual operand of the output's element count, added after the epilogue.
    pub residual: bool,
    /// The residual multiplies the result instead (a gated product).
    pub residual_mul: bool,
    /// MatMul only: A and B read through absorbed Transposes of these permutations.
    pub perms: [Option<Vec<usize>>; 2],
    /// A bound on |A| known before any run (`graph/bounds.rs`): a split f32 product by constant
    /// weights takes A's scale from it, without a max pass.
    pub a_bound: Option<f32>,
    /// MatMul only: the SkipSimplifiedLayerNormalization whose output is A, folded in (inputs 4
    /// and 5 its skip and γ, A its input; its `outputs[3]`: this step also writes its sum).
    pub norm: Option<Box<SkipNormKernel>>,
    /// MatMul only: SwiGLU's up projection joined (`ops/matmul_dual.rs`): its weights are input
    /// [`UP_B`], of B's shape, and the result is this product's epilogue (its SiLU) times the up
    /// projection's product.
    pub up: bool,
}

impl ProductKernel {
    /// The product of `node` alone (Gemm's C as its bias).
    pub fn of(node: &Node, kind: ProductKind) -> Result<ProductKernel, String> {
        let dtype = node.input(0).and_then(ValueInfo::dtype).ok_or("product input of unsupported type")?;
        let has_bias = kind == ProductKind::Gemm && node.input(2).is_some_and(|v| !v.name.is_empty());
        let perms = match kind {
            ProductKind::MatMul => operand_perms(node)?,
            ProductKind::Gemm => [None, None],
        };
        Ok(ProductKernel {
            name: node.name.clone(),
            kind,
            gemm: GemmAttrs::of(node),
            dtype,
            has_bias,
            activation: Activation::None,
            residual: false,
            residual_mul: false,
            perms,
            a_bound: node.float(crate::graph::bounds::A_BOUND),
            norm: None,
            up: false,
        })
    }

    /// Folds an Add's other operand in as the bias (a Gemm without C ignores beta, so the
    /// operand is added as is).
    pub fn add_bias(&mut self) {
        self.has_bias = true;
        self.gemm.beta = 1.0;
    }

    /// The GEMM problem at these shapes and the ONNX output shape.
    pub fn problem(&self, a: &[u64], b: &[u64], bias: Option<&[u64]>) -> Result<(GemmProblem, Vec<u64>), String> {
        let (mut problem, out_shape) = match self.kind {
            ProductKind::MatMul => {
                let (a, a_strides) = view(a, self.perms[0].as_deref())?;
                let (b, b_strides) = view(b, self.perms[1].as_deref())?;
                let views = [(a.as_slice(), a_strides.as_deref()), (b.as_slice(), b_strides.as_deref())];
                let (mut p, out) = match matmul_problem_strided(views, bias, self.dtype) {
                    Ok(built) => built,
                    // Without the bias: the product's own error, else the bias's.
                    Err(e) => {
                        let (_, out) = matmul_problem_strided(views, None, self.dtype).map_err(|e| e.to_string())?;
                        let Some(bias) = bias else { return Err(e.to_string()) };
                        if a.len() < 2 || b.len() < 2 {
                            return Err("Add fused after a MatMul with a 1-D operand".into());
                        }
                        if broadcast_shapes(bias, &out).as_deref() != Some(out.as_slice()) {
                            return Err(format!("Add operand {bias:?} does not broadcast onto {out:?}"));
                        }
                        return Err(e.to_string());
                    }
                };
                // A folded scalar factor scales the product (alpha) and a bias before it (beta).
                p.epilogue.alpha = self.gemm.alpha;
                p.epilogue.beta = self.gemm.beta;
                (p, out)
            }
            ProductKind::Gemm => {
                let p = self.gemm.problem(self.dtype, a, b, bias)?;
                let out = vec![p.m as u64, p.n as u64];
                (p, out)
            }
        };
        problem.epilogue.activation = self.activation;
        Ok((problem, out_shape))
    }

    /// The plan at these shapes (its output steps reading the residual when there is one).
    fn planned(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &GemmOptions,
    ) -> Result<(GemmProblem, GemmPlan), String> {
        let (a, b, bias) = shapes(inputs, self.has_bias)?;
        let err = |e: String| format!("{} '{}': {e}", self.kind.name(), self.name);
        let (problem, out) = self.problem(a, b, bias).map_err(err)?;
        let mut plan = plan_gemm(&problem, caps, options).map_err(|e| err(e.to_string()))?;
        if self.residual {
            let r = inputs.get(3).copied().flatten().ok_or_else(|| err("the residual is missing".into()))?;
            if r.iter().product::<u64>() != out.iter().product::<u64>() {
                return Err(err(format!("the fused residual {r:?} does not match the output {out:?}")));
            }
            let mul = if self.residual_mul { FLAG_RESIDUAL_MUL } else { 0 };
            plan.add_output_flags(FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT | mul);
        }
        Ok((problem, plan))
    }
}

/// A, B and the optional bias shape of a product.
type ProductShapes<'a> = (&'a [u64], &'a [u64], Option<&'a [u64]>);

fn shapes<'a>(inputs: &[Option<&'a [u64]>], has_bias: bool) -> Result<ProductShapes<'a>, String> {
    let get = |i: usize| inputs.get(i).copied().flatten().ok_or_else(|| format!("product input {i} is missing"));
    let bias = if has_bias { Some(get(2)?) } else { None };
    Ok((get(0)?, get(1)?, bias))
}

impl Kernel for ProductKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        if self.up {
            return self.infer_dual(inputs);
        }
        if self.norm.is_some() {
            return self.infer_norm(inputs);
        }
        let (a, b, bias) = shapes(inputs, self.has_bias)?;
        let (_, out) = self.problem(a, b, bias).map_err(|e| format!("{} '{}': {e}", self.kind.name(), self.name))?;
        Ok(vec![out])
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        if self.up {
            return self.prepare_dual(cx, io);
        }
        if self.norm.is_some() {
            return self.prepare_norm(cx, io);
        }
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let (problem, plan) = self.planned(&shapes, cx.caps(), &cx.options.gemm).map_err(GpuError::Invalid)?;
        let (a, b, out) = (io.input(0)?, io.input(1)?, io.output(0)?);
        let bias = if self.has_bias { Some(io.input(2)?.buf) } else { None };
        let bindings = GemmBindings { a: a.buf, b: b.buf, bias, out: out.buf };
        let residual = if self.residual { Some(io.input(3)?.buf) } else { None };
        let dispatches = match (b.constant, residual) {
            (true, _) => cx.gpu.prepare_gemm_constant_b(&plan, bindings, residual, self.a_bound)?,
            (false, Some(r)) => cx.gpu.prepare_gemm_residual(&plan, bindings, r)?,
            (false, None) => cx.gpu.prepare_gemm(&plan, bindings)?,
        };
        Ok(PreparedStep { dispatches, plan: Some(describe(self, &problem, &plan)) })
    }

    fn plan(
        &self,
        inputs: &[Option<&[u64]>],
        caps: &DeviceCaps,
        options: &ExecOptions,
    ) -> Result<Option<StepPlan>, String> {
        if self.up {
            return self.plan_dual(inputs, caps, options);
        }
        if self.norm.is_some() {
            return self.plan_norm(inputs, caps, options);
        }
        let (problem, plan) = self.planned(inputs, caps, &options.gemm)?;
        // A bound on A (its B a constant) spares the runs the max pass.
        let runs = |s: &&GemmStep| !(self.a_bound.is_some() && !plan.swap_operands && s.io == StepIo::AbsMax);
        Ok(Some(StepPlan {
            line: describe(self, &problem, &plan),
            tiling: format!("{:?}", plan.tiling),
            dispatches: plan.steps.iter().filter(runs).map(|s| (s.shader().name(), s.grid)).collect(),
        }))
    }
}

fn describe(op: &ProductKernel, problem: &GemmProblem, plan: &GemmPlan) -> String {
    let variants: Vec<String> = plan.shaders().map(|v| v.name()).collect();
    let fallbacks = plan.fallback_note();
    let bound = match op.a_bound {
        Some(b) if plan.splits_f32() && !plan.swap_operands => format!(", A's scale from its bound {b:.4e}"),
        _ => String::new(),
    };
    format!(
        "{} '{}': M={} N={} K={} batch={} {:?} [{}]{fallbacks}{bound}",
        op.kind.name(),
        op.name,
        problem.m,
        problem.n,
        problem.k,
        problem.batch_count(),
        plan.tiling,
        variants.join(" + "),
    )
}

/// Sizes that reach every branch of the planner's decisions (aligned and unaligned, thin,
/// small and large; 1500 is a multiple of 4 but not of 8).
const SIZES: &[u32] = &[1, 7, 129, 1000, 1500, 4096];
pub(crate) const CHOICES: &[TilingChoice] =
    &[TilingChoice::Auto, TilingChoice::Tile128, TilingChoice::Tile64, TilingChoice::SplitK, TilingChoice::Gemv];
/// One-row products of a decoder's shapes (M × N × K), which pick the bandwidth GEMV's narrow
/// forms by N and K: 2 column lanes for short rows or deep K, 4 for the projections, 8 for an
/// LM head.
const DECODE_SHAPES: &[(u32, u32, u32)] = &[(1, 1024, 2048), (1, 2048, 8192), (1, 8192, 2048), (1, 131072, 2048)];
/// Transposed operands change how slices are staged and how fragments load.
const TRANSPOSES: &[(bool, bool)] = &[(false, false), (true, false), (false, true), (true, true)];

/// Every GEMM variant the planner produces for `caps` over a grid of problems and options.
fn gemm_variants(caps: &DeviceCaps) -> BTreeMap<String, ShaderVariant> {
    let mut out = BTreeMap::new();
    let options = CHOICES.iter().flat_map(|&tiling| {
        [
            (CoopMode::Auto, false, CoopMode::Auto, CoopMode::Auto),
            (CoopMode::Off, false, CoopMode::Auto, CoopMode::Auto),
            (CoopMode::Auto, true, CoopMode::Auto, CoopMode::Auto),
            (CoopMode::Auto, false, CoopMode::On, CoopMode::Off),
            (CoopMode::Auto, false, CoopMode::On, CoopMode::On),
        ]
        .map(move |(cooperative_matrix, f32_via_f16, f32_split, f32_split_fused)| GemmOptions {
            tiling,
            cooperative_matrix,
            f32_via_f16,
            f32_split,
            f32_split_fused,
            unsplit_short_k: false,
            quick_compile: false,
        })
    });
    // The interim plans' (`graph/interim.rs`): 64×64 SIMT tiles whose stores are one loop.
    let options = options.chain([GemmOptions {
        cooperative_matrix: CoopMode::Off,
        quick_compile: true,
        ..GemmOptions::tiling(TilingChoice::Tile64)
    }]);
    for options in options {
        for dtype in [DType::F32, DType::F16] {
            let grid = TRANSPOSES.iter().flat_map(|&(ta, tb)| {
                SIZES
                    .iter()
                    .flat_map(move |&m| SIZES.iter().flat_map(move |&n| SIZES.iter().map(move |&k| (m, n, k, ta, tb))))
            });
            let decode = DECODE_SHAPES.iter().map(|&(m, n, k)| (m, n, k, false, false));
            for (m, n, k, ta, tb) in grid.chain(decode) {
                add_plan_shaders(&mut out, GemmProblem::simple(dtype, m, n, k, ta, tb), !ta && !tb, caps, &options);
            }
        }
    }
    out
}

/// The shaders `options` plan for `p` without an activation and with SiLU (Relu and Clip are
/// uniforms of the base programs; the others need `_xact`), and with a fused residual (a SiLU's:
/// SwiGLU's gate times its up projection) where neither operand is transposed.
fn add_plan_shaders(
    out: &mut BTreeMap<String, ShaderVariant>,
    mut p: GemmProblem,
    untransposed: bool,
    caps: &DeviceCaps,
    options: &GemmOptions,
) {
    for activation in [Activation::None, Activation::Silu] {
        p.epilogue.activation = activation;
        if let Ok(mut plan) = plan_gemm(&p, caps, options) {
            out.extend(plan.shaders().map(|v| (v.name(), v)));
            if untransposed {
                plan.add_output_flags(FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT);
                out.extend(plan.shaders().map(|v| (v.name(), v)));
            }
        }
    }
}

/// Declines a model's node that carries an attribute this EP's rewrites set (their names start
/// with `__ep_wgpu_`: absorbed Transposes, bounds).
fn check_reserved(node: &Node) -> Result<(), String> {
    match node.attrs.keys().find(|a| a.starts_with("__ep_wgpu_")) {
        Some(a) => Err(format!("has the attribute {a}, which this EP reserves for its own rewrites")),
        None => Ok(()),
    }
}

pub fn check_matmul(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    check_reserved(node)?;
    let (a, b) = (required(node, 0, "A")?, required(node, 1, "B")?);
    let dtype = common_dtype(node, &[a, b], opts)?;
    if a.rank() == Some(0) || b.rank() == Some(0) {
        return Err("MatMul of a scalar is invalid".into());
    }
    let inner = |v: &ValueInfo, from_end: usize| {
        v.shape.as_ref().and_then(|s| s.len().checked_sub(from_end).and_then(|i| s[i].fixed()))
    };
    let ka = inner(a, 1);
    let kb = if b.rank() == Some(1) { inner(b, 1) } else { inner(b, 2) };
    if let (Some(ka), Some(kb)) = (ka, kb) {
        if ka != kb {
            return Err(format!("inner dimensions differ ({ka} vs {kb})"));
        }
    }
    if let (Some(sa), Some(sb)) = (a.fixed_shape(), b.fixed_shape()) {
        let (problem, _) = matmul_problem(&sa, &sb, dtype).map_err(|e| e.to_string())?;
        plan_gemm(&problem, &opts.caps, &opts.gemm).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Gemm attributes with ONNX defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmAttrs {
    pub trans_a: bool,
    pub trans_b: bool,
    pub alpha: f32,
    pub beta: f32,
}

impl GemmAttrs {
    pub fn of(node: &Node) -> GemmAttrs {
        GemmAttrs {
            trans_a: node.int("transA").unwrap_or(0) != 0,
            trans_b: node.int("transB").unwrap_or(0) != 0,
            alpha: node.float("alpha").unwrap_or(1.0),
            beta: node.float("beta").unwrap_or(1.0),
        }
    }

    /// The problem for `A`/`B` shapes (rank 2), with C's broadcast layout when given.
    pub fn problem(&self, dtype: DType, a: &[u64], b: &[u64], c: Option<&[u64]>) -> Result<GemmProblem, String> {
        if a.len() != 2 || b.len() != 2 {
            return Err(format!("Gemm needs 2-D A and B, got {a:?} and {b:?}"));
        }
        let (m, ka) = if self.trans_a { (a[1], a[0]) } else { (a[0], a[1]) };
        let (kb, n) = if self.trans_b { (b[1], b[0]) } else { (b[0], b[1]) };
        if ka != kb {
            return Err(format!("Gemm inner dimensions differ ({ka} vs {kb})"));
        }
        let to32 = |v: u64| u32::try_from(v).map_err(|_| format!("dimension {v} is too large"));
        let mut p = GemmProblem::simple(dtype, to32(m)?, to32(n)?, to32(ka)?, self.trans_a, self.trans_b);
        p.epilogue.alpha = self.alpha;
        p.epilogue.beta = self.beta;
        if let Some(c) = c {
            let layout = broadcast_layout(c, &[m, n], &p).map_err(|e| e.to_string())?;
            // With beta = 0 ONNX Runtime's CPU EP never reads C, so NaN or Inf in C must not
            // reach the output as 0·NaN; C's shape is still checked, as the CPU EP does.
            p.epilogue.bias = (self.beta != 0.0).then_some(layout);
        }
        Ok(p)
    }
}

pub fn check_gemm(node: &Node, opts: &PlacementOptions) -> Result<(), String> {
    check_reserved(node)?;
    let (a, b) = (required(node, 0, "A")?, required(node, 1, "B")?);
    let mut values = vec![a, b];
    let c = node.input(2);
    values.extend(c);
    let dtype = common_dtype(node, &values, opts)?;
    for v in [a, b] {
        if matches!(v.rank(), Some(r) if r != 2) {
            return Err(format!("Gemm input '{}' is not 2-D", v.name));
        }
    }
    if matches!(c.and_then(ValueInfo::rank), Some(r) if r > 2) {
        return Err("Gemm C has rank > 2".into());
    }
    if let (Some(sa), Some(sb)) = (a.fixed_shape(), b.fixed_shape()) {
        let sc = c.map(ValueInfo::fixed_shape);
        if sc != Some(None) {
            let problem = GemmAttrs::of(node).problem(dtype, &sa, &sb, sc.flatten().as_deref())?;
            plan_gemm(&problem, &opts.caps, &opts.gemm).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

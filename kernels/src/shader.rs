//! WGSL generation from the templates in `wgsl/`, and naga validation.
//!
//! Templates only substitute numbers the planner computed and switch blocks; minijinja runs in
//! strict mode, so a missing value is an error rather than an empty string.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use minijinja::{context, Environment, UndefinedBehavior, Value};

use crate::conv::ConvVariant;
use crate::dtype::DType;
use crate::gemm::{Contig, CoopVariant, GemmVariant, TileShape};

/// What a kernel that loads eight f16 as one `vec4<u32>` (`wgsl/f16x8.wgsl.j2`) needs for
/// `unpack2x16float`; every compliant wgpu adapter has it (`DownlevelFlags::SHADER_F16_IN_F32`).
pub const F16X8_CAPS: naga::valid::Capabilities = naga::valid::Capabilities::SHADER_FLOAT16_IN_FLOAT32;

include!(concat!(env!("OUT_DIR"), "/templates.rs"));

fn env() -> &'static Environment<'static> {
    static ENV: OnceLock<Environment<'static>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.set_keep_trailing_newline(true);
        for (name, src) in TEMPLATES {
            // The templates are compiled into the binary and rendered by the goldens test for
            // every variant, so a syntax error cannot survive to a release.
            env.add_template(name, src).unwrap_or_else(|e| panic!("template {name}: {e:#}"));
        }
        env
    })
}

/// A WGSL program the runtime can compile: anything with a name and a rendering.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ShaderVariant {
    Gemm(GemmVariant),
    Conv(ConvVariant),
    /// A GEMM or direct-conv program whose epilogue also applies the extended activations
    /// (`Activation::is_extended`: one more branch, rendered with `ext_act`, name `_xact`)
    /// and/or adds a residual operand (binding 6, rendered with `residual`, name `_res`); the
    /// base programs stay as they were.
    Epilogue {
        base: Box<ShaderVariant>,
        ext_act: bool,
        residual: bool,
    },
    /// A kernel of the op registry (`crate::ops`).
    Op(OpShader),
}

/// The source of one op-registry kernel. Its name must determine its WGSL text: the name is
/// the pipeline-cache key and the golden file name.
pub trait OpSource: Send + Sync + std::fmt::Debug {
    fn name(&self) -> String;
    /// The template and its values (see [`render`]).
    fn emit(&self) -> Result<String, String>;
    /// naga capabilities beyond the WebGPU baseline (f16, subgroups).
    fn capabilities(&self) -> naga::valid::Capabilities {
        naga::valid::Capabilities::empty()
    }
    /// Whether the template bounds-checks every buffer access itself (see
    /// [`ShaderVariant::guards_every_access`]); most op kernels keep wgpu's checks.
    fn guards_every_access(&self) -> bool {
        false
    }
    /// Whether every loop of the template runs to a bound made of constants, uniforms and
    /// builtins, stepping by a positive amount that cannot wrap (see
    /// [`ShaderVariant::kept_checks`]): wgpu's loop-bounding counter is then left out, while its
    /// index clamps and division guards stay.
    fn loops_terminate(&self) -> bool {
        false
    }
}

/// An op-registry kernel, compared and hashed by name.
#[derive(Clone, Debug)]
pub struct OpShader {
    name: String,
    source: Arc<dyn OpSource>,
}

impl OpShader {
    pub fn new(source: impl OpSource + 'static) -> OpShader {
        OpShader { name: source.name(), source: Arc::new(source) }
    }
}

impl PartialEq for OpShader {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for OpShader {}

impl Hash for OpShader {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl From<OpShader> for ShaderVariant {
    fn from(v: OpShader) -> Self {
        ShaderVariant::Op(v)
    }
}

/// Renders `template` (a file of `wgsl/`) with `ctx`.
pub fn render(template: &str, ctx: Value) -> Result<String, String> {
    env().get_template(template).and_then(|t| t.render(ctx)).map_err(|e| format!("rendering {template}: {e:#}"))
}

impl ShaderVariant {
    /// Whether the template bounds-checks every buffer access itself against the uniforms the
    /// planner sized the bindings for (and the planner proved vector loads whole), so wgpu's
    /// injected checks are redundant. The SIMT, GEMV and reduction kernels qualify, and so do
    /// the cooperative-matrix kernels of wide loads: their global loads are guarded along M, N
    /// and K (the planner proved each chunk wholly inside or outside the matrix), their stores
    /// along M and N, and their workgroup indices are the tile geometry's constants (measured
    /// on the H200: +2–4% at 2048–4096, docs/PERFORMANCE.md, "Copies by a kernel"). The coop
    /// kernels of scalar loads keep wgpu's checks (without them they measured erratically), and
    /// so do the conv kernels. An op kernel says so itself ([`OpSource::guards_every_access`]).
    /// The runtime checks wgpu must still inject into this variant, where it may leave some out:
    /// none for the self-guarding kernels ([`Self::guards_every_access`]); index clamps and
    /// division guards but no loop-bounding counter for kernels whose loops provably end
    /// ([`OpSource::loops_terminate`]: the counter cost the tensor-core attention 20 µs per
    /// f32 dispatch on an H100, docs/PERFORMANCE.md, forty-second session). `None`: all of them.
    pub fn kept_checks(&self) -> Option<crate::runtime::KeptChecks> {
        if self.guards_every_access() {
            return Some(crate::runtime::KeptChecks::default());
        }
        match self {
            ShaderVariant::Op(v) if v.source.loops_terminate() => {
                Some(crate::runtime::KeptChecks { bounds: true, loop_bounding: false, int_div: true })
            }
            _ => None,
        }
    }

    pub fn guards_every_access(&self) -> bool {
        match self {
            ShaderVariant::Epilogue { base, .. } => return base.guards_every_access(),
            ShaderVariant::Op(v) => return v.source.guards_every_access(),
            ShaderVariant::Gemm(GemmVariant::Coop(c)) => return c.width > 1,
            _ => {}
        }
        matches!(
            self,
            ShaderVariant::Gemm(
                GemmVariant::Tiled { .. }
                    | GemmVariant::TiledVec { .. }
                    | GemmVariant::Gemv { .. }
                    | GemmVariant::GemvVec(_)
                    | GemmVariant::SplitKReduce { .. }
                    | GemmVariant::AbsMax
            )
        )
    }

    pub fn name(&self) -> String {
        match self {
            ShaderVariant::Gemm(v) => v.name(),
            ShaderVariant::Conv(v) => v.name(),
            ShaderVariant::Epilogue { base, ext_act, residual } => {
                format!("{}{}{}", base.name(), if *ext_act { "_xact" } else { "" }, if *residual { "_res" } else { "" })
            }
            ShaderVariant::Op(v) => v.name.clone(),
        }
    }

    /// Whether it runs on tensor cores: cooperative matrices, or their emulated form (the
    /// `_coop` kernels).
    pub fn uses_tensor_cores(&self) -> bool {
        self.capabilities().contains(naga::valid::Capabilities::COOPERATIVE_MATRIX) || self.name().contains("_coop")
    }

    /// naga capabilities the program needs beyond the WebGPU baseline. Coop kernels stage
    /// operands in f16 whatever the storage type; emulated ones need nothing more.
    pub fn capabilities(&self) -> naga::valid::Capabilities {
        let mut caps = naga::valid::Capabilities::empty();
        let (dtype, coop) = match self {
            ShaderVariant::Gemm(GemmVariant::Coop(c)) => (c.dtype, Some(c)),
            ShaderVariant::Gemm(v) => (v.dtype(), None),
            ShaderVariant::Conv(v) => (v.dtype(), None),
            ShaderVariant::Epilogue { base, .. } => return base.capabilities(),
            ShaderVariant::Op(v) => return v.source.capabilities(),
        };
        if dtype == DType::F16 || coop.is_some() {
            caps |= naga::valid::Capabilities::SHADER_FLOAT16;
        }
        if coop.is_some_and(|c| !c.emulate) {
            caps |= naga::valid::Capabilities::COOPERATIVE_MATRIX;
        }
        if coop.is_some_and(|c| c.subgroup_sync) {
            caps |= naga::valid::Capabilities::SUBGROUP | naga::valid::Capabilities::SUBGROUP_BARRIER;
        }
        let f16_words = matches!(self, ShaderVariant::Gemm(GemmVariant::GemvVec(g)) if g.dtype == DType::F16);
        if coop.is_some_and(|c| c.width == 8) || f16_words {
            caps |= F16X8_CAPS;
        }
        caps
    }

    /// The WGSL source of this variant.
    pub fn emit(&self) -> Result<String, String> {
        let ((template, ctx), (ext_act, residual)) = match self {
            ShaderVariant::Gemm(v) => (gemm_context(*v), (false, false)),
            ShaderVariant::Conv(v) => (v.template_context(), (false, false)),
            ShaderVariant::Epilogue { base, ext_act, residual } => match base.as_ref() {
                ShaderVariant::Gemm(v) => (gemm_context(*v), (*ext_act, *residual)),
                ShaderVariant::Conv(v) => (v.template_context(), (*ext_act, *residual)),
                _ => return Err(format!("{}: only GEMM and conv programs have an epilogue", self.name())),
            },
            ShaderVariant::Op(v) => return v.source.emit().map_err(|e| format!("{}: {e}", v.name)),
        };
        env()
            .get_template(template)
            .and_then(|t| t.render(context! { ext_act, residual, ..ctx }))
            .map_err(|e| format!("rendering {}: {e:#}", self.name()))
    }
}

/// The one-row narrow GEMV `base` with a SkipSimplifiedLayerNormalization folded into its A
/// (`wgsl/gemv_vec.wgsl.j2` with `norm`; `ops/matmul_norm.rs`); with `dual`, SwiGLU's gate and
/// up projections in one (its loads in flight split between the two weights).
pub(crate) fn gemv_norm_text(
    base: crate::gemm::GemvVec,
    ext_act: bool,
    residual: bool,
    dual: bool,
) -> Result<String, String> {
    let unroll = if dual { base.loads_in_flight() / 2 } else { base.loads_in_flight() };
    let (template, ctx) = gemm_context(GemmVariant::GemvVec(base));
    render(template, context! { ext_act, residual, dual, unroll, norm => true, ..ctx })
}

impl ShaderVariant {
    /// `base`, or its `Epilogue` form when `flags` (a GEMM or conv uniform) hold an extended
    /// activation or a residual.
    pub fn with_epilogue(base: ShaderVariant, flags: u32) -> ShaderVariant {
        let ext_act = flags >> crate::gemm::EXT_ACT_SHIFT & 15 != 0;
        let residual = flags & crate::gemm::FLAG_RESIDUAL != 0;
        if ext_act || residual {
            ShaderVariant::Epilogue { base: Box::new(base), ext_act, residual }
        } else {
            base
        }
    }

    /// Whether the program reads a residual operand at binding 6.
    pub fn reads_residual(&self) -> bool {
        matches!(self, ShaderVariant::Epilogue { residual: true, .. })
    }
}

impl From<GemmVariant> for ShaderVariant {
    fn from(v: GemmVariant) -> Self {
        ShaderVariant::Gemm(v)
    }
}

impl From<ConvVariant> for ShaderVariant {
    fn from(v: ConvVariant) -> Self {
        ShaderVariant::Conv(v)
    }
}

/// Values common to every template: the storage type and whether f16 is enabled.
pub fn dtype_context(dtype: DType) -> Value {
    context! { t => dtype.wgsl(), f16 => dtype == DType::F16 }
}

fn gemm_context(v: GemmVariant) -> (&'static str, Value) {
    match v {
        GemmVariant::TiledVec { dtype, shape, split_k, a, b, implicit_b, a_scalar, quick } => {
            let ctx = simt_vec_context(dtype, shape, split_k, a, b, implicit_b, a_scalar);
            ("gemm_simt_vec.wgsl.j2", context! { quick, ..ctx })
        }
        GemmVariant::Coop(c) => ("gemm_coop.wgsl.j2", coop_context(c)),
        GemmVariant::Tiled { dtype, shape, split_k } => {
            let [wg_x, wg_y] = shape.workgroup();
            let threads = shape.invocations();
            let ctx = context! {
                ..dtype_context(dtype),
                ..context! {
                    out_t => if split_k { "f32" } else { dtype.wgsl() },
                    split_k,
                    bm => shape.bm, bn => shape.bn, bk => shape.bk, tm => shape.tm, tn => shape.tn,
                    wg_x, wg_y, threads,
                    a_loads => shape.bm * shape.bk / threads,
                    b_loads => shape.bk * shape.bn / threads,
                }
            };
            ("gemm_tiled.wgsl.j2", ctx)
        }
        GemmVariant::Gemv { dtype, shape } => (
            "gemv.wgsl.j2",
            context! { ..dtype_context(dtype), ..context! { rows => shape.rows, threads => shape.threads, wide => shape.wide } },
        ),
        GemmVariant::GemvVec(g) => {
            let out_t = if g.split_k { "f32" } else { g.dtype.wgsl() };
            let ctx = context! {
                rows => g.rows, ct => g.column_lanes(), kt => g.k_lanes(), vec => g.vec(),
                groups => g.vec() / 4, unroll => g.loads_in_flight(), split_k => g.split_k, out_t, norm => false,
                dual => false,
            };
            ("gemv_vec.wgsl.j2", context! { ..dtype_context(g.dtype), ..ctx })
        }
        GemmVariant::SplitKReduce { dtype, threads } => {
            ("splitk_reduce.wgsl.j2", context! { ..dtype_context(dtype), ..context! { threads } })
        }
        GemmVariant::AbsMax => ("absmax.wgsl.j2", context! { threads => GemmVariant::ABSMAX_THREADS }),
    }
}

/// The numbers of the vec4 SIMT kernel. Staged rows are K-major with one vec4 of padding.
fn simt_vec_context(
    dtype: DType,
    shape: TileShape,
    split_k: bool,
    a: Contig,
    b: Contig,
    implicit_b: bool,
    a_scalar: bool,
) -> Value {
    let [wg_x, wg_y] = shape.workgroup();
    let threads = shape.invocations();
    // Chunks per row of the global slice: along K when K is contiguous, else along M (N).
    let a_cpr = if a == Contig::K { shape.bk / 4 } else { shape.bm / 4 };
    let b_cpr = if b == Contig::K { shape.bk / 4 } else { shape.bn / 4 };
    context! {
        ..dtype_context(dtype),
        ..context! {
            out_t => if split_k { "f32" } else { dtype.wgsl() },
            split_k,
            bm => shape.bm, bn => shape.bn, bk => shape.bk, tm => shape.tm, tn => shape.tn,
            wg_x, wg_y, threads,
            sav => shape.bm / 4 + 1, sbv => shape.bn / 4 + 1,
            a_kc => a == Contig::K, b_nc => b == Contig::Mn,
            implicit_b, a_scalar,
            a_cpr, b_cpr,
            a_loads => shape.bm * shape.bk / 4 / threads,
            b_loads => shape.bn * shape.bk / 4 / threads,
        }
    }
}

/// The numbers of a cooperative-matrix kernel (see `gemm_coop.wgsl.j2`).
fn coop_context(c: CoopVariant) -> Value {
    let s = c.shape;
    let vw = c.width;
    let threads = s.invocations();
    let [fm, fn_] = s.frags();
    let (sa, rows_a) = s.staged(s.bm, c.a_staged());
    let (sb, rows_b) = s.staged(s.bn, c.b_staged());
    let (in_elem, zero_reg) = match (vw, c.dtype) {
        // Eight f16 as one 16-byte word (wgsl/f16x8.wgsl.j2).
        (8, _) => ("vec4<u32>", "vec4<u32>()"),
        (4, DType::F16) => ("vec4<f16>", "vec4<f16>()"),
        (4, DType::F32) => ("vec4<f32>", "vec4<f32>()"),
        (_, DType::F16) => ("f16", "f16(0.0)"),
        (_, DType::F32) => ("f32", "0.0"),
    };
    // Global chunks run along each operand's contiguous dimension; chunks per slice row.
    let a_cpr = if c.a == Contig::K { s.bk } else { s.bm } / vw;
    let b_cpr = if c.b == Contig::K { s.bk } else { s.bn } / vw;
    context! {
        t => c.dtype.wgsl(),
        out_t => if c.split_k { "f32" } else { c.dtype.wgsl() },
        split_k => c.split_k,
        emulate => c.emulate,
        subgroup_sync => c.subgroup_sync,
        split => c.split,
        fused => c.split && c.fused,
        bm => s.bm, bn => s.bn, bk => s.bk, sg_m => s.sg_m, sg_n => s.sg_n, stages => s.stages, depth => s.depth,
        subgroups => s.subgroups(), threads, fm, fn => fn_, vw,
        sa, sb, a_stage => sa * rows_a, b_stage => sb * rows_b,
        // Staged layouts decide how fragments load; global layouts how slices are fetched.
        a_kc => c.a_staged() == Contig::K, b_nc => c.b_staged() == Contig::Mn,
        a_gk => c.a == Contig::K, b_gn => c.b == Contig::Mn,
        a_cpr, b_cpr,
        sets => if s.depth == 2 { vec!["", "x"] } else { vec![""] },
        // Chunks per invocation; a slice with fewer chunks than invocations is loaded by the
        // first `*_part` of them (0: every invocation loads).
        a_loads => (s.bm * s.bk / vw / threads).max(1),
        b_loads => (s.bn * s.bk / vw / threads).max(1),
        a_part => if s.bm * s.bk / vw < threads { s.bm * s.bk / vw } else { 0 },
        b_part => if s.bn * s.bk / vw < threads { s.bn * s.bk / vw } else { 0 },
        in_elem, zero_reg,
    }
}

/// Parses and validates WGSL with exactly `caps`; returns the module for inspection.
pub fn validate(source: &str, caps: naga::valid::Capabilities) -> Result<naga::Module, String> {
    validate_with_info(source, caps).map(|(module, _)| module)
}

/// [`validate`], also returning naga's analysis (what its backends take).
pub fn validate_with_info(
    source: &str,
    caps: naga::valid::Capabilities,
) -> Result<(naga::Module, naga::valid::ModuleInfo), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    Ok((module, info))
}

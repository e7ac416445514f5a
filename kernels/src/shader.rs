//! WGSL generation from the templates in `wgsl/`, and naga validation.
//!
//! Templates only substitute numbers the planner computed and switch blocks; minijinja runs in
//! strict mode, so a missing value is an error rather than an empty string.

use std::sync::OnceLock;

use minijinja::{context, Environment, UndefinedBehavior, Value};

use crate::conv::ConvVariant;
use crate::dtype::DType;
use crate::gemm::GemmVariant;

/// Every template, embedded at build time (name, source).
const TEMPLATES: &[(&str, &str)] = &[
    ("gemm_common.wgsl.j2", include_str!("../../wgsl/gemm_common.wgsl.j2")),
    ("gemm_tiled.wgsl.j2", include_str!("../../wgsl/gemm_tiled.wgsl.j2")),
    ("gemv.wgsl.j2", include_str!("../../wgsl/gemv.wgsl.j2")),
    ("splitk_reduce.wgsl.j2", include_str!("../../wgsl/splitk_reduce.wgsl.j2")),
    ("conv_common.wgsl.j2", include_str!("../../wgsl/conv_common.wgsl.j2")),
    ("im2col.wgsl.j2", include_str!("../../wgsl/im2col.wgsl.j2")),
    ("conv_direct.wgsl.j2", include_str!("../../wgsl/conv_direct.wgsl.j2")),
];

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShaderVariant {
    Gemm(GemmVariant),
    Conv(ConvVariant),
}

impl ShaderVariant {
    pub fn name(self) -> String {
        match self {
            ShaderVariant::Gemm(v) => v.name(),
            ShaderVariant::Conv(v) => v.name(),
        }
    }

    pub fn dtype(self) -> DType {
        match self {
            ShaderVariant::Gemm(v) => v.dtype(),
            ShaderVariant::Conv(v) => v.dtype(),
        }
    }

    /// naga capabilities the program needs beyond the WebGPU baseline.
    pub fn capabilities(self) -> naga::valid::Capabilities {
        let mut caps = naga::valid::Capabilities::empty();
        if self.dtype() == DType::F16 {
            caps |= naga::valid::Capabilities::SHADER_FLOAT16;
        }
        caps
    }

    /// The WGSL source of this variant.
    pub fn emit(self) -> Result<String, String> {
        let (template, ctx) = match self {
            ShaderVariant::Gemm(v) => gemm_context(v),
            ShaderVariant::Conv(v) => v.template_context(),
        };
        env()
            .get_template(template)
            .and_then(|t| t.render(ctx))
            .map_err(|e| format!("rendering {}: {e:#}", self.name()))
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
        GemmVariant::SplitKReduce { dtype, threads } => {
            ("splitk_reduce.wgsl.j2", context! { ..dtype_context(dtype), ..context! { threads } })
        }
    }
}

/// Parses and validates WGSL with exactly `caps`; returns the module for inspection.
pub fn validate(source: &str, caps: naga::valid::Capabilities) -> Result<naga::Module, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps)
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    Ok(module)
}

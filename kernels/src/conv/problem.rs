//! What an ONNX `Conv` node computes, resolved to plain numbers.
//!
//! [`resolve`] is the single place where ONNX attributes meet tensor shapes: it validates them,
//! applies `auto_pad` and turns a 1-D convolution into a 2-D one of height 1, so everything
//! downstream (planner, shaders, runtime) only ever sees an explicit 2-D [`ConvProblem`].

use crate::dtype::DType;
use crate::error::PlanError;
use crate::gemm::Activation;

/// ONNX `auto_pad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum AutoPad {
    /// Use the explicit `pads` attribute.
    #[default]
    NotSet,
    /// Pad so that `out = ceil(in / stride)`, the odd extra pixel at the end.
    SameUpper,
    /// As `SameUpper`, the odd extra pixel at the beginning.
    SameLower,
    /// No padding.
    Valid,
}

impl std::str::FromStr for AutoPad {
    type Err = PlanError;
    fn from_str(s: &str) -> Result<Self, PlanError> {
        match s {
            "" | "NOTSET" => Ok(AutoPad::NotSet),
            "SAME_UPPER" => Ok(AutoPad::SameUpper),
            "SAME_LOWER" => Ok(AutoPad::SameLower),
            "VALID" => Ok(AutoPad::Valid),
            _ => Err(PlanError::Invalid(format!("auto_pad '{s}' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID"))),
        }
    }
}

/// The raw attributes of an ONNX `Conv` node, as the model states them. Empty vectors mean
/// "attribute absent" (ONNX defaults: pads 0, strides 1, dilations 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvAttrs {
    pub auto_pad: AutoPad,
    /// `[x1_begin, x2_begin, …, x1_end, x2_end, …]`.
    pub pads: Vec<i64>,
    pub strides: Vec<i64>,
    pub dilations: Vec<i64>,
    /// ONNX default 1.
    pub group: i64,
    /// Spatial kernel size; inferred from W when absent.
    pub kernel_shape: Option<Vec<i64>>,
}

impl ConvAttrs {
    /// The attributes of a node that states none: the ONNX defaults.
    pub fn new() -> Self {
        ConvAttrs {
            auto_pad: AutoPad::NotSet,
            pads: Vec::new(),
            strides: Vec::new(),
            dilations: Vec::new(),
            group: 1,
            kernel_shape: None,
        }
    }
}

impl Default for ConvAttrs {
    fn default() -> Self {
        ConvAttrs::new()
    }
}

/// The tensors of a `Conv` node: shapes of X, W and the optional bias B, and the element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvInputs<'a> {
    pub x: &'a [u64],
    pub w: &'a [u64],
    pub bias: Option<&'a [u64]>,
    pub dtype: DType,
}

/// One 2-D convolution over NCHW input and OIHW weights, with explicit padding; a 1-D
/// convolution appears here with `h = kh = oh = 1`.
/// Where a fused residual Add joins a conv's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Residual {
    #[default]
    None,
    /// `act(conv + r)`, ResNet's `Conv → BN → Add → Relu`.
    BeforeActivation,
    /// `act(conv) + r`.
    AfterActivation,
}

impl Residual {
    /// Its epilogue flag bits.
    pub fn flags(self) -> u32 {
        use crate::gemm::{FLAG_RESIDUAL, FLAG_RESIDUAL_AFTER_ACT};
        match self {
            Residual::None => 0,
            Residual::BeforeActivation => FLAG_RESIDUAL,
            Residual::AfterActivation => FLAG_RESIDUAL | FLAG_RESIDUAL_AFTER_ACT,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ConvProblem {
    pub dtype: DType,
    pub n: u32,
    pub c: u32,
    pub h: u32,
    pub w: u32,
    /// Output channels.
    pub m: u32,
    pub kh: u32,
    pub kw: u32,
    pub oh: u32,
    pub ow: u32,
    /// Top, left, bottom, right.
    pub pads: [u32; 4],
    /// Along height, width.
    pub strides: [u32; 2],
    pub dilations: [u32; 2],
    pub group: u32,
    pub has_bias: bool,
    /// Applied after the bias; the provider sets it when it fuses a following Relu/Clip.
    pub activation: Activation,
    /// A fused residual Add (a fourth operand of the output's shape).
    pub residual: Residual,
    /// The output shape ONNX reports: rank 3 for a 1-D convolution, rank 4 for 2-D (channels
    /// last with `channels_last`).
    pub output_shape: Vec<u64>,
    /// The output is stored channels last (`[N, L, M]`, `[N, OH, OW, M]`): the conv absorbed the
    /// Transpose that moves its channels there, and its GEMM stores through transposed strides.
    pub channels_last: bool,
}

impl ConvProblem {
    pub fn c_per_group(&self) -> u32 {
        self.c / self.group
    }

    pub fn m_per_group(&self) -> u32 {
        self.m / self.group
    }

    /// Output pixels per image and channel: the N dimension of the GEMM.
    pub fn pixels(&self) -> u64 {
        (self.oh as u64).saturating_mul(self.ow as u64)
    }

    /// Reduction length of one output: the K dimension of a group's GEMM.
    pub fn k_per_group(&self) -> u64 {
        (self.c_per_group() as u64).saturating_mul(self.kh as u64).saturating_mul(self.kw as u64)
    }

    pub fn input_len(&self) -> u64 {
        (self.n as u64).saturating_mul(self.c as u64).saturating_mul(self.h as u64).saturating_mul(self.w as u64)
    }

    pub fn weight_len(&self) -> u64 {
        (self.m as u64).saturating_mul(self.k_per_group())
    }

    pub fn output_len(&self) -> u64 {
        (self.n as u64).saturating_mul(self.m as u64).saturating_mul(self.pixels())
    }

    /// Multiply-accumulates of the whole convolution. The sizes saturate: a declared problem
    /// past u64 only ever fails a limit check.
    pub fn macs(&self) -> u64 {
        self.output_len().saturating_mul(self.k_per_group())
    }

    /// A 1×1 kernel with unit stride and no padding reads X exactly as a GEMM operand.
    pub fn is_pointwise(&self) -> bool {
        self.kh == 1 && self.kw == 1 && self.strides == [1, 1] && self.pads == [0; 4]
    }

    /// Stores the output channels last: the output shape's channel axis moves to the end (with
    /// `flat`, a 2-D conv's pixels merged: `[N, OH·OW, M]`).
    pub fn set_channels_last(&mut self, flat: bool) {
        if !self.channels_last && self.output_shape.len() > 2 {
            let m = self.output_shape.remove(1);
            if flat {
                self.output_shape.truncate(1);
                self.output_shape.push(self.pixels());
            }
            self.output_shape.push(m);
        }
        self.channels_last = true;
    }
}

/// Validates a `Conv` node and resolves it to a 2-D problem.
///
/// `conv1d_as_conv2d` (provider option, default on) lets a 1-D convolution run as a 2-D one of
/// height 1, the only 1-D path there is; with it off, 1-D nodes are declined so another
/// provider runs them. 3-D convolutions are declined.
pub fn resolve(inputs: &ConvInputs<'_>, attrs: &ConvAttrs, conv1d_as_conv2d: bool) -> Result<ConvProblem, PlanError> {
    let (x, w) = (inputs.x, inputs.w);
    let spatial = match x.len() {
        3 if conv1d_as_conv2d => 1,
        3 => return Err(invalid("1-D Conv runs as 2-D with height 1, and the option conv1d_as_conv2d is off")),
        4 => 2,
        5 => return Err(invalid("3-D Conv is not supported (only 1-D and 2-D)")),
        r => return Err(invalid(format!("Conv input X must have rank 3 or 4, got rank {r} ({x:?})"))),
    };
    if w.len() != x.len() {
        return Err(invalid(format!("Conv weight W {w:?} must have the rank of X {x:?}")));
    }
    if let Some(&big) = x.iter().chain(w).find(|&&d| d > u32::MAX as u64) {
        return Err(PlanError::IndexOverflow { what: "a Conv dimension", value: big });
    }
    if x.contains(&0) || w.contains(&0) {
        return Err(invalid(format!("Conv with an empty tensor (X {x:?}, W {w:?}) is left to other providers")));
    }
    let group = positive("group", attrs.group)?;
    let (c, m, c_per_group) = (x[1], w[0], w[1]);
    if c != c_per_group * group as u64 {
        return Err(invalid(format!(
            "X has {c} channels but W {w:?} with group {group} expects {}",
            c_per_group * group as u64
        )));
    }
    if m % group as u64 != 0 {
        return Err(invalid(format!("{m} output channels are not divisible by group {group}")));
    }
    if let Some(b) = inputs.bias {
        if b != [m] {
            return Err(invalid(format!("bias B {b:?} must have shape [{m}]")));
        }
    }
    let kernel = &w[2..];
    if let Some(ks) = &attrs.kernel_shape {
        if ks.len() != spatial || ks.iter().zip(kernel).any(|(&a, &b)| a < 0 || a as u64 != b) {
            return Err(invalid(format!("kernel_shape {ks:?} does not match W {w:?}")));
        }
    }
    let strides = per_axis("strides", &attrs.strides, spatial)?;
    let dilations = per_axis("dilations", &attrs.dilations, spatial)?;
    let explicit = explicit_pads(attrs, spatial)?;
    let mut pads = [0u64; 4];
    let mut out = [1u64; 2];
    // Axis 0 of a 1-D conv is the width (index 1 of the 2-D arrays); height stays 1.
    let offset = 2 - spatial;
    for i in 0..spatial {
        let axis = Axis { input: x[2 + i], kernel: kernel[i], stride: strides[i], dilation: dilations[i] };
        let (begin, end, len) = axis.resolve(attrs.auto_pad, explicit[i], explicit[spatial + i])?;
        pads[offset + i] = begin;
        pads[offset + 2 + i] = end;
        out[offset + i] = len;
    }
    let mut output_shape = vec![x[0], m];
    output_shape.extend_from_slice(&out[offset..]);
    let pad = |i: usize| to_u32("pad", pads[i]);
    let (h, w_in) = if spatial == 1 { (1, x[2]) } else { (x[2], x[3]) };
    let (kh, kw) = if spatial == 1 { (1, kernel[0]) } else { (kernel[0], kernel[1]) };
    let axis2 = |v: &[u32]| if spatial == 1 { [1, v[0]] } else { [v[0], v[1]] };
    Ok(ConvProblem {
        dtype: inputs.dtype,
        n: to_u32("N", x[0])?,
        c: to_u32("C", c)?,
        h: to_u32("H", h)?,
        w: to_u32("W", w_in)?,
        m: to_u32("M", m)?,
        kh: to_u32("kernel height", kh)?,
        kw: to_u32("kernel width", kw)?,
        oh: to_u32("output height", out[0])?,
        ow: to_u32("output width", out[1])?,
        pads: [pad(0)?, pad(1)?, pad(2)?, pad(3)?],
        strides: axis2(&strides),
        dilations: axis2(&dilations),
        group,
        has_bias: inputs.bias.is_some(),
        activation: Activation::None,
        residual: Residual::None,
        output_shape,
        channels_last: false,
    })
}

/// One spatial axis of the convolution.
struct Axis {
    input: u64,
    kernel: u64,
    stride: u32,
    dilation: u32,
}

impl Axis {
    /// `(pad_begin, pad_end, output_len)` for this axis.
    fn resolve(&self, auto_pad: AutoPad, begin: u64, end: u64) -> Result<(u64, u64, u64), PlanError> {
        let stride = self.stride as u64;
        // Dimensions are checked to fit u32, so only the padding sums need saturating.
        let reach = (self.kernel - 1) * self.dilation as u64 + 1;
        let (begin, end) = match auto_pad {
            AutoPad::NotSet => (begin, end),
            AutoPad::Valid => (0, 0),
            AutoPad::SameUpper | AutoPad::SameLower => {
                // ONNX: pad until out = ceil(in / stride). When the stride skips past the kernel
                // the needed padding is negative; ONNX Runtime then trims the tail, which never
                // changes a result, so it is clamped to 0 here.
                let target = self.input.div_ceil(stride);
                let total = ((target - 1) * stride).saturating_add(reach).saturating_sub(self.input);
                let head = if auto_pad == AutoPad::SameLower { total.div_ceil(2) } else { total / 2 };
                (head, total - head)
            }
        };
        let padded = self.input.saturating_add(begin).saturating_add(end);
        if padded < reach {
            return Err(invalid(format!(
                "the kernel spans {reach} pixels (size {}, dilation {}) but the padded input has only {padded}",
                self.kernel, self.dilation
            )));
        }
        Ok((begin, end, (padded - reach) / stride + 1))
    }
}

fn explicit_pads(attrs: &ConvAttrs, spatial: usize) -> Result<Vec<u64>, PlanError> {
    // With auto_pad set ONNX Runtime ignores `pads`; so does this.
    if attrs.pads.is_empty() || attrs.auto_pad != AutoPad::NotSet {
        return Ok(vec![0; 2 * spatial]);
    }
    if attrs.pads.len() != 2 * spatial {
        return Err(invalid(format!("pads {:?} must have {} values", attrs.pads, 2 * spatial)));
    }
    attrs
        .pads
        .iter()
        .map(|&p| u64::try_from(p).map_err(|_| invalid(format!("negative pads {:?} are not supported", attrs.pads))))
        .collect()
}

fn per_axis(what: &str, values: &[i64], spatial: usize) -> Result<Vec<u32>, PlanError> {
    if values.is_empty() {
        return Ok(vec![1; spatial]);
    }
    if values.len() != spatial {
        return Err(invalid(format!("{what} {values:?} must have {spatial} values")));
    }
    values.iter().map(|&v| positive(what, v)).collect()
}

fn positive(what: &str, v: i64) -> Result<u32, PlanError> {
    u32::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| invalid(format!("{what} must be ≥ 1, got {v}")))
}

fn to_u32(what: &'static str, v: u64) -> Result<u32, PlanError> {
    u32::try_from(v).map_err(|_| PlanError::IndexOverflow { what, value: v })
}

fn invalid(reason: impl Into<String>) -> PlanError {
    PlanError::Invalid(reason.into())
}

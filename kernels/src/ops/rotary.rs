//! RotaryEmbedding (com.microsoft, as onnxruntime-genai's models use it before
//! GroupQueryAttention): X `[B, S, N·D]` or `[B, N, S, D]`, int64 position ids (one start
//! position or `[B, S]`), cos and sin caches `[max_positions, rot / 2]`. Each head's first `rot`
//! elements rotate in pairs (interleaved or halves) by their position's angle, as ONNX Runtime's
//! CPU kernel computes; the rest pass through. `scale` is accepted (the CPU kernel ignores it
//! too); `is_packed_batching=1` declines. A position outside the caches fails the run.
//!
//! ONNX's own RotaryEmbedding (opset 23) is the same kernel with its inputs in another order
//! (X, cos_cache, sin_cache, optional position_ids): without position ids the caches are
//! `[B, S, rot / 2]`, one row per token, which the kernel reads as rows `b·S + s`.

use bytemuck::{Pod, Zeroable};

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::norm::{check_bindings, float_types, input_type};
use crate::ops::planned::{required, step_plan, OpDispatch};
use crate::ops::StepPlan;
use crate::ops::{check_f16, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::{render, OpShader, OpSource, ShaderVariant};

/// The definitions of this family: com.microsoft's and ONNX's RotaryEmbedding.
pub static OPS: &[&dyn OpDef] = &[&RotaryDef { onnx: false }, &RotaryDef { onnx: true }];

struct RotaryDef {
    /// ONNX's op (default domain, opset 23): inputs X, cos_cache, sin_cache, position_ids.
    onnx: bool,
}

impl OpDef for RotaryDef {
    fn names(&self) -> &'static [&'static str] {
        &["RotaryEmbedding"]
    }

    fn domain(&self) -> &'static str {
        if self.onnx {
            ""
        } else {
            "com.microsoft"
        }
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_f16(node, opts)?;
        let kernel = RotaryKernel::of(node)?;
        // Declared shapes, absent optional inputs as None; all known: infer declines a misfit.
        let shapes: Option<Vec<Option<Vec<u64>>>> = (0..4)
            .map(|i| if node.has_input(i) { node.input(i).and_then(|v| v.fixed_shape()).map(Some) } else { Some(None) })
            .collect();
        if let Some(shapes) = shapes {
            let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| s.as_deref()).collect();
            kernel.infer(&refs)?;
        }
        Ok(())
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(RotaryKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let elems: u64 = node.input(0)?.fixed_shape()?.iter().product();
        Some(3.0 * elems as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        float_types(caps).into_iter().map(|ty| ShaderVariant::Op(OpShader::new(RotarySource { ty }))).collect()
    }
}

/// One RotaryEmbedding node.
#[derive(Clone, Debug, PartialEq)]
pub struct RotaryKernel {
    pub name: String,
    /// ONNX's op (inputs X, cos, sin, position_ids) rather than com.microsoft's (X, position_ids, cos, sin).
    pub onnx: bool,
    pub ty: ElemType,
    pub interleaved: bool,
    /// The attributes (0: not given).
    pub num_heads: u64,
    pub rotary_dim: u64,
}

/// How one RotaryEmbedding runs at given shapes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Geometry {
    seq: u64,
    heads: u64,
    head: u64,
    half: u64,
    max_seq: u64,
    transposed: bool,
    one_position: bool,
    /// No position ids (ONNX): the caches hold one row per token, read as row `b·S + s`.
    token_rows: bool,
}

/// Where com.microsoft's inputs (X, position_ids, cos_cache, sin_cache) sit in ONNX's node.
const ONNX_SLOTS: [usize; 4] = [0, 3, 1, 2];

impl RotaryKernel {
    pub fn of(node: &Node) -> Result<RotaryKernel, String> {
        let op = &node.op_type;
        let onnx = node.domain.is_empty() || node.domain == "ai.onnx";
        if onnx && node.since_version < 23 {
            return Err(format!("{op} of opset {} (ONNX defines it from 23)", node.since_version));
        }
        let slot = |i: usize| if onnx { ONNX_SLOTS[i] } else { i };
        let ty = input_type(node, 0, "input")?;
        if !ty.is_float() {
            return Err(format!("{op} of {} is not supported", ty.name()));
        }
        if (!onnx || node.has_input(slot(1))) && input_type(node, slot(1), "position_ids")? != ElemType::I64 {
            return Err(format!("{op} with position ids that are not int64 is not supported"));
        }
        for (i, what) in [(2, "cos_cache"), (3, "sin_cache")] {
            if input_type(node, slot(i), what)? != ty {
                return Err(format!("{op} with a {what} of another type than its input is not supported"));
            }
        }
        let y = node.output(0).filter(|v| !v.name.is_empty()).ok_or_else(|| format!("{op} without its output"))?;
        if ElemType::from_onnx(y.elem_type) != Some(ty) {
            return Err(format!("{op} with an output of another type than its input is not supported"));
        }
        if node.int("is_packed_batching").unwrap_or(0) != 0 {
            return Err(format!("{op} with is_packed_batching=1 is not supported"));
        }
        let interleaved = match node.int("interleaved").unwrap_or(0) {
            0 => false,
            1 => true,
            v => return Err(format!("{op} with interleaved={v} (0 or 1)")),
        };
        let num_heads = node.int("num_heads").unwrap_or(0);
        let rotary_dim = node.int("rotary_embedding_dim").unwrap_or(0);
        if num_heads < 0 || rotary_dim < 0 {
            return Err(format!(
                "{op} with num_heads={num_heads}, rotary_embedding_dim={rotary_dim}: neither may be negative"
            ));
        }
        Ok(RotaryKernel {
            name: node.name.clone(),
            onnx,
            ty,
            interleaved,
            num_heads: num_heads as u64,
            rotary_dim: rotary_dim as u64,
        })
    }

    /// The node's inputs in com.microsoft's order (X, position_ids, cos_cache, sin_cache).
    fn logical<T: Copy>(&self, inputs: &[Option<T>]) -> [Option<T>; 4] {
        let at = |i: usize| inputs.get(if self.onnx { ONNX_SLOTS[i] } else { i }).copied().flatten();
        [at(0), at(1), at(2), at(3)]
    }

    fn geometry(&self, inputs: &[Option<&[u64]>]) -> Result<Geometry, String> {
        let [x, pos, cos, sin] = self.logical(inputs);
        let lacks = |what: &str| format!("lacks its {what}");
        let (x, cos, sin) = (
            x.ok_or_else(|| lacks("input"))?,
            cos.ok_or_else(|| lacks("cos_cache"))?,
            sin.ok_or_else(|| lacks("sin_cache"))?,
        );
        let (batch, seq, hidden, transposed) = match *x {
            [b, s, h] => (b, s, h, false),
            [b, n, s, d] => (b, s, n * d, true),
            _ => return Err(format!("input {x:?} must have 3 or 4 dimensions")),
        };
        let token_rows = pos.is_none();
        if token_rows && !self.onnx {
            return Err("lacks its position_ids".into());
        }
        let (max_seq, half) = match (cos, token_rows) {
            (&[rows, half], false) => (rows, half),
            (&[b, s, half], true) if b == batch && s == seq => (b * s, half),
            _ => {
                let want = if token_rows { "[batch, sequence, rot / 2]" } else { "[positions, rot / 2]" };
                return Err(format!("cos_cache {cos:?} must be {want}"));
            }
        };
        if sin != cos {
            return Err(format!("sin_cache {sin:?} and cos_cache {cos:?} differ"));
        }
        // A 4-D input states its head size; a 3-D one needs num_heads with rotary_embedding_dim.
        let head = match (transposed, self.rotary_dim, self.num_heads) {
            (true, _, _) => x[3],
            (false, 0, _) => 2 * half,
            (false, _, 0) => return Err("a 3-D input needs num_heads with rotary_embedding_dim".into()),
            (false, _, n) => hidden / n,
        };
        if head == 0 || hidden % head != 0 || (transposed && x[3] != head) {
            return Err(format!("input {x:?} is not made of heads of {head} elements"));
        }
        let rot = if self.rotary_dim == 0 { head } else { self.rotary_dim };
        if rot > head || rot % 2 != 0 || half * 2 != rot {
            return Err(format!(
                "the caches' rows of {half} are not rotary_embedding_dim / 2 for a rotation of {rot} of heads of {head}"
            ));
        }
        let heads = if self.num_heads > 0 { self.num_heads } else { hidden / head };
        if heads * head != hidden {
            return Err(format!("num_heads {heads} does not divide the input's hidden size {hidden}"));
        }
        let pos = pos.unwrap_or(&[]);
        let one_position = !token_rows && pos.iter().product::<u64>() == 1 && pos.len() <= 1;
        if !token_rows && !one_position && pos != [batch, seq] {
            return Err(format!(
                "position_ids {pos:?} must hold one start position or be [batch, sequence] = [{batch}, {seq}]"
            ));
        }
        Ok(Geometry { seq, heads, head, half, max_seq, transposed, one_position, token_rows })
    }
}

/// The uniforms of `rope.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct RotaryParams {
    total: u32,
    seq: u32,
    heads: u32,
    head: u32,
    half: u32,
    max_seq: u32,
    flags: u32,
    code: u32,
}

impl Kernel for RotaryKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        self.geometry(inputs).map_err(|e| format!("RotaryEmbedding '{}': {e}", self.name))?;
        Ok(vec![inputs[0].unwrap_or_default().to_vec()])
    }

    fn checks(&self) -> bool {
        true
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let shapes: Vec<Option<&[u64]>> = io.inputs.iter().map(|t| t.map(|t| t.shape)).collect();
        let inputs: Vec<_> = self.logical(&io.inputs).into_iter().flatten().collect();
        check_bindings(&inputs, cx.caps())?;
        check_bindings(&io.outputs, cx.caps())?;
        let planned = self.dispatch(&shapes, cx.caps(), cx.status_code)?;
        let [x, pos, cos, sin] = self.logical(&io.inputs);
        let missing = || GpuError::Internal(format!("RotaryEmbedding '{}': an input is not bound", self.name));
        // Without position ids (ONNX) the kernel reads none; a placeholder takes their binding.
        let pos = match pos {
            Some(t) => t.buf,
            None => cx.gpu.unused_input()?,
        };
        let bufs = [x.ok_or_else(missing)?.buf, pos, cos.ok_or_else(missing)?.buf, sin.ok_or_else(missing)?.buf];
        Ok(PreparedStep::one(planned.bind(cx.gpu, &bufs, &[io.output(0)?.buf, cx.status])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let x = self.infer(inputs)?.remove(0);
        let what = format!("RotaryEmbedding '{}'", self.name);
        let planned = self.dispatch(inputs, caps, 0).map_err(|e| format!("{what}: {e}"))?;
        Ok(Some(step_plan(format!("{what}: {x:?}"), "one invocation per element", &[planned])))
    }
}

impl RotaryKernel {
    /// The kernel at these input shapes; `code` is what it writes into the status word for a
    /// position outside the caches. What `prepare` binds and `plan` reports.
    fn dispatch(&self, shapes: &[Option<&[u64]>], caps: &DeviceCaps, code: u32) -> Result<OpDispatch, GpuError> {
        let g =
            self.geometry(shapes).map_err(|e| GpuError::Invalid(format!("RotaryEmbedding '{}': {e}", self.name)))?;
        let total: u64 = required(shapes, 0)?.iter().product();
        let params = RotaryParams {
            total: to_u32("RotaryEmbedding elements", total)?,
            seq: to_u32("RotaryEmbedding sequence", g.seq)?,
            heads: to_u32("RotaryEmbedding heads", g.heads)?,
            head: to_u32("RotaryEmbedding head size", g.head)?,
            half: to_u32("RotaryEmbedding rotation", g.half)?,
            max_seq: to_u32("RotaryEmbedding cache rows", g.max_seq)?,
            flags: u32::from(self.interleaved)
                | (u32::from(g.transposed) << 1)
                | (u32::from(g.one_position) << 2)
                | (u32::from(g.token_rows) << 3),
            code,
        };
        let variant = ShaderVariant::Op(OpShader::new(RotarySource { ty: self.ty }));
        Ok(OpDispatch::new(variant, &params, grid_for(total, caps)?))
    }
}

/// The RotaryEmbedding kernel of one element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RotarySource {
    pub ty: ElemType,
}

impl OpSource for RotarySource {
    fn name(&self) -> String {
        format!("rope_{}", self.ty.name())
    }

    fn emit(&self) -> Result<String, String> {
        render("rope.wgsl.j2", minijinja::context! { t => self.ty.name() })
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        crate::ops::capabilities_for(&[self.ty])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(num_heads: u64, rotary_dim: u64) -> RotaryKernel {
        RotaryKernel { name: "rope".into(), onnx: false, ty: ElemType::F32, interleaved: false, num_heads, rotary_dim }
    }

    #[test]
    fn geometry() {
        let g = kernel(0, 0).geometry(&[Some(&[2, 5, 96]), Some(&[2, 5]), Some(&[64, 16]), Some(&[64, 16])]).unwrap();
        assert_eq!((g.heads, g.head, g.half, g.transposed, g.one_position), (3, 32, 16, false, false));
        let g = kernel(3, 16).geometry(&[Some(&[2, 3, 5, 32]), Some(&[1]), Some(&[64, 8]), Some(&[64, 8])]).unwrap();
        assert_eq!((g.heads, g.head, g.half, g.transposed, g.one_position), (3, 32, 8, true, true));
        // A cache row that is not rot / 2, positions of the wrong shape.
        assert!(kernel(3, 16).geometry(&[Some(&[2, 5, 96]), Some(&[1]), Some(&[64, 16]), Some(&[64, 16])]).is_err());
        assert!(kernel(0, 0).geometry(&[Some(&[2, 5, 96]), Some(&[5]), Some(&[64, 16]), Some(&[64, 16])]).is_err());
        // ONNX's order (X, cos, sin, position_ids); without position ids, one cache row per token.
        let onnx = RotaryKernel { onnx: true, ..kernel(0, 0) };
        let g = onnx.geometry(&[Some(&[2, 5, 96]), Some(&[64, 16]), Some(&[64, 16]), Some(&[2, 5])]).unwrap();
        assert_eq!((g.max_seq, g.token_rows, g.one_position), (64, false, false));
        let g = onnx.geometry(&[Some(&[2, 5, 96]), Some(&[2, 5, 16]), Some(&[2, 5, 16]), None]).unwrap();
        assert_eq!((g.max_seq, g.token_rows), (10, true));
        assert!(onnx.geometry(&[Some(&[2, 5, 96]), Some(&[2, 4, 16]), Some(&[2, 4, 16]), None]).is_err());
        assert!(kernel(0, 0).geometry(&[Some(&[2, 5, 96]), None, Some(&[64, 16]), Some(&[64, 16])]).is_err());
    }
}

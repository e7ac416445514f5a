//! RotaryEmbedding (com.microsoft, as onnxruntime-genai's models use it before
//! GroupQueryAttention): X `[B, S, N·D]` or `[B, N, S, D]`, int64 position ids (one start
//! position or `[B, S]`), cos and sin caches `[max_positions, rot / 2]`. Each head's first `rot`
//! elements rotate in pairs (interleaved or halves) by their position's angle, as ONNX Runtime's
//! CPU kernel computes; the rest pass through. `scale` is accepted (the CPU kernel ignores it
//! too); `is_packed_batching=1` declines. A position outside the caches fails the run.

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

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&RotaryDef];

struct RotaryDef;

impl OpDef for RotaryDef {
    fn names(&self) -> &'static [&'static str] {
        &["RotaryEmbedding"]
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_f16(node, opts)?;
        let kernel = RotaryKernel::of(node)?;
        let shapes: Option<Vec<Vec<u64>>> = (0..4).map(|i| node.input(i).and_then(|v| v.fixed_shape())).collect();
        if let Some(shapes) = shapes {
            let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| Some(s.as_slice())).collect();
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
}

impl RotaryKernel {
    pub fn of(node: &Node) -> Result<RotaryKernel, String> {
        let op = &node.op_type;
        let ty = input_type(node, 0, "input")?;
        if !ty.is_float() {
            return Err(format!("{op} of {} is not supported", ty.name()));
        }
        if input_type(node, 1, "position_ids")? != ElemType::I64 {
            return Err(format!("{op} with position ids that are not int64 is not supported"));
        }
        for (i, what) in [(2, "cos_cache"), (3, "sin_cache")] {
            if input_type(node, i, what)? != ty {
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
        if num_heads < 0 || rotary_dim < 0 || (rotary_dim > 0 && num_heads == 0) {
            return Err(format!(
                "{op} with num_heads={num_heads}, rotary_embedding_dim={rotary_dim}: num_heads is required with \
                 rotary_embedding_dim, and neither may be negative"
            ));
        }
        Ok(RotaryKernel {
            name: node.name.clone(),
            ty,
            interleaved,
            num_heads: num_heads as u64,
            rotary_dim: rotary_dim as u64,
        })
    }

    fn geometry(&self, inputs: &[Option<&[u64]>]) -> Result<Geometry, String> {
        let get = |i: usize| inputs.get(i).copied().flatten().ok_or_else(|| format!("lacks input {i}"));
        let (x, pos, cos, sin) = (get(0)?, get(1)?, get(2)?, get(3)?);
        let (batch, seq, hidden, transposed) = match *x {
            [b, s, h] => (b, s, h, false),
            [b, n, s, d] => (b, s, n * d, true),
            _ => return Err(format!("input {x:?} must have 3 or 4 dimensions")),
        };
        let [max_seq, half] = *cos else { return Err(format!("cos_cache {cos:?} must have 2 dimensions")) };
        if sin != cos {
            return Err(format!("sin_cache {sin:?} and cos_cache {cos:?} differ"));
        }
        let head = if self.rotary_dim == 0 { 2 * half } else { hidden / self.num_heads.max(1) };
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
        let one_position = pos.iter().product::<u64>() == 1 && pos.len() <= 1;
        if !one_position && pos != [batch, seq] {
            return Err(format!(
                "position_ids {pos:?} must hold one start position or be [batch, sequence] = [{batch}, {seq}]"
            ));
        }
        Ok(Geometry { seq, heads, head, half, max_seq, transposed, one_position })
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
        let inputs = [io.input(0)?, io.input(1)?, io.input(2)?, io.input(3)?];
        check_bindings(&inputs, cx.caps())?;
        check_bindings(&io.outputs, cx.caps())?;
        let planned = self.dispatch(&shapes, cx.caps(), cx.status_code)?;
        let bufs: Vec<_> = inputs.iter().map(|t| t.buf).collect();
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
            flags: u32::from(self.interleaved) | (u32::from(g.transposed) << 1) | (u32::from(g.one_position) << 2),
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
        RotaryKernel { name: "rope".into(), ty: ElemType::F32, interleaved: false, num_heads, rotary_dim }
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
    }
}

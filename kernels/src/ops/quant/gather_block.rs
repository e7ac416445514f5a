//! GatherBlockQuantized (com.microsoft): the embedding lookup of onnxruntime-genai's int4 models
//! with tied embeddings, as ONNX Runtime's CPU kernel computes it for uint8 tables. `data` is
//! uint8 `[V, .., K·bits/8]`, `8 / bits` values to a byte, low bits first; rows are gathered
//! along the first axis (`gather_axis` 0) and dequantised in blocks of `block_size` along the
//! last (`quantize_axis` last): `y[.., k] = (q[k] - zp[k / bs]) * scale[k / bs]` in the scales'
//! type (f32 or f16), computed in f32. `scales` has data's rank, its last axis `ceil(K / bs)`;
//! zero points are optional, uint8 packed like the data (each row's starting at a byte, as in
//! MatMulNBits, whose tensors the builder shares, and ONNX Runtime 1.32's CPU kernel; 1.24's
//! reads them unpadded; absent: 2, 8 or 128 for 2, 4 or 8 bits). Indices are int32 or int64; a
//! negative one counts from the end. Other axes, int4/uint4 and FP8 tables decline.
//!
//! An index still out of range fails the run (ONNX Runtime 1.24's CPU EP fails it; 1.32's
//! writes zeros): the kernel writes zeros there and flags the run's status word (`ops::check`).

use bytemuck::{Pod, Zeroable};

use super::source::GatherBlockSource;
use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::support::PlacementOptions;
use crate::graph::ExecOptions;
use crate::ops::layout::strided::check_extent;
use crate::ops::norm::float_types;
use crate::ops::planned::{shapes_of, step_plan, OpDispatch};
use crate::ops::{check_f16, grid_for, to_u32, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep, StepPlan};
use crate::shader::{OpShader, ShaderVariant};

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&GatherBlockDef];

const OP: &str = "GatherBlockQuantized";

/// Inputs by index.
const DATA: usize = 0;
const INDICES: usize = 1;
const SCALES: usize = 2;
const ZERO_POINTS: usize = 3;

struct GatherBlockDef;

impl OpDef for GatherBlockDef {
    fn names(&self) -> &'static [&'static str] {
        &[OP]
    }

    fn domain(&self) -> &'static str {
        "com.microsoft"
    }

    fn check(&self, node: &Node, opts: &PlacementOptions) -> Result<(), String> {
        check_f16(node, opts)?;
        let kernel = GatherBlockKernel::of(node)?;
        crate::ops::infer_declared(node, &kernel, ZERO_POINTS + 1)
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(GatherBlockKernel::of(node)?))
    }

    fn flops(&self, node: &Node) -> Option<f64> {
        let y: u64 = node.output(0)?.fixed_shape()?.iter().product();
        Some(3.0 * y as f64)
    }

    fn variants(&self, caps: &DeviceCaps) -> Vec<ShaderVariant> {
        let mut out = Vec::new();
        for ty in float_types(caps) {
            for bits in [2, 4, 8] {
                for zp in [false, true] {
                    for i64 in [false, true] {
                        out.push(ShaderVariant::Op(OpShader::new(GatherBlockSource { ty, bits, zp, i64 })));
                    }
                }
            }
        }
        out
    }
}

/// One GatherBlockQuantized node.
#[derive(Clone, Debug, PartialEq)]
pub struct GatherBlockKernel {
    pub name: String,
    /// The scales' and the output's type.
    pub ty: ElemType,
    pub index_ty: ElemType,
    pub bits: u32,
    pub block: u64,
    pub zp: bool,
    /// data's rank (the attributes' axes were resolved against it).
    pub rank: usize,
}

/// How one GatherBlockQuantized runs at given shapes.
#[derive(Clone, Debug, PartialEq)]
struct Geometry {
    out: Vec<u64>,
    /// data's first axis.
    axis_len: u64,
    /// Rows of the table per index (the axes between the first and the last).
    rows: u64,
    /// Values per row.
    k: u64,
    k_blocks: u64,
    /// Packed zero-point bytes per row.
    zp_stride: u64,
    indices: u64,
}

impl GatherBlockKernel {
    pub fn of(node: &Node) -> Result<GatherBlockKernel, String> {
        let who = format!("{OP} '{}'", node.name);
        let given = |i: usize| node.input(i).filter(|v| !v.name.is_empty());
        let code_of =
            |i: usize, what: &str| given(i).map(|v| v.elem_type).ok_or_else(|| format!("{who} without its {what}"));
        let data = code_of(DATA, "data")?;
        if data != ElemType::U8.onnx() {
            return Err(format!(
                "{who} with data of element type {data}: only uint8 tables (values packed 8 / bits to a byte) run here"
            ));
        }
        let index_ty = match ElemType::from_onnx(code_of(INDICES, "indices")?) {
            Some(t @ (ElemType::I32 | ElemType::I64)) => t,
            _ => return Err(format!("{who} with indices that are neither int32 nor int64")),
        };
        let ty = match ElemType::from_onnx(code_of(SCALES, "scales")?) {
            Some(t) if t.is_float() => t,
            _ => return Err(format!("{who} with scales that are neither float nor float16")),
        };
        let zp = given(ZERO_POINTS).is_some();
        if zp && code_of(ZERO_POINTS, "zero_points")? != ElemType::U8.onnx() {
            return Err(format!("{who} with zero points that are not uint8"));
        }
        let y = node.output(0).filter(|v| !v.name.is_empty()).ok_or_else(|| format!("{who} without its output"))?;
        if ElemType::from_onnx(y.elem_type) != Some(ty) || node.outputs.len() > 1 {
            return Err(format!("{who} with an output of another type than its scales"));
        }
        let (bits, block) = (node.int("bits").unwrap_or(4), node.int("block_size").unwrap_or(128));
        if ![2, 4, 8].contains(&bits) {
            return Err(format!("{who} with bits={bits} is not supported (2, 4 and 8 are)"));
        }
        if block < 16 || !(block as u64).is_power_of_two() {
            return Err(format!("{who} with block_size={block}: it must be a power of 2 of at least 16"));
        }
        let rank = given(DATA)
            .and_then(|v| v.shape.as_ref())
            .map(Vec::len)
            .ok_or_else(|| format!("{who}: data's rank is unknown"))?;
        check_axes(node, rank).map_err(|e| format!("{who} {e}"))?;
        Ok(GatherBlockKernel {
            name: node.name.clone(),
            ty,
            index_ty,
            bits: bits as u32,
            block: block as u64,
            zp,
            rank,
        })
    }

    fn geometry(&self, inputs: &[Option<&[u64]>]) -> Result<Geometry, String> {
        let get =
            |i: usize, what: &str| inputs.get(i).copied().flatten().ok_or_else(|| format!("lacks its {what} input"));
        let (data, indices, scales) = (get(DATA, "data")?, get(INDICES, "indices")?, get(SCALES, "scales")?);
        if data.len() != self.rank {
            return Err(format!("data {data:?} is not of rank {}, the node's", self.rank));
        }
        let per = u64::from(8 / self.bits);
        let (axis_len, last) = (data[0], data[self.rank - 1]);
        let middle = &data[1..self.rank - 1];
        let (k, count) = (last * per, indices.iter().product::<u64>());
        let k_blocks = k.div_ceil(self.block);
        let want: Vec<u64> = data[..self.rank - 1].iter().copied().chain([k_blocks]).collect();
        if scales != want.as_slice() {
            return Err(format!("scales {scales:?} are not {want:?}, what data {data:?} and block_size give"));
        }
        let zp_stride = k_blocks.div_ceil(per);
        if self.zp {
            let zp = get(ZERO_POINTS, "zero_points")?;
            let want: Vec<u64> = data[..self.rank - 1].iter().copied().chain([zp_stride]).collect();
            if zp != want.as_slice() {
                return Err(format!("zero_points {zp:?} are not {want:?}, the scales' packed {}-bit", self.bits));
            }
        }
        if axis_len == 0 && count > 0 {
            return Err(format!("{count} indices into an empty first axis of data {data:?}"));
        }
        let out = indices.iter().chain(middle).copied().chain([k]).collect();
        Ok(Geometry { out, axis_len, rows: middle.iter().product(), k, k_blocks, zp_stride, indices: count })
    }

    /// The kernel at these input shapes; `code` is what it writes into the status word for an
    /// index out of range. What `prepare` binds and `plan` reports.
    fn dispatch(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, code: u32) -> Result<OpDispatch, GpuError> {
        let g = self.geometry(inputs).map_err(|e| GpuError::Invalid(format!("{OP} '{}': {e}", self.name)))?;
        let count: u64 = g.out.iter().product();
        let table = g.axis_len * g.rows;
        let per = u64::from(8 / self.bits);
        // The kernel indexes the table's values and the zero points' in u32.
        to_u32("GatherBlockQuantized data values", table * g.k)?;
        to_u32("GatherBlockQuantized zero point values", table * g.zp_stride * per)?;
        check_extent(caps, "GatherBlockQuantized data", table * g.k / per, 1)?;
        check_extent(caps, "GatherBlockQuantized indices", g.indices, self.index_ty.size())?;
        check_extent(caps, "GatherBlockQuantized scales", table * g.k_blocks, self.ty.size())?;
        check_extent(caps, "GatherBlockQuantized zero points", table * g.zp_stride, 1)?;
        check_extent(caps, "GatherBlockQuantized output", count, self.ty.size())?;
        // The kernel wraps indices in i32.
        if g.axis_len > i32::MAX as u64 {
            return Err(crate::PlanError::IndexOverflow { what: "GatherBlockQuantized axis", value: g.axis_len }.into());
        }
        let params = GatherBlockParams {
            count: to_u32("GatherBlockQuantized output", count)?,
            k: to_u32("GatherBlockQuantized row", g.k)?,
            rows: to_u32("GatherBlockQuantized rows", g.rows)?,
            axis_len: g.axis_len as u32,
            k_blocks: to_u32("GatherBlockQuantized blocks", g.k_blocks)?,
            block: to_u32("GatherBlockQuantized block_size", self.block)?,
            zp_stride: to_u32("GatherBlockQuantized zero points", g.zp_stride)?,
            code,
        };
        let source =
            GatherBlockSource { ty: self.ty, bits: self.bits, zp: self.zp, i64: self.index_ty == ElemType::I64 };
        Ok(OpDispatch::new(ShaderVariant::Op(OpShader::new(source)), &params, grid_for(count, caps)?))
    }
}

/// Declines unless `gather_axis` (default 0) is data's first axis and `quantize_axis` (default 1)
/// its last, as ONNX Runtime's CPU kernel requires of uint8 tables.
fn check_axes(node: &Node, rank: usize) -> Result<(), String> {
    if rank < 2 {
        return Err(format!("with data of rank {rank}: it needs a gathered and a quantised axis"));
    }
    let gather = node.int("gather_axis").unwrap_or(0);
    let quantize = node.int("quantize_axis").unwrap_or(1);
    if crate::ops::normalize_axis(gather, rank)? != 0 {
        return Err(format!("with gather_axis={gather} is not supported (only the first axis)"));
    }
    if crate::ops::normalize_axis(quantize, rank)? != rank - 1 {
        return Err(format!("with quantize_axis={quantize} is not supported (only the last axis, {})", rank - 1));
    }
    Ok(())
}

/// The uniforms of `quant_gather_block.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
struct GatherBlockParams {
    count: u32,
    k: u32,
    rows: u32,
    axis_len: u32,
    k_blocks: u32,
    block: u32,
    zp_stride: u32,
    code: u32,
}

impl Kernel for GatherBlockKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let g = self.geometry(inputs).map_err(|e| format!("{OP} '{}': {e}", self.name))?;
        Ok(vec![g.out])
    }

    fn checks(&self) -> bool {
        true
    }

    /// Token ids handed in host memory are checked there.
    fn host_checked(&self) -> &'static [usize] {
        &[INDICES]
    }

    fn host_check(&self, inputs: &[Option<&[u64]>], _: &[&[u64]], values: &[&[i64]]) -> Result<(), String> {
        let g = self.geometry(inputs).map_err(|e| format!("{OP} '{}': {e}", self.name))?;
        crate::ops::check::host_indices(values, g.axis_len, self.check_message())
    }

    fn prepare(&self, cx: &PrepareCx<'_>, io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        let planned = self.dispatch(&shapes_of(io), cx.caps(), cx.status_code)?;
        let mut inputs = vec![io.input(DATA)?.buf, io.input(INDICES)?.buf, io.input(SCALES)?.buf];
        if self.zp {
            inputs.push(io.input(ZERO_POINTS)?.buf);
        }
        Ok(PreparedStep::one(planned.bind(cx.gpu, &inputs, &[io.output(0)?.buf, cx.status])?))
    }

    fn plan(&self, inputs: &[Option<&[u64]>], caps: &DeviceCaps, _: &ExecOptions) -> Result<Option<StepPlan>, String> {
        let y = self.infer(inputs)?.remove(0);
        let what = format!("{OP} '{}'", self.name);
        let planned = self.dispatch(inputs, caps, 0).map_err(|e| format!("{what}: {e}"))?;
        let line = format!("{what}: {}-bit, block {} -> {y:?}", self.bits, self.block);
        Ok(Some(step_plan(line, "one invocation per output element", &[planned])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(bits: u32, zp: bool, rank: usize) -> GatherBlockKernel {
        let (ty, index_ty) = (ElemType::F32, ElemType::I64);
        GatherBlockKernel { name: "g".into(), ty, index_ty, bits, block: 16, zp, rank }
    }

    #[test]
    fn shapes() {
        // 4 bits: 40 bytes are 80 values, 5 blocks of 16, 3 bytes of packed zero points per row.
        let k = kernel(4, true, 2);
        let got = k.infer(&[Some(&[67, 40]), Some(&[2, 7]), Some(&[67, 5]), Some(&[67, 3])]).unwrap();
        assert_eq!(got, vec![vec![2, 7, 80]]);
        assert!(k.infer(&[Some(&[67, 40]), Some(&[2, 7]), Some(&[67, 5]), Some(&[67, 5])]).is_err());
        assert!(k.infer(&[Some(&[67, 40]), Some(&[2, 7]), Some(&[67, 6]), Some(&[67, 3])]).is_err());
        assert!(k.infer(&[Some(&[67, 3, 40]), Some(&[2]), Some(&[67, 3, 5]), Some(&[67, 3, 3])]).is_err());
        // 8 bits, rank 3, a scalar index: one zero point per block.
        let k = kernel(8, true, 3);
        let got = k.infer(&[Some(&[9, 3, 40]), Some(&[]), Some(&[9, 3, 3]), Some(&[9, 3, 3])]).unwrap();
        assert_eq!(got, vec![vec![3, 40]]);
        assert!(kernel(2, false, 2).infer(&[Some(&[0, 8]), Some(&[1]), Some(&[0, 2])]).is_err());
    }

    #[test]
    fn geometry() {
        let g = kernel(2, true, 3).geometry(&[Some(&[9, 3, 10]), Some(&[4]), Some(&[9, 3, 3]), Some(&[9, 3, 1])]);
        let g = g.unwrap();
        assert_eq!((g.axis_len, g.rows, g.k, g.k_blocks, g.zp_stride, g.indices), (9, 3, 40, 3, 1, 4));
    }
}

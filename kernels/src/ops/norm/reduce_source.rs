//! The kernels of `reduce.wgsl.j2` and their uniforms.

use bytemuck::{Pod, Zeroable};

use super::reduce::ReduceOp;
use crate::dtype::ElemType;
use crate::ops::WORKGROUP;
use crate::shader::{render, OpSource};

/// The uniforms of `reduce.wgsl.j2`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct ReduceParams {
    pub(super) outputs: u32,
    pub(super) r_last: u32,
    pub(super) r_stride: u32,
    pub(super) r_outer: u32,
    pub(super) nkept: u32,
    pub(super) nred: u32,
    pub(super) divisor: f32,
    pub(super) fill: u32,
    pub(super) kept_size: [[u32; 4]; 2],
    pub(super) kept_stride: [[u32; 4]; 2],
    pub(super) red_size: [[u32; 4]; 2],
    pub(super) red_stride: [[u32; 4]; 2],
}

/// The uniforms of the wide kernel: the others', then the chunking.
#[repr(C)]
#[derive(Clone, Copy, Debug, Pod, Zeroable)]
pub(super) struct WideParams {
    pub(super) base: ReduceParams,
    pub(super) chunks: u32,
    pub(super) chunk: u32,
    pub(super) pad: [u32; 2],
}

/// Which kernel of `reduce.wgsl.j2`, with its invocations per workgroup.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceForm {
    /// One invocation per output.
    General,
    /// One workgroup per output over its contiguous run.
    Row(u32),
    /// Workgroups per (output, chunk); `partial`: each writes its chunk's total (in the
    /// accumulator's type) for the final kernel, else the output.
    Wide { threads: u32, partial: bool },
    /// One workgroup per output combining its chunks' partials.
    Final(u32),
}

/// One reduction kernel: what changes its text (ReduceMean runs the sum's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ReduceSource {
    pub op: ReduceOp,
    pub ty: ElemType,
    pub form: ReduceForm,
    /// Runs are whole vec4s, loaded as such (row variant; wide variant over contiguous runs with
    /// chunks of whole vec4s).
    pub v4: bool,
    /// The workgroup kernels reduce through subgroup operations.
    pub sg: bool,
}

impl OpSource for ReduceSource {
    fn name(&self) -> String {
        let (op, ty) = (self.op.text(), self.ty.name());
        let sg = if self.sg { "_sg" } else { "" };
        match self.form {
            ReduceForm::Row(t) => {
                let v4 = if self.v4 { "_v4" } else { "" };
                format!("reduce_{op}_{ty}_row{v4}{sg}_t{t}")
            }
            ReduceForm::General => format!("reduce_{op}_{ty}_general"),
            ReduceForm::Wide { threads, partial } => {
                let part = if partial { "_part" } else { "" };
                let v4 = if self.v4 { "_v4" } else { "" };
                format!("reduce_{op}_{ty}_wide{part}{v4}{sg}_t{threads}")
            }
            ReduceForm::Final(t) => format!("reduce_{op}_{ty}_final{sg}_t{t}"),
        }
    }

    fn emit(&self) -> Result<String, String> {
        let acc = if self.ty == ElemType::I32 { "i32" } else { "f32" };
        let last = matches!(self.form, ReduceForm::Final(_));
        let threads = match self.form {
            ReduceForm::General => WORKGROUP,
            ReduceForm::Row(t) | ReduceForm::Final(t) | ReduceForm::Wide { threads: t, .. } => t,
        };
        render(
            "reduce.wgsl.j2",
            minijinja::context! {
                t => self.ty.name(),
                // The last pass reads partials in the accumulator's type, mapped already.
                xt => if last { acc } else { self.ty.name() },
                f16 => self.ty == ElemType::F16,
                acc,
                op => self.op.combine(),
                map => if last { "" } else { self.op.map_post().0 },
                post => self.op.map_post().1,
                row => matches!(self.form, ReduceForm::Row(_) | ReduceForm::Final(_)),
                wide => matches!(self.form, ReduceForm::Wide { .. }),
                partial => matches!(self.form, ReduceForm::Wide { partial: true, .. }),
                final => last,
                v4 => self.v4,
                sg => self.sg,
                threads,
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        super::row_capabilities(&[self.ty], self.sg)
    }
}

//! Elementwise ops and their fusion: each op is one row of the fused-kernel IR (an operation and
//! its WGSL expression); a chain of them runs as one generated kernel over numpy broadcasting.

use crate::dtype::ElemType;
use crate::ops::{Kernel, OpDef};

/// One operation of the fused-kernel IR.
#[derive(Clone, Debug, PartialEq)]
pub enum ElemOp {
    /// Placeholder until the op set lands.
    Identity,
}

/// Where an IR node's operand comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arg {
    /// The fused kernel's external input `k` (broadcast onto the output shape).
    Input(usize),
    /// The value of node `j` of the same kernel (`j` < this node's index).
    Node(usize),
}

/// One node of a fused elementwise kernel.
#[derive(Clone, Debug, PartialEq)]
pub struct ElemNode {
    pub op: ElemOp,
    pub args: Vec<Arg>,
    /// The element type of the node's value.
    pub ty: ElemType,
}

/// A fused elementwise kernel: `inputs` are the external inputs' element types; the last of
/// `nodes` is the output.
pub fn fused(_inputs: Vec<ElemType>, _nodes: Vec<ElemNode>) -> Result<Box<dyn Kernel>, String> {
    Err("elementwise kernels are not built yet".into())
}

/// The elementwise op definitions.
pub fn ops() -> Vec<&'static dyn OpDef> {
    Vec::new()
}

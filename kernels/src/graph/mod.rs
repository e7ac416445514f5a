//! From ONNX nodes to GPU work: a plain-data graph model, per-node support predicates, convex
//! partitioning, partition programs and their execution.

pub mod attention;
pub mod bounds;
pub mod executor;
pub mod fold;
pub mod fusion;
mod fusion_match;
pub mod model;
pub mod offload;
pub mod packed_proj;
pub mod packed_qkv;
pub mod patterns;
pub mod placement;
pub mod program;
pub mod reshape;
pub mod support;
mod values;

pub use executor::{
    thread_in_place, thread_steps_kept, ExecOptions, Executable, HostTensor, InputData, OutputTarget, ProfileGroups,
    RunInput, RunOutputs, StepProfile,
};
pub use model::{dtype_of, Attr, Dim, Graph, Node, ValueInfo};
pub use placement::{place, Decision, DeclineKind, Placement, Role};
pub use program::{build_program, build_program_with, Constant, Operand, Program, Step};
pub use support::{FlashMode, PlacementOptions};

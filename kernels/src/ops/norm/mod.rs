//! The norm op family.

use crate::ops::OpDef;

/// The norm op definitions.
pub fn ops() -> Vec<&'static dyn OpDef> {
    Vec::new()
}

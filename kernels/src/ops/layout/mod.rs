//! The layout op family.

use crate::ops::OpDef;

/// The layout op definitions.
pub fn ops() -> Vec<&'static dyn OpDef> {
    Vec::new()
}

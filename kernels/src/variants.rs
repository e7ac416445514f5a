//! The set of shader variants the planners can emit on a device: what the goldens cover and
//! what a warm-up may precompile. Every op of the registry lists its own (`OpDef::variants`).

use std::collections::BTreeMap;

use crate::caps::DeviceCaps;
use crate::shader::ShaderVariant;

/// Every variant the registered ops produce for `caps`, by name.
pub fn reachable_variants(caps: &DeviceCaps) -> BTreeMap<String, ShaderVariant> {
    crate::ops::registry_variants(caps)
}

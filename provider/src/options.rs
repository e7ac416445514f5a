//! Session options of the EP. Parsing is pure and lives in `ep_kernels::options`, shared with
//! the offline `inspect` tool; this module keeps the provider's paths.

pub use ep_kernels::options::*;

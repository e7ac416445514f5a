//! The buffers the steps of one set share through `PrepareCx::scratch_buffer` (the unfused interim
//! attentions' scores: `graph/interim.rs`), on the test adapter.

mod common;

use ep_kernels::graph::ExecOptions;
use ep_kernels::ops::{PrepareCx, Scratch};

/// A set's scratch (the unfused interim attentions' scores): one buffer per label, kept while it
/// is large enough, replaced by a larger one; without a scratch every request is a new buffer.
#[test]
fn a_sets_scratch_buffers_are_shared_by_label() {
    let gpu = common::gpu();
    let options = ExecOptions::default();
    let status = gpu.storage_buffer(4, "status").unwrap();
    let scratch = Scratch::default();
    let shared = Some(&scratch);
    let cx = PrepareCx { scratch: shared, ..PrepareCx::on(&gpu, &options, &status) };
    let a = cx.scratch_buffer(1000, "s").unwrap();
    assert_eq!(cx.scratch_buffer(800, "s").unwrap().buffer, a.buffer);
    assert_ne!(cx.scratch_buffer(800, "p").unwrap().buffer, a.buffer);
    let larger = cx.scratch_buffer(2000, "s").unwrap();
    assert!(larger.buffer != a.buffer && larger.len >= 2000);
    assert_eq!(cx.scratch_buffer(1500, "s").unwrap().buffer, larger.buffer);
    let own = PrepareCx { scratch: None, ..cx };
    assert_ne!(own.scratch_buffer(800, "s").unwrap().buffer, larger.buffer);
}

//! A run splits its dispatches into several submissions only when the GPU was last seen idle
//! (`graph/execute.rs::submit_chunks`): `Gpu::seen_idle` is false from a submission until a wait
//! that began after it returns. Its own test binary: no other test submits or waits meanwhile.

mod common;

#[test]
fn a_submission_is_in_flight_until_a_wait_sees_it_done() {
    let gpu = common::gpu();
    gpu.wait().unwrap();
    assert!(gpu.seen_idle(), "after a wait nothing of ours is in flight");
    for round in 0..3 {
        gpu.submit([]);
        assert!(!gpu.seen_idle(), "round {round}: a submission no wait has seen done");
        gpu.submit([]);
        assert!(!gpu.seen_idle(), "round {round}: two submissions no wait has seen done");
        gpu.wait().unwrap();
        assert!(gpu.seen_idle(), "round {round}: the wait saw both done");
    }
}

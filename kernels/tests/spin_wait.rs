//! `ONNXRUNTIME_EP_WGPU_SPIN_WAIT`: how long a wait for the GPU polls before it blocks.

use std::time::Duration;

use ep_kernels::runtime::{parse_spin, DEFAULT_SPIN};

#[test]
fn the_spin_budget_is_microseconds_zero_blocks_and_anything_else_is_the_default() {
    assert_eq!(parse_spin(None), Some(DEFAULT_SPIN));
    assert_eq!(parse_spin(Some("0")), None);
    assert_eq!(parse_spin(Some(" 250 ")), Some(Duration::from_micros(250)));
    assert_eq!(parse_spin(Some("20000")), Some(Duration::from_millis(20)));
    for bad in ["", "-1", "5ms", "1e3"] {
        assert_eq!(parse_spin(Some(bad)), Some(DEFAULT_SPIN), "{bad:?}");
    }
}

mod common;

use ep_kernels::runtime::memory::{self, resolve, DeviceAllocator};
use ep_kernels::runtime::{readback, transfer};
use rand::Rng;

/// The polling wait (what discrete GPUs use by default; the test adapter is a CPU one, which
/// blocks) returns only once the work it waits for is done: every read-back finds the bytes
/// written just before, at sizes across the staging buckets. With polling on, reads from 1 MiB
/// go in parts (`runtime::readback`'s rule), the 8 MiB one past its budget through the blocking
/// fallback.
#[test]
fn a_polling_wait_returns_only_once_the_work_is_done() {
    let gpu = common::gpu();
    gpu.set_spin_wait(Some(Duration::from_secs(2)));
    let alloc = DeviceAllocator::for_gpu(gpu.clone(), 1 << 26);
    let mut rng = common::rng("a_polling_wait_returns_only_once_the_work_is_done");
    for round in 0..40 {
        let len = rng.random_range(1..=3 << 20) as u64;
        let addr = alloc.alloc(len).unwrap();
        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        transfer::write(&resolve(addr, len).unwrap(), &data).unwrap();
        let mut back = vec![0u8; len as usize];
        transfer::read(&resolve(addr, len).unwrap(), &mut back).unwrap();
        assert!(back == data, "round {round}: {len} bytes differ");
        assert!(memory::free(addr));
    }
    // After a wait, nothing submitted is still in flight (32 MiB of copies take llvmpipe
    // milliseconds; a wait that returned at its first poll would leave them running).
    for _ in 0..3 {
        let len = 32 << 20;
        let addr = alloc.alloc(len).unwrap();
        transfer::write(&resolve(addr, len).unwrap(), &vec![7u8; len as usize]).unwrap();
        gpu.submit([]);
        gpu.wait().unwrap();
        assert!(gpu.device().poll(wgpu::PollType::Poll).unwrap().is_queue_empty());
        assert!(memory::free(addr));
    }
    // A budget shorter than the work falls back to blocking, with the same result.
    gpu.set_spin_wait(Some(Duration::from_micros(1)));
    let len = 8 << 20;
    let addr = alloc.alloc(len).unwrap();
    let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
    transfer::write(&resolve(addr, len).unwrap(), &data).unwrap();
    let mut back = vec![0u8; len as usize];
    transfer::read(&resolve(addr, len).unwrap(), &mut back).unwrap();
    assert!(back == data);
    assert!(memory::free(addr));
    gpu.set_spin_wait(None);
}

/// A read-back in parts (`runtime::readback`; on a GPU, every read from 1 MiB): each part
/// copied and mapped on its own, its bytes taken as soon as its map completes. Every byte
/// arrives, at sizes across the staging buckets and part counts that do not divide them, at an
/// offset into the buffer, right after the write (the parts queue behind it).
#[test]
fn a_read_back_in_parts_returns_every_byte() {
    let gpu = common::gpu();
    let alloc = DeviceAllocator::for_gpu(gpu.clone(), 1 << 26);
    let mut rng = common::rng("a_read_back_in_parts_returns_every_byte");
    for (len, parts) in [(2_304_000u64, 4), ((1 << 20) + 12, 3), (4100, 2), (12, 2), (3_000_004, 7)] {
        let addr = alloc.alloc(len + 256).unwrap();
        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let at = resolve(addr + 256, len).unwrap();
        transfer::write(&at, &data).unwrap();
        let mut back = vec![0u8; len as usize];
        readback::read_in_parts(&at, &mut back, parts).unwrap();
        assert!(back == data, "{len} bytes in {parts} parts differ");
        assert!(memory::free(addr));
    }
    let odd = resolve(alloc.alloc(64).unwrap() + 1, 8).unwrap();
    assert!(readback::read_in_parts(&odd, &mut [0u8; 8], 2).is_err(), "a range of partial words is refused");
}

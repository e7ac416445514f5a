//! Device memory behind addresses (`runtime::memory`), the copies (`runtime::transfer`) and runs
//! whose inputs and outputs are device ranges, on the test adapter, against host copies of the
//! same bytes. Offsets and lengths that are not multiples of 4 (wgpu's copy unit) must neither
//! lose bytes nor touch the bytes around a range.

mod common;

use common::graph::{node, val, T};
use ep_kernels::graph::{build_program, ExecOptions, Executable, InputData, OutputTarget, RunInput, RunOutputs};
use ep_kernels::runtime::devcopy;
use ep_kernels::runtime::memory::{self, resolve, DeviceAllocator, ADDRESS_BASE};
use ep_kernels::runtime::transfer::{self, thread_copy_stats, Copy};
use ep_kernels::{ElemType, GpuError};
use rand::Rng;

fn allocator() -> DeviceAllocator {
    DeviceAllocator::for_gpu(common::gpu(), 1 << 26)
}

fn random_bytes(rng: &mut impl Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.random()).collect()
}

fn read(addr: u64, len: u64) -> Vec<u8> {
    let mut out = vec![0u8; len as usize];
    transfer::read(&resolve(addr, len).unwrap(), &mut out).unwrap();
    out
}

#[test]
fn addresses_resolve_inside_their_allocation_only() {
    let a = allocator();
    let x = a.alloc(1000).unwrap();
    let y = a.alloc(10).unwrap();
    assert!(x >= ADDRESS_BASE && y >= ADDRESS_BASE && x != y);
    let s = resolve(x + 996, 4).unwrap();
    assert_eq!((s.offset, s.len), (996, 4));
    assert!(resolve(x + 997, 4).is_err(), "past the 1000 bytes asked for");
    assert!(resolve(x + 1000, 0).is_ok(), "an empty view at the end");
    assert!(resolve(x + 5000, 1).is_err(), "the gap between allocations");
    assert!(memory::free(x));
    assert!(resolve(x, 4).is_err(), "a freed allocation");
    assert!(!memory::free(x), "a double free is reported");
    assert!(memory::free(y));
}

#[test]
fn freed_buffers_are_reused_with_their_address() {
    let a = allocator();
    let x = a.alloc(3000).unwrap();
    assert!(memory::free(x));
    let before = memory::memory_stats().buffers_created;
    let y = a.alloc(2900).unwrap(); // the same 3072-byte bucket
    assert_eq!(y, x);
    assert_eq!(memory::memory_stats().buffers_created, before);
    assert!(memory::free(y));
    a.trim(0);
    assert_eq!(a.cached_bytes(), 0);
}

#[test]
fn copies_at_any_offset_and_length_are_exact() {
    let mut rng = common::rng("copies_at_any_offset_and_length_are_exact");
    let a = allocator();
    let base = a.alloc(256).unwrap();
    let other = a.alloc(256).unwrap();
    let background = random_bytes(&mut rng, 256);
    for _ in 0..24 {
        let off = rng.random_range(0..100u64);
        let len = rng.random_range(0..100u64);
        transfer::write(&resolve(base, 256).unwrap(), &background).unwrap();
        let data = random_bytes(&mut rng, len as usize);
        transfer::transfer(vec![Copy::ToDevice { src: &data, dst: resolve(base + off, len).unwrap() }]).unwrap();
        let mut want = background.clone();
        want[off as usize..(off + len) as usize].copy_from_slice(&data);
        assert_eq!(read(base, 256), want, "host -> device at {off}+{len}");
        let mut back = vec![0u8; len as usize];
        transfer::transfer(vec![Copy::ToHost { src: resolve(base + off, len).unwrap(), dst: &mut back }]).unwrap();
        assert_eq!(back, data, "device -> host at {off}+{len}");
        // Device to device, into a range of another buffer at another offset.
        let other_bg = random_bytes(&mut rng, 256);
        transfer::write(&resolve(other, 256).unwrap(), &other_bg).unwrap();
        let dst_off = rng.random_range(0..100u64);
        transfer::transfer(vec![Copy::OnDevice {
            src: resolve(base + off, len).unwrap(),
            dst: resolve(other + dst_off, len).unwrap(),
        }])
        .unwrap();
        let mut want_other = other_bg.clone();
        want_other[dst_off as usize..(dst_off + len) as usize].copy_from_slice(&data);
        assert_eq!(read(other, 256), want_other, "device -> device {off} -> {dst_off}, {len} bytes");
    }
    assert!(memory::free(base) && memory::free(other));
}

#[test]
fn mismatched_lengths_are_an_error() {
    let a = allocator();
    let x = a.alloc(64).unwrap();
    let err = transfer::transfer(vec![Copy::ToDevice { src: &[1, 2, 3], dst: resolve(x, 4).unwrap() }]).unwrap_err();
    assert!(err.to_string().contains("3 and 4 bytes"), "{err}");
    assert!(memory::free(x));
}

#[test]
fn too_large_an_allocation_is_out_of_memory_and_the_allocator_works_on() {
    let a = allocator();
    let limit = common::gpu().caps().max_buffer_size;
    let err = a.alloc(limit + 1).unwrap_err();
    assert!(err.to_string().contains("largest buffer"), "{err}");
    let before = memory::memory_stats().failures;
    assert!(a.alloc(u64::MAX / 2).is_err());
    assert_eq!(memory::memory_stats().failures, before + 1);
    let x = a.alloc(16).unwrap();
    assert!(memory::free(x));
}

/// Outputs into device ranges given up front.
struct ToDevice(Vec<u64>, u64);

impl RunOutputs for ToDevice {
    fn target(&mut self, i: usize, shape: &[u64]) -> Result<OutputTarget, GpuError> {
        let len = shape.iter().product::<u64>() * self.1;
        resolve(self.0[i], len).map(OutputTarget::Device)
    }

    fn host(&mut self, _i: usize, _shape: &[u64], _bytes: &[u8]) -> Result<(), String> {
        Err("no output goes to the host".into())
    }
}

/// Y = X + X over `shape` on device ranges at these offsets of one pattern-like allocation (as ORT's
/// memory patterns place tensors): the result equals the host run's and no byte around the tensors
/// changes. Returns the copy kernels the runs recorded (`runtime::devcopy`).
fn run_on_device_ranges(ty: ElemType, shape: [u64; 2], offsets: &[(u64, u64)], expect_no_host_copies: bool) -> u64 {
    let mut rng = common::rng("run_on_device_ranges");
    let x_info = val("X", ty, &shape);
    let nodes = [node("Add", 14, vec![Some(x_info.clone()), Some(x_info)], vec![val("Y", ty, &shape)], vec![])];
    let program = build_program(&nodes, &["X".to_string()], &["Y".to_string()], vec![]).unwrap();
    let exec = Executable::new(common::gpu(), program, ExecOptions::default()).unwrap();
    let size = ty.size();
    let elems = shape[0] * shape[1];
    let len = elems * size;
    let arena_len = offsets.iter().map(|&(i, o)| i.max(o) + len).max().unwrap_or(0).next_multiple_of(4);
    let a = allocator();
    let arena = a.alloc(arena_len).unwrap();
    let recorded = devcopy::thread_kernel_copies();
    for &(in_off, out_off) in offsets {
        let values = common::random_vec(&mut rng, elems as usize);
        let x = if ty == ElemType::F16 { T::f16(&shape, &values) } else { T::f32(&shape, &values) };
        let background = random_bytes(&mut rng, arena_len as usize);
        transfer::write(&resolve(arena, arena_len).unwrap(), &background).unwrap();
        transfer::write(&resolve(arena + in_off, len).unwrap(), &x.data).unwrap();
        let want = common::graph::run_graph(&nodes, &[("X", &x)], &[], &["Y"]).unwrap().remove(0);
        let input =
            RunInput { dtype: ty, shape: &shape, data: InputData::Device(resolve(arena + in_off, len).unwrap()) };
        let before = thread_copy_stats();
        exec.run_io(&[input], &mut ToDevice(vec![arena + out_off], size)).unwrap();
        let copies = thread_copy_stats().since(&before);
        let got = read(arena, arena_len);
        let (o, i, n) = (out_off as usize, in_off as usize, len as usize);
        assert!(got[o..o + n] == want.data[..], "{ty} output at {out_off}");
        assert!(got[i..i + n] == x.data[..], "{ty} input at {in_off} is untouched");
        for k in (0..arena_len as usize).filter(|&k| !(o..o + n).contains(&k) && !(i..i + n).contains(&k)) {
            assert_eq!(got[k], background[k], "byte {k} outside the tensors changed (in {in_off}, out {out_off})");
        }
        if expect_no_host_copies {
            assert_eq!((copies.host_to_device, copies.device_to_host), (0, 0), "{copies:?}");
            assert_eq!(copies.device_to_device, 2, "{copies:?}");
        }
    }
    assert!(memory::free(arena));
    devcopy::thread_kernel_copies() - recorded
}

#[test]
fn a_run_on_word_aligned_device_ranges_copies_only_on_the_gpu() {
    run_on_device_ranges(ElemType::F32, [3, 5], &[(0, 64), (64, 128), (4, 256)], true);
}

/// Tensors of at least `devcopy::MIN_KERNEL_COPY` bytes at offsets the device binds storage at
/// are copied by the copy kernel, inputs and outputs; other offsets (not of 16 bytes) keep the
/// copy command. Every run is exact and leaves the bytes around its tensors alone.
#[test]
fn large_device_tensors_are_copied_by_the_kernel_where_aligned() {
    let len = devcopy::MIN_KERNEL_COPY;
    // Three slots of the tensor's length + 256 bytes; three (input, output) pairs over them.
    let slot = |i: u64| i * (len + 256);
    let aligned = [(slot(0), slot(1)), (slot(1), slot(2)), (slot(2), slot(0))];
    for ty in [ElemType::F32, ElemType::F16] {
        let shape = [1024, len / 1024 / ty.size()];
        assert_eq!(run_on_device_ranges(ty, shape, &aligned, true), 2 * aligned.len() as u64, "{ty}");
        assert_eq!(run_on_device_ranges(ty, shape, &[(4, slot(1) + 4)], true), 0, "{ty}");
        // The input at an unaligned offset, the output at an aligned one.
        assert_eq!(run_on_device_ranges(ty, shape, &[(slot(1) + 4, 0)], true), 1, "{ty}");
    }
    // One 16-byte word short of a multiple of the kernel's word: the copy command.
    assert_eq!(run_on_device_ranges(ElemType::F16, [2049, 1025], &[(0, slot(2))], false), 0);
}

#[test]
fn a_run_on_device_ranges_at_odd_offsets_and_lengths_is_exact() {
    // f16 [3, 5] is 30 bytes: not a multiple of wgpu's 4-byte copy unit.
    run_on_device_ranges(ElemType::F16, [3, 5], &[(0, 64), (2, 130), (6, 258), (0, 34)], false);
    run_on_device_ranges(ElemType::F32, [3, 5], &[(2, 64), (0, 66)], false);
}

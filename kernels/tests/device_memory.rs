//! Device memory behind addresses (`runtime::memory`), the copies (`runtime::transfer`) and runs
//! whose inputs and outputs are device ranges, on the test adapter, against host copies of the
//! same bytes. Offsets and lengths that are not multiples of 4 (wgpu's copy unit) must neither
//! lose bytes nor touch the bytes around a range.

mod common;

use common::graph::{node, val, T};
use ep_kernels::graph::{
    build_program, thread_in_place, ExecOptions, Executable, InputData, OutputTarget, RunInput, RunOutputs,
};
use ep_kernels::runtime::memory::{self, resolve, DeviceAllocator, ADDRESS_BASE};
use ep_kernels::runtime::transfer::{self, thread_copy_stats, Copy};
use ep_kernels::runtime::{devcopy, shadow};
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

/// A few bytes written from the host keep a host copy (`runtime::shadow`, which host checks read
/// instead of the device) until anything else writes over them: a copy on the device, a run's
/// output, a free. Writes longer than `shadow::MAX_BYTES` (a 2048-token prompt's ids) keep none.
#[test]
fn host_copies_of_small_uploads_last_until_overwritten() {
    let a = allocator();
    let long = shadow::MAX_BYTES as u64 + 8;
    let x = a.alloc(256 + 2 * long).unwrap();
    let at = |off: u64, len: u64| resolve(x + off, len).unwrap();
    transfer::write(&at(0, 8), &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
    transfer::write(&at(64, 4), &[9, 9, 9, 9]).unwrap();
    transfer::write(&at(128, 128), &[7; 128]).unwrap();
    let ids: Vec<u8> = (0..shadow::MAX_BYTES).map(|i| (i % 251) as u8).collect();
    transfer::write(&at(256, ids.len() as u64), &ids).unwrap();
    transfer::write(&at(256 + long, long), &vec![1; long as usize]).unwrap();
    assert_eq!(shadow::lookup(&at(0, 8)), Some(vec![1, 2, 3, 4, 5, 6, 7, 8]));
    assert_eq!(shadow::lookup(&at(0, 4)), None, "only the exact range");
    assert_eq!(shadow::lookup(&at(128, 128)), Some(vec![7; 128]));
    assert_eq!(shadow::lookup(&at(256, ids.len() as u64)), Some(ids), "a prompt's ids");
    assert_eq!(shadow::lookup(&at(256 + long, long)), None, "too long to keep");
    // A copy within one buffer (wgpu has no such copy command: it goes through the host) is exact
    // and its host copy right.
    transfer::transfer(vec![Copy::OnDevice { src: at(128, 8), dst: at(0, 8) }]).unwrap();
    assert_eq!(read(x, 8), vec![7; 8]);
    assert_eq!(shadow::lookup(&at(0, 8)), Some(vec![7; 8]));
    // A copy on the device from another buffer drops the copy of its range, not the other one.
    let z = a.alloc(16).unwrap();
    transfer::write(&resolve(z, 16).unwrap(), &[3; 16]).unwrap();
    transfer::transfer(vec![Copy::OnDevice { src: resolve(z, 8).unwrap(), dst: at(0, 8) }]).unwrap();
    assert_eq!(shadow::lookup(&at(0, 8)), None);
    assert_eq!(read(x, 8), vec![3; 8]);
    assert_eq!(shadow::lookup(&at(64, 4)), Some(vec![9, 9, 9, 9]));
    assert!(memory::free(z));
    // A run's output over it drops it too.
    let shape = [1u64];
    let nodes =
        [node("Relu", 14, vec![Some(val("X", ElemType::F32, &shape))], vec![val("Y", ElemType::F32, &shape)], vec![])];
    let program = build_program(&nodes, &["X".to_string()], &["Y".to_string()], vec![]).unwrap();
    let exec = Executable::new(common::gpu(), program, ExecOptions::default()).unwrap();
    let input = RunInput { dtype: ElemType::F32, shape: &shape, data: InputData::Host(&[0, 0, 128, 63]) };
    exec.run_io(&[input], &mut ToDevice(vec![x + 64], 4)).unwrap();
    assert_eq!(shadow::lookup(&at(64, 4)), None);
    assert_eq!(read(x + 64, 4), vec![0, 0, 128, 63]);
    transfer::write(&at(32, 4), &[5, 5, 5, 5]).unwrap();
    assert!(memory::free(x));
    let y = a.alloc(256 + 2 * long).unwrap();
    assert_eq!(y, x, "the same buffer and address again");
    assert_eq!(shadow::lookup(&resolve(y + 32, 4).unwrap()), None, "a free drops every copy of its buffer");
    assert!(memory::free(y));
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

/// What a series of runs on device ranges did: copy kernels recorded and their dispatches made
/// (`runtime::devcopy`), tensors bound in place and steps planned again for it
/// (`graph::thread_in_place`).
#[derive(Debug, PartialEq)]
struct Done {
    kernel_copies: u64,
    copies_made: u64,
    in_place: u64,
    remade: u64,
}

/// Y = X + X (`op` "Add") or Y = X ("Identity") over `shape` on device ranges at these offsets of
/// one pattern-like allocation (as ORT's memory patterns place tensors), or the outputs in a
/// second one (`outputs_apart`): the result equals the host run's and no byte around the tensors
/// changes. `trim_at`: before that run, every allocator's cache and what sets keep of ORT's
/// buffers is dropped (as an out-of-memory does).
fn run_on_device_ranges(
    op: &str,
    ty: ElemType,
    shape: [u64; 2],
    offsets: &[(u64, u64)],
    expect_no_host_copies: bool,
    trim_at: Option<usize>,
    outputs_apart: bool,
) -> Done {
    let mut rng = common::rng("run_on_device_ranges");
    let x_info = val("X", ty, &shape);
    let ins = if op == "Add" { vec![Some(x_info.clone()), Some(x_info)] } else { vec![Some(x_info)] };
    let nodes = [node(op, 14, ins, vec![val("Y", ty, &shape)], vec![])];
    let program = build_program(&nodes, &["X".to_string()], &["Y".to_string()], vec![]).unwrap();
    let exec = Executable::new(common::gpu(), program, ExecOptions::default()).unwrap();
    let size = ty.size();
    let elems = shape[0] * shape[1];
    let len = elems * size;
    let arena_len = offsets.iter().map(|&(i, o)| i.max(o) + len).max().unwrap_or(0).next_multiple_of(4);
    let a = allocator();
    let arena = a.alloc(arena_len).unwrap();
    let out_arena = if outputs_apart { a.alloc(arena_len).unwrap() } else { arena };
    let (recorded, made) = (devcopy::thread_kernel_copies(), devcopy::thread_copy_dispatches_made());
    let (bound, remade) = thread_in_place();
    for (run, &(in_off, out_off)) in offsets.iter().enumerate() {
        if trim_at == Some(run) {
            memory::trim_all();
        }
        let values = common::random_vec(&mut rng, elems as usize);
        let x = if ty == ElemType::F16 { T::f16(&shape, &values) } else { T::f32(&shape, &values) };
        let background = random_bytes(&mut rng, arena_len as usize);
        for base in [arena, out_arena] {
            transfer::write(&resolve(base, arena_len).unwrap(), &background).unwrap();
        }
        transfer::write(&resolve(arena + in_off, len).unwrap(), &x.data).unwrap();
        let want = common::graph::run_graph(&nodes, &[("X", &x)], &[], &["Y"]).unwrap().remove(0);
        let input =
            RunInput { dtype: ty, shape: &shape, data: InputData::Device(resolve(arena + in_off, len).unwrap()) };
        let (before, in_place) = (thread_copy_stats(), thread_in_place().0);
        exec.run_io(&[input], &mut ToDevice(vec![out_arena + out_off], size)).unwrap();
        let (copies, in_place) = (thread_copy_stats().since(&before), thread_in_place().0 - in_place);
        let (o, i, n) = (out_off as usize, in_off as usize, len as usize);
        let (got_in, got_out) = (read(arena, arena_len), read(out_arena, arena_len));
        assert!(got_out[o..o + n] == want.data[..], "{ty} output at {out_off}");
        assert!(got_in[i..i + n] == x.data[..], "{ty} input at {in_off} is untouched");
        for k in 0..arena_len as usize {
            let (in_x, in_y) = ((i..i + n).contains(&k), (o..o + n).contains(&k));
            let (keep_in, keep_out) = if outputs_apart { (!in_x, !in_y) } else { (!in_x && !in_y, !in_x && !in_y) };
            assert!(!keep_in || got_in[k] == background[k], "byte {k} around the input changed ({in_off}, {out_off})");
            assert!(
                !keep_out || got_out[k] == background[k],
                "byte {k} around the output changed ({in_off}, {out_off})"
            );
        }
        if expect_no_host_copies {
            assert_eq!((copies.host_to_device, copies.device_to_host), (0, 0), "{copies:?}");
            assert_eq!(copies.device_to_device + in_place, 2, "{copies:?}, {in_place} bound in place");
        }
    }
    assert!(memory::free(arena));
    assert!(!outputs_apart || memory::free(out_arena));
    Done {
        kernel_copies: devcopy::thread_kernel_copies() - recorded,
        copies_made: devcopy::thread_copy_dispatches_made() - made,
        in_place: thread_in_place().0 - bound,
        remade: thread_in_place().1 - remade,
    }
}

fn done(kernel_copies: u64, copies_made: u64, in_place: u64, remade: u64) -> Done {
    Done { kernel_copies, copies_made, in_place, remade }
}

#[test]
fn a_run_on_word_aligned_device_ranges_copies_only_on_the_gpu() {
    run_on_device_ranges("Add", ElemType::F32, [3, 5], &[(0, 64), (64, 128), (4, 256)], true, None, false);
}

/// Tensors of at least `devcopy::MIN_KERNEL_COPY` bytes at offsets the device binds storage at
/// are copied by the copy kernel where they cannot be bound in place (Identity: the output is the
/// input's buffer), inputs and outputs, whose dispatches a set keeps for the same ranges (three
/// pairs of ranges, twice: six dispatches for twelve copies) until an out-of-memory trim
/// (`memory::trim_all`) drops them, so the buffers of tensors ORT freed go back to the device;
/// other offsets (not of 16 bytes) keep the copy command. Every run is exact and leaves the bytes
/// around its tensors alone. (One test: a trim in another would drop this one's kept kernels.)
#[test]
fn large_device_tensors_are_copied_by_the_kernel_or_bound_in_place_where_aligned() {
    let len = devcopy::MIN_KERNEL_COPY;
    // Three slots of the tensor's length + 256 bytes; three (input, output) pairs over them, twice.
    let slot = |i: u64| i * (len + 256);
    let pairs = [(slot(0), slot(1)), (slot(1), slot(2)), (slot(2), slot(0))];
    let aligned: Vec<(u64, u64)> = pairs.iter().chain(&pairs).copied().collect();
    for ty in [ElemType::F32, ElemType::F16] {
        let shape = [1024, len / 1024 / ty.size()];
        let copy = |offsets: &[(u64, u64)], trim_at| {
            run_on_device_ranges("Identity", ty, shape, offsets, true, trim_at, false)
        };
        assert_eq!(copy(&aligned, None), done(12, 6, 0, 0), "{ty}");
        // A trim before the fourth run: the second pass makes its three pairs' dispatches again.
        assert_eq!(copy(&aligned, Some(3)), done(12, 12, 0, 0), "{ty}");
        assert_eq!(copy(&[(4, slot(1) + 4)], None), done(0, 0, 0, 0), "{ty}");
        // The input at an unaligned offset, the output at an aligned one.
        assert_eq!(copy(&[(slot(1) + 4, 0)], None), done(1, 1, 0, 0), "{ty}");
        // Add binds its input in place: its one step planned again per pair of ranges and kept
        // for the runs that hand the same pair, until a trim. The output, in the input's buffer,
        // is copied; in a buffer of its own it is bound in place too.
        let add = |offsets: &[(u64, u64)], trim_at, apart| {
            run_on_device_ranges("Add", ty, shape, offsets, true, trim_at, apart)
        };
        assert_eq!(add(&pairs[..2].repeat(3), None, false), done(6, 2, 6, 2), "{ty}");
        assert_eq!(add(&pairs[..2].repeat(2), Some(2), false), done(4, 4, 4, 4), "{ty}");
        assert_eq!(add(&aligned, None, false), done(6, 3, 6, 3), "{ty}");
        assert_eq!(add(&aligned, None, true), done(0, 0, 12, 3), "{ty}");
        assert_eq!(add(&aligned, Some(3), true), done(0, 0, 12, 6), "{ty}");
        // Unaligned ranges are copied by the copy command; the input unaligned, the output in place.
        assert_eq!(add(&[(4, slot(1) + 4)], None, false), done(0, 0, 0, 0), "{ty}");
        assert_eq!(add(&[(slot(1) + 4, 0)], None, false), done(0, 0, 1, 1), "{ty}");
    }
    // One 16-byte word short of a multiple of the kernel's word: the copy command.
    let odd = run_on_device_ranges("Add", ElemType::F16, [257, 511], &[(0, slot(2))], false, None, false);
    assert_eq!(odd, done(0, 0, 0, 0));
}

#[test]
fn a_run_on_device_ranges_at_odd_offsets_and_lengths_is_exact() {
    // f16 [3, 5] is 30 bytes: not a multiple of wgpu's 4-byte copy unit.
    run_on_device_ranges("Add", ElemType::F16, [3, 5], &[(0, 64), (2, 130), (6, 258), (0, 34)], false, None, false);
    run_on_device_ranges("Add", ElemType::F32, [3, 5], &[(2, 64), (0, 66)], false, None, true);
}

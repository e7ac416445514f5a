//! `Kernel::plan` for every kernel family: on a few shapes (tile multiples and not) and the
//! recorded profiles, each step that dispatches GPU work plans at least one dispatch, every
//! planned variant is one the goldens cover, and one is the op's own. A GPU test checks on the
//! test adapter that `prepare` binds exactly the planned dispatches.

mod common;

use std::collections::BTreeSet;

use common::graph::{const_val, node, val, T};
use ep_kernels::caps::profiles;
use ep_kernels::graph::{Attr, ExecOptions, FlashMode, Node, PlacementOptions, ValueInfo};
use ep_kernels::ops::{lookup, registry, registry_variants, Kernel, KernelIo, OpDef, PrepareCx, StepPlan, Tensor};
use ep_kernels::runtime::GpuBuffer;
use ep_kernels::{DeviceCaps, ElemType};

const F32: ElemType = ElemType::F32;
const F16: ElemType = ElemType::F16;
const PROFILES: [&str; 3] = ["h200", "llvmpipe", "mobile"];

/// A node and the input shapes to plan it at (the first set is the node's declared shapes).
struct Case {
    node: Node,
    shapes: Vec<Vec<Option<Vec<u64>>>>,
}

fn ms(mut n: Node) -> Node {
    n.domain = "com.microsoft".into();
    n
}

fn case(node: Node, extra: &[&[&[u64]]]) -> Case {
    let declared: Vec<Option<Vec<u64>>> =
        node.inputs.iter().map(|v| v.as_ref().filter(|v| !v.name.is_empty()).and_then(|v| v.fixed_shape())).collect();
    let mut shapes = vec![declared];
    for set in extra {
        shapes.push(set.iter().map(|s| Some(s.to_vec())).collect());
    }
    Case { node, shapes }
}

fn v(name: &str, shape: &[u64]) -> Option<ep_kernels::graph::ValueInfo> {
    Some(val(name, F32, shape))
}

fn ints(name: &str, values: &[i64]) -> Option<ep_kernels::graph::ValueInfo> {
    Some(const_val(name, &T::i64(&[values.len() as u64], values)))
}

fn products() -> Vec<Case> {
    let mm = node("MatMul", 13, vec![v("a", &[7, 33]), v("b", &[33, 65])], vec![val("y", F32, &[7, 65])], vec![]);
    let gemm =
        node("Gemm", 13, vec![v("a", &[5, 17]), v("b", &[17, 9]), v("c", &[9])], vec![val("y", F32, &[5, 9])], vec![]);
    let conv = node(
        "Conv",
        11,
        vec![v("x", &[1, 3, 17, 19]), v("w", &[8, 3, 3, 3])],
        vec![val("y", F32, &[1, 8, 15, 17])],
        vec![],
    );
    let convt = node(
        "ConvTranspose",
        11,
        vec![v("x", &[1, 4, 5, 7]), v("w", &[4, 3, 3, 3])],
        vec![val("y", F32, &[1, 3, 7, 9])],
        vec![],
    );
    let add = node("Add", 14, vec![v("a", &[3, 5]), v("b", &[5])], vec![val("y", F32, &[3, 5])], vec![]);
    vec![
        case(mm, &[&[&[130, 33], &[33, 65]], &[&[2, 1, 33], &[33, 65]]]),
        case(gemm, &[]),
        case(conv, &[&[&[2, 3, 9, 33], &[8, 3, 3, 3]]]),
        case(convt, &[]),
        case(add, &[&[&[257, 5], &[5]]]),
    ]
}

fn norms() -> Vec<Case> {
    let ln = node(
        "LayerNormalization",
        17,
        vec![v("x", &[3, 7, 33]), v("s", &[33]), v("b", &[33])],
        vec![val("y", F32, &[3, 7, 33])],
        vec![("axis", Attr::Int(-1))],
    );
    let rms =
        node("RMSNormalization", 23, vec![v("x", &[3, 37]), v("s", &[37])], vec![val("y", F32, &[3, 37])], vec![]);
    let simplified = node(
        "SimplifiedLayerNormalization",
        1,
        vec![v("x", &[3, 64]), v("s", &[64])],
        vec![val("y", F32, &[3, 64])],
        vec![],
    );
    let skip = |op: &str, beta: bool| {
        let mut inputs = vec![v("x", &[2, 5, 36]), v("skip", &[2, 5, 36]), v("g", &[36])];
        if beta {
            inputs.push(v("b", &[36]));
        }
        ms(node(op, 1, inputs, vec![val("y", F32, &[2, 5, 36])], vec![]))
    };
    let softmax = node("Softmax", 13, vec![v("x", &[3, 7, 130])], vec![val("y", F32, &[3, 7, 130])], vec![]);
    let logsoftmax =
        node("LogSoftmax", 13, vec![v("x", &[5, 3])], vec![val("y", F32, &[5, 3])], vec![("axis", Attr::Int(0))]);
    let reduce = node(
        "ReduceMean",
        13,
        vec![v("x", &[3, 37, 5])],
        vec![val("y", F32, &[3, 1, 5])],
        vec![("axes", Attr::Ints(vec![1]))],
    );
    let argmax = node(
        "ArgMax",
        13,
        vec![v("x", &[3, 37, 5])],
        vec![val("y", ep_kernels::ElemType::I64, &[3, 1, 5])],
        vec![("axis", Attr::Int(1))],
    );
    let batch = node(
        "BatchNormalization",
        15,
        vec![v("x", &[2, 3, 5, 7]), v("s", &[3]), v("b", &[3]), v("m", &[3]), v("var", &[3])],
        vec![val("y", F32, &[2, 3, 5, 7])],
        vec![],
    );
    let group = node(
        "GroupNormalization",
        21,
        vec![v("x", &[2, 4, 5, 7]), v("s", &[4]), v("b", &[4])],
        vec![val("y", F32, &[2, 4, 5, 7])],
        vec![("num_groups", Attr::Int(2))],
    );
    vec![
        case(ln, &[&[&[2, 5, 64], &[64], &[64]]]),
        case(rms, &[]),
        case(simplified, &[]),
        case(skip("SkipLayerNormalization", true), &[]),
        case(skip("SkipSimplifiedLayerNormalization", false), &[]),
        case(softmax, &[&[&[1, 1, 3]]]),
        case(logsoftmax, &[]),
        case(reduce, &[&[&[1, 1000, 1]]]),
        case(argmax, &[&[&[1, 1000, 1]]]),
        case(batch, &[]),
        case(group, &[&[&[1, 4, 61, 139], &[4], &[4]]]),
    ]
}

fn layouts() -> Vec<Case> {
    let transpose = node(
        "Transpose",
        13,
        vec![v("x", &[2, 37, 41])],
        vec![val("y", F32, &[2, 41, 37])],
        vec![("perm", Attr::Ints(vec![0, 2, 1]))],
    );
    let concat = node(
        "Concat",
        13,
        vec![v("a", &[2, 3]), v("b", &[2, 5]), v("c", &[2, 1])],
        vec![val("y", F32, &[2, 9])],
        vec![("axis", Attr::Int(1))],
    );
    let slice = node(
        "Slice",
        13,
        vec![v("x", &[6, 9]), ints("starts", &[1]), ints("ends", &[-1]), ints("axes", &[1])],
        vec![val("y", F32, &[6, 7])],
        vec![],
    );
    let split = node(
        "Split",
        13,
        vec![v("x", &[4, 6])],
        vec![val("y0", F32, &[4, 3]), val("y1", F32, &[4, 3])],
        vec![("axis", Attr::Int(1))],
    );
    let gather = node(
        "Gather",
        13,
        vec![v("x", &[10, 7]), Some(val("i", ElemType::I64, &[3, 2]))],
        vec![val("y", F32, &[3, 2, 7])],
        vec![],
    );
    let expand =
        node("Expand", 13, vec![v("x", &[3, 1]), ints("shape", &[2, 3, 5])], vec![val("y", F32, &[2, 3, 5])], vec![]);
    vec![
        case(transpose, &[&[&[1, 40, 64]]]),
        case(concat, &[]),
        case(slice, &[]),
        case(split, &[]),
        case(gather, &[]),
        case(expand, &[]),
    ]
}

fn images() -> Vec<Case> {
    let pool = |op: &str, attrs: Vec<(&str, Attr)>, out: &[u64]| {
        node(op, 12, vec![v("x", &[1, 2, 9, 11])], vec![val("y", F32, out)], attrs)
    };
    let window = || vec![("kernel_shape", Attr::Ints(vec![3, 3])), ("strides", Attr::Ints(vec![2, 2]))];
    let pad = node(
        "Pad",
        13,
        vec![v("x", &[1, 2, 5, 7]), ints("pads", &[0, 0, 1, 2, 0, 0, 2, 1])],
        vec![val("y", F32, &[1, 2, 8, 10])],
        vec![],
    );
    let scales = Some(const_val("scales", &T::f32(&[4], &[1.0, 1.0, 2.0, 2.0])));
    let resize =
        node("Resize", 13, vec![v("x", &[1, 2, 5, 7]), None, scales], vec![val("y", F32, &[1, 2, 10, 14])], vec![]);
    vec![
        case(pool("MaxPool", window(), &[1, 2, 4, 5]), &[]),
        case(pool("AveragePool", window(), &[1, 2, 4, 5]), &[]),
        case(pool("GlobalAveragePool", vec![], &[1, 2, 1, 1]), &[&[&[1, 3, 64, 65]]]),
        case(pad, &[]),
        case(resize, &[]),
    ]
}

fn llm() -> Vec<Case> {
    let attention = |ty: ElemType| {
        let inputs = vec![
            Some(val("q", ty, &[1, 2, 40, 64])),
            Some(val("k", ty, &[1, 2, 70, 64])),
            Some(val("v", ty, &[1, 2, 70, 64])),
        ];
        node("Attention", 23, inputs, vec![val("y", ty, &[1, 2, 40, 64])], vec![])
    };
    let decode: &[&[u64]] = &[&[1, 2, 1, 64], &[1, 2, 300, 64], &[1, 2, 300, 64]];
    let long: &[&[u64]] = &[&[1, 2, 300, 64], &[1, 2, 1000, 64], &[1, 2, 1000, 64]];
    let mha = ms(node(
        "MultiHeadAttention",
        1,
        vec![v("q", &[1, 40, 160]), v("k", &[1, 70, 160]), v("v", &[1, 70, 160])],
        vec![val("y", F32, &[1, 40, 160])],
        vec![("num_heads", Attr::Int(2))],
    ));
    let (n, k, block) = (33u64, 64u64, 32u64);
    let b = T::u8(&[n, k / block, block / 2], &vec![0x37; (n * k / 2) as usize]);
    let scales = T::f32(&[n * k / block], &vec![0.5; (n * k / block) as usize]);
    let nbits = ms(node(
        "MatMulNBits",
        1,
        vec![v("a", &[3, k]), Some(const_val("b", &b)), Some(const_val("scales", &scales))],
        vec![val("y", F32, &[3, n])],
        vec![
            ("K", Attr::Int(k as i64)),
            ("N", Attr::Int(n as i64)),
            ("bits", Attr::Int(4)),
            ("block_size", Attr::Int(block as i64)),
        ],
    ));
    let rotary = ms(node(
        "RotaryEmbedding",
        1,
        vec![v("x", &[2, 5, 96]), Some(val("pos", ElemType::I64, &[2, 5])), v("cos", &[16, 12]), v("sin", &[16, 12])],
        vec![val("y", F32, &[2, 5, 96])],
        vec![("num_heads", Attr::Int(3)), ("rotary_embedding_dim", Attr::Int(24))],
    ));
    // ONNX's op: X [B, N, S, D], caches per token (no position ids).
    let onnx_rotary = node(
        "RotaryEmbedding",
        23,
        vec![v("x", &[2, 3, 5, 32]), v("cos", &[2, 5, 16]), v("sin", &[2, 5, 16])],
        vec![val("y", F32, &[2, 3, 5, 32])],
        vec![],
    );
    let i32v = |name: &str, shape: &[u64]| Some(val(name, ElemType::I32, shape));
    let gqa = ms(node(
        "GroupQueryAttention",
        1,
        vec![
            v("q", &[1, 37, 256]),
            v("k", &[1, 37, 128]),
            v("v", &[1, 37, 128]),
            None,
            None,
            i32v("seqlens", &[1]),
            i32v("total", &[]),
        ],
        vec![val("y", F32, &[1, 37, 256]), val("pk", F32, &[1, 2, 37, 64]), val("pv", F32, &[1, 2, 37, 64])],
        vec![("num_heads", Attr::Int(4)), ("kv_num_heads", Attr::Int(2))],
    ));
    let nbits_shapes: &[&[u64]] = &[&[40, k], &b.shape, &scales.shape];
    let (vocab, hidden) = (67u64, 80u64);
    let gbq = ms(node(
        "GatherBlockQuantized",
        1,
        vec![
            Some(val("data", ElemType::U8, &[vocab, hidden / 2])),
            Some(val("ids", ElemType::I64, &[2, 7])),
            v("scales", &[vocab, hidden / 16]),
            Some(val("zp", ElemType::U8, &[vocab, hidden / 32 + 1])),
        ],
        vec![val("y", F32, &[2, 7, hidden])],
        vec![("bits", Attr::Int(4)), ("block_size", Attr::Int(16)), ("quantize_axis", Attr::Int(1))],
    ));
    let gbq_prefill: &[&[u64]] = &[&[vocab, hidden / 2], &[1, 300], &[vocab, hidden / 16], &[vocab, hidden / 32 + 1]];
    vec![
        case(attention(F32), &[decode, long]),
        case(attention(F16), &[decode, long]),
        case(mha, &[]),
        case(nbits, &[nbits_shapes]),
        case(gbq, &[gbq_prefill]),
        case(rotary, &[]),
        case(onnx_rotary, &[]),
        case(gqa, &[]),
    ]
}

fn cases() -> Vec<Case> {
    [products(), norms(), layouts(), images(), llm()].into_iter().flatten().collect()
}

fn same_def(a: &dyn OpDef, b: &dyn OpDef) -> bool {
    std::ptr::addr_eq(a as *const dyn OpDef, b as *const dyn OpDef)
}

/// The variants of the kernel `def` builds: its own list, or (for ops that run another
/// family's kernel and list none, so each golden is listed once) that family's.
fn own_variants(def: &dyn OpDef, caps: &DeviceCaps) -> Vec<ep_kernels::ShaderVariant> {
    let own = def.variants(caps);
    if !own.is_empty() {
        return own;
    }
    let (domain, owner) = match def.names() {
        ["Gemm"] => ("", "MatMul"),
        _ => (ep_kernels::ops::attention::INTERNAL_DOMAIN, "FlashAttention"),
    };
    let found = registry().iter().find(|d| d.domain() == domain && d.names().contains(&owner));
    found.map(|d| d.variants(caps)).unwrap_or_default()
}

fn has_f16(node: &Node) -> bool {
    node.inputs.iter().flatten().any(|v| v.elem_type == F16.onnx())
}

/// Plans `c` at each of its shape sets on `caps`, checking the variants against `known`.
fn check_case(c: &Case, caps: &DeviceCaps, profile: &str, known: &BTreeSet<String>) {
    let what = format!("{} on {profile}", c.node.op_type);
    let def = lookup(&c.node).unwrap_or_else(|| panic!("{what}: not registered"));
    // attention=flash: every float type, so the SIMT kernel's plans are checked too.
    let opts = PlacementOptions { flash_attention: FlashMode::All, ..PlacementOptions::defaults(caps.clone()) };
    def.check(&c.node, &opts).unwrap_or_else(|e| panic!("{what}: declined: {e}"));
    let own: BTreeSet<String> = own_variants(def, caps).iter().map(|v| v.name()).collect();
    let kernel = def.build(&c.node).unwrap_or_else(|e| panic!("{what}: {e}"));
    for shapes in &c.shapes {
        let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| s.as_deref()).collect();
        let plan =
            kernel.plan(&refs, caps, &ExecOptions::default()).unwrap_or_else(|e| panic!("{what} {shapes:?}: {e}"));
        let plan = plan.unwrap_or_else(|| panic!("{what} {shapes:?}: no plan"));
        assert!(!plan.dispatches.is_empty(), "{what} {shapes:?}: no dispatch");
        for (name, grid) in &plan.dispatches {
            assert!(known.contains(name), "{what} {shapes:?}: {name} has no golden");
            assert!(grid.iter().all(|&g| g >= 1 && g <= caps.max_workgroups_per_dimension), "{what}: grid {grid:?}");
        }
        let mine = plan.dispatches.iter().any(|(name, _)| own.contains(name));
        assert!(mine, "{what} {shapes:?}: none of {:?} is the op's own variant", plan.dispatches);
        assert!(!plan.line.is_empty() && !plan.tiling.is_empty(), "{what}: empty plan line");
    }
}

#[test]
fn every_kernel_plans_its_dispatches_on_every_profile() {
    let cases = cases();
    for profile in PROFILES {
        let caps = profiles::get(profile).unwrap();
        let known: BTreeSet<String> = registry_variants(&caps).into_keys().collect();
        for c in cases.iter().filter(|c| caps.shader_f16 || !has_f16(&c.node)) {
            check_case(c, &caps, profile, &known);
        }
    }
}

/// Every family with GPU work has a case above: all but the renames, the elementwise ops (one
/// generated kernel, covered by Add) and the internal FlashAttention (the Attention kernel).
#[test]
fn every_family_has_a_case() {
    let cases = cases();
    let covered: Vec<&dyn OpDef> = cases.iter().filter_map(|c| lookup(&c.node)).collect();
    let elementwise = ep_kernels::ops::elementwise::ops();
    for &def in registry() {
        let skipped = def.is_alias()
            || def.domain() == ep_kernels::ops::attention::INTERNAL_DOMAIN
            || elementwise.iter().any(|&e| same_def(e, def));
        if !skipped {
            assert!(covered.iter().any(|&c| same_def(c, def)), "no plan case for {:?}", def.names());
        }
    }
}

/// The tensor-core engine on the H200 and the split-KV engine for one query row.
#[test]
fn attention_plans_name_their_engine() {
    let caps = profiles::get("h200").unwrap();
    let c = llm().into_iter().nth(1).unwrap();
    let kernel = lookup(&c.node).unwrap().build(&c.node).unwrap();
    let plan = |shapes: &[&[u64]]| {
        let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| Some(*s)).collect();
        kernel.plan(&refs, &caps, &ExecOptions::default()).unwrap().unwrap()
    };
    let prefill = plan(&[&[1, 2, 300, 64], &[1, 2, 1000, 64], &[1, 2, 1000, 64]]);
    assert!(prefill.line.contains("tensor cores"), "{}", prefill.line);
    assert!(prefill.tiling.contains("key split"), "{}", prefill.tiling);
    let decode = plan(&[&[1, 2, 1, 64], &[1, 2, 300, 64], &[1, 2, 300, 64]]);
    // One dispatch: few steps over the keys, so a workgroup per query row reads them all.
    assert!(decode.line.contains("split-KV attention per K/V head"), "{}", decode.line);
    assert!(decode.line.contains("one workgroup of 512 per query row over 1 steps"), "{}", decode.line);
    assert_eq!(decode.dispatches.len(), 1);
    assert!(decode.dispatches[0].0.starts_with("attn_decode_kv_"), "{:?}", decode.dispatches);
    // Llama's decode: 32 query heads over 8 K/V heads. At a 513-key cache two steps of 512 keys,
    // a workgroup per query row (the wide form); a long cache of 4096 keys takes four rows per
    // workgroup in 64 chunks, too many for its last workgroup to combine (16 rounds of four): the
    // per-row combine follows.
    let llama = |keys: u64| plan(&[&[1, 32, 1, 64], &[1, 8, keys, 64], &[1, 8, keys, 64]]);
    let short = llama(513);
    assert!(short.line.contains("over 2 steps of 512 keys"), "{}", short.line);
    assert_eq!(short.dispatches.len(), 1);
    assert!(short.dispatches[0].0.ends_with("_r1_s32_mask_none_w512"), "{:?}", short.dispatches);
    assert_eq!(short.dispatches[0].1, [32, 1, 1], "{:?}", short.dispatches);
    let long = llama(4096);
    assert!(long.line.contains("64 chunks") && !long.line.contains("combined by the last"), "{}", long.line);
    assert!(long.dispatches[1].0.starts_with("attn_decode_combine"), "{:?}", long.dispatches);
}

/// GroupQueryAttention's flash step is causal, so a prompt's key tiles past the diagonal are
/// skipped (a mask alone would load and discard them).
#[test]
fn gqa_attention_skips_keys_past_the_diagonal() {
    let caps = profiles::get("h200").unwrap();
    let c = llm().into_iter().find(|c| c.node.op_type == "GroupQueryAttention").unwrap();
    let kernel = lookup(&c.node).unwrap().build(&c.node).unwrap();
    let (q, kv) = ([1u64, 37, 256], [1u64, 37, 128]);
    let refs = [Some(&q[..]), Some(&kv[..]), Some(&kv[..]), None, None, Some(&[1u64][..]), Some(&[][..])];
    let plan = kernel.plan(&refs, &caps, &ExecOptions::default()).unwrap().unwrap();
    assert!(plan.line.contains("mask seqlens, causal BottomRight"), "{}", plan.line);
}

/// `kernel` prepared on the test adapter at `shapes` (buffers of the node's declared types,
/// never run): its bound dispatches as (variant, grid), which must equal its plan's.
fn assert_binds_plan(kernel: &dyn Kernel, node: &Node, shapes: &[Option<Vec<u64>>]) -> usize {
    let gpu = common::gpu();
    let (caps, options) = (gpu.caps().clone(), ExecOptions::default());
    let what = format!("{} {shapes:?}", node.op_type);
    let refs: Vec<Option<&[u64]>> = shapes.iter().map(|s| s.as_deref()).collect();
    let type_of = |v: Option<&ValueInfo>| v.and_then(|v| ElemType::from_onnx(v.elem_type)).unwrap_or(F32);
    let types: Vec<ElemType> = node.inputs.iter().map(|v| type_of(v.as_ref())).collect();
    let out_types: Vec<ElemType> = node.outputs.iter().map(|v| type_of(v.as_ref())).collect();
    let buffer = |s: &[u64], ty: ElemType| {
        gpu.storage_buffer((s.iter().product::<u64>() * ty.size()).max(4), "plan test").unwrap()
    };
    let ins: Vec<Option<GpuBuffer>> = refs.iter().zip(&types).map(|(s, &ty)| s.map(|s| buffer(s, ty))).collect();
    // A step that reads values (GroupQueryAttention's total length): the plan's assumption
    // without a past, as many tokens as the query has.
    let out_shapes = if kernel.value_inputs().is_empty() {
        kernel.infer(&refs).unwrap()
    } else {
        let total = [refs[0].map_or(0, |q| q[1] as i64)];
        kernel.infer_values(&refs, &[Some(&total)]).unwrap()
    };
    let outs: Vec<GpuBuffer> = out_shapes.iter().zip(&out_types).map(|(s, &ty)| buffer(s, ty)).collect();
    let inputs = ins.iter().zip(&refs).zip(&types);
    let outputs = outs.iter().zip(&out_shapes).zip(&out_types);
    let io = KernelIo {
        inputs: inputs
            .map(|((b, s), &ty)| b.as_ref().zip(*s).map(|(buf, shape)| Tensor { buf, shape, ty, constant: false }))
            .collect(),
        outputs: outputs.map(|((buf, shape), &ty)| Tensor { buf, shape, ty, constant: false }).collect(),
    };
    let status = gpu.storage_buffer(4, "status").unwrap();
    let cx = PrepareCx::on(&gpu, &options, &status);
    let step = kernel.prepare(&cx, &io).unwrap_or_else(|e| panic!("{what}: {e}"));
    let bound: Vec<(String, [u32; 3])> = step.dispatches.iter().map(|d| (d.label.clone(), d.grid())).collect();
    let plan = kernel.plan(&refs, &caps, &options).unwrap().unwrap();
    assert_eq!(bound, plan.dispatches, "{what}");
    bound.len()
}

/// On the test adapter, `prepare` binds exactly the planned dispatches (variant and grid, in
/// order) for every case it can run.
#[test]
fn prepare_binds_the_plan() {
    let f16 = common::gpu().caps().shader_f16;
    let mut checked = 0;
    for c in cases().iter().filter(|c| f16 || !has_f16(&c.node)) {
        let kernel = lookup(&c.node).unwrap().build(&c.node).unwrap();
        for shapes in &c.shapes {
            checked += assert_binds_plan(kernel.as_ref(), &c.node, shapes);
        }
    }
    assert!(checked >= cases().len(), "only {checked} dispatches compared");
}

/// The tensor-core attention kernel (emulated where the adapter lacks tensor cores), with and
/// without key splits: the main kernel, then the reduction of the partials.
#[test]
fn tensor_core_attention_binds_the_plan() {
    if !common::gpu().caps().shader_f16 {
        return;
    }
    let c = llm().into_iter().nth(1).unwrap();
    let long: Vec<Option<Vec<u64>>> =
        [[1, 2, 300, 64], [1, 2, 1000, 64], [1, 2, 1000, 64]].iter().map(|s| Some(s.to_vec())).collect();
    for splits in [None, Some(1), Some(3)] {
        let mut kernel = ep_kernels::ops::attention::onnx::kernel(&c.node).unwrap();
        kernel.engine = ep_kernels::ops::attention::Engine::CoopEmulated;
        kernel.splits = splits;
        let count = assert_binds_plan(&kernel, &c.node, &long);
        if let Some(s) = splits {
            assert_eq!(count, if s > 1 { 2 } else { 1 }, "{s} splits");
        }
    }
}

/// Llama-3.2-1B's prompt (32/8 heads, packed QKV, rotary): the preparation is one dispatch (Q's
/// rows, both caches) and writes no mask; the tensor-core flash kernel reads `seqlens_k` itself
/// (key splits at 512 tokens, one at 1024). With a local window it reads the mask the
/// preparation writes.
#[test]
fn gqa_prompt_reads_seqlens_and_writes_no_mask() {
    let caps = profiles::get("h200").unwrap();
    let i32v = |name: &str, shape: &[u64]| Some(val(name, ElemType::I32, shape));
    let f16 = ElemType::F16;
    let gqa = |window: i64| {
        ms(node(
            "GroupQueryAttention",
            1,
            vec![
                Some(val("q", f16, &[1, 1024, 3072])),
                None,
                None,
                None,
                None,
                i32v("seqlens", &[1]),
                i32v("total", &[]),
                Some(val("cos", f16, &[2048, 32])),
                Some(val("sin", f16, &[2048, 32])),
            ],
            vec![val("y", f16, &[1, 1024, 2048]), val("pk", f16, &[1, 8, 1024, 64]), val("pv", f16, &[1, 8, 1024, 64])],
            vec![
                ("num_heads", Attr::Int(32)),
                ("kv_num_heads", Attr::Int(8)),
                ("do_rotary", Attr::Int(1)),
                ("local_window_size", Attr::Int(window)),
            ],
        ))
    };
    let plan_at = |n: &Node, s: u64| {
        let kernel = lookup(n).unwrap().build(n).unwrap();
        let (q, rows) = ([1u64, s, 3072], [2048u64, 32]);
        let refs =
            [Some(&q[..]), None, None, None, None, Some(&[1u64][..]), Some(&[][..]), Some(&rows[..]), Some(&rows[..])];
        kernel.plan(&refs, &caps, &ExecOptions::default()).unwrap().unwrap()
    };
    let names = |p: &StepPlan| p.dispatches.iter().map(|d| d.0.clone()).collect::<Vec<_>>();
    let prompt = gqa(-1);
    let plan = plan_at(&prompt, 1024);
    assert!(plan.line.contains("mask seqlens, causal BottomRight"), "{}", plan.line);
    // 8 query tiles of 128 rows × 32 heads fill the H200: eight subgroups a workgroup.
    assert_eq!(names(&plan), ["gqa_rows3_f16", "attn_coop_f16_d64_128x32_mask_seqlens"]);
    // At 512 (128 tiles) they fill half of it, which the prefetching tiling takes, with key splits.
    let plan = plan_at(&prompt, 512);
    assert_eq!(
        names(&plan),
        ["gqa_rows3_f16", "attn_coop_f16_d64_128x32_mask_seqlens_split", "attn_decode_reduce_f16"]
    );
    let plan = plan_at(&gqa(128), 1024);
    assert!(plan.line.contains("mask bool, causal BottomRight"), "{}", plan.line);
    assert_eq!(names(&plan), ["gqa_rows3_f16", "attn_coop_f16_d64_128x32_mask_bool"]);
}

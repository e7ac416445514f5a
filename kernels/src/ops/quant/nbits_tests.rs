//! Unit tests of `nbits.rs`: operand sizes, the kernel choice and the H200's decode and prefill routes.

use super::*;

fn kernel(bits: u32, block: u64, zp: ZeroPoints) -> NbitsKernel {
    NbitsKernel {
        name: "q".into(),
        ty: ElemType::F32,
        k: 80,
        n: 67,
        bits,
        block,
        zp,
        bias: true,
        silu: false,
        gate: false,
        up: None,
        norm: None,
        force: None,
        weights_constant: true,
        dequantized: DequantSlot::default(),
    }
}

#[test]
fn operand_sizes() {
    // K 80, block 16: 5 blocks of 8 bytes (4 bits); 3 bytes of packed zero points per column.
    let k = kernel(4, 16, ZeroPoints::Packed);
    assert_eq!(k.strides(), (40, 3));
    let ok = k.infer(&[Some(&[3, 80]), Some(&[67, 5, 8]), Some(&[335]), Some(&[201]), None, Some(&[67])]);
    assert_eq!(ok.unwrap(), vec![vec![3, 67]]);
    assert!(k.infer(&[Some(&[3, 81]), Some(&[67, 5, 8]), Some(&[335]), Some(&[201]), None, Some(&[67])]).is_err());
    assert!(k.infer(&[Some(&[3, 80]), Some(&[67, 5, 8]), Some(&[335]), Some(&[200]), None, Some(&[67])]).is_err());
    // 8 bits, block 32: 3 blocks of 32 bytes, one zero point byte per block.
    let k = kernel(8, 32, ZeroPoints::Typed);
    assert_eq!(k.strides(), (96, 3));
    assert!(k.infer(&[Some(&[80]), Some(&[67, 3, 32]), Some(&[67, 3]), Some(&[201]), None, Some(&[67])]).is_ok());
}

#[test]
fn kernel_choice() {
    let caps = crate::caps::profiles::get("llvmpipe").unwrap();
    let mut k = kernel(4, 16, ZeroPoints::None);
    assert_eq!(
        (k.kind(1, &caps), k.kind(8, &caps), k.kind(9, &caps)),
        (NbitsKind::Gemv, NbitsKind::Gemv, NbitsKind::Tiled)
    );
    let small = DeviceCaps { max_workgroup_storage_bytes: 8192, ..caps.clone() };
    assert_eq!(k.kind(512, &small), NbitsKind::Gemv);
    k.force = Some(NbitsKind::Dequant);
    assert_eq!(k.kind(1, &caps), NbitsKind::Dequant);
}

/// Llama-3.2-1B's int4 decode products on the H200 (32 invocations per group): the one-row
/// kernel with 4 columns a group where that still fills the device (gate/up, the LM head), 1
/// where it would not (QKV, O); the GEMV kernel for K = 8192 (down) and for 2 rows.
#[test]
fn decode_products_on_the_h200() {
    let caps = crate::caps::profiles::get("h200").unwrap();
    let name = |k: u64, n: u64, m: u64| {
        let node = NbitsKernel { ty: ElemType::F16, k, n, block: 32, ..kernel(4, 32, ZeroPoints::None) };
        match node.route(m, &caps, &GemmOptions::default()).unwrap() {
            Route::Direct(_, d) => d.variant.name(),
            Route::Dequant(..) => panic!("decode takes a direct kernel"),
        }
    };
    assert_eq!(name(2048, 8192, 1), "quant_nbits_gemv_l32_c4_u2_f16_b4_zp_none");
    assert_eq!(name(2048, 128256, 1), "quant_nbits_gemv_l32_c4_u2_f16_b4_zp_none");
    assert_eq!(name(2048, 3072, 1), "quant_nbits_gemv_l32_c1_u2_f16_b4_zp_none");
    assert_eq!(name(2048, 2048, 1), "quant_nbits_gemv_l32_c1_u2_f16_b4_zp_none");
    assert_eq!(name(8192, 2048, 1), "quant_nbits_gemv_r1_c8_t256_f16_b4_zp_none");
    assert_eq!(name(2048, 8192, 2), "quant_nbits_gemv_r4_c8_t256_f16_b4_zp_none");
}

/// A prefill's product on the H200: constant weights dequantised as `[K, N]` take the widest
/// tile an fp16 MatMul of that shape gets (a transposed B got the 128×128 one).
#[test]
fn constant_weights_take_an_untransposed_gemm() {
    let caps = crate::caps::profiles::get("h200").unwrap();
    let mut k = NbitsKernel { ty: ElemType::F16, k: 2048, n: 8192, block: 32, ..kernel(4, 32, ZeroPoints::None) };
    let names = |k: &NbitsKernel| match k.route(512, &caps, &GemmOptions::default()).unwrap() {
        Route::Dequant(dq, plan) => (dq.variant.name(), plan.steps[0].variant.name()),
        Route::Direct(..) => panic!("512 rows on the H200 take the dequantised route"),
    };
    let wide = "gemm_f16_coop_128x256_k16_w4x4_s2_p2_ss".to_string();
    assert_eq!(names(&k), ("quant_nbits_dequant_kn_f16_b4_zp_none".to_string(), wide));
    // Weights dequantised every run stay `[N, K]`, read transposed.
    k.weights_constant = false;
    k.force = Some(NbitsKind::Dequant);
    let (dq, gemm) = names(&k);
    assert_eq!(dq, "quant_nbits_dequant_f16_b4_zp_none");
    assert!(gemm.ends_with("_bt_ss"), "{gemm}");
}

/// SwiGLU's gate with its up projection on the H200: one row plans the one-row kernel over both
/// weights; three rows plan the up projection, then the gated product (two GEMV dispatches).
#[test]
fn swiglu_plans_one_dispatch_for_one_row() {
    let caps = crate::caps::profiles::get("h200").unwrap();
    let one =
        NbitsKernel { ty: ElemType::F16, k: 2048, n: 8192, block: 32, bias: false, ..kernel(4, 32, ZeroPoints::None) };
    let gate = NbitsKernel { silu: true, up: Some(Box::new(one.clone())), ..one };
    let names = |m: u64| {
        let (a, b, s) = ([m, 2048], [8192, 64, 16], [8192 * 64]);
        let mut shapes: Vec<Option<&[u64]>> = vec![Some(&a), Some(&b), Some(&s), None, None, None, None];
        shapes.extend([Some(&b[..]), Some(&s[..])]);
        let plan = gate.plan(&shapes, &caps, &ExecOptions::default()).unwrap().unwrap();
        plan.dispatches.into_iter().map(|(name, _)| name).collect::<Vec<_>>()
    };
    assert_eq!(names(1), ["quant_nbits_gemv_l32_c4_u2_dual_f16_b4_zp_none"]);
    assert_eq!(names(3), ["quant_nbits_gemv_r4_c8_t256_f16_b4_zp_none", "quant_nbits_gemv_r4_c8_t256_f16_b4_zp_none"]);
}

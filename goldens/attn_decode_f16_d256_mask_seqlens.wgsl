enable f16;

struct Params {
    sq: u32,
    skv: u32,
    heads: u32,
    group: u32,
    q_stride: vec4<u32>,
    k_stride: vec4<u32>,
    v_stride: vec4<u32>,
    o_stride: vec4<u32>,
    m_stride: vec4<u32>,
    scale: f32,
    causal: u32,
    causal_offset: i32,
    // Scaled scores become softcap · tanh(s / softcap) where this is positive.
    softcap: f32,
    // Keys per chunk (a multiple of 64).
    chunk: u32,
    // Workgroups with work: (batch · heads · sq) · splits.
    count: u32,
    splits: u32,
    pad1: u32,
}

@group(0) @binding(0) var<storage, read> q: array<f16>;
@group(0) @binding(1) var<storage, read> k: array<f16>;
@group(0) @binding(2) var<storage, read> v: array<f16>;
@group(0) @binding(3) var<storage, read> m: array<i32>;
@group(0) @binding(4) var<storage, read_write> part: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

const D: u32 = 256u;
// Output columns per invocation.
const DC: u32 = 4u;

var<workgroup> q_row: array<f32, D>;
var<workgroup> probs: array<f32, 64>;
var<workgroup> red: array<f32, 64>;

fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// softcap · tanh(x / softcap) where p.softcap > 0 (GroupQueryAttention's softcap, on the scaled
// score before the mask, as ONNX Runtime's CPU EP applies it), else x. tanh's argument is clamped
// where tanh is ±1 in f32, so no driver's exp-based tanh overflows.
fn capped(x: f32) -> f32 {
    if (p.softcap > 0.0) {
        return p.softcap * tanh(clamp(x / p.softcap, -9.0, 9.0));
    }
    return x;
}


// The workgroup's max (`is_max`) or sum of `x`, for every invocation.
fn reduce(x: f32, tid: u32, is_max: bool) -> f32 {
    workgroupBarrier();
    red[tid] = x;
    workgroupBarrier();
    for (var s = 32u; s > 0u; s = s >> 1u) {
        if (tid < s) {
            if (is_max) {
                red[tid] = max(red[tid], red[tid + s]);
            } else {
                red[tid] = red[tid] + red[tid + s];
            }
        }
        workgroupBarrier();
    }
    return red[0];
}

@compute @workgroup_size(64, 1, 1)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let lin = wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y;
    if (lin >= p.count) {
        return;
    }
    let row = lin / p.splits;
    let split = lin % p.splits;
    let qi = row % p.sq;
    let bh = row / p.sq;
    let b = bh / p.heads;
    let causal_offset = max(m[b] + 1 - i32(p.sq), 0);
    let h = bh % p.heads;
    let kvh = h / p.group;
    let q_base = b * p.q_stride.x + h * p.q_stride.y + qi * p.q_stride.z;
    let k_base = b * p.k_stride.x + kvh * p.k_stride.y;
    let v_base = b * p.v_stride.x + kvh * p.v_stride.y;
    for (var dd = tid; dd < D; dd = dd + 64u) {
        q_row[dd] = f32(q[q_base + dd * p.q_stride.w]);
    }
    var k_end = p.skv;
    if (p.causal != 0u) {
        k_end = u32(clamp(i32(qi) + causal_offset + 1, 0, i32(p.skv)));
    }
    let c0 = split * p.chunk;
    let c1 = min(c0 + p.chunk, k_end);
    var m_run = neg_inf();
    var l_run = 0.0;
    var acc: array<f32, DC>;
    for (var j = 0u; j < DC; j = j + 1u) {
        acc[j] = 0.0;
    }
    workgroupBarrier();
    for (var j0 = c0; j0 < c1; j0 = j0 + 64u) {
        let kj = j0 + tid;
        var s = neg_inf();
        if (kj < c1) {
            // Unrolled with four independent sums, so the row's loads are all in flight at once.
            let at = k_base + kj * p.k_stride.z;
            let ws = p.k_stride.w;
            var dot0 = 0.0;
            var dot1 = 0.0;
            var dot2 = 0.0;
            var dot3 = 0.0;
            dot0 = fma(q_row[0u], f32(k[at + 0u * ws]), dot0);
            dot1 = fma(q_row[1u], f32(k[at + 1u * ws]), dot1);
            dot2 = fma(q_row[2u], f32(k[at + 2u * ws]), dot2);
            dot3 = fma(q_row[3u], f32(k[at + 3u * ws]), dot3);
            dot0 = fma(q_row[4u], f32(k[at + 4u * ws]), dot0);
            dot1 = fma(q_row[5u], f32(k[at + 5u * ws]), dot1);
            dot2 = fma(q_row[6u], f32(k[at + 6u * ws]), dot2);
            dot3 = fma(q_row[7u], f32(k[at + 7u * ws]), dot3);
            dot0 = fma(q_row[8u], f32(k[at + 8u * ws]), dot0);
            dot1 = fma(q_row[9u], f32(k[at + 9u * ws]), dot1);
            dot2 = fma(q_row[10u], f32(k[at + 10u * ws]), dot2);
            dot3 = fma(q_row[11u], f32(k[at + 11u * ws]), dot3);
            dot0 = fma(q_row[12u], f32(k[at + 12u * ws]), dot0);
            dot1 = fma(q_row[13u], f32(k[at + 13u * ws]), dot1);
            dot2 = fma(q_row[14u], f32(k[at + 14u * ws]), dot2);
            dot3 = fma(q_row[15u], f32(k[at + 15u * ws]), dot3);
            dot0 = fma(q_row[16u], f32(k[at + 16u * ws]), dot0);
            dot1 = fma(q_row[17u], f32(k[at + 17u * ws]), dot1);
            dot2 = fma(q_row[18u], f32(k[at + 18u * ws]), dot2);
            dot3 = fma(q_row[19u], f32(k[at + 19u * ws]), dot3);
            dot0 = fma(q_row[20u], f32(k[at + 20u * ws]), dot0);
            dot1 = fma(q_row[21u], f32(k[at + 21u * ws]), dot1);
            dot2 = fma(q_row[22u], f32(k[at + 22u * ws]), dot2);
            dot3 = fma(q_row[23u], f32(k[at + 23u * ws]), dot3);
            dot0 = fma(q_row[24u], f32(k[at + 24u * ws]), dot0);
            dot1 = fma(q_row[25u], f32(k[at + 25u * ws]), dot1);
            dot2 = fma(q_row[26u], f32(k[at + 26u * ws]), dot2);
            dot3 = fma(q_row[27u], f32(k[at + 27u * ws]), dot3);
            dot0 = fma(q_row[28u], f32(k[at + 28u * ws]), dot0);
            dot1 = fma(q_row[29u], f32(k[at + 29u * ws]), dot1);
            dot2 = fma(q_row[30u], f32(k[at + 30u * ws]), dot2);
            dot3 = fma(q_row[31u], f32(k[at + 31u * ws]), dot3);
            dot0 = fma(q_row[32u], f32(k[at + 32u * ws]), dot0);
            dot1 = fma(q_row[33u], f32(k[at + 33u * ws]), dot1);
            dot2 = fma(q_row[34u], f32(k[at + 34u * ws]), dot2);
            dot3 = fma(q_row[35u], f32(k[at + 35u * ws]), dot3);
            dot0 = fma(q_row[36u], f32(k[at + 36u * ws]), dot0);
            dot1 = fma(q_row[37u], f32(k[at + 37u * ws]), dot1);
            dot2 = fma(q_row[38u], f32(k[at + 38u * ws]), dot2);
            dot3 = fma(q_row[39u], f32(k[at + 39u * ws]), dot3);
            dot0 = fma(q_row[40u], f32(k[at + 40u * ws]), dot0);
            dot1 = fma(q_row[41u], f32(k[at + 41u * ws]), dot1);
            dot2 = fma(q_row[42u], f32(k[at + 42u * ws]), dot2);
            dot3 = fma(q_row[43u], f32(k[at + 43u * ws]), dot3);
            dot0 = fma(q_row[44u], f32(k[at + 44u * ws]), dot0);
            dot1 = fma(q_row[45u], f32(k[at + 45u * ws]), dot1);
            dot2 = fma(q_row[46u], f32(k[at + 46u * ws]), dot2);
            dot3 = fma(q_row[47u], f32(k[at + 47u * ws]), dot3);
            dot0 = fma(q_row[48u], f32(k[at + 48u * ws]), dot0);
            dot1 = fma(q_row[49u], f32(k[at + 49u * ws]), dot1);
            dot2 = fma(q_row[50u], f32(k[at + 50u * ws]), dot2);
            dot3 = fma(q_row[51u], f32(k[at + 51u * ws]), dot3);
            dot0 = fma(q_row[52u], f32(k[at + 52u * ws]), dot0);
            dot1 = fma(q_row[53u], f32(k[at + 53u * ws]), dot1);
            dot2 = fma(q_row[54u], f32(k[at + 54u * ws]), dot2);
            dot3 = fma(q_row[55u], f32(k[at + 55u * ws]), dot3);
            dot0 = fma(q_row[56u], f32(k[at + 56u * ws]), dot0);
            dot1 = fma(q_row[57u], f32(k[at + 57u * ws]), dot1);
            dot2 = fma(q_row[58u], f32(k[at + 58u * ws]), dot2);
            dot3 = fma(q_row[59u], f32(k[at + 59u * ws]), dot3);
            dot0 = fma(q_row[60u], f32(k[at + 60u * ws]), dot0);
            dot1 = fma(q_row[61u], f32(k[at + 61u * ws]), dot1);
            dot2 = fma(q_row[62u], f32(k[at + 62u * ws]), dot2);
            dot3 = fma(q_row[63u], f32(k[at + 63u * ws]), dot3);
            dot0 = fma(q_row[64u], f32(k[at + 64u * ws]), dot0);
            dot1 = fma(q_row[65u], f32(k[at + 65u * ws]), dot1);
            dot2 = fma(q_row[66u], f32(k[at + 66u * ws]), dot2);
            dot3 = fma(q_row[67u], f32(k[at + 67u * ws]), dot3);
            dot0 = fma(q_row[68u], f32(k[at + 68u * ws]), dot0);
            dot1 = fma(q_row[69u], f32(k[at + 69u * ws]), dot1);
            dot2 = fma(q_row[70u], f32(k[at + 70u * ws]), dot2);
            dot3 = fma(q_row[71u], f32(k[at + 71u * ws]), dot3);
            dot0 = fma(q_row[72u], f32(k[at + 72u * ws]), dot0);
            dot1 = fma(q_row[73u], f32(k[at + 73u * ws]), dot1);
            dot2 = fma(q_row[74u], f32(k[at + 74u * ws]), dot2);
            dot3 = fma(q_row[75u], f32(k[at + 75u * ws]), dot3);
            dot0 = fma(q_row[76u], f32(k[at + 76u * ws]), dot0);
            dot1 = fma(q_row[77u], f32(k[at + 77u * ws]), dot1);
            dot2 = fma(q_row[78u], f32(k[at + 78u * ws]), dot2);
            dot3 = fma(q_row[79u], f32(k[at + 79u * ws]), dot3);
            dot0 = fma(q_row[80u], f32(k[at + 80u * ws]), dot0);
            dot1 = fma(q_row[81u], f32(k[at + 81u * ws]), dot1);
            dot2 = fma(q_row[82u], f32(k[at + 82u * ws]), dot2);
            dot3 = fma(q_row[83u], f32(k[at + 83u * ws]), dot3);
            dot0 = fma(q_row[84u], f32(k[at + 84u * ws]), dot0);
            dot1 = fma(q_row[85u], f32(k[at + 85u * ws]), dot1);
            dot2 = fma(q_row[86u], f32(k[at + 86u * ws]), dot2);
            dot3 = fma(q_row[87u], f32(k[at + 87u * ws]), dot3);
            dot0 = fma(q_row[88u], f32(k[at + 88u * ws]), dot0);
            dot1 = fma(q_row[89u], f32(k[at + 89u * ws]), dot1);
            dot2 = fma(q_row[90u], f32(k[at + 90u * ws]), dot2);
            dot3 = fma(q_row[91u], f32(k[at + 91u * ws]), dot3);
            dot0 = fma(q_row[92u], f32(k[at + 92u * ws]), dot0);
            dot1 = fma(q_row[93u], f32(k[at + 93u * ws]), dot1);
            dot2 = fma(q_row[94u], f32(k[at + 94u * ws]), dot2);
            dot3 = fma(q_row[95u], f32(k[at + 95u * ws]), dot3);
            dot0 = fma(q_row[96u], f32(k[at + 96u * ws]), dot0);
            dot1 = fma(q_row[97u], f32(k[at + 97u * ws]), dot1);
            dot2 = fma(q_row[98u], f32(k[at + 98u * ws]), dot2);
            dot3 = fma(q_row[99u], f32(k[at + 99u * ws]), dot3);
            dot0 = fma(q_row[100u], f32(k[at + 100u * ws]), dot0);
            dot1 = fma(q_row[101u], f32(k[at + 101u * ws]), dot1);
            dot2 = fma(q_row[102u], f32(k[at + 102u * ws]), dot2);
            dot3 = fma(q_row[103u], f32(k[at + 103u * ws]), dot3);
            dot0 = fma(q_row[104u], f32(k[at + 104u * ws]), dot0);
            dot1 = fma(q_row[105u], f32(k[at + 105u * ws]), dot1);
            dot2 = fma(q_row[106u], f32(k[at + 106u * ws]), dot2);
            dot3 = fma(q_row[107u], f32(k[at + 107u * ws]), dot3);
            dot0 = fma(q_row[108u], f32(k[at + 108u * ws]), dot0);
            dot1 = fma(q_row[109u], f32(k[at + 109u * ws]), dot1);
            dot2 = fma(q_row[110u], f32(k[at + 110u * ws]), dot2);
            dot3 = fma(q_row[111u], f32(k[at + 111u * ws]), dot3);
            dot0 = fma(q_row[112u], f32(k[at + 112u * ws]), dot0);
            dot1 = fma(q_row[113u], f32(k[at + 113u * ws]), dot1);
            dot2 = fma(q_row[114u], f32(k[at + 114u * ws]), dot2);
            dot3 = fma(q_row[115u], f32(k[at + 115u * ws]), dot3);
            dot0 = fma(q_row[116u], f32(k[at + 116u * ws]), dot0);
            dot1 = fma(q_row[117u], f32(k[at + 117u * ws]), dot1);
            dot2 = fma(q_row[118u], f32(k[at + 118u * ws]), dot2);
            dot3 = fma(q_row[119u], f32(k[at + 119u * ws]), dot3);
            dot0 = fma(q_row[120u], f32(k[at + 120u * ws]), dot0);
            dot1 = fma(q_row[121u], f32(k[at + 121u * ws]), dot1);
            dot2 = fma(q_row[122u], f32(k[at + 122u * ws]), dot2);
            dot3 = fma(q_row[123u], f32(k[at + 123u * ws]), dot3);
            dot0 = fma(q_row[124u], f32(k[at + 124u * ws]), dot0);
            dot1 = fma(q_row[125u], f32(k[at + 125u * ws]), dot1);
            dot2 = fma(q_row[126u], f32(k[at + 126u * ws]), dot2);
            dot3 = fma(q_row[127u], f32(k[at + 127u * ws]), dot3);
            dot0 = fma(q_row[128u], f32(k[at + 128u * ws]), dot0);
            dot1 = fma(q_row[129u], f32(k[at + 129u * ws]), dot1);
            dot2 = fma(q_row[130u], f32(k[at + 130u * ws]), dot2);
            dot3 = fma(q_row[131u], f32(k[at + 131u * ws]), dot3);
            dot0 = fma(q_row[132u], f32(k[at + 132u * ws]), dot0);
            dot1 = fma(q_row[133u], f32(k[at + 133u * ws]), dot1);
            dot2 = fma(q_row[134u], f32(k[at + 134u * ws]), dot2);
            dot3 = fma(q_row[135u], f32(k[at + 135u * ws]), dot3);
            dot0 = fma(q_row[136u], f32(k[at + 136u * ws]), dot0);
            dot1 = fma(q_row[137u], f32(k[at + 137u * ws]), dot1);
            dot2 = fma(q_row[138u], f32(k[at + 138u * ws]), dot2);
            dot3 = fma(q_row[139u], f32(k[at + 139u * ws]), dot3);
            dot0 = fma(q_row[140u], f32(k[at + 140u * ws]), dot0);
            dot1 = fma(q_row[141u], f32(k[at + 141u * ws]), dot1);
            dot2 = fma(q_row[142u], f32(k[at + 142u * ws]), dot2);
            dot3 = fma(q_row[143u], f32(k[at + 143u * ws]), dot3);
            dot0 = fma(q_row[144u], f32(k[at + 144u * ws]), dot0);
            dot1 = fma(q_row[145u], f32(k[at + 145u * ws]), dot1);
            dot2 = fma(q_row[146u], f32(k[at + 146u * ws]), dot2);
            dot3 = fma(q_row[147u], f32(k[at + 147u * ws]), dot3);
            dot0 = fma(q_row[148u], f32(k[at + 148u * ws]), dot0);
            dot1 = fma(q_row[149u], f32(k[at + 149u * ws]), dot1);
            dot2 = fma(q_row[150u], f32(k[at + 150u * ws]), dot2);
            dot3 = fma(q_row[151u], f32(k[at + 151u * ws]), dot3);
            dot0 = fma(q_row[152u], f32(k[at + 152u * ws]), dot0);
            dot1 = fma(q_row[153u], f32(k[at + 153u * ws]), dot1);
            dot2 = fma(q_row[154u], f32(k[at + 154u * ws]), dot2);
            dot3 = fma(q_row[155u], f32(k[at + 155u * ws]), dot3);
            dot0 = fma(q_row[156u], f32(k[at + 156u * ws]), dot0);
            dot1 = fma(q_row[157u], f32(k[at + 157u * ws]), dot1);
            dot2 = fma(q_row[158u], f32(k[at + 158u * ws]), dot2);
            dot3 = fma(q_row[159u], f32(k[at + 159u * ws]), dot3);
            dot0 = fma(q_row[160u], f32(k[at + 160u * ws]), dot0);
            dot1 = fma(q_row[161u], f32(k[at + 161u * ws]), dot1);
            dot2 = fma(q_row[162u], f32(k[at + 162u * ws]), dot2);
            dot3 = fma(q_row[163u], f32(k[at + 163u * ws]), dot3);
            dot0 = fma(q_row[164u], f32(k[at + 164u * ws]), dot0);
            dot1 = fma(q_row[165u], f32(k[at + 165u * ws]), dot1);
            dot2 = fma(q_row[166u], f32(k[at + 166u * ws]), dot2);
            dot3 = fma(q_row[167u], f32(k[at + 167u * ws]), dot3);
            dot0 = fma(q_row[168u], f32(k[at + 168u * ws]), dot0);
            dot1 = fma(q_row[169u], f32(k[at + 169u * ws]), dot1);
            dot2 = fma(q_row[170u], f32(k[at + 170u * ws]), dot2);
            dot3 = fma(q_row[171u], f32(k[at + 171u * ws]), dot3);
            dot0 = fma(q_row[172u], f32(k[at + 172u * ws]), dot0);
            dot1 = fma(q_row[173u], f32(k[at + 173u * ws]), dot1);
            dot2 = fma(q_row[174u], f32(k[at + 174u * ws]), dot2);
            dot3 = fma(q_row[175u], f32(k[at + 175u * ws]), dot3);
            dot0 = fma(q_row[176u], f32(k[at + 176u * ws]), dot0);
            dot1 = fma(q_row[177u], f32(k[at + 177u * ws]), dot1);
            dot2 = fma(q_row[178u], f32(k[at + 178u * ws]), dot2);
            dot3 = fma(q_row[179u], f32(k[at + 179u * ws]), dot3);
            dot0 = fma(q_row[180u], f32(k[at + 180u * ws]), dot0);
            dot1 = fma(q_row[181u], f32(k[at + 181u * ws]), dot1);
            dot2 = fma(q_row[182u], f32(k[at + 182u * ws]), dot2);
            dot3 = fma(q_row[183u], f32(k[at + 183u * ws]), dot3);
            dot0 = fma(q_row[184u], f32(k[at + 184u * ws]), dot0);
            dot1 = fma(q_row[185u], f32(k[at + 185u * ws]), dot1);
            dot2 = fma(q_row[186u], f32(k[at + 186u * ws]), dot2);
            dot3 = fma(q_row[187u], f32(k[at + 187u * ws]), dot3);
            dot0 = fma(q_row[188u], f32(k[at + 188u * ws]), dot0);
            dot1 = fma(q_row[189u], f32(k[at + 189u * ws]), dot1);
            dot2 = fma(q_row[190u], f32(k[at + 190u * ws]), dot2);
            dot3 = fma(q_row[191u], f32(k[at + 191u * ws]), dot3);
            dot0 = fma(q_row[192u], f32(k[at + 192u * ws]), dot0);
            dot1 = fma(q_row[193u], f32(k[at + 193u * ws]), dot1);
            dot2 = fma(q_row[194u], f32(k[at + 194u * ws]), dot2);
            dot3 = fma(q_row[195u], f32(k[at + 195u * ws]), dot3);
            dot0 = fma(q_row[196u], f32(k[at + 196u * ws]), dot0);
            dot1 = fma(q_row[197u], f32(k[at + 197u * ws]), dot1);
            dot2 = fma(q_row[198u], f32(k[at + 198u * ws]), dot2);
            dot3 = fma(q_row[199u], f32(k[at + 199u * ws]), dot3);
            dot0 = fma(q_row[200u], f32(k[at + 200u * ws]), dot0);
            dot1 = fma(q_row[201u], f32(k[at + 201u * ws]), dot1);
            dot2 = fma(q_row[202u], f32(k[at + 202u * ws]), dot2);
            dot3 = fma(q_row[203u], f32(k[at + 203u * ws]), dot3);
            dot0 = fma(q_row[204u], f32(k[at + 204u * ws]), dot0);
            dot1 = fma(q_row[205u], f32(k[at + 205u * ws]), dot1);
            dot2 = fma(q_row[206u], f32(k[at + 206u * ws]), dot2);
            dot3 = fma(q_row[207u], f32(k[at + 207u * ws]), dot3);
            dot0 = fma(q_row[208u], f32(k[at + 208u * ws]), dot0);
            dot1 = fma(q_row[209u], f32(k[at + 209u * ws]), dot1);
            dot2 = fma(q_row[210u], f32(k[at + 210u * ws]), dot2);
            dot3 = fma(q_row[211u], f32(k[at + 211u * ws]), dot3);
            dot0 = fma(q_row[212u], f32(k[at + 212u * ws]), dot0);
            dot1 = fma(q_row[213u], f32(k[at + 213u * ws]), dot1);
            dot2 = fma(q_row[214u], f32(k[at + 214u * ws]), dot2);
            dot3 = fma(q_row[215u], f32(k[at + 215u * ws]), dot3);
            dot0 = fma(q_row[216u], f32(k[at + 216u * ws]), dot0);
            dot1 = fma(q_row[217u], f32(k[at + 217u * ws]), dot1);
            dot2 = fma(q_row[218u], f32(k[at + 218u * ws]), dot2);
            dot3 = fma(q_row[219u], f32(k[at + 219u * ws]), dot3);
            dot0 = fma(q_row[220u], f32(k[at + 220u * ws]), dot0);
            dot1 = fma(q_row[221u], f32(k[at + 221u * ws]), dot1);
            dot2 = fma(q_row[222u], f32(k[at + 222u * ws]), dot2);
            dot3 = fma(q_row[223u], f32(k[at + 223u * ws]), dot3);
            dot0 = fma(q_row[224u], f32(k[at + 224u * ws]), dot0);
            dot1 = fma(q_row[225u], f32(k[at + 225u * ws]), dot1);
            dot2 = fma(q_row[226u], f32(k[at + 226u * ws]), dot2);
            dot3 = fma(q_row[227u], f32(k[at + 227u * ws]), dot3);
            dot0 = fma(q_row[228u], f32(k[at + 228u * ws]), dot0);
            dot1 = fma(q_row[229u], f32(k[at + 229u * ws]), dot1);
            dot2 = fma(q_row[230u], f32(k[at + 230u * ws]), dot2);
            dot3 = fma(q_row[231u], f32(k[at + 231u * ws]), dot3);
            dot0 = fma(q_row[232u], f32(k[at + 232u * ws]), dot0);
            dot1 = fma(q_row[233u], f32(k[at + 233u * ws]), dot1);
            dot2 = fma(q_row[234u], f32(k[at + 234u * ws]), dot2);
            dot3 = fma(q_row[235u], f32(k[at + 235u * ws]), dot3);
            dot0 = fma(q_row[236u], f32(k[at + 236u * ws]), dot0);
            dot1 = fma(q_row[237u], f32(k[at + 237u * ws]), dot1);
            dot2 = fma(q_row[238u], f32(k[at + 238u * ws]), dot2);
            dot3 = fma(q_row[239u], f32(k[at + 239u * ws]), dot3);
            dot0 = fma(q_row[240u], f32(k[at + 240u * ws]), dot0);
            dot1 = fma(q_row[241u], f32(k[at + 241u * ws]), dot1);
            dot2 = fma(q_row[242u], f32(k[at + 242u * ws]), dot2);
            dot3 = fma(q_row[243u], f32(k[at + 243u * ws]), dot3);
            dot0 = fma(q_row[244u], f32(k[at + 244u * ws]), dot0);
            dot1 = fma(q_row[245u], f32(k[at + 245u * ws]), dot1);
            dot2 = fma(q_row[246u], f32(k[at + 246u * ws]), dot2);
            dot3 = fma(q_row[247u], f32(k[at + 247u * ws]), dot3);
            dot0 = fma(q_row[248u], f32(k[at + 248u * ws]), dot0);
            dot1 = fma(q_row[249u], f32(k[at + 249u * ws]), dot1);
            dot2 = fma(q_row[250u], f32(k[at + 250u * ws]), dot2);
            dot3 = fma(q_row[251u], f32(k[at + 251u * ws]), dot3);
            dot0 = fma(q_row[252u], f32(k[at + 252u * ws]), dot0);
            dot1 = fma(q_row[253u], f32(k[at + 253u * ws]), dot1);
            dot2 = fma(q_row[254u], f32(k[at + 254u * ws]), dot2);
            dot3 = fma(q_row[255u], f32(k[at + 255u * ws]), dot3);
            s = capped(((dot0 + dot1) + (dot2 + dot3)) * p.scale);
        }
        let m_new = max(m_run, reduce(s, tid, true));
        var e = 0.0;
        var alpha = 1.0;
        if (m_new != neg_inf()) {
            e = exp(s - m_new);
            alpha = exp(m_run - m_new);
        }
        let sum = reduce(e, tid, false);
        probs[tid] = e;
        workgroupBarrier();
        l_run = l_run * alpha + sum;
        m_run = m_new;
        let n = min(64u, c1 - j0);
        for (var j = 0u; j < DC; j = j + 1u) {
            let col = tid + 64u * j;
            if (col < D) {
                var a = acc[j] * alpha;
                let vc = v_base + col * p.v_stride.w;
                var c = 0u;
                // Eight keys' loads in flight at a time, then the tail one by one.
                for (; c + 8u <= n; c = c + 8u) {
                    let v0 = f32(v[vc + (j0 + c + 0u) * p.v_stride.z]);
                    let v1 = f32(v[vc + (j0 + c + 1u) * p.v_stride.z]);
                    let v2 = f32(v[vc + (j0 + c + 2u) * p.v_stride.z]);
                    let v3 = f32(v[vc + (j0 + c + 3u) * p.v_stride.z]);
                    let v4 = f32(v[vc + (j0 + c + 4u) * p.v_stride.z]);
                    let v5 = f32(v[vc + (j0 + c + 5u) * p.v_stride.z]);
                    let v6 = f32(v[vc + (j0 + c + 6u) * p.v_stride.z]);
                    let v7 = f32(v[vc + (j0 + c + 7u) * p.v_stride.z]);
                    a = fma(probs[c + 0u], v0, a);
                    a = fma(probs[c + 1u], v1, a);
                    a = fma(probs[c + 2u], v2, a);
                    a = fma(probs[c + 3u], v3, a);
                    a = fma(probs[c + 4u], v4, a);
                    a = fma(probs[c + 5u], v5, a);
                    a = fma(probs[c + 6u], v6, a);
                    a = fma(probs[c + 7u], v7, a);
                }
                for (; c < n; c = c + 1u) {
                    a = fma(probs[c], f32(v[vc + (j0 + c) * p.v_stride.z]), a);
                }
                acc[j] = a;
            }
        }
    }
    let out = lin * (D + 2u);
    for (var j = 0u; j < DC; j = j + 1u) {
        let col = tid + 64u * j;
        if (col < D) {
            part[out + col] = acc[j];
        }
    }
    if (tid == 0u) {
        part[out + D] = m_run;
        part[out + D + 1u] = l_run;
    }
}

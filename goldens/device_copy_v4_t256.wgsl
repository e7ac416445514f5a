@group(0) @binding(0) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<u32>>;

struct Params {
    words: u32,
    stride: u32,
    pad0: u32,
    pad1: u32,
}

@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    var i = gid.x;
    loop {
        if (i >= p.words) {
            break;
        }
        let i1 = i + p.stride;
        let i2 = i1 + p.stride;
        let i3 = i2 + p.stride;
        let w0 = src[i];
        var w1 = vec4<u32>();
        var w2 = vec4<u32>();
        var w3 = vec4<u32>();
        if (i1 < p.words) {
            w1 = src[i1];
        }
        if (i2 < p.words) {
            w2 = src[i2];
        }
        if (i3 < p.words) {
            w3 = src[i3];
        }
        dst[i] = w0;
        if (i1 < p.words) {
            dst[i1] = w1;
        }
        if (i2 < p.words) {
            dst[i2] = w2;
        }
        if (i3 < p.words) {
            dst[i3] = w3;
        }
        i = i3 + p.stride;
    }
}

//! Generates the ONNX protobuf messages from the committed `proto/onnx.proto` (ONNX 1.23.2)
//! with protobuf-codegen's pure-Rust parser: no `protoc` needed, and the code is reproducible.

fn main() {
    protobuf_codegen::Codegen::new()
        .pure()
        .includes(["proto"])
        .input("proto/onnx.proto")
        .cargo_out_dir("onnx_proto")
        .run_from_script();
}

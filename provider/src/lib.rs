//! ONNX Runtime plugin-EP boundary (skeleton; the ABI lands with the plugin-EP issue).

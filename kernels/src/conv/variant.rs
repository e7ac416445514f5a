//! The conv-specific kernels (im2col and the direct grouped kernel), their uniforms and the
//! device limits each needs. The GEMMs of a conv plan are ordinary [`crate::gemm::GemmVariant`]s.

use bytemuck::{Pod, Zeroable};
use minijinja::{context, Value};

use crate::caps::DeviceCaps;
use crate::dtype::DType;
use crate::shader::dtype_context;

/// Uniforms of the conv kernels; `wgsl/conv_common.wgsl.j2` mirrors it field for field.
/// Shapes travel here, not in the WGSL text, so a new sequence length reuses the pipeline.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct ConvParams {
    pub n: u32,
    pub c: u32,
    pub h: u32,
    pub w: u32,
    pub m: u32,
    pub oh: u32,
    pub ow: u32,
    /// `oh · ow`.
    pub pixels: u32,
    pub kh: u32,
    pub kw: u32,
    pub stride_h: u32,
    pub stride_w: u32,
    pub dil_h: u32,
    pub dil_w: u32,
    pub pad_top: u32,
    pub pad_left: u32,
    pub c_per_group: u32,
    pub m_per_group: u32,
    /// Rows of one image's im2col matrix: `c · kh · kw`.
    pub col_k: u32,
    /// im2col: consecutive col rows one invocation writes (amortises its index arithmetic).
    pub k_per_thread: u32,
    /// im2col: `ceil(col_k / k_per_thread)`.
    pub tiles_k: u32,
    /// Invocations doing work; the last workgroup's surplus returns early.
    pub invocations: u32,
    pub grid_x: u32,
    pub grid_y: u32,
    pub total_workgroups: u32,
    /// Bit 0: bias present; bits 1–2: activation (0 none, 1 relu, 2 clip); bits 4–7: an extended
    /// activation; as in `GemmParams`.
    pub flags: u32,
    pub clip_min: f32,
    pub clip_max: f32,
}

/// The conv geometry an implicit-GEMM kernel gathers B with (binding 5, next to the GEMM's
/// `GemmParams`); `gemm_simt_vec.wgsl.j2` mirrors it as `ConvGeometry`. Per group and image,
/// B is X viewed as `[c, h, w]`; the GEMM's batch strides select the image and group.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Pod, Zeroable)]
pub struct ImplicitConvParams {
    /// Input channels of one group.
    pub c: u32,
    pub h: u32,
    pub w: u32,
    pub ow: u32,
    pub kh: u32,
    pub kw: u32,
    /// `kh · kw`.
    pub taps: u32,
    /// `h · w`.
    pub plane: u32,
    pub stride_h: u32,
    pub stride_w: u32,
    pub dil_h: u32,
    pub dil_w: u32,
    pub pad_top: u32,
    pub pad_left: u32,
    /// Pads the struct to a multiple of 16 bytes (uniform layout).
    pub reserved: [u32; 2],
}

/// Which conv WGSL program a dispatch runs: the pipeline-cache key and the golden file name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ConvVariant {
    /// Gathers the im2col matrix `[N, C·kh·kw, OH·OW]` (zeros in the padding) for a GEMM.
    Im2col { dtype: DType, threads: u32 },
    /// One output element per invocation, invocations along the flattened `[N, M, OH·OW]`
    /// output: for grouped convs with few output channels per group (depthwise), where a GEMM
    /// per group would leave most of its tile idle.
    Direct { dtype: DType, threads: u32 },
}

impl ConvVariant {
    pub fn dtype(self) -> DType {
        match self {
            ConvVariant::Im2col { dtype, .. } | ConvVariant::Direct { dtype, .. } => dtype,
        }
    }

    pub fn threads(self) -> u32 {
        match self {
            ConvVariant::Im2col { threads, .. } | ConvVariant::Direct { threads, .. } => threads,
        }
    }

    /// Stable name: the golden file stem and the label of the pipeline.
    pub fn name(self) -> String {
        match self {
            ConvVariant::Im2col { dtype, threads } => format!("im2col_{dtype}_t{threads}"),
            ConvVariant::Direct { dtype, threads } => format!("conv_direct_{dtype}_t{threads}"),
        }
    }

    /// `@workgroup_size` of the variant.
    pub fn workgroup_size(self) -> [u32; 3] {
        [self.threads(), 1, 1]
    }

    /// Storage buffers the shader binds.
    pub fn storage_buffers(self) -> u32 {
        match self {
            ConvVariant::Im2col { .. } => 2,
            ConvVariant::Direct { .. } => 4,
        }
    }

    /// Whether the device can run this variant at all (dtype support, workgroup limits).
    pub fn fits(self, caps: &DeviceCaps) -> Result<(), String> {
        if self.dtype() == DType::F16 && !caps.shader_f16 {
            return Err("f16 needs shader-f16".into());
        }
        let [x, y, z] = self.workgroup_size();
        if !caps.allows_workgroup(x, y, z) {
            return Err(format!(
                "workgroup {x}×{y}×{z} exceeds the device's {} invocations / {:?}",
                caps.max_invocations_per_workgroup, caps.max_workgroup_size
            ));
        }
        if self.storage_buffers() > caps.max_storage_buffers_per_stage {
            return Err(format!(
                "binds {} storage buffers; the device allows {}",
                self.storage_buffers(),
                caps.max_storage_buffers_per_stage
            ));
        }
        Ok(())
    }

    /// The largest 1-D workgroup the device allows, 256 invocations where possible: enough
    /// lanes to hide memory latency, few enough to fit every profile.
    pub fn threads_for(caps: &DeviceCaps) -> Option<u32> {
        [256u32, 128, 64, 32].into_iter().find(|&t| caps.allows_workgroup(t, 1, 1))
    }

    /// Template file and rendering context.
    pub fn template_context(self) -> (&'static str, Value) {
        let ctx = context! { ..dtype_context(self.dtype()), ..context! { threads => self.threads() } };
        match self {
            ConvVariant::Im2col { .. } => ("im2col.wgsl.j2", ctx),
            ConvVariant::Direct { .. } => ("conv_direct.wgsl.j2", ctx),
        }
    }
}

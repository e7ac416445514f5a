//! Problems, random operands and options of benchmark cases.

use ep_kernels::gemm::{CoopMode, GemmOptions, GemmProblem, MAX_BATCH_DIMS};
use ep_kernels::DType;
use rand::{Rng, SeedableRng};

use crate::args::{Path, Shape};

/// The GEMM of `shape`: contiguous `[batch, M, K] · [batch, K, N]`, each matrix optionally
/// stored transposed.
pub fn problem(shape: &Shape, dtype: DType) -> GemmProblem {
    let mut p = GemmProblem::simple(dtype, shape.m, shape.n, shape.k, shape.trans_a, shape.trans_b);
    if shape.batch > 1 {
        p.batch = [1, 1, 1, shape.batch];
        p.a.batch_strides[MAX_BATCH_DIMS - 1] = shape.m * shape.k;
        p.b.batch_strides[MAX_BATCH_DIMS - 1] = shape.k * shape.n;
    }
    p
}

/// Planner options of a path: the coop path of an f32 problem is the opt-in f16 precision.
pub fn options(path: Path, dtype: DType, tiling: ep_kernels::gemm::TilingChoice) -> GemmOptions {
    let cooperative_matrix = match path {
        Path::Coop | Path::Split | Path::Fused => CoopMode::On,
        Path::Simt => CoopMode::Off,
        Path::Auto => CoopMode::Auto,
    };
    let (f32_split, f32_split_fused) = match path {
        Path::Split => (CoopMode::On, CoopMode::Off),
        Path::Fused => (CoopMode::On, CoopMode::On),
        _ => (CoopMode::Auto, CoopMode::Auto),
    };
    GemmOptions {
        tiling,
        cooperative_matrix,
        f32_via_f16: path == Path::Coop && dtype == DType::F32,
        f32_split,
        f32_split_fused,
        ..Default::default()
    }
}

/// Operand values (uniform in [-1, 1), exactly representable in the storage type) and their
/// bytes.
pub struct Operand {
    pub values: Vec<f32>,
    pub bytes: Vec<u8>,
}

pub fn operand(len: usize, dtype: DType, seed: u64) -> Operand {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
    let mut values: Vec<f32> = (0..len).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let bytes = match dtype {
        DType::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        DType::F16 => {
            let mut bytes = Vec::with_capacity(len * 2);
            for v in values.iter_mut() {
                let h = half::f16::from_f32(*v);
                *v = h.to_f32();
                bytes.extend_from_slice(&h.to_le_bytes());
            }
            bytes
        }
    };
    Operand { values, bytes }
}

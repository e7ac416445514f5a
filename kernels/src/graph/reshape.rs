//! ONNX `Reshape` with a constant target shape: on the GPU it is free (the same buffer under a
//! new shape), and claiming it keeps ORT's `Reshape → Gemm → Reshape` rewrite of 3-D MatMul+Add
//! inside one partition.

use super::model::Node;

/// The constant target shape of a Reshape and its `allowzero` attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReshapeSpec {
    pub shape: Vec<i64>,
    pub allow_zero: bool,
}

impl ReshapeSpec {
    /// Reads the spec; fails unless the shape is a constant int64 tensor.
    pub fn of(node: &Node) -> Result<ReshapeSpec, String> {
        let shape = node
            .input(1)
            .and_then(|v| if v.constant { v.ints() } else { None })
            .ok_or("its shape is not a small constant int64 tensor")?;
        let allow_zero = node.int("allowzero").unwrap_or(0) != 0;
        if shape.iter().filter(|&&d| d == -1).count() > 1 || shape.iter().any(|&d| d < -1) {
            return Err(format!("invalid target shape {shape:?}"));
        }
        Ok(ReshapeSpec { shape, allow_zero })
    }

    /// The output shape for an input of `input` shape (ONNX semantics: 0 copies the input's
    /// dimension unless `allowzero`, one -1 is inferred).
    pub fn apply(&self, input: &[u64]) -> Result<Vec<u64>, String> {
        let total = elements(input)?;
        let mut out = Vec::with_capacity(self.shape.len());
        let mut infer = None;
        for (i, &d) in self.shape.iter().enumerate() {
            match d {
                -1 => {
                    infer = Some(i);
                    out.push(1);
                }
                0 if !self.allow_zero => out
                    .push(*input.get(i).ok_or_else(|| format!("Reshape {:?}: no input dim {i} to copy", self.shape))?),
                d => out.push(d as u64),
            }
        }
        let known = elements(&out)?;
        if let Some(i) = infer {
            if known == 0 || total % known != 0 {
                return Err(format!("cannot reshape {input:?} to {:?}", self.shape));
            }
            out[i] = total / known;
        } else if known != total {
            return Err(format!("cannot reshape {input:?} ({total} elements) to {out:?}"));
        }
        Ok(out)
    }
}

/// The element count of `shape`, or an error when it does not fit in 64 bits (a file may
/// declare any size).
pub fn elements(shape: &[u64]) -> Result<u64, String> {
    shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| format!("shape {shape:?} has too many elements"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(shape: &[i64], allow_zero: bool) -> ReshapeSpec {
        ReshapeSpec { shape: shape.to_vec(), allow_zero }
    }

    #[test]
    fn onnx_semantics() {
        assert_eq!(spec(&[-1, 64], false).apply(&[2, 7, 64]).unwrap(), vec![14, 64]);
        assert_eq!(spec(&[0, 0, -1], false).apply(&[2, 7, 8, 8]).unwrap(), vec![2, 7, 64]);
        assert_eq!(spec(&[2, 7, 64], false).apply(&[14, 64]).unwrap(), vec![2, 7, 64]);
        assert_eq!(spec(&[0, 4], true).apply(&[0, 4]).unwrap(), vec![0, 4]);
        assert!(spec(&[5, -1], false).apply(&[2, 7]).is_err());
        assert!(spec(&[3, 3], false).apply(&[2, 4]).is_err());
        assert!(spec(&[-1], false).apply(&[1 << 40, 1 << 40]).unwrap_err().contains("too many elements"));
        assert!(spec(&[1 << 40, 1 << 40], false).apply(&[4]).unwrap_err().contains("too many elements"));
    }
}

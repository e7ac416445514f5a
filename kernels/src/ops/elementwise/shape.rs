//! Numpy broadcasting for the fused kernels: the output shape, how each input is indexed, and
//! the dimensions and strides the general mode walks (collapsed as far as the inputs allow,
//! so a row or column broadcast walks two dimensions whatever the rank).

use crate::ops::broadcast;

/// Most dimensions the general broadcasting mode walks (after collapsing).
pub const MAX_RANK: usize = 8;

/// How a kernel indexes one input, fixed in its variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    /// The output's shape: the output's linear index.
    Same,
    /// One element: index 0.
    Scalar,
    /// Anything else: the output index's coordinates times the input's strides (0 on
    /// broadcast dimensions).
    Broadcast,
}

impl Mode {
    pub fn tag(self) -> char {
        match self {
            Mode::Same => 'l',
            Mode::Scalar => 's',
            Mode::Broadcast => 'b',
        }
    }
}

/// The numpy broadcast of every shape, or the user's error naming them.
pub fn broadcast_all(shapes: &[&[u64]]) -> Result<Vec<u64>, String> {
    let mut out: Vec<u64> = Vec::new();
    for s in shapes {
        out = broadcast(&out, s).ok_or_else(|| {
            let all: Vec<String> = shapes.iter().map(|s| format!("{s:?}")).collect();
            format!("shapes {} do not broadcast together", all.join(", "))
        })?;
    }
    Ok(out)
}

/// How the inputs map onto the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub modes: Vec<Mode>,
    /// The walked dimensions, innermost first (empty without a broadcast input).
    pub dims: Vec<u64>,
    /// Per broadcast input (in input order), its stride along each of `dims`.
    pub strides: Vec<Vec<u64>>,
}

impl Layout {
    /// The layout of inputs of `shapes` onto `out` (their broadcast).
    pub fn of(shapes: &[&[u64]], out: &[u64]) -> Result<Layout, String> {
        let total: u64 = out.iter().product();
        let modes: Vec<Mode> = shapes
            .iter()
            .map(|s| match s.iter().product::<u64>() {
                n if n == total => Mode::Same,
                1 => Mode::Scalar,
                _ => Mode::Broadcast,
            })
            .collect();
        let general: Vec<&[u64]> =
            shapes.iter().zip(&modes).filter(|(_, &m)| m == Mode::Broadcast).map(|(s, _)| *s).collect();
        let (dims, strides) = if general.is_empty() { (Vec::new(), Vec::new()) } else { collapse(&general, out)? };
        Ok(Layout { modes, dims, strides })
    }

    pub fn broadcast_inputs(&self) -> usize {
        self.strides.len()
    }
}

/// The input's strides on the output's dimensions (right-aligned; 0 where it broadcasts).
fn strides_on(shape: &[u64], out: &[u64]) -> Result<Vec<u64>, String> {
    let pad = out.len().checked_sub(shape.len()).ok_or_else(|| format!("{shape:?} has a higher rank than {out:?}"))?;
    let mut strides = vec![0u64; out.len()];
    let mut step = 1u64;
    for d in (0..shape.len()).rev() {
        if shape[d] != 1 {
            strides[d + pad] = step;
        }
        step *= shape[d];
    }
    Ok(strides)
}

/// Drops size-1 dimensions and merges neighbours every input walks contiguously; returns the
/// dimensions and each input's strides, innermost first.
fn collapse(shapes: &[&[u64]], out: &[u64]) -> Result<(Vec<u64>, Vec<Vec<u64>>), String> {
    let strides = shapes.iter().map(|s| strides_on(s, out)).collect::<Result<Vec<_>, _>>()?;
    // Groups from the outermost: (size, each input's stride).
    let mut groups: Vec<(u64, Vec<u64>)> = Vec::new();
    for d in (0..out.len()).filter(|&d| out[d] != 1) {
        let here: Vec<u64> = strides.iter().map(|s| s[d]).collect();
        if let Some((size, prev)) = groups.last_mut() {
            if prev.iter().zip(&here).all(|(&p, &h)| p == h * out[d]) {
                *size *= out[d];
                prev.clone_from(&here);
                continue;
            }
        }
        groups.push((out[d], here));
    }
    if groups.len() > MAX_RANK {
        return Err(format!(
            "broadcasting onto {out:?} needs {} dimensions; at most {MAX_RANK} run here",
            groups.len()
        ));
    }
    groups.reverse();
    let dims = groups.iter().map(|g| g.0).collect();
    let per_input = (0..shapes.len()).map(|k| groups.iter().map(|g| g.1[k]).collect()).collect();
    Ok((dims, per_input))
}

/// The uniform buffer: `count` (invocations), `total` (elements), the walked rank and a pad
/// word; the dimensions and each broadcast input's strides as `array<vec4<u32>, 2>` each;
/// then the float parameters as `array<vec4<f32>, _>`.
pub fn params(layout: &Layout, count: u32, total: u32, floats: &[f32]) -> Vec<u8> {
    let mut words: Vec<u32> = vec![count, total, layout.dims.len() as u32, 0];
    if layout.broadcast_inputs() > 0 {
        let mut push8 = |v: &[u64]| {
            let mut row = [0u32; MAX_RANK];
            for (r, &x) in row.iter_mut().zip(v) {
                *r = x as u32;
            }
            words.extend(row);
        };
        push8(&layout.dims);
        for s in &layout.strides {
            push8(s);
        }
    }
    words.extend(floats.iter().map(|f| f.to_bits()));
    words.resize(words.len().next_multiple_of(4), 0);
    bytemuck::cast_slice(&words).to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_and_collapse() {
        let out = broadcast_all(&[&[2, 3, 4], &[4], &[1], &[2, 3, 4]]).unwrap();
        assert_eq!(out, vec![2, 3, 4]);
        let l = Layout::of(&[&[2, 3, 4], &[4], &[1], &[3, 1]], &out).unwrap();
        assert_eq!(l.modes, vec![Mode::Same, Mode::Broadcast, Mode::Scalar, Mode::Broadcast]);
        // Row [4]: stride 1 inner, 0 outer; column [3,1]: 0 inner, 1 on 3, 0 on 2.
        assert_eq!(l.dims, vec![4, 3, 2]);
        assert_eq!(l.strides, vec![vec![1, 0, 0], vec![0, 1, 0]]);
        // A row broadcast over any rank walks two dimensions.
        let l = Layout::of(&[&[5, 6, 7, 8], &[1, 1, 8]], &[5, 6, 7, 8]).unwrap();
        assert_eq!((l.dims.clone(), l.strides.clone()), (vec![8, 210], vec![vec![1, 0]]));
        // Both sides broadcasting.
        let l = Layout::of(&[&[3, 1], &[1, 4]], &[3, 4]).unwrap();
        assert_eq!(l.strides, vec![vec![0, 1], vec![1, 0]]);
        // Leading ones and size-1 output dimensions vanish.
        let l = Layout::of(&[&[1, 3, 1, 5], &[3, 1, 1]], &[1, 3, 1, 5]).unwrap();
        assert_eq!((l.dims.clone(), l.strides.clone()), (vec![5, 3], vec![vec![0, 1]]));
        assert!(broadcast_all(&[&[2, 3], &[4]]).unwrap_err().contains("[2, 3], [4]"));
    }

    #[test]
    fn too_many_dimensions() {
        let out = [2u64, 3, 2, 3, 2, 3, 2, 3, 2, 3];
        let alternating = [2u64, 1, 2, 1, 2, 1, 2, 1, 2, 1];
        assert!(Layout::of(&[&alternating], &out).is_err());
        assert!(Layout::of(&[&out], &out).is_ok());
    }

    #[test]
    fn uniform_layout() {
        let l = Layout::of(&[&[4], &[3, 4]], &[3, 4]).unwrap();
        let p = params(&l, 12, 12, &[0.5]);
        let w: &[u32] = bytemuck::cast_slice(&p);
        assert_eq!(w.len(), 4 + 8 + 8 + 4);
        assert_eq!(&w[..6], &[12, 12, 2, 0, 4, 3]);
        assert_eq!(&w[12..14], &[1, 0]);
        assert_eq!(f32::from_bits(w[20]), 0.5);
    }
}

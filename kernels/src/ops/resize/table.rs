//! Where each output position of a resized axis reads from, computed on the host in f32 as ONNX
//! Runtime's CPU EP computes it, and bound to the kernel as a table (`wgsl/resize.wgsl.j2`). A GPU
//! may divide through an approximate reciprocal (the NVIDIA driver's (3 + 0.5) / 3.5 was
//! 1.0000001), and a nearest tie or a floor at an integer then picks the next pixel; the host's
//! IEEE division does not.

use super::ResizeKernel;

/// The table and where each axis's entries start: for nearest, one input index per output
/// position of every axis; for linear, the last two axes' (first index, second index, weight
/// bits) per output position (the other axes are not resized and have no entries).
pub fn build(kernel: &ResizeKernel, x: &[u64], out: &[u64], scales: &[f32]) -> (Vec<u32>, [[u32; 4]; 2]) {
    let rank = x.len();
    let mut table = Vec::new();
    let mut offsets = [[0u32; 4]; 2];
    for d in 0..rank {
        offsets[d / 4][d % 4] = table.len() as u32;
        let axis = Axis { n_in: x[d] as f32, len_out: out[d] as f32, scale: scales[d] };
        let last = (kernel.linear && d + 2 >= rank).then_some(());
        for o in 0..out[d] {
            let c = axis.coordinate(kernel.coordinates, o as f32);
            match (kernel.linear, last) {
                (false, _) => table.push(axis.nearest(kernel.nearest, c)),
                (true, Some(())) => {
                    let c = c.clamp(0.0, axis.n_in - 1.0);
                    let lo = c.floor();
                    table.extend([lo as u32, (lo as u32 + 1).min(x[d] as u32 - 1), (c - lo).to_bits()]);
                }
                (true, None) => break,
            }
        }
    }
    // A binding holds at least one element.
    if table.is_empty() {
        table.push(0);
    }
    (table, offsets)
}

/// One axis: its input length, its output length and its scale.
struct Axis {
    n_in: f32,
    len_out: f32,
    scale: f32,
}

impl Axis {
    /// The input coordinate of output position `xo` by coordinate transformation mode `mode`
    /// (0 half_pixel, 1 asymmetric, 2 pytorch_half_pixel, 3 align_corners,
    /// 4 tf_half_pixel_for_nn, 5 half_pixel_symmetric).
    fn coordinate(&self, mode: u32, xo: f32) -> f32 {
        let s = self.scale;
        // The resized length before rounding (ONNX's length_resized when scales are given).
        let n_out = s * self.n_in;
        match mode {
            1 => xo / s,
            2 if n_out > 1.0 => (xo + 0.5) / s - 0.5,
            2 => 0.0,
            3 if n_out == 1.0 => 0.0,
            3 => xo * (self.n_in - 1.0) / (n_out - 1.0),
            4 => (xo + 0.5) / s,
            5 => {
                let adjustment = self.len_out / n_out;
                let offset = self.n_in * 0.5 * (1.0 - adjustment);
                offset + (xo + 0.5) / s - 0.5
            }
            _ => (xo + 0.5) / s - 0.5,
        }
    }

    /// The input index nearest coordinate `c` by nearest mode `mode` (0 round_prefer_floor,
    /// 1 round_prefer_ceil, 2 floor, 3 ceil, 4 simple: ceil when downsampling, else floor), within
    /// the input.
    fn nearest(&self, mode: u32, c: f32) -> u32 {
        let half = c - c.floor() == 0.5;
        let i = match mode {
            1 if half => c.ceil(),
            1 => c.round(),
            2 => c.floor(),
            3 => c.ceil(),
            4 if self.scale < 1.0 => c.ceil(),
            4 => c.trunc(),
            _ if half => c.floor(),
            _ => c.round(),
        };
        i.clamp(0.0, self.n_in - 1.0) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(n_in: u64, n_out: u64) -> Axis {
        Axis { n_in: n_in as f32, len_out: n_out as f32, scale: n_out as f32 / n_in as f32 }
    }

    /// ONNX's test_resize_upsample_sizes_nearest: 2 rows to 7 (scale 3.5), half_pixel,
    /// round_prefer_floor. Output row 3 sits at input coordinate (3 + 0.5) / 3.5 − 0.5 = 0.5
    /// exactly, a tie that rounds down to row 0 (the NVIDIA driver's division made it row 1).
    #[test]
    fn a_nearest_tie_rounds_as_the_cpu_ep() {
        let a = axis(2, 7);
        let rows: Vec<u32> = (0..7).map(|o| a.nearest(0, a.coordinate(0, o as f32))).collect();
        assert_eq!(rows, [0, 0, 0, 0, 1, 1, 1]);
        let ceil: Vec<u32> = (0..7).map(|o| a.nearest(1, a.coordinate(0, o as f32))).collect();
        assert_eq!(ceil, [0, 0, 0, 1, 1, 1, 1]);
    }

    /// asymmetric + floor (PyTorch's nearest export) at 3×: o / 3 floors to o div 3 exactly.
    #[test]
    fn asymmetric_floor_at_three_times_is_integer_division() {
        let a = axis(5, 15);
        for o in 0..15u32 {
            assert_eq!(a.nearest(2, a.coordinate(1, o as f32)), o / 3, "position {o}");
        }
    }

    /// Linear entries: the two taps and the weight, clamped into the input at both ends.
    #[test]
    fn linear_entries_clamp_at_the_edges() {
        let node = ResizeKernel {
            name: "r".into(),
            ty: crate::dtype::ElemType::F32,
            linear: true,
            coordinates: 0,
            nearest: 0,
            target: super::super::Target::Scales(vec![1.0, 2.0]),
            axes: None,
            keep_aspect: 0,
        };
        let (table, offsets) = build(&node, &[1, 3], &[1, 6], &[1.0, 2.0]);
        let last = offsets[0][1] as usize;
        let entry = |o: usize| (table[last + 3 * o], table[last + 3 * o + 1], f32::from_bits(table[last + 3 * o + 2]));
        assert_eq!(entry(0), (0, 1, 0.0), "coordinate −0.25 clamps to 0");
        assert_eq!(entry(1), (0, 1, 0.25));
        assert_eq!(entry(5), (2, 2, 0.0), "coordinate 2.25 clamps to the last row");
    }
}

//! A pooling node's attributes resolved against its input shape: the single place where ONNX's
//! pool attributes (kernel_shape, strides, pads, dilations, auto_pad, ceil_mode) meet shapes.
//! Output sizes follow ONNX Runtime's CPU EP (`pool_attributes.h`), which the EP is compared
//! with.

use crate::graph::model::Node;

/// The pooling attributes as the node states them (empty vectors: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolAttrs {
    /// GlobalAveragePool / GlobalMaxPool: one window of the whole input.
    pub global: bool,
    pub kernel: Vec<i64>,
    pub strides: Vec<i64>,
    pub pads: Vec<i64>,
    pub dilations: Vec<i64>,
    pub auto_pad: String,
    pub ceil_mode: bool,
}

impl PoolAttrs {
    pub fn of(node: &Node) -> PoolAttrs {
        let ints = |name: &str| node.ints(name).map(<[i64]>::to_vec).unwrap_or_default();
        PoolAttrs {
            global: node.op_type.starts_with("Global"),
            kernel: ints("kernel_shape"),
            strides: ints("strides"),
            pads: ints("pads"),
            dilations: ints("dilations"),
            auto_pad: node.string("auto_pad").unwrap_or("NOTSET").to_string(),
            ceil_mode: node.int("ceil_mode").unwrap_or(0) != 0,
        }
    }

    /// The attribute errors that need no shapes (bad values, lengths that disagree).
    pub fn validate(&self) -> Result<(), String> {
        if self.global {
            return Ok(());
        }
        let n = self.kernel.len();
        if !(1..=3).contains(&n) {
            return Err(format!("kernel_shape {:?} must have 1 to 3 axes", self.kernel));
        }
        for (name, v, len) in
            [("kernel_shape", &self.kernel, n), ("strides", &self.strides, n), ("dilations", &self.dilations, n)]
        {
            if !v.is_empty() && (v.len() != len || v.iter().any(|&d| d < 1)) {
                return Err(format!("{name} {v:?} must be {len} values of at least 1"));
            }
        }
        if !self.pads.is_empty() && (self.pads.len() != 2 * n || self.pads.iter().any(|&p| p < 0)) {
            return Err(format!("pads {:?} must be {} values of at least 0", self.pads, 2 * n));
        }
        if !matches!(self.auto_pad.as_str(), "" | "NOTSET" | "VALID" | "SAME_UPPER" | "SAME_LOWER") {
            return Err(format!("auto_pad '{}' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER", self.auto_pad));
        }
        Ok(())
    }

    /// The geometry at input shape `x` (`[N, C, spatial…]`).
    pub fn resolve(&self, x: &[u64]) -> Result<PoolGeometry, String> {
        self.validate()?;
        if x.len() < 3 || x.len() > 5 {
            return Err(format!("input {x:?} must have 1 to 3 spatial axes"));
        }
        let spatial = &x[2..];
        let n = spatial.len();
        if !self.global && self.kernel.len() != n {
            return Err(format!("kernel_shape {:?} does not match the input {x:?}", self.kernel));
        }
        if x.iter().any(|&d| d == 0 || d > i32::MAX as u64) {
            return Err(format!("input {x:?} is empty or too large"));
        }
        let ones = [1u32; 3];
        let mut g = PoolGeometry {
            planes: x[0] * x[1],
            input: ones,
            out: ones,
            kernel: ones,
            stride: ones,
            dilation: ones,
            ..PoolGeometry::default()
        };
        let mut out_shape = x[..2].to_vec();
        let at = |v: &[i64], i: usize| v.get(i).copied().unwrap_or(1);
        for (i, &dim) in spatial.iter().enumerate() {
            let axis = 3 - n + i;
            let input = dim as i64;
            let (kernel, stride, dilation) = if self.global {
                (input, 1, 1)
            } else {
                (self.kernel[i], at(&self.strides, i), at(&self.dilations, i))
            };
            let explicit = (self.pads.get(i).copied().unwrap_or(0), self.pads.get(n + i).copied().unwrap_or(0));
            let (head, tail, out) = self.axis(input, kernel, stride, dilation, explicit)?;
            if out < 1 {
                return Err(format!("the window of {kernel} (dilation {dilation}) does not fit input axis {input}"));
            }
            g.input[axis] = input as u32;
            g.out[axis] = out as u32;
            g.kernel[axis] = kernel as u32;
            g.stride[axis] = stride as u32;
            g.dilation[axis] = dilation as u32;
            g.pad_begin[axis] = head as u32;
            g.pad_end[axis] = tail as u32;
            out_shape.push(out as u64);
        }
        g.out_shape = out_shape;
        Ok(g)
    }

    /// `(pad_head, pad_tail, output)` of one axis, as ONNX Runtime computes them.
    fn axis(
        &self,
        input: i64,
        kernel: i64,
        stride: i64,
        dilation: i64,
        pads: (i64, i64),
    ) -> Result<(i64, i64, i64), String> {
        let (head, tail) = match self.auto_pad.as_str() {
            "VALID" => (0, 0),
            "SAME_UPPER" | "SAME_LOWER" => {
                let target = (input + stride - 1) / stride;
                let needed = (target - 1) * stride + kernel - input;
                if needed < 0 {
                    return Err(format!(
                        "auto_pad {} with stride {stride} past kernel {kernel} needs negative padding",
                        self.auto_pad
                    ));
                }
                let head = if self.auto_pad == "SAME_LOWER" { (needed + 1) / 2 } else { needed / 2 };
                (head, needed - head)
            }
            _ => pads,
        };
        let reach = dilation * (kernel - 1) + 1;
        let span = input + head + tail - reach;
        if span < 0 {
            return Ok((head, tail, 0));
        }
        let mut out = if self.ceil_mode { (span + stride - 1) / stride + 1 } else { span / stride + 1 };
        // A last window that would start inside the trailing padding is dropped.
        if self.ceil_mode && (out - 1) * stride >= input + head {
            out -= 1;
        }
        Ok((head, tail, out))
    }
}

/// Plain numbers the kernel reads: per axis (d, h, w; leading axes of 1-D and 2-D pools are 1).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PoolGeometry {
    /// N·C.
    pub planes: u64,
    pub input: [u32; 3],
    pub out: [u32; 3],
    pub kernel: [u32; 3],
    pub stride: [u32; 3],
    pub dilation: [u32; 3],
    pub pad_begin: [u32; 3],
    pub pad_end: [u32; 3],
    pub out_shape: Vec<u64>,
}

impl Default for PoolAttrs {
    fn default() -> Self {
        PoolAttrs {
            global: false,
            kernel: Vec::new(),
            strides: Vec::new(),
            pads: Vec::new(),
            dilations: Vec::new(),
            auto_pad: "NOTSET".into(),
            ceil_mode: false,
        }
    }
}

impl PoolGeometry {
    /// Window positions visited per output element.
    pub fn window(&self) -> u64 {
        self.kernel.iter().map(|&k| u64::from(k.max(1))).product()
    }

    pub fn out_elems(&self) -> u64 {
        self.out_shape.iter().product()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(kernel: &[i64]) -> PoolAttrs {
        PoolAttrs { kernel: kernel.to_vec(), ..PoolAttrs::default() }
    }

    #[test]
    fn output_sizes() {
        let resnet = PoolAttrs { strides: vec![2, 2], pads: vec![1, 1, 1, 1], ..attrs(&[3, 3]) };
        assert_eq!(resnet.resolve(&[1, 64, 112, 112]).unwrap().out_shape, vec![1, 64, 56, 56]);
        let ceil = PoolAttrs { strides: vec![2, 2], ceil_mode: true, ..attrs(&[3, 3]) };
        assert_eq!(ceil.resolve(&[1, 1, 4, 4]).unwrap().out_shape, vec![1, 1, 2, 2]);
        let floor = PoolAttrs { ceil_mode: false, ..ceil.clone() };
        assert_eq!(floor.resolve(&[1, 1, 4, 4]).unwrap().out_shape, vec![1, 1, 1, 1]);
        let same = PoolAttrs { strides: vec![2], auto_pad: "SAME_UPPER".into(), ..attrs(&[3]) };
        let g = same.resolve(&[1, 1, 7]).unwrap();
        assert_eq!((g.out_shape[2], g.pad_begin[2], g.pad_end[2]), (4, 1, 1));
        let global = PoolAttrs { global: true, ..PoolAttrs::default() };
        let g = global.resolve(&[2, 3, 5, 7]).unwrap();
        assert_eq!((g.out_shape.clone(), g.kernel), (vec![2, 3, 1, 1], [1, 5, 7]));
    }

    #[test]
    fn bad_attributes() {
        assert!(PoolAttrs { strides: vec![0, 1], ..attrs(&[2, 2]) }.validate().is_err());
        assert!(PoolAttrs { pads: vec![-1, 0, 0, 0], ..attrs(&[2, 2]) }.validate().is_err());
        assert!(PoolAttrs { pads: vec![1, 1], ..attrs(&[2, 2]) }.validate().is_err());
        assert!(attrs(&[]).validate().is_err());
        assert!(attrs(&[0, 2]).validate().is_err());
        assert!(PoolAttrs { auto_pad: "SAME".into(), ..attrs(&[2]) }.validate().is_err());
        assert!(attrs(&[5, 5]).resolve(&[1, 1, 4, 4]).is_err());
        assert!(attrs(&[2, 2]).resolve(&[1, 1, 4]).is_err());
    }
}

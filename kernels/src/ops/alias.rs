//! Ops that only rename a buffer: Reshape, Flatten, Squeeze, Unsqueeze and Identity. On the GPU
//! they are free (the same buffer under a new shape), and any element type passes through.

use crate::caps::DeviceCaps;
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::graph::model::Node;
use crate::graph::reshape::{elements, ReshapeSpec};
use crate::graph::support::PlacementOptions;
use crate::ops::{check_types, normalize_axis, Kernel, KernelIo, OpDef, PrepareCx, PreparedStep};
use crate::shader::ShaderVariant;

/// The definitions of this family.
pub static OPS: &[&dyn OpDef] = &[&AliasDef];

struct AliasDef;

impl OpDef for AliasDef {
    fn names(&self) -> &'static [&'static str] {
        &["Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"]
    }

    fn check(&self, node: &Node, _opts: &PlacementOptions) -> Result<(), String> {
        check_types(node, &ElemType::ALL)?;
        node.input(0).filter(|v| !v.name.is_empty()).ok_or_else(|| format!("{} without data", node.op_type))?;
        let rule = AliasRule::of(node)?;
        if let (Some(shape), Some(out)) = (node.input(0).and_then(|v| v.fixed_shape()), node.output(0)) {
            let got = rule.apply(&shape)?;
            if let Some(declared) = out.fixed_shape() {
                if declared != got {
                    return Err(format!("output shape {declared:?} disagrees with {got:?}"));
                }
            }
        }
        Ok(())
    }

    fn gpu_inputs(&self, _node: &Node) -> Vec<usize> {
        vec![0]
    }

    fn build(&self, node: &Node) -> Result<Box<dyn Kernel>, String> {
        Ok(Box::new(AliasKernel { name: node.name.clone(), rule: AliasRule::of(node)? }))
    }

    fn is_alias(&self) -> bool {
        true
    }

    fn variants(&self, _caps: &DeviceCaps) -> Vec<ShaderVariant> {
        Vec::new()
    }
}

/// How an alias op maps its input shape to its output shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AliasRule {
    Reshape(ReshapeSpec),
    Flatten {
        axis: i64,
    },
    /// `None`: every dimension of size 1.
    Squeeze(Option<Vec<i64>>),
    Unsqueeze(Vec<i64>),
    Identity,
}

/// Axes from the attribute (older opsets) or a constant int64 input (opset 13 on).
fn axes(node: &Node, input_since: i32) -> Result<Option<Vec<i64>>, String> {
    if node.since_version < input_since {
        return Ok(node.ints("axes").map(<[i64]>::to_vec));
    }
    match node.input(1).filter(|v| !v.name.is_empty()) {
        None => Ok(None),
        Some(v) if v.constant => {
            v.ints().map(Some).ok_or_else(|| format!("axes '{}' is not a small int64 constant", v.name))
        }
        Some(v) => Err(format!("axes '{}' is computed at run time; only constant axes run here", v.name)),
    }
}

impl AliasRule {
    pub fn of(node: &Node) -> Result<AliasRule, String> {
        Ok(match node.op_type.as_str() {
            "Reshape" => AliasRule::Reshape(ReshapeSpec::of(node)?),
            "Flatten" => AliasRule::Flatten { axis: node.int("axis").unwrap_or(1) },
            "Squeeze" => AliasRule::Squeeze(axes(node, 13)?),
            "Unsqueeze" => AliasRule::Unsqueeze(axes(node, 13)?.ok_or("Unsqueeze without axes")?),
            "Identity" => AliasRule::Identity,
            other => return Err(format!("{other} is not an alias op")),
        })
    }

    /// The output shape for an input of shape `input`.
    pub fn apply(&self, input: &[u64]) -> Result<Vec<u64>, String> {
        match self {
            AliasRule::Identity => Ok(input.to_vec()),
            AliasRule::Reshape(spec) => spec.apply(input),
            AliasRule::Flatten { axis } => {
                let r = input.len() as i64;
                let a = if *axis < 0 { axis + r } else { *axis };
                if !(0..=r).contains(&a) {
                    return Err(format!("Flatten axis {axis} is out of range for rank {r}"));
                }
                let (outer, inner) = input.split_at(a as usize);
                Ok(vec![elements(outer)?, elements(inner)?])
            }
            AliasRule::Squeeze(None) => Ok(input.iter().copied().filter(|&d| d != 1).collect()),
            AliasRule::Squeeze(Some(axes)) => {
                let mut drop = vec![false; input.len()];
                for &a in axes {
                    let a = normalize_axis(a, input.len())?;
                    if input[a] != 1 {
                        return Err(format!("cannot squeeze axis {a} of size {}", input[a]));
                    }
                    drop[a] = true;
                }
                Ok(input.iter().zip(&drop).filter(|(_, &d)| !d).map(|(&v, _)| v).collect())
            }
            AliasRule::Unsqueeze(axes) => {
                let rank = input.len() + axes.len();
                let mut insert = vec![false; rank];
                for &a in axes {
                    let a = normalize_axis(a, rank)?;
                    if std::mem::replace(&mut insert[a], true) {
                        return Err(format!("Unsqueeze axis {a} is repeated"));
                    }
                }
                let mut dims = input.iter();
                Ok(insert.iter().map(|&new| if new { 1 } else { dims.next().copied().unwrap_or(1) }).collect())
            }
        }
    }
}

/// The same buffer under the shape its rule gives.
#[derive(Clone, Debug)]
pub struct AliasKernel {
    pub name: String,
    pub rule: AliasRule,
}

impl Kernel for AliasKernel {
    fn infer(&self, inputs: &[Option<&[u64]>]) -> Result<Vec<Vec<u64>>, String> {
        let input = inputs.first().copied().flatten().ok_or_else(|| format!("'{}' has no data input", self.name))?;
        Ok(vec![self.rule.apply(input).map_err(|e| format!("'{}': {e}", self.name))?])
    }

    fn alias(&self, _output: usize) -> Option<usize> {
        Some(0)
    }

    fn prepare(&self, _cx: &PrepareCx<'_>, _io: &KernelIo<'_>) -> Result<PreparedStep, GpuError> {
        Ok(PreparedStep::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        assert_eq!(AliasRule::Flatten { axis: 2 }.apply(&[2, 3, 4, 5]).unwrap(), vec![6, 20]);
        assert_eq!(AliasRule::Flatten { axis: 0 }.apply(&[2, 3]).unwrap(), vec![1, 6]);
        assert_eq!(AliasRule::Flatten { axis: -1 }.apply(&[2, 3, 4]).unwrap(), vec![6, 4]);
        assert_eq!(AliasRule::Squeeze(None).apply(&[1, 3, 1, 5]).unwrap(), vec![3, 5]);
        assert_eq!(AliasRule::Squeeze(Some(vec![-2])).apply(&[1, 3, 1, 5]).unwrap(), vec![1, 3, 5]);
        assert!(AliasRule::Squeeze(Some(vec![1])).apply(&[1, 3]).is_err());
        assert_eq!(AliasRule::Unsqueeze(vec![0, -1]).apply(&[3, 4]).unwrap(), vec![1, 3, 4, 1]);
        assert_eq!(AliasRule::Unsqueeze(vec![1, 3]).apply(&[3, 4]).unwrap(), vec![3, 1, 4, 1]);
        assert!(AliasRule::Unsqueeze(vec![0, 0]).apply(&[3]).is_err());
        assert!(AliasRule::Flatten { axis: 4 }.apply(&[2, 3]).is_err());
    }
}

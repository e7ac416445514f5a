//! The WGSL of one fused elementwise kernel: its IR, its inputs' element types and the mode
//! each is indexed by. The name is the canonical text of all three (a hash of it when long),
//! so equal kernels share one pipeline and one golden file.

use std::collections::BTreeSet;

use minijinja::context;

use super::ir::{compute_type, node_expr, storage_type};
use super::shape::Mode;
use super::{Arg, ElemNode};
use crate::dtype::ElemType;
use crate::shader::{render, OpSource};

/// Longest variant name written out; longer ones become a hash of the canonical text.
const MAX_NAME: usize = 100;

/// One fused kernel as a shader variant.
#[derive(Clone, Debug)]
pub struct ElemSource {
    pub inputs: Vec<(ElemType, Mode)>,
    pub nodes: Vec<ElemNode>,
}

/// FNV-1a, 64-bit: a stable hash for long variant names.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl ElemSource {
    /// The IR as text: `<type><mode>` per input, then `<op><type>_<args>` per node.
    pub fn canonical(&self) -> String {
        let inputs: Vec<String> = self.inputs.iter().map(|(t, m)| format!("{t}{}", m.tag())).collect();
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|n| {
                let args: String = n
                    .args
                    .iter()
                    .map(|a| match a {
                        Arg::Input(k) => format!("_i{k}"),
                        Arg::Node(j) => format!("_n{j}"),
                    })
                    .collect();
                format!("{}{}{args}", n.op.tag(), n.ty)
            })
            .collect();
        format!("{}__{}", inputs.join("_"), nodes.join("__"))
    }

    pub fn out_type(&self) -> ElemType {
        self.nodes.last().map_or(ElemType::F32, |n| n.ty)
    }

    fn uses_f16(&self) -> bool {
        self.inputs.iter().any(|i| i.0 == ElemType::F16) || self.nodes.iter().any(|n| n.ty == ElemType::F16)
    }

    /// The float parameters, in uniform slot order (node order).
    pub fn floats(&self) -> Vec<f32> {
        self.nodes.iter().filter_map(|n| n.op.param()).collect()
    }

    /// The input loads: each input's storage type and the expression of its value.
    fn loads(&self) -> Vec<minijinja::Value> {
        let mut broadcast = 0;
        self.inputs
            .iter()
            .enumerate()
            .map(|(k, &(ty, mode))| {
                let idx = match mode {
                    Mode::Same => "o".to_string(),
                    Mode::Scalar => "0u".to_string(),
                    Mode::Broadcast => {
                        broadcast += 1;
                        format!("j{}", broadcast - 1)
                    }
                };
                let load = match ty {
                    ElemType::F16 => format!("f32(in{k}[{idx}])"),
                    ElemType::Bool => format!("ew_bool(in{k}[{idx} >> 2u], {idx})"),
                    _ => format!("in{k}[{idx}]"),
                };
                context! { st => storage_type(ty), load }
            })
            .collect()
    }

    /// One `let` per node, and the helper functions they call (with their dependencies).
    fn lines(&self) -> (Vec<String>, Vec<&'static str>) {
        let mut helpers = BTreeSet::new();
        let mut lines = Vec::with_capacity(self.nodes.len());
        let mut slot = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let args: Vec<(String, ElemType)> = n
                .args
                .iter()
                .map(|&a| match a {
                    Arg::Input(k) => (format!("x{k}"), self.inputs.get(k).map_or(n.ty, |x| x.0)),
                    Arg::Node(j) => (format!("v{j}"), self.nodes.get(j).map_or(n.ty, |x| x.ty)),
                })
                .collect();
            let this_slot = n.op.param().map(|_| {
                slot += 1;
                slot - 1
            });
            let e = node_expr(&n.op, n.ty, &args, this_slot, i + 1 == self.nodes.len());
            helpers.extend(e.helpers);
            lines.push(format!("let v{i}: {} = {};", compute_type(n.ty), e.text));
        }
        if self.inputs.iter().any(|i| i.0 == ElemType::Bool) {
            helpers.insert("bool");
        }
        if self.out_type() == ElemType::F16 {
            helpers.insert("f16");
        }
        let deps: Vec<&'static str> = helpers
            .iter()
            .flat_map(|&h| match h {
                "f16" | "erf" | "tanh" | "minmax" | "pow" | "f2i" => &["nan"][..],
                "f2l" => &["nan", "i64"][..],
                "mul64" | "div64" | "l2f" => &["i64"][..],
                _ => &[][..],
            })
            .copied()
            .collect();
        helpers.extend(deps);
        (lines, helpers.into_iter().collect())
    }
}

impl OpSource for ElemSource {
    fn name(&self) -> String {
        let canonical = self.canonical();
        if canonical.len() + 3 <= MAX_NAME {
            format!("ew_{canonical}")
        } else {
            format!("ew_{}_{:016x}", self.out_type(), fnv1a(&canonical))
        }
    }

    fn emit(&self) -> Result<String, String> {
        let (lines, helpers) = self.lines();
        let out = self.out_type();
        let out_kind = match out {
            ElemType::Bool => "bool",
            ElemType::F16 => "f16",
            _ => "plain",
        };
        let nf = self.floats().len();
        render(
            "elementwise.wgsl.j2",
            context! {
                f16 => self.uses_f16(),
                canon => self.canonical(),
                inputs => self.loads(),
                nb => self.inputs.iter().filter(|i| i.1 == Mode::Broadcast).count(),
                nf4 => nf.div_ceil(4),
                out_st => storage_type(out),
                out_ct => compute_type(out),
                out_kind,
                lines,
                last => self.nodes.len().saturating_sub(1),
                helpers,
            },
        )
    }

    fn capabilities(&self) -> naga::valid::Capabilities {
        if self.uses_f16() {
            naga::valid::Capabilities::SHADER_FLOAT16
        } else {
            naga::valid::Capabilities::empty()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::elementwise::ElemOp;

    fn add(inputs: usize) -> ElemSource {
        let mut nodes = vec![ElemNode { op: ElemOp::Add, args: vec![Arg::Input(0), Arg::Input(1)], ty: ElemType::F32 }];
        for k in 2..inputs {
            nodes.push(ElemNode { op: ElemOp::Add, args: vec![Arg::Node(k - 2), Arg::Input(k)], ty: ElemType::F32 });
        }
        ElemSource { inputs: vec![(ElemType::F32, Mode::Same); inputs], nodes }
    }

    #[test]
    fn names_are_canonical_or_hashed() {
        assert_eq!(add(2).name(), "ew_f32l_f32l__addf32_i0_i1");
        let long = add(7);
        let name = long.name();
        assert!(name.starts_with("ew_f32_") && name.len() == 23, "{name}");
        assert_eq!(name, add(7).name());
        assert_ne!(name, add(6).name());
        // The text names its IR, so equal names mean equal texts.
        assert!(long.emit().unwrap().contains(&long.canonical()));
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn capabilities_follow_f16() {
        let mut s = add(2);
        assert!(s.capabilities().is_empty());
        s.nodes.push(ElemNode { op: ElemOp::Cast, args: vec![Arg::Node(0)], ty: ElemType::F16 });
        assert_eq!(s.capabilities(), naga::valid::Capabilities::SHADER_FLOAT16);
        assert!(s.emit().unwrap().starts_with("enable f16;"));
    }
}

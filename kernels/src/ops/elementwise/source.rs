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
    /// Elements per invocation: 1, or [`ElemSource::vector_width`]'s 4 or 8 (whole vec4s of the
    /// output and of each input of its shape).
    pub width: u32,
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
        let width = if self.width > 1 { format!("__w{}", self.width) } else { String::new() };
        format!("{}__{}{width}", inputs.join("_"), nodes.join("__"))
    }

    /// The elements per invocation of the vector form, or `None` where it does not apply: inputs
    /// and output of float or i32 elements (not bools, not i64). Eight where the output and every
    /// input of its shape are f16 (16-byte loads and stores), else four. The caller checks that
    /// the output and the innermost broadcast dimension are whole multiples of it.
    pub fn vector_width(&self) -> Option<u32> {
        let vectorable = |t: ElemType| matches!(t, ElemType::F32 | ElemType::F16 | ElemType::I32);
        if !self.inputs.iter().all(|i| vectorable(i.0)) || !vectorable(self.out_type()) {
            return None;
        }
        let wide = self.out_type() == ElemType::F16
            && self.inputs.iter().filter(|i| i.1 == Mode::Same).all(|i| i.0 == ElemType::F16);
        Some(if wide { 8 } else { 4 })
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
                let vector = self.width > 1 && mode == Mode::Same;
                let st = if vector { format!("vec4<{}>", storage_type(ty)) } else { storage_type(ty).to_string() };
                context! { st, load, ct => compute_type(ty) }
            })
            .collect()
    }

    /// The vector form's body after the broadcast indices: each input's loads, then the output's
    /// vec4 stores of [`ElemSource::width`] values, each from `value` over that element's inputs.
    fn vector_body(&self) -> Vec<String> {
        let quads = self.width / 4;
        let at = |h: u32| if quads == 1 { "i".to_string() } else { format!("i * {quads}u + {h}u") };
        let mut lines = Vec::new();
        let mut broadcast = 0;
        let mut args: Vec<Vec<String>> = vec![Vec::new(); self.width as usize];
        for (k, &(ty, mode)) in self.inputs.iter().enumerate() {
            let wrap = |e: String| if ty == ElemType::F16 { format!("f32({e})") } else { e };
            match mode {
                Mode::Same => {
                    for h in 0..quads {
                        lines.push(format!("let a{k}_{h} = in{k}[{}];", at(h)));
                    }
                    for (c, a) in args.iter_mut().enumerate() {
                        a.push(wrap(format!("a{k}_{}[{}]", c / 4, c % 4)));
                    }
                }
                Mode::Scalar => {
                    lines.push(format!("let a{k} = {};", wrap(format!("in{k}[0u]"))));
                    args.iter_mut().for_each(|a| a.push(format!("a{k}")));
                }
                Mode::Broadcast => {
                    // The innermost dimension holds whole groups, so one group's elements differ
                    // only there: the input's innermost stride apart.
                    let b = broadcast;
                    broadcast += 1;
                    lines.push(format!("let s{b} = P.strides[{}u].x;", b * 2));
                    for (c, a) in args.iter_mut().enumerate() {
                        a.push(wrap(format!("in{k}[j{b} + {c}u * s{b}]")));
                    }
                }
            }
        }
        let out = self.out_type();
        for h in 0..quads as usize {
            let values: Vec<String> = args[h * 4..h * 4 + 4]
                .iter()
                .map(|a| {
                    let v = format!("value({})", a.join(", "));
                    if out == ElemType::F16 {
                        format!("ew_f16({v})")
                    } else {
                        v
                    }
                })
                .collect();
            lines.push(format!("out[{}] = vec4<{}>({});", at(h as u32), storage_type(out), values.join(", ")));
        }
        lines
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
        let vw = self.width.max(1);
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
                out_st => if vw > 1 { format!("vec4<{}>", storage_type(out)) } else { storage_type(out).to_string() },
                vw,
                vbody => if vw > 1 { self.vector_body() } else { Vec::new() },
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
        ElemSource { inputs: vec![(ElemType::F32, Mode::Same); inputs], nodes, width: 1 }
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

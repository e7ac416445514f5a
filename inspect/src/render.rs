//! The report as text (for people, and the placement goldens) and as JSON (`--json`).

use std::fmt::Write;

use ep_kernels::graph::{DeclineKind, Role};
use ep_kernels::ops::StepPlan;
use serde_json::{json, Value};

use crate::report::{PartitionReport, Report, StepReport};

/// Who the report is about: the model's file name, the profile and the options given.
#[derive(Clone, Debug)]
pub struct Header {
    pub model: String,
    pub opset: i64,
    pub profile: String,
    pub device: String,
    pub options: Vec<(String, String)>,
}

fn kind_name(k: DeclineKind) -> &'static str {
    match k {
        DeclineKind::NotOurs => "not an op of this EP",
        DeclineKind::Unsupported => "unsupported here",
        DeclineKind::Cost => "cost: the CPU EP is faster",
    }
}

fn shape(s: &Option<Vec<u64>>) -> String {
    s.as_ref().map_or("?".into(), |s| format!("{s:?}"))
}

fn flops(f: Option<f64>) -> String {
    f.map_or("? FLOP".into(), |f| format!("{f:.0} FLOP"))
}

fn bytes(b: Option<u64>) -> String {
    b.map_or("? B".into(), |b| format!("{b} B"))
}

/// The human-readable report.
pub fn text(h: &Header, r: &Report) -> String {
    let mut s = String::new();
    let options: Vec<String> = h.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(s, "model {} (opset {}), {} nodes", h.model, h.opset, r.nodes.len());
    let _ = writeln!(s, "profile {}: {}", h.profile, h.device);
    let _ = writeln!(s, "options: {}", if options.is_empty() { "defaults".into() } else { options.join(" ") });
    for (input, dims) in &r.symbolic {
        let _ = writeln!(s, "symbolic: input '{input}' is [{dims}] (fix it with --shape {input}=...)");
    }
    let _ = writeln!(
        s,
        "claimed {} of {} nodes in {} partition(s); declined {}",
        r.claimed(),
        r.nodes.len(),
        r.partitions.len(),
        r.nodes.len() - r.claimed()
    );
    for (p, part) in r.partitions.iter().enumerate() {
        partition_text(&mut s, p, part, r);
    }
    let declined: Vec<_> = r.nodes.iter().filter_map(|n| n.verdict.as_ref().err().map(|e| (n, e))).collect();
    if !declined.is_empty() {
        let _ = writeln!(s, "\ndeclined:");
    }
    for (n, (kind, reason)) in declined {
        let _ = writeln!(s, "  {} '{}' [{}]: {reason}", n.op, n.name, kind_name(*kind));
    }
    s
}

fn partition_text(s: &mut String, p: usize, part: &PartitionReport, r: &Report) {
    let _ = writeln!(s, "\npartition {p}: {} nodes, {}", part.nodes.len(), flops(part.flops));
    let _ = writeln!(s, "  inputs: {}", part.inputs.join(", "));
    let _ = writeln!(s, "  outputs: {}", part.outputs.join(", "));
    for &i in &part.nodes {
        let n = &r.nodes[i];
        let role = match n.verdict {
            Ok((_, Role::Alias)) => " (alias: no GPU work)",
            _ => "",
        };
        let _ = writeln!(s, "  node {} '{}'{role}: {}, {}", n.op, n.name, flops(n.flops), bytes(n.bytes));
    }
    match &part.steps {
        Err(e) => drop(writeln!(s, "  compile fails: {e}")),
        Ok(steps) => steps.iter().enumerate().for_each(|(k, st)| step_text(s, k, st)),
    }
}

fn step_text(s: &mut String, k: usize, st: &StepReport) {
    let ins: Vec<String> = st.inputs.iter().map(shape).collect();
    let outs: Vec<String> = st.outputs.iter().map(shape).collect();
    let _ = writeln!(
        s,
        "  step {k} {} '{}': {} -> {}, {}",
        st.ops,
        st.name,
        ins.join(" "),
        outs.join(" "),
        bytes(st.bytes)
    );
    match &st.plan {
        Ok(Some(plan)) => {
            let _ = writeln!(s, "    plan: {}", plan.line);
            for (variant, grid) in &plan.dispatches {
                let _ = writeln!(s, "    dispatch {variant} grid {grid:?}");
            }
        }
        Ok(None) => {}
        Err(e) => drop(writeln!(s, "    fails at run time: {e}")),
    }
}

fn plan_json(plan: &Result<Option<StepPlan>, String>) -> Value {
    match plan {
        Ok(None) => Value::Null,
        Ok(Some(p)) => json!({
            "line": p.line,
            "tiling": p.tiling,
            "dispatches": p.dispatches.iter().map(|(v, g)| json!({"variant": v, "grid": g})).collect::<Vec<_>>(),
        }),
        Err(e) => json!({ "error": e }),
    }
}

/// The machine-readable report.
pub fn json(h: &Header, r: &Report) -> Value {
    let nodes: Vec<Value> = r
        .nodes
        .iter()
        .map(|n| {
            let (partition, role, kind, reason) = match &n.verdict {
                Ok((p, role)) => (json!(p), json!(format!("{role:?}").to_lowercase()), Value::Null, Value::Null),
                Err((k, reason)) => (Value::Null, Value::Null, json!(format!("{k:?}")), json!(reason)),
            };
            json!({"name": n.name, "op": n.op, "claimed": n.verdict.is_ok(), "partition": partition, "role": role,
                   "decline_kind": kind, "reason": reason, "flops": n.flops, "bytes": n.bytes})
        })
        .collect();
    let partitions: Vec<Value> = r
        .partitions
        .iter()
        .map(|p| {
            let steps = match &p.steps {
                Ok(steps) => json!(steps
                    .iter()
                    .map(|st| json!({"name": st.name, "ops": st.ops, "inputs": st.inputs, "outputs": st.outputs,
                                     "bytes": st.bytes, "plan": plan_json(&st.plan)}))
                    .collect::<Vec<_>>()),
                Err(e) => json!({ "error": e }),
            };
            let names: Vec<&str> = p.nodes.iter().map(|&i| r.nodes[i].name.as_str()).collect();
            json!({"nodes": names, "inputs": p.inputs, "outputs": p.outputs, "flops": p.flops, "steps": steps})
        })
        .collect();
    let symbolic: Vec<Value> = r.symbolic.iter().map(|(n, d)| json!({"input": n, "dims": d})).collect();
    json!({
        "model": h.model, "opset": h.opset, "profile": h.profile, "device": h.device,
        "options": h.options.iter().map(|(k, v)| (k.clone(), json!(v))).collect::<serde_json::Map<_, _>>(),
        "claimed": r.claimed(), "nodes": nodes, "partitions": partitions, "symbolic_inputs": symbolic,
    })
}

//! Subgroup barriers that order workgroup memory.
//!
//! WGSL's `subgroupBarrier()` becomes, through naga, `OpControlBarrier` at subgroup scope whose
//! memory semantics name only *subgroup memory*, a storage class Vulkan ignores: it orders no
//! workgroup-memory access. The tensor-core attention syncs each subgroup's own workgroup
//! scratch with it (one subgroup stores fragments that its invocations then read), so its
//! barriers must order workgroup memory too. naga's IR says exactly that with both flags
//! (`SUB_GROUP | WORK_GROUP`: subgroup execution and memory scope, workgroup-memory semantics),
//! which WGSL cannot spell; such shaders are parsed here, widened, and handed to wgpu as IR.

use std::borrow::Cow;

use naga::{Barrier, Block, Statement};

/// The module wgpu should compile for `source`: WGSL as is, or, where it has subgroup barriers,
/// naga IR with those barriers ordering workgroup memory.
pub fn shader_source(source: &str) -> Result<wgpu::ShaderSource<'_>, String> {
    if !source.contains("subgroupBarrier") {
        return Ok(wgpu::ShaderSource::Wgsl(source.into()));
    }
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    widen_module(&mut module);
    Ok(wgpu::ShaderSource::Naga(Cow::Owned(module)))
}

/// Widens every subgroup barrier of `module`; returns how many there were.
pub fn widen_module(module: &mut naga::Module) -> usize {
    let mut count = 0;
    for (_, f) in module.functions.iter_mut() {
        count += widen(&mut f.body);
    }
    for ep in &mut module.entry_points {
        count += widen(&mut ep.function.body);
    }
    count
}

fn widen(block: &mut Block) -> usize {
    let mut count = 0;
    for statement in block.iter_mut() {
        count += match statement {
            Statement::ControlBarrier(flags) if flags.contains(Barrier::SUB_GROUP) => {
                *flags |= Barrier::WORK_GROUP;
                1
            }
            Statement::Block(b) => widen(b),
            Statement::If { accept, reject, .. } => widen(accept) + widen(reject),
            Statement::Loop { body, continuing, .. } => widen(body) + widen(continuing),
            Statement::Switch { cases, .. } => cases.iter_mut().map(|c| widen(&mut c.body)).sum(),
            _ => 0,
        };
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHADER: &str = "
var<workgroup> s: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32) {
    s[i] = f32(i);
    subgroupBarrier();
    if (i < 32u) {
        loop {
            subgroupBarrier();
            break;
        }
    }
    workgroupBarrier();
    s[i] = s[i ^ 1u];
}";

    #[test]
    fn subgroup_barriers_order_workgroup_memory_after_widening() {
        let caps = naga::valid::Capabilities::SUBGROUP | naga::valid::Capabilities::SUBGROUP_BARRIER;
        let mut module = naga::front::wgsl::parse_str(SHADER).unwrap();
        assert_eq!(widen_module(&mut module), 2, "both subgroup barriers, nested ones too; not the workgroup one");
        let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), caps).validate(&module).unwrap();
        let words = naga::back::spv::write_vec(&module, &info, &naga::back::spv::Options::default(), None).unwrap();
        // OpControlBarrier (opcode 224, 4 words) takes three constant ids: execution scope, memory
        // scope, semantics; resolve them through the OpConstant (43) instructions.
        let mut constants = std::collections::HashMap::new();
        let mut barriers = Vec::new();
        let mut at = 5;
        while at < words.len() {
            let (len, op) = ((words[at] >> 16) as usize, words[at] & 0xffff);
            if op == 43 && len == 4 {
                constants.insert(words[at + 2], words[at + 3]);
            }
            if op == 224 {
                barriers.push([words[at + 1], words[at + 2], words[at + 3]]);
            }
            at += len.max(1);
        }
        let resolved: Vec<[u32; 3]> = barriers.iter().map(|b| b.map(|id| constants[&id])).collect();
        let (subgroup, workgroup_scope, workgroup_memory, acq_rel) = (3, 2, 0x100, 0x8);
        let widened: Vec<_> = resolved.iter().filter(|b| b[0] == subgroup).collect();
        assert_eq!(widened.len(), 2, "{resolved:?}");
        for b in widened {
            assert_eq!(b[1], subgroup, "memory scope stays the subgroup's");
            assert_eq!(b[2] & (workgroup_memory | acq_rel), workgroup_memory | acq_rel, "{b:?}");
        }
        assert!(resolved.iter().any(|b| b[0] == workgroup_scope), "the workgroup barrier stays one");
    }

    #[test]
    fn shaders_without_subgroup_barriers_stay_wgsl() {
        assert!(matches!(shader_source("fn f() {}").unwrap(), wgpu::ShaderSource::Wgsl(_)));
        assert!(matches!(shader_source(SHADER).unwrap(), wgpu::ShaderSource::Naga(_)));
    }
}

//! Loop hints in SPIR-V: `DontUnroll` on the loops that carry a tensor-core kernel's products.
//!
//! The NVIDIA driver unrolls and schedules a tensor-core kernel's main loop, which is what its
//! 0.6–1.1 s compile of each such pipeline goes to (`docs/performance/sessions-39-42.md`,
//! "What makes the driver's tensor-core compiles slow"). naga writes every `OpLoopMerge` with
//! no loop control, and WGSL has no way to ask for one, so this pass sets `DontUnroll` on the
//! words naga wrote: on each outermost loop of a function that contains a cooperative-matrix
//! multiply-add at any depth (a GEMM's K loop, an attention's key loop). The loops inside it
//! (over fragments, whose matrices must stay in registers) and every other loop keep no hint.
//!
//! It relies on the order naga lays out structured control flow in: a loop's blocks come after
//! its `OpLoopMerge` and before its merge block's `OpLabel`.

const MAGIC: u32 = 0x0723_0203;
const HEADER_WORDS: usize = 5;
const OP_FUNCTION_END: u32 = 56;
const OP_LOOP_MERGE: u32 = 246;
const OP_LABEL: u32 = 248;
const OP_COOPERATIVE_MATRIX_MUL_ADD_KHR: u32 = 4459;
const LOOP_CONTROL_UNROLL: u32 = 0x1;
const LOOP_CONTROL_DONT_UNROLL: u32 = 0x2;

/// A loop being read: its merge block and where its loop-control word is.
struct OpenLoop {
    merge: u32,
    control: usize,
    products: bool,
}

/// Sets `DontUnroll` on every outermost loop that contains a cooperative-matrix multiply-add;
/// returns how many loops it marked. Fails, changing nothing, on words that are not a SPIR-V
/// module or whose loops do not nest as naga writes them.
pub fn keep_product_loops_rolled(words: &mut [u32]) -> Result<usize, String> {
    let marks = product_loops(words)?;
    for &at in &marks {
        words[at] = (words[at] & !LOOP_CONTROL_UNROLL) | LOOP_CONTROL_DONT_UNROLL;
    }
    Ok(marks.len())
}

/// Sets `DontUnroll` on every loop (a probe of what the driver's unrolling costs elsewhere:
/// `pipeline_stats --modes rolledall`; the runtime never does this, since the loops over
/// fragments keep their matrices in registers only unrolled). Returns how many it marked.
pub fn keep_all_loops_rolled(words: &mut [u32]) -> Result<usize, String> {
    product_loops(words)?; // the same checks of the module's layout
    let mut marked = 0;
    let mut i = HEADER_WORDS;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        if words[i] & 0xffff == OP_LOOP_MERGE && count >= 4 {
            words[i + 3] = (words[i + 3] & !LOOP_CONTROL_UNROLL) | LOOP_CONTROL_DONT_UNROLL;
            marked += 1;
        }
        i += count.max(1);
    }
    Ok(marked)
}

/// The loop-control word of each outermost loop that contains a cooperative-matrix product.
fn product_loops(words: &[u32]) -> Result<Vec<usize>, String> {
    if words.len() < HEADER_WORDS || words[0] != MAGIC {
        return Err("not a SPIR-V module".into());
    }
    let mut open: Vec<OpenLoop> = Vec::new();
    let mut marks = Vec::new();
    let mut i = HEADER_WORDS;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        let op = words[i] & 0xffff;
        if count == 0 || i + count > words.len() {
            return Err(format!("malformed instruction at word {i}"));
        }
        match op {
            OP_LOOP_MERGE if count >= 4 => open.push(OpenLoop { merge: words[i + 1], control: i + 3, products: false }),
            OP_LABEL if count >= 2 && open.last().is_some_and(|l| l.merge == words[i + 1]) => {
                if let Some(done) = open.pop() {
                    match open.last_mut() {
                        Some(outer) => outer.products |= done.products,
                        None if done.products => marks.push(done.control),
                        None => {}
                    }
                }
            }
            OP_COOPERATIVE_MATRIX_MUL_ADD_KHR => {
                if let Some(inner) = open.last_mut() {
                    inner.products = true;
                }
            }
            OP_FUNCTION_END if !open.is_empty() => return Err(format!("a loop at word {i} has no merge block")),
            _ => {}
        }
        i += count;
    }
    Ok(marks)
}

/// How many loops a module has, and which loop controls they carry (for tests and probes).
pub fn loop_controls(words: &[u32]) -> Vec<u32> {
    let mut out = Vec::new();
    let mut i = HEADER_WORDS;
    while i < words.len() {
        let count = (words[i] >> 16) as usize;
        if count == 0 || i + count > words.len() {
            break;
        }
        if words[i] & 0xffff == OP_LOOP_MERGE && count >= 4 {
            out.push(words[i + 3]);
        }
        i += count;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inst(op: u32, operands: &[u32]) -> Vec<u32> {
        let mut v = vec![((operands.len() as u32 + 1) << 16) | op];
        v.extend_from_slice(operands);
        v
    }

    fn module(body: &[Vec<u32>]) -> Vec<u32> {
        let mut w = vec![MAGIC, 0x0001_0600, 0, 100, 0];
        for i in body {
            w.extend_from_slice(i);
        }
        w.extend(inst(OP_FUNCTION_END, &[]));
        w
    }

    #[test]
    fn only_the_outermost_loop_with_a_product_is_marked() {
        // loop A (merge 10) { loop B (merge 11) { muladd } } ; loop C (merge 12) { } ; loop D (merge 13) { muladd }
        let mut w = module(&[
            inst(OP_LOOP_MERGE, &[10, 20, 0]),
            inst(OP_LABEL, &[30]),
            inst(OP_LOOP_MERGE, &[11, 21, 0]),
            inst(OP_COOPERATIVE_MATRIX_MUL_ADD_KHR, &[1, 2, 3, 4, 5]),
            inst(OP_LABEL, &[11]),
            inst(OP_LABEL, &[10]),
            inst(OP_LOOP_MERGE, &[12, 22, LOOP_CONTROL_UNROLL]),
            inst(OP_LABEL, &[12]),
            inst(OP_LOOP_MERGE, &[13, 23, LOOP_CONTROL_UNROLL]),
            inst(OP_COOPERATIVE_MATRIX_MUL_ADD_KHR, &[1, 2, 3, 4, 5]),
            inst(OP_LABEL, &[13]),
        ]);
        assert_eq!(keep_product_loops_rolled(&mut w), Ok(2));
        assert_eq!(loop_controls(&w), vec![LOOP_CONTROL_DONT_UNROLL, 0, LOOP_CONTROL_UNROLL, LOOP_CONTROL_DONT_UNROLL]);
    }

    #[test]
    fn every_loop_is_marked_by_the_probe() {
        let mut w = module(&[
            inst(OP_LOOP_MERGE, &[10, 20, 0]),
            inst(OP_LOOP_MERGE, &[11, 21, LOOP_CONTROL_UNROLL]),
            inst(OP_LABEL, &[11]),
            inst(OP_LABEL, &[10]),
        ]);
        assert_eq!(keep_all_loops_rolled(&mut w), Ok(2));
        assert_eq!(loop_controls(&w), vec![LOOP_CONTROL_DONT_UNROLL, LOOP_CONTROL_DONT_UNROLL]);
        let mut open = module(&[inst(OP_LOOP_MERGE, &[10, 20, 0])]);
        assert!(keep_all_loops_rolled(&mut open).is_err());
    }

    #[test]
    fn malformed_words_change_nothing() {
        let mut open = module(&[inst(OP_LOOP_MERGE, &[10, 20, 0]), inst(OP_COOPERATIVE_MATRIX_MUL_ADD_KHR, &[1])]);
        let before = open.clone();
        assert!(keep_product_loops_rolled(&mut open).is_err());
        assert_eq!(open, before);
        assert!(keep_product_loops_rolled(&mut [1, 2, 3]).is_err());
        let mut cut = module(&[]);
        cut.push(0x0005_0000 | OP_LABEL);
        assert!(keep_product_loops_rolled(&mut cut).is_err());
    }
}

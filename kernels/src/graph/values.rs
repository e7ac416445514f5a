//! Input values that decide output shapes ([`crate::ops::Kernel::value_inputs`]), such as
//! `GroupQueryAttention`'s `total_sequence_length`: read on the host at each run and made part of
//! the key of a prepared set, so a set is reused only for the same shapes and the same values.
//! Placement keeps the nodes computing them on the CPU (`OpDef::host_inputs`), so they are inputs
//! of the partition or constants, never values a step computes.

use super::executor::{InputData, RunInput};
use super::program::{Constant, Operand, Program, Step};
use crate::dtype::ElemType;
use crate::error::GpuError;
use crate::ops::Kernel;
use crate::runtime::transfer::{self, Direction};

/// Most elements a value input may have (they are scalars and short vectors).
const MAX_ELEMS: u64 = 64;

/// The partition inputs whose values some step's shape inference reads, in input order.
pub(super) fn value_inputs(program: &Program) -> Result<Vec<usize>, GpuError> {
    let mut out = Vec::new();
    for step in &program.steps {
        for &k in step.kernel.value_inputs() {
            match step.inputs.get(k).copied().flatten() {
                Some(Operand::Input(i)) if !out.contains(&i) => out.push(i),
                Some(Operand::Temp(_)) => {
                    return Err(GpuError::Internal(format!(
                        "'{}' reads the value of its input {k} on the host, but a GPU step computes it",
                        step.name
                    )))
                }
                _ => {}
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Integer elements of a value input.
pub(super) fn decode(dtype: ElemType, bytes: &[u8], what: &str) -> Result<Vec<i64>, GpuError> {
    if bytes.len() as u64 > MAX_ELEMS * dtype.size() {
        return Err(GpuError::Invalid(format!("{what} has more than {MAX_ELEMS} elements")));
    }
    integers(dtype, bytes, what)
}

/// Integer elements of any count (a host check's indices: `Kernel::host_check`).
pub(super) fn integers(dtype: ElemType, bytes: &[u8], what: &str) -> Result<Vec<i64>, GpuError> {
    let size = dtype.size() as usize;
    let word = |c: &[u8]| -> i64 {
        match size {
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        }
    };
    match dtype {
        ElemType::I32 | ElemType::I64 => Ok(bytes.chunks_exact(size).map(word).collect()),
        other => Err(GpuError::Internal(format!("{what} is read on the host as integers, but it is {other}"))),
    }
}

/// The values of the program inputs in `which` (`None` for every other input): host bytes as
/// they are, device tensors read back (counted).
pub(super) fn read(inputs: &[RunInput<'_>], which: &[usize]) -> Result<Vec<Option<Vec<i64>>>, GpuError> {
    let mut out = vec![None; inputs.len()];
    for &i in which {
        let t = inputs.get(i).ok_or_else(|| GpuError::Internal(format!("value input {i} is not bound")))?;
        let what = format!("input {i}");
        out[i] = Some(match &t.data {
            InputData::Host(bytes) => decode(t.dtype, bytes, &what)?,
            InputData::Device(s) => {
                if s.len > MAX_ELEMS * 8 {
                    return Err(GpuError::Invalid(format!("{what} has more than {MAX_ELEMS} elements")));
                }
                let mut bytes = vec![0u8; s.len as usize];
                transfer::read(s, &mut bytes)?;
                transfer::count(Direction::DeviceToHost, s.len);
                decode(t.dtype, &bytes, &what)?
            }
        });
    }
    Ok(out)
}

/// The values of one step's [`crate::ops::Kernel::value_inputs`], in that order.
pub(super) fn for_step(
    step: &Step,
    values: &[Option<Vec<i64>>],
    constants: &[Constant],
) -> Result<Vec<Option<Vec<i64>>>, GpuError> {
    step.kernel
        .value_inputs()
        .iter()
        .map(|&k| match step.inputs.get(k).copied().flatten() {
            None => Ok(None),
            Some(Operand::Input(i)) => values
                .get(i)
                .cloned()
                .flatten()
                .map(Some)
                .ok_or_else(|| GpuError::Internal(format!("'{}': the value of input {k} was not read", step.name))),
            Some(Operand::Const(c)) => {
                let c = constants.get(c).ok_or_else(|| GpuError::Internal(format!("constant {c} is missing")))?;
                decode(c.dtype, &c.data, &c.name).map(Some)
            }
            Some(Operand::Temp(_)) => Err(GpuError::Internal(format!(
                "'{}' reads the value of its input {k} on the host, but a GPU step computes it",
                step.name
            ))),
        })
        .collect()
}

/// The output shapes of every step that reads values, from a shape-only pass over the program:
/// what a run with these values adds to the key of its set. Keying by shapes rather than by the
/// values themselves lets runs share a set when a value changes but the shapes do not (genai's
/// decode loop over a shared KV buffer: `total_sequence_length` grows, the present length stays).
pub(super) fn shape_key(
    program: &Program,
    inputs: &[RunInput<'_>],
    values: &[Option<Vec<i64>>],
) -> Result<Vec<u64>, GpuError> {
    let mut temps: Vec<Option<Vec<u64>>> = vec![None; program.values];
    let mut key = Vec::new();
    for step in &program.steps {
        let shapes = step
            .inputs
            .iter()
            .map(|o| {
                o.map(|o| match o {
                    Operand::Input(i) => inputs.get(i).map(|t| t.shape),
                    Operand::Const(c) => program.constants.get(c).map(|c| c.shape.as_slice()),
                    Operand::Temp(v) => temps.get(v).and_then(Option::as_deref),
                })
                .map(|s| s.ok_or_else(|| GpuError::Internal(format!("'{}' reads {o:?} before it is known", step.name))))
                .transpose()
            })
            .collect::<Result<Vec<Option<&[u64]>>, GpuError>>()?;
        let outs = infer(step, step.kernel.as_ref(), &shapes, values, &program.constants)?;
        if !step.kernel.value_inputs().is_empty() {
            key.extend(outs.iter().flat_map(|s| std::iter::once(s.len() as u64).chain(s.iter().copied())));
        }
        for (shape, &(v, _)) in outs.into_iter().zip(&step.outputs) {
            if let Some(slot) = temps.get_mut(v) {
                *slot = Some(shape);
            }
        }
    }
    Ok(key)
}

/// A step's output shapes: [`Kernel::infer`], or [`Kernel::infer_values`] with its values.
pub(super) fn infer(
    step: &Step,
    kernel: &dyn Kernel,
    shapes: &[Option<&[u64]>],
    values: &[Option<Vec<i64>>],
    constants: &[Constant],
) -> Result<Vec<Vec<u64>>, GpuError> {
    if kernel.value_inputs().is_empty() {
        return kernel.infer(shapes).map_err(GpuError::Invalid);
    }
    let known = for_step(step, values, constants)?;
    let refs: Vec<Option<&[i64]>> = known.iter().map(Option::as_deref).collect();
    kernel.infer_values(shapes, &refs).map_err(GpuError::Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_integers_and_refuses_the_rest() {
        let b32: Vec<u8> = [7i32, -2].iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(decode(ElemType::I32, &b32, "x").unwrap(), vec![7, -2]);
        let b64: Vec<u8> = 1i64.to_le_bytes().to_vec();
        assert_eq!(decode(ElemType::I64, &b64, "x").unwrap(), vec![1]);
        assert!(matches!(decode(ElemType::F32, &b32, "x"), Err(GpuError::Internal(_))));
        assert!(matches!(decode(ElemType::I32, &[0u8; 4 * 65], "x"), Err(GpuError::Invalid(_))));
    }
}

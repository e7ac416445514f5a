//! Initializers: element type, shape and (for small ones) their bytes, from the tensor's own
//! fields or from an external data file next to the model.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use crate::proto::onnx::tensor_proto::DataLocation;
use crate::proto::onnx::TensorProto;

/// An initializer as placement sees it.
#[derive(Clone, Debug)]
pub struct Initializer {
    pub name: String,
    pub elem_type: i32,
    pub dims: Vec<u64>,
    /// Its little-endian bytes when it is at most `max_bytes` (else `None`).
    pub small_data: Option<Vec<u8>>,
}

/// Bytes per element of an ONNX element type, for those with a fixed size.
pub fn elem_size(elem_type: i32) -> Option<u64> {
    Some(match elem_type {
        1 | 6 | 12 => 4,          // float, int32, uint32
        2 | 3 | 9 | 17..=20 => 1, // uint8, int8, bool, float8
        4 | 5 | 10 | 16 => 2,     // uint16, int16, float16, bfloat16
        7 | 11 | 13 | 14 => 8,    // int64, double, uint64, complex64
        15 => 16,                 // complex128
        _ => return None,
    })
}

/// Reads `t`; `dir` is the model's folder (external data is relative to it).
pub fn read_initializer(t: &TensorProto, dir: &Path, max_bytes: usize) -> Result<Initializer, String> {
    let name = t.name.clone().unwrap_or_default();
    let elem_type = t.data_type.unwrap_or(0);
    let dims = t
        .dims
        .iter()
        .map(|&d| u64::try_from(d).map_err(|_| format!("initializer '{name}' has a negative dimension {d}")))
        .collect::<Result<Vec<u64>, String>>()?;
    let count = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let bytes = count.zip(elem_size(elem_type)).and_then(|(c, s)| c.checked_mul(s));
    let external = t.data_location.map(|l| l.enum_value_or_default()) == Some(DataLocation::EXTERNAL);
    let small_data = if external {
        external_bytes(t, &name, dir, bytes, max_bytes)?
    } else if bytes.is_some_and(|b| b <= max_bytes as u64) {
        inline_bytes(t, elem_type, bytes.unwrap_or(0))
    } else {
        None
    };
    Ok(Initializer { name, elem_type, dims, small_data })
}

/// The tensor's bytes from `raw_data` or its typed fields, if they hold exactly `bytes`.
fn inline_bytes(t: &TensorProto, elem_type: i32, bytes: u64) -> Option<Vec<u8>> {
    let data: Vec<u8> = if let Some(raw) = &t.raw_data {
        raw.clone()
    } else {
        match elem_type {
            1 => t.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            7 => t.int64_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            11 => t.double_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            6 => t.int32_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            // float16, bfloat16, int16, uint16: one value per int32 entry.
            4 | 5 | 10 | 16 => t.int32_data.iter().flat_map(|&v| (v as u16).to_le_bytes()).collect(),
            2 | 3 | 9 => t.int32_data.iter().map(|&v| v as u8).collect(),
            _ => return None,
        }
    };
    (data.len() as u64 == bytes).then_some(data)
}

/// Checks that the external file exists and holds the tensor; reads it when small.
fn external_bytes(
    t: &TensorProto,
    name: &str,
    dir: &Path,
    bytes: Option<u64>,
    max_bytes: usize,
) -> Result<Option<Vec<u8>>, String> {
    let entry = |k: &str| t.external_data.iter().find(|e| e.key.as_deref() == Some(k)).and_then(|e| e.value.clone());
    let location = entry("location").ok_or_else(|| format!("initializer '{name}' is external but names no file"))?;
    let number = |k: &str| -> Result<u64, String> {
        entry(k).map_or(Ok(0), |v| v.parse().map_err(|_| format!("initializer '{name}': bad external {k} '{v}'")))
    };
    let (offset, length) = (number("offset")?, number("length")?);
    let relative = Path::new(&location);
    if relative.is_absolute() || relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return Err(format!("initializer '{name}': external data path '{location}' leaves the model's folder"));
    }
    let path = dir.join(relative);
    let mut file = std::fs::File::open(&path)
        .map_err(|e| format!("initializer '{name}': external data file '{}': {e}", path.display()))?;
    let size = file.metadata().map_err(|e| format!("'{}': {e}", path.display()))?.len();
    let need = if length > 0 { length } else { bytes.unwrap_or(0) };
    if offset.checked_add(need).is_none_or(|end| end > size) {
        return Err(format!(
            "initializer '{name}': external data file '{}' has {size} bytes, the tensor needs {need} at offset {offset}",
            path.display()
        ));
    }
    if need > max_bytes as u64 || bytes != Some(need) {
        return Ok(None);
    }
    let mut data = vec![0u8; need as usize];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut data))
        .map_err(|e| format!("initializer '{name}': reading '{}': {e}", path.display()))?;
    Ok(Some(data))
}

//! Copies ORT's graph objects (valid only during a callback) into the plain-data graph model of
//! `ep_kernels::graph`, keeping the `OrtNode` pointers only for the callback's duration.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_void};
use std::ptr::{null, null_mut};

use ep_kernels::graph::model::SMALL_CONSTANT_BYTES;
use ep_kernels::graph::{Attr, Dim, Graph, Node, ValueInfo};
use ort_sys::{OrtGraph, OrtNode, OrtOpAttr, OrtOpAttrType, OrtTypeInfo, OrtValue, OrtValueInfo};

use crate::ort::{check, cstr, ignore, EpError, Ort};

/// A graph copied out of ORT, with the node handles in the same order as `graph.nodes`.
pub struct ReadGraph {
    pub graph: Graph,
    pub handles: Vec<*const OrtNode>,
}

type NameFn = unsafe extern "system" fn(*const OrtNode, *mut *const c_char) -> ort_sys::OrtStatusPtr;

/// # Safety
/// `node` is a live ORT node and `f` one of its string getters.
unsafe fn node_str(node: *const OrtNode, f: NameFn) -> Result<String, EpError> {
    let mut p = null();
    // SAFETY: guaranteed by the caller; the string is copied before the callback ends.
    check(unsafe { f(node, &mut p) })?;
    // SAFETY: ORT returned a NUL-terminated string (or NULL).
    Ok(unsafe { cstr(p) })
}

/// Reads every node of `graph` and the names of its outputs.
///
/// # Safety
/// `graph` is a live `OrtGraph` for the duration of the call.
pub unsafe fn read_graph(o: &Ort, graph: *const OrtGraph) -> Result<ReadGraph, EpError> {
    let a = o.api;
    let mut n = 0usize;
    // SAFETY: graph is live (caller); out-pointers are valid locals.
    check(unsafe { (a.Graph_GetNumNodes)(graph, &mut n) })?;
    let mut handles = vec![null(); n];
    check(unsafe { (a.Graph_GetNodes)(graph, handles.as_mut_ptr(), n) })?;
    let mut nouts = 0usize;
    check(unsafe { (a.Graph_GetNumOutputs)(graph, &mut nouts) })?;
    let mut outs = vec![null(); nouts];
    check(unsafe { (a.Graph_GetOutputs)(graph, outs.as_mut_ptr(), nouts) })?;
    let outputs = outs
        .iter()
        .filter(|p| !p.is_null())
        // SAFETY: non-NULL value infos of a live graph.
        .map(|&v| unsafe { value_name(o, v) })
        .collect::<Result<_, _>>()?;
    let nodes = handles
        .iter()
        // SAFETY: handles are live nodes of the graph.
        .map(|&h| unsafe { read_node(o, h) })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ReadGraph { graph: Graph { nodes, outputs }, handles })
}

/// # Safety
/// `node` is a live `OrtNode`.
pub unsafe fn read_node(o: &Ort, node: *const OrtNode) -> Result<Node, EpError> {
    let a = o.api;
    // SAFETY (whole block): node is live per the caller; every out-pointer is a valid local and
    // every array is sized by the count ORT just returned.
    unsafe {
        let mut since = 0i32;
        check((a.Node_GetSinceVersion)(node, &mut since))?;
        let mut ni = 0usize;
        check((a.Node_GetNumInputs)(node, &mut ni))?;
        let mut ins = vec![null(); ni];
        check((a.Node_GetInputs)(node, ins.as_mut_ptr(), ni))?;
        let mut no = 0usize;
        check((a.Node_GetNumOutputs)(node, &mut no))?;
        let mut outs = vec![null(); no];
        check((a.Node_GetOutputs)(node, outs.as_mut_ptr(), no))?;
        let ep = node_str(node, a.Node_GetEpName).unwrap_or_default();
        Ok(Node {
            name: node_str(node, a.Node_GetName)?,
            op_type: node_str(node, a.Node_GetOperatorType)?,
            domain: node_str(node, a.Node_GetDomain)?,
            since_version: since,
            inputs: ins.iter().map(|&v| optional_value(o, v)).collect::<Result<_, _>>()?,
            outputs: outs.iter().map(|&v| optional_value(o, v)).collect::<Result<_, _>>()?,
            attrs: read_attrs(o, node)?,
            assigned_ep: (!ep.is_empty()).then_some(ep),
        })
    }
}

/// # Safety
/// `v` is NULL or a live `OrtValueInfo`.
unsafe fn optional_value(o: &Ort, v: *const OrtValueInfo) -> Result<Option<ValueInfo>, EpError> {
    if v.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL and live per the caller.
    unsafe { read_value(o, v) }.map(Some)
}

/// # Safety
/// `v` is a live `OrtValueInfo`.
unsafe fn value_name(o: &Ort, v: *const OrtValueInfo) -> Result<String, EpError> {
    let mut p = null();
    // SAFETY: v is live; the name is copied immediately.
    check(unsafe { (o.api.GetValueInfoName)(v, &mut p) })?;
    Ok(unsafe { cstr(p) })
}

/// # Safety
/// `v` is a live `OrtValueInfo`.
unsafe fn read_value(o: &Ort, v: *const OrtValueInfo) -> Result<ValueInfo, EpError> {
    let a = o.api;
    // SAFETY (whole block): v is live; the type info it returns is owned by v and only read.
    unsafe {
        let name = value_name(o, v)?;
        let mut type_info: *const OrtTypeInfo = null();
        check((a.GetValueInfoTypeInfo)(v, &mut type_info))?;
        let (elem_type, shape) = if type_info.is_null() { (0, None) } else { tensor_type(o, type_info) };
        let mut constant = false;
        ignore((a.ValueInfo_IsConstantInitializer)(v, &mut constant));
        let mut small_data = None;
        if constant {
            let mut value: *const OrtValue = null();
            ignore((a.ValueInfo_GetInitializerValue)(v, &mut value));
            if !value.is_null() {
                if let Ok(t) = tensor_bytes(o, value, SMALL_CONSTANT_BYTES) {
                    small_data = Some(t.data);
                }
            }
        }
        Ok(ValueInfo { name, elem_type, shape, constant, small_data })
    }
}

/// Element type and shape of a tensor type; `(0, None)` for non-tensors.
///
/// # Safety
/// `t` is a live `OrtTypeInfo`.
unsafe fn tensor_type(o: &Ort, t: *const OrtTypeInfo) -> (i32, Option<Vec<Dim>>) {
    let a = o.api;
    // SAFETY (whole block): t is live; the tensor info it yields is owned by t; the element
    // type is written through an i32 so an unknown code from a newer ORT is just a number.
    unsafe {
        let mut info = null();
        if check((a.CastTypeInfoToTensorInfo)(t, &mut info)).is_err() || info.is_null() {
            return (0, None);
        }
        let mut elem = 0i32;
        let elem_ptr = &mut elem as *mut i32 as *mut ort_sys::ONNXTensorElementDataType;
        if check((a.GetTensorElementType)(info, elem_ptr)).is_err() {
            return (0, None);
        }
        // A value ORT inferred no shape for (e.g. past a function op such as GroupNormalization-21)
        // reports rank 0: it is unknown, not a scalar (API 24, which every host we accept has).
        if !(a.TensorTypeAndShape_HasShape)(info) {
            return (elem, None);
        }
        let mut rank = 0usize;
        if check((a.GetDimensionsCount)(info, &mut rank)).is_err() {
            return (elem, None);
        }
        let mut dims = vec![0i64; rank];
        let mut syms: Vec<*const c_char> = vec![null(); rank];
        if check((a.GetDimensions)(info, dims.as_mut_ptr(), rank)).is_err()
            || check((a.GetSymbolicDimensions)(info, syms.as_mut_ptr(), rank)).is_err()
        {
            return (elem, None);
        }
        let shape = dims
            .iter()
            .zip(&syms)
            .map(|(&d, &s)| if d >= 0 { Dim::Fixed(d as u64) } else { Dim::Symbolic(cstr(s)) })
            .collect();
        (elem, Some(shape))
    }
}

/// A live tensor's ONNX element type and shape.
///
/// # Safety
/// `value` is a live tensor `OrtValue`.
pub unsafe fn tensor_type_shape(o: &Ort, value: *const OrtValue) -> Result<(i32, Vec<u64>), EpError> {
    let a = o.api;
    // SAFETY (whole block): value is a live tensor; the type/shape info we create is released
    // below; the element type is written through an i32 so an unknown code from a newer ORT is
    // just a number.
    unsafe {
        let mut info = null_mut();
        check((a.GetTensorTypeAndShape)(value, &mut info))?;
        let mut elem = 0i32;
        let r1 =
            check((a.GetTensorElementType)(info, &mut elem as *mut i32 as *mut ort_sys::ONNXTensorElementDataType));
        let mut rank = 0usize;
        let r2 = check((a.GetDimensionsCount)(info, &mut rank));
        let mut dims = vec![0i64; rank];
        let r3 = check((a.GetDimensions)(info, dims.as_mut_ptr(), rank));
        (a.ReleaseTensorTypeAndShapeInfo)(info);
        r1.and(r2).and(r3)?;
        Ok((elem, dims.iter().map(|&d| d.max(0) as u64).collect()))
    }
}

/// A tensor's element type, shape and bytes, copied.
pub struct TensorData {
    pub elem_type: i32,
    pub shape: Vec<u64>,
    pub data: Vec<u8>,
}

/// Copies a tensor (from host memory, or from our device memory through a read-back); fails if
/// it has more than `max_bytes`.
///
/// # Safety
/// `value` is a live tensor `OrtValue`.
pub unsafe fn tensor_bytes(o: &Ort, value: *const OrtValue, max_bytes: usize) -> Result<TensorData, EpError> {
    // SAFETY: guaranteed by the caller; the bytes are copied before this call returns.
    let (elem_type, shape) = unsafe { tensor_type_shape(o, value)? };
    // SAFETY: as above.
    let place = unsafe { crate::memory::tensor_place(o, value, false)? };
    if place.len() > max_bytes as u64 {
        return Err(EpError::invalid(format!("tensor of {} bytes exceeds {max_bytes}", place.len())));
    }
    let data = match place {
        crate::memory::Place::Host(data) => data.to_vec(),
        crate::memory::Place::Device(slice) => {
            let mut data = vec![0u8; slice.len as usize];
            ep_kernels::runtime::transfer::read(&slice, &mut data)?;
            data
        }
    };
    Ok(TensorData { elem_type, shape, data })
}

/// # Safety
/// `node` is a live `OrtNode`.
unsafe fn read_attrs(o: &Ort, node: *const OrtNode) -> Result<BTreeMap<String, Attr>, EpError> {
    let a = o.api;
    // SAFETY (whole block): node is live; attribute handles are owned by it; buffers passed to
    // ReadOpAttr are sized in bytes as ORT reports.
    unsafe {
        let mut n = 0usize;
        check((a.Node_GetNumAttributes)(node, &mut n))?;
        let mut attrs: Vec<*const OrtOpAttr> = vec![null(); n];
        check((a.Node_GetAttributes)(node, attrs.as_mut_ptr(), n))?;
        let mut out = BTreeMap::new();
        for &attr in attrs.iter().filter(|p| !p.is_null()) {
            let mut name = null();
            check((a.OpAttr_GetName)(attr, &mut name))?;
            let mut kind = 0i32;
            check((a.OpAttr_GetType)(attr, &mut kind as *mut i32 as *mut OrtOpAttrType))?;
            out.insert(cstr(name), read_attr(o, attr, kind));
        }
        Ok(out)
    }
}

/// # Safety
/// `attr` is a live attribute of type `kind`.
unsafe fn read_attr(o: &Ort, attr: *const OrtOpAttr, kind: i32) -> Attr {
    // SAFETY: per the caller; see read_bytes.
    let bytes = |t: OrtOpAttrType| unsafe { read_bytes(o, attr, t) };
    match kind {
        1 => bytes(OrtOpAttrType::ORT_OP_ATTR_INT)
            .and_then(|b| b.try_into().ok())
            .map_or(Attr::Other, |b: [u8; 8]| Attr::Int(i64::from_le_bytes(b))),
        2 => bytes(OrtOpAttrType::ORT_OP_ATTR_INTS).map_or(Attr::Other, |b| {
            Attr::Ints(b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default())).collect())
        }),
        3 => bytes(OrtOpAttrType::ORT_OP_ATTR_FLOAT)
            .and_then(|b| b.try_into().ok())
            .map_or(Attr::Other, |b: [u8; 4]| Attr::Float(f32::from_le_bytes(b))),
        4 => bytes(OrtOpAttrType::ORT_OP_ATTR_FLOATS).map_or(Attr::Other, |b| {
            Attr::Floats(b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap_or_default())).collect())
        }),
        5 => bytes(OrtOpAttrType::ORT_OP_ATTR_STRING)
            .map_or(Attr::Other, |b| Attr::String(String::from_utf8_lossy(&b).trim_end_matches('\0').to_string())),
        _ => Attr::Other,
    }
}

/// Reads an attribute's payload: a first call learns the size, the second fills the buffer.
///
/// # Safety
/// `attr` is a live attribute whose type matches `kind`.
unsafe fn read_bytes(o: &Ort, attr: *const OrtOpAttr, kind: OrtOpAttrType) -> Option<Vec<u8>> {
    let mut size = 0usize;
    // SAFETY: a zero-length query; ORT reports the needed size (and an error we discard).
    ignore(unsafe { (o.api.ReadOpAttr)(attr, kind, null_mut(), 0, &mut size) });
    if size == 0 {
        return Some(Vec::new());
    }
    let mut buf = vec![0u8; size];
    let mut written = 0usize;
    // SAFETY: buf has `size` bytes, as ORT asked for.
    check(unsafe { (o.api.ReadOpAttr)(attr, kind, buf.as_mut_ptr() as *mut c_void, size, &mut written) }).ok()?;
    buf.truncate(written);
    Some(buf)
}

//! Access to ONNX Runtime's API tables, the error type every entry point returns, and the guard
//! that keeps Rust panics from unwinding into ORT.

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::OnceLock;

use ep_kernels::{GpuError, PlanError};
use ort_sys::{OrtApi, OrtApiBase, OrtErrorCode, OrtLogger, OrtLoggingLevel, OrtStatusPtr};

use crate::abi::OrtEpApi;

/// The oldest ONNX Runtime whose plugin-EP ABI we were built against.
pub const MIN_ORT_MINOR: u32 = 24;

/// ORT's API tables, negotiated once per process.
pub struct Ort {
    pub api: &'static OrtApi,
    pub ep: &'static OrtEpApi,
    /// The host's "1.MINOR.PATCH".
    pub version: String,
}

// SAFETY: the tables are immutable function-pointer structs owned by ORT for the life of the
// process; ORT documents its API as callable from any thread.
unsafe impl Send for Ort {}
// SAFETY: as above; we only read them.
unsafe impl Sync for Ort {}

static ORT: OnceLock<Ort> = OnceLock::new();

/// The API tables; `None` only before the first `CreateEpFactories`.
pub fn ort() -> Result<&'static Ort, EpError> {
    ORT.get().ok_or_else(|| EpError::new(OrtErrorCode::ORT_FAIL, "ONNX Runtime API not initialised"))
}

/// Parses "1.MINOR.PATCH" strictly.
pub fn parse_ort_minor(version: &str) -> Option<u32> {
    let mut parts = version.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    let patch = parts.next()?;
    if major != 1 || patch.is_empty() {
        return None;
    }
    Some(minor)
}

/// Negotiates the API with the host: refuses ORT older than [`MIN_ORT_MINOR`] and asks for
/// `GetApi(min(host, 24))`, never a version the host does not have.
///
/// # Safety
/// `base` must be the `OrtApiBase` ORT passed to `CreateEpFactories`.
pub unsafe fn init(base: *const OrtApiBase) -> Result<&'static Ort, OrtStatusPtr> {
    if let Some(o) = ORT.get() {
        return Ok(o);
    }
    if base.is_null() {
        // Without the API base there is no way to build a status.
        return Err(OrtStatusPtr(null_mut()));
    }
    // SAFETY: ORT passes a valid OrtApiBase whose functions exist in every version.
    let base = unsafe { &*base };
    // SAFETY: GetVersionString returns a static NUL-terminated string.
    let version = unsafe { cstr((base.GetVersionString)()) };
    let minor = parse_ort_minor(&version);
    // SAFETY: base is the valid API base (checked non-NULL above).
    let fail = |msg: String| unsafe { bootstrap_status(base, &msg) };
    let Some(minor) = minor.filter(|&m| m >= MIN_ORT_MINOR) else {
        return Err(fail(format!(
            "onnxruntime-ep-wgpu needs ONNX Runtime >= 1.{MIN_ORT_MINOR}; this process runs {version}"
        )));
    };
    // SAFETY: GetApi returns NULL for versions the host lacks; we ask for one it has.
    let api = unsafe { (base.GetApi)(minor.min(MIN_ORT_MINOR)) };
    if api.is_null() {
        return Err(fail(format!("ONNX Runtime {version} did not provide API version {MIN_ORT_MINOR}")));
    }
    // SAFETY: api is a valid table of at least version 24, which has GetEpApi.
    let (api, ep) = unsafe { (&*api, ((*api).GetEpApi)()) };
    if ep.is_null() {
        return Err(fail("ONNX Runtime returned no plugin-EP API".into()));
    }
    // SAFETY: ep points to ORT's static OrtEpApi table (at least the API-23 prefix we declare).
    let ep = unsafe { &*(ep as *const OrtEpApi) };
    Ok(ORT.get_or_init(|| Ort { api, ep, version }))
}

/// A status built before the API is negotiated, through `GetApi(1)` (NULL if even that fails).
///
/// # Safety
/// `base` is NULL or the `OrtApiBase` ORT passed to `CreateEpFactories`.
pub unsafe fn bootstrap_status(base: *const OrtApiBase, msg: &str) -> OrtStatusPtr {
    if base.is_null() {
        return OrtStatusPtr(null_mut());
    }
    // SAFETY: GetApi(1) exists in every ORT and CreateStatus is its first-generation slot.
    let api1 = unsafe { ((*base).GetApi)(1) };
    let c = c_string(msg);
    // SAFETY: api1 is ORT's table (or NULL, checked); the message outlives the call.
    unsafe {
        if api1.is_null() {
            OrtStatusPtr(null_mut())
        } else {
            ((*api1).CreateStatus)(OrtErrorCode::ORT_FAIL, c.as_ptr())
        }
    }
}

/// An error on its way to ORT as an `OrtStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpError {
    pub code: OrtErrorCode,
    pub message: String,
}

impl EpError {
    pub fn new(code: OrtErrorCode, message: impl Into<String>) -> Self {
        EpError { code, message: message.into() }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        EpError::new(OrtErrorCode::ORT_INVALID_ARGUMENT, message)
    }

    pub fn fail(message: impl Into<String>) -> Self {
        EpError::new(OrtErrorCode::ORT_EP_FAIL, message)
    }

    /// Converts into an owned status for ORT (NULL if even that is impossible).
    pub fn into_status(self) -> OrtStatusPtr {
        let msg = c_string(&format!("[WgpuExecutionProvider] {}", self.message));
        match ORT.get() {
            // SAFETY: CreateStatus copies the message; ORT takes ownership of the status.
            Some(o) => unsafe { (o.api.CreateStatus)(self.code, msg.as_ptr()) },
            None => OrtStatusPtr(null_mut()),
        }
    }
}

impl std::fmt::Display for EpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<GpuError> for EpError {
    fn from(e: GpuError) -> Self {
        let (code, hint) = match e {
            GpuError::Invalid(_) | GpuError::Plan(_) => (OrtErrorCode::ORT_INVALID_ARGUMENT, ""),
            GpuError::DeviceLost(_) => {
                (OrtErrorCode::ORT_DEVICE_RESET, "; this session cannot run on it again, create a new session")
            }
            _ => (OrtErrorCode::ORT_EP_FAIL, ""),
        };
        EpError::new(code, format!("{e}{hint}"))
    }
}

impl From<PlanError> for EpError {
    fn from(e: PlanError) -> Self {
        EpError::invalid(e.to_string())
    }
}

/// Turns an ORT status into a `Result`, releasing the status.
pub fn check(status: OrtStatusPtr) -> Result<(), EpError> {
    if status.0.is_null() {
        return Ok(());
    }
    let o = ort()?;
    // SAFETY: a non-NULL status from ORT; we read its message and release it exactly once.
    let (code, message) = unsafe {
        let code = (o.api.GetErrorCode)(status.0);
        let message = cstr((o.api.GetErrorMessage)(status.0));
        (o.api.ReleaseStatus)(status.0);
        (code, message)
    };
    Err(EpError::new(code, message))
}

/// Releases a status we do not care about (e.g. "attribute absent" means "use the default").
pub fn ignore(status: OrtStatusPtr) {
    let _ = check(status);
}

/// Copies a C string (NULL → empty).
///
/// # Safety
/// `p` is NULL or a valid NUL-terminated string.
pub unsafe fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: guaranteed by the caller.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A C string for ORT; interior NULs (which ORT could not show) become spaces.
pub fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).unwrap_or_default()
}

fn panic_text(payload: &Box<dyn std::any::Any + Send>) -> String {
    ep_kernels::runtime::panic_message(payload)
}

/// Runs an entry point's body; a returned error or a panic becomes an `OrtStatus`.
pub fn guard(entry: &str, body: impl FnOnce() -> Result<(), EpError>) -> OrtStatusPtr {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => OrtStatusPtr(null_mut()),
        Ok(Err(e)) => e.into_status(),
        Err(payload) => EpError::fail(format!("internal error in {entry}: {}", panic_text(&payload))).into_status(),
    }
}

/// For slots that return a value rather than a status: a panic yields `fallback` and is logged
/// (at error level, on ORT's default logger), since the slot has no other way to report it.
pub fn guard_value<T>(entry: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        let message = format!("internal error in {entry}: {}", panic_text(&payload));
        // Logging must not unwind either: a panic in it is dropped.
        let _ =
            catch_unwind(AssertUnwindSafe(|| default_logger().log(OrtLoggingLevel::ORT_LOGGING_LEVEL_ERROR, &message)));
        fallback
    })
}

/// ORT's default logger, kept while at least one factory lives (ORT tears the environment and
/// its logger down only after releasing every factory).
static DEFAULT_LOGGER: AtomicPtr<OrtLogger> = AtomicPtr::new(null_mut());
static LIVE_FACTORIES: AtomicUsize = AtomicUsize::new(0);

/// Records the default logger when a factory is created.
pub fn factory_created(logger: Logger) {
    DEFAULT_LOGGER.store(logger.0 as *mut OrtLogger, Ordering::SeqCst);
    LIVE_FACTORIES.fetch_add(1, Ordering::SeqCst);
}

/// Forgets the default logger once the last factory is released.
pub fn factory_released() {
    let before = LIVE_FACTORIES.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if before == Ok(1) {
        DEFAULT_LOGGER.store(null_mut(), Ordering::SeqCst);
    }
}

/// The default logger of the live factories (a no-op logger when there is none).
pub fn default_logger() -> Logger {
    Logger(DEFAULT_LOGGER.load(Ordering::SeqCst))
}

/// An ORT logger handle. Made only through the unsafe [`Logger::new`], whose caller promises
/// the logger outlives the handle, so logging itself is safe.
#[derive(Clone, Copy)]
pub struct Logger(*const OrtLogger);

// SAFETY: ORT loggers are thread-safe; the handle is only used while the logger lives.
unsafe impl Send for Logger {}
// SAFETY: as above.
unsafe impl Sync for Logger {}

impl Logger {
    /// # Safety
    /// `logger` is NULL or stays valid as long as this handle (and its copies) is used.
    pub unsafe fn new(logger: *const OrtLogger) -> Logger {
        Logger(logger)
    }

    /// Writes `message` at `level` (no-op for a NULL logger).
    #[track_caller]
    pub fn log(&self, level: OrtLoggingLevel, message: &str) {
        let at = std::panic::Location::caller();
        let Some(o) = ORT.get() else { return };
        if self.0.is_null() {
            return;
        }
        let msg = c_string(&format!("[WgpuExecutionProvider] {message}"));
        let file = c_string(at.file());
        let func = c_string("onnxruntime_ep_wgpu");
        // SAFETY: the logger is live (Logger::new's contract); the strings outlive the call.
        let status = unsafe {
            (o.api.Logger_LogMessage)(
                self.0,
                level,
                msg.as_ptr(),
                file.as_ptr() as *const ort_sys::os_char,
                at.line() as i32,
                func.as_ptr(),
            )
        };
        ignore(status);
    }
}

/// The NULL-or-status pointer every `extern "system"` entry point returns.
pub type Status = OrtStatusPtr;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_parsing_is_strict() {
        assert_eq!(parse_ort_minor("1.24.4"), Some(24));
        assert_eq!(parse_ort_minor("1.31.1"), Some(31));
        assert_eq!(parse_ort_minor("2.0.0"), None);
        assert_eq!(parse_ort_minor("1.30"), None);
        assert_eq!(parse_ort_minor("garbage"), None);
    }

    #[test]
    fn gpu_errors_keep_their_message_and_get_a_code() {
        let oom =
            EpError::from(GpuError::OutOfMemory("A: 3000000000 bytes exceeds the device's max buffer size".into()));
        assert_eq!(oom.code, OrtErrorCode::ORT_EP_FAIL);
        assert!(oom.message.starts_with("out of GPU memory: A: 3000000000 bytes"), "{}", oom.message);
        let lost = EpError::from(GpuError::DeviceLost("Unknown: driver reset".into()));
        assert_eq!(lost.code, OrtErrorCode::ORT_DEVICE_RESET);
        assert!(lost.message.contains("driver reset") && lost.message.contains("create a new session"));
        let bug = EpError::from(GpuError::Internal("temp 3 used before set".into()));
        assert_eq!(bug.code, OrtErrorCode::ORT_EP_FAIL);
        assert!(bug.message.contains("internal error"), "{}", bug.message);
        let plan = EpError::from(GpuError::Plan(PlanError::BindingTooLarge { what: "A", needed: 2, limit: 1 }));
        assert_eq!(plan.code, OrtErrorCode::ORT_INVALID_ARGUMENT);
        assert!(plan.message.contains("storage binding"));
    }

    #[test]
    fn guard_turns_panics_into_errors() {
        // Without ORT initialised the status is NULL, but the panic must not escape.
        let _ = guard("test", || panic!("boom"));
        assert_eq!(guard_value("test", 7, || panic!("boom")), 7);
    }
}

//! Test-only fault injection, so the tests can prove that a panic or a lost device inside the EP
//! reaches the application as an error and the process lives on.
//!
//! `ONNXRUNTIME_EP_WGPU_TEST_FAULT` holds comma-separated `<fault>:<site>` directives, e.g.
//! `panic:compute` or `lose_device:compute`. The variable is read once per process; when it is
//! unset every check is one load of an empty list. Never set it outside tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// The environment variable holding the directives.
pub const ENV: &str = "ONNXRUNTIME_EP_WGPU_TEST_FAULT";

/// Where a fault fires: an entry point of the EP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    CreateEp,
    GetCapability,
    Compile,
    Compute,
    ReleaseEp,
    /// Our device allocator's `Alloc`, for allocations of at least [`ALLOC_FAULT_MIN_BYTES`].
    Alloc,
    /// Opening a session's device, on its worker thread (`opening.rs`).
    OpenDevice,
}

/// `oom:alloc` fails only allocations this large, so a test picks which one fails.
pub const ALLOC_FAULT_MIN_BYTES: usize = 1 << 20;

const SITES: &[(&str, Site)] = &[
    ("create_ep", Site::CreateEp),
    ("get_capability", Site::GetCapability),
    ("compile", Site::Compile),
    ("compute", Site::Compute),
    ("release_ep", Site::ReleaseEp),
    ("alloc", Site::Alloc),
    ("open_device", Site::OpenDevice),
];

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = SITES.iter().find(|(_, s)| s == self).map_or("?", |(n, _)| *n);
        f.write_str(name)
    }
}

/// What happens there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A Rust panic, every time the site is reached.
    Panic,
    /// The GPU device is destroyed (as a driver reset would), once per process, so the next
    /// session can show that a fresh device is opened.
    LoseDevice,
    /// An allocation fails (once) as a driver out-of-memory would.
    OutOfMemory,
}

#[derive(Debug)]
struct Directive {
    fault: Fault,
    site: Site,
    fired: AtomicBool,
}

/// The parsed directives, or the reason they could not be parsed.
fn directives() -> &'static Result<Vec<Directive>, String> {
    static PARSED: OnceLock<Result<Vec<Directive>, String>> = OnceLock::new();
    PARSED.get_or_init(|| std::env::var(ENV).map_or(Ok(Vec::new()), |spec| parse(&spec)))
}

fn parse(spec: &str) -> Result<Vec<Directive>, String> {
    spec.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            let (fault, site) = d.split_once(':').ok_or_else(|| format!("{ENV}: '{d}' is not <fault>:<site>"))?;
            let fault = match fault {
                "panic" => Fault::Panic,
                "lose_device" => Fault::LoseDevice,
                "oom" => Fault::OutOfMemory,
                _ => return Err(format!("{ENV}: unknown fault '{fault}' (panic, lose_device, oom)")),
            };
            let site = SITES.iter().find(|(name, _)| *name == site).map(|&(_, s)| s).ok_or_else(|| {
                let names: Vec<&str> = SITES.iter().map(|(n, _)| *n).collect();
                format!("{ENV}: unknown site '{site}' ({})", names.join(", "))
            })?;
            Ok(Directive { fault, site, fired: AtomicBool::new(false) })
        })
        .collect()
}

/// A typo in the variable fails session creation with the reason instead of testing nothing.
pub fn check_spec() -> Result<(), String> {
    directives().as_ref().map(|_| ()).map_err(Clone::clone)
}

/// True when `fault` is armed at `site` (a one-shot fault reports true only the first time).
pub fn fires(fault: Fault, site: Site) -> bool {
    let Ok(list) = directives() else { return false };
    list.iter()
        .any(|d| d.fault == fault && d.site == site && (fault == Fault::Panic || !d.fired.swap(true, Ordering::SeqCst)))
}

/// Panics when `panic:<site>` is armed.
pub fn panic_point(site: Site) {
    if fires(Fault::Panic, site) {
        panic!("test fault {ENV}=panic:{site}");
    }
}

/// `ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN=<ms>`: each device opening on a worker thread (a
/// session's, `opening.rs`, or registration's, `gpus.rs`) waits so long first, as a slow driver
/// would, so tests can see a session wait for it.
pub fn open_delay() -> Option<std::time::Duration> {
    static DELAY: OnceLock<Option<std::time::Duration>> = OnceLock::new();
    *DELAY.get_or_init(|| {
        let ms = std::env::var("ONNXRUNTIME_EP_WGPU_TEST_SLOW_OPEN").ok()?.trim().parse().ok()?;
        Some(std::time::Duration::from_millis(ms))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_parse() {
        let d = parse(" panic:compute, lose_device:compute ,").unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].fault, d[0].site), (Fault::Panic, Site::Compute));
        assert_eq!((d[1].fault, d[1].site), (Fault::LoseDevice, Site::Compute));
        assert!(parse("panic").unwrap_err().contains("<fault>:<site>"));
        assert!(parse("explode:compute").unwrap_err().contains("unknown fault"));
        assert!(parse("panic:everywhere").unwrap_err().contains("unknown site"));
        assert!(parse("").unwrap().is_empty());
    }
}

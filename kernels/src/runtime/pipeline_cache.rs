//! The persistent pipeline cache: the driver's compiled pipelines (wgpu's `PipelineCache`, Vulkan
//! only) kept in one file per adapter and driver under the user's cache directory, so a later
//! process skips the driver's compile.
//!
//! This module is the file logic only (plain Rust, unit-tested without a GPU): where the file
//! lives, its header, reading and atomic writing. A file is
//! `magic (8) | format (u32) | key length (u32) | key | data length (u64) | FNV-1a of data (u64) | data`,
//! little endian. The key names the crate version, the backend, the adapter (vendor and device
//! id, name) and the driver (name and version), so a driver update or another build never feeds a
//! foreign blob to the driver; the file name carries a hash of the key.
//!
//! A file that is truncated, corrupt or foreign is ignored with one warning and rewritten by the
//! next save; a directory we cannot write disables the cache with one info line; writes go to a
//! temporary file renamed over the old one, so concurrent processes never see a partial file
//! (the last writer wins); a blob over [`MAX_FILE_BYTES`] is not written, and at most
//! [`MAX_FILES`] cache files are kept (the oldest are removed).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::AdapterSummary;

const MAGIC: &[u8; 8] = b"EPWGPUPC";
const FORMAT: u32 = 1;
/// The largest blob written.
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Cache files kept in the directory (one per adapter and driver seen).
pub const MAX_FILES: usize = 8;
const PREFIX: &str = "pipelines-";
const SUFFIX: &str = ".bin";

/// Where messages about the cache go (the provider sends them to ORT's log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheLogLevel {
    Info,
    Warning,
}

/// A sink for the cache's messages.
pub type CacheLog = Arc<dyn Fn(CacheLogLevel, &str) + Send + Sync>;

/// The option `pipeline_cache`: where the persistent cache lives, or off. Off by default: on
/// llvmpipe it gains nothing over Mesa's own shader cache, and on NVIDIA GPUs it does not beat the
/// driver's warm cache either (three calls: our phases to the first result within ±12 ms of it,
/// first runs 2.8–5.1 ms both ways; `docs/PERFORMANCE.md`, *Start-up*). It wins only where our
/// file is warm and the driver's cache is not; turn the default to `On` only where
/// `bench/startup.py` (config `ours-default`) shows it beating the driver's cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PipelineCacheSetting {
    #[default]
    Off,
    /// `$XDG_CACHE_HOME/onnxruntime-ep-wgpu`, else `~/.cache/onnxruntime-ep-wgpu`.
    On,
    Dir(PathBuf),
}

impl std::str::FromStr for PipelineCacheSetting {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "" => Err("expected on, off or a directory".into()),
            "on" | "1" => Ok(PipelineCacheSetting::On),
            "off" | "0" => Ok(PipelineCacheSetting::Off),
            dir => Ok(PipelineCacheSetting::Dir(PathBuf::from(dir))),
        }
    }
}

impl PipelineCacheSetting {
    /// The directory this setting names (`None`: off, or no cache directory can be found).
    pub fn dir(&self) -> Option<PathBuf> {
        match self {
            PipelineCacheSetting::Off => None,
            PipelineCacheSetting::Dir(d) => Some(d.clone()),
            PipelineCacheSetting::On => default_dir(),
        }
    }
}

/// `$XDG_CACHE_HOME/onnxruntime-ep-wgpu`, else `$HOME/.cache/onnxruntime-ep-wgpu`.
pub fn default_dir() -> Option<PathBuf> {
    let non_empty = |v: &str| std::env::var_os(v).filter(|s| !s.is_empty()).map(PathBuf::from);
    let base = non_empty("XDG_CACHE_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".cache")))?;
    Some(base.join("onnxruntime-ep-wgpu"))
}

/// What identifies the driver a blob came from.
pub fn cache_key(adapter: &AdapterSummary) -> String {
    format!(
        "onnxruntime-ep-wgpu {}; {}; {:#06x}:{:#06x}; {}; {}; {}",
        env!("CARGO_PKG_VERSION"),
        adapter.backend,
        adapter.vendor_id,
        adapter.device_id,
        adapter.name,
        adapter.driver,
        adapter.driver_info
    )
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// The bytes of a cache file holding `data` for `key`.
pub fn encode(key: &str, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(32 + key.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a(data).to_le_bytes());
    out.extend_from_slice(data);
    out
}

/// The blob of a cache file, or why it cannot be used.
pub fn decode<'a>(key: &str, file: &'a [u8]) -> Result<&'a [u8], String> {
    let mut rest = file;
    let mut take = |n: usize, what: &str| -> Result<&'a [u8], String> {
        if rest.len() < n {
            return Err(format!("truncated ({what})"));
        }
        let (head, tail) = rest.split_at(n);
        rest = tail;
        Ok(head)
    };
    let u32_at = |b: &[u8]| u32::from_le_bytes(b.try_into().unwrap_or_default());
    let u64_at = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    if take(8, "magic")? != MAGIC {
        return Err("not a pipeline cache file".into());
    }
    let format = u32_at(take(4, "format")?);
    if format != FORMAT {
        return Err(format!("format {format}, expected {FORMAT}"));
    }
    let key_len = u32_at(take(4, "key length")?) as usize;
    let stored = take(key_len, "key")?;
    if stored != key.as_bytes() {
        return Err(format!("made for another adapter, driver or build ({})", String::from_utf8_lossy(stored)));
    }
    let len = u64_at(take(8, "data length")?);
    let sum = u64_at(take(8, "checksum")?);
    let data = take(usize::try_from(len).map_err(|_| "data length overflows".to_string())?, "data")?;
    if !rest.is_empty() {
        return Err(format!("{} bytes after the data", rest.len()));
    }
    if fnv1a(data) != sum {
        return Err("checksum mismatch".into());
    }
    Ok(data)
}

/// One adapter's cache file.
pub struct DiskCache {
    dir: PathBuf,
    path: PathBuf,
    key: String,
    log: CacheLog,
    /// Checksum of the blob last read or written (a save of the same blob is skipped).
    last: Mutex<Option<u64>>,
    /// Whether saving failed once (then it is not tried again).
    broken: std::sync::atomic::AtomicBool,
}

impl DiskCache {
    /// The cache of `adapter` in `dir`, created if missing; `None` (with one info line) when the
    /// directory cannot be created or written.
    pub fn open(dir: &Path, adapter: &AdapterSummary, log: CacheLog) -> Option<DiskCache> {
        let key = cache_key(adapter);
        let path = dir.join(format!(
            "{PREFIX}{:04x}-{:04x}-{:016x}{SUFFIX}",
            adapter.vendor_id,
            adapter.device_id,
            fnv1a(key.as_bytes())
        ));
        if let Err(e) = std::fs::create_dir_all(dir).and_then(|_| probe(dir)) {
            log(CacheLogLevel::Info, &format!("pipeline cache off: cannot write {} ({e})", dir.display()));
            return None;
        }
        Some(DiskCache { dir: dir.to_path_buf(), path, key, log, last: Mutex::new(None), broken: Default::default() })
    }

    /// The file this cache reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The stored blob, if the file exists and is ours; a bad file is reported once (warning)
    /// and left for the next save to replace.
    pub fn load(&self) -> Option<Vec<u8>> {
        let file = match std::fs::read(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                (self.log)(CacheLogLevel::Warning, &format!("pipeline cache {}: {e}; ignored", self.path.display()));
                return None;
            }
        };
        match decode(&self.key, &file) {
            Ok(data) => {
                *self.last.lock() = Some(fnv1a(data));
                Some(data.to_vec())
            }
            Err(why) => {
                let msg = format!("pipeline cache {}: {why}; ignored, it will be rewritten", self.path.display());
                (self.log)(CacheLogLevel::Warning, &msg);
                None
            }
        }
    }

    /// Writes `data` atomically (a temporary file renamed over the old one). Returns the blob's
    /// bytes written (0 when skipped: unchanged, too large, or saving failed before).
    pub fn store(&self, data: &[u8]) -> u64 {
        if data.is_empty() || self.broken.load(Ordering::Relaxed) {
            return 0;
        }
        let sum = fnv1a(data);
        let mut last = self.last.lock();
        if *last == Some(sum) {
            return 0;
        }
        if data.len() as u64 > MAX_FILE_BYTES {
            self.give_up(format!("{} bytes exceed the {MAX_FILE_BYTES}-byte bound; not saved", data.len()));
            return 0;
        }
        let bytes = encode(&self.key, data);
        match write_atomic(&self.path, &bytes) {
            Ok(()) => {
                *last = Some(sum);
                prune(&self.dir, &self.path);
                data.len() as u64
            }
            Err(e) => {
                self.give_up(format!("cannot write ({e}); saving stops"));
                0
            }
        }
    }

    fn give_up(&self, why: String) {
        self.broken.store(true, Ordering::Relaxed);
        (self.log)(CacheLogLevel::Info, &format!("pipeline cache {}: {why}", self.path.display()));
    }
}

fn temp_name(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.{}.{n}.tmp", std::process::id()))
}

/// Whether files can be created in `dir`.
fn probe(dir: &Path) -> std::io::Result<()> {
    let probe = temp_name(&dir.join("probe"));
    std::fs::File::create(&probe)?;
    std::fs::remove_file(&probe)
}

/// Writes `bytes` to a temporary file next to `path`, then renames it over `path`: readers see
/// the old file or the new one, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let temp = temp_name(path);
    // No fsync: the rename is what makes concurrent writers safe, and a file cut short by a
    // power loss fails its checksum and is rewritten.
    let written = std::fs::File::create(&temp).and_then(|mut f| f.write_all(bytes));
    let renamed = written.and_then(|_| std::fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

/// Keeps the [`MAX_FILES`] newest cache files (always `keep`), and removes temporary files left
/// by processes that died mid-write (older than an hour).
fn prune(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let modified = e.metadata().and_then(|m| m.modified()).ok();
        let age = modified.and_then(|m| m.elapsed().ok()).unwrap_or_default();
        if name.starts_with(&format!(".{PREFIX}")) && name.ends_with(".tmp") {
            if age > std::time::Duration::from_secs(3600) {
                let _ = std::fs::remove_file(e.path());
            }
        } else if name.starts_with(PREFIX) && name.ends_with(SUFFIX) && e.path() != keep {
            files.push((modified, e.path()));
        }
    }
    files.sort();
    let excess = (files.len() + 1).saturating_sub(MAX_FILES);
    for (_, path) in files.into_iter().take(excess) {
        let _ = std::fs::remove_file(path);
    }
}

#[cfg(test)]
#[path = "pipeline_cache_tests.rs"]
mod tests;

use super::*;
use crate::caps::DeviceKind;

fn adapter(driver_info: &str) -> AdapterSummary {
    AdapterSummary {
        index: 0,
        name: "Test GPU".into(),
        backend: "vulkan".into(),
        kind: DeviceKind::DiscreteGpu,
        vendor_id: 0x10de,
        device_id: 0x2335,
        driver: "NVIDIA".into(),
        driver_info: driver_info.into(),
    }
}

/// A fresh directory under the system's temp dir.
fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ep-wgpu-pc-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

type Lines = Arc<Mutex<Vec<(CacheLogLevel, String)>>>;

/// A log collecting its messages.
fn collecting() -> (CacheLog, Lines) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    (Arc::new(move |level, msg: &str| sink.lock().push((level, msg.to_string()))), lines)
}

#[test]
fn round_trip() {
    let key = cache_key(&adapter("580.1"));
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7) as u8).collect();
    assert_eq!(decode(&key, &encode(&key, &data)).unwrap(), &data[..]);
    assert_eq!(decode(&key, &encode(&key, &[])).unwrap(), &[] as &[u8]);
}

#[test]
fn every_truncation_and_every_flipped_byte_is_refused() {
    let key = cache_key(&adapter("580.1"));
    let file = encode(&key, b"some pipeline bytes");
    for n in 0..file.len() {
        assert!(decode(&key, &file[..n]).is_err(), "truncated to {n} bytes");
    }
    for i in 0..file.len() {
        let mut bad = file.clone();
        bad[i] ^= 0x5a;
        assert!(decode(&key, &bad).is_err(), "byte {i} flipped");
    }
    let mut longer = file.clone();
    longer.push(0);
    assert!(decode(&key, &longer).is_err());
}

#[test]
fn another_driver_or_build_is_foreign() {
    let ours = cache_key(&adapter("580.1"));
    let theirs = cache_key(&adapter("575.0"));
    assert_ne!(ours, theirs);
    assert!(ours.contains(env!("CARGO_PKG_VERSION")));
    let err = decode(&ours, &encode(&theirs, b"blob")).unwrap_err();
    assert!(err.contains("another adapter, driver or build"), "{err}");
}

#[test]
fn store_then_load_and_skip_unchanged() {
    let dir = temp_dir("store");
    let (log, lines) = collecting();
    let cache = DiskCache::open(&dir, &adapter("1"), log).unwrap();
    assert_eq!(cache.load(), None);
    assert!(cache.store(b"blob one") > 0);
    assert_eq!(cache.store(b"blob one"), 0, "unchanged data is not rewritten");
    let (log2, _) = collecting();
    let again = DiskCache::open(&dir, &adapter("1"), log2).unwrap();
    assert_eq!(again.load().as_deref(), Some(&b"blob one"[..]));
    assert_eq!(again.store(b"blob one"), 0, "what was loaded is not rewritten");
    assert!(lines.lock().is_empty());
    // Another driver gets another file; the first stays.
    let (log3, _) = collecting();
    let other = DiskCache::open(&dir, &adapter("2"), log3).unwrap();
    assert_ne!(other.path(), cache.path());
    assert_eq!(other.load(), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn corrupt_truncated_or_foreign_file_warns_once_and_is_rewritten() {
    let dir = temp_dir("corrupt");
    let (log, _) = collecting();
    let path = DiskCache::open(&dir, &adapter("1"), log).unwrap().path().to_path_buf();
    let good = encode(&cache_key(&adapter("1")), b"good blob");
    let foreign = encode(&cache_key(&adapter("0.9")), b"old driver");
    for bad in [b"garbage".to_vec(), good[..good.len() - 3].to_vec(), foreign] {
        std::fs::write(&path, &bad).unwrap();
        let (log, lines) = collecting();
        let cache = DiskCache::open(&dir, &adapter("1"), log).unwrap();
        assert_eq!(cache.load(), None);
        let lines = lines.lock().clone();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].0, CacheLogLevel::Warning);
        assert!(cache.store(b"fresh") > 0);
        assert_eq!(decode(&cache_key(&adapter("1")), &std::fs::read(&path).unwrap()).unwrap(), b"fresh");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn unwritable_directory_disables_with_one_info_line() {
    // A directory below a regular file can never be created (even by root).
    let dir = temp_dir("unwritable");
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let (log, lines) = collecting();
    assert!(DiskCache::open(&file.join("cache"), &adapter("1"), log).is_none());
    let lines = lines.lock().clone();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].0, CacheLogLevel::Info);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(unix)]
#[test]
fn read_only_directory_disables_unless_root() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("readonly");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    let writable_anyway = std::fs::File::create(dir.join("x")).is_ok();
    let (log, lines) = collecting();
    let cache = DiskCache::open(&dir, &adapter("1"), log);
    if writable_anyway {
        // Root ignores permission bits: the probe succeeds, as the cache would.
        eprintln!("running as root: the read-only case is covered by unwritable_directory_disables…");
        assert!(cache.is_some());
    } else {
        assert!(cache.is_none());
        assert_eq!(lines.lock().len(), 1);
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn concurrent_writers_leave_one_whole_file() {
    let dir = temp_dir("concurrent");
    let blobs: Vec<Vec<u8>> = (0..8u8).map(|t| vec![t; 50_000 + t as usize * 1000]).collect();
    std::thread::scope(|s| {
        for blob in &blobs {
            let dir = dir.clone();
            s.spawn(move || {
                for round in 0..20u8 {
                    let (log, _) = collecting();
                    let cache = DiskCache::open(&dir, &adapter("1"), log).unwrap();
                    let _ = cache.load();
                    let mut b = blob.clone();
                    b[0] = round;
                    cache.store(&b);
                }
            });
        }
    });
    let (log, lines) = collecting();
    let data = DiskCache::open(&dir, &adapter("1"), log).unwrap().load().unwrap();
    assert!(lines.lock().is_empty());
    assert!(blobs.iter().any(|b| b[1..] == data[1..]), "the file holds one writer's whole blob");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left.len(), 1, "no temporary files left: {left:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn at_most_max_files_are_kept() {
    let dir = temp_dir("prune");
    for i in 0..MAX_FILES + 4 {
        std::fs::write(dir.join(format!("{PREFIX}old-{i}{SUFFIX}")), b"x").unwrap();
    }
    std::fs::write(dir.join("unrelated.txt"), b"x").unwrap();
    let (log, _) = collecting();
    let cache = DiskCache::open(&dir, &adapter("1"), log).unwrap();
    assert!(cache.store(b"blob") > 0);
    let names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(names.iter().filter(|n| n.starts_with(PREFIX)).count(), MAX_FILES);
    assert!(cache.path().exists());
    assert!(names.contains(&"unrelated.txt".to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn setting_parses() {
    assert_eq!("off".parse::<PipelineCacheSetting>().unwrap(), PipelineCacheSetting::Off);
    assert_eq!("on".parse::<PipelineCacheSetting>().unwrap(), PipelineCacheSetting::On);
    assert_eq!(PipelineCacheSetting::default(), PipelineCacheSetting::Off);
    assert_eq!("/tmp/x".parse::<PipelineCacheSetting>().unwrap(), PipelineCacheSetting::Dir("/tmp/x".into()));
    assert!("".parse::<PipelineCacheSetting>().is_err());
    assert_eq!(PipelineCacheSetting::Off.dir(), None);
}

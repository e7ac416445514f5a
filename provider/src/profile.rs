//! `ONNXRUNTIME_EP_WGPU_PROFILE=<file>`: after each Compute, time every step of the partition
//! with timestamp queries and append one JSON line per step to the file (for `bench/run.py`:
//! dispatches per run and the share of GPU time in products). Off unless the variable is set.

use std::io::Write;

use ep_kernels::graph::{Executable, ProfileGroups, RunInput};

pub const ENV: &str = "ONNXRUNTIME_EP_WGPU_PROFILE";
/// Set to 1 to time every dispatch on its own (one line each, `ops` naming the step and the
/// dispatch's program) rather than every step; to `run` to time the whole run in one pass (one
/// line, `ops` = `(run)`: the steps' time plus the barriers and idle between them); to `prefix`
/// to time the run's first k dispatches for every k (one line each, `ops` prefixed `(prefix)`).
pub const DISPATCHES_ENV: &str = "ONNXRUNTIME_EP_WGPU_PROFILE_DISPATCHES";

/// How often each step is repeated when timed.
const REPEAT: u32 = 5;

/// The profile file, when profiling is on.
pub fn target() -> Option<String> {
    std::env::var(ENV).ok().filter(|p| !p.is_empty())
}

/// Times the partition's steps and appends them to `path`; failures are returned as text for
/// the log (profiling never fails a run).
pub fn record(path: &str, partition: &str, exec: &Executable, inputs: &[RunInput<'_>]) -> Result<(), String> {
    let grouping = match std::env::var(DISPATCHES_ENV).as_deref() {
        Ok("1") => ProfileGroups::Dispatches,
        Ok("run") => ProfileGroups::Run,
        Ok("prefix") => ProfileGroups::Prefixes,
        _ => ProfileGroups::Steps,
    };
    let Some(steps) = exec.profile(inputs, REPEAT, grouping).map_err(|e| e.to_string())? else {
        return Err("the device has no timestamp queries".into());
    };
    let mut text = String::new();
    for s in steps {
        text.push_str(&format!(
            "{{\"partition\":{},\"ops\":{},\"dispatches\":{},\"workgroups\":{},\"gpu_ms\":{:.6}}}\n",
            json_string(partition),
            json_string(&s.ops),
            s.dispatches,
            s.workgroups,
            s.seconds * 1e3
        ));
    }
    let mut file =
        std::fs::OpenOptions::new().create(true).append(true).open(path).map_err(|e| format!("{path}: {e}"))?;
    file.write_all(text.as_bytes()).map_err(|e| format!("{path}: {e}"))
}

fn json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(super::json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}

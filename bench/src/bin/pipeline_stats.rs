//! What the Vulkan driver makes of every golden kernel: compile time, registers, spills and
//! whatever else it reports through `VK_KHR_pipeline_executable_properties`.
//!
//! Each WGSL file is translated by naga with the options wgpu 30 uses on Vulkan, in two modes:
//! `checked` (wgpu's default runtime checks: clamped indices, bounded loops, checked integer
//! division) and `unchecked` (what `create_shader_module_trusted` gives the self-guarding
//! kernels), or with one check alone (`bounded`, `clamped`, `divchecked`), or `rolled` (unchecked,
//! with `DontUnroll` on the loops that carry tensor-core products), or `rolledall` (on every loop), then compiled with the statistics capture flags on a device of its own.
//!
//! Usage: `pipeline_stats [--dir goldens] [--only a,b] [--modes checked,unchecked]
//! [--no-robust] [--threads N] [--json FILE] [--ir DIR] [--blob DIR]` (`--blob`: each pipeline's
//! own pipeline-cache data, the driver's binary in its container, for `bench/sass_probe.py`).
//! Disable the driver's disk cache (`__GL_SHADER_DISK_CACHE=0` on NVIDIA) for cold compile times.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use naga::back::spv;
use onnxruntime_ep_wgpu::vkstats::{Binding, Compiled, StatsDevice};
use serde_json::{json, Value};

struct Args {
    dir: PathBuf,
    only: Vec<String>,
    modes: Vec<String>,
    robust: bool,
    threads: usize,
    json: Option<PathBuf>,
    ir: Option<PathBuf>,
    blob: Option<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        dir: PathBuf::from("goldens"),
        only: Vec::new(),
        modes: vec!["checked".into(), "unchecked".into()],
        robust: true,
        threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(4),
        json: None,
        ir: None,
        blob: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => a.dir = value()?.into(),
            "--only" => a.only = value()?.split(',').map(str::to_string).collect(),
            "--modes" => a.modes = value()?.split(',').map(str::to_string).collect(),
            "--no-robust" => a.robust = false,
            "--threads" => a.threads = value()?.parse().map_err(|e| format!("--threads: {e}"))?,
            "--json" => a.json = Some(value()?.into()),
            "--ir" => a.ir = Some(value()?.into()),
            "--blob" => a.blob = Some(value()?.into()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

/// The SPIR-V wgpu-hal 30 would hand the driver for this module, and its bindings. `mode` is
/// `checked` (all of wgpu's runtime checks), `unchecked` (none), or one check alone: `bounded`
/// (loop bounding), `clamped` (clamped indices), `divchecked` (checked integer division); `rolled`
/// is unchecked with `DontUnroll` on the loops that carry tensor-core products (`spv_loops`).
fn translate(source: &str, mode: &str) -> Result<(Vec<u32>, Vec<Binding>), String> {
    let checked = mode == "checked";
    let mut module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    // As the runtime hands it to wgpu: subgroup barriers also order workgroup memory.
    ep_kernels::runtime::subgroup_sync::widen_module(&mut module);
    let info = naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    let policy = |p| naga::proc::BoundsCheckPolicies {
        index: p,
        // wgpu leaves buffer accesses to the driver's robustBufferAccess2 where it has it.
        buffer: naga::proc::BoundsCheckPolicy::Unchecked,
        image_load: naga::proc::BoundsCheckPolicy::Unchecked,
        binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
    };
    let options = spv::Options {
        lang_version: (1, 6),
        flags: spv::WriterFlags::LABEL_VARYINGS | spv::WriterFlags::FORCE_POINT_SIZE,
        capabilities: None,
        bounds_check_policies: if checked || mode == "clamped" {
            policy(naga::proc::BoundsCheckPolicy::Restrict)
        } else {
            policy(naga::proc::BoundsCheckPolicy::Unchecked)
        },
        zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::Native,
        force_loop_bounding: checked || mode == "bounded",
        emit_int_div_checks: checked || mode == "divchecked",
        ..spv::Options::default()
    };
    let stage = spv::PipelineOptions { entry_point: "main".into(), shader_stage: naga::ShaderStage::Compute };
    let mut words = spv::write_vec(&module, &info, &options, Some(&stage)).map_err(|e| e.to_string())?;
    if mode == "rolled" {
        // Unchecked, with DontUnroll on the loops that carry the tensor-core products.
        let marked = ep_kernels::runtime::spv_loops::keep_product_loops_rolled(&mut words)?;
        eprintln!("rolled: {marked} loop(s) marked");
    }
    if mode == "rolledall" {
        // Unchecked, with DontUnroll on every loop (a probe; the runtime never does this).
        let marked = ep_kernels::runtime::spv_loops::keep_all_loops_rolled(&mut words)?;
        eprintln!("rolledall: {marked} loop(s) marked");
    }
    let bindings = module
        .global_variables
        .iter()
        .filter_map(|(_, g)| {
            let b = g.binding.as_ref()?;
            let uniform = matches!(g.space, naga::AddressSpace::Uniform);
            Some(Binding { group: b.group, binding: b.binding, uniform })
        })
        .collect();
    Ok((words, bindings))
}

fn files(args: &Args) -> Result<Vec<PathBuf>, String> {
    let dir = std::fs::read_dir(&args.dir).map_err(|e| format!("{}: {e}", args.dir.display()))?;
    let mut list: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wgsl"))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            args.only.is_empty() || args.only.iter().any(|o| name.contains(o.as_str()))
        })
        .collect();
    list.sort();
    Ok(list)
}

fn record(name: &str, mode: &str, spirv_words: usize, result: &Result<Compiled, String>) -> Value {
    match result {
        Ok(c) => {
            let stats: BTreeMap<&str, &str> = c.stats.iter().map(|s| (s.name.as_str(), s.value.as_str())).collect();
            let reps: Vec<Value> = c
                .representations
                .iter()
                .map(|r| json!({"name": r.name, "bytes": r.bytes, "text": r.text.is_some()}))
                .collect();
            json!({"shader": name, "mode": mode, "spirv_bytes": spirv_words * 4, "compile_ms": c.compile_ms,
                   "stats": stats, "representations": reps})
        }
        Err(e) => json!({"shader": name, "mode": mode, "error": e}),
    }
}

fn write_ir(dir: &Path, name: &str, mode: &str, c: &Compiled) {
    for (i, r) in c.representations.iter().enumerate() {
        if let Some(t) = &r.text {
            let file = dir.join(format!("{name}.{mode}.{i}.{}.txt", r.name.replace([' ', '/'], "_")));
            if let Err(e) = std::fs::write(&file, t) {
                eprintln!("{}: {e}", file.display());
            }
        }
    }
}

fn run_one(dev: &StatsDevice, args: &Args, path: &Path) -> Vec<Value> {
    let name = path.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let source = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => return vec![json!({"shader": name, "error": e.to_string()})],
    };
    let mut out = Vec::new();
    for mode in &args.modes {
        let (words, bindings) = match translate(&source, mode) {
            Ok(t) => t,
            Err(e) => {
                out.push(json!({"shader": name, "mode": mode, "error": format!("naga: {e}")}));
                continue;
            }
        };
        let result = dev.compile(&words, &bindings);
        if let (Some(dir), Ok(c)) = (&args.ir, &result) {
            write_ir(dir, &name, mode, c);
        }
        if let (Some(dir), Ok(Compiled { cache_data: Some(data), .. })) = (&args.blob, &result) {
            let file = dir.join(format!("{name}.{mode}.cache.bin"));
            if let Err(e) = std::fs::write(&file, data) {
                eprintln!("{}: {e}", file.display());
            }
        }
        out.push(record(&name, mode, words.len(), &result));
    }
    out
}

fn stat<'a>(r: &'a Value, key: &str) -> &'a str {
    r["stats"][key].as_str().unwrap_or("-")
}

fn summary(records: &[Value]) {
    let mut ok: Vec<&Value> = records.iter().filter(|r| r.get("compile_ms").is_some()).collect();
    let keys: Vec<String> =
        ok.first().and_then(|r| r["stats"].as_object()).map(|m| m.keys().cloned().collect()).unwrap_or_default();
    println!("statistics the driver reports: {}", keys.join(", "));
    for mode in ["checked", "unchecked", "bounded", "clamped", "divchecked", "rolled", "rolledall"] {
        if !ok.iter().any(|r| r["mode"] == mode) {
            continue;
        }
        let total: f64 = ok.iter().filter(|r| r["mode"] == mode).filter_map(|r| r["compile_ms"].as_f64()).sum();
        println!(
            "{mode}: total compile {total:.0} ms over {} pipelines",
            ok.iter().filter(|r| r["mode"] == mode).count()
        );
    }
    ok.sort_by(|a, b| {
        b["compile_ms"].as_f64().partial_cmp(&a["compile_ms"].as_f64()).unwrap_or(std::cmp::Ordering::Equal)
    });
    println!("\nslowest 40 compiles:\n| shader | mode | compile ms | SPIR-V KB | {} |", keys.join(" | "));
    for r in ok.iter().take(40) {
        let vals: Vec<&str> = keys.iter().map(|k| stat(r, k)).collect();
        println!(
            "| {} | {} | {:.1} | {:.1} | {} |",
            r["shader"].as_str().unwrap_or(""),
            r["mode"].as_str().unwrap_or(""),
            r["compile_ms"].as_f64().unwrap_or(0.0),
            r["spirv_bytes"].as_f64().unwrap_or(0.0) / 1024.0,
            vals.join(" | ")
        );
    }
    for r in records.iter().filter(|r| r.get("error").is_some()) {
        println!("error: {} {}: {}", r["shader"], r["mode"], r["error"]);
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("pipeline_stats: {e}");
            std::process::exit(2);
        }
    };
    let run = || -> Result<Vec<Value>, String> {
        let mut dev = StatsDevice::open(args.robust)?;
        dev.keep_cache = args.blob.is_some();
        println!("adapter: {} (robust buffer access {})", dev.adapter, if args.robust { "on" } else { "off" });
        for dir in [&args.ir, &args.blob].into_iter().flatten() {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let list = files(&args)?;
        let next = AtomicUsize::new(0);
        let records = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..args.threads.max(1) {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = list.get(i) else { break };
                    let out = run_one(&dev, &args, path);
                    records.lock().map(|mut r| r.extend(out)).ok();
                });
            }
        });
        records.into_inner().map_err(|e| e.to_string())
    };
    match run() {
        Ok(records) => {
            summary(&records);
            if let Some(path) = &args.json {
                let text = serde_json::to_string_pretty(&records).unwrap_or_default();
                if let Err(e) = std::fs::write(path, text) {
                    eprintln!("{}: {e}", path.display());
                }
            }
        }
        Err(e) => {
            eprintln!("pipeline_stats: {e}");
            std::process::exit(1);
        }
    }
}

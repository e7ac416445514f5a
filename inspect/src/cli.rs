//! `inspect MODEL.onnx [--profile NAME|FILE.json] [--shape NAME=dims]... [--option key=value]...
//! [--json]`.

use std::path::{Path, PathBuf};

use ep_kernels::caps::profiles;
use ep_kernels::options::EpOptions;
use ep_kernels::runtime::{adapter_caps, AdapterSelector};
use ep_kernels::DeviceCaps;

use crate::reader::read_model;
use crate::render::{json, text, Header};
use crate::report::inspect;
use crate::shapes::{apply, ShapeArg};

pub const USAGE: &str = "usage: inspect MODEL.onnx [--profile h200|llvmpipe|mobile|no_subgroups|FILE.json] \
[--shape NAME=d1,d2,...]... [--option key=value]... [--json]
       inspect --capture-profile FILE.json [--adapter INDEX|NAME]

Shows what the wgpu execution provider would do with MODEL on a recorded device, without a GPU:
which nodes it claims in which partitions, why it declines the others, and each partition's
kernels (variant, tiling, workgroup grid), FLOPs and bytes. Options are the EP's session options
(the keys of add_provider_for_devices). --capture-profile records this machine's adapter (the
one the EP picks by default, or --adapter) as a profile to pass later as --profile FILE.json.";

/// The parsed command line.
#[derive(Clone, Debug, Default)]
pub struct Args {
    pub model: PathBuf,
    pub profile: String,
    pub shapes: Vec<ShapeArg>,
    pub options: Vec<(String, String)>,
    pub json: bool,
    /// `--capture-profile FILE`: record the adapter's caps instead of inspecting a model.
    pub capture: Option<PathBuf>,
    pub adapter: Option<String>,
}

/// A usage error (exit 2) or a failure to read the model or profile (exit 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CliError {
    Usage(String),
    Failed(String),
}

impl Args {
    pub fn parse(argv: &[String]) -> Result<Args, CliError> {
        let mut args = Args { profile: "h200".into(), ..Args::default() };
        let mut model = None;
        let mut it = argv.iter();
        while let Some(a) = it.next() {
            let mut value =
                |flag: &str| it.next().cloned().ok_or_else(|| CliError::Usage(format!("{flag} needs a value")));
            match a.as_str() {
                "--profile" => args.profile = value(a)?,
                "--shape" => args.shapes.push(value(a)?.parse().map_err(CliError::Usage)?),
                "--option" => {
                    let v = value(a)?;
                    let (k, val) =
                        v.split_once('=').ok_or_else(|| CliError::Usage(format!("--option '{v}' is not key=value")))?;
                    args.options.push((k.trim().to_string(), val.trim().to_string()));
                }
                "--json" => args.json = true,
                "--capture-profile" => args.capture = Some(PathBuf::from(value(a)?)),
                "--adapter" => args.adapter = Some(value(a)?),
                "-h" | "--help" => return Err(CliError::Usage(String::new())),
                s if s.starts_with('-') => return Err(CliError::Usage(format!("unknown flag '{s}'"))),
                s if model.is_none() => model = Some(PathBuf::from(s)),
                s => return Err(CliError::Usage(format!("a second model '{s}'"))),
            }
        }
        if args.capture.is_some() {
            return Ok(args);
        }
        args.model = model.ok_or_else(|| CliError::Usage("no model given".into()))?;
        Ok(args)
    }
}

/// A recorded profile by name, or a JSON file written by `kernel_bench --caps`.
pub fn load_profile(name: &str) -> Result<(String, DeviceCaps), String> {
    if let Some(caps) = profiles::get(name) {
        return Ok((name.to_string(), caps));
    }
    let path = Path::new(name);
    if !path.exists() {
        let known: Vec<&str> = profiles::all().into_iter().map(|(n, _)| n).collect();
        return Err(format!("profile '{name}' is neither a recorded one ({}) nor a file", known.join(", ")));
    }
    let json = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let caps = serde_json::from_str(&json).map_err(|e| format!("profile {name}: {e}"))?;
    let stem = path.file_stem().map_or(name.into(), |s| s.to_string_lossy().into_owned());
    Ok((stem, caps))
}

/// Writes the caps of this machine's adapter to `path`.
fn capture(path: &Path, adapter: Option<&str>) -> Result<String, CliError> {
    let selector = match adapter {
        None => AdapterSelector::Auto,
        Some(s) => s.parse().map_err(|e| CliError::Usage(format!("--adapter: {e}")))?,
    };
    let (summary, caps) = adapter_caps(&selector).map_err(|e| CliError::Failed(e.to_string()))?;
    let json = serde_json::to_string_pretty(&caps).map_err(|e| CliError::Failed(e.to_string()))?;
    std::fs::write(path, json + "\n").map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    Ok(format!("profile of {} ({}) written to {}\n", summary.name, summary.driver, path.display()))
}

/// The report for these arguments, as it would be printed.
pub fn run(args: &Args) -> Result<String, CliError> {
    if let Some(path) = &args.capture {
        return capture(path, args.adapter.as_deref());
    }
    let options =
        EpOptions::from_pairs(args.options.iter().map(|(k, v)| (k.as_str(), v.as_str()))).map_err(CliError::Usage)?;
    let (profile, caps) = load_profile(&args.profile).map_err(CliError::Failed)?;
    let mut model = read_model(&args.model).map_err(CliError::Failed)?;
    apply(&mut model, &args.shapes).map_err(CliError::Usage)?;
    let report = inspect(&model, &options, &caps);
    let mut given = args.options.clone();
    given.sort();
    let header = Header {
        model: args.model.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned()),
        opset: model.opsets.get("").copied().unwrap_or(0),
        device: format!("{} ({:?})", caps.name, caps.kind),
        profile,
        options: given,
    };
    Ok(if args.json {
        let value = json(&header, &report);
        serde_json::to_string_pretty(&value).map_err(|e| CliError::Failed(e.to_string()))? + "\n"
    } else {
        text(&header, &report)
    })
}

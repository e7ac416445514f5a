//! Command line of `kernel_bench`.

use ep_kernels::gemm::TilingChoice;
use ep_kernels::DType;

pub const USAGE: &str = "\
kernel_bench [--caps FILE] [--shapes MxNxK[bB][:tt],...] [--dtypes f32,f16] [--paths coop,simt,auto,split,fused]
             [--tiling auto|128x128|64x64|splitk|gemv] [--iters N] [--sweep coop|simt] [--only A,B] [--json FILE]
             [--unchecked] [--conv] [--parallelism N,...]

  --caps FILE   write the adapter's DeviceCaps as JSON (then run the cases, if any)
  --shapes      GEMMs: M×N×K, optional batch (b6) and transposes (:tn = A transposed, B not);
                without --shapes and --caps: the target shapes (4096³, 8192³, the MLP and Whisper GEMMs)
  --paths       coop: cooperative matrices (fp32 runs f32_via_f16); simt: plain FMA kernels;
                auto: whatever the planner picks; split / fused: f32 as three f16 products of split
                operands, K three times (serial) or once with both parts staged (fused)
  --sweep       instead of the planner's shapes, every candidate shape of the coop or SIMT kernels
  --only        with --sweep: only the candidates whose label contains one of these (comma-separated)
  --iters       timed passes per case (median reported); each pass repeats the dispatches
                until it exceeds ~5 ms
  --unchecked   compile the GEMM kernels without wgpu's injected runtime checks (as the EP does)
  --parallelism plan as if the device's parallelism were each of these (one case each; a forced split-K
                count follows it: ceil(parallelism / 64×64 tiles))
  --conv        time the conv plans (Whisper, ResNet, depthwise) against GEMMs of the same M·N·K, and the
                implicit GEMM forced for group == 1 (--json FILE writes the records)";

/// The target shapes of `docs/PERFORMANCE.md` ("GEMM kernels on the H200"), run when no
/// shapes are given.
pub const DEFAULT_SHAPES: &str =
    "4096x4096x4096,8192x8192x8192,2048x4096x4096,128x4096x4096,1500x384x384,1500x1536x384,1500x384x1536,1500x1500x64b6";

/// Which kernels a case runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    Coop,
    Simt,
    Auto,
    Split,
    Fused,
}

impl Path {
    pub fn name(self) -> &'static str {
        match self {
            Path::Coop => "coop",
            Path::Simt => "simt",
            Path::Auto => "auto",
            Path::Split => "split",
            Path::Fused => "fused",
        }
    }
}

/// One GEMM shape of the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub m: u32,
    pub n: u32,
    pub k: u32,
    pub batch: u32,
    pub trans_a: bool,
    pub trans_b: bool,
}

impl Shape {
    pub fn label(&self) -> String {
        let mut s = format!("{}x{}x{}", self.m, self.n, self.k);
        if self.batch > 1 {
            s.push_str(&format!("b{}", self.batch));
        }
        if self.trans_a || self.trans_b {
            s.push_str(&format!(":{}{}", if self.trans_a { 't' } else { 'n' }, if self.trans_b { 't' } else { 'n' }));
        }
        s
    }
}

#[derive(Clone, Debug)]
pub struct Args {
    pub caps: Option<String>,
    pub shapes: Vec<Shape>,
    pub dtypes: Vec<DType>,
    pub paths: Vec<Path>,
    pub tiling: TilingChoice,
    pub iters: usize,
    pub sweep: Option<Path>,
    /// Sweep candidates kept (label substrings); empty keeps all.
    pub only: Vec<String>,
    pub json: Option<String>,
    /// Compile the kernels without wgpu's runtime checks.
    pub unchecked: bool,
    /// Time conv plans against GEMMs of the same M·N·K instead of GEMM shapes.
    pub conv: bool,
    /// Plan as if the device's `parallelism` were each of these (one case per value; the
    /// forced split-K count follows it); empty: the device's.
    pub parallelism: Vec<u32>,
}

fn parse_shape(s: &str) -> Result<Shape, String> {
    let (dims, trans) = s.split_once(':').unwrap_or((s, "nn"));
    let (dims, batch) = match dims.split_once('b') {
        Some((d, b)) => (d, b.parse::<u32>().map_err(|e| format!("batch of '{s}': {e}"))?),
        None => (dims, 1),
    };
    let v: Vec<u32> =
        dims.split('x').map(|d| d.parse::<u32>()).collect::<Result<_, _>>().map_err(|e| format!("'{s}': {e}"))?;
    let [m, n, k] = v[..] else {
        return Err(format!("'{s}' is not MxNxK"));
    };
    let t = trans.as_bytes();
    if t.len() != 2 || !t.iter().all(|c| *c == b'n' || *c == b't') {
        return Err(format!("transposes of '{s}' must be two of n/t"));
    }
    Ok(Shape { m, n, k, batch: batch.max(1), trans_a: t[0] == b't', trans_b: t[1] == b't' })
}

fn list<T>(v: &str, f: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    v.split(',').filter(|s| !s.is_empty()).map(f).collect()
}

fn path(s: &str) -> Result<Path, String> {
    match s {
        "coop" => Ok(Path::Coop),
        "simt" => Ok(Path::Simt),
        "auto" => Ok(Path::Auto),
        "split" => Ok(Path::Split),
        "fused" => Ok(Path::Fused),
        _ => Err(format!("unknown path '{s}' (coop, simt, auto, split, fused)")),
    }
}

impl Args {
    pub fn parse(argv: impl IntoIterator<Item = String>) -> Result<Args, String> {
        let mut args = Args {
            caps: None,
            shapes: Vec::new(),
            dtypes: vec![DType::F32, DType::F16],
            paths: vec![Path::Coop, Path::Simt],
            tiling: TilingChoice::Auto,
            iters: 10,
            sweep: None,
            only: Vec::new(),
            json: None,
            unchecked: false,
            conv: false,
            parallelism: Vec::new(),
        };
        let mut it = argv.into_iter();
        while let Some(flag) = it.next() {
            let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
            match flag.as_str() {
                "--caps" => args.caps = Some(value()?),
                "--shapes" => args.shapes = list(&value()?, parse_shape)?,
                "--dtypes" => {
                    args.dtypes = list(&value()?, |s| match s {
                        "f32" => Ok(DType::F32),
                        "f16" => Ok(DType::F16),
                        _ => Err(format!("unknown dtype '{s}'")),
                    })?
                }
                "--paths" => args.paths = list(&value()?, path)?,
                "--tiling" => args.tiling = value()?.parse()?,
                "--iters" => args.iters = value()?.parse::<usize>().map_err(|e| format!("--iters: {e}"))?.max(1),
                "--sweep" => args.sweep = Some(path(&value()?)?),
                "--only" => args.only = list(&value()?, |s| Ok(s.to_string()))?,
                "--json" => args.json = Some(value()?),
                "--unchecked" => args.unchecked = true,
                "--conv" => args.conv = true,
                "--parallelism" => {
                    args.parallelism = list(&value()?, |s| s.parse::<u32>().map_err(|e| format!("--parallelism: {e}")))?
                }
                "-h" | "--help" => return Err(USAGE.to_string()),
                other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
            }
        }
        if args.shapes.is_empty() && args.caps.is_none() {
            args.shapes = list(DEFAULT_SHAPES, parse_shape)?;
        }
        Ok(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_parse() {
        let s = parse_shape("1500x1500x64b6:nt").unwrap();
        assert_eq!((s.m, s.n, s.k, s.batch, s.trans_a, s.trans_b), (1500, 1500, 64, 6, false, true));
        assert_eq!(s.label(), "1500x1500x64b6:nt");
        assert!(parse_shape("12x3").is_err());
        assert!(parse_shape("1x2x3:xx").is_err());
    }
}

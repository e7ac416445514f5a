//! `inspect`: what the wgpu execution provider would do with an ONNX model, without a GPU.

use std::process::ExitCode;

use ep_inspect::cli::{run, Args, CliError, USAGE};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let result = std::panic::catch_unwind(|| Args::parse(&argv).and_then(|a| run(&a)));
    match result {
        Ok(Ok(out)) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Ok(Err(CliError::Usage(msg))) => {
            if !msg.is_empty() {
                eprintln!("inspect: {msg}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Ok(Err(CliError::Failed(msg))) => {
            eprintln!("inspect: {msg}");
            ExitCode::from(1)
        }
        Err(_) => {
            eprintln!("inspect: internal error (a bug in the inspector or the EP's planning code)");
            ExitCode::from(3)
        }
    }
}

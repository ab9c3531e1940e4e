//! `bench-contender`: one benchmark contender in a process of its own, driven by the
//! orchestrator through stdin/stdout (see `informer_benchmarks::protocol`).

use std::process::ExitCode;

use clap::Parser;
use informer_benchmarks::contender::{ContenderKind, serve};

/// One benchmark contender, serving the orchestrator's commands (JSON lines on stdin).
#[derive(Debug, Parser)]
#[command(name = "bench-contender")]
struct Args {
    /// informer, informer-drop-managed-fields, kube-runtime, kube-runtime-streaming or floor.
    #[arg(long)]
    contender: ContenderKind,
    /// The API server.
    #[arg(long)]
    url: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match serve(args.contender, &args.url) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-contender {}: {message}", args.contender);
            ExitCode::FAILURE
        }
    }
}

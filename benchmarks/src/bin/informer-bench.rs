//! `informer-bench`: runs the side-by-side benchmark and writes BENCHMARKS.md. Normally
//! started by `cargo xtask bench [--quick]`, which builds it, `bench-contender` and
//! `fake-apiserver` in release first.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use informer_benchmarks::HarnessError;
use informer_benchmarks::contender::ContenderKind;
use informer_benchmarks::machine::{Machine, utc_now};
use informer_benchmarks::report::{ReportContext, render, targets};
use informer_benchmarks::suite::{self, ServerSource, SuiteConfig, SuiteResults};
use serde::{Deserialize, Serialize};

/// Benchmarks informer-rs, kube-runtime and a no-cache floor against the same fake API server.
#[derive(Debug, Parser)]
#[command(name = "informer-bench")]
struct Args {
    /// The small version: 2,000 pods, short phases (about a minute).
    #[arg(long)]
    quick: bool,
    /// Pod counts, e.g. `10000,100000` (default: 10000,100000; with --quick 2000).
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<usize>>,
    /// Contenders, e.g. `informer,kube-runtime` (default: all).
    #[arg(long, value_delimiter = ',')]
    contenders: Option<Vec<ContenderKind>>,
    /// Steady write rate, per second.
    #[arg(long)]
    steady_rate: Option<f64>,
    /// Steady phase length, seconds.
    #[arg(long)]
    steady_seconds: Option<f64>,
    /// Writes queued while a contender is held.
    #[arg(long)]
    burst: Option<u64>,
    /// Where to write the report (default: BENCHMARKS.md at the workspace root; with --quick,
    /// BENCHMARKS-quick.md next to the target directory's profile directories).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the raw results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The hand-written analysis included at the end.
    #[arg(long)]
    analysis: Option<PathBuf>,
    /// The command to name in the report.
    #[arg(long, default_value = "cargo xtask bench")]
    command: String,
    /// Render the report again from a run's `--json` file (with the current analysis)
    /// instead of measuring.
    #[arg(long, value_name = "JSON")]
    render_from: Option<PathBuf>,
    /// Use a running, empty server instead of starting `fake-apiserver`.
    #[arg(long)]
    server_url: Option<String>,
    /// The `fake-apiserver` executable (default: next to this one).
    #[arg(long)]
    fake_apiserver: Option<PathBuf>,
    /// The `bench-contender` executable (default: next to this one).
    #[arg(long)]
    contender_exe: Option<PathBuf>,
}

/// What `--json` writes and `--render-from` reads: a run's results and where and when they
/// were measured.
#[derive(Serialize, Deserialize)]
struct RecordedRun {
    date: String,
    machine: Machine,
    command: String,
    results: SuiteResults,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = format!("informer-bench: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                message.push_str(&format!(": {s}"));
                source = s.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn sibling(name: &str) -> Result<PathBuf, HarnessError> {
    let exe =
        std::env::current_exe().map_err(|e| HarnessError::io("finding this executable", e))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    Ok(dir.join(name))
}

fn run(args: Args) -> Result<(), HarnessError> {
    if !cfg!(target_os = "linux") {
        return Err(HarnessError::Check(
            "the harness reads /proc: Linux only".into(),
        ));
    }
    let contender_exe = match args.contender_exe {
        Some(p) => p,
        None => sibling("bench-contender")?,
    };
    let server = match args.server_url {
        Some(url) => ServerSource::External(url),
        None => ServerSource::Spawn(match args.fake_apiserver {
            Some(p) => p,
            None => sibling("fake-apiserver")?,
        }),
    };
    // Rendering from a recorded run starts no process.
    let needed = args.render_from.is_none();
    for exe in [
        Some(&contender_exe).filter(|_| needed),
        match &server {
            ServerSource::Spawn(p) if needed => Some(p),
            _ => None,
        },
    ]
    .into_iter()
    .flatten()
    {
        if !exe.exists() {
            return Err(HarnessError::Check(format!(
                "{} does not exist: build it first (cargo xtask bench does)",
                exe.display()
            )));
        }
    }
    let mut config = if args.quick {
        SuiteConfig::quick(contender_exe, server)
    } else {
        SuiteConfig::full(contender_exe, server)
    };
    if let Some(sizes) = args.sizes {
        config.sizes = sizes;
    }
    if let Some(contenders) = args.contenders {
        config.contenders = contenders;
    }
    if let Some(r) = args.steady_rate {
        config.steady_rate = r;
    }
    if let Some(s) = args.steady_seconds {
        config.steady_seconds = s;
    }
    if let Some(b) = args.burst {
        config.burst = b;
    }
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = match args.out {
        Some(p) => p,
        None if args.quick => sibling("../BENCHMARKS-quick.md")?,
        None => manifest_dir.join("../BENCHMARKS.md"),
    };
    let analysis_path = args
        .analysis
        .unwrap_or_else(|| manifest_dir.join("ANALYSIS.md"));
    let analysis = std::fs::read_to_string(&analysis_path)
        .map_err(|e| HarnessError::io(format!("reading {}", analysis_path.display()), e))?;

    let run = match &args.render_from {
        Some(path) => {
            let json = std::fs::read_to_string(path)
                .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
            serde_json::from_str(&json).map_err(|e| {
                HarnessError::Check(format!("{} is not a --json file: {e}", path.display()))
            })?
        }
        None => {
            let date = utc_now();
            let results = suite::run(&config, &mut |line| eprintln!("informer-bench: {line}"))?;
            RecordedRun {
                date,
                machine: Machine::describe(),
                command: args.command,
                results,
            }
        }
    };
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&run)
            .map_err(|e| HarnessError::Check(format!("encoding the results: {e}")))?;
        std::fs::write(path, json)
            .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))?;
    }
    let RecordedRun {
        date,
        machine,
        command,
        results,
    } = run;
    let context = ReportContext {
        machine,
        date,
        command,
        analysis: Some(analysis),
    };
    let mut text = render(&results, &context);
    // The sharding section (`cargo xtask bench --sharding`) is measured by another command:
    // keep it.
    if let Ok(before) = std::fs::read_to_string(&out)
        && let Some(section) = informer_benchmarks::sharding::section(&before)
    {
        text = informer_benchmarks::sharding::splice(&text, &format!("{section}\n"));
    }
    std::fs::write(&out, &text)
        .map_err(|e| HarnessError::io(format!("writing {}", out.display()), e))?;
    println!("informer-bench: wrote {}", out.display());
    for size in &results.sizes {
        for t in targets(size) {
            let verdict = match t.met() {
                Some(true) => "met",
                Some(false) => "MISSED",
                None => "not measured",
            };
            println!(
                "  {:>7} pods  {:<58} {:>8}  {verdict}  ({})",
                t.pods,
                t.target,
                informer_benchmarks::report::value_text(t.unit, t.measured),
                t.detail
            );
        }
    }
    Ok(())
}

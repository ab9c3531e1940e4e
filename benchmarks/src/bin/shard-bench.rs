//! `shard-bench`: the sharding benchmark (see `informer_benchmarks::sharding`). Normally
//! started by `cargo xtask bench --sharding`, which builds it and `fake-apiserver` in
//! release first; `shard-bench replica` is one replica, started by the orchestrator.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use informer_benchmarks::HarnessError;
use informer_benchmarks::machine::{Machine, utc_now};
use informer_benchmarks::sharding::{self, ShardBenchConfig, ShardBenchRun};

/// N pods over S sharded informers (server-side and client-side filtering) against one
/// unsharded informer: cold sync, RSS and CPU per event of each replica.
#[derive(Debug, Parser)]
#[command(name = "shard-bench")]
struct Args {
    #[command(subcommand)]
    role: Option<Role>,
    /// Pods seeded.
    #[arg(long, default_value_t = 100_000)]
    pods: usize,
    /// Replicas of the sharded scenarios.
    #[arg(long, default_value_t = 4)]
    shards: u64,
    /// Namespaces the pods are spread over.
    #[arg(long, default_value_t = 10)]
    namespaces: usize,
    /// Pod updates per second in the steady phase.
    #[arg(long, default_value_t = 200.0)]
    steady_rate: f64,
    /// Length of the steady phase, seconds.
    #[arg(long, default_value_t = 20.0)]
    steady_seconds: f64,
    /// The file whose sharding section is written (default: BENCHMARKS.md at the workspace
    /// root).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the raw results as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// The command to name in the report.
    #[arg(long, default_value = "cargo xtask bench --sharding")]
    command: String,
    /// The `fake-apiserver` executable (default: next to this one).
    #[arg(long)]
    fake_apiserver: Option<PathBuf>,
    /// Render the section again from a run's `--json` file instead of measuring.
    #[arg(long, value_name = "JSON")]
    render_from: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum Role {
    /// One replica (started by the orchestrator; commands on stdin).
    Replica {
        /// The API server.
        #[arg(long)]
        url: String,
        /// This replica's rank (with --shards).
        #[arg(long, requires = "shards")]
        rank: Option<u64>,
        /// How many replicas share the pods (without: no shard selector).
        #[arg(long)]
        shards: Option<u64>,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(Role::Replica { url, rank, shards }) = &args.role {
        let shard = rank.zip(*shards);
        return match sharding::replica(url, shard) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("shard-bench replica: {message}");
                ExitCode::FAILURE
            }
        };
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = format!("shard-bench: {e}");
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

fn run(args: Args) -> Result<(), HarnessError> {
    if !cfg!(target_os = "linux") {
        return Err(HarnessError::Check(
            "the harness reads /proc: Linux only".into(),
        ));
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../BENCHMARKS.md"));
    if let Some(path) = &args.render_from {
        let json = std::fs::read_to_string(path)
            .map_err(|e| HarnessError::io(format!("reading {}", path.display()), e))?;
        let run: ShardBenchRun = serde_json::from_str(&json).map_err(|e| {
            HarnessError::Check(format!("{} is not a --json file: {e}", path.display()))
        })?;
        return write(&out, &run);
    }
    let me = std::env::current_exe().map_err(|e| HarnessError::io("finding this executable", e))?;
    let server = match args.fake_apiserver {
        Some(p) => p,
        None => me.parent().unwrap_or(Path::new(".")).join("fake-apiserver"),
    };
    if !server.exists() {
        return Err(HarnessError::Check(format!(
            "{} does not exist: build it first (cargo xtask bench --sharding does)",
            server.display()
        )));
    }
    let config = ShardBenchConfig {
        pods: args.pods,
        shards: args.shards.max(1),
        namespaces: args.namespaces.max(1),
        steady_rate: args.steady_rate,
        steady_seconds: args.steady_seconds,
    };
    let date = utc_now();
    let load_average = sharding::load_average();
    let results = sharding::run(&config, &server, &me, &mut |line| {
        eprintln!("shard-bench: {line}");
    })?;
    let run = ShardBenchRun {
        date,
        machine: Machine::describe(),
        command: args.command,
        load_average,
        config,
        results,
    };
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&run)
            .map_err(|e| HarnessError::Check(format!("encoding the results: {e}")))?;
        std::fs::write(path, json)
            .map_err(|e| HarnessError::io(format!("writing {}", path.display()), e))?;
    }
    write(&out, &run)
}

/// Writes the run's section into `out`.
fn write(out: &Path, run: &ShardBenchRun) -> Result<(), HarnessError> {
    let before = std::fs::read_to_string(out).unwrap_or_default();
    let section = sharding::render(run);
    std::fs::write(out, sharding::splice(&before, &section))
        .map_err(|e| HarnessError::io(format!("writing {}", out.display()), e))?;
    println!(
        "shard-bench: wrote the sharding section of {}",
        out.display()
    );
    print!("{section}");
    Ok(())
}

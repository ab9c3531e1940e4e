//! `cargo xtask bench [--quick] [options]`: the side-by-side benchmark of informer-rs,
//! kube-runtime and a no-cache floor (package `informer-benchmarks`).
//!
//! Builds the orchestrator, the contender binary and the `fake-apiserver` binary in release
//! (one cargo invocation, so they land in the same target directory), then runs the
//! orchestrator, which finds the other two next to itself. Without `--quick` it writes
//! BENCHMARKS.md at the workspace root; with `--quick` (2,000 pods, short phases)
//! `BENCHMARKS-quick.md` in the target directory. Other options go to the orchestrator
//! unchanged (`--sizes 10000`, `--contenders informer,kube-runtime`, `--json PATH`, `--help`).

use crate::cargo;

/// Runs the benchmark with `args` (those after `bench`).
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    cargo(&[
        "build",
        "--release",
        "--package",
        "informer-benchmarks",
        "--bins",
        "--package",
        "fake-apiserver",
        "--bin",
        "fake-apiserver",
    ])?;
    let quick = args.iter().any(|a| a == "--quick");
    let command = if quick {
        "cargo xtask bench --quick"
    } else {
        "cargo xtask bench"
    };
    let mut run: Vec<&str> = vec![
        "run",
        "--release",
        "--quiet",
        "--package",
        "informer-benchmarks",
        "--bin",
        "informer-bench",
        "--",
        "--command",
        command,
    ];
    run.extend(args.iter().map(String::as_str));
    cargo(&run)
}

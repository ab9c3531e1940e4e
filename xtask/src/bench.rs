//! `cargo xtask bench [--quick] [options]`: the side-by-side benchmark of informer-rs,
//! kube-runtime and a no-cache floor (package `informer-benchmarks`).
//!
//! Builds the orchestrator, the contender binary and the `fake-apiserver` binary in release
//! (one cargo invocation, so they land in the same target directory), then runs the
//! orchestrator, which finds the other two next to itself. Without `--quick` it writes
//! BENCHMARKS.md at the workspace root; with `--quick` (2,000 pods, short phases)
//! `BENCHMARKS-quick.md` in the target directory. Other options go to the orchestrator
//! unchanged (`--sizes 10000`, `--contenders informer,kube-runtime`, `--json PATH`, `--help`).
//!
//! `cargo xtask bench --sharding [--pods N] [--shards S] ...` builds and runs `shard-bench`
//! instead: N pods over S sharded informers with server-side and with client-side filtering,
//! and one unsharded informer; it rewrites the sharding section of BENCHMARKS.md only.

use crate::cargo;

/// Runs the benchmark with `args` (those after `bench`); `--sharding` runs the sharding
/// benchmark instead (`shard-bench`: sharded informers with server-side and client-side
/// filtering against one unsharded informer), which writes its own section of BENCHMARKS.md.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    if args.iter().any(|a| a == "--sharding") {
        return sharding(args);
    }
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

/// `cargo xtask bench --sharding [options]`: builds `shard-bench` and `fake-apiserver` in
/// release and runs the former with the other options (`--pods 20000`, `--shards 4`,
/// `--json PATH`, `--help`).
fn sharding(args: &[String]) -> Result<(), String> {
    cargo(&[
        "build",
        "--release",
        "--package",
        "informer-benchmarks",
        "--bin",
        "shard-bench",
        "--package",
        "fake-apiserver",
        "--bin",
        "fake-apiserver",
    ])?;
    let rest: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--sharding")
        .collect();
    let command = std::iter::once("cargo xtask bench --sharding")
        .chain(rest.iter().copied())
        .collect::<Vec<_>>()
        .join(" ");
    let mut run: Vec<&str> = vec![
        "run",
        "--release",
        "--quiet",
        "--package",
        "informer-benchmarks",
        "--bin",
        "shard-bench",
        "--",
        "--command",
        &command,
    ];
    run.extend(rest);
    cargo(&run)
}

//! `cargo xtask bench [--quick] [options]`: the side-by-side benchmark of informer-rs,
//! kube-runtime and a no-cache floor (package `informer-benchmarks`).
//!
//! Builds the orchestrator, the contender binary and the `fake-apiserver` binary in release
//! (one cargo invocation, so they land in the same target directory), then runs the
//! orchestrator, which finds the other two next to itself. Without `--quick` it writes
//! BENCHMARKS.md at the workspace root; with `--quick` (2,000 pods, short phases)
//! `BENCHMARKS-quick.md` in the target directory. Other options go to the orchestrator
//! unchanged (`--sizes 10000`, `--contenders informer,kube-runtime`, `--json PATH`, `--help`).
//! `--allocator mimalloc` builds and runs every program with mimalloc as the global allocator
//! instead of the system allocator (feature `mimalloc` of `informer-benchmarks`; the report
//! names it); `--allocator system` is the default. Not taken with `--sharding`.
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
    let (allocator, args) = allocator(args)?;
    let features: &[&str] = match allocator {
        Allocator::System => &[],
        Allocator::Mimalloc => &["--features", "informer-benchmarks/mimalloc"],
    };
    let mut build = vec![
        "build",
        "--release",
        "--package",
        "informer-benchmarks",
        "--bins",
        "--package",
        "fake-apiserver",
        "--bin",
        "fake-apiserver",
    ];
    build.extend(features);
    cargo(&build)?;
    let mut command = named_command("cargo xtask bench", args.iter().map(String::as_str));
    if allocator == Allocator::Mimalloc {
        command.push_str(" --allocator mimalloc");
    }
    let mut run: Vec<&str> = vec!["run", "--release", "--quiet"];
    run.extend(features);
    run.extend([
        "--package",
        "informer-benchmarks",
        "--bin",
        "informer-bench",
        "--",
        "--command",
        &command,
    ]);
    run.extend(args.iter().map(String::as_str));
    cargo(&run)
}

/// The global allocator of the benchmark programs (`--allocator system|mimalloc`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Allocator {
    System,
    Mimalloc,
}

/// Takes `--allocator NAME` out of `args`.
fn allocator(args: &[String]) -> Result<(Allocator, Vec<String>), String> {
    let mut rest = Vec::new();
    let mut chosen = Allocator::System;
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        if arg != "--allocator" {
            rest.push(arg.clone());
            continue;
        }
        chosen = match iter.next().map(String::as_str) {
            Some("system") => Allocator::System,
            Some("mimalloc") => Allocator::Mimalloc,
            other => {
                return Err(format!(
                    "--allocator takes system or mimalloc, not {}",
                    other.unwrap_or("nothing")
                ));
            }
        };
    }
    Ok((chosen, rest))
}

/// Options that say where results go, each followed by its value: left out of the command
/// the report names, which says what was measured.
const OUTPUT_OPTIONS: &[&str] = &["--out", "--json", "--analysis"];

/// The command a report names: `base` with every option given that shapes the run (`--quick`,
/// `--sizes`, `--contenders`, phase lengths, `--pods`...), in the order given, and without the
/// output paths.
fn named_command<'a>(base: &str, args: impl IntoIterator<Item = &'a str>) -> String {
    let mut command = String::from(base);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let flag = arg.split_once('=').map_or(arg, |(flag, _)| flag);
        if OUTPUT_OPTIONS.contains(&flag) {
            if flag == arg {
                args.next();
            }
            continue;
        }
        command.push(' ');
        command.push_str(arg);
    }
    command
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
    let command = named_command("cargo xtask bench --sharding", rest.iter().copied());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn the_allocator_option_is_taken_out_of_the_orchestrators_arguments() {
        let (chosen, rest) = allocator(&strings(&[
            "--sizes",
            "10000",
            "--allocator",
            "mimalloc",
            "--quick",
        ]))
        .unwrap();
        assert_eq!(chosen, Allocator::Mimalloc);
        assert_eq!(rest, strings(&["--sizes", "10000", "--quick"]));
        let (chosen, rest) = allocator(&strings(&["--sizes", "10000"])).unwrap();
        assert_eq!(chosen, Allocator::System);
        assert_eq!(rest, strings(&["--sizes", "10000"]));
        assert_eq!(
            allocator(&strings(&["--allocator", "system"])).unwrap().0,
            Allocator::System
        );
        let error = allocator(&strings(&["--allocator", "jemalloc"])).unwrap_err();
        assert!(error.contains("not jemalloc"), "{error}");
        let error = allocator(&strings(&["--allocator"])).unwrap_err();
        assert!(error.contains("not nothing"), "{error}");
    }

    #[test]
    fn the_named_command_keeps_what_shapes_the_run_and_drops_output_paths() {
        let args = strings(&[
            "--sizes",
            "10000,100000",
            "--json",
            "benchmarks/last-run.json",
            "--contenders",
            "informer,floor",
            "--out=/tmp/x.md",
            "--burst",
            "500",
        ]);
        assert_eq!(
            named_command("cargo xtask bench", args.iter().map(String::as_str)),
            "cargo xtask bench --sizes 10000,100000 --contenders informer,floor --burst 500"
        );
        assert_eq!(
            named_command(
                "cargo xtask bench --sharding",
                ["--pods", "20000", "--json", "x"]
            ),
            "cargo xtask bench --sharding --pods 20000"
        );
        assert_eq!(named_command("cargo xtask bench", []), "cargo xtask bench");
    }
}

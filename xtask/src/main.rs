//! Project automation for informer-rs (matklad's xtask pattern): `cargo xtask <task>`.
//!
//! Tasks:
//! - `ci`: everything CI checks: formatting, clippy with warnings denied (all features, then
//!   each library crate alone with its default features: see `features.rs`), the layering check, all
//!   tests (including the kubectl ones: under `CI=true` a missing kubectl fails them), and docs;
//!   the test binaries run side by side after one build (see `testrun.rs`).
//! - `codegen`: regenerate the fake API server's built-in resource table and protobuf schema
//!   (see `codegen.rs`); `--check` only compares, as CI does.
//! - `features`: only the feature check (see `features.rs`).
//! - `layering`: only the layering check (every dependency rule ARCHITECTURE.md states).
//! - `modules`: only the module-cycle check (see `modules.rs`).
//! - `soak`: the chaos convergence test over many seeds, in release, or over HTTP for some
//!   minutes (see `soak.rs`).
//! - `mutants`: the mutation check, by hand: known-bad patches against the chaos test and the
//!   soak (see `mutants.rs`).
//! - `bench`: the side-by-side benchmark against kube-runtime, writing BENCHMARKS.md, or with
//!   `--sharding` the sharding benchmark, writing its section of it (see `bench.rs`).
//!
//! Its one dependency is serde_json (to read cargo's JSON messages), so it compiles in seconds.

use std::env;
use std::process::{Command, ExitCode};

mod bench;
mod codegen;
mod features;
mod layering;
mod modules;
mod mutants;
mod soak;
mod testrun;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("codegen") => codegen::run(&args[1..]),
        Some("layering") => layering::check().map(|()| println!("layering: ok")),
        Some("features") => features::check().map(|()| println!("features: ok")),
        Some("modules") => modules::check(&workspace_root())
            .and_then(|()| modules::check_test_layout(&workspace_root()))
            .map(|()| println!("modules: ok")),
        Some("soak") => soak::run(&args[1..]),
        Some("mutants") => mutants::run(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("help" | "--help" | "-h") | None => {
            print_help();
            Ok(())
        }
        Some(other) => Err(format!("unknown task {other:?}; try `cargo xtask help`")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn print_help() {
    println!(
        "cargo xtask <task>\n\n\
         ci        fmt check, clippy -D warnings (all features, then each library crate\n\
         \x20         with its defaults), layering check, all tests, docs\n\
         codegen   regenerate the fake API server's resource and protobuf tables from the\n\
         \x20         k8s-openapi and k8s-pb sources (--check: only compare; CI runs it)\n\
         features  clippy -D warnings on each library crate alone, with its default features\n\
         \x20         (and without them where it has some)\n\
         layering  check every dependency rule of ARCHITECTURE.md (cargo tree)\n\
         modules   check that no crate's modules form a cycle, and one test binary per crate\n\
         soak      the chaos convergence test over many seeds, in release:\n\
         \x20         --seeds N [--start S] [--chunk C] [--threads T] [--debug]\n\
         \x20         or in real time over HTTP through kube-client for M minutes:\n\
         \x20         --http --minutes M [--start S] [--threads T] [--debug];\n\
         \x20         --store compact: the informer's cache is the compact store\n\
         mutants   the mutation check (by hand): each patch of xtask/mutants/ against the chaos\n\
         \x20         test and the soak, on a scratch copy; prints the table:\n\
         \x20         [--only a,b] [--chaos-seeds N] [--soak-seeds N] [--tests pkg:test,...]\n\
         bench     informer-rs vs kube-runtime vs a no-cache floor, in release; writes\n\
         \x20         BENCHMARKS.md (--quick: a small run, BENCHMARKS-quick.md in the target dir);\n\
         \x20         --sharding: sharded informers (server- and client-side filtering) vs one\n\
         \x20         unsharded informer, BENCHMARKS.md's sharding section [--pods N] [--shards S]"
    );
}

/// Runs every check CI runs, stopping at the first failure.
fn ci() -> Result<(), String> {
    let root = workspace_root();
    step("fmt", || cargo(&["fmt", "--all", "--", "--check"]))?;
    step("layering", layering::check)?;
    step("modules", || modules::check(&root))?;
    step("test layout", || modules::check_test_layout(&root))?;
    step("codegen", || codegen::run(&["--check".to_owned()]))?;
    step("clippy", || {
        cargo(&[
            "clippy",
            "--workspace",
            "--all-targets",
            "--all-features",
            "--",
            "-D",
            "warnings",
        ])
    })?;
    step("features", features::check)?;
    // `cargo test --workspace --all-features` and `cargo doc`, the test binaries side by side.
    step("test and doc", || testrun::run(&root))?;
    println!("xtask ci: all checks passed");
    Ok(())
}

/// Runs one check of `ci`, printing its outcome and how long it took (wall time), so that a
/// CI log shows where the time goes.
fn step(name: &str, check: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let started = std::time::Instant::now();
    let result = check();
    println!(
        "xtask ci: {name}: {} ({:.1} s)",
        if result.is_ok() { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    result.map_err(|e| format!("{name}: {e}"))
}

/// Runs cargo with `args`, inheriting stdio.
pub(crate) fn cargo(args: &[&str]) -> Result<(), String> {
    cargo_env(args, &[])
}

fn cargo_env(args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    without_package_env(&mut command);
    let status = command
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo {}` failed ({status})", args.join(" ")))
    }
}

/// Removes from `command` the variables cargo set for this process as a package's program
/// (`cargo xtask` is `cargo run -p xtask`), so that the cargo it runs sees the environment a
/// user's shell gives it. Otherwise builds under xtask differ from the same command typed by
/// hand (and from a build started by a test, which removes the same variables): build scripts
/// and macros that read them are compiled again, e.g. the informer-kube process tests' build
/// recompiled 29 crates (88 s) under `cargo xtask ci`.
pub(crate) fn without_package_env(command: &mut Command) {
    for (name, _) in env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&name.as_ref())
        {
            command.env_remove(name.as_ref());
        }
    }
}

/// The workspace root (xtask's parent directory).
pub(crate) fn workspace_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

//! `cargo xtask soak --seeds N [--start S] [--chunk C] [--threads T] [--debug] [--store
//! indexed|compact]`: runs the chaos
//! convergence test (`informer/tests/it/chaos.rs`) over many seeds, in release mode, chunk by
//! chunk, printing progress; on failure it prints the failing chunk's output, the first failing
//! seed and the command that reproduces it, and exits non-zero.
//!
//! The test lives in `informer`'s one integration-test binary, `it`, which is built once
//! (`cargo test --release -p informer --test it --no-run`); each chunk then runs that binary
//! with the test's filter alone (`chaos::chaos_convergence --exact --nocapture`) and
//! `CHAOS_SEEDS=a..b`. The test runs its seeds in parallel (`CHAOS_THREADS`, default: the
//! number of CPUs) and prints `CHAOS-FAILED-SEED: n` for each failure. `--store compact` runs
//! the informer with the compact store (`CHAOS_STORE=compact`; the default `indexed` leaves the
//! variable to the environment).
//!
//! `cargo xtask soak --http --minutes M [--start S] [--threads T] [--debug]` runs the same
//! scenarios in real time over the HTTP fake server through kube-client
//! (`informer-kube/tests/it/http_chaos.rs`, `CHAOS_HTTP_MINUTES=M`): seeds one after another from
//! S until M minutes have passed, each seed's result printed as it comes, then the totals.

use std::env;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

/// What `soak` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    seeds: u64,
    start: u64,
    chunk: u64,
    threads: Option<u64>,
    release: bool,
    /// `--http --minutes M`: the HTTP chaos for M minutes instead of `seeds` seeds.
    http_minutes: Option<u64>,
    /// `--store compact`: the informer's cache is the compact store (`CHAOS_STORE`).
    store: Option<String>,
}

const USAGE: &str = "cargo xtask soak --seeds N [--start S] [--chunk C] [--threads T] [--debug] \
                     [--store indexed|compact] | --http --minutes M [--start S] [--threads T] \
                     [--debug] [--store indexed|compact]";

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        seeds: 0,
        start: 0,
        chunk: 500,
        threads: None,
        release: true,
        http_minutes: None,
        store: None,
    };
    let mut seeds = None;
    let mut http = false;
    let mut minutes = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || -> Result<u64, String> {
            let text = match &inline {
                Some(v) => v.clone(),
                None => args
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value; usage: {USAGE}"))?,
            };
            text.parse()
                .map_err(|e| format!("{name} {text:?}: {e}; usage: {USAGE}"))
        };
        match name {
            "--seeds" => seeds = Some(value()?),
            "--start" => options.start = value()?,
            "--chunk" => options.chunk = value()?.max(1),
            "--threads" => options.threads = Some(value()?.max(1)),
            "--debug" => options.release = false,
            "--http" => http = true,
            "--minutes" => minutes = Some(value()?.max(1)),
            "--store" => {
                let store = match &inline {
                    Some(v) => v.clone(),
                    None => args
                        .next()
                        .cloned()
                        .ok_or_else(|| format!("--store needs a value; usage: {USAGE}"))?,
                };
                if !matches!(store.as_str(), "indexed" | "compact") {
                    return Err(format!(
                        "--store {store:?}: expected `indexed` or `compact`; usage: {USAGE}"
                    ));
                }
                options.store = Some(store);
            }
            other => return Err(format!("unknown soak option {other:?}; usage: {USAGE}")),
        }
    }
    if http {
        if seeds.is_some() {
            return Err(format!(
                "--http runs for --minutes, not --seeds; usage: {USAGE}"
            ));
        }
        options.http_minutes =
            Some(minutes.ok_or_else(|| format!("--http needs --minutes; usage: {USAGE}"))?);
        return Ok(options);
    }
    if minutes.is_some() {
        return Err(format!("--minutes goes with --http; usage: {USAGE}"));
    }
    options.seeds = seeds.ok_or_else(|| format!("--seeds is required; usage: {USAGE}"))?;
    if options.start.checked_add(options.seeds).is_none() {
        return Err("--start + --seeds overflows".to_owned());
    }
    Ok(options)
}

/// The seeds a failed chunk reported, in order.
pub(crate) fn failed_seeds(output: &str) -> Vec<u64> {
    let mut seeds: Vec<u64> = output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("CHAOS-FAILED-SEED:"))
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    seeds
}

/// The chaos convergence test: its package, its test target (the crate's one integration-test
/// binary) and its name in that binary (a filter to run with `--exact`).
pub(crate) const CHAOS_PACKAGE: &str = "informer";
pub(crate) const CHAOS_TARGET: &str = "it";
pub(crate) const CHAOS_TEST: &str = "chaos::chaos_convergence";

/// The test's own summary line (`chaos: 500 seed(s) on 2 thread(s) in ...`).
fn summary_line(output: &str) -> Option<&str> {
    output.lines().find(|l| l.starts_with("chaos: "))
}

/// The path of the test binary built from `tests/<test>.rs` or `tests/<test>/main.rs`, from
/// `cargo test --no-run`'s `Executable tests/<test>.rs (path)` (or `tests/<test>/main.rs`).
pub(crate) fn executable<'a>(build_output: &'a str, test: &str) -> Option<&'a str> {
    let sources = [
        format!("tests/{test}.rs "),
        format!("tests/{test}/main.rs "),
    ];
    build_output
        .lines()
        .filter(|l| l.contains("Executable") && sources.iter().any(|s| l.contains(s.as_str())))
        .find_map(|l| l.rsplit_once('(')?.1.strip_suffix(')'))
}

/// Builds the test target `test` of `package` (in release when `release`) and returns the
/// test binary's path; with `at = Some((dir, target))`, in the workspace at `dir`, into the
/// target dir `target`, else here.
pub(crate) fn build_test(
    package: &str,
    test: &str,
    release: bool,
    at: Option<(&std::path::Path, &std::path::Path)>,
) -> Result<String, String> {
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build: Vec<&str> = vec!["test"];
    if release {
        build.push("--release");
    }
    build.extend_from_slice(&["-p", package, "--test", test, "--no-run"]);
    let mut command = Command::new(&cargo);
    crate::without_package_env(&mut command);
    command.args(&build);
    if let Some((dir, target)) = at {
        command.current_dir(dir).env("CARGO_TARGET_DIR", target);
    }
    let built = command
        .output()
        .map_err(|e| format!("cannot run {cargo}: {e}"))?;
    let build_log = String::from_utf8_lossy(&built.stderr);
    if !built.status.success() {
        return Err(format!(
            "`cargo {}` failed ({}):\n{build_log}",
            build.join(" "),
            built.status
        ));
    }
    executable(&build_log, test)
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "no {test} test binary in the output of `cargo {}`:\n{build_log}",
                build.join(" ")
            )
        })
}

/// Runs the soak.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    if let Some(minutes) = options.http_minutes {
        return run_http(&options, minutes);
    }
    // Build once and run that binary for every chunk: one soak, one build.
    println!(
        "soak: building the chaos test (`cargo test{} -p {CHAOS_PACKAGE} --test {CHAOS_TARGET} \
         --no-run`)",
        if options.release { " --release" } else { "" }
    );
    let binary = build_test(CHAOS_PACKAGE, CHAOS_TARGET, options.release, None)?;
    println!("soak: running {binary}");

    let started = Instant::now();
    let end = options.start + options.seeds;
    let mut from = options.start;
    while from < end {
        let to = (from + options.chunk).min(end);
        let range = format!("{from}..{to}");
        let args = [CHAOS_TEST, "--exact", "--nocapture"];
        let mut command = Command::new(&binary);
        command.args(args).env("CHAOS_SEEDS", &range);
        if let Some(threads) = options.threads {
            command.env("CHAOS_THREADS", threads.to_string());
        }
        if let Some(store) = &options.store {
            command.env("CHAOS_STORE", store);
        }
        let chunk_started = Instant::now();
        let output = command
            .output()
            .map_err(|e| format!("cannot run {binary}: {e}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if !output.status.success() {
            println!("{stdout}");
            eprintln!("{stderr}");
            let failed = failed_seeds(&stdout);
            let Some(first) = failed.first() else {
                return Err(format!(
                    "seeds {range}: {binary} failed ({}) without naming a seed",
                    output.status
                ));
            };
            let release = if options.release { " --release" } else { "" };
            // The environment the chaos test reads, so that the command reproduces the run.
            let mut env: String = ["CHAOS_SABOTAGE", "CHAOS_THREADS", "CHAOS_STORE"]
                .iter()
                .filter(|k| **k != "CHAOS_STORE" || options.store.is_none())
                .filter_map(|k| env::var(k).ok().map(|v| format!("{k}={v} ")))
                .collect();
            if let Some(store) = &options.store {
                env.push_str(&format!("CHAOS_STORE={store} "));
            }
            return Err(format!(
                "seeds {range}: {} failed: {failed:?}\nfirst failing seed: {first}\nreproduce: \
                 {env}CHAOS_SEED={first} cargo test{release} -p {CHAOS_PACKAGE} --test \
                 {CHAOS_TARGET} -- {CHAOS_TEST} --exact --nocapture   (add \
                 CHAOS_LOG=informer=debug for the informer's log)",
                failed.len()
            ));
        }
        let done = to - options.start;
        println!(
            "soak: seeds {range} ok in {:.1}s ({done}/{} done, {:.0}s elapsed){}",
            chunk_started.elapsed().as_secs_f64(),
            options.seeds,
            started.elapsed().as_secs_f64(),
            summary_line(&stdout)
                .map(|l| format!("\n  {l}"))
                .unwrap_or_default()
        );
        from = to;
    }
    println!(
        "soak: all {} seeds ({}..{end}) passed in {:.1}s",
        options.seeds,
        options.start,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// `--http --minutes M`: the HTTP chaos test for M minutes, its output shown as it comes.
fn run_http(options: &Options, minutes: u64) -> Result<(), String> {
    println!(
        "soak: building the HTTP chaos test (`cargo test{} -p informer-kube --test it --no-run`)",
        if options.release { " --release" } else { "" }
    );
    let binary = build_test("informer-kube", "it", options.release, None)?;
    println!(
        "soak: running {binary} for {minutes} minute(s), seeds from {}",
        options.start
    );
    let started = Instant::now();
    let mut command = Command::new(&binary);
    command
        .args(["http_chaos::http_chaos", "--exact", "--nocapture"])
        .env("CHAOS_HTTP_MINUTES", minutes.to_string())
        .env("CHAOS_HTTP_START", options.start.to_string())
        .stdout(Stdio::piped());
    if let Some(threads) = options.threads {
        command.env("CHAOS_THREADS", threads.to_string());
    }
    if let Some(store) = &options.store {
        command.env("CHAOS_STORE", store);
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot run {binary}: {e}"))?;
    let mut stdout = String::new();
    if let Some(out) = child.stdout.take() {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            println!("{line}");
            stdout.push_str(&line);
            stdout.push('\n');
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for {binary}: {e}"))?;
    if status.success() {
        println!(
            "soak: HTTP chaos passed in {:.1}s",
            started.elapsed().as_secs_f64()
        );
        return Ok(());
    }
    let failed = failed_seeds(&stdout);
    let release = if options.release { " --release" } else { "" };
    match failed.first() {
        Some(first) => Err(format!(
            "HTTP chaos: {} seed(s) failed: {failed:?}\nrerun one: CHAOS_SEEDS={first}..={first} \
             cargo test{release} -p informer-kube --test it -- http_chaos::http_chaos --exact \
             --nocapture (real time: the interleaving differs from run to run)",
            failed.len()
        )),
        None => Err(format!("{binary} failed ({status}) without naming a seed")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_parse_with_defaults_and_both_spellings() {
        assert_eq!(
            parse(&args("--seeds 2000")).unwrap(),
            Options {
                seeds: 2000,
                start: 0,
                chunk: 500,
                threads: None,
                release: true,
                http_minutes: None,
                store: None,
            }
        );
        assert_eq!(
            parse(&args(
                "--start=100 --seeds=50 --chunk 10 --threads 4 --debug"
            ))
            .unwrap(),
            Options {
                seeds: 50,
                start: 100,
                chunk: 10,
                threads: Some(4),
                release: false,
                http_minutes: None,
                store: None,
            }
        );
        assert_eq!(
            parse(&args("--http --minutes 5 --start 7")).unwrap(),
            Options {
                seeds: 0,
                start: 7,
                chunk: 500,
                threads: None,
                release: true,
                http_minutes: Some(5),
                store: None,
            }
        );
        assert_eq!(
            parse(&args("--seeds 2000 --store compact")).unwrap().store,
            Some("compact".to_owned())
        );
        assert_eq!(
            parse(&args("--http --minutes 1 --store=indexed"))
                .unwrap()
                .store,
            Some("indexed".to_owned())
        );
    }

    #[test]
    fn bad_options_are_errors_with_the_usage() {
        for bad in [
            "",
            "--start 5",
            "--seeds",
            "--seeds x",
            "--seeds 5 --bogus",
            "--http",
            "--http --seeds 5 --minutes 1",
            "--seeds 5 --minutes 1",
            "--seeds 5 --store",
            "--seeds 5 --store jumbo",
        ] {
            let error = parse(&args(bad)).unwrap_err();
            assert!(error.contains("usage"), "{bad:?}: {error}");
        }
        assert!(parse(&args(&format!("--seeds 2 --start {}", u64::MAX))).is_err());
    }

    #[test]
    fn failed_seeds_are_read_from_the_test_output() {
        let output = "chaos seed 7 FAILED\nCHAOS-FAILED-SEED: 12\nnoise\nCHAOS-FAILED-SEED: 7\n\
                      CHAOS-FAILED-SEED: 12\nchaos: 3 seed(s) on 2 thread(s) in 0.1s";
        assert_eq!(failed_seeds(output), vec![7, 12]);
        assert_eq!(
            summary_line(output),
            Some("chaos: 3 seed(s) on 2 thread(s) in 0.1s")
        );
        assert!(failed_seeds("all good").is_empty());
    }

    #[test]
    fn the_binary_is_read_from_the_build_output() {
        let log = "   Compiling informer v0.1.0\n    Finished `release` profile\n  Executable \
                   tests/it/main.rs (/t/release/deps/it-962827dcd0807224)\n  Executable \
                   tests/chaos.rs (/t/release/deps/chaos-5)\n  Executable \
                   tests/http_chaos.rs (/t/release/deps/http_chaos-12)\n";
        assert_eq!(
            executable(log, "it"),
            Some("/t/release/deps/it-962827dcd0807224")
        );
        assert_eq!(executable(log, "chaos"), Some("/t/release/deps/chaos-5"));
        assert_eq!(
            executable(log, "http_chaos"),
            Some("/t/release/deps/http_chaos-12")
        );
        assert_eq!(executable("Finished", "chaos"), None);
    }
}

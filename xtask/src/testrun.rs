//! `cargo xtask ci`'s tests: one build, then the test binaries run side by side.
//!
//! `cargo test` runs one test binary after another. Ours are few (one per crate, plus unit
//! tests) and uneven: informer-kube's spends most of its time waiting on real-time timers and
//! child processes, while the others are short and busy. Here `cargo test --no-run` builds
//! every test binary exactly as `cargo test` would (same command, same features), and then:
//!
//! - two lanes run the test binaries, integration-test binaries first and informer-kube's
//!   first of all (the longest), each binary as cargo runs it (its package directory as the
//!   working directory, `CARGO`, `CARGO_MANIFEST_DIR` and `CARGO_PKG_NAME` set);
//! - a third lane runs the doc-tests and then `cargo doc` (which need cargo's build lock, free
//!   once the build is done; the test binaries never take it).
//!
//! Each job's output goes to a file under `target/xtask-test-logs/` and is printed whole when
//! it ends, with its wall time, so that lanes do not interleave; a job still running after
//! [`JOB_TIMEOUT`] is killed (a hang fails with its output so far, instead of holding CI). The build's JSON messages are kept in a file named by
//! `INFORMER_WORKSPACE_BUILD` for the tests that start the workspace's programs, so that they
//! do not ask cargo (and wait for its lock) for what was just built.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::without_package_env;

/// The variable that names the file of the build's JSON messages.
const BUILD_MESSAGES_VAR: &str = "INFORMER_WORKSPACE_BUILD";

/// How many test binaries run at once.
const LANES: usize = 2;

/// How long one test binary (or cargo's doc-tests, or `cargo doc`) may run: the tests bound
/// themselves far below this; a hang is killed, and its output so far printed.
const JOB_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// Packages whose integration tests run first: the longest first.
const SLOW_FIRST: &[&str] = &[
    "informer-kube",
    "fake-apiserver",
    "informer-store",
    "informer",
    "informer-benchmarks",
];

/// One test binary of the build.
#[derive(Debug, Clone)]
struct TestBinary {
    package: String,
    /// The target (`it`, or the crate's name for unit tests) and its kind (`test`, `lib`,
    /// `bin`, `example`).
    target: String,
    kind: String,
    exe: PathBuf,
    /// The package's directory.
    dir: PathBuf,
}

impl TestBinary {
    fn label(&self) -> String {
        format!("{} {} ({})", self.package, self.target, self.kind)
    }

    /// Sorts integration tests first, then by [`SLOW_FIRST`].
    fn order(&self) -> (bool, usize) {
        let rank = SLOW_FIRST
            .iter()
            .position(|p| *p == self.package)
            .unwrap_or(SLOW_FIRST.len());
        (self.kind != "test", rank)
    }
}

/// What one lane job did.
struct Outcome {
    label: String,
    ok: bool,
}

/// Builds every test binary, then runs them, the doc-tests and `cargo doc` (see the module
/// docs). Errs naming every failed part.
pub(crate) fn run(root: &Path) -> Result<(), String> {
    let started = Instant::now();
    let messages = root.join("target").join("xtask-workspace-build.json");
    let binaries = build(root, &messages)?;
    // Each job's output, kept after the run.
    let logs = root.join("target").join("xtask-test-logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    println!(
        "xtask ci: test build: ok ({:.1} s, {} test binaries)",
        started.elapsed().as_secs_f64(),
        binaries.len()
    );
    let queue = Mutex::new(VecDeque::from(binaries));
    let outcomes = Mutex::new(Vec::new());
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..LANES {
            scope.spawn(|| {
                while let Some(binary) = pop(&queue) {
                    let ok = run_binary(&binary, &messages, &logs);
                    push(&outcomes, binary.label(), ok);
                }
            });
        }
        scope.spawn(|| {
            let doc_tests = cargo_job(
                root,
                &logs,
                "doc-tests",
                &["test", "--workspace", "--all-features", "--doc"],
                &[],
            );
            push(&outcomes, "doc-tests".to_owned(), doc_tests);
            let doc = cargo_job(
                root,
                &logs,
                "doc",
                // The libraries and the examples (the programs users read; the workspace's
                // other binaries are its own tools): the examples' dev-dependencies make
                // cargo resolve features as clippy did, so the dependencies clippy checked
                // serve here instead of being checked again.
                &[
                    "doc",
                    "--workspace",
                    "--no-deps",
                    "--all-features",
                    "--lib",
                    "--examples",
                ],
                &[("RUSTDOCFLAGS", "-D warnings")],
            );
            push(&outcomes, "doc".to_owned(), doc);
        });
    });
    let outcomes = outcomes.into_inner().unwrap_or_else(|e| e.into_inner());
    let failed: Vec<&str> = outcomes
        .iter()
        .filter(|o| !o.ok)
        .map(|o| o.label.as_str())
        .collect();
    println!(
        "xtask ci: tests, doc-tests and doc: {} parts in {:.1} s, {} failed",
        outcomes.len(),
        started.elapsed().as_secs_f64(),
        failed.len()
    );
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("failed: {}", failed.join(", ")))
    }
}

fn pop(queue: &Mutex<VecDeque<TestBinary>>) -> Option<TestBinary> {
    queue.lock().unwrap_or_else(|e| e.into_inner()).pop_front()
}

fn push(outcomes: &Mutex<Vec<Outcome>>, label: String, ok: bool) {
    outcomes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Outcome { label, ok });
}

fn cargo_path() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

/// `cargo test --workspace --all-features --no-run`, its messages kept in `messages`; the
/// test binaries it built, in the order they should start.
fn build(root: &Path, messages: &Path) -> Result<Vec<TestBinary>, String> {
    let mut command = Command::new(cargo_path());
    without_package_env(&mut command);
    let output = command
        .args(["test", "--workspace", "--all-features", "--no-run"])
        .arg("--message-format=json-render-diagnostics")
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo test --workspace --all-features --no-run` failed ({})",
            output.status
        ));
    }
    if let Some(dir) = messages.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(messages, &output.stdout).map_err(|e| format!("{}: {e}", messages.display()))?;
    let mut binaries: Vec<TestBinary> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| test_binary(&m))
        .collect();
    if binaries.is_empty() {
        return Err("cargo built no test binary".to_owned());
    }
    binaries.sort_by_key(TestBinary::order);
    Ok(binaries)
}

/// A test binary from a `compiler-artifact` message.
fn test_binary(message: &Value) -> Option<TestBinary> {
    let exe = PathBuf::from(message["executable"].as_str()?);
    let dir = Path::new(message["manifest_path"].as_str()?)
        .parent()?
        .to_path_buf();
    Some(TestBinary {
        package: package_name(message["package_id"].as_str()?, &dir),
        target: message["target"]["name"].as_str()?.to_owned(),
        kind: message["target"]["kind"][0].as_str()?.to_owned(),
        exe,
        dir,
    })
}

/// The package's name from its id: `path+file:///…/dir#name@0.1.0`, or
/// `path+file:///…/name#0.1.0` when the name is the directory's.
fn package_name(id: &str, dir: &Path) -> String {
    match id.rsplit_once('#') {
        Some((_, tail)) if tail.contains('@') => tail.split('@').next().unwrap_or(tail).to_owned(),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// Runs one test binary as `cargo test` does; prints its output and time when it ends.
fn run_binary(binary: &TestBinary, messages: &Path, logs: &Path) -> bool {
    let mut command = Command::new(&binary.exe);
    without_package_env(&mut command);
    command
        .current_dir(&binary.dir)
        .env("CARGO", cargo_path())
        .env("CARGO_MANIFEST_DIR", &binary.dir)
        .env("CARGO_PKG_NAME", &binary.package)
        .env(BUILD_MESSAGES_VAR, messages);
    let file = format!("{}-{}-{}", binary.package, binary.target, binary.kind);
    run_and_report(&binary.label(), command, &logs.join(file))
}

/// Runs cargo with `args` in `root`; prints its output and time when it ends.
fn cargo_job(root: &Path, logs: &Path, label: &str, args: &[&str], envs: &[(&str, &str)]) -> bool {
    let mut command = Command::new(cargo_path());
    without_package_env(&mut command);
    command
        .args(args)
        .envs(envs.iter().copied())
        .current_dir(root);
    run_and_report(label, command, &logs.join(label))
}

/// [`run_job`] with [`JOB_TIMEOUT`], then prints the output under a header line.
fn run_and_report(label: &str, command: Command, log: &Path) -> bool {
    let started = Instant::now();
    let (ok, text) = run_job(label, command, log, JOB_TIMEOUT);
    report(label, ok, started, &text);
    ok
}

/// Runs `command` with its output (stdout and stderr, interleaved as written) going to the
/// file `log`, for at most `timeout` (then it is killed and counts as failed). Whether it
/// succeeded, and the output.
fn run_job(label: &str, mut command: Command, log: &Path, timeout: Duration) -> (bool, String) {
    let started = Instant::now();
    let opened = std::fs::File::create(log)
        .and_then(|out| Ok((out.try_clone()?, out)))
        .map_err(|e| format!("cannot write {}: {e}", log.display()));
    let result = opened.and_then(|(stdout, stderr)| {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(|e| format!("cannot start {label}: {e}"))?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Ok(()),
                Ok(Some(status)) => return Err(format!("exit: {status}")),
                Ok(None) if started.elapsed() > timeout => {
                    // Killed and reaped; an error here only means it ended meanwhile.
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("killed after {timeout:?}"));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Err(e) => return Err(format!("cannot wait for {label}: {e}")),
            }
        }
    });
    let mut text = std::fs::read(log)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    if let Err(why) = &result {
        text.push_str(why);
        text.push('\n');
    }
    (result.is_ok(), text)
}

/// Prints a finished job's output under a header line with its outcome and wall time.
fn report(label: &str, ok: bool, started: Instant, text: &str) {
    let mut out = std::io::stdout().lock();
    use std::io::Write as _;
    // A closed stdout leaves nothing to report to.
    let _ = writeln!(
        out,
        "\n──── {label}: {} ({:.1} s) ────\n{text}",
        if ok { "ok" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.args(["-c", script]);
        command
    }

    #[test]
    fn a_job_keeps_both_streams_and_its_outcome() {
        let dir = std::env::temp_dir().join(format!("xtask-testrun-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (ok, text) = run_job(
            "ok",
            sh("echo out; echo err >&2"),
            &dir.join("ok"),
            JOB_TIMEOUT,
        );
        assert!(ok);
        assert_eq!(text, "out\nerr\n");
        let (ok, text) = run_job(
            "fails",
            sh("echo before; exit 3"),
            &dir.join("f"),
            JOB_TIMEOUT,
        );
        assert!(!ok);
        assert!(
            text.starts_with("before\n") && text.contains("exit"),
            "{text}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A hang is killed at the timeout (here 1 s of a 30 s sleep) with its output so far.
    #[test]
    fn a_hanging_job_is_killed_at_its_timeout() {
        let dir = std::env::temp_dir().join(format!("xtask-testrun-hang-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let started = Instant::now();
        let (ok, text) = run_job(
            "hang",
            sh("echo started; exec sleep 30"),
            &dir.join("hang"),
            Duration::from_secs(1),
        );
        let took = started.elapsed();
        assert!(!ok);
        assert!(
            text.starts_with("started\n") && text.contains("killed after 1s"),
            "{text}"
        );
        assert!(
            took >= Duration::from_secs(1) && took < Duration::from_secs(10),
            "{took:?}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn package_names_come_from_ids() {
        let dir = Path::new("/w/informer-kube");
        assert_eq!(
            package_name("path+file:///w/informer-kube#0.1.0", dir),
            "informer-kube"
        );
        assert_eq!(
            package_name(
                "path+file:///w/benchmarks#informer-benchmarks@0.1.0",
                Path::new("/w/benchmarks")
            ),
            "informer-benchmarks"
        );
    }
}

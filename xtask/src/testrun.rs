//! `cargo xtask ci`'s tests: one build, then the test binaries run side by side.
//!
//! `cargo test` runs one test binary after another. Ours are few (one per crate, plus unit
//! tests) and uneven: informer-kube's spends most of its time waiting on real-time timers and
//! child processes, while the others are short and busy. Here one `cargo build --tests`
//! builds every test binary exactly as `cargo test` would (same features, same artifacts),
//! with the examples the tests start ([`PROGRAMS`]; `cargo test` would also link the other
//! examples, which clippy checks and the tests compile in), and then:
//!
//! - two lanes run the test binaries, integration-test binaries first and informer-kube's
//!   first of all (the longest), each binary as cargo runs it (its package directory as the
//!   working directory, `CARGO`, `CARGO_MANIFEST_DIR` and `CARGO_PKG_NAME` set); a binary
//!   whose tests mostly wait runs more of them at once ([`WAITING`]);
//! - a third lane runs the doc-tests and then `cargo doc` (which need cargo's build lock, free
//!   once the build is done; the test binaries never take it).
//!
//! Each job's output goes to a file under `target/xtask-test-logs/` and is printed whole when
//! it ends, with its wall time, so that lanes do not interleave; a job still running after
//! [`JOB_TIMEOUT`] is killed with every process it started (a hang fails with its output so
//! far, instead of holding CI or leaving a fake API server running). The build's JSON messages
//! are kept in a file named by `INFORMER_WORKSPACE_BUILD` for the tests that start the
//! workspace's programs, so that they do not ask cargo (and wait for its lock) for what was
//! just built.

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

/// Test binaries (package, target) whose tests mostly wait, on real-time windows and child
/// processes, with how many of their tests run at once: more than libtest's default (the
/// cores), since a waiting test uses none. informer-kube's alone uses about half a core over
/// its run on two threads (58 s of CPU in 111 s); on four, the other lanes fill the waits and
/// a clean CI run took 336 s instead of 364 s.
const WAITING: &[(&str, &str, usize)] = &[("informer-kube", "it", 4)];

/// The examples the tests start as programs (informer-kube's process tests: `build("...")`
/// finds them in the build's messages and fails if they are missing), built beside the test
/// binaries. The other examples (informer-kube's informer-demo, configmap-mirror and
/// replica-summary, the benchmarks' decode_memory) are not built here: clippy checks and lints
/// them, `cargo doc` documents them, and informer-kube's test binary compiles the logic of the
/// first three; building them cost about 30 s of CPU per run (with 256 codegen units).
const PROGRAMS: &[&str] = &["leader-elected", "sharded-controller"];

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

/// `cargo build --workspace --all-features --tests` with the [`PROGRAMS`] (every test binary
/// as `cargo test` builds it, the same features, so the doc-tests after it find everything up
/// to date, and the programs the tests start), its messages kept in `messages`; the test
/// binaries, in the order they should start.
fn build(root: &Path, messages: &Path) -> Result<Vec<TestBinary>, String> {
    let mut args = vec!["build", "--workspace", "--all-features", "--tests"];
    for program in PROGRAMS {
        args.extend(["--example", program]);
    }
    let mut command = Command::new(cargo_path());
    without_package_env(&mut command);
    let output = command
        .args(&args)
        .arg("--message-format=json-render-diagnostics")
        .current_dir(root)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "`cargo {}` failed ({})",
            args.join(" "),
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
    if let Some((_, _, threads)) = WAITING
        .iter()
        .find(|(package, target, _)| *package == binary.package && *target == binary.target)
    {
        command.arg(format!("--test-threads={threads}"));
    }
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
                    // The processes it started first (servers, replicas of an example), then
                    // the job itself, killed and reaped; an error here only means it ended
                    // meanwhile.
                    kill_descendants(child.id());
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

/// Kills every process descended from `pid` (not `pid` itself), found through `/proc`: the
/// tree is frozen (SIGSTOP) so that nothing in it can start more processes or be re-parented
/// away while it is read again, then killed (SIGKILL). Best effort, and nothing where there is
/// no `/proc`: the job itself is killed by the caller either way.
fn kill_descendants(pid: u32) {
    for signal in ["-STOP", "-KILL"] {
        let tree = descendants(pid);
        if tree.is_empty() {
            return;
        }
        // A process that ended meanwhile makes `kill` fail for it alone.
        let _ = Command::new("kill")
            .arg(signal)
            .args(tree.iter().map(u32::to_string))
            .stderr(Stdio::null())
            .status();
    }
}

/// The processes descended from `pid`, read from `/proc/<n>/stat` (empty without `/proc`).
fn descendants(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|n| {
            let stat = std::fs::read_to_string(format!("/proc/{n}/stat")).ok()?;
            Some((n, parent_of(&stat)?))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        for &(n, p) in &parents {
            if p == parent && !found.contains(&n) {
                found.push(n);
                frontier.push(n);
            }
        }
    }
    found
}

/// The parent's pid in a `/proc/<n>/stat` line: `pid (comm) state ppid ...`, where `comm`
/// may itself hold spaces and parentheses.
fn parent_of(stat: &str) -> Option<u32> {
    let (_, after) = stat.rsplit_once(')')?;
    after.split_whitespace().nth(1)?.parse().ok()
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

    /// A hang that started processes of its own: they are killed with it, not left running
    /// (a test binary killed while its fake API server and replicas went on).
    #[cfg(target_os = "linux")]
    #[test]
    fn a_hanging_job_is_killed_with_the_processes_it_started() {
        let dir = std::env::temp_dir().join(format!("xtask-testrun-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pids = dir.join("pids");
        let script = format!(
            "sleep 30 & echo $! > {p}; sh -c 'sleep 30 & echo $! >> {p}; wait' & echo started; wait",
            p = pids.display()
        );
        let (ok, text) = run_job(
            "tree",
            sh(&script),
            &dir.join("tree"),
            Duration::from_secs(1),
        );
        assert!(!ok && text.contains("killed after 1s"), "{text}");
        let started: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(started.len(), 2, "{started:?}");
        // Killed processes are reaped by whoever adopted them; give that a moment.
        let deadline = Instant::now() + Duration::from_secs(10);
        let alive = |pid: &u32| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                !stat
                    .rsplit_once(')')
                    .is_some_and(|(_, s)| s.trim_start().starts_with('Z'))
            })
        };
        while started.iter().any(alive) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let left: Vec<&u32> = started.iter().filter(|p| alive(p)).collect();
        assert!(left.is_empty(), "still running: {left:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_stat_line_names_its_parent_even_with_parentheses_in_the_name() {
        assert_eq!(parent_of("42 (sleep) S 7 42 7 0 -1"), Some(7));
        assert_eq!(parent_of("43 (a) b (c) R 9 43 9 0"), Some(9));
        assert_eq!(parent_of("garbage"), None);
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

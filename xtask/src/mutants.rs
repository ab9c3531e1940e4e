//! `cargo xtask mutants`: the mutation check, run by hand (not in CI). It copies the workspace
//! to a scratch directory under the target dir, applies each known-bad patch of
//! `xtask/mutants/*.patch` in turn, and runs against it the chaos test (a bounded seed count),
//! the 2,000-seed soak, and optionally other test targets; then it prints which caught each
//! patch, with the failing seed, the time it took and the test process's peak memory. Every
//! patch must be caught by the chaos test or the soak.
//!
//! A patch starts with a header, then the diff (`git diff` output):
//!
//! ```text
//! Rule: what the patch breaks
//! Covers: the blind spot or SEMANTICS rule whose check must catch it
//!
//! diff --git a/informer/src/process.rs b/informer/src/process.rs
//! ...
//! ```
//!
//! A patch that no longer applies (the code moved on) is reported as such, not as "not
//! caught"; one that does not compile likewise. Builds go to the workspace's target dir (the
//! scratch copy's crates get their own artifacts there; dependencies are shared).
//!
//! The chaos test is `chaos::chaos_convergence` of `informer`'s one integration-test binary
//! (`--test it`), run alone (`--exact`).
//!
//! Options: `--only a,b` (patch file names or stems containing these), `--chaos-seeds N`
//! (default 200), `--soak-seeds N` (default 2000), `--tests pkg:test[:filter],...` (more test
//! targets to run against each patch, e.g. `informer-fifo:delta_fifo`, or the tests of a
//! binary matching a filter, e.g. `informer:it:client_go::` for the ported client-go suites),
//! `--timeout S` (per run, default 600), `--max-memory-mb M` (a run is killed past it, default
//! 6144), `--no-baseline` (skip the run of the unpatched copy), `--report PATH` (also write the
//! table there).

use std::collections::BTreeSet;
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::soak::{CHAOS_PACKAGE, CHAOS_TARGET, CHAOS_TEST, build_test, failed_seeds};

const USAGE: &str = "cargo xtask mutants [--only a,b] [--chaos-seeds N] [--soak-seeds N] \
                     [--tests pkg:test[:filter],...] [--timeout S] [--max-memory-mb M] \
                     [--no-baseline] [--report PATH]";

/// What `mutants` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Options {
    only: Vec<String>,
    chaos_seeds: u64,
    soak_seeds: u64,
    /// `--tests`: (package, test target, filter passed to the test binary).
    tests: Vec<(String, String, Option<String>)>,
    timeout: Duration,
    max_memory_mb: u64,
    baseline: bool,
    report: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options {
        only: Vec::new(),
        chaos_seeds: 200,
        soak_seeds: 2000,
        tests: Vec::new(),
        timeout: Duration::from_secs(600),
        max_memory_mb: 6144,
        baseline: true,
        report: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut text = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => args
                    .next()
                    .cloned()
                    .ok_or_else(|| format!("{name} needs a value; usage: {USAGE}")),
            }
        };
        let number = |t: String| -> Result<u64, String> {
            t.parse()
                .map_err(|e| format!("{name} {t:?}: {e}; usage: {USAGE}"))
        };
        match name {
            "--only" => options.only = text()?.split(',').map(str::to_owned).collect(),
            "--chaos-seeds" => options.chaos_seeds = number(text()?)?.max(1),
            "--soak-seeds" => options.soak_seeds = number(text()?)?,
            "--tests" => {
                for t in text()?.split(',').filter(|t| !t.is_empty()) {
                    // The filter may hold `::` (a module path): split at the first two colons.
                    let mut parts = t.splitn(3, ':');
                    let (Some(package), Some(test)) = (parts.next(), parts.next()) else {
                        return Err(format!(
                            "--tests {t:?}: expected pkg:test[:filter]; {USAGE}"
                        ));
                    };
                    let filter = parts.next().filter(|f| !f.is_empty()).map(str::to_owned);
                    options
                        .tests
                        .push((package.to_owned(), test.to_owned(), filter));
                }
            }
            "--timeout" => options.timeout = Duration::from_secs(number(text()?)?.max(1)),
            "--max-memory-mb" => options.max_memory_mb = number(text()?)?.max(64),
            "--no-baseline" => options.baseline = false,
            "--report" => options.report = Some(PathBuf::from(text()?)),
            other => return Err(format!("unknown mutants option {other:?}; usage: {USAGE}")),
        }
    }
    Ok(options)
}

/// One known-bad patch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Patch {
    /// The file name without `.patch`.
    name: String,
    path: PathBuf,
    rule: String,
    covers: String,
    /// The files it changes (from the `+++ b/...` lines).
    files: Vec<String>,
}

/// The header fields and changed files of a patch's text.
fn parse_patch(name: &str, path: &Path, text: &str) -> Result<Patch, String> {
    let field = |key: &str| {
        text.lines()
            .take_while(|l| !l.starts_with("diff --git") && !l.starts_with("--- "))
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_owned())
    };
    let rule = field("Rule:").ok_or_else(|| format!("{name}: no `Rule:` header"))?;
    let covers = field("Covers:").ok_or_else(|| format!("{name}: no `Covers:` header"))?;
    let files: BTreeSet<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("+++ b/"))
        .map(|f| f.trim().to_owned())
        .collect();
    if files.is_empty() {
        return Err(format!("{name}: no diff (no `+++ b/` line)"));
    }
    Ok(Patch {
        name: name.to_owned(),
        path: path.to_owned(),
        rule,
        covers,
        files: files.into_iter().collect(),
    })
}

/// How one run against a patched copy ended.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// The run failed, naming a seed (or not, for plain test targets).
    Caught {
        seed: Option<u64>,
        secs: f64,
        peak_mb: Option<u64>,
        /// The first line of what the failing seed reported.
        what: String,
    },
    /// The run passed.
    Missed { secs: f64, peak_mb: Option<u64> },
    /// The run was killed: over its time or memory limit.
    Killed { why: String, peak_mb: Option<u64> },
    /// Not run (the patch did not apply or build).
    NotRun,
}

impl Verdict {
    fn cell(&self) -> String {
        match self {
            Self::Caught { seed, secs, .. } => match seed {
                Some(seed) => format!("yes: seed {seed}, {secs:.1}s"),
                None => format!("yes, {secs:.1}s"),
            },
            Self::Missed { secs, .. } => format!("**no** ({secs:.1}s)"),
            Self::Killed { why, .. } => format!("**killed**: {why}"),
            Self::NotRun => "-".to_owned(),
        }
    }

    fn peak(&self) -> Option<u64> {
        match self {
            Self::Caught { peak_mb, .. }
            | Self::Missed { peak_mb, .. }
            | Self::Killed { peak_mb, .. } => *peak_mb,
            Self::NotRun => None,
        }
    }

    fn caught(&self) -> bool {
        matches!(self, Self::Caught { .. })
    }
}

/// What happened to one patch.
struct Row {
    patch: Patch,
    /// `None`: applied and built; else why not.
    problem: Option<String>,
    chaos: Verdict,
    soak: Verdict,
    tests: Vec<(String, Verdict)>,
}

impl Row {
    fn caught(&self) -> bool {
        self.chaos.caught() || self.soak.caught()
    }
}

/// Runs the mutation check.
pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let options = parse(args)?;
    let root = workspace_root()?;
    let target = env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let target = if target.is_absolute() {
        target
    } else {
        root.join(target)
    };
    let scratch = target.join("mutants").join("workspace");
    let patches = load_patches(&root.join("xtask").join("mutants"), &options.only)?;
    if patches.is_empty() {
        return Err("no patch selected in xtask/mutants/".to_owned());
    }
    println!(
        "mutants: {} patch(es); scratch copy in {}",
        patches.len(),
        scratch.display()
    );
    if scratch.exists() {
        fs::remove_dir_all(&scratch).map_err(|e| format!("removing {}: {e}", scratch.display()))?;
    }
    copy_workspace(&root, &scratch)?;

    let env = RunEnv {
        scratch: scratch.clone(),
        target: target.clone(),
        options: options.clone(),
    };
    if options.baseline {
        println!("mutants: baseline (no patch): building and running the chaos test");
        let binary = env.build(CHAOS_PACKAGE, CHAOS_TARGET)?;
        let verdict = env.chaos(&binary, options.chaos_seeds);
        println!("mutants: baseline: chaos {}", verdict.cell());
        if verdict.caught() || matches!(verdict, Verdict::Killed { .. }) {
            return Err(format!(
                "the unpatched copy fails the chaos test ({}); fix that first",
                verdict.cell()
            ));
        }
    }

    let mut rows = Vec::new();
    for patch in patches {
        println!("mutants: {}: {}", patch.name, patch.rule);
        let row = env.try_patch(patch);
        println!(
            "mutants: {}: chaos {} | soak {}{}",
            row.patch.name,
            row.chaos.cell(),
            row.soak.cell(),
            row.problem
                .as_ref()
                .map(|p| format!(" | {p}"))
                .unwrap_or_default()
        );
        rows.push(row);
    }
    let table = render(&rows, &options);
    println!("\n{table}");
    let report = options
        .report
        .clone()
        .unwrap_or_else(|| target.join("mutants").join("report.md"));
    fs::write(&report, &table).map_err(|e| format!("writing {}: {e}", report.display()))?;
    println!("mutants: table written to {}", report.display());
    let missed: Vec<&str> = rows
        .iter()
        .filter(|r| r.problem.is_none() && !r.caught())
        .map(|r| r.patch.name.as_str())
        .collect();
    let broken: Vec<&str> = rows
        .iter()
        .filter(|r| r.problem.is_some())
        .map(|r| r.patch.name.as_str())
        .collect();
    if !broken.is_empty() {
        println!(
            "mutants: {} patch(es) did not apply or build (update them): {broken:?}",
            broken.len()
        );
    }
    if missed.is_empty() {
        Ok(())
    } else {
        Err(format!("{} patch(es) not caught: {missed:?}", missed.len()))
    }
}

fn workspace_root() -> Result<PathBuf, String> {
    let manifest = env::var("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| "xtask has no parent directory".to_owned())
}

fn load_patches(dir: &Path, only: &[String]) -> Result<Vec<Patch>, String> {
    let mut patches = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_none_or(|e| e != "patch") {
            continue;
        }
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !only.is_empty() && !only.iter().any(|o| name.contains(o.as_str())) {
            continue;
        }
        let text =
            fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        patches.push(parse_patch(&name, &path, &text)?);
    }
    patches.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(patches)
}

/// Copies the workspace to `to`, without `target` and `.git`.
fn copy_workspace(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| e.to_string())?;
        let name = entry.file_name();
        if name == "target" || name == ".git" || name == "node_modules" {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(|e| e.to_string())?;
        if kind.is_dir() {
            copy_workspace(&src, &dst)?;
        } else if kind.is_file() {
            fs::copy(&src, &dst)
                .map_err(|e| format!("copying {} to {}: {e}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

struct RunEnv {
    scratch: PathBuf,
    target: PathBuf,
    options: Options,
}

impl RunEnv {
    fn build(&self, package: &str, test: &str) -> Result<String, String> {
        build_test_in(package, test, &self.scratch, &self.target)
    }

    fn git_apply(&self, patch: &Path, extra: &[&str]) -> Result<(), String> {
        // The scratch copy lies inside the repository (under its target dir): without the
        // ceiling, git would find the repository and silently skip every path of the patch
        // (they are outside the current directory).
        let ceiling = self.scratch.parent().unwrap_or(&self.scratch);
        let out = Command::new("git")
            .arg("apply")
            .args(extra)
            .arg(patch)
            .current_dir(&self.scratch)
            .env("GIT_CEILING_DIRECTORIES", ceiling)
            .output()
            .map_err(|e| format!("cannot run git apply: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }

    fn try_patch(&self, patch: Patch) -> Row {
        let mut row = Row {
            patch,
            problem: None,
            chaos: Verdict::NotRun,
            soak: Verdict::NotRun,
            tests: Vec::new(),
        };
        if let Err(why) = self.git_apply(&row.patch.path, &["--check"]) {
            row.problem = Some(format!("does not apply: {}", first_line(&why)));
            return row;
        }
        if let Err(why) = self.git_apply(&row.patch.path, &[]) {
            row.problem = Some(format!("does not apply: {}", first_line(&why)));
            return row;
        }
        let root = workspace_root().unwrap_or_default();
        let changed = row
            .patch
            .files
            .iter()
            .any(|f| fs::read(root.join(f)).ok() != fs::read(self.scratch.join(f)).ok());
        if !changed {
            row.problem = Some("applied, but changed nothing".to_owned());
            return row;
        }
        self.run_patched(&mut row);
        if let Err(why) = self.git_apply(&row.patch.path, &["-R"]) {
            // The next patch would meet this one's changes: restore the files by copying.
            eprintln!(
                "mutants: reverting {} failed ({why}); restoring files",
                row.patch.name
            );
            let root = workspace_root().unwrap_or_default();
            for f in &row.patch.files {
                let _ = fs::copy(root.join(f), self.scratch.join(f));
            }
        }
        row
    }

    fn run_patched(&self, row: &mut Row) {
        let binary = match self.build(CHAOS_PACKAGE, CHAOS_TARGET) {
            Ok(binary) => binary,
            Err(why) => {
                row.problem = Some(format!("does not build: {}", compile_error(&why)));
                return;
            }
        };
        row.chaos = self.chaos(&binary, self.options.chaos_seeds);
        if self.options.soak_seeds > 0 {
            row.soak = self.chaos(&binary, self.options.soak_seeds);
        }
        for (package, test, filter) in &self.options.tests {
            let verdict = match build_test_in(package, test, &self.scratch, &self.target) {
                Ok(binary) => {
                    let mut command = Command::new(&binary);
                    command.args(filter);
                    self.measure(command, false)
                }
                Err(why) => Verdict::Killed {
                    why: format!("does not build: {}", compile_error(&why)),
                    peak_mb: None,
                },
            };
            let name = match filter {
                Some(filter) => format!("{package}:{test}:{filter}"),
                None => format!("{package}:{test}"),
            };
            row.tests.push((name, verdict));
        }
    }

    /// The chaos test over seeds `0..seeds`, stopping at the first failure.
    fn chaos(&self, binary: &str, seeds: u64) -> Verdict {
        let mut command = Command::new(binary);
        command
            .args([CHAOS_TEST, "--exact", "--nocapture"])
            .env("CHAOS_SEEDS", format!("0..{seeds}"))
            .env("CHAOS_FAIL_FAST", "1");
        self.measure(command, true)
    }

    /// Runs `command` to its end or its limits, watching its peak memory.
    fn measure(&self, mut command: Command, seeded: bool) -> Verdict {
        let started = Instant::now();
        let out_path = self.target.join("mutants").join("run.out");
        let Ok(out) = fs::File::create(&out_path) else {
            return Verdict::Killed {
                why: format!("cannot create {}", out_path.display()),
                peak_mb: None,
            };
        };
        let err_path = self.target.join("mutants").join("run.err");
        let Ok(err) = fs::File::create(&err_path) else {
            return Verdict::Killed {
                why: format!("cannot create {}", err_path.display()),
                peak_mb: None,
            };
        };
        let mut child = match command.stdout(out).stderr(err).spawn() {
            Ok(child) => child,
            Err(e) => {
                return Verdict::Killed {
                    why: format!("cannot start: {e}"),
                    peak_mb: None,
                };
            }
        };
        let mut peak_kb = None;
        let status = loop {
            if let Some(kb) = peak_rss_kb(child.id()) {
                peak_kb = Some(peak_kb.unwrap_or(0).max(kb));
            }
            match child.try_wait() {
                Ok(Some(status)) => break Ok(status),
                Ok(None) => {}
                Err(e) => break Err(e.to_string()),
            }
            let rss_mb = current_rss_kb(child.id()).unwrap_or(0) / 1024;
            let why = if started.elapsed() > self.options.timeout {
                Some(format!("over {:?}", self.options.timeout))
            } else if rss_mb > self.options.max_memory_mb {
                Some(format!("over {} MB of memory", self.options.max_memory_mb))
            } else {
                None
            };
            if let Some(why) = why {
                let _ = child.kill();
                let _ = child.wait();
                break Err(why);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let secs = started.elapsed().as_secs_f64();
        let peak_mb = peak_kb.map(|kb| kb.div_ceil(1024));
        match status {
            Err(why) => Verdict::Killed { why, peak_mb },
            Ok(status) if status.success() => Verdict::Missed { secs, peak_mb },
            Ok(_) => {
                let output = fs::read_to_string(&out_path).unwrap_or_default();
                let errors = fs::read_to_string(&err_path).unwrap_or_default();
                let seed = failed_seeds(&output).first().copied();
                if seeded && seed.is_none() {
                    return Verdict::Killed {
                        why: "failed without naming a seed".to_owned(),
                        peak_mb,
                    };
                }
                Verdict::Caught {
                    seed,
                    secs,
                    peak_mb,
                    what: seed.map(|s| failure_of(&errors, s)).unwrap_or_default(),
                }
            }
        }
    }
}

/// Builds `package`'s test target `test` in the scratch workspace `dir`, into `target`.
fn build_test_in(package: &str, test: &str, dir: &Path, target: &Path) -> Result<String, String> {
    build_test(package, test, true, Some((dir, target)))
}

/// The resident set's high-water mark of a process, in KiB (Linux `/proc`).
fn peak_rss_kb(pid: u32) -> Option<u64> {
    proc_status_kb(pid, "VmHWM:")
}

/// The resident set of a process now, in KiB.
fn current_rss_kb(pid: u32) -> Option<u64> {
    proc_status_kb(pid, "VmRSS:")
}

fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// What seed `seed` failed with, from the chaos test's final panic message (`  seed N:
/// what`), shortened.
fn failure_of(stderr: &str, seed: u64) -> String {
    let prefix = format!("  seed {seed}: ");
    let what = stderr
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_default()
        .trim();
    let mut short: String = what.chars().take(90).collect();
    if short.len() < what.len() {
        short.push('…');
    }
    short
}

fn first_line(text: &str) -> String {
    text.lines().next().unwrap_or_default().to_owned()
}

/// The first compiler error of a failed build's log.
fn compile_error(log: &str) -> String {
    log.lines()
        .find(|l| l.starts_with("error"))
        .unwrap_or_else(|| log.lines().next().unwrap_or_default())
        .to_owned()
}

/// The report: one row per patch.
fn render(rows: &[Row], options: &Options) -> String {
    let mut out = format!(
        "| patch | rule it breaks | covers | caught by chaos ({} seeds)? | caught by soak ({} \
         seeds)? | what the first failing seed reported |",
        options.chaos_seeds, options.soak_seeds
    );
    for (name, _) in rows.first().map(|r| r.tests.as_slice()).unwrap_or_default() {
        out.push_str(&format!(" {name}? |"));
    }
    out.push_str(" peak memory |\n|---|---|---|---|---|---|");
    for _ in rows.first().map(|r| r.tests.as_slice()).unwrap_or_default() {
        out.push_str("---|");
    }
    out.push_str("---|\n");
    for row in rows {
        let (chaos, soak) = match &row.problem {
            Some(problem) => (problem.clone(), "-".to_owned()),
            None => (row.chaos.cell(), row.soak.cell()),
        };
        let what = [&row.chaos, &row.soak]
            .iter()
            .find_map(|v| match v {
                Verdict::Caught { what, .. } if !what.is_empty() => Some(what.clone()),
                _ => None,
            })
            .unwrap_or_else(|| "-".to_owned());
        let peak = [&row.chaos, &row.soak]
            .iter()
            .filter_map(|v| v.peak())
            .max()
            .map_or("-".to_owned(), |mb| format!("{mb} MB"));
        out.push_str(&format!(
            "| {} | {} | {} | {chaos} | {soak} | {} |",
            row.patch.name,
            row.patch.rule.replace('|', "/"),
            row.patch.covers.replace('|', "/"),
            what.replace('|', "/")
        ));
        for (_, verdict) in &row.tests {
            out.push_str(&format!(" {} |", verdict.cell()));
        }
        out.push_str(&format!(" {peak} |\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn options_parse() {
        let o = parse(&args(
            "--only a,b --chaos-seeds 50 --tests x:y,z:w:m::n,v:u: --no-baseline",
        ))
        .unwrap();
        assert_eq!(o.only, ["a", "b"]);
        assert_eq!(o.chaos_seeds, 50);
        assert_eq!(o.soak_seeds, 2000);
        assert_eq!(
            o.tests,
            [
                ("x".to_owned(), "y".to_owned(), None),
                ("z".to_owned(), "w".to_owned(), Some("m::n".to_owned())),
                ("v".to_owned(), "u".to_owned(), None)
            ]
        );
        assert!(!o.baseline);
        assert!(parse(&args("--tests nocolon")).is_err());
        assert!(parse(&args("--bogus")).is_err());
    }

    #[test]
    fn patch_headers_and_files_are_read() {
        let text = "Rule: tombstones for queued keys\nCovers: blind spot 1\n\ndiff --git a/x/y.rs \
                    b/x/y.rs\n--- a/x/y.rs\n+++ b/x/y.rs\n@@ -1 +1 @@\n-a\n+b\n";
        let p = parse_patch("01-x", Path::new("01-x.patch"), text).unwrap();
        assert_eq!(p.rule, "tombstones for queued keys");
        assert_eq!(p.covers, "blind spot 1");
        assert_eq!(p.files, ["x/y.rs"]);
        assert!(parse_patch("n", Path::new("n"), "diff --git a/x b/x\n+++ b/x\n").is_err());
        assert!(parse_patch("n", Path::new("n"), "Rule: r\nCovers: c\n").is_err());
    }

    #[test]
    fn verdicts_render_as_cells() {
        let caught = Verdict::Caught {
            seed: Some(7),
            secs: 1.25,
            peak_mb: Some(40),
            what: "livelock".to_owned(),
        };
        assert_eq!(caught.cell(), "yes: seed 7, 1.2s");
        assert!(caught.caught());
        assert_eq!(
            Verdict::Missed {
                secs: 3.0,
                peak_mb: None
            }
            .cell(),
            "**no** (3.0s)"
        );
    }

    #[test]
    fn the_failure_is_read_from_the_panic_message() {
        let stderr = "thread panicked:\n2 of 9 chaos seeds failed\n  seed 3: transform \
                      skipped: the cache's ns/a kept the label\n  seed 40: other\n";
        assert_eq!(
            failure_of(stderr, 3),
            "transform skipped: the cache's ns/a kept the label"
        );
        assert_eq!(failure_of(stderr, 5), "");
    }

    #[test]
    fn the_shipped_patches_have_headers() {
        let dir = workspace_root().unwrap().join("xtask").join("mutants");
        let patches = load_patches(&dir, &[]).unwrap();
        assert!(patches.len() >= 12, "{} patches", patches.len());
    }
}

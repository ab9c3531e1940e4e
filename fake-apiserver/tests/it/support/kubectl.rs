//! Running kubectl against the fake API server: finding the program, a kubeconfig and a fresh
//! discovery cache per test, running commands with a guard against hangs, and reading the
//! output of long-running commands (`get -w`) line by line.
//!
//! kubectl is `$KUBECTL` or `kubectl` on `PATH`. When it is missing, tests print a notice and
//! pass as skipped, except under `CI=true`, where a missing kubectl is a failure.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use fake_apiserver::http::FakeHttpServer;
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use super::{KUBECTL_GUARD, find_program, unavailable};

/// The kubectl program, `None` (after a notice) when it is missing outside CI.
pub fn find(test: &str) -> Option<PathBuf> {
    std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .or_else(|| find_program("kubectl"))
        .or_else(|| {
            unavailable(
                test,
                "kubectl not found (set KUBECTL or put kubectl on PATH)",
            )
        })
}

/// kubectl bound to one server: its own kubeconfig and discovery cache directory.
pub struct Kubectl {
    program: PathBuf,
    dir: TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    /// kubectl for an in-process HTTP server, with `namespace` as the default namespace.
    pub fn for_server(test: &str, http: &FakeHttpServer, namespace: Option<&str>) -> Option<Self> {
        let program = find(test)?;
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        http.write_kubeconfig(&kubeconfig, namespace).unwrap();
        Some(Self {
            program,
            dir,
            kubeconfig,
        })
    }

    /// kubectl for a kubeconfig written by someone else (the `fake-apiserver` binary).
    pub fn for_kubeconfig(test: &str, kubeconfig: &Path) -> Option<Self> {
        let program = find(test)?;
        let dir = tempfile::tempdir().unwrap();
        Some(Self {
            program,
            dir,
            kubeconfig: kubeconfig.to_owned(),
        })
    }

    /// A command with the kubeconfig and a fresh cache directory (kubectl caches discovery
    /// per host, and every test server has a new port).
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    /// Runs a command to its end.
    pub async fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).output();
        tokio::time::timeout(KUBECTL_GUARD, out)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} hung"))
            .unwrap_or_else(|e| panic!("cannot run kubectl {args:?}: {e}"))
    }

    /// Runs a command to its end with `input` on its standard input.
    pub async fn run_with_stdin(&self, args: &[&str], input: &[u8]) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start kubectl {args:?}: {e}"));
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
        tokio::time::timeout(KUBECTL_GUARD, child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} hung"))
            .unwrap_or_else(|e| panic!("cannot run kubectl {args:?}: {e}"))
    }

    /// Runs a command that must succeed; returns its stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(
            out.status.success(),
            "kubectl {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Writes a manifest file into the test's directory.
    pub fn manifest(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    /// Starts a long-running command (`get -w`), reading its stdout line by line.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start kubectl {args:?}: {e}"));
        let stdout = child.stdout.take().unwrap();
        Running {
            child,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    /// The client's minor version (`32` for kubectl 1.32).
    pub async fn client_minor_version(&self) -> Option<u32> {
        let out = self.run(&["version", "--client", "-o", "json"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        v["clientVersion"]["minor"]
            .as_str()?
            .trim_end_matches('+')
            .parse()
            .ok()
    }
}

/// A running kubectl (killed when dropped).
pub struct Running {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    /// Every line read so far.
    pub seen: Vec<String>,
}

impl Running {
    /// Reads lines until one contains every needle; returns it.
    pub async fn line_with(&mut self, needles: &[&str]) -> String {
        let read = async {
            loop {
                match self.lines.next_line().await.unwrap() {
                    Some(line) => {
                        self.seen.push(line.clone());
                        if needles.iter().all(|n| line.contains(n)) {
                            return line;
                        }
                    }
                    None => panic!(
                        "kubectl exited before printing {needles:?}; it printed {:?}",
                        self.seen
                    ),
                }
            }
        };
        match tokio::time::timeout(KUBECTL_GUARD, read).await {
            Ok(line) => line,
            Err(_) => panic!(
                "kubectl did not print {needles:?} in time; it printed {:?}",
                self.seen
            ),
        }
    }

    /// Stops the command.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

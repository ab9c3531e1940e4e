//! A contender process seen from the orchestrator: commands in, reports out, memory and CPU
//! read from `/proc`, and SIGSTOP/SIGCONT to hold it while a backlog builds up.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::contender::ContenderKind;
use crate::error::HarnessError;
use crate::procfs::{self, Memory};
use crate::protocol::{Command, Report};

/// A running `bench-contender`, killed when dropped.
pub struct ContenderProcess {
    kind: ContenderKind,
    child: Child,
    stdin: Option<ChildStdin>,
    reports: mpsc::Receiver<Report>,
}

impl ContenderProcess {
    /// Starts `exe --contender <kind> --url <url>` and waits for [`Report::Ready`].
    pub fn spawn(exe: &Path, kind: ContenderKind, url: &str) -> Result<Self, HarnessError> {
        let mut child = Process::new(exe)
            .args(["--contender", kind.name(), "--url", url])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| HarnessError::io(format!("starting {}", exe.display()), e))?;
        let (stdin, stdout) = match (child.stdin.take(), child.stdout.take()) {
            (Some(i), Some(o)) => (i, o),
            _ => {
                let _ = child.kill();
                return Err(HarnessError::Check(
                    "the contender's stdio is not piped".into(),
                ));
            }
        };
        let (tx, reports) = mpsc::channel();
        let name = kind.name();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Report>(&line) {
                    Ok(report) => {
                        if tx.send(report).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("[{name}] {line}"),
                }
            }
        });
        let mut process = Self {
            kind,
            child,
            stdin: Some(stdin),
            reports,
        };
        match process.next(Duration::from_secs(60))? {
            Report::Ready { .. } => Ok(process),
            other => Err(process.unexpected("ready", &other)),
        }
    }

    /// Which contender.
    pub fn kind(&self) -> ContenderKind {
        self.kind
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn error(&self, message: impl Into<String>) -> HarnessError {
        HarnessError::Contender {
            contender: self.kind.name().to_owned(),
            message: message.into(),
        }
    }

    /// The error for a report that is not the one awaited.
    pub fn unexpected(&self, awaited: &str, got: &Report) -> HarnessError {
        match got {
            Report::Failed { message } => self.error(format!("failed while {awaited}: {message}")),
            other => self.error(format!("awaited {awaited}, got {other:?}")),
        }
    }

    /// Sends a command.
    pub fn send(&mut self, command: &Command) -> Result<(), HarnessError> {
        let line = serde_json::to_string(command)
            .map_err(|e| self.error(format!("encoding {command:?}: {e}")))?;
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(self.error("stdin already closed"));
        };
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .map_err(|e| HarnessError::io(format!("sending {line} to {}", self.kind), e))
    }

    /// The next report, within `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Result<Report, HarnessError> {
        match self.reports.recv_timeout(timeout) {
            Ok(report) => Ok(report),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                Err(self.error(format!("no report within {timeout:?}")))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                Err(self.error(format!("exited ({status:?})")))
            }
        }
    }

    /// Sends `command` and returns the next report.
    pub fn ask(&mut self, command: &Command, timeout: Duration) -> Result<Report, HarnessError> {
        self.send(command)?;
        self.next(timeout)
    }

    /// Its resident memory now and its peak.
    pub fn memory(&self) -> Result<Memory, HarnessError> {
        Ok(procfs::memory(self.pid())?)
    }

    /// The CPU time it used so far.
    pub fn cpu_time(&self) -> Result<Duration, HarnessError> {
        Ok(procfs::cpu_time(self.pid())?)
    }

    /// Sends a signal (`STOP`, `CONT`) with `kill(1)`.
    pub fn signal(&self, signal: &str) -> Result<(), HarnessError> {
        let status = Process::new("kill")
            .args([format!("-{signal}"), self.pid().to_string()])
            .status()
            .map_err(|e| HarnessError::io(format!("kill -{signal} {}", self.pid()), e))?;
        if status.success() {
            Ok(())
        } else {
            Err(self.error(format!("kill -{signal} failed ({status})")))
        }
    }

    /// Asks it to quit and waits (killing it after `timeout`).
    pub fn quit(mut self, timeout: Duration) -> Result<(), HarnessError> {
        let _ = self.send(&Command::Quit);
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return Ok(()),
                Ok(None) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Ok(());
                }
            }
        }
    }
}

impl Drop for ContenderProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            // A process held with SIGSTOP must be continued to die of SIGKILL promptly.
            let _ = self.signal("CONT");
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

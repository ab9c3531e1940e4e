//! What Linux says about a process: resident memory (`VmRSS`), its peak (`VmHWM`) and how to
//! reset that peak, CPU time, and a sampler that polls `VmRSS` for peaks between two reads.
//!
//! Everything reads `/proc/<pid>/…`; on other systems the reads fail with
//! [`ProcError`], and the harness refuses to run.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A `/proc` read or write that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProcError {
    /// The file could not be read or written.
    #[error("accessing {path}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file did not have the expected field.
    #[error("{path} has no usable {field} field")]
    Missing {
        /// The file.
        path: PathBuf,
        /// The field.
        field: &'static str,
    },
}

/// Resident memory of a process, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss: u64,
    /// `VmHWM`: the peak resident since start or since the last [`reset_peak`].
    pub peak: u64,
}

fn read(path: PathBuf) -> Result<(PathBuf, String), ProcError> {
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok((path, text)),
        Err(source) => Err(ProcError::Io { path, source }),
    }
}

/// The `kB` value of `field` (`VmRSS:`) in a `/proc/<pid>/status` text, in bytes.
pub fn status_field(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map(|kb| kb * 1024)
}

/// `VmRSS` and `VmHWM` of `pid`.
pub fn memory(pid: u32) -> Result<Memory, ProcError> {
    let (path, status) = read(PathBuf::from(format!("/proc/{pid}/status")))?;
    let rss = status_field(&status, "VmRSS:").ok_or_else(|| ProcError::Missing {
        path: path.clone(),
        field: "VmRSS",
    })?;
    let peak = status_field(&status, "VmHWM:").ok_or(ProcError::Missing {
        path,
        field: "VmHWM",
    })?;
    Ok(Memory { rss, peak })
}

/// Resets the `VmHWM` of `pid` to its current `VmRSS` (`echo 5 > /proc/<pid>/clear_refs`).
pub fn reset_peak(pid: u32) -> Result<(), ProcError> {
    let path = PathBuf::from(format!("/proc/{pid}/clear_refs"));
    std::fs::write(&path, "5").map_err(|source| ProcError::Io { path, source })
}

/// User plus system CPU time of `pid` (all its threads) so far.
pub fn cpu_time(pid: u32) -> Result<Duration, ProcError> {
    let (path, stat) = read(PathBuf::from(format!("/proc/{pid}/stat")))?;
    let ticks = stat_cpu_ticks(&stat).ok_or(ProcError::Missing {
        path,
        field: "utime/stime",
    })?;
    Ok(Duration::from_secs_f64(
        ticks as f64 / clock_ticks_per_second(),
    ))
}

/// `utime + stime` (fields 14 and 15) of a `/proc/<pid>/stat` line, in clock ticks. The
/// command name (field 2) may hold spaces, so fields are counted after its closing `)`.
pub fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `after_name` starts at field 3 (state): utime is field 14, index 11 here.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// `getconf CLK_TCK`, 100 when it cannot be asked (the value of every Linux port in use).
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|t| *t > 0.0)
            .unwrap_or(100.0)
    })
}

/// Polls the `VmRSS` of a process on a thread of its own and keeps the largest value seen:
/// a second witness of peaks besides `VmHWM`.
#[derive(Debug)]
pub struct RssSampler {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl RssSampler {
    /// Starts polling `pid` every `every`.
    pub fn start(pid: u32, every: Duration) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let max = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, max) = (Arc::clone(&stop), Arc::clone(&max));
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Ok(m) = memory(pid) {
                        max.fetch_max(m.rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(every);
                }
            })
        };
        Self {
            stop,
            max,
            thread: Some(thread),
        }
    }

    /// Stops polling; the largest `VmRSS` seen, in bytes.
    pub fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields_are_bytes() {
        let status = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_field(status, "VmRSS:"), Some(1024 * 1024));
        assert_eq!(status_field(status, "VmHWM:"), Some(2048 * 1024));
        assert_eq!(status_field(status, "VmSwap:"), None);
    }

    #[test]
    fn cpu_ticks_skip_command_names_with_spaces() {
        let stat = "42 (bench contender) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(stat_cpu_ticks(stat), Some(300));
        assert_eq!(stat_cpu_ticks("garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_can_be_read() {
        let pid = std::process::id();
        let m = memory(pid).unwrap();
        assert!(m.rss > 0 && m.peak >= m.rss / 2, "{m:?}");
        assert!(cpu_time(pid).is_ok());
        let sampler = RssSampler::start(pid, Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(sampler.finish() > 0);
    }
}

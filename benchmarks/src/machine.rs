//! The machine a run happened on, and its date, for the report.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// What the report says about the machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model (`/proc/cpuinfo`).
    pub cpu: String,
    /// Logical cores available to the process.
    pub cores: usize,
    /// Total memory, bytes (`/proc/meminfo`).
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// `rustc --version`.
    pub rustc: String,
    /// The global allocator every process of the run used (feature `mimalloc`, or the system
    /// allocator); runs recorded before this field existed used the system allocator.
    #[serde(default = "system_allocator")]
    pub allocator: String,
}

/// How the report names the system allocator.
pub const SYSTEM_ALLOCATOR: &str = "the system allocator (glibc malloc)";

fn system_allocator() -> String {
    SYSTEM_ALLOCATOR.to_owned()
}

/// The global allocator of this build's benchmark programs (the orchestrator and the
/// contenders are built together, with the same features).
pub fn allocator() -> &'static str {
    if cfg!(feature = "mimalloc") {
        "mimalloc (the `mimalloc` feature, `cargo xtask bench --allocator mimalloc`)"
    } else {
        SYSTEM_ALLOCATOR
    }
}

impl Machine {
    /// Describes this machine; unknown parts say `unknown`.
    pub fn describe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map_or_else(|| "unknown".to_owned(), |(_, v)| v.trim().to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_bytes = crate::procfs::status_field(&meminfo, "MemTotal:").unwrap_or(0);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
        let rustc = std::process::Command::new(rustc)
            .arg("--version")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map_or_else(|| "unknown".to_owned(), |s| s.trim().to_owned());
        Self {
            cpu,
            cores: std::thread::available_parallelism().map_or(0, usize::from),
            memory_bytes,
            kernel,
            rustc,
            allocator: allocator().to_owned(),
        }
    }
}

/// Now as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    utc_timestamp(secs)
}

/// Seconds since the Unix epoch as `YYYY-MM-DD HH:MM UTC` (proleptic Gregorian calendar).
pub fn utc_timestamp(secs: u64) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Days to civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3_600,
        rest % 3_600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_civil_dates() {
        assert_eq!(utc_timestamp(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_timestamp(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(
            utc_timestamp(1_767_225_600 + 3_600 + 120),
            "2026-01-01 01:02 UTC"
        );
    }

    #[test]
    fn this_machine_is_described() {
        let m = Machine::describe();
        assert!(m.cores > 0);
        assert!(!m.rustc.is_empty());
    }
}

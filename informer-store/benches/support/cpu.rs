//! CPU time of the calling thread, for the store's benches (Linux: `/proc/thread-self/schedstat`,
//! updated at scheduler ticks: meaningful over long passes only).

/// Nanoseconds this thread has run on a CPU (0 where `/proc` cannot tell).
pub fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

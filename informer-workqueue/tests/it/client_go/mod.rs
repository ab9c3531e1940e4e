//! client-go's own `util/workqueue` tests, ported scenario by scenario: one module per upstream
//! file (`queue_test.go`, `delaying_queue_test.go`, `rate_limiting_queue_test.go`,
//! `default_rate_limiters_test.go`), plus [`real_time`]: the queue's timers measured on a
//! multi-thread runtime in real time, with tolerances.
//!
//! Each port is named after the upstream test (its name without the `Test` prefix, in
//! snake_case; table cases are tests of a module named after the table's test) and says which
//! one in its first doc line. Upstream drives its delaying queue with a fake clock; ours runs on
//! tokio's clock, paused (`start_paused`) and moved with `tokio::time::advance`.
//! `docs/parity/cache-workqueue.md` lists every case and every deviation.

mod default_rate_limiters;
mod delaying_queue;
mod queue;
mod rate_limiting_queue;
mod real_time;

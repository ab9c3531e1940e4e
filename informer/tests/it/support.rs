//! The fixtures every suite of this binary shares: durations, the hang guard, the namespace and
//! resource the scenarios use, and the configurations several suites build the same way. Each
//! was defined again in several test files before they became one binary.
//!
//! `chaos_support` does not use this module: `informer-kube`'s HTTP chaos test includes it by
//! path, into a crate that has no `support`.

use std::time::Duration;

use informer::HandlerOptions;
use informer::reflector::{ListWatchConfig, ReflectorConfig, WatchListMode};
use informer_testing::JsonObject;

/// Far above anything a scenario needs in virtual time: a hang fails instead of blocking (a
/// guard, not a timing assertion).
pub const GUARD: Duration = Duration::from_secs(600);

/// The namespace the scenarios write in.
pub const NS: &str = "ns";

/// The resource the scenarios write and watch.
pub const RESOURCE: &str = "configmaps";

/// Whole seconds.
pub fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Milliseconds.
pub fn millis(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A reflector configuration with a fixed seed, paginated list then watch (client-go with the
/// `WatchListClient` gate off; the default streams the initial list first since issue 10, and
/// the streaming tests set it explicitly). Named "test".
pub fn list_watch_config() -> ReflectorConfig<JsonObject> {
    ReflectorConfig {
        list_watch: ListWatchConfig {
            watch_list: WatchListMode::Off,
            ..ListWatchConfig::default()
        },
        name: "test".into(),
        seed: Some(7),
        ..ReflectorConfig::default()
    }
}

/// The options of a handler `name` resynced every `period`.
pub fn with_resync(name: &str, period: Duration) -> HandlerOptions {
    HandlerOptions {
        resync_period: Some(period),
        ..HandlerOptions::named(name)
    }
}

/// The tests of this crate share one process (they had one per file before), and libtest runs
/// them side by side. The chaos test keeps every CPU busy while it runs (one worker per CPU);
/// the tests that bound real elapsed time (`client_go::real_time`: timers late by at most a few
/// hundred milliseconds) must not run then, or scheduling delays grow past their tolerances.
/// Those take this lock shared ([`timing_sensitive`]), the chaos test exclusively
/// ([`every_cpu`]). It does not poison: a failing test releases it as it unwinds.
static CPUS: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Held for the whole of a test whose assertions bound real elapsed time: waits while a test
/// holding [`every_cpu`] runs.
pub async fn timing_sensitive() -> tokio::sync::RwLockReadGuard<'static, ()> {
    CPUS.read().await
}

/// Held for the whole of a test that keeps every CPU busy (a plain `#[test]`, not async):
/// waits until no [`timing_sensitive`] test runs, and keeps new ones waiting.
pub fn every_cpu() -> tokio::sync::RwLockWriteGuard<'static, ()> {
    CPUS.blocking_write()
}

/// Makes `subscriber` the default of this thread until the guard drops, as
/// `tracing::subscriber::set_default` does, and makes sure it sees every event of this thread
/// even while other tests of the process emit events on threads without a subscriber.
///
/// With exactly one `Dispatch` registered in the process, tracing-core (0.1.36) computes the
/// interest of a callsite hit for the first time from the default of the thread hitting it: a
/// test without a subscriber caches `Interest::never` there for every thread, and the capturing
/// test loses those events (tokio-rs/tracing#3611). With two registered, it combines them.
/// So a second one, which records nothing, is registered first and kept for the process's life.
pub fn set_scoped_subscriber(
    subscriber: impl tracing::Subscriber + Send + Sync + 'static,
) -> tracing::subscriber::DefaultGuard {
    static SECOND: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
    SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
    tracing::subscriber::set_default(subscriber)
}

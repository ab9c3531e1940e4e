//! The support of the fake API server's tests, declared once for the whole binary: the hang
//! guards, the fixtures the engine suites (`fake_*`) share, and how a test gives up on a
//! missing program; then
//! - [`http`]: start the HTTP front end (or the `fake-apiserver` binary), talk to it with
//!   reqwest, read watch streams line by line;
//! - [`kubectl`]: run kubectl against a server, with its own kubeconfig and discovery cache;
//! - [`webhook`]: an HTTPS admission webhook server answering as the test says.
//!
//! Each of these was defined again in several test files before they became one binary.

#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
pub mod kubectl;
#[cfg(feature = "http")]
pub mod webhook;

#[cfg(feature = "http")]
use std::io::Write as _;
#[cfg(feature = "http")]
use std::path::PathBuf;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, FakeListerWatcher};
use futures::StreamExt;
use informer_core::{Error, Object, WatchEvent, WatchOptions, WatchStream};
use informer_testing::JsonObject;

/// The longest a wait in paused time may take before the test fails as hung: ten virtual
/// minutes, far above anything a scenario needs (a guard, not a timing assertion).
pub const VIRTUAL_GUARD: Duration = Duration::from_secs(600);

/// The longest any single wait on a socket or process may take before the test fails as hung.
/// Time is real there; nothing asserts on it.
#[cfg(feature = "http")]
pub const GUARD: Duration = Duration::from_secs(60);

/// The longest one kubectl command may take before the test fails as hung.
#[cfg(feature = "http")]
pub const KUBECTL_GUARD: Duration = Duration::from_secs(120);

/// A pod (a namespaced object) for the engine.
pub fn pod(ns: &str, name: &str) -> JsonObject {
    JsonObject::new(Some(ns), name)
}

/// The in-process `ListerWatcher` of pods, in namespace `ns` or in all.
pub fn lw(server: &FakeApiServer, ns: Option<&str>) -> FakeListerWatcher<JsonObject> {
    server.lister_watcher("pods", ns).unwrap()
}

/// Watch options from resourceVersion `rv`.
pub fn from(rv: impl ToString) -> WatchOptions {
    WatchOptions {
        resource_version: Some(rv.to_string()),
        ..WatchOptions::default()
    }
}

/// The next item of a watch, failing the test (instead of hanging) if none comes within
/// [`VIRTUAL_GUARD`].
pub async fn next<K: Object>(stream: &mut WatchStream<K>) -> Option<Result<WatchEvent<K>, Error>> {
    tokio::time::timeout(VIRTUAL_GUARD, stream.next())
        .await
        .expect("no watch event within 10 minutes")
}

/// The next event of a watch, which must neither end nor fail.
pub async fn next_event(stream: &mut WatchStream<JsonObject>) -> WatchEvent<JsonObject> {
    next(stream)
        .await
        .expect("stream ended")
        .expect("error item")
}

/// `name` on `PATH`.
#[cfg(feature = "http")]
pub fn find_program(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Gives up on a missing prerequisite (a program, a package registry): a failure under
/// `CI=true`, otherwise a printed notice (the test then passes as skipped).
#[cfg(feature = "http")]
pub fn unavailable<T>(test: &str, why: &str) -> Option<T> {
    let in_ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
    assert!(!in_ci, "{test}: required under CI=true: {why}");
    // Written to the stderr handle directly: libtest captures `eprintln!` of passing tests,
    // and this notice must be seen.
    let _ = writeln!(std::io::stderr(), "NOTICE: {test} skipped: {why}");
    None
}

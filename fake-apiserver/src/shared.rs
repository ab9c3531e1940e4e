//! What the server handle, its fault handle and every open watch share: the settings
//! ([`ServerConfig`]), the store, the scripted faults, the open watches' mailboxes, the
//! request log. A leaf under the modules that act on it (server, faults, watch).

use std::sync::Weak;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;
use tokio::sync::watch;

use super::RequestRecord;
use super::fault_state::{FaultState, Scope};
use super::mailbox::{Injection, WatcherHandle};
use super::store::{HistoryConfig, Store};

/// The default of [`ServerConfig::history_max_bytes`]: 256 MiB.
pub const DEFAULT_HISTORY_MAX_BYTES: usize = 256 << 20;

/// Settings of a [`FakeApiServer`](crate::FakeApiServer). `Default` gives a real server's defaults.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// How much history is kept (the watch cache's window).
    pub history: HistoryConfig,
    /// A bound on the bytes the history of every resource together accounts for (the
    /// serialized size of the object version each event carries), default 256 MiB. Beyond
    /// it the oldest events are dropped, across resources, whatever [`HistoryConfig`] says
    /// (watchers that had not read them get `ERROR` 410, as for the other bounds); the newest
    /// event of the resource just written is always kept. Without it, a few huge objects
    /// written and deleted in a loop keep every version alive until the events age out.
    /// (A field here rather than in [`HistoryConfig`], which other crates build field by
    /// field.)
    pub history_max_bytes: usize,
    /// How often watchers that asked for bookmarks get one (the real server: about a minute).
    pub bookmark_interval: Duration,
    /// How long a request for a resourceVersion the server has not reached waits before
    /// answering 504 `ResourceVersionTooLarge` (the real server: 3 s).
    pub too_large_wait: Duration,
    /// The resourceVersion before the first write (the first write gets this plus one).
    pub initial_resource_version: u64,
    /// Whether creates through the request layer (HTTP, [`FakeApiServer::create_at`](crate::FakeApiServer::create_at),
    /// [`FakeApiServer::apply_at`](crate::FakeApiServer::apply_at)) need an existing Namespace object (404 NotFound
    /// otherwise), as the real server's NamespaceLifecycle admission does. On by default;
    /// turn it off to let clients create objects in namespaces that were never created.
    /// The test's direct writes ([`FakeApiServer::create`](crate::FakeApiServer::create), seeding) never need one.
    pub require_namespaces: bool,
    /// Seed of the random generator for UIDs and `generateName` suffixes.
    pub seed: u64,
    /// Wall-clock time at start, for `creationTimestamp` (later timestamps advance with tokio
    /// time). `None`: the system clock.
    pub wall_clock_start: Option<SystemTime>,
    /// Panic when the last handle to the server is dropped while scripted faults are unused
    /// (the tokio-test style of strict mock). Off by default; see
    /// [`Faults::assert_all_used`](crate::Faults::assert_all_used) for an explicit check.
    pub strict_faults: bool,
    /// Server-side sharded list and watch (KEP-5866, the `ShardedListAndWatch` gate): lists
    /// and watches honour `shardSelector` (400 for a malformed one) and lists echo it in
    /// `metadata.shardInfo.selector`. Off, the server behaves like one without the gate:
    /// the parameter is ignored (malformed or not), every object is sent, no echo. On by
    /// default, as the server's other features (streaming lists) are: the fake server is
    /// where clients of the feature are tested, and a client that does not send the
    /// parameter sees no difference. Change it at run time with
    /// [`FakeApiServer::set_sharded_list_and_watch`](crate::FakeApiServer::set_sharded_list_and_watch)
    /// (admin API `PUT /_fake/sharded-list-and-watch`; binary:
    /// `--disable-sharded-list-and-watch`).
    pub sharded_list_and_watch: bool,
    /// Whether the cluster's collectors run: deletes cascade to dependents (objects whose
    /// `ownerReferences` name the deleted one) as the garbage collector cascades them,
    /// following the delete's [`PropagationPolicy`](crate::PropagationPolicy), and a deleted
    /// namespace has its content deleted before it goes, as the namespace controller does.
    /// On by default; off, nothing is collected, every delete behaves as `Background`
    /// without a collector and a namespace is removed at once, its content left (binary:
    /// `--disable-garbage-collection`).
    pub garbage_collection: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            history: HistoryConfig::default(),
            history_max_bytes: DEFAULT_HISTORY_MAX_BYTES,
            bookmark_interval: Duration::from_secs(60),
            too_large_wait: Duration::from_secs(3),
            initial_resource_version: 0,
            require_namespaces: true,
            seed: 0x5eed,
            wall_clock_start: None,
            strict_faults: false,
            sharded_list_and_watch: true,
            garbage_collection: true,
        }
    }
}

/// State shared by the server handle, its fault handle and every open watch.
pub(crate) struct Shared {
    pub config: ServerConfig,
    pub store: Mutex<Store>,
    pub faults: Mutex<FaultState>,
    /// Bumped whenever fault settings change (watchers re-read their delay).
    pub fault_generation: AtomicU64,
    pub watchers: Mutex<Vec<Weak<WatcherHandle>>>,
    pub log: Mutex<Vec<RequestRecord>>,
    /// Bumped on every request recorded and every watch opened or closed.
    pub activity: watch::Sender<u64>,
    pub bookmark_interval: Mutex<Duration>,
    /// [`ServerConfig::sharded_list_and_watch`], as changed since.
    pub sharded_list_and_watch: AtomicBool,
    /// What containers printed (`pods/<name>/log`). Locked after `store` when both are.
    pub pod_logs: Mutex<crate::logs::PodLogs>,
    /// What runs the commands of `pods/<name>/exec` (`pod_exec.rs`), if a test set it.
    pub exec_handler: Mutex<Option<crate::exec::ExecHandler>>,
    /// Where calls to a webhook's `clientConfig.service` go (`service_routes.rs`): the
    /// service's namespace, name and port → the address dialed.
    #[cfg(feature = "http")]
    pub service_routes: Mutex<std::collections::HashMap<(String, String, u16), String>>,
}

impl Shared {
    /// Pushes an injection into every open watcher in scope; returns how many got one.
    pub(crate) fn inject(
        &self,
        scope: &Scope,
        make: impl Fn(&WatcherHandle) -> Option<Injection>,
    ) -> usize {
        let mut watchers = self.watchers.lock();
        watchers.retain(|w| w.strong_count() > 0);
        let mut n = 0;
        for w in watchers.iter().filter_map(Weak::upgrade) {
            if w.is_open()
                && scope.covers(&w.def)
                && let Some(injection) = make(&w)
            {
                w.push(injection);
                n += 1;
            }
        }
        n
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.config.strict_faults && !std::thread::panicking() {
            let pending = self.faults.get_mut().pending();
            assert!(
                pending.is_empty(),
                "fake API server dropped with unused scripted faults: {}",
                pending
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
    }
}

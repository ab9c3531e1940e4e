//! kube-runtime 5: `reflector(writer, watcher(api, config).default_backoff())`, as its
//! documentation shows, the stream consumed by one task that records stamped objects.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube_client::{Api, Client};
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::watcher::{self, Event};
use kube_runtime::{WatchStreamExt as _, reflector as reflect, watcher as watch};
use tokio::task::JoinHandle;

use super::{Progress, Recorder};

#[derive(Default)]
struct Shared {
    init_done: AtomicU64,
    expired_seen: AtomicBool,
}

pub(super) struct Run {
    reader: Store<Pod>,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

/// Whether a watcher error is a 410 (an `ERROR` event, or an HTTP answer).
fn is_expired(error: &watcher::Error) -> bool {
    match error {
        watcher::Error::WatchError(status) => status.code == 410,
        watcher::Error::WatchStartFailed(kube_client::Error::Api(status))
        | watcher::Error::InitialListFailed(kube_client::Error::Api(status))
        | watcher::Error::WatchFailed(kube_client::Error::Api(status)) => status.code == 410,
        _ => false,
    }
}

impl Run {
    /// Starts the reflector over all pods, with the default watcher configuration or with
    /// streaming lists.
    pub(super) fn start(client: Client, recorder: Arc<Recorder>, streaming: bool) -> Self {
        let api = Api::<Pod>::all(client);
        let config = if streaming {
            watcher::Config::default().streaming_lists()
        } else {
            watcher::Config::default()
        };
        let (reader, writer) = reflector::store::<Pod>();
        let shared = Arc::new(Shared::default());
        let stream = reflect(writer, watch(api, config).default_backoff());
        let task = {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Some(event) = stream.next().await {
                    match event {
                        Ok(Event::Apply(pod)) => {
                            recorder.record(pod.metadata.annotations.as_ref());
                        }
                        Ok(Event::InitDone) => {
                            shared.init_done.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Event::Init | Event::InitApply(_) | Event::Delete(_)) => {}
                        Err(e) => {
                            if is_expired(&e) {
                                shared.expired_seen.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                }
            })
        };
        Self {
            reader,
            shared,
            task,
        }
    }

    pub(super) async fn wait_synced(&self) -> Result<usize, String> {
        self.reader
            .wait_until_ready()
            .await
            .map_err(|e| format!("waiting for the store: {e}"))?;
        Ok(self.reader.len())
    }

    pub(super) fn progress(&self) -> Progress {
        Progress {
            lists: self.shared.init_done.load(Ordering::Relaxed),
            // The store is swapped in whole at `InitDone`: nothing is left to apply.
            idle: true,
            expired_seen: self.shared.expired_seen.load(Ordering::Relaxed),
            objects: self.reader.len(),
        }
    }

    /// The pods of one namespace: the store's filtered scan (`state_filter`, which clones only
    /// the matching `Arc`s; `state()` followed by a filter would clone all of them first).
    pub(super) fn namespace_lookup(&self, namespace: &str) -> usize {
        self.reader
            .state_filter(|pod| pod.metadata.namespace.as_deref() == Some(namespace))
            .len()
    }

    pub(super) fn get(&self, namespace: &str, name: &str) -> usize {
        usize::from(
            self.reader
                .get(&ObjectRef::new(name).within(namespace))
                .is_some(),
        )
    }

    pub(super) fn stop(self) {
        self.task.abort();
    }
}

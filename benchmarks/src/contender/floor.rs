//! The floor: what any cache must at least do, and nothing more. kube-client lists every page
//! (`Api::list`, limit 500) and watches (`Api::watch` from the list's resourceVersion,
//! bookmarks on), decoding each page and event into `Pod`s that are dropped at once; a 410
//! starts a new list, any other end of the watch a new watch.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::api::core::v1::Pod;
use kube_client::api::{ListParams, WatchEvent, WatchParams};
use kube_client::{Api, Client};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{Progress, Recorder};

/// The page size, as every contender uses.
const PAGE_SIZE: u32 = 500;

#[derive(Default)]
struct Shared {
    expired_seen: AtomicBool,
    objects: AtomicUsize,
    errors: AtomicU64,
}

pub(super) struct Run {
    shared: Arc<Shared>,
    lists: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl Run {
    pub(super) fn start(client: Client, recorder: Arc<Recorder>) -> Self {
        let api = Api::<Pod>::all(client);
        let shared = Arc::new(Shared::default());
        let (lists_tx, lists) = watch::channel(0u64);
        let task = tokio::spawn(list_and_watch(api, Arc::clone(&shared), lists_tx, recorder));
        Self {
            shared,
            lists,
            task,
        }
    }

    pub(super) async fn wait_synced(&self) -> Result<usize, String> {
        let mut lists = self.lists.clone();
        lists
            .wait_for(|n| *n > 0)
            .await
            .map_err(|_| "the floor's task ended before its first list".to_owned())?;
        Ok(self.shared.objects.load(Ordering::Relaxed))
    }

    pub(super) fn progress(&self) -> Progress {
        Progress {
            lists: *self.lists.borrow(),
            idle: true,
            expired_seen: self.shared.expired_seen.load(Ordering::Relaxed),
            objects: self.shared.objects.load(Ordering::Relaxed),
        }
    }

    pub(super) fn stop(self) {
        self.task.abort();
    }
}

/// Lists every page; the resourceVersion of the list.
async fn list(api: &Api<Pod>, shared: &Shared) -> String {
    loop {
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let mut objects = 0;
        let complete = loop {
            match api.list(&params).await {
                Ok(page) => {
                    objects += page.items.len();
                    drop(page.items);
                    match page.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => params.continue_token = Some(token),
                        None => break page.metadata.resource_version,
                    }
                }
                Err(_) => break None,
            }
        };
        match complete {
            Some(rv) if !rv.is_empty() => {
                shared.objects.store(objects, Ordering::Relaxed);
                return rv;
            }
            _ => {
                shared.errors.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

async fn list_and_watch(
    api: Api<Pod>,
    shared: Arc<Shared>,
    lists: watch::Sender<u64>,
    recorder: Arc<Recorder>,
) {
    loop {
        let mut rv = list(&api, &shared).await;
        lists.send_modify(|n| *n += 1);
        // Watch until a 410 asks for a new list.
        'watch: loop {
            let mut events = match api.watch(&WatchParams::default(), &rv).await {
                Ok(events) => events.boxed(),
                Err(kube_client::Error::Api(status)) if status.code == 410 => {
                    shared.expired_seen.store(true, Ordering::Relaxed);
                    break 'watch;
                }
                Err(_) => {
                    shared.errors.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue 'watch;
                }
            };
            while let Some(event) = events.next().await {
                match event {
                    Ok(
                        WatchEvent::Added(pod)
                        | WatchEvent::Modified(pod)
                        | WatchEvent::Deleted(pod),
                    ) => {
                        recorder.record(pod.metadata.annotations.as_ref());
                        if let Some(v) = pod.metadata.resource_version {
                            rv = v;
                        }
                    }
                    Ok(WatchEvent::Bookmark(bookmark)) => rv = bookmark.metadata.resource_version,
                    Ok(WatchEvent::Error(status)) if status.code == 410 => {
                        shared.expired_seen.store(true, Ordering::Relaxed);
                        break 'watch;
                    }
                    Ok(WatchEvent::Error(_)) | Err(_) => {
                        shared.errors.fetch_add(1, Ordering::Relaxed);
                        continue 'watch;
                    }
                }
            }
        }
    }
}

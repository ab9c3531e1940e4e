//! What the informer benches share: a lister-watcher answering from memory, and a counter
//! that wakes the bench when every handler has seen every event.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::StreamExt;
use informer::{Error, ListOptions, ListPage, ListerWatcher, WatchOptions, WatchStream};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio::sync::Notify;

/// Answers its one list from memory, and its first watch with the given stream (then
/// nothing, forever, as a quiet server would).
pub struct Scripted {
    list: Mutex<Option<Vec<JsonObject>>>,
    watch: Mutex<Option<WatchStream<JsonObject>>>,
}

impl Scripted {
    pub fn new(list: Vec<JsonObject>, watch: WatchStream<JsonObject>) -> Arc<Self> {
        Arc::new(Self {
            list: Mutex::new(Some(list)),
            watch: Mutex::new(Some(Box::pin(watch.chain(futures::stream::pending())))),
        })
    }
}

#[async_trait]
impl ListerWatcher<JsonObject> for Scripted {
    async fn list(&self, _: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        Ok(ListPage {
            items: self.list.lock().take().unwrap_or_default(),
            resource_version: "1".into(),
            continue_token: None,
            remaining_item_count: None,
        })
    }

    async fn watch(&self, _: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        Ok(self
            .watch
            .lock()
            .take()
            .unwrap_or_else(|| Box::pin(futures::stream::pending())))
    }
}

/// Counts notifications across handlers and wakes the bench when `target` is reached.
pub struct Done {
    count: AtomicUsize,
    target: usize,
    pub notify: Notify,
}

impl Done {
    pub fn new(target: usize) -> Arc<Self> {
        Arc::new(Self {
            count: AtomicUsize::new(0),
            target,
            notify: Notify::new(),
        })
    }

    pub fn bump(&self) {
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.target {
            self.notify.notify_one();
        }
    }
}

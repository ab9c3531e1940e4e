//! `ListerWatcher` wrappers between the server and the informer: the request guard that turns
//! a livelock into a prompt failure, and the deliberate sabotage.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use informer::{
    ListOptions, ListPage, ListPageInfo, ListSink, ListerWatcher, RawWatchStream, WatchEvent,
    WatchOptions, WatchStream,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::Sabotage;

/// At most this many requests (lists, list pages, watches) in any one second of the seed's
/// clock (virtual, or real time divided by its scale). The healthiest seeds make a few dozen
/// at most (a relist page by page, retries with jittered backoff); a reflector that re-asks
/// at once after a failure makes thousands without time passing.
pub const MAX_REQUESTS_PER_SECOND: usize = 200;

/// At most this many requests in one seed: the cap on the server's request log, and the net
/// for livelocks slower than [`MAX_REQUESTS_PER_SECOND`].
pub const MAX_REQUESTS_PER_SEED: u64 = 20_000;

/// How many of the last requests a livelock report shows.
const SHOWN: usize = 12;

struct GuardState {
    /// Instants of the requests in the last window.
    recent: VecDeque<Instant>,
    /// The last requests, described.
    last: VecDeque<String>,
    total: u64,
    busiest: usize,
    tripped: Option<String>,
}

/// Counts the informer's requests and, past [`MAX_REQUESTS_PER_SECOND`] or
/// [`MAX_REQUESTS_PER_SEED`], stops answering (the request never completes, so the reflector
/// stops where it is, whatever loop it was in) and records why: the scenario then fails the
/// seed at once, naming it, instead of letting a livelock grow the request log until memory
/// runs out.
pub struct RequestGuard {
    inner: Arc<dyn ListerWatcher<JsonObject>>,
    window: Duration,
    state: Mutex<GuardState>,
    tripped: Notify,
}

/// What the guard counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests in all.
    pub total: u64,
    /// The most requests seen in one second of the seed's clock.
    pub busiest_second: usize,
}

impl RequestGuard {
    /// Guards `inner`; `second` is one second of the seed's clock.
    pub fn new(inner: Arc<dyn ListerWatcher<JsonObject>>, second: Duration) -> Self {
        Self {
            inner,
            window: second,
            state: Mutex::new(GuardState {
                recent: VecDeque::new(),
                last: VecDeque::new(),
                total: 0,
                busiest: 0,
                tripped: None,
            }),
            tripped: Notify::new(),
        }
    }

    /// Why the guard stopped answering, if it did.
    pub fn tripped(&self) -> Option<String> {
        self.state.lock().tripped.clone()
    }

    /// Waits until the guard trips.
    pub async fn wait_tripped(&self) {
        loop {
            let notified = self.tripped.notified();
            if self.tripped().is_some() {
                return;
            }
            notified.await;
        }
    }

    /// What was counted.
    pub fn counts(&self) -> RequestCounts {
        let st = self.state.lock();
        RequestCounts {
            total: st.total,
            busiest_second: st.busiest,
        }
    }

    /// Counts a request; `false` when it must not be answered.
    fn admit(&self, what: String) -> bool {
        let now = Instant::now();
        let mut st = self.state.lock();
        if st.tripped.is_some() {
            return false;
        }
        st.total += 1;
        st.recent.push_back(now);
        while st
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= self.window)
        {
            st.recent.pop_front();
        }
        st.busiest = st.busiest.max(st.recent.len());
        st.last.push_back(what);
        if st.last.len() > SHOWN {
            st.last.pop_front();
        }
        let why = if st.recent.len() > MAX_REQUESTS_PER_SECOND {
            Some(format!(
                "livelock: more than {MAX_REQUESTS_PER_SECOND} requests within one second of the \
                 seed's clock"
            ))
        } else if st.total > MAX_REQUESTS_PER_SEED {
            Some(format!(
                "livelock: more than {MAX_REQUESTS_PER_SEED} requests in one seed"
            ))
        } else {
            None
        };
        let Some(why) = why else {
            return true;
        };
        let last: Vec<String> = st.last.iter().map(|r| format!("    {r}")).collect();
        st.tripped = Some(format!(
            "{why} ({} in all); the last requests:\n{}",
            st.total,
            last.join("\n")
        ));
        drop(st);
        self.tripped.notify_waiters();
        false
    }
}

fn list_request(options: &ListOptions) -> String {
    format!(
        "list resourceVersion={:?} match={:?} limit={:?}{}",
        options.resource_version,
        options.resource_version_match,
        options.limit,
        if options.continue_token.is_some() {
            " (continue)"
        } else {
            ""
        }
    )
}

fn watch_request(options: &WatchOptions) -> String {
    format!(
        "watch resourceVersion={:?}{}",
        options.resource_version,
        if options.send_initial_events == Some(true) {
            " sendInitialEvents"
        } else {
            ""
        }
    )
}

/// Every method goes to the inner lister-watcher's own (so that its item texts and peeks
/// reach the informer).
#[async_trait::async_trait]
impl ListerWatcher<JsonObject> for RequestGuard {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, informer::Error> {
        if !self.admit(list_request(options)) {
            return futures::future::pending().await;
        }
        self.inner.list(options).await
    }

    async fn watch(
        &self,
        options: &WatchOptions,
    ) -> Result<WatchStream<JsonObject>, informer::Error> {
        if !self.admit(watch_request(options)) {
            return futures::future::pending().await;
        }
        self.inner.watch(options).await
    }

    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<JsonObject>,
    ) -> Result<ListPageInfo, informer::Error> {
        if !self.admit(list_request(options)) {
            return futures::future::pending().await;
        }
        self.inner.list_into(options, sink).await
    }

    async fn watch_raw(
        &self,
        options: &WatchOptions,
    ) -> Result<RawWatchStream<JsonObject>, informer::Error> {
        if !self.admit(watch_request(options)) {
            return futures::future::pending().await;
        }
        self.inner.watch_raw(options).await
    }
}

/// A `ListerWatcher` that loses what [`Sabotage`] says.
pub struct Sabotaged {
    pub inner: Arc<dyn ListerWatcher<JsonObject>>,
    pub sabotage: Sabotage,
    pub seen: Arc<AtomicU64>,
}

impl Sabotaged {
    /// Whether the next item is the one to lose (every `n`th).
    fn lose(seen: &AtomicU64, n: u64) -> bool {
        (seen.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(n)
    }
}

#[async_trait::async_trait]
impl ListerWatcher<JsonObject> for Sabotaged {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, informer::Error> {
        let mut page = self.inner.list(options).await?;
        if let Sabotage::DropListItems(n) = self.sabotage {
            page.items.retain(|_| !Self::lose(&self.seen, n));
        }
        Ok(page)
    }

    async fn watch(
        &self,
        options: &WatchOptions,
    ) -> Result<WatchStream<JsonObject>, informer::Error> {
        let stream = self.inner.watch(options).await?;
        let Sabotage::DropWatchEvents(n) = self.sabotage else {
            return Ok(stream);
        };
        let seen = Arc::clone(&self.seen);
        Ok(Box::pin(stream.filter(move |event| {
            let object_event = matches!(
                event,
                Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))
            );
            std::future::ready(!(object_event && Self::lose(&seen, n)))
        })))
    }
}

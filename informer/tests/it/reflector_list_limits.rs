//! The reflector against lists that never end (issue 11), in virtual time: a lister-watcher
//! written for the test answers every page with another continue token (fresh, or the same
//! one again), and reports bytes as a backend that sees them does. Each list fails with a
//! typed `LimitExceeded` error at its cap, its gathered items are dropped, the next attempt
//! waits the backoff, and once the server behaves the queue gets exactly the real list.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use informer::reflector::{
    BackoffConfig, Jitter, ListLimits, Reflector, ReflectorConfig, Stage, WatchListMode,
};
use informer_core::{
    Error, ErrorClass, Limit, ListOptions, ListPage, ListPageInfo, ListSink, ListerWatcher,
    WatchOptions, WatchStream,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::reflector_support::{Op, RecordingQueue, obj};

/// How the test server answers lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Two items and a fresh token on every page, 1,000 bytes each page.
    Fresh,
    /// Two items and the same token on every page.
    Same,
    /// One page: `a` and `b` at resourceVersion 10.
    Healthy,
}

struct Endless {
    mode: Mutex<Mode>,
    /// Every list request: when, and its continue token.
    requests: Mutex<Vec<(Instant, Option<String>)>>,
}

impl Endless {
    fn new(mode: Mode) -> Arc<Self> {
        Arc::new(Self {
            mode: Mutex::new(mode),
            requests: Mutex::new(Vec::new()),
        })
    }

    /// List attempts (requests without a continue token) and their page counts.
    fn attempts(&self) -> Vec<(Instant, usize)> {
        let mut attempts: Vec<(Instant, usize)> = Vec::new();
        for (at, token) in self.requests.lock().iter() {
            match (token, attempts.last_mut()) {
                (Some(_), Some(last)) => last.1 += 1,
                _ => attempts.push((*at, 1)),
            }
        }
        attempts
    }
}

#[async_trait]
impl ListerWatcher<JsonObject> for Endless {
    async fn list(&self, _: &ListOptions) -> Result<ListPage<JsonObject>, Error> {
        unreachable!("the reflector lists through list_into")
    }

    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<JsonObject>,
    ) -> Result<ListPageInfo, Error> {
        let page = {
            let mut requests = self.requests.lock();
            requests.push((Instant::now(), options.continue_token.clone()));
            requests.len()
        };
        let mode = *self.mode.lock();
        if mode == Mode::Healthy {
            sink.item(obj("a", "5"))?;
            sink.item(obj("b", "6"))?;
            return Ok(ListPageInfo::new("10", None));
        }
        sink.received(1000)?;
        sink.item(obj(&format!("endless-{page}-a"), "1"))?;
        sink.item(obj(&format!("endless-{page}-b"), "1"))?;
        let token = match mode {
            Mode::Same => "same".to_owned(),
            _ => format!("token-{page}"),
        };
        Ok(ListPageInfo::new("1", Some(token)))
    }

    async fn watch(&self, _: &WatchOptions) -> Result<WatchStream<JsonObject>, Error> {
        Ok(Box::pin(futures::stream::pending()))
    }
}

type Failures = Arc<Mutex<Vec<(Stage, ErrorClass, Option<Limit>)>>>;

fn reflector(
    lister_watcher: &Arc<Endless>,
    queue: &Arc<RecordingQueue>,
    limits: ListLimits,
) -> (Arc<Reflector<JsonObject>>, Failures) {
    let failures: Failures = Arc::default();
    let recorded = Arc::clone(&failures);
    let config = ReflectorConfig {
        list_watch: informer::reflector::ListWatchConfig {
            // Paginated lists are what these limits guard; the streaming default is off here.
            watch_list: WatchListMode::Off,
            list_limits: limits,
            backoff: BackoffConfig {
                jitter: Jitter::None,
                ..BackoffConfig::default()
            },
            ..informer::reflector::ListWatchConfig::default()
        },
        name: "things".into(),
        watch_error_handler: Some(Arc::new(move |error: &Error, context| {
            recorded
                .lock()
                .push((context.stage, error.class(), error.limit_exceeded()));
        })),
        ..ReflectorConfig::default()
    };
    let reflector = Reflector::new(
        Arc::clone(lister_watcher) as Arc<dyn ListerWatcher<JsonObject>>,
        Arc::clone(queue) as Arc<dyn informer_core::Queue<JsonObject>>,
        None,
        config,
    );
    (Arc::new(reflector), failures)
}

/// Runs the reflector for `window` of virtual time, switches the server to healthy, and runs
/// it until the healthy list is in.
async fn run(reflector: &Arc<Reflector<JsonObject>>, lw: &Arc<Endless>, window: Duration) {
    let cancel = CancellationToken::new();
    let running = {
        let reflector = Arc::clone(reflector);
        let cancel = cancel.clone();
        tokio::spawn(async move { reflector.run(cancel).await })
    };
    tokio::time::sleep(window).await;
    *lw.mode.lock() = Mode::Healthy;
    for _ in 0..1000 {
        if reflector.has_synced() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    cancel.cancel();
    running.await.unwrap();
}

fn assert_only_the_healthy_list_was_replaced(queue: &RecordingQueue) {
    assert_eq!(
        queue.ops(),
        vec![Op::Replace(
            vec!["ns/a@5".to_owned(), "ns/b@6".to_owned()],
            "10".to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn fresh_tokens_forever_stop_at_the_page_cap_and_back_off() {
    let lw = Endless::new(Mode::Fresh);
    let queue = RecordingQueue::new();
    let limits = ListLimits {
        max_pages: 4,
        max_bytes: u64::MAX,
    };
    let (reflector, failures) = reflector(&lw, &queue, limits);
    let t0 = Instant::now();
    run(&reflector, &lw, Duration::from_secs(10)).await;
    let attempts = lw.attempts();
    // Every failed attempt took exactly four pages; the backoff spaced the attempts 0.8, 1.6,
    // 3.2 s apart (no jitter): four failed attempts in ten seconds, then the healthy one.
    let failed = &attempts[..attempts.len() - 1];
    assert_eq!(failed.len(), 4, "{attempts:?}");
    assert!(failed.iter().all(|(_, pages)| *pages == 4));
    let starts: Vec<Duration> = failed.iter().map(|(at, _)| *at - t0).collect();
    assert_eq!(
        starts,
        [0, 800, 2400, 5600].map(Duration::from_millis).to_vec()
    );
    assert!(
        failures
            .lock()
            .iter()
            .all(|f| *f == (Stage::List, ErrorClass::Other, Some(Limit::ListPages(4))))
    );
    assert_eq!(failures.lock().len(), 4);
    // None of the endless items reached the queue.
    assert_only_the_healthy_list_was_replaced(&queue);
}

#[tokio::test(start_paused = true)]
async fn bytes_add_up_across_pages_to_the_byte_cap() {
    let lw = Endless::new(Mode::Fresh);
    let queue = RecordingQueue::new();
    let limits = ListLimits {
        max_pages: 1000,
        max_bytes: 2500,
    };
    let (reflector, failures) = reflector(&lw, &queue, limits);
    run(&reflector, &lw, Duration::from_secs(2)).await;
    let attempts = lw.attempts();
    // 1,000 bytes a page: the third page's bytes break the 2,500-byte cap.
    assert!(
        attempts[..attempts.len() - 1]
            .iter()
            .all(|(_, pages)| *pages == 3)
    );
    assert!(
        failures
            .lock()
            .iter()
            .all(|f| *f == (Stage::List, ErrorClass::Other, Some(Limit::ListBytes(2500))))
    );
    assert_only_the_healthy_list_was_replaced(&queue);
}

#[tokio::test(start_paused = true)]
async fn a_repeated_continue_token_ends_the_list_at_once() {
    let lw = Endless::new(Mode::Same);
    let queue = RecordingQueue::new();
    let (reflector, failures) = reflector(&lw, &queue, ListLimits::default());
    run(&reflector, &lw, Duration::from_secs(2)).await;
    let attempts = lw.attempts();
    assert!(
        attempts[..attempts.len() - 1]
            .iter()
            .all(|(_, pages)| *pages == 2)
    );
    assert!(failures.lock().iter().all(|f| *f
        == (
            Stage::List,
            ErrorClass::Other,
            Some(Limit::RepeatedContinueToken)
        )));
    assert_only_the_healthy_list_was_replaced(&queue);
    let stats = reflector.stats();
    assert_eq!(stats.counters.lists, 1);
    assert!(stats.counters.list_failures >= 2);
}

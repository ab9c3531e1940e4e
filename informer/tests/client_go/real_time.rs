//! Timers in real time, on a multi-thread runtime: resync, reflector backoff, the watch
//! timeout, bookmarks and the shutdown drain bound. Paused time fires every timer exactly on
//! its deadline; real timers fire late by a little, and these tests show whether the code
//! survives that (defect 1 of issue 10 was invisible in paused time). Each takes a few seconds
//! and checks counts and gaps with tolerances, never exact instants.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use informer::{HandlerOptions, InformerConfig, handler};
use informer_testing::JsonObject;
use informer_testing::fake::FakeApiServer;
use parking_lot::Mutex;

use crate::informer_support::*;
use crate::support::*;

/// When each key was resynced (an update with equal resourceVersions), for one handler.
#[derive(Clone, Default)]
struct SyncTimes(Arc<Mutex<BTreeMap<String, Vec<Instant>>>>);

impl SyncTimes {
    fn handler(&self) -> informer::ClosureHandler<JsonObject> {
        let times = self.clone();
        handler().on_update(move |old: &Arc<JsonObject>, new: &Arc<JsonObject>| {
            if rv(old) == rv(new) {
                times
                    .0
                    .lock()
                    .entry(key(new))
                    .or_default()
                    .push(Instant::now());
            }
        })
    }

    fn of(&self, key: &str) -> Vec<Instant> {
        self.0.lock().get(key).cloned().unwrap_or_default()
    }
}

/// The largest gap between `from` and the first instant, between consecutive instants, and
/// between the last one and `to`.
fn largest_gap(from: Instant, times: &[Instant], to: Instant) -> Duration {
    let mut points = vec![from];
    points.extend_from_slice(times);
    points.push(to);
    points
        .windows(2)
        .map(|w| w[1].saturating_duration_since(w[0]))
        .max()
        .unwrap_or_default()
}

fn with_resync(name: &str, period: Duration) -> HandlerOptions {
    HandlerOptions {
        resync_period: Some(period),
        ..HandlerOptions::named(name)
    }
}

/// Defect 1 of issue 10, in real time: a handler resyncing every second gets a resync every
/// second, and one resyncing every two seconds every two seconds. Before the fix the
/// reflector's timer ran at a fixed rate while each handler's next resync was counted from
/// the moment its check ran; a check arriving a hair before that moment skipped the handler
/// for a whole period (3-4 resyncs in 6.5 s, gaps of 2 s, instead of 6).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_handler_resync_keeps_every_period() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    server.create(RESOURCE, &cm("b")).unwrap();
    let informer = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(1)),
            ..InformerConfig::default()
        },
    );
    let every_second = SyncTimes::default();
    let every_two = SyncTimes::default();
    informer
        .add_handler_with(every_second.handler(), with_resync("one", secs(1)))
        .unwrap();
    informer
        .add_handler_with(every_two.handler(), with_resync("two", secs(2)))
        .unwrap();
    let running = Running::start(&informer);
    tokio::time::timeout(secs(10), running.synced(&server))
        .await
        .unwrap();
    let synced = Instant::now();
    tokio::time::sleep(millis(6_500)).await;
    let end = Instant::now();
    let stats = informer.stats().reflector.unwrap();
    running.stop().await;

    for key in ["ns/a", "ns/b"] {
        let one = every_second.of(key);
        let two = every_two.of(key);
        let report = format!(
            "{key}: 1 s handler at {:?}, 2 s handler at {:?} (s after sync); {} resync checks",
            one.iter()
                .map(|t| t.duration_since(synced).as_secs_f32())
                .collect::<Vec<_>>(),
            two.iter()
                .map(|t| t.duration_since(synced).as_secs_f32())
                .collect::<Vec<_>>(),
            stats.resyncs
        );
        // Six periods fit in 6.5 s; allow one less for scheduling noise, never a skipped
        // period (a gap of two).
        assert!((5..=7).contains(&one.len()), "{report}");
        assert!(largest_gap(synced, &one, end) < millis(1_600), "{report}");
        assert!((2..=4).contains(&two.len()), "{report}");
        assert!(largest_gap(synced, &two, end) < millis(2_600), "{report}");
    }
}

//! A key is never reconciled by two workers at once, and is reconciled at least once after
//! its last event; different keys run in parallel up to the number of workers. In virtual
//! time (exact) and on the real clock of a multi-thread runtime (true parallelism).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use informer_controller::{Action, Context, Controller, ControllerConfig};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, Failed, GUARD, wait_for, wait_until};

/// What the reconciles saw: how many run at once per key and overall (now and at most),
/// and the resourceVersion each reconcile of a key read.
#[derive(Default)]
struct Overlap {
    running: HashMap<String, usize>,
    max_per_key: usize,
    total: usize,
    max_total: usize,
    seen: HashMap<String, Vec<String>>,
}

/// A reconcile that takes `work` (on tokio's clock) and records its overlaps.
fn slow(
    overlap: &Arc<Mutex<Overlap>>,
    work: Duration,
) -> impl Fn(Arc<JsonObject>, Context<()>) -> futures::future::BoxFuture<'static, Result<Action, Failed>>
+ Send
+ Sync
+ 'static {
    let overlap = Arc::clone(overlap);
    move |obj, ctx| {
        let overlap = Arc::clone(&overlap);
        let key = ctx.key().to_string();
        Box::pin(async move {
            {
                let mut o = overlap.lock();
                let running = o.running.entry(key.clone()).or_default();
                *running += 1;
                let now = *running;
                o.max_per_key = o.max_per_key.max(now);
                o.total += 1;
                o.max_total = o.max_total.max(o.total);
                let rv = obj.metadata.resource_version.clone().unwrap_or_default();
                o.seen.entry(key.clone()).or_default().push(rv);
            }
            tokio::time::sleep(work).await;
            let mut o = overlap.lock();
            *o.running.entry(key).or_default() -= 1;
            o.total -= 1;
            Ok(Action::Done)
        })
    }
}

/// Touches `prod/web` `events` times, `every` apart, while 4 workers reconcile it slowly;
/// returns what the reconciles saw and the server's last resourceVersion of it.
async fn hammer_one_key(events: usize, every: Duration, work: Duration) -> (Overlap, String) {
    let env = Env::new();
    env.create("deployments", "web");
    env.create("deployments", "api");
    let overlap = Arc::default();
    let config = ControllerConfig {
        workers: 4,
        ..ControllerConfig::default()
    };
    let controller =
        Controller::new(env.informer("deployments"), config).manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(slow(&overlap, work), (), stop.clone()));
    wait_for(&handle, |s| s.successes == 2).await;
    for i in 0..events {
        env.touch("deployments", "web", &i.to_string());
        tokio::time::sleep(every).await;
    }
    let last = env
        .server
        .get("deployments", Some("prod"), "web")
        .unwrap()
        .resource_version()
        .to_string();
    // At least once after the last event: some reconcile reads the last state.
    let saw_last = || {
        overlap
            .lock()
            .seen
            .get("prod/web")
            .is_some_and(|rvs: &Vec<String>| rvs.contains(&last))
    };
    wait_until(&handle, "a reconcile of the last state", saw_last).await;
    // And then it rests: nothing is left queued or running for it.
    wait_until(&handle, "quiet", || {
        handle.in_flight().is_empty() && handle.queued() == 0
    })
    .await;
    stop.cancel();
    let report = tokio::time::timeout(GUARD, run)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(report.abandoned.is_empty());
    let overlap = Arc::try_unwrap(overlap).ok().unwrap().into_inner();
    (overlap, last)
}

#[tokio::test(start_paused = true)]
async fn one_key_with_many_events_during_a_slow_reconcile_runs_once_at_a_time_and_after_the_last_event()
 {
    // 50 events, 100 ms apart, each reconcile taking 1 s: a reconcile is always running
    // while events come.
    let (overlap, last) =
        hammer_one_key(50, Duration::from_millis(100), Duration::from_secs(1)).await;
    assert_eq!(overlap.max_per_key, 1, "two workers held prod/web at once");
    let web = &overlap.seen["prod/web"];
    // Events during a reconcile collapse into one more: about one per second, not 50.
    assert!(
        (5..=8).contains(&web.len()),
        "{} reconciles: {web:?}",
        web.len()
    );
    assert_eq!(
        web.last(),
        Some(&last),
        "the last reconcile read the last state"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn real_time_one_key_with_many_events_runs_once_at_a_time_and_after_the_last_event() {
    let (overlap, last) =
        hammer_one_key(200, Duration::from_millis(2), Duration::from_millis(20)).await;
    assert_eq!(overlap.max_per_key, 1, "two workers held prod/web at once");
    let web = &overlap.seen["prod/web"];
    assert!(web.len() < 200, "events were not collapsed: {}", web.len());
    assert_eq!(web.last(), Some(&last));
}

#[tokio::test(start_paused = true)]
async fn different_keys_run_in_parallel_up_to_the_workers() {
    let env = Env::new();
    for i in 0..6 {
        env.create("deployments", &format!("d{i}"));
    }
    let overlap = Arc::default();
    let config = ControllerConfig {
        workers: 3,
        ..ControllerConfig::default()
    };
    let controller =
        Controller::new(env.informer("deployments"), config).manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run =
        tokio::spawn(controller.run(slow(&overlap, Duration::from_secs(10)), (), stop.clone()));
    let started = tokio::time::Instant::now();
    wait_for(&handle, |s| s.successes == 6).await;
    // Six 10 s reconciles on three workers: two rounds.
    assert_eq!(started.elapsed(), Duration::from_secs(20));
    assert_eq!(overlap.lock().max_total, 3);
    assert_eq!(overlap.lock().max_per_key, 1);
    stop.cancel();
    run.await.unwrap().unwrap();
}

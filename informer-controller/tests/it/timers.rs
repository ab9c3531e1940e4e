//! Every timer of the controller, in virtual time (exact) and once on the real clock of a
//! multi-thread runtime (with tolerances): requeue after a delay, the rate-limited retry, the
//! reconcile timeout, the shutdown drain bound, and the sync timeout.

use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::status;
use informer::ObjectKey;
use informer_controller::{
    Action, Context, Controller, ControllerConfig, ControllerError, ControllerReport,
};
use informer_testing::JsonObject;
use informer_workqueue::{ExponentialRateLimiter, RateLimiter};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, Failed, wait_for};

/// When each reconcile started, and whether it fails.
type Starts = Arc<Mutex<Vec<Instant>>>;

/// The behaviour under test: `Requeue(d)` answers `RequeueAfter(d)`; `Fail` always fails;
/// `Sleep(d)` takes `d` then succeeds.
#[derive(Clone, Copy)]
enum Behaviour {
    Requeue(Duration),
    Fail,
    Sleep(Duration),
}

/// Runs a controller over one object `prod/web` with `behaviour`; returns the handle, the
/// start times, the stop token and the run's task.
async fn start(
    env: &Env,
    config: ControllerConfig,
    behaviour: Behaviour,
) -> (
    informer_controller::ControllerHandle,
    Starts,
    CancellationToken,
    tokio::task::JoinHandle<Result<ControllerReport, ControllerError>>,
) {
    env.create("deployments", "web");
    let controller =
        Controller::new(env.informer("deployments"), config).manage_factory(env.factory.clone());
    let handle = controller.handle();
    let starts: Starts = Arc::default();
    let recorded = Arc::clone(&starts);
    let stop = CancellationToken::new();
    let reconcile = move |_: Arc<JsonObject>, _: Context<()>| {
        recorded.lock().push(Instant::now());
        async move {
            match behaviour {
                Behaviour::Requeue(d) => Ok(Action::RequeueAfter(d)),
                Behaviour::Fail => Err(Failed("no".into())),
                Behaviour::Sleep(d) => {
                    tokio::time::sleep(d).await;
                    Ok(Action::Done)
                }
            }
        }
    };
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    (handle, starts, stop, run)
}

/// The gaps between consecutive starts.
fn gaps(starts: &Starts) -> Vec<Duration> {
    let starts = starts.lock();
    starts.windows(2).map(|w| w[1] - w[0]).collect()
}

/// An exponential limiter from `base`, so that retry delays are known.
fn limiter(base: Duration) -> Arc<dyn RateLimiter<ObjectKey>> {
    Arc::new(ExponentialRateLimiter::new(base, Duration::from_secs(3600)))
}

/// Real-clock tolerance: late by at most this much (a loaded CI machine).
const SLACK: Duration = Duration::from_secs(2);

fn assert_close(actual: Duration, expected: Duration) {
    assert!(
        actual >= expected && actual <= expected + SLACK,
        "{actual:?} is not within [{expected:?}, {expected:?} + {SLACK:?}]"
    );
}

#[tokio::test(start_paused = true)]
async fn requeue_after_reconciles_again_after_exactly_the_delay() {
    let env = Env::new();
    let (handle, starts, stop, run) = start(
        &env,
        ControllerConfig::default(),
        Behaviour::Requeue(Duration::from_secs(30)),
    )
    .await;
    let stats = wait_for(&handle, |s| s.successes == 4).await;
    assert_eq!(stats.requeues_after, 4);
    assert_eq!(gaps(&starts), [Duration::from_secs(30); 3]);
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn rate_limited_retries_wait_the_limiters_delays() {
    let env = Env::new();
    let config = ControllerConfig {
        rate_limiter: Some(limiter(Duration::from_secs(1))),
        max_retries: None,
        ..ControllerConfig::default()
    };
    let (handle, starts, stop, run) = start(&env, config, Behaviour::Fail).await;
    wait_for(&handle, |s| s.failures == 5).await;
    let secs = |s| Duration::from_secs(s);
    assert_eq!(gaps(&starts), [secs(1), secs(2), secs(4), secs(8)]);
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_reconcile_past_its_timeout_fails_at_the_timeout() {
    let env = Env::new();
    let config = ControllerConfig {
        reconcile_timeout: Some(Duration::from_secs(5)),
        rate_limiter: Some(limiter(Duration::from_secs(1))),
        ..ControllerConfig::default()
    };
    let (handle, starts, stop, run) =
        start(&env, config, Behaviour::Sleep(Duration::from_secs(60))).await;
    let stats = wait_for(&handle, |s| s.timeouts == 2).await;
    assert_eq!((stats.failures, stats.retries), (2, 2));
    // Timed out after 5 s, retried 1 s later.
    assert_eq!(gaps(&starts)[0], Duration::from_secs(6));
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_reconciles_in_flight_up_to_its_bound_then_abandons_them() {
    // A reconcile that ends within the bound is waited for...
    let env = Env::new();
    let config = ControllerConfig {
        shutdown_timeout: Duration::from_secs(10),
        ..ControllerConfig::default()
    };
    let (handle, _, stop, run) = start(
        &env,
        config.clone(),
        Behaviour::Sleep(Duration::from_secs(4)),
    )
    .await;
    crate::support::wait_until(&handle, "in flight", || !handle.in_flight().is_empty()).await;
    let stopped = Instant::now();
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert!(
        stopped.elapsed() <= Duration::from_secs(4),
        "{:?}",
        stopped.elapsed()
    );
    assert!(report.abandoned.is_empty());
    assert_eq!(report.stats.successes, 1);

    // ...one that does not is abandoned at the bound and reported.
    let env = Env::new();
    let (handle, _, stop, run) =
        start(&env, config, Behaviour::Sleep(Duration::from_secs(3600))).await;
    crate::support::wait_until(&handle, "in flight", || !handle.in_flight().is_empty()).await;
    let stopped = Instant::now();
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert_eq!(stopped.elapsed(), Duration::from_secs(10));
    assert_eq!(
        report.abandoned,
        [ObjectKey::new(Some("prod"), "web").unwrap()]
    );
    assert_eq!(report.stats.reconciles, 0);
    assert!(handle.in_flight().is_empty());
    assert!(report.informers.unwrap().failures.is_empty());
}

#[tokio::test(start_paused = true)]
async fn caches_that_do_not_sync_in_time_are_an_error_after_a_clean_stop() {
    let env = Env::new();
    env.server
        .faults()
        .fail_lists("*", 1_000_000, status::internal_error("down"));
    env.server
        .faults()
        .fail_watches("*", 1_000_000, status::internal_error("down"));
    let config = ControllerConfig {
        sync_timeout: Duration::from_secs(45),
        ..ControllerConfig::default()
    };
    let deployments = env.informer("deployments");
    let controller =
        Controller::new(deployments.clone(), config).manage_factory(env.factory.clone());
    let started = Instant::now();
    let reconcile = |_: Arc<JsonObject>, _: Context<()>| async { Ok::<_, Failed>(Action::Done) };
    let error = controller
        .run(reconcile, (), CancellationToken::new())
        .await
        .unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_secs(45));
    match error {
        ControllerError::Sync { controller, source } => {
            assert_eq!(controller, "controller");
            assert!(
                source.not_synced.iter().any(|s| s == "deployments"),
                "{source}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    // The managed factory was shut down, the handler removed.
    assert!(deployments.is_stopped());
    assert!(deployments.registrations().is_empty());
}

// ----- The same timers on the real clock ---------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_requeue_after_and_rate_limited_retry() {
    let env = Env::new();
    let (handle, starts, stop, run) = start(
        &env,
        ControllerConfig::default(),
        Behaviour::Requeue(Duration::from_millis(200)),
    )
    .await;
    wait_for(&handle, |s| s.successes == 3).await;
    for gap in gaps(&starts) {
        assert_close(gap, Duration::from_millis(200));
    }
    stop.cancel();
    run.await.unwrap().unwrap();

    let env = Env::new();
    let config = ControllerConfig {
        rate_limiter: Some(limiter(Duration::from_millis(100))),
        ..ControllerConfig::default()
    };
    let (handle, starts, stop, run) = start(&env, config, Behaviour::Fail).await;
    wait_for(&handle, |s| s.failures == 3).await;
    let gaps = gaps(&starts);
    assert_close(gaps[0], Duration::from_millis(100));
    assert_close(gaps[1], Duration::from_millis(200));
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_time_reconcile_timeout_and_shutdown_bound() {
    let env = Env::new();
    let config = ControllerConfig {
        reconcile_timeout: Some(Duration::from_millis(300)),
        rate_limiter: Some(limiter(Duration::from_millis(100))),
        ..ControllerConfig::default()
    };
    let (handle, starts, stop, run) =
        start(&env, config, Behaviour::Sleep(Duration::from_secs(3600))).await;
    wait_for(&handle, |s| s.timeouts == 1).await;
    crate::support::wait_until(&handle, "second attempt", || starts.lock().len() == 2).await;
    // Timed out at 300 ms, retried 100 ms later.
    assert_close(gaps(&starts)[0], Duration::from_millis(400));
    stop.cancel();
    run.await.unwrap().unwrap();

    let env = Env::new();
    let config = ControllerConfig {
        shutdown_timeout: Duration::from_millis(300),
        ..ControllerConfig::default()
    };
    let (handle, _, stop, run) =
        start(&env, config, Behaviour::Sleep(Duration::from_secs(3600))).await;
    crate::support::wait_until(&handle, "in flight", || !handle.in_flight().is_empty()).await;
    let stopped = std::time::Instant::now();
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    // The factory's own shutdown comes after the bound: allow for it in the slack.
    assert_close(stopped.elapsed(), Duration::from_millis(300));
    assert_eq!(
        report.abandoned,
        [ObjectKey::new(Some("prod"), "web").unwrap()]
    );
}

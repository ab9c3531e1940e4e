//! Failures: rate-limited retries then forgotten on success, the retry cap, the error
//! policy's choices, and caught panics.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use informer::ObjectKey;
use informer_controller::{Action, Context, Controller, ControllerConfig, OnError, ReconcileError};
use informer_testing::JsonObject;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, Failed, wait_for};

fn web() -> ObjectKey {
    ObjectKey::new(Some("prod"), "web").unwrap()
}

/// A reconcile failing its first `failures` calls, recording each call's `retries`.
fn flaky(
    failures: u32,
    seen: &Arc<parking_lot::Mutex<Vec<u32>>>,
) -> impl Fn(Arc<JsonObject>, Context<()>) -> futures::future::Ready<Result<Action, Failed>>
+ Send
+ Sync
+ 'static {
    let calls = AtomicU32::new(0);
    let seen = Arc::clone(seen);
    move |_, ctx| {
        seen.lock().push(ctx.retries());
        let n = calls.fetch_add(1, Ordering::SeqCst);
        futures::future::ready(if n < failures {
            Err(Failed(format!("attempt {n} failed")))
        } else {
            Ok(Action::Done)
        })
    }
}

#[tokio::test(start_paused = true)]
async fn failures_are_retried_with_backoff_then_forgotten_on_success() {
    let env = Env::new();
    env.create("deployments", "web");
    let seen = Arc::default();
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(flaky(3, &seen), (), stop.clone()));
    let stats = wait_for(&handle, |s| s.successes == 1).await;
    assert_eq!((stats.failures, stats.retries, stats.given_up), (3, 3, 0));
    // Each attempt knew how many failures came before it; success forgot them.
    assert_eq!(*seen.lock(), [0, 1, 2, 3]);
    assert_eq!(handle.retries(&web()), 0);
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_key_failing_past_the_cap_is_given_up_until_its_next_event() {
    let env = Env::new();
    env.create("deployments", "web");
    let seen = Arc::default();
    let config = ControllerConfig {
        max_retries: Some(2),
        ..ControllerConfig::default()
    };
    let controller =
        Controller::new(env.informer("deployments"), config).manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(flaky(3, &seen), (), stop.clone()));
    // The first try and two retries fail: given up, forgotten.
    let stats = wait_for(&handle, |s| s.given_up == 1).await;
    assert_eq!((stats.failures, stats.retries), (3, 2));
    assert_eq!(handle.retries(&web()), 0);
    // Nothing happens to it for an hour...
    tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    assert_eq!(handle.stats().reconciles, 3);
    // ...until its next event: then it starts again from zero, and succeeds.
    env.touch("deployments", "web", "1");
    let stats = wait_for(&handle, |s| s.successes == 1).await;
    assert_eq!(stats.reconciles, 4);
    assert_eq!(*seen.lock(), [0, 1, 2, 0]);
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_error_policy_chooses_a_fixed_delay_or_to_give_up() {
    let env = Env::new();
    env.create("deployments", "web");
    env.create("deployments", "terminal");
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let attempts = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let recorded = Arc::clone(&attempts);
    let reconcile = move |obj: Arc<JsonObject>, ctx: Context<()>| {
        let attempts = Arc::clone(&recorded);
        async move {
            let first = {
                let mut attempts = attempts.lock();
                attempts.push((ctx.key().to_string(), tokio::time::Instant::now()));
                attempts
                    .iter()
                    .filter(|(k, _)| k == ctx.key().as_str())
                    .count()
                    == 1
            };
            // RetryAfter does not go through the rate limiter: `retries()` stays 0.
            assert_eq!(ctx.retries(), 0);
            if obj.metadata.name.as_deref() == Some("terminal") || first {
                Err(Failed(format!("{} cannot be done", ctx.key())))
            } else {
                Ok(Action::Done)
            }
        }
    };
    let policy = |obj: &Arc<JsonObject>, error: &ReconcileError<Failed>, _: &Context<()>| {
        assert!(error.reconcile_error().is_some());
        if obj.metadata.name.as_deref() == Some("terminal") {
            OnError::GiveUp
        } else {
            OnError::RetryAfter(std::time::Duration::from_secs(7))
        }
    };
    let run = tokio::spawn(controller.run_with_error_policy(reconcile, policy, (), stop.clone()));
    let stats = wait_for(&handle, |s| s.successes == 1 && s.given_up == 1).await;
    assert_eq!((stats.failures, stats.retries), (2, 1));
    let attempts = attempts.lock().clone();
    let web: Vec<_> = attempts
        .iter()
        .filter(|(k, _)| k == "prod/web")
        .map(|(_, t)| *t)
        .collect();
    // The second attempt comes exactly the policy's 7 s later; the terminal key is tried
    // once.
    assert_eq!(web.len(), 2, "{attempts:?}");
    assert_eq!(web[1] - web[0], std::time::Duration::from_secs(7));
    assert_eq!(
        attempts
            .iter()
            .filter(|(k, _)| k == "prod/terminal")
            .count(),
        1
    );
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_is_caught_counted_and_retried() {
    let env = Env::new();
    env.create("deployments", "web");
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let reconcile = move |_: Arc<JsonObject>, _: Context<()>| {
        let n = counted.fetch_add(1, Ordering::SeqCst);
        async move {
            assert!(n > 0, "the first reconcile panics");
            Ok::<_, Failed>(Action::Done)
        }
    };
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    let stats = wait_for(&handle, |s| s.successes == 1).await;
    assert_eq!((stats.panics, stats.failures, stats.retries), (1, 1, 1));
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.worker_panics, 0);
}

//! The `controller_runtime_*` series (and the controller's `workqueue_*` ones) after a run
//! with successes, a requeue, failures, a panic, a timeout and a key given up, scraped from
//! the registry's text.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use informer_controller::{Action, Context, Controller, ControllerConfig, ControllerMetrics};
use informer_testing::JsonObject;
use informer_testing::metrics::{scrape, value};
use informer_workqueue::WorkQueueMetrics;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::support::{Env, Failed, wait_for};

#[tokio::test(start_paused = true)]
async fn controller_runtime_series_count_every_outcome() {
    let env = Env::new();
    // ok: succeeds; again: requeues once after 1 s; flaky: fails once; boom: panics once;
    // slow: times out once; bad: always fails (given up after 2 retries).
    for name in ["ok", "again", "flaky", "boom", "slow", "bad"] {
        env.create("deployments", name);
    }
    let mut registry = Registry::default();
    let config = ControllerConfig {
        name: "metered".into(),
        workers: 2,
        max_retries: Some(2),
        reconcile_timeout: Some(Duration::from_secs(10)),
        metrics: Some(ControllerMetrics::register(&mut registry)),
        workqueue_metrics: Some(WorkQueueMetrics::register(&mut registry)),
        ..ControllerConfig::default()
    };
    let controller =
        Controller::new(env.informer("deployments"), config).manage_factory(env.factory.clone());
    let handle = controller.handle();
    // Before the run: every series exists at zero.
    let s = scrape(&registry);
    assert_eq!(
        value(
            &s,
            r#"controller_runtime_reconcile_total{controller="metered",result="success"}"#
        ),
        0.0
    );
    assert_eq!(
        value(
            &s,
            r#"controller_runtime_max_concurrent_reconciles{controller="metered"}"#
        ),
        0.0
    );

    let requeued = Arc::new(AtomicBool::new(false));
    let reconcile = move |obj: Arc<JsonObject>, ctx: Context<()>| {
        let requeued = Arc::clone(&requeued);
        async move {
            let first = ctx.retries() == 0;
            match obj.metadata.name.as_deref().unwrap_or_default() {
                "again" if !requeued.swap(true, Ordering::SeqCst) => {
                    Ok(Action::RequeueAfter(Duration::from_secs(1)))
                }
                "flaky" if first => Err(Failed("flaky".into())),
                "boom" if first => panic!("boom"),
                "slow" if first => {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    Ok(Action::Done)
                }
                "bad" => Err(Failed("bad".into())),
                _ => Ok(Action::Done),
            }
        }
    };
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(reconcile, (), stop.clone()));
    // Mid-run, the gauges: two workers.
    let stats = wait_for(&handle, |s| s.given_up == 1 && s.successes == 6).await;
    let s = scrape(&registry);
    let series = |name: &str| format!(r#"{name}{{controller="metered"}}"#);
    let result = |r: &str| {
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_total{{controller="metered",result="{r}"}}"#),
        )
    };
    assert_eq!(
        value(&s, &series("controller_runtime_max_concurrent_reconciles")),
        2.0
    );
    // ok; flaky, boom, slow once each after their failure; again twice (the first asking
    // for a requeue after 1 s).
    assert_eq!(result("success"), 5.0, "{stats:?}");
    assert_eq!(result("requeue_after"), 1.0);
    // flaky, boom, slow once; bad three times.
    assert_eq!(result("error"), 6.0);
    assert_eq!(
        value(&s, &series("controller_runtime_reconcile_errors_total")),
        6.0
    );
    assert_eq!(
        value(
            &s,
            &series("controller_runtime_terminal_reconcile_errors_total")
        ),
        1.0
    );
    assert_eq!(
        value(&s, &series("controller_runtime_reconcile_panics_total")),
        1.0
    );
    assert_eq!(
        value(&s, &series("controller_runtime_reconcile_timeouts_total")),
        1.0
    );
    assert_eq!(
        value(
            &s,
            &series("controller_runtime_reconcile_time_seconds_count")
        ),
        12.0
    );
    // The timed-out reconcile took its 10 s.
    assert!(value(&s, &series("controller_runtime_reconcile_time_seconds_sum")) >= 10.0);
    assert_eq!(value(&s, &series("controller_runtime_active_workers")), 0.0);
    // The queue is the controller's, named after it.
    let queue = |name: &str| value(&s, &format!(r#"{name}{{name="metered"}}"#));
    assert!(queue("workqueue_adds_total") >= 6.0);
    // flaky, boom, slow, bad twice (rate-limited), again once (after its delay).
    assert_eq!(queue("workqueue_retries_total"), 6.0);
    assert_eq!(queue("workqueue_work_duration_seconds_count"), 12.0);
    stop.cancel();
    run.await.unwrap().unwrap();
    let s = scrape(&registry);
    assert_eq!(
        value(&s, &series("controller_runtime_max_concurrent_reconciles")),
        0.0
    );
}

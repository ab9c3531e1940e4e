//! The `metrics` feature: a run's series, scraped from the registry's text encoding.
#![cfg(feature = "metrics")]

use std::sync::Arc;
use std::time::Duration;

use informer_testing::metrics::{scrape, value};
use informer_workqueue::{
    ExponentialRateLimiter, RateLimitingQueue, RateLimitingQueueConfig, WorkQueue, WorkQueueConfig,
    WorkQueueMetrics,
};
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use tokio::time::{advance, sleep};

use crate::support::MS;

#[tokio::test(start_paused = true)]
async fn a_run_produces_client_go_series_with_sane_values() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::register(&mut registry);
    let queue: RateLimitingQueue<&str> = RateLimitingQueue::with_config(RateLimitingQueueConfig {
        name: "pods".into(),
        rate_limiter: Arc::new(ExponentialRateLimiter::new(
            100 * MS,
            Duration::from_secs(10),
        )),
        metrics: Some(metrics.clone()),
    });

    // Three adds, one deduplicated: two items need processing.
    queue.add("a");
    queue.add("b");
    queue.add("a");
    let s = scrape(&registry);
    assert_eq!(value(&s, r#"workqueue_depth{name="pods"}"#), 2.0);
    assert_eq!(value(&s, r#"workqueue_adds_total{name="pods"}"#), 2.0);

    // "a" waits 2 s in the queue, then is processed for 3 s.
    advance(Duration::from_secs(2)).await;
    let a = queue.get().await.unwrap();
    advance(Duration::from_secs(3)).await;
    let s = scrape(&registry);
    assert_eq!(value(&s, r#"workqueue_depth{name="pods"}"#), 1.0);
    assert_eq!(
        value(&s, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        3.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_longest_running_processor_seconds{name="pods"}"#
        ),
        3.0
    );

    // "b" is taken 1 s later: two in progress, 4 s and 1 s old at the next scrape.
    advance(Duration::from_secs(1)).await;
    let b = queue.get().await.unwrap();
    advance(Duration::from_secs(1)).await;
    let s = scrape(&registry);
    assert_eq!(value(&s, r#"workqueue_depth{name="pods"}"#), 0.0);
    assert_eq!(
        value(&s, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        6.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_longest_running_processor_seconds{name="pods"}"#
        ),
        5.0
    );

    // "a" fails and is retried after 100 ms; "b" succeeds.
    queue.add_rate_limited(a);
    queue.done(&a);
    queue.forget(&b);
    queue.done(&b);
    sleep(100 * MS).await;
    let again = queue.get().await.unwrap();
    queue.done(&again);

    let s = scrape(&registry);
    assert_eq!(value(&s, r#"workqueue_depth{name="pods"}"#), 0.0);
    assert_eq!(value(&s, r#"workqueue_adds_total{name="pods"}"#), 3.0);
    assert_eq!(value(&s, r#"workqueue_retries_total{name="pods"}"#), 1.0);
    assert_eq!(
        value(&s, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        0.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_longest_running_processor_seconds{name="pods"}"#
        ),
        0.0
    );

    // Queue durations: a 2 s, b 6 s, the retry 0 s (measured from its deadline).
    assert_eq!(
        value(&s, r#"workqueue_queue_duration_seconds_count{name="pods"}"#),
        3.0
    );
    assert_eq!(
        value(&s, r#"workqueue_queue_duration_seconds_sum{name="pods"}"#),
        8.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_queue_duration_seconds_bucket{le="1.0",name="pods"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_queue_duration_seconds_bucket{le="10.0",name="pods"}"#
        ),
        3.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_queue_duration_seconds_bucket{le="+Inf",name="pods"}"#
        ),
        3.0
    );
    // Work durations: a 5 s, b 1 s, the retry 0 s.
    assert_eq!(
        value(&s, r#"workqueue_work_duration_seconds_count{name="pods"}"#),
        3.0
    );
    assert_eq!(
        value(&s, r#"workqueue_work_duration_seconds_sum{name="pods"}"#),
        6.0
    );
    assert_eq!(
        value(
            &s,
            r#"workqueue_work_duration_seconds_bucket{le="1e-8",name="pods"}"#
        ),
        1.0
    );
}

#[tokio::test(start_paused = true)]
async fn every_family_is_exposed_with_its_type() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::register(&mut registry);
    let queue: WorkQueue<u8> = WorkQueue::with_config(WorkQueueConfig {
        name: "q".into(),
        metrics: Some(metrics),
    });
    queue.add(1);
    let mut text = String::new();
    encode(&mut text, &registry).unwrap();
    for (family, kind) in [
        ("workqueue_depth", "gauge"),
        ("workqueue_adds", "counter"),
        ("workqueue_queue_duration_seconds", "histogram"),
        ("workqueue_work_duration_seconds", "histogram"),
        ("workqueue_unfinished_work_seconds", "gauge"),
        ("workqueue_longest_running_processor_seconds", "gauge"),
        ("workqueue_retries", "counter"),
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} {kind}\n")),
            "{family} {kind}:\n{text}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn queues_share_one_registration_and_are_told_apart_by_name() {
    let mut registry = Registry::default();
    let metrics = WorkQueueMetrics::register(&mut registry);
    let config = |name: &str| WorkQueueConfig {
        name: name.into(),
        metrics: Some(metrics.clone()),
    };
    let pods: WorkQueue<u8> = WorkQueue::with_config(config("pods"));
    let nodes: WorkQueue<u8> = WorkQueue::with_config(config("nodes"));
    pods.add(1);
    pods.add(2);
    nodes.add(1);
    let _p = pods.get().await.unwrap();
    let _n = nodes.get().await.unwrap();
    advance(Duration::from_secs(2)).await;
    let s = scrape(&registry);
    assert_eq!(value(&s, r#"workqueue_adds_total{name="pods"}"#), 2.0);
    assert_eq!(value(&s, r#"workqueue_adds_total{name="nodes"}"#), 1.0);
    assert_eq!(value(&s, r#"workqueue_depth{name="pods"}"#), 1.0);
    assert_eq!(value(&s, r#"workqueue_depth{name="nodes"}"#), 0.0);
    assert_eq!(
        value(&s, r#"workqueue_unfinished_work_seconds{name="nodes"}"#),
        2.0
    );

    // A dropped queue's unfinished-work series go away; counters stay.
    drop(nodes);
    let s = scrape(&registry);
    assert!(!s.contains_key(r#"workqueue_unfinished_work_seconds{name="nodes"}"#));
    assert_eq!(
        value(&s, r#"workqueue_unfinished_work_seconds{name="pods"}"#),
        2.0
    );
    assert_eq!(value(&s, r#"workqueue_adds_total{name="nodes"}"#), 1.0);
}

#[tokio::test(start_paused = true)]
async fn a_queue_without_metrics_records_nothing() {
    let mut registry = Registry::default();
    let _metrics = WorkQueueMetrics::register(&mut registry);
    let queue: WorkQueue<u8> = WorkQueue::new();
    queue.add(1);
    let s = scrape(&registry);
    assert!(s.is_empty(), "{s:#?}");
}

//! The configmap-mirror example's metrics: with `InformerMetrics`, `WorkQueueMetrics` and
//! `ControllerMetrics` in one registry, a run with injected write failures and a relist leaves
//! the controller's, the work queue's and the informers' series with sane values (scraped from
//! the text encoding).

use crate::configmap_mirror::{MirrorConfig, NAME};
use crate::support::controller::settings;
use crate::support::{Env, GUARD};
use fake_apiserver::status;
use informer::{FactoryConfig, InformerMetrics};
use informer_controller::{ControllerConfig, ControllerMetrics};
use informer_testing::metrics::{scrape, value};
use informer_workqueue::WorkQueueMetrics;
use prometheus_client::registry::Registry;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_queue_and_informer_series_after_failed_writes_and_a_relist() {
    let cluster = Env::start().await;
    let mut registry = Registry::default();
    let config = MirrorConfig::default();
    let mut factory_config = FactoryConfig::default();
    factory_config.metrics = Some(InformerMetrics::register(&mut registry));
    let settings = ControllerConfig {
        metrics: Some(ControllerMetrics::register(&mut registry)),
        workqueue_metrics: Some(WorkQueueMetrics::register(&mut registry)),
        ..settings()
    };
    for (ns, labelled) in [("team-a", true), ("team-b", true), ("team-c", false)] {
        cluster.namespace(ns, labelled);
    }
    cluster.set_source(&config, json!({"k": "v1"}));
    // The first three writes fail.
    let faults = cluster.engine.faults();
    faults.fail_writes("configmaps", 3, status::internal_error("etcd is down"));
    let mut running = cluster
        .try_run(config.clone(), settings, factory_config)
        .expect("the mirror controller");
    cluster
        .converge_mirrors(&config, &mut running, "initial sync with failed writes")
        .await;
    faults.assert_all_used();

    // A relist of every informer (ERROR 410), with a change only a relist can bring.
    tokio::time::timeout(GUARD, cluster.engine.wait_for_open_watches("*", 3))
        .await
        .unwrap();
    assert_eq!(faults.expire_watches("*"), 3);
    cluster.label("team-c", true);
    cluster.set_source(&config, json!({"k": "v2"}));
    cluster
        .converge_mirrors(&config, &mut running, "after the relist")
        .await;
    let stats = running.stats();
    assert!(stats.successes >= 3, "{stats:?}");
    // Convergence needs the namespaces and source informers to relist, not the mirrors one
    // (its cache was current): wait until each has sent its relist (a list from a known
    // resourceVersion, where the first list asks for "0").
    for (plural, selector) in [
        ("namespaces", None),
        ("configmaps", Some("fieldSelector")),
        ("configmaps", Some("labelSelector")),
    ] {
        // A paginated list or (the default since issue 10) a streaming one.
        let relist = cluster.engine.wait_for_request(|r| {
            (r.is_list_of(plural)
                || (r.is_watch_of(plural) && r.param("sendInitialEvents") == Some("true")))
                && selector.is_none_or(|p| r.param(p).is_some())
                && r.param("resourceVersion").is_some_and(|rv| rv != "0")
        });
        tokio::time::timeout(GUARD, relist).await.expect("relist");
    }

    let s = scrape(&registry);
    let queue = format!(r#"{{name="{NAME}"}}"#);
    // Work queue: every namespace was added, the failures were retried.
    let adds = value(&s, &format!("workqueue_adds_total{queue}"));
    assert!(adds >= 3.0, "{adds} {stats:?}");
    // The three injected failures were retried (a 409 from a replace racing the cache may
    // add one more).
    let retries = value(&s, &format!("workqueue_retries_total{queue}"));
    assert!(
        retries >= 3.0 && retries >= stats.retries as f64,
        "{retries} {stats:?}"
    );
    assert!(value(&s, &format!("workqueue_work_duration_seconds_count{queue}")) >= 3.0);
    assert!(
        value(
            &s,
            &format!("workqueue_queue_duration_seconds_count{queue}")
        ) >= 3.0
    );
    for gauge in [
        "workqueue_depth",
        "workqueue_unfinished_work_seconds",
        "workqueue_longest_running_processor_seconds",
    ] {
        assert!(value(&s, &format!("{gauge}{queue}")) >= 0.0, "{gauge}");
    }

    // Informers: each listed twice (the relist), with its reason, and caches the right size.
    for (name, objects) in [
        ("namespaces", 3.0),
        (
            "configmaps in default fields[metadata.name=mirror-source]",
            1.0,
        ),
        (
            "configmaps labels[app.kubernetes.io/managed-by=informer-rs-configmap-mirror]",
            3.0,
        ),
    ] {
        let label = format!(r#"{{name="{name}"}}"#);
        assert!(
            value(&s, &format!("reflector_lists_total{label}")) >= 2.0,
            "{name}"
        );
        assert_eq!(
            value(
                &s,
                &format!(r#"reflector_relists_total{{name="{name}",reason="expired"}}"#)
            ),
            1.0,
            "{name}"
        );
        assert!(value(&s, &format!("reflector_last_resource_version{label}")) > 0.0);
        assert!(
            value(&s, &format!("reflector_last_resource_version{label}"))
                <= cluster.engine.resource_version() as f64
        );
        // The mirrors informer may not have seen our last write yet: at most one behind.
        let cached = value(&s, &format!(r#"informer_objects{{informer="{name}"}}"#));
        assert!(
            cached == objects || (cached - objects).abs() <= 1.0,
            "{name}: {cached}"
        );
    }
    assert!(
        value(
            &s,
            r#"informer_handler_notifications_total{informer="namespaces",handler="configmap-mirror"}"#
        ) >= 3.0
    );
    assert!(
        value(
            &s,
            r#"informer_handler_pending{informer="namespaces",handler="configmap-mirror"}"#
        ) >= 0.0
    );

    // The controller's own series: every reconcile counted by result, the failures among them,
    // none given up, and the workers gauge while running.
    let controller = format!(r#"controller="{NAME}""#);
    let reconciles = |result: &str| {
        value(
            &s,
            &format!(r#"controller_runtime_reconcile_total{{{controller},result="{result}"}}"#),
        )
    };
    assert!(reconciles("success") >= 3.0, "{stats:?}");
    assert!(reconciles("error") >= 3.0, "{stats:?}");
    assert_eq!(
        reconciles("error"),
        value(
            &s,
            &format!("controller_runtime_reconcile_errors_total{{{controller}}}")
        )
    );
    assert_eq!(
        value(
            &s,
            &format!("controller_runtime_terminal_reconcile_errors_total{{{controller}}}")
        ),
        0.0
    );
    assert_eq!(
        value(
            &s,
            &format!("controller_runtime_max_concurrent_reconciles{{{controller}}}")
        ),
        3.0
    );
    assert!(
        value(
            &s,
            &format!("controller_runtime_reconcile_time_seconds_count{{{controller}}}")
        ) >= reconciles("success") + reconciles("error")
    );

    let report = running.stop().await;
    assert_eq!(report.worker_panics, 0);
    cluster.http.shutdown().await.unwrap();
}

//! The `metrics` feature: an informer runs against the in-process fake API server through a
//! relist (ERROR 410 in its watch), with handlers that keep up, panic and overflow; then the
//! registry's text encoding is scraped and every series is checked for a sane value.
//! Virtual time; waits are event-driven (handler notifications), guarded against hangs.
#![cfg(feature = "metrics")]

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    Delivery, HandlerOptions, InformerConfig, InformerMetrics, Object, SharedIndexInformer,
    handler, wait_for_cache_sync,
};
use informer_testing::JsonObject;
use informer_testing::metrics::{scrape, value};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::GUARD;

fn pod(name: &str) -> JsonObject {
    JsonObject::new(Some("prod"), name)
}

#[tokio::test(start_paused = true)]
async fn a_run_through_a_relist_scrapes_every_series_with_sane_values() {
    let server = FakeApiServer::new();
    for i in 0..5 {
        server.create("pods", &pod(&format!("web-{i}"))).unwrap();
    }
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let lister_watcher = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
    let informer = SharedIndexInformer::new(
        lister_watcher,
        InformerConfig {
            name: "pods".into(),
            metrics: Some(metrics),
            ..InformerConfig::default()
        },
    )
    .unwrap();

    // A handler that keeps up and ticks on every notification.
    let ticks = Arc::new(watch::Sender::new(0u64));
    let tick = || {
        let ticks = Arc::clone(&ticks);
        move || ticks.send_modify(|n| *n += 1)
    };
    let (on_add, on_update, on_delete) = (tick(), tick(), tick());
    let counter = informer
        .add_handler_with(
            handler()
                .on_add(move |_: &Arc<JsonObject>, _| on_add())
                .on_update(move |_, _| on_update())
                .on_delete(move |_| on_delete()),
            HandlerOptions::named("counter"),
        )
        .unwrap();
    // A handler that panics on one object.
    informer
        .add_handler_with(
            handler().on_add(|pod: &Arc<JsonObject>, _| {
                assert_ne!(pod.object_name(), Some("boom"), "boom");
            }),
            HandlerOptions::named("boom"),
        )
        .unwrap();
    // A handler that blocks on its first live notification (on its own thread) with room for
    // two more: the fourth live notification overflows it.
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = Mutex::new(blocked);
    let stuck = informer
        .add_handler_with(
            handler().on_add(move |_: &Arc<JsonObject>, initial| {
                if !initial {
                    let _ = blocked.lock().recv();
                }
            }),
            HandlerOptions {
                name: Some("stuck".into()),
                buffer_limit: NonZeroUsize::new(2),
                delivery: Delivery::Thread,
                ..HandlerOptions::default()
            },
        )
        .unwrap();

    let stop = CancellationToken::new();
    let run = informer.spawn(stop.clone());
    wait_for_cache_sync(GUARD, &[&informer, &counter])
        .await
        .unwrap();
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();

    // ERROR 410 into the open watch: the reflector relists. Then changes of every kind.
    assert_eq!(server.faults().expire_watches("pods"), 1);
    for name in ["boom", "web-5", "web-6"] {
        server.create("pods", &pod(name)).unwrap();
    }
    server
        .update("pods", &pod("web-0").with_label("tier", "front"))
        .unwrap();
    server.delete("pods", Some("prod"), "web-1").unwrap();

    // Quiescence: the cache equals the server and the counter handler has handled all it got.
    let mut ticked = ticks.subscribe();
    let quiet = async {
        loop {
            let cached = informer.lister().list_all().len();
            let on_server = server.objects("pods", None).unwrap().len();
            let relisted = informer
                .stats()
                .reflector
                .is_some_and(|r| r.counters.lists >= 2);
            let at_server_rv = informer.last_synced_resource_version()
                == Some(server.resource_version().to_string());
            if cached == on_server && relisted && at_server_rv && counter.pending() == 0 {
                return;
            }
            // A tick comes as a notification is handled, just before it stops counting as
            // pending: look again a (virtual) moment later when no tick follows.
            tokio::select! {
                changed = ticked.changed() => changed.unwrap(),
                () = tokio::time::sleep(Duration::from_millis(1)) => {}
            }
        }
    };
    tokio::time::timeout(GUARD, quiet)
        .await
        .expect("quiescence");
    assert!(!stuck.is_active(), "the stuck handler overflowed");

    let s = scrape(&registry);
    let stats = informer.stats();
    let reflector = stats.reflector.clone().unwrap();
    let name = r#"{name="pods"}"#;
    // Reflector, client-go's names.
    assert_eq!(value(&s, &format!("reflector_lists_total{name}")), 2.0);
    assert_eq!(
        value(&s, &format!("reflector_list_duration_seconds_count{name}")),
        2.0
    );
    assert!(value(&s, &format!("reflector_list_duration_seconds_sum{name}")) >= 0.0);
    assert_eq!(
        value(&s, &format!("reflector_items_per_list_count{name}")),
        2.0
    );
    // The first list had 5 pods; the relist 5 (the changes came after, on the new watch) or
    // up to 7 (if some were made before it).
    let items = value(&s, &format!("reflector_items_per_list_sum{name}"));
    assert!((10.0..=12.0).contains(&items), "{items}");
    let watches = value(&s, &format!("reflector_watches_total{name}"));
    assert_eq!(watches, reflector.counters.watch_starts as f64);
    assert!(watches >= 2.0);
    assert_eq!(
        value(&s, &format!("reflector_short_watches_total{name}")),
        0.0
    );
    // The expired watch ended; the one after it is still open.
    assert_eq!(
        value(&s, &format!("reflector_watch_duration_seconds_count{name}")),
        watches - 1.0
    );
    assert_eq!(
        value(&s, &format!("reflector_items_per_watch_count{name}")),
        watches - 1.0
    );
    assert_eq!(
        value(&s, &format!("reflector_last_resource_version{name}")),
        server.resource_version() as f64
    );
    assert_eq!(
        value(
            &s,
            r#"reflector_relists_total{name="pods",reason="expired"}"#
        ),
        1.0
    );
    assert_eq!(reflector.counters.relists, 1);
    assert_eq!(
        value(
            &s,
            r#"reflector_watch_restarts_total{name="pods",reason="expired"}"#
        ),
        1.0
    );

    // Informer and handlers, ours.
    assert_eq!(
        value(&s, r#"informer_objects{informer="pods"}"#),
        stats.cached as f64
    );
    assert_eq!(stats.cached, 7);
    let deltas: f64 = ["added", "updated", "deleted", "replaced", "sync"]
        .iter()
        .map(|t| {
            value(
                &s,
                &format!(r#"informer_deltas_total{{informer="pods",type="{t}"}}"#),
            )
        })
        .sum();
    assert_eq!(deltas, stats.deltas as f64);
    assert!(
        value(
            &s,
            r#"informer_deltas_total{informer="pods",type="replaced"}"#
        ) >= 10.0
    );
    assert_eq!(
        value(
            &s,
            r#"informer_deltas_total{informer="pods",type="deleted"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"informer_handler_pending{informer="pods",handler="counter"}"#
        ),
        0.0
    );
    assert_eq!(
        value(
            &s,
            r#"informer_handler_notifications_total{informer="pods",handler="counter"}"#
        ),
        counter.stats().delivered as f64
    );
    assert_eq!(
        value(
            &s,
            r#"informer_handler_panics_total{informer="pods",handler="boom"}"#
        ),
        1.0
    );
    assert_eq!(
        value(
            &s,
            r#"informer_handler_overflows_total{informer="pods",handler="stuck"}"#
        ),
        1.0
    );
    // A disconnected handler has no lag to report any more.
    assert!(
        !s.contains_key(r#"informer_handler_pending{informer="pods",handler="stuck"}"#),
        "{s:#?}"
    );

    // Unblock the stuck handler's thread if it is blocked; if the overflow disconnected it before
    // its thread reached the first live notification, the receiver is gone already.
    let _ = release.send(());
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert!(report.stuck.is_empty());
}

#[tokio::test(start_paused = true)]
async fn informers_sharing_a_registry_report_separately_and_vanish_when_dropped() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a")).unwrap();
    server.create("configmaps", &pod("c1")).unwrap();
    server.create("configmaps", &pod("c2")).unwrap();
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let informer = |resource: &str| {
        let lister_watcher = Arc::new(server.lister_watcher::<JsonObject>(resource, None).unwrap());
        SharedIndexInformer::new(
            lister_watcher,
            InformerConfig {
                name: resource.into(),
                metrics: Some(metrics.clone()),
                ..InformerConfig::default()
            },
        )
        .unwrap()
    };
    let pods = informer("pods");
    let configmaps = informer("configmaps");
    let stop = CancellationToken::new();
    let runs = [pods.spawn(stop.clone()), configmaps.spawn(stop.clone())];
    wait_for_cache_sync(GUARD, &[&pods, &configmaps])
        .await
        .unwrap();
    let s = scrape(&registry);
    assert_eq!(value(&s, r#"informer_objects{informer="pods"}"#), 1.0);
    assert_eq!(value(&s, r#"informer_objects{informer="configmaps"}"#), 2.0);
    assert_eq!(
        value(&s, r#"reflector_lists_total{name="configmaps"}"#),
        1.0
    );
    assert_eq!(
        value(&s, r#"reflector_items_per_list_sum{name="configmaps"}"#),
        2.0
    );

    stop.cancel();
    for run in runs {
        run.await.unwrap().unwrap();
    }
    drop(pods);
    // The cache is gone with the last handle: its gauge goes; counters stay.
    let s = scrape(&registry);
    assert!(!s.contains_key(r#"informer_objects{informer="pods"}"#));
    assert_eq!(value(&s, r#"informer_objects{informer="configmaps"}"#), 2.0);
    assert_eq!(value(&s, r#"reflector_lists_total{name="pods"}"#), 1.0);
}

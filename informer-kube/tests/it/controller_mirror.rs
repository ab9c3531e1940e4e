//! The configmap-mirror example's controller (`examples/configmap-mirror/controller.rs`, on
//! `informer_controller::Controller`) against the HTTP fake API server, in process: converged
//! state after the initial sync, after source changes and relabelling, and after every kind of
//! fault the fake server injects (dropped and broken watches, compaction while the watches are
//! down, ERROR 410 in open watches, failed writes with 500 and 429, failed lists); the retry
//! cap; shutdown before the sync and invalid settings. Waits are event-driven (every reconcile
//! wakes them) with real-time guards only against hangs; nothing asserts on timing. The
//! decision function's own tests are in `controller_mirror_decide`.

use crate::configmap_mirror::{MirrorConfig, MirrorError, NAME};
use crate::support::controller::{check, config_map_requests, mirror_data, settings};
use crate::support::{Env, GUARD};
use fake_apiserver::status;
use informer::FactoryConfig;
use informer_controller::{ControllerConfig, ControllerError};
use serde_json::json;

fn config() -> MirrorConfig {
    MirrorConfig::default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_and_stays_converged_through_changes_and_faults() {
    let cluster = Env::start().await;
    let config = config();
    let engine = &cluster.engine;
    let faults = engine.faults();
    for (ns, labelled) in [
        ("default", false),
        ("team-a", true),
        ("team-b", true),
        ("team-c", false),
        ("team-d", false),
        ("team-e", true),
    ] {
        cluster.namespace(ns, labelled);
    }
    cluster.set_source(&config, json!({"greeting": "hello", "color": "blue"}));
    // A ConfigMap that happens to use the mirror's name in an unselected namespace: not ours,
    // never touched. A stale mirror of ours in a namespace that no longer exists: deleted.
    let foreign = json!({
        "metadata": {"namespace": "team-c", "name": "mirror"},
        "data": {"owner": "someone else"},
    });
    let foreign_rv = engine
        .create("configmaps", &foreign)
        .unwrap()
        .resource_version();
    engine
        .create(
            "configmaps",
            &json!({
                "metadata": {
                    "namespace": "ghost",
                    "name": "mirror",
                    "labels": {"app.kubernetes.io/managed-by": "informer-rs-configmap-mirror"},
                },
                "data": {"stale": "yes"},
            }),
        )
        .unwrap();
    assert!(check(engine, &config).is_err());

    let mut running = cluster.run(config.clone(), settings());
    cluster
        .converge_mirrors(&config, &mut running, "initial sync")
        .await;
    assert_eq!(
        mirror_data(engine, &config, "team-a"),
        Some(json!({"greeting": "hello", "color": "blue"}))
    );
    assert_eq!(mirror_data(engine, &config, "team-d"), None);
    assert_eq!(mirror_data(engine, &config, "ghost"), None);
    // Three creates and one delete were sent, nothing else (no fault yet, and every reconcile
    // after a write of ours sees it in the cache: its informer's event queued it).
    assert_eq!(config_map_requests(engine, "POST"), 3);
    assert_eq!(config_map_requests(engine, "DELETE"), 1);
    assert_eq!(config_map_requests(engine, "PUT"), 0);

    // The source changes; one namespace loses the label, another gains it.
    cluster.set_source(&config, json!({"greeting": "hello", "color": "green"}));
    cluster.label("team-b", false);
    cluster.label("team-d", true);
    cluster
        .converge_mirrors(
            &config,
            &mut running,
            "source changed and namespaces relabelled",
        )
        .await;
    assert_eq!(mirror_data(engine, &config, "team-b"), None);
    assert_eq!(
        mirror_data(engine, &config, "team-d"),
        Some(json!({"greeting": "hello", "color": "green"}))
    );

    // Every watch ends cleanly (server timeout): re-watched from where they were.
    tokio::time::timeout(GUARD, engine.wait_for_open_watches("*", 3))
        .await
        .expect("watches open");
    assert_eq!(faults.drop_watches("*"), 3);
    cluster.set_source(&config, json!({"color": "teal"}));
    cluster
        .converge_mirrors(&config, &mut running, "watches dropped")
        .await;

    tokio::time::timeout(GUARD, engine.wait_for_open_watches("*", 3))
        .await
        .expect("watches back after the drop");
    // Every watch breaks and cannot come back while the history is compacted past the
    // informers' resourceVersions and the state changes: they must relist.
    faults.fail_watches("*", 10_000, status::internal_error("watch cache not ready"));
    assert_eq!(faults.break_watches("*"), 3);
    tokio::time::timeout(GUARD, engine.wait_for_open_watches("*", 0))
        .await
        .expect("the broken watches stay closed");
    cluster.set_source(&config, json!({"color": "orange", "size": "large"}));
    cluster.label("team-e", false);
    cluster.label("team-b", true);
    engine.compact_all();
    faults.clear();
    cluster
        .converge_mirrors(
            &config,
            &mut running,
            "compaction while the watches were down",
        )
        .await;

    // ERROR 410 into every open watch: relist.
    tokio::time::timeout(GUARD, engine.wait_for_open_watches("*", 3))
        .await
        .expect("watches back after the relist");
    assert_eq!(faults.expire_watches("*"), 3);
    cluster.set_source(&config, json!({"color": "purple"}));
    cluster
        .converge_mirrors(&config, &mut running, "ERROR 410 in open watches")
        .await;

    // Writes fail: four 500s, then two 429s with Retry-After; the controller retries with
    // backoff and gets there.
    let before = running.stats();
    faults.fail_writes("configmaps", 4, status::internal_error("etcd is down"));
    faults.fail_writes("configmaps", 2, status::too_many_requests(1));
    cluster.set_source(&config, json!({"color": "black"}));
    cluster
        .converge_mirrors(&config, &mut running, "failed writes")
        .await;
    faults.assert_all_used();
    let after = running.stats();
    // At least the six injected failures (a replace racing the cache's view of an earlier
    // write of ours may add a 409 Conflict, retried the same way).
    assert!(after.failures - before.failures >= 6, "{after:?}");
    assert_eq!(
        after.retries - before.retries,
        after.failures - before.failures
    );
    assert_eq!(after.given_up, 0, "{after:?}");

    // Lists fail while the informers relist (after ERROR 410): backoff, then success.
    tokio::time::timeout(GUARD, engine.wait_for_open_watches("*", 3))
        .await
        .expect("watches open");
    // Each relist streams first (the default since issue 10): those watches fail too, and
    // each informer falls back to a paginated list.
    faults.fail_watches("*", 3, status::internal_error("etcd is down"));
    faults.fail_lists("*", 3, status::internal_error("etcd is down"));
    faults.fail_lists("*", 1, status::too_many_requests(1));
    assert_eq!(faults.expire_watches("*"), 3);
    cluster.label("team-c", false);
    cluster.label("team-a", false);
    cluster.set_source(&config, json!({"color": "white"}));
    cluster
        .converge_mirrors(&config, &mut running, "failed lists during a relist")
        .await;
    faults.assert_all_used();

    // No source: no mirrors. The source back: mirrors back.
    cluster.delete_source(&config);
    cluster
        .converge_mirrors(&config, &mut running, "source deleted")
        .await;
    assert_eq!(mirror_data(engine, &config, "team-b"), None);
    cluster.set_source(&config, json!({"color": "gold"}));
    cluster
        .converge_mirrors(&config, &mut running, "source recreated")
        .await;
    assert_eq!(
        mirror_data(engine, &config, "team-b"),
        Some(json!({"color": "gold"}))
    );

    // A labelled namespace is deleted: its content goes with it (the fake server runs the
    // namespace controller's part), the mirror included, and the controller forgets it.
    engine.delete("namespaces", None, "team-d").unwrap();
    cluster
        .converge_mirrors(&config, &mut running, "labelled namespace deleted")
        .await;
    assert_eq!(mirror_data(engine, &config, "team-d"), None);

    // The foreign ConfigMap was never touched.
    let untouched = engine.get("configmaps", Some("team-c"), "mirror").unwrap();
    assert_eq!(untouched.resource_version(), foreign_rv);

    let report = running.stop().await;
    assert_eq!(report.worker_panics, 0);
    assert!(report.abandoned.is_empty(), "{report:?}");
    let informers = report
        .informers
        .as_ref()
        .expect("the controller owns the factory");
    assert!(informers.failures.is_empty(), "{:?}", informers.failures);
    assert_eq!(informers.informers.len(), 3);
    assert_eq!(report.informer_stats.len(), 3);
    for (name, stats) in &report.informer_stats {
        let reflector = stats.reflector.as_ref().unwrap();
        // The compaction and both ERROR 410 rounds made every informer relist; two rounds
        // count once when an informer is still backing off from the previous one when the
        // next begins (seen with the namespaces informer, whose state the second round does
        // not change, so convergence does not wait for it).
        assert!(
            reflector.counters.relists >= 2,
            "{name}: {:?}",
            reflector.counters
        );
        assert!(stats.has_synced, "{name}");
    }
    assert_eq!(report.stats.given_up, 0);
    // Shut down: the queue takes nothing more.
    cluster.http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_failing_too_often_is_given_up_and_picked_up_again_by_its_next_event() {
    let cluster = Env::start().await;
    let config = config();
    let capped = ControllerConfig {
        max_retries: Some(2),
        ..settings()
    };
    cluster.namespace("team-a", true);
    cluster.set_source(&config, json!({"k": "v"}));
    // Three failures: the first try and two retries; then the key is given up.
    cluster
        .engine
        .faults()
        .fail_writes("configmaps", 3, status::internal_error("no"));
    let mut running = cluster.run(config.clone(), capped);
    let given_up = running.wait_for_stats(|s| s.given_up == 1).await;
    assert_eq!((given_up.failures, given_up.retries), (3, 2));
    assert!(check(&cluster.engine, &config).is_err());
    // Its next event enqueues it again, and now the write goes through.
    cluster.label("team-a", true);
    cluster.set_source(&config, json!({"k": "w"}));
    cluster
        .converge_mirrors(&config, &mut running, "after giving up")
        .await;
    let report = running.stop().await;
    assert_eq!(report.stats.given_up, 1);
    cluster.http.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_before_sync_and_invalid_settings() {
    let cluster = Env::start().await;
    // Lists fail for a long time: cancelling before the sync still shuts down cleanly.
    cluster
        .engine
        .faults()
        .fail_lists("*", 10_000, status::internal_error("down"));
    // And the streaming lists (the default since issue 10), which then fall back to lists.
    cluster
        .engine
        .faults()
        .fail_watches("*", 10_000, status::internal_error("down"));
    let running = cluster.run(config(), settings());
    tokio::time::timeout(
        GUARD,
        cluster
            .engine
            .wait_for_request(|r| r.is_list_of("namespaces")),
    )
    .await
    .unwrap();
    let report = running.stop().await;
    assert_eq!(report.stats.reconciles, 0);
    assert!(report.informers.unwrap().failures.is_empty());

    // Invalid settings: a selector that does not parse and a source that is not
    // namespace/name are refused by the command line; a mirror named like the source by the
    // controller; no workers by the run.
    use clap::Parser;
    for bad in [
        ["--selector", "a in ("],
        ["--source", "no-namespace"],
        ["--source", "default/"],
    ] {
        let parsed = MirrorConfig::try_parse_from([NAME].into_iter().chain(bad));
        assert!(parsed.is_err(), "{bad:?}: {parsed:?}");
    }
    let same_name = MirrorConfig {
        mirror_name: "mirror-source".into(),
        ..config()
    };
    let error = cluster
        .try_run(same_name, settings(), FactoryConfig::default())
        .err()
        .expect("a mirror named like its source is refused");
    assert!(matches!(error, MirrorError::SameName(_)), "{error:?}");
    let no_workers = ControllerConfig {
        workers: 0,
        ..settings()
    };
    let error = cluster
        .run(config(), no_workers)
        .finish()
        .await
        .unwrap_err();
    assert!(matches!(error, ControllerError::Config { .. }), "{error:?}");

    // Caches that cannot sync in time are an error, after a clean shutdown.
    let impatient = ControllerConfig {
        sync_timeout: std::time::Duration::from_millis(200),
        ..settings()
    };
    let error = cluster.run(config(), impatient).finish().await.unwrap_err();
    assert!(matches!(error, ControllerError::Sync { .. }), "{error:?}");
    cluster.http.shutdown().await.unwrap();
}

//! The main job's program logic (`examples/informer-demo/app.rs`), run in process for ten
//! seconds (the run's bound, initial sync included: room for a loaded CI machine, where the
//! one test binary runs heavy tests beside this one) against the embedded fake API server: the final summary must report every seeded
//! pod synced, live events, and the per-namespace handler agreeing with the namespace index.

#[allow(dead_code, reason = "the example's entry points are not all used here")]
#[path = "../../examples/informer-demo/app.rs"]
mod app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_syncs_every_seeded_pod_and_sees_live_events() {
    let summary = app::run(
        [
            "informer-demo",
            "--fake",
            "--plain",
            "--duration",
            "10s",
            "--pods",
            "1000",
            "--namespaces",
            "10",
            "--churn",
            "200",
        ],
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(summary.seeded, Some(1000));
    assert_eq!(summary.synced, 1000);
    assert!(summary.events.live() > 0, "{summary:?}");
    assert_eq!(summary.events.initial_adds, 1000);
    assert!(summary.tracker_agrees, "{summary:?}");
    assert_eq!(summary.stuck_handlers, 0);
    assert_eq!(summary.top_namespaces.len(), 5);
    let churn = summary.churn.expect("churn stats");
    assert!(churn.creates + churn.updates + churn.deletes > 0);
    assert_eq!(summary.store, app::StoreArg::Indexed);
    let rss = summary.rss_after_sync.expect("/proc/self/status on Linux");
    assert!(rss.current > 0 && rss.peak >= rss.current, "{rss:?}");
}

/// `--store compact`: the same run with the compact cache (ten seconds as above, the bound of
/// the initial sync); the summary says which store and the process's memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_with_the_compact_store() {
    let summary = app::run(
        [
            "informer-demo",
            "--fake",
            "--plain",
            "--duration",
            "10s",
            "--pods",
            "1000",
            "--namespaces",
            "10",
            "--churn",
            "200",
            "--store",
            "compact",
        ],
        tokio_util::sync::CancellationToken::new(),
    )
    .await
    .unwrap();
    assert_eq!(summary.store, app::StoreArg::Compact);
    assert_eq!(summary.synced, 1000);
    assert_eq!(summary.events.initial_adds, 1000);
    assert!(summary.tracker_agrees, "{summary:?}");
    assert_eq!(summary.stuck_handlers, 0);
    assert_eq!(summary.top_namespaces.len(), 5);
    assert!(summary.rss_at_exit.is_some());
}

use std::time::{Duration, Instant};

use crate::support::hostile::{Behaviour, Hostile};
use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};

/// `--duration` bounds the initial sync too: against a server that answers every list with
/// `429 Retry-After: 0` (the informer never syncs), the demo ends by itself at the duration,
/// with an error that says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_bounds_an_initial_sync_that_never_finishes() {
    let http = FakeHttpServer::start(FakeApiServer::new(), HttpConfig::default())
        .await
        .unwrap();
    let hostile = Hostile::start(http.addr()).await;
    hostile.set_list(Behaviour::Throttle {
        retry_after: "0".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let text = http.kubeconfig(None).replace(&http.url(), &hostile.url());
    assert!(text.contains(&hostile.url()));
    std::fs::write(&kubeconfig, text).unwrap();
    let started = Instant::now();
    let run = app::run(
        [
            "informer-demo",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--plain",
            "--duration",
            "2s",
        ],
        tokio_util::sync::CancellationToken::new(),
    );
    let result = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the demo ran past its --duration");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took <= Duration::from_secs(6),
        "{took:?}"
    );
    match result {
        Err(app::DemoError::SyncTimedOut {
            after, last_error, ..
        }) => {
            assert_eq!(after, Duration::from_secs(2));
            assert!(last_error.contains("429"), "{last_error}");
        }
        other => panic!("expected a sync timeout, got {other:?}"),
    }
}

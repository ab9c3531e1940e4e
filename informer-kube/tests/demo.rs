//! The main job's program logic (`examples/informer-demo/app.rs`), run in process for a few
//! seconds against the embedded fake API server: the final summary must report every seeded
//! pod synced, live events, and the per-namespace handler agreeing with the namespace index.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

#[allow(dead_code, reason = "the example's entry points are not all used here")]
#[path = "../examples/informer-demo/app.rs"]
mod app;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_syncs_every_seeded_pod_and_sees_live_events() {
    let summary = app::run([
        "informer-demo",
        "--fake",
        "--plain",
        "--duration",
        "4s",
        "--pods",
        "1000",
        "--namespaces",
        "10",
        "--churn",
        "200",
    ])
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
}

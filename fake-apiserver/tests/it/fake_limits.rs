//! Fake API server: the engine's own limits. resourceVersions that stop instead of wrapping,
//! history bounded by bytes, watch timeouts of any size, churn that cannot outrun the store.

use std::time::Duration;

use fake_apiserver::seed::{Churn, ChurnConfig};
use fake_apiserver::{
    FakeApiServer, HistoryConfig, MAX_RESOURCE_VERSION, Query, ServerConfig, WatchFrame,
};
use serde_json::{Value, json};

use crate::support::VIRTUAL_GUARD;

fn config_map(name: &str, data_bytes: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "a"},
        "data": {"blob": "x".repeat(data_bytes)},
    })
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn resource_versions_stop_at_the_maximum_instead_of_wrapping() {
    let server = FakeApiServer::new();
    assert_eq!(MAX_RESOURCE_VERSION, i64::MAX as u64);
    let beyond = server
        .set_next_resource_version(MAX_RESOURCE_VERSION + 1)
        .unwrap_err();
    assert_eq!(beyond.code, 400, "{beyond:?}");
    assert!(beyond.message.contains("at most"), "{}", beyond.message);
    server
        .set_next_resource_version(MAX_RESOURCE_VERSION)
        .unwrap();
    let last = server.create("configmaps", &config_map("last", 1)).unwrap();
    assert_eq!(last.resource_version(), MAX_RESOURCE_VERSION);
    // Every kind of write now fails with a 500 naming the cause, and changes nothing.
    let create = server
        .create("configmaps", &config_map("one-more", 1))
        .unwrap_err();
    let update = server
        .patch(
            "configmaps",
            Some("a"),
            "last",
            &json!({"data": {"blob": "y"}}),
        )
        .unwrap_err();
    let delete = server.delete("configmaps", Some("a"), "last").unwrap_err();
    for s in [&create, &update, &delete] {
        assert_eq!((s.code, s.reason.as_str()), (500, "InternalError"), "{s:?}");
        assert!(
            s.message.contains("resourceVersion exhausted"),
            "{}",
            s.message
        );
    }
    assert_eq!(server.resource_version(), MAX_RESOURCE_VERSION);
    let objects = server.objects("configmaps", Some("a")).unwrap();
    assert_eq!(objects.len(), 1);
    assert_eq!(objects[0].resource_version(), MAX_RESOURCE_VERSION);
    // A no-op update needs no resourceVersion and still succeeds.
    let same = server.update("configmaps", &last.to_value()).unwrap();
    assert_eq!(same.resource_version(), MAX_RESOURCE_VERSION);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn history_is_bounded_by_bytes_across_resources() {
    const MAX: usize = 1 << 20;
    let server = FakeApiServer::with_config(ServerConfig {
        history_max_bytes: MAX,
        ..ServerConfig::default()
    });
    assert_eq!(server.history_bytes(), 0);
    let pod = server
        .create(
            "pods",
            &json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "a", "annotations": {"pad": "x".repeat(100_000)}}}),
        )
        .unwrap();
    let mut sizes = vec![pod.bytes().len()];
    assert_eq!(server.history_bytes(), sizes[0]);
    // 300 KB config maps: the bound keeps three of them, dropping the oldest events first,
    // the pod's included.
    let mut created = Vec::new();
    for i in 0..8 {
        let o = server
            .create("configmaps", &config_map(&format!("c{i}"), 300_000))
            .unwrap();
        sizes.push(o.bytes().len());
        created.push(o);
        assert!(server.history_bytes() <= MAX, "{}", server.history_bytes());
    }
    let kept: usize = created[5..].iter().map(|o| o.bytes().len()).sum();
    assert_eq!(server.history_bytes(), kept);
    assert_eq!(
        server.oldest_resource_version("configmaps").unwrap(),
        created[4].resource_version()
    );
    assert_eq!(
        server.oldest_resource_version("pods").unwrap(),
        pod.resource_version()
    );
    // A watcher behind the dropped events gets 410, as for the other bounds.
    let target = server.target("configmaps", Some("a")).unwrap();
    let query = Query {
        watch: true,
        resource_version: Some(created[0].resource_version().to_string()),
        ..Query::default()
    };
    let mut watch = server.watch(&target, &query).await.unwrap();
    match watch.next().await {
        Some(WatchFrame::Error(s)) => assert_eq!(s.code, 410, "{s:?}"),
        other => panic!("expected ERROR 410, got {other:?}"),
    }
    // One object larger than the bound: only its own event stays (the newest event of the
    // resource written is always kept, so caught-up watchers still see it).
    let huge = server
        .create("configmaps", &config_map("huge", 2 * MAX))
        .unwrap();
    assert_eq!(server.history_bytes(), huge.bytes().len());
    // Deletes carry the last state: accounted like any event. Count eviction frees bytes too.
    server.set_history(HistoryConfig {
        min_events: 0,
        max_events: 1,
        min_age: Duration::ZERO,
    });
    let deleted = server.delete("configmaps", Some("a"), "c7").unwrap();
    assert_eq!(server.history_bytes(), deleted.object().bytes().len());
    // Lowering the bound applies at once (with no write to keep, down to nothing);
    // compaction frees everything too.
    server.set_history_max_bytes(0);
    assert_eq!(server.history_bytes(), 0);
    server.set_history(HistoryConfig::default());
    server.set_history_max_bytes(MAX);
    server
        .create("configmaps", &config_map("small", 10))
        .unwrap();
    assert!(server.history_bytes() > 0);
    server.compact_all();
    assert_eq!(server.history_bytes(), 0);
}

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn watch_timeouts_of_any_size_never_panic() {
    let server = FakeApiServer::new();
    let target = server.target("pods", None).unwrap();
    server.set_bookmark_interval(Duration::from_secs(u64::MAX));
    for seconds in [i64::MAX, i64::MAX - 1, 1 << 62, 10_i64.pow(15)] {
        let query = Query {
            watch: true,
            resource_version: Some(server.resource_version().to_string()),
            timeout_seconds: Some(seconds),
            allow_watch_bookmarks: true,
            ..Query::default()
        };
        let mut watch = server.watch(&target, &query).await.unwrap();
        let name = format!("p{}", seconds % 1000);
        server
            .create(
                "pods",
                &json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": {"name": name, "namespace": "a"}}),
            )
            .unwrap();
        match tokio::time::timeout(VIRTUAL_GUARD, watch.next())
            .await
            .unwrap()
        {
            Some(WatchFrame::Added(o)) => assert_eq!(o.name(), name),
            other => panic!("timeoutSeconds={seconds}: expected ADDED, got {other:?}"),
        }
    }
    // Negative: the watch ends at once, as on a real server, whose deadline is then past.
    for seconds in [-1, i64::MIN] {
        let query = Query {
            watch: true,
            timeout_seconds: Some(seconds),
            ..Query::default()
        };
        let mut watch = server.watch(&target, &query).await.unwrap();
        let frame = tokio::time::timeout(Duration::from_secs(1), watch.next())
            .await
            .unwrap();
        assert!(frame.is_none(), "timeoutSeconds={seconds}: {frame:?}");
    }
}

/// A rate far above what the store can write: the driver skips what it cannot catch up
/// (counting it), keeps the runtime responsive, and stops at once. Real time, small objects
/// and a small history window keep it short and small.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_beyond_what_the_store_can_write_skips_and_stops_at_once() {
    let server = FakeApiServer::with_config(ServerConfig {
        history: HistoryConfig {
            min_events: 0,
            max_events: 1000,
            min_age: Duration::ZERO,
        },
        ..ServerConfig::default()
    });
    let churn = Churn::start(
        server.clone(),
        ChurnConfig {
            rate_per_second: 1e9,
            resources: vec!["configmaps".into()],
            ..ChurnConfig::default()
        },
    );
    // The runtime stays responsive (timers fire while the churn runs) until the churn has
    // both written and skipped.
    let mut ticks = 0;
    let running = loop {
        tokio::time::timeout(
            Duration::from_secs(10),
            tokio::time::sleep(Duration::from_millis(50)),
        )
        .await
        .expect("a timer starved by the churn");
        ticks += 1;
        let stats = churn.stats();
        if ticks >= 5 && stats.creates > 0 && stats.skipped > 0 {
            break stats;
        }
        assert!(ticks < 1200, "no write or no skip in a minute: {stats:?}");
    };
    let stats = tokio::time::timeout(Duration::from_secs(5), churn.stop())
        .await
        .expect("stopping the churn hung");
    assert!(stats.skipped >= running.skipped, "{stats:?}");
    // Stopped means stopped: no write after `stop` returned.
    let rv = server.resource_version();
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(server.resource_version(), rv);
}

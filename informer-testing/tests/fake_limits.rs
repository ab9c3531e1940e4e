//! Fake API server: the engine's own limits. Watch timeouts of any size.
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

use std::time::Duration;

use informer_testing::fake::{FakeApiServer, Query, WatchFrame};
use serde_json::json;

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
        match tokio::time::timeout(Duration::from_secs(600), watch.next())
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

//! Fake API server: watch semantics through the in-process front end.

use std::time::Duration;

use fake_apiserver::{FakeApiServer, HistoryConfig, Query, ServerConfig, WatchFrame};
use futures::StreamExt;
use informer_core::{
    Error, ListerWatcher, Object, ResourceVersionMatch, WatchEvent, WatchOptions, WatchStream,
};
use informer_testing::JsonObject;
use serde_json::json;

use crate::support::{from, lw, next, next_event, pod};

type Event = WatchEvent<JsonObject>;

/// `TYPE name@rv` for compact assertions.
fn show(e: &Event) -> String {
    match e {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => format!(
            "{} {}@{}",
            e.type_name(),
            o.object_name().unwrap_or("?"),
            o.object_resource_version().unwrap_or("?")
        ),
        WatchEvent::Bookmark(b) => format!(
            "BOOKMARK@{}{}",
            b.resource_version,
            if b.initial_events_end { " end" } else { "" }
        ),
        WatchEvent::Error(s) => format!("ERROR {} {}", s.code, s.message),
    }
}

async fn take(stream: &mut WatchStream<JsonObject>, n: usize) -> Vec<String> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(show(&next_event(stream).await));
    }
    out
}

async fn assert_ends(stream: &mut WatchStream<JsonObject>) {
    assert!(next(stream).await.is_none(), "the watch should have ended");
}

#[tokio::test(start_paused = true)]
async fn watch_from_empty_or_zero_sends_current_state_then_changes() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    server.create("pods", &pod("a", "p2")).unwrap();
    let expected = [
        (None, ["ADDED p1@1", "ADDED p2@2"], "DELETED p1@3"),
        (
            Some("0".to_owned()),
            ["ADDED p1@4", "ADDED p2@2"],
            "DELETED p1@5",
        ),
    ];
    for (rv, initial, deleted) in expected {
        let opts = WatchOptions {
            resource_version: rv,
            ..WatchOptions::default()
        };
        let mut w = lw(&server, Some("a")).watch(&opts).await.unwrap();
        assert_eq!(take(&mut w, 2).await, initial);
        server.delete("pods", Some("a"), "p1").unwrap();
        assert_eq!(take(&mut w, 1).await, [deleted]);
        server.create("pods", &pod("a", "p1")).unwrap();
    }
}

#[tokio::test(start_paused = true)]
async fn watch_from_a_resource_version_sends_only_later_changes() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap(); // 1
    server.create("pods", &pod("a", "p2")).unwrap(); // 2
    server
        .patch(
            "pods",
            Some("a"),
            "p1",
            &json!({"metadata": {"labels": {"x": "1"}}}),
        )
        .unwrap(); // 3
    server.create("configmaps", &pod("a", "other")).unwrap(); // 4, another resource
    server.delete("pods", Some("a"), "p2").unwrap(); // 5
    let mut w = lw(&server, None).watch(&from(1)).await.unwrap();
    assert_eq!(
        take(&mut w, 3).await,
        ["ADDED p2@2", "MODIFIED p1@3", "DELETED p2@5"]
    );
    server.create("pods", &pod("b", "p3")).unwrap();
    assert_eq!(take(&mut w, 1).await, ["ADDED p3@6"]);
}

#[tokio::test(start_paused = true)]
async fn watch_from_a_compacted_resource_version_gets_error_410() {
    let server = FakeApiServer::new();
    for i in 0..5 {
        server.create("pods", &pod("a", &format!("p{i}"))).unwrap();
    }
    server.compact(3).unwrap();
    // 3 is still fine (the events after it are kept) ...
    let mut ok = lw(&server, None).watch(&from(3)).await.unwrap();
    assert_eq!(take(&mut ok, 2).await, ["ADDED p3@4", "ADDED p4@5"]);
    // ... 2 is too old: HTTP 200, then ERROR 410, then the end.
    let mut w = lw(&server, None).watch(&from(2)).await.unwrap();
    let e = next_event(&mut w).await;
    let WatchEvent::Error(s) = &e else {
        panic!("expected ERROR, got {e:?}")
    };
    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
    assert_eq!(s.message, "too old resource version: 2 (3)");
    assert_ends(&mut w).await;
    assert_eq!(server.oldest_resource_version("pods").unwrap(), 3);
}

#[tokio::test(start_paused = true)]
async fn bookmarks_only_for_watchers_that_asked() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    let lw = lw(&server, None);
    let mut with = lw
        .watch(&WatchOptions {
            allow_watch_bookmarks: true,
            ..from(1)
        })
        .await
        .unwrap();
    let mut without = lw.watch(&from(1)).await.unwrap();
    assert_eq!(server.send_bookmark("pods"), 1);
    server.create("configmaps", &pod("a", "cm")).unwrap(); // rv 2 elsewhere
    assert_eq!(take(&mut with, 1).await, ["BOOKMARK@2"]);
    server.create("pods", &pod("a", "p2")).unwrap();
    assert_eq!(take(&mut without, 1).await, ["ADDED p2@3"]);
    assert_eq!(take(&mut with, 1).await, ["ADDED p2@3"]);
}

#[tokio::test(start_paused = true)]
async fn periodic_bookmarks_about_once_a_minute() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            allow_watch_bookmarks: true,
            ..from(1)
        })
        .await
        .unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(take(&mut w, 1).await, ["BOOKMARK@1"]);
    assert_eq!(start.elapsed(), Duration::from_secs(60));
    server.create("pods", &pod("a", "p2")).unwrap();
    assert_eq!(take(&mut w, 2).await, ["ADDED p2@2", "BOOKMARK@2"]);
    assert_eq!(start.elapsed(), Duration::from_secs(120));

    server.set_bookmark_interval(Duration::from_secs(5));
    let mut fast = lw(&server, None)
        .watch(&WatchOptions {
            allow_watch_bookmarks: true,
            ..from(2)
        })
        .await
        .unwrap();
    let t = tokio::time::Instant::now();
    assert_eq!(take(&mut fast, 1).await, ["BOOKMARK@2"]);
    assert_eq!(t.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_never_overtakes_undelivered_events() {
    let server = FakeApiServer::new();
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            allow_watch_bookmarks: true,
            ..from(0)
        })
        .await
        .unwrap();
    for i in 0..3 {
        server.create("pods", &pod("a", &format!("p{i}"))).unwrap();
    }
    server.send_bookmark("*");
    assert_eq!(
        take(&mut w, 4).await,
        ["ADDED p0@1", "ADDED p1@2", "ADDED p2@3", "BOOKMARK@3"]
    );
}

#[tokio::test(start_paused = true)]
async fn streaming_list_ends_with_the_annotated_bookmark() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    server.create("pods", &pod("a", "p2")).unwrap();
    server.create("configmaps", &pod("a", "cm")).unwrap(); // rv 3
    let opts = WatchOptions {
        send_initial_events: Some(true),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        ..WatchOptions::default()
    };
    let mut w = lw(&server, None).watch(&opts).await.unwrap();
    assert_eq!(
        take(&mut w, 3).await,
        ["ADDED p1@1", "ADDED p2@2", "BOOKMARK@3 end"]
    );
    server.create("pods", &pod("a", "p3")).unwrap();
    assert_eq!(take(&mut w, 1).await, ["ADDED p3@4"]);

    // From a resourceVersion: still the full current state, then the bookmark.
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            resource_version: Some("2".into()),
            ..opts.clone()
        })
        .await
        .unwrap();
    assert_eq!(
        take(&mut w, 4).await,
        ["ADDED p1@1", "ADDED p2@2", "ADDED p3@4", "BOOKMARK@4 end"]
    );

    // Without allowWatchBookmarks there is no end bookmark (as upstream).
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            allow_watch_bookmarks: false,
            ..opts
        })
        .await
        .unwrap();
    assert_eq!(
        take(&mut w, 3).await,
        ["ADDED p1@1", "ADDED p2@2", "ADDED p3@4"]
    );
    server.create("pods", &pod("a", "p4")).unwrap();
    assert_eq!(take(&mut w, 1).await, ["ADDED p4@5"]);
}

#[tokio::test(start_paused = true)]
async fn send_initial_events_false_starts_from_now() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            send_initial_events: Some(false),
            resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    server.create("pods", &pod("a", "p2")).unwrap();
    assert_eq!(take(&mut w, 1).await, ["ADDED p2@2"]);
}

#[tokio::test(start_paused = true)]
async fn invalid_watch_options_are_422() {
    let server = FakeApiServer::new();
    let target = server.target("pods", None).unwrap();
    let cases = [
        (
            Query {
                watch: true,
                send_initial_events: Some(true),
                ..Query::default()
            },
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            Query {
                watch: true,
                resource_version_match: Some("NotOlderThan".into()),
                ..Query::default()
            },
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            Query {
                watch: true,
                send_initial_events: Some(true),
                resource_version_match: Some("Exact".into()),
                ..Query::default()
            },
            "Unsupported value",
        ),
    ];
    for (query, want) in cases {
        let s = server.watch(&target, &query).await.unwrap_err();
        assert_eq!(s.code, 422, "{query:?}");
        assert!(
            s.message.contains(want),
            "{} should contain {want}",
            s.message
        );
    }
    assert_eq!(server.open_watches("pods"), 0);
}

#[tokio::test(start_paused = true)]
async fn timeout_seconds_ends_the_watch_normally() {
    let server = FakeApiServer::new();
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            timeout_seconds: Some(30),
            ..from(0)
        })
        .await
        .unwrap();
    let start = tokio::time::Instant::now();
    assert_ends(&mut w).await;
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn a_bookmark_comes_two_seconds_before_the_timeout() {
    let server = FakeApiServer::new();
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            timeout_seconds: Some(30),
            allow_watch_bookmarks: true,
            ..from(0)
        })
        .await
        .unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(take(&mut w, 1).await, ["BOOKMARK@0"]);
    assert_eq!(start.elapsed(), Duration::from_secs(28));
    assert_ends(&mut w).await;
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn selectors_turn_transitions_into_added_and_deleted() {
    let server = FakeApiServer::new();
    server
        .create("pods", &pod("a", "p").with_label("app", "web"))
        .unwrap(); // 1
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            label_selector: Some("app=web".into()),
            ..from(1)
        })
        .await
        .unwrap();
    let relabel = |v: &str| json!({"metadata": {"labels": {"app": v}}});
    server
        .patch("pods", Some("a"), "p", &relabel("db"))
        .unwrap(); // 2: leaves
    server
        .patch("pods", Some("a"), "p", &relabel("cache"))
        .unwrap(); // 3: unseen
    server
        .patch("pods", Some("a"), "p", &relabel("web"))
        .unwrap(); // 4: enters
    server
        .create("pods", &pod("a", "other").with_label("app", "db"))
        .unwrap(); // 5: unseen
    server
        .patch(
            "pods",
            Some("a"),
            "p",
            &json!({"metadata": {"annotations": {"x": "1"}}}),
        )
        .unwrap(); // 6
    let events = take(&mut w, 3).await;
    assert_eq!(events, ["DELETED p@2", "ADDED p@4", "MODIFIED p@6"]);

    // The DELETED for an object leaving the selection carries its previous content.
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            label_selector: Some("app=web".into()),
            ..from(1)
        })
        .await
        .unwrap();
    match next_event(&mut w).await {
        WatchEvent::Deleted(o) => {
            assert_eq!(
                o.object_labels().get("app").map(String::as_str),
                Some("web")
            );
            assert_eq!(o.object_resource_version(), Some("2"));
        }
        other => panic!("expected DELETED, got {other:?}"),
    }

    let mut by_field = lw(&server, None)
        .watch(&WatchOptions {
            field_selector: Some("metadata.name=other".into()),
            ..from(0)
        })
        .await
        .unwrap();
    assert_eq!(take(&mut by_field, 1).await, ["ADDED other@5"]);
}

#[tokio::test(start_paused = true)]
async fn watches_honour_pod_field_selectors() {
    // A node-local controller's watch: pods scheduled onto its node arrive as ADDED, pods
    // moving away as DELETED, others never.
    let server = FakeApiServer::new();
    let on = |name: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "a"}, "spec": {"nodeName": node}})
    };
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            field_selector: Some("spec.nodeName=n1".into()),
            ..from(0)
        })
        .await
        .unwrap();
    server.create("pods", &on("x", "n1")).unwrap(); // 1
    server.create("pods", &on("y", "n2")).unwrap(); // 2
    server
        .patch("pods", Some("a"), "y", &json!({"spec": {"nodeName": "n1"}}))
        .unwrap(); // 3
    server
        .patch("pods", Some("a"), "x", &json!({"spec": {"nodeName": "n3"}}))
        .unwrap(); // 4
    assert_eq!(
        take(&mut w, 3).await,
        ["ADDED x@1", "ADDED y@3", "DELETED x@4"]
    );
    let err = lw(&server, None)
        .watch(&WatchOptions {
            field_selector: Some("spec.nodeNam=n1".into()),
            ..from(0)
        })
        .await
        .err()
        .unwrap();
    match err {
        Error::Api { status, .. } => assert_eq!(status.code, 400),
        other => panic!("expected 400, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn namespaced_watch_sees_only_its_namespace() {
    let server = FakeApiServer::new();
    let mut w = lw(&server, Some("b")).watch(&from(0)).await.unwrap();
    server.create("pods", &pod("a", "x")).unwrap();
    server.create("pods", &pod("b", "y")).unwrap();
    assert_eq!(take(&mut w, 1).await, ["ADDED y@2"]);
    assert_eq!(
        server.requests()[0].to_string(),
        "GET /api/v1/namespaces/b/pods?watch=1&resourceVersion=0"
    );
}

#[tokio::test(start_paused = true)]
async fn watch_from_a_future_resource_version_waits_then_errors_504() {
    let server = FakeApiServer::new();
    server.create("pods", &pod("a", "p1")).unwrap();
    let mut w = lw(&server, None).watch(&from(10)).await.unwrap();
    let start = tokio::time::Instant::now();
    match next_event(&mut w).await {
        WatchEvent::Error(s) => {
            assert_eq!(s.code, 504);
            assert_eq!(
                s.class(),
                informer_core::ErrorClass::ResourceVersionTooLarge
            );
        }
        other => panic!("expected ERROR 504, got {other:?}"),
    }
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert_ends(&mut w).await;

    // Reached in time: the watch just goes on.
    let mut w = lw(&server, None).watch(&from(2)).await.unwrap();
    server.create("pods", &pod("a", "p2")).unwrap(); // 2
    server.create("pods", &pod("a", "p3")).unwrap(); // 3
    assert_eq!(take(&mut w, 1).await, ["ADDED p3@3"]);
}

#[tokio::test(start_paused = true)]
async fn slow_watcher_is_dropped_with_410_while_fast_one_continues_and_writers_never_block() {
    let server = FakeApiServer::with_config(ServerConfig {
        history: HistoryConfig {
            min_events: 0,
            max_events: 10,
            min_age: Duration::ZERO,
        },
        ..ServerConfig::default()
    });
    let lw = lw(&server, None);
    let mut fast = lw.watch(&from(0)).await.unwrap();
    let mut slow = lw.watch(&from(0)).await.unwrap();
    let mut seen = Vec::new();
    // 50 writes; the fast watcher reads as they come, the slow one reads nothing. Writes are
    // synchronous: none of them can wait for a watcher.
    for i in 0..50 {
        server
            .create("pods", &pod("a", &format!("p{i:02}")))
            .unwrap();
        seen.extend(take(&mut fast, 1).await);
    }
    assert_eq!(seen.len(), 50);
    assert_eq!(seen[49], "ADDED p49@50");
    match next_event(&mut slow).await {
        WatchEvent::Error(s) => {
            assert_eq!(s.code, 410);
            assert_eq!(s.message, "too old resource version: 0 (40)");
        }
        other => panic!("expected ERROR 410, got {other:?}"),
    }
    assert_ends(&mut slow).await;
    server.create("pods", &pod("a", "after")).unwrap();
    assert_eq!(take(&mut fast, 1).await, ["ADDED after@51"]);
}

#[tokio::test(start_paused = true)]
async fn history_window_keeps_young_events() {
    let server = FakeApiServer::with_config(ServerConfig {
        history: HistoryConfig {
            min_events: 2,
            max_events: 1000,
            min_age: Duration::from_secs(75),
        },
        ..ServerConfig::default()
    });
    for i in 0..5 {
        server.create("pods", &pod("a", &format!("p{i}"))).unwrap();
    }
    assert_eq!(server.oldest_resource_version("pods").unwrap(), 0);
    tokio::time::advance(Duration::from_secs(76)).await;
    server.create("pods", &pod("a", "late")).unwrap(); // trims the old ones beyond 2
    assert_eq!(server.oldest_resource_version("pods").unwrap(), 4);
    let mut w = lw(&server, None).watch(&from(3)).await.unwrap();
    assert!(matches!(next_event(&mut w).await, WatchEvent::Error(s) if s.code == 410));
}

#[tokio::test(start_paused = true)]
async fn many_watchers_share_the_same_bytes() {
    let server = FakeApiServer::new();
    let target = server.target("pods", None).unwrap();
    let query = Query {
        watch: true,
        resource_version: Some("0".into()),
        ..Query::default()
    };
    let mut subs = Vec::new();
    for _ in 0..100 {
        subs.push(server.watch(&target, &query).await.unwrap());
    }
    assert_eq!(server.open_watches("pods"), 100);
    let created = server.create("pods", &pod("a", "p")).unwrap();
    for sub in &mut subs {
        match sub.next().await.unwrap() {
            WatchFrame::Added(o) => assert!(std::sync::Arc::ptr_eq(&o, &created)),
            other => panic!("unexpected {other:?}"),
        }
    }
    drop(subs);
    assert_eq!(server.open_watches("pods"), 0);
}

#[tokio::test(start_paused = true)]
async fn frames_render_as_wire_lines() {
    let server = FakeApiServer::new();
    let target = server.target("pods", None).unwrap();
    let created = server.create("pods", &pod("a", "p")).unwrap();
    let def = target.resource();
    let line = WatchFrame::Added(created.clone())
        .to_json_line(def)
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(v["type"], "ADDED");
    assert_eq!(v["object"]["metadata"]["name"], "p");
    assert!(line.ends_with(b"\n"));
    let bookmark = WatchFrame::Bookmark {
        resource_version: 7,
        initial_events_end: true,
    }
    .to_json_line(def)
    .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&bookmark).unwrap();
    assert_eq!(
        v,
        json!({"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"resourceVersion": "7", "annotations": {"k8s.io/initial-events-end": "true"}}}})
    );
    let err = WatchFrame::Error(fake_apiserver::status::too_old_resource_version(1, 2))
        .to_json_line(def)
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&err).unwrap();
    assert_eq!(v["object"]["kind"], "Status");
    assert_eq!(v["object"]["code"], 410);
    assert!(WatchFrame::Broken.to_json_line(def).is_none());
}

#[tokio::test(start_paused = true)]
async fn tests_can_wait_for_watches_and_requests() {
    let server = FakeApiServer::new();
    let client_lw = lw(&server, Some("a"));
    let client = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let mut w = client_lw.watch(&from(0)).await.unwrap();
        // Read until the watch ends.
        while w.next().await.is_some() {}
    });
    let start = tokio::time::Instant::now();
    let req = server.wait_for_request(|r| r.is_watch_of("pods")).await;
    assert_eq!(start.elapsed(), Duration::from_secs(5));
    assert_eq!(req.path, "/api/v1/namespaces/a/pods");
    server.wait_for_open_watches("pods", 1).await;
    assert_eq!(server.open_watches("pods"), 1);
    assert_eq!(server.faults().drop_watches("pods"), 1);
    server.wait_for_open_watches("pods", 0).await;
    client.await.unwrap();
    // A watch that ended is no longer open, even before it is dropped.
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            timeout_seconds: Some(1),
            ..from(0)
        })
        .await
        .unwrap();
    assert_eq!(server.open_watches("*"), 1);
    assert_ends(&mut w).await;
    assert_eq!(server.open_watches("*"), 0);
    assert_eq!(server.faults().drop_watches("*"), 0);
}

/// An update that drops the last finalizer of an object being deleted deletes it. When that
/// update also changes its labels out of a watcher's selection, the watcher saw the object
/// before and must still hear of its deletion (it used to hear nothing, and its cache kept
/// the object for ever; found by the chaos convergence test).
#[tokio::test(start_paused = true)]
async fn a_deletion_that_leaves_the_selection_is_still_seen() {
    let server = FakeApiServer::new();
    let mut held = pod("a", "p").with_label("app", "web");
    held.metadata
        .other
        .insert("finalizers".into(), json!(["example.com/hold"]));
    server.create("pods", &held).unwrap(); // 1
    server.delete("pods", Some("a"), "p").unwrap(); // 2: marked for deletion
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            label_selector: Some("app=web".into()),
            ..from(2)
        })
        .await
        .unwrap();
    // 3: the finalizer goes, and the labels change: the object is deleted.
    server
        .update("pods", &pod("a", "p").with_label("app", "db"))
        .unwrap();
    server
        .create("pods", &pod("a", "marker").with_label("app", "web"))
        .unwrap(); // 4
    match next_event(&mut w).await {
        WatchEvent::Deleted(o) => {
            assert_eq!(o.object_name(), Some("p"));
            assert_eq!(o.object_resource_version(), Some("3"));
            // The content the watcher knew.
            assert_eq!(
                o.object_labels().get("app").map(String::as_str),
                Some("web")
            );
        }
        other => panic!("expected DELETED, got {other:?}"),
    }
    assert_eq!(show(&next_event(&mut w).await), "ADDED marker@4");
    assert!(
        server
            .objects("pods", Some("a"))
            .unwrap()
            .iter()
            .all(|o| o.name() != "p")
    );
}

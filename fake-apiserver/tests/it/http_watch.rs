//! HTTP front end: watch streams on the wire (chunked JSON lines, ERROR events, streaming
//! lists, bookmarks, timeouts, slow and many watchers) through real HTTP clients.
#![cfg(feature = "http")]

use std::time::Duration;

use fake_apiserver::seed;
use fake_apiserver::{HistoryConfig, ServerConfig, status};
use rand::SeedableRng;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::GUARD;
use crate::support::http::{Line, WatchLines, get, pod, show, start, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_are_chunked_json_lines_flushed_one_by_one() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let mut w = WatchLines::open(
        &http,
        &format!("/api/v1/namespaces/a/pods?watch=1&resourceVersion={rv}"),
    )
    .await;
    assert_eq!(w.status, 200);
    assert_eq!(w.header("content-type"), Some("application/json"));
    assert_eq!(w.header("transfer-encoding"), Some("chunked"));
    // Each event arrives before the next write: the server flushes per event.
    let created = server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    let added = w.event().await;
    assert_eq!(added["type"], "ADDED");
    assert_eq!(added["object"]["kind"], "Pod");
    assert_eq!(added["object"]["apiVersion"], "v1");
    assert_eq!(
        added["object"]["metadata"]["resourceVersion"],
        created.resource_version().to_string()
    );
    server
        .patch(
            "pods",
            Some("a"),
            "p1",
            &json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .unwrap();
    assert_eq!(w.show_next().await, "MODIFIED p1");
    server
        .create("pods", &pod("b", "other-namespace", json!({})))
        .unwrap();
    let deleted = server.delete("pods", Some("a"), "p1").unwrap();
    let ev = w.event().await;
    assert_eq!(show(&ev), "DELETED p1");
    assert_eq!(
        ev["object"]["metadata"]["resourceVersion"],
        deleted.object().resource_version().to_string()
    );
    let log = server.requests();
    assert_eq!(
        log[0].to_string(),
        format!("GET /api/v1/namespaces/a/pods?watch=1&resourceVersion={rv}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_a_compacted_resource_version_is_200_then_error_410() {
    let (server, http) = start().await;
    let first = server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    server.create("pods", &pod("a", "p2", json!({}))).unwrap();
    let compacted = server.compact_all();
    let mut w = WatchLines::open(
        &http,
        &format!(
            "/api/v1/pods?watch=true&resourceVersion={}",
            first.resource_version()
        ),
    )
    .await;
    assert_eq!(w.status, 200);
    let err = w.event().await;
    assert_eq!(err["type"], "ERROR");
    assert_eq!(err["object"]["kind"], "Status");
    assert_eq!(err["object"]["code"], 410);
    assert_eq!(err["object"]["reason"], "Expired");
    assert_eq!(
        err["object"]["message"],
        format!(
            "too old resource version: {} ({compacted})",
            first.resource_version()
        )
    );
    assert!(matches!(w.next().await, Line::End));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streaming_list_ends_with_the_annotated_bookmark_then_goes_on() {
    let (server, http) = start().await;
    for name in ["p1", "p2", "p3"] {
        server.create("pods", &pod("a", name, json!({}))).unwrap();
    }
    let snapshot = server.resource_version();
    let mut w = WatchLines::open(
        &http,
        "/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion=",
    )
    .await;
    assert_eq!(w.status, 200);
    for name in ["p1", "p2", "p3"] {
        assert_eq!(w.show_next().await, format!("ADDED {name}"));
    }
    let end = w.event().await;
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["kind"], "Pod");
    assert_eq!(
        end["object"]["metadata"]["resourceVersion"],
        snapshot.to_string()
    );
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    server.create("pods", &pod("a", "p4", json!({}))).unwrap();
    assert_eq!(w.show_next().await, "ADDED p4");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_without_a_resource_version_start_with_the_current_state() {
    let (server, http) = start().await;
    server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    for query in ["watch=1", "watch=1&resourceVersion=0"] {
        let mut w = WatchLines::open(&http, &format!("/api/v1/pods?{query}")).await;
        assert_eq!(w.show_next().await, "ADDED p1", "{query}");
    }
    // The legacy `/watch/` path, narrowed to one object.
    server.create("pods", &pod("a", "p2", json!({}))).unwrap();
    let mut w = WatchLines::open(&http, "/api/v1/watch/namespaces/a/pods/p2").await;
    assert_eq!(w.show_next().await, "ADDED p2");
    server
        .patch(
            "pods",
            Some("a"),
            "p1",
            &json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .unwrap();
    server
        .patch(
            "pods",
            Some("a"),
            "p2",
            &json!({"metadata": {"labels": {"a": "b"}}}),
        )
        .unwrap();
    assert_eq!(w.show_next().await, "MODIFIED p2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let mut w = WatchLines::open(
        &http,
        &format!("/api/v1/pods?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(w.status, 200);
    assert!(matches!(w.next().await, Line::End));
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 0))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_go_only_to_watchers_that_asked() {
    let (server, http) = start().await;
    let rv = server
        .create("pods", &pod("a", "p1", json!({})))
        .unwrap()
        .resource_version();
    let mut asked = WatchLines::open(
        &http,
        &format!("/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true"),
    )
    .await;
    let mut plain =
        WatchLines::open(&http, &format!("/api/v1/pods?watch=1&resourceVersion={rv}")).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 2))
        .await
        .unwrap();
    assert_eq!(server.send_bookmark("pods"), 1);
    assert_eq!(asked.show_next().await, format!("BOOKMARK @{rv}"));
    server.create("pods", &pod("a", "p2", json!({}))).unwrap();
    assert_eq!(plain.show_next().await, "ADDED p2");
    assert_eq!(asked.show_next().await, "ADDED p2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_faults_reach_the_wire() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let url = format!("/api/v1/pods?watch=1&resourceVersion={rv}");
    // A failed watch start is an HTTP error, with Retry-After for 429.
    server
        .faults()
        .fail_watches("pods", 1, status::too_many_requests(4));
    let refused = get(&http, &url).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), Some("4"));
    // Raw lines are written as they are.
    let mut w = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    server.faults().inject_raw_line("pods", "this is not json");
    assert!(matches!(w.next().await, Line::Raw(l) if l == "this is not json"));
    // An injected ERROR ends the stream after the event.
    server
        .faults()
        .inject_error("pods", status::gone("the watch is gone"));
    let err = w.event().await;
    assert_eq!(
        (err["type"].as_str(), err["object"]["code"].as_u64()),
        (Some("ERROR"), Some(410))
    );
    assert!(matches!(w.next().await, Line::End));
    // A dropped watch ends cleanly; a broken one aborts the connection.
    let mut dropped = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    assert_eq!(server.faults().drop_watches("pods"), 1);
    assert!(matches!(dropped.next().await, Line::End));
    let mut broken = WatchLines::open(&http, &url).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    assert_eq!(server.faults().break_watches("pods"), 1);
    assert!(matches!(broken.next().await, Line::Broken(_)));
    // A resourceVersion the server never reaches: ERROR 504 on the open stream.
    let mut future = WatchLines::open(
        &http,
        &format!("/api/v1/pods?watch=1&resourceVersion={}", rv + 50),
    )
    .await;
    assert_eq!(future.status, 200);
    let err = future.event().await;
    assert_eq!(err["object"]["code"], 504);
    assert_eq!(
        err["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_events_as_tables_for_kubectl() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let mut w = WatchLines::open_with(
        &http,
        &format!("/api/v1/namespaces/a/pods?watch=true&resourceVersion={rv}"),
        Some(accept),
    )
    .await;
    server.create("pods", &pod("a", "p1", json!({}))).unwrap();
    server.create("pods", &pod("a", "p2", json!({}))).unwrap();
    let first = w.event().await;
    assert_eq!(first["type"], "ADDED");
    assert_eq!(first["object"]["kind"], "Table");
    assert_eq!(first["object"]["rows"][0]["cells"][0], "p1");
    assert!(
        !first["object"]["columnDefinitions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let second = w.event().await;
    assert_eq!(second["object"]["rows"][0]["cells"][0], "p2");
    assert!(
        second["object"]["columnDefinitions"]
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_each_get_every_event() {
    let (server, http) = start().await;
    let rv = server.resource_version();
    let mut watchers = Vec::new();
    for _ in 0..50 {
        watchers.push(
            WatchLines::open(&http, &format!("/api/v1/pods?watch=1&resourceVersion={rv}")).await,
        );
    }
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 50))
        .await
        .unwrap();
    for i in 0..5 {
        server
            .create("pods", &pod("a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    let readers: Vec<_> = watchers
        .into_iter()
        .map(|mut w| {
            tokio::spawn(async move {
                let mut seen = Vec::new();
                for _ in 0..5 {
                    seen.push(w.show_next().await);
                }
                seen
            })
        })
        .collect();
    let want: Vec<String> = (0..5).map(|i| format!("ADDED p{i}")).collect();
    for r in readers {
        assert_eq!(r.await.unwrap(), want);
    }
}

/// A watcher whose TCP reader stops reading must not make the server buffer without bound,
/// nor hold up writers or the other watchers: the server stops reading history for it once
/// the connection's buffers are full, and when the history has moved past its cursor it gets
/// `ERROR` 410 and the end of the stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_reader_is_dropped_with_410_while_others_go_on() {
    const PODS: usize = 2000;
    let (server, http) = start_with(ServerConfig {
        history: HistoryConfig {
            min_events: 0,
            max_events: 20,
            min_age: Duration::ZERO,
        },
        ..ServerConfig::default()
    })
    .await;
    let rv = server.resource_version();
    let path = format!("/api/v1/pods?watch=1&resourceVersion={rv}");
    // The stalled reader: a raw connection with a small receive buffer that reads only the
    // response head, then nothing until the writes are over.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(http.addr()).await.unwrap();
    stalled
        .write_all(
            format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                http.addr()
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let mut head = Vec::new();
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let mut buf = [0u8; 512];
        let n = tokio::time::timeout(GUARD, stalled.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0, "connection closed before the response head");
        head.extend_from_slice(&buf[..n]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    // The fast reader reads everything as it comes.
    let mut fast = WatchLines::open(&http, &path).await;
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 2))
        .await
        .unwrap();
    let (seen_tx, mut seen_rx) = tokio::sync::watch::channel(0usize);
    let reader = tokio::spawn(async move {
        for i in 1..=PODS {
            let ev = fast.event().await;
            assert_eq!(ev["type"], "ADDED", "event {i}: {ev}");
            seen_tx.send_replace(i);
        }
        fast
    });
    // Realistic pods (about 6 KB each, 12 MB in all: more than the kernel buffers hold). Each
    // write waits until the fast reader has it, so only the stalled reader falls behind.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for i in 0..PODS {
        server
            .create("pods", &seed::pod("a", &format!("p{i:04}"), &mut rng))
            .unwrap();
        tokio::time::timeout(GUARD, seen_rx.wait_for(|n| *n > i))
            .await
            .unwrap()
            .unwrap();
    }
    let mut fast = reader.await.unwrap();
    // The stalled reader now reads what the server had sent: at most part of the events,
    // then 410.
    let mut rest = Vec::new();
    tokio::time::timeout(GUARD, stalled.read_to_end(&mut rest))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&rest);
    let delivered = text.matches("{\"type\":\"ADDED\"").count();
    eprintln!("the stalled reader got {delivered} of {PODS} events before its 410");
    // How many got through before it fell out of the 20-event history depends on the
    // scheduling of its connection (none at all on a busy machine); never all of them.
    assert!(
        delivered < PODS,
        "the stalled reader got {delivered} events"
    );
    assert!(
        text.contains("{\"type\":\"ERROR\""),
        "no ERROR event for the stalled reader"
    );
    assert!(text.contains("\"code\":410"), "the ERROR is not a 410");
    assert!(
        text.ends_with("0\r\n\r\n"),
        "the chunked stream did not end cleanly"
    );
    // The fast watcher is still open and live.
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();
    server
        .create("pods", &pod("a", "after", json!({})))
        .unwrap();
    assert_eq!(fast.show_next().await, "ADDED after");
}

//! HTTP front end: what keeps the server safe from its clients: inputs that used to panic
//! (huge `timeoutSeconds`).
#![cfg(feature = "http")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests: a failed unwrap is a failed test.

mod http_support;

use http_support::{Line, WatchLines, get, pod, send, start};
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_timeout_seconds_gets_an_answer() {
    let (server, http) = start().await;
    // A huge bookmark interval does not overflow either.
    let interval = send(
        &http,
        Method::PUT,
        "/_fake/bookmark-interval",
        Some(("application/json", &json!({"seconds": 1e15}))),
    )
    .await;
    assert_eq!(interval.status, 200, "{}", interval.body);
    for seconds in [i64::MAX, i64::MAX - 1, 4_000_000_000_000_000_000] {
        let rv = server.resource_version();
        let mut w = WatchLines::open(
            &http,
            &format!(
                "/api/v1/pods?watch=1&resourceVersion={rv}&allowWatchBookmarks=true&\
                 timeoutSeconds={seconds}"
            ),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        let name = format!("p{}", seconds % 1000);
        server.create("pods", &pod("a", &name, json!({}))).unwrap();
        assert_eq!(w.show_next().await, format!("ADDED {name}"), "{seconds}");
    }
    // Negative: like the real server, whose deadline is then already past, the watch ends
    // at once.
    for seconds in ["-1", "-9223372036854775808"] {
        let mut w = WatchLines::open(
            &http,
            &format!("/api/v1/pods?watch=1&timeoutSeconds={seconds}"),
        )
        .await;
        assert_eq!(w.status, 200, "{seconds}");
        assert!(matches!(w.next().await, Line::End), "{seconds}");
    }
    // Not a 64-bit integer: the server's 400 for a malformed parameter.
    let too_big = get(
        &http,
        "/api/v1/pods?watch=1&timeoutSeconds=9223372036854775808",
    )
    .await;
    assert_eq!(too_big.status, 400, "{}", too_big.body);
}

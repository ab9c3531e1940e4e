//! Fake API server: every fault, and the request log, through the in-process front end.

use std::collections::BTreeMap;
use std::time::Duration;

use fake_apiserver::{
    FakeApiServer, PendingFault, Query, RawLine, RequestRecord, Scope, ServerConfig, status,
};
use futures::StreamExt;
use informer_core::{
    Error, ErrorClass, ListOptions, ListerWatcher, Object, ResourceVersionMatch, WatchEvent,
    WatchOptions,
};
use informer_testing::JsonObject;
use serde::Deserialize;

use crate::support::{from, lw, next, next_event, pod};

fn name_of(e: &WatchEvent<JsonObject>) -> &str {
    match e {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
            o.object_name().unwrap_or("")
        }
        other => panic!("expected an object event, got {other:?}"),
    }
}

fn with_pods(n: usize) -> FakeApiServer {
    let server = FakeApiServer::new();
    for i in 0..n {
        server.create("pods", &pod("a", &format!("p{i}"))).unwrap();
    }
    server
}

#[tokio::test(start_paused = true)]
async fn failed_lists_answer_the_scripted_status_then_recover() {
    let server = with_pods(1);
    let faults = server.faults();
    faults.fail_lists(
        "pods",
        2,
        status::internal_error("etcdserver: leader changed"),
    );
    faults.fail_lists("configmaps", 1, status::internal_error("not for pods"));
    let lw = lw(&server, None);
    for remaining in [1, 0] {
        let err = lw.list(&ListOptions::default()).await.unwrap_err();
        assert_eq!(err.class(), ErrorClass::ServerError);
        assert_eq!(err.status().unwrap().code, 500);
        let left: Vec<_> = faults
            .pending()
            .into_iter()
            .filter(|p| matches!(p, PendingFault::FailLists { scope, .. } if *scope == Scope::from("pods")))
            .collect();
        assert_eq!(left.len(), remaining);
    }
    assert_eq!(
        lw.list(&ListOptions::default()).await.unwrap().items.len(),
        1
    );
    // Failed requests were still received.
    assert_eq!(server.requests().len(), 3);
    // The configmaps fault is still pending.
    assert_eq!(faults.pending().len(), 1);
    assert!(faults.pending()[0].to_string().contains("configmaps"));
}

#[tokio::test(start_paused = true)]
async fn throttled_requests_carry_retry_after() {
    let server = with_pods(1);
    server
        .faults()
        .fail_lists("*", 1, status::too_many_requests(7));
    let err = lw(&server, None)
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.class(), ErrorClass::Throttled);
    assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
    match err {
        Error::Api { retry_after, .. } => assert_eq!(retry_after, Some(Duration::from_secs(7))),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn failed_watch_starts_are_errors_not_events() {
    let server = with_pods(1);
    let faults = server.faults();
    faults.fail_watches(
        "pods",
        1,
        status::expired("too old resource version: 1 (5)"),
    );
    faults.fail_watches("pods", 1, status::resource_version_too_large(9, 1));
    faults.fail_watches("pods", 1, status::too_many_requests(1));
    let lw = lw(&server, None);
    let e1 = lw.watch(&from(1)).await.err().unwrap();
    assert!(e1.is_expired());
    let e2 = lw.watch(&from(1)).await.err().unwrap();
    assert_eq!(e2.class(), ErrorClass::ResourceVersionTooLarge);
    let e3 = lw.watch(&from(1)).await.err().unwrap();
    assert_eq!(e3.retry_after(), Some(Duration::from_secs(1)));
    assert!(lw.watch(&from(1)).await.is_ok());
    faults.assert_all_used();
}

#[tokio::test(start_paused = true)]
async fn drop_watches_ends_every_open_watch() {
    let server = with_pods(0);
    server.create("configmaps", &pod("a", "cm")).unwrap();
    let lw = lw(&server, None);
    let mut a = lw.watch(&from(1)).await.unwrap();
    let mut b = lw.watch(&from(1)).await.unwrap();
    let cms = server
        .lister_watcher::<JsonObject>("configmaps", None)
        .unwrap();
    let mut c = cms.watch(&from(1)).await.unwrap();
    assert_eq!(server.faults().drop_watches("pods"), 2);
    assert!(next(&mut a).await.is_none());
    assert!(next(&mut b).await.is_none());
    // The configmaps watch is untouched.
    server.create("configmaps", &pod("a", "cm2")).unwrap();
    assert_eq!(name_of(&next_event(&mut c).await), "cm2");
}

#[tokio::test(start_paused = true)]
async fn break_watches_reports_a_transport_error() {
    let server = with_pods(0);
    let mut w = lw(&server, None).watch(&from(0)).await.unwrap();
    assert_eq!(server.faults().break_watches("*"), 1);
    match next(&mut w).await {
        Some(Err(e)) => assert_eq!(e.class(), ErrorClass::Transport),
        other => panic!("expected a transport error, got {other:?}"),
    }
    assert!(next(&mut w).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn drop_next_watch_after_k_events() {
    let server = with_pods(3);
    let faults = server.faults();
    faults.drop_next_watch_after("pods", 2);
    assert_eq!(faults.pending().len(), 1);
    let lw = lw(&server, None);
    let mut w = lw.watch(&WatchOptions::default()).await.unwrap();
    assert!(faults.pending().is_empty());
    assert_eq!(name_of(&next_event(&mut w).await), "p0");
    assert_eq!(name_of(&next_event(&mut w).await), "p1");
    assert!(next(&mut w).await.is_none());
    // Only the next watch was affected.
    let mut w = lw.watch(&WatchOptions::default()).await.unwrap();
    for want in ["p0", "p1", "p2"] {
        assert_eq!(name_of(&next_event(&mut w).await), want);
    }
}

#[tokio::test(start_paused = true)]
async fn delayed_watch_events_and_lists() {
    let server = with_pods(1);
    let faults = server.faults();
    faults.delay_watch_events("pods", Some(Duration::from_secs(2)));
    faults.delay_lists("pods", Some(Duration::from_millis(1500)));
    let lw = lw(&server, None);
    let start = tokio::time::Instant::now();
    lw.list(&ListOptions::default()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(1500));

    let mut w = lw.watch(&from(1)).await.unwrap();
    server.create("pods", &pod("a", "x")).unwrap();
    server.create("pods", &pod("a", "y")).unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(name_of(&next_event(&mut w).await), "x");
    assert_eq!(start.elapsed(), Duration::from_secs(2));
    assert_eq!(name_of(&next_event(&mut w).await), "y");
    assert_eq!(start.elapsed(), Duration::from_secs(4));
    // Removing the delay applies to the open watch.
    faults.delay_watch_events("pods", None);
    server.create("pods", &pod("a", "z")).unwrap();
    let t = tokio::time::Instant::now();
    assert_eq!(name_of(&next_event(&mut w).await), "z");
    assert_eq!(t.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn injected_error_event_arrives_then_the_watch_ends() {
    let server = with_pods(2);
    let mut w = lw(&server, None).watch(&from(1)).await.unwrap();
    assert_eq!(name_of(&next_event(&mut w).await), "p1");
    server
        .faults()
        .inject_error("pods", status::gone("the watch cache was reinitialized"));
    match next_event(&mut w).await {
        WatchEvent::Error(s) => {
            assert_eq!((s.code, s.reason.as_str()), (410, "Gone"));
            assert_eq!(s.class(), ErrorClass::Expired);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(next(&mut w).await.is_none());

    let mut w = lw(&server, None).watch(&from(2)).await.unwrap();
    assert_eq!(server.faults().expire_watches("pods"), 1);
    match next_event(&mut w).await {
        WatchEvent::Error(s) => {
            assert_eq!(s.code, 410);
            assert_eq!(s.message, "too old resource version: 2 (2)");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn expired_continue_tokens_get_410() {
    let server = with_pods(5);
    let lw = lw(&server, None);
    let opts = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    let first = lw.list(&opts).await.unwrap();
    server.faults().expire_continue_tokens();
    let err = lw
        .list(&ListOptions {
            continue_token: first.continue_token,
            ..opts.clone()
        })
        .await
        .unwrap_err();
    assert!(err.is_expired());
    assert_eq!(
        err.status().unwrap().message,
        status::CONTINUE_EXPIRED_MESSAGE
    );
    // New lists get fresh tokens that work.
    let again = lw.list(&opts).await.unwrap();
    let second = lw
        .list(&ListOptions {
            continue_token: again.continue_token,
            ..opts
        })
        .await
        .unwrap();
    assert_eq!(second.items.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_next_continue_request_can_be_expired() {
    let server = with_pods(5);
    server.faults().expire_next_continues("pods", 1);
    let lw = lw(&server, None);
    let opts = ListOptions {
        limit: Some(2),
        ..ListOptions::default()
    };
    // The first page has no continue token: not affected.
    let first = lw.list(&opts).await.unwrap();
    assert_eq!(server.faults().pending().len(), 1);
    let next_page = ListOptions {
        continue_token: first.continue_token,
        ..opts.clone()
    };
    let err = lw.list(&next_page).await.unwrap_err();
    assert!(err.is_expired());
    assert_eq!(
        err.status().unwrap().message,
        status::CONTINUE_EXPIRED_MESSAGE
    );
    // Used up: the same token works now.
    assert_eq!(lw.list(&next_page).await.unwrap().items.len(), 2);
    server.faults().assert_all_used();
}

#[tokio::test(start_paused = true)]
async fn an_old_server_ignores_send_initial_events() {
    let server = with_pods(2);
    server.faults().ignore_send_initial_events("pods", true);
    let streaming = WatchOptions {
        send_initial_events: Some(true),
        resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
        allow_watch_bookmarks: true,
        ..WatchOptions::default()
    };
    server.set_bookmark_interval(Duration::from_secs(3600));
    // From "": a legacy watch, so the objects come but the end bookmark never does.
    let mut w = lw(&server, None).watch(&streaming).await.unwrap();
    assert_eq!(name_of(&next_event(&mut w).await), "p0");
    assert_eq!(name_of(&next_event(&mut w).await), "p1");
    let nothing = tokio::time::timeout(Duration::from_secs(60), w.next()).await;
    assert!(nothing.is_err(), "no end bookmark from an old server");
    // From N: only the changes after N, no initial state at all.
    let mut w = lw(&server, None)
        .watch(&WatchOptions {
            resource_version: Some("2".into()),
            ..streaming.clone()
        })
        .await
        .unwrap();
    server.create("pods", &pod("a", "p2")).unwrap();
    assert_eq!(name_of(&next_event(&mut w).await), "p2");
    // Switched back: the streaming list works again.
    server.faults().ignore_send_initial_events("pods", false);
    let mut w = lw(&server, None).watch(&streaming).await.unwrap();
    for _ in 0..3 {
        next_event(&mut w).await;
    }
    assert!(matches!(next_event(&mut w).await, WatchEvent::Bookmark(b) if b.initial_events_end));
}

#[tokio::test(start_paused = true)]
async fn raw_lines_surface_as_typed_errors_and_the_stream_goes_on() {
    let server = with_pods(1);
    let mut w = lw(&server, None).watch(&from(1)).await.unwrap();
    let faults = server.faults();
    assert_eq!(faults.inject_raw_line("pods", RawLine::garbage()), 1);
    faults.inject_raw_line("pods", RawLine::unknown_event_type());
    faults.inject_raw_line("pods", RawLine::object_without_metadata());
    match next(&mut w).await.unwrap() {
        Err(Error::Decode {
            context,
            line_excerpt,
            ..
        }) => {
            assert!(context.contains("/api/v1/pods"), "{context}");
            assert!(
                line_excerpt.starts_with("{\"type\":\"ADDED\""),
                "{line_excerpt}"
            );
        }
        other => panic!("expected a decode error, got {other:?}"),
    }
    match next(&mut w).await.unwrap() {
        Err(Error::UnknownEventType { event_type, .. }) => assert_eq!(event_type, "SURPRISE"),
        other => panic!("expected an unknown event type, got {other:?}"),
    }
    // A schemaless type accepts an object without metadata: it just has no name.
    match next_event(&mut w).await {
        WatchEvent::Added(o) => assert_eq!(o.object_name(), None),
        other => panic!("unexpected {other:?}"),
    }
    server.create("pods", &pod("a", "after")).unwrap();
    assert_eq!(name_of(&next_event(&mut w).await), "after");
}

/// A typed object whose metadata is required, like k8s-openapi's.
#[derive(Debug, Deserialize)]
struct Strict {
    metadata: StrictMeta,
}

#[derive(Debug, Deserialize)]
struct StrictMeta {
    name: String,
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

impl Object for Strict {
    fn object_name(&self) -> Option<&str> {
        Some(&self.metadata.name)
    }
    fn object_namespace(&self) -> Option<&str> {
        None
    }
    fn object_uid(&self) -> Option<&str> {
        None
    }
    fn object_resource_version(&self) -> Option<&str> {
        Some(&self.metadata.resource_version)
    }
    fn object_labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        &EMPTY
    }
    fn object_annotations(&self) -> &BTreeMap<String, String> {
        self.object_labels()
    }
}

#[tokio::test(start_paused = true)]
async fn object_without_metadata_is_a_decode_error_for_typed_objects() {
    let server = with_pods(1);
    let lw = server.lister_watcher::<Strict>("pods", None).unwrap();
    let mut w = lw.watch(&from(1)).await.unwrap();
    server
        .faults()
        .inject_raw_line("pods", RawLine::object_without_metadata());
    assert!(matches!(
        next(&mut w).await,
        Some(Err(Error::Decode { .. }))
    ));
    server.create("pods", &pod("a", "typed")).unwrap();
    match next(&mut w).await {
        Some(Ok(WatchEvent::Added(o))) => assert_eq!(o.metadata.name, "typed"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn request_log_records_what_a_reflector_asked_for() {
    let server = with_pods(3);
    let lw = lw(&server, None);
    lw.list(&ListOptions {
        limit: Some(500),
        resource_version: Some("0".into()),
        ..ListOptions::default()
    })
    .await
    .unwrap();
    let _w = lw
        .watch(&WatchOptions {
            resource_version: Some("3".into()),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(412),
            label_selector: Some("app in (a,b)".into()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    let log = server.take_requests();
    assert_eq!(
        log.iter().map(ToString::to_string).collect::<Vec<_>>(),
        [
            "GET /api/v1/pods?limit=500&resourceVersion=0",
            "GET /api/v1/pods?watch=1&labelSelector=app%20in%20%28a%2Cb%29&resourceVersion=3&allowWatchBookmarks=true&timeoutSeconds=412",
        ]
    );
    assert!(log[1].is_watch() && log[1].is_watch_of("pods"));
    assert!(log[0].is_list_of("pods") && !log[0].is_watch());
    assert_eq!(log[1].param("labelSelector"), Some("app in (a,b)"));
    assert_eq!(log[1].param("resourceVersion"), Some("3"));
    assert!(server.requests().is_empty());

    // A request arriving as raw query pairs (as the HTTP front end parses them, in any order)
    // is recorded in the same canonical form.
    let target = server.target("pods", None).unwrap();
    let q = Query::from_pairs([
        ("resourceVersion", "0"),
        ("limit", "500"),
        ("pretty", "true"),
    ])
    .unwrap();
    server.list(&target, &q).await.unwrap();
    assert_eq!(
        server.requests(),
        [RequestRecord::new(
            "GET",
            "/api/v1/pods",
            [
                ("limit", "500"),
                ("resourceVersion", "0"),
                ("pretty", "true")
            ]
        )]
    );
    server.clear_requests();
    assert!(server.requests().is_empty());
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "scripted faults left unused")]
async fn unused_faults_are_reported() {
    let server = FakeApiServer::new();
    server
        .faults()
        .fail_watches("pods", 1, status::internal_error("x"));
    server.faults().assert_all_used();
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "dropped with unused scripted faults")]
async fn strict_servers_check_faults_on_drop() {
    let server = FakeApiServer::with_config(ServerConfig {
        strict_faults: true,
        ..ServerConfig::default()
    });
    server.faults().drop_next_watch_after("pods", 1);
    drop(server);
}

#[tokio::test(start_paused = true)]
async fn clear_removes_all_faults() {
    let server = with_pods(1);
    let faults = server.faults();
    faults.fail_lists("pods", 3, status::internal_error("x"));
    faults.delay_lists("pods", Some(Duration::from_secs(9)));
    faults.clear();
    assert!(faults.pending().is_empty());
    let start = tokio::time::Instant::now();
    lw(&server, None)
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(start.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn unseen_objects_can_be_announced_as_modified() {
    use fake_apiserver::UnseenAnnouncement;

    let server = FakeApiServer::new();
    let selected = |name: &str, tier: &str| pod("a", name).with_label("tier", tier);
    server.create("pods", &selected("p0", "b")).unwrap();
    let lw = server.lister_watcher::<JsonObject>("pods", None).unwrap();
    let opts = |rv: u64| WatchOptions {
        label_selector: Some("tier=a".into()),
        ..from(rv)
    };

    // The default is the watch cache's: an object entering the selection is ADDED.
    let mut events = lw.watch(&opts(server.resource_version())).await.unwrap();
    server.update("pods", &selected("p0", "a")).unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        WatchEvent::Added(_)
    ));

    // Entering the selection comes as MODIFIED; a creation stays ADDED.
    server
        .faults()
        .announce_unseen("pods", UnseenAnnouncement::ModifiedOnEntering);
    server.update("pods", &selected("p0", "b")).unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        WatchEvent::Deleted(_)
    ));
    server.update("pods", &selected("p0", "a")).unwrap();
    let event = next_event(&mut events).await;
    assert!(matches!(event, WatchEvent::Modified(_)), "{event:?}");
    server.create("pods", &selected("p1", "a")).unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        WatchEvent::Added(_)
    ));

    // Everything unseen comes as MODIFIED; a watch's initial events stay ADDED.
    server
        .faults()
        .announce_unseen("*", UnseenAnnouncement::Modified);
    server.create("pods", &selected("p2", "a")).unwrap();
    let event = next_event(&mut events).await;
    assert!(
        matches!(&event, WatchEvent::Modified(o) if o.object_name() == Some("p2")),
        "{event:?}"
    );
    let mut snapshot = lw.watch(&WatchOptions::default()).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(
            next_event(&mut snapshot).await,
            WatchEvent::Added(_)
        ));
    }

    // Back to the default; `clear` resets it too.
    server
        .faults()
        .announce_unseen("*", UnseenAnnouncement::Added);
    server.create("pods", &selected("p3", "a")).unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        WatchEvent::Added(_)
    ));
    server
        .faults()
        .announce_unseen("pods", UnseenAnnouncement::Modified);
    server.faults().clear();
    server.create("pods", &selected("p4", "a")).unwrap();
    assert!(matches!(
        next_event(&mut events).await,
        WatchEvent::Added(_)
    ));
}

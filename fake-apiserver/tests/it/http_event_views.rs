//! HTTP front end: Events are one storage served under two groups, core `v1` and
//! `events.k8s.io/v1`, as the real server serves them: a write through either is read, listed
//! and watched through both, converted, at the same resourceVersion.
#![cfg(feature = "http")]

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::http::{WatchLines, get, namespaces, post, send, show, start};

const CORE: &str = "/api/v1/namespaces/a/events";
const EVENTS: &str = "/apis/events.k8s.io/v1/namespaces/a/events";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_one_storage_under_two_groups() {
    let (server, http) = start().await;
    namespaces(&server, &["a"]);
    let from = server.resource_version();
    let mut core_watch =
        WatchLines::open(&http, &format!("{CORE}?watch=true&resourceVersion={from}")).await;
    let mut events_watch = WatchLines::open(
        &http,
        &format!("{EVENTS}?watch=true&resourceVersion={from}"),
    )
    .await;

    // Written as a core Event (what kubelet and client-go's old recorder write).
    let core = post(
        &http,
        CORE,
        &json!({
            "metadata": {"name": "p.1"},
            "involvedObject": {"kind": "Pod", "namespace": "a", "name": "p", "uid": "u-1"},
            "reason": "Pulled", "message": "image pulled", "type": "Normal",
            "source": {"component": "kubelet"}, "count": 1,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
        }),
    )
    .await;
    assert_eq!(core.status, 201, "{}", core.body);
    let seen = get(&http, &format!("{EVENTS}/p.1")).await;
    assert_eq!(seen.status, 200, "{}", seen.body);
    let e = &seen.body;
    assert_eq!(e["apiVersion"], "events.k8s.io/v1");
    assert_eq!(e["regarding"]["name"], "p");
    assert_eq!(e["note"], "image pulled");
    assert_eq!(e["deprecatedSource"]["component"], "kubelet");
    assert_eq!(e["deprecatedCount"], 1);
    assert_eq!(e["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
    for field in ["involvedObject", "message", "source", "count"] {
        assert!(e.get(field).is_none(), "{field} in {e}");
    }
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert_eq!(
            e["metadata"][field], core.body["metadata"][field],
            "{field}"
        );
    }

    // Written as an events.k8s.io Event (what EventRecorder writes), read as a core one,
    // selected by the core field selector `kubectl describe` uses.
    let recorded = post(
        &http,
        EVENTS,
        &json!({
            "metadata": {"name": "p.2"},
            "regarding": {"kind": "Pod", "namespace": "a", "name": "p", "uid": "u-1"},
            "reason": "Synced", "note": "reconciled", "type": "Normal", "action": "Reconcile",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-0",
            "eventTime": "2026-01-01T00:00:01.000000Z",
        }),
    )
    .await;
    assert_eq!(recorded.status, 201, "{}", recorded.body);
    let selected = get(
        &http,
        &format!(
            "{CORE}?fieldSelector=involvedObject.name%3Dp,involvedObject.uid%3Du-1,reason%3DSynced"
        ),
    )
    .await;
    let items = selected.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{}", selected.body);
    assert_eq!(items[0]["message"], "reconciled");
    assert_eq!(items[0]["reportingComponent"], "example.com/ctl");
    assert_eq!(items[0]["kind"], "Event");
    let by_regarding = get(&http, &format!("{EVENTS}?fieldSelector=regarding.name%3Dp")).await;
    assert_eq!(by_regarding.body["items"].as_array().unwrap().len(), 2);

    // One name in one storage: taken through either group.
    let taken = post(&http, EVENTS, &json!({"metadata": {"name": "p.1"}})).await;
    assert_eq!(taken.status, 409, "{}", taken.body);

    // Patched through one group, seen through the other; a precondition on the version read
    // through the other group holds.
    let patched = send(
        &http,
        Method::PATCH,
        &format!("{EVENTS}/p.1"),
        Some((
            "application/merge-patch+json",
            &json!({"metadata": {"resourceVersion": core.body["metadata"]["resourceVersion"]},
                    "deprecatedCount": 2, "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:02.000000Z"}}),
        )),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    let core_now = get(&http, &format!("{CORE}/p.1")).await;
    assert_eq!(core_now.body["count"], 2);
    assert_eq!(core_now.body["series"]["count"], 2);
    assert_eq!(
        core_now.body["metadata"]["resourceVersion"],
        patched.body["metadata"]["resourceVersion"]
    );

    // Deleted through the core group: gone from both.
    let deleted = send(&http, Method::DELETE, &format!("{CORE}/p.2"), None).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(get(&http, &format!("{EVENTS}/p.2")).await.status, 404);

    // Both watches saw every change, each in its own form, at the same versions.
    let mut versions = Vec::new();
    for (watch, message) in [(&mut core_watch, "message"), (&mut events_watch, "note")] {
        let mut seen = Vec::new();
        for _ in 0..4 {
            let e: Value = watch.event().await;
            let object = &e["object"];
            assert!(object.get(message).is_some(), "{message} missing in {e}");
            seen.push((show(&e), object["metadata"]["resourceVersion"].clone()));
        }
        versions.push(seen);
    }
    assert_eq!(versions[0], versions[1]);
    let shown: Vec<&str> = versions[0].iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        shown,
        ["ADDED p.1", "ADDED p.2", "MODIFIED p.1", "DELETED p.2"]
    );

    // A list through either group at the same version holds the same objects.
    let rv = server.resource_version();
    for path in [CORE, EVENTS] {
        let listed = get(
            &http,
            &format!("{path}?resourceVersion={rv}&resourceVersionMatch=Exact"),
        )
        .await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let names: Vec<&str> = listed.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["p.1"], "{path}");
    }
}

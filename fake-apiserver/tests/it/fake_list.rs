//! Fake API server: list semantics through the in-process front end.

use std::time::Duration;

use fake_apiserver::{FakeApiServer, Query, status};
use informer_core::{
    Error, ErrorClass, ListOptions, ListPage, ListerWatcher, Object, ResourceVersionMatch,
};
use informer_testing::JsonObject;

use crate::support::{lw, pod};

fn names(page: &ListPage<JsonObject>) -> Vec<String> {
    page.items
        .iter()
        .map(|o| o.object_name().unwrap().to_owned())
        .collect()
}

fn status_of(err: Error) -> informer_core::Status {
    match err {
        Error::Api { status, .. } => status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Five pods in `a` (p0..p4), three in `b`.
fn seeded() -> FakeApiServer {
    let server = FakeApiServer::new();
    for i in 0..5 {
        let tier = if i % 2 == 0 { "front" } else { "back" };
        server
            .create("pods", &pod("a", &format!("p{i}")).with_label("tier", tier))
            .unwrap();
    }
    for i in 0..3 {
        server.create("pods", &pod("b", &format!("q{i}"))).unwrap();
    }
    server
}

#[tokio::test(start_paused = true)]
async fn consistent_list_returns_current_state_in_key_order() {
    let server = seeded();
    let page = lw(&server, None)
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(
        names(&page),
        ["p0", "p1", "p2", "p3", "p4", "q0", "q1", "q2"]
    );
    assert_eq!(page.resource_version, "8");
    assert_eq!(page.continue_token, None);
    let only_b = lw(&server, Some("b"))
        .list(&ListOptions::default())
        .await
        .unwrap();
    assert_eq!(names(&only_b), ["q0", "q1", "q2"]);
}

#[tokio::test(start_paused = true)]
async fn paging_with_continue_and_remaining_item_count() {
    let server = seeded();
    let lw = lw(&server, None);
    let mut opts = ListOptions {
        limit: Some(3),
        ..ListOptions::default()
    };
    let first = lw.list(&opts).await.unwrap();
    assert_eq!(names(&first), ["p0", "p1", "p2"]);
    assert_eq!(first.remaining_item_count, Some(5));
    // Changes after the first page do not show: the pages are a consistent snapshot.
    server.delete("pods", Some("a"), "p3").unwrap();
    server.create("pods", &pod("a", "p35")).unwrap();
    opts.continue_token = first.continue_token.clone();
    let second = lw.list(&opts).await.unwrap();
    assert_eq!(names(&second), ["p3", "p4", "q0"]);
    assert_eq!(second.resource_version, first.resource_version);
    assert_eq!(second.remaining_item_count, Some(2));
    opts.continue_token = second.continue_token.clone();
    let third = lw.list(&opts).await.unwrap();
    assert_eq!(names(&third), ["q1", "q2"]);
    assert_eq!(third.continue_token, None);
    assert_eq!(third.remaining_item_count, None);
    let log: Vec<String> = server.requests().iter().map(ToString::to_string).collect();
    assert_eq!(log[0], "GET /api/v1/pods?limit=3");
    assert!(
        log[1].starts_with("GET /api/v1/pods?limit=3&continue="),
        "{}",
        log[1]
    );
}

#[tokio::test(start_paused = true)]
async fn paging_with_a_selector_has_no_remaining_count() {
    let server = seeded();
    let opts = ListOptions {
        limit: Some(2),
        label_selector: Some("tier=front".into()),
        ..ListOptions::default()
    };
    let lw = lw(&server, Some("a"));
    let first = lw.list(&opts).await.unwrap();
    assert_eq!(names(&first), ["p0", "p2"]);
    assert_eq!(first.remaining_item_count, None);
    let second = lw
        .list(&ListOptions {
            continue_token: first.continue_token.clone(),
            ..opts.clone()
        })
        .await
        .unwrap();
    assert_eq!(names(&second), ["p4"]);
    assert_eq!(second.continue_token, None);
}

#[tokio::test(start_paused = true)]
async fn continue_token_outlived_by_compaction_is_expired() {
    let server = seeded();
    let lw = lw(&server, None);
    let opts = ListOptions {
        limit: Some(3),
        ..ListOptions::default()
    };
    let first = lw.list(&opts).await.unwrap();
    server.create("pods", &pod("c", "new")).unwrap();
    server.compact_all();
    let err = lw
        .list(&ListOptions {
            continue_token: first.continue_token,
            ..opts
        })
        .await
        .unwrap_err();
    assert!(err.is_expired());
    let s = status_of(err);
    assert_eq!((s.code, s.reason.as_str()), (410, "Expired"));
    assert_eq!(s.message, status::CONTINUE_EXPIRED_MESSAGE);
}

#[tokio::test(start_paused = true)]
async fn continue_token_survives_compaction_below_its_rv() {
    let server = seeded();
    let lw = lw(&server, None);
    let opts = ListOptions {
        limit: Some(3),
        ..ListOptions::default()
    };
    let first = lw.list(&opts).await.unwrap();
    server.compact(5).unwrap();
    let second = lw
        .list(&ListOptions {
            continue_token: first.continue_token,
            ..opts
        })
        .await
        .unwrap();
    assert_eq!(names(&second), ["p3", "p4", "q0"]);
}

#[tokio::test(start_paused = true)]
async fn garbage_continue_token_is_a_bad_request() {
    let server = seeded();
    let err = lw(&server, None)
        .list(&ListOptions {
            limit: Some(3),
            continue_token: Some("garbage!".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status_of(err).code, 400);
}

#[tokio::test(start_paused = true)]
async fn resource_version_zero_ignores_the_limit() {
    let server = seeded();
    let page = lw(&server, None)
        .list(&ListOptions {
            limit: Some(500),
            resource_version: Some("0".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(page.items.len(), 8);
    assert_eq!(page.continue_token, None);
    let small = lw(&server, None)
        .list(&ListOptions {
            limit: Some(2),
            resource_version: Some("0".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(
        small.items.len(),
        8,
        "the watch cache does not page rv=0 lists"
    );
}

#[tokio::test(start_paused = true)]
async fn list_at_an_exact_old_resource_version_is_served_from_history() {
    let server = seeded();
    // rv 8: p0..p4, q0..q2. Then change things.
    server.delete("pods", Some("a"), "p0").unwrap(); // 9
    server.create("pods", &pod("a", "p9")).unwrap(); // 10
    server
        .patch(
            "pods",
            Some("b"),
            "q1",
            &serde_json::json!({"metadata": {"labels": {"x": "y"}}}),
        )
        .unwrap(); // 11
    let lw = lw(&server, None);
    let exact = ListOptions {
        resource_version: Some("8".into()),
        resource_version_match: Some(ResourceVersionMatch::Exact),
        ..ListOptions::default()
    };
    let page = lw.list(&exact).await.unwrap();
    assert_eq!(page.resource_version, "8");
    assert_eq!(
        names(&page),
        ["p0", "p1", "p2", "p3", "p4", "q0", "q1", "q2"]
    );
    let q1 = page
        .items
        .iter()
        .find(|o| o.object_name() == Some("q1"))
        .unwrap();
    assert_eq!(q1.object_resource_version(), Some("7"));
    assert!(q1.object_labels().is_empty());

    // A limit without resourceVersionMatch also reads exactly, paged.
    let paged = lw
        .list(&ListOptions {
            resource_version: Some("8".into()),
            limit: Some(6),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&paged), ["p0", "p1", "p2", "p3", "p4", "q0"]);
    assert_eq!(paged.resource_version, "8");
    assert_eq!(paged.remaining_item_count, Some(2));

    // Not older than 8, without a limit: the current state.
    let current = lw
        .list(&ListOptions {
            resource_version: Some("8".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(current.resource_version, "11");
    assert_eq!(
        names(&current),
        ["p1", "p2", "p3", "p4", "p9", "q0", "q1", "q2"]
    );

    // After compaction past 8, the exact read is gone.
    server.compact(9).unwrap();
    let err = lw.list(&exact).await.unwrap_err();
    let s = status_of(err);
    assert_eq!(s.code, 410);
    assert_eq!(s.message, status::LIST_EXPIRED_MESSAGE);
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_waits_then_answers_504() {
    let server = seeded();
    let lw = lw(&server, None);
    let opts = ListOptions {
        resource_version: Some("100".into()),
        ..ListOptions::default()
    };
    let start = tokio::time::Instant::now();
    let err = lw.list(&opts).await.unwrap_err();
    assert_eq!(start.elapsed(), Duration::from_secs(3));
    assert_eq!(err.class(), ErrorClass::ResourceVersionTooLarge);
    let s = status_of(err);
    assert_eq!(s.code, 504);
    assert_eq!(
        s.message,
        "Timeout: Too large resource version: 100, current: 8"
    );
}

#[tokio::test(start_paused = true)]
async fn too_large_resource_version_is_served_once_reached() {
    let server = seeded();
    let lw = lw(&server, None);
    let writer = server.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        writer.create("pods", &pod("a", "late")).unwrap();
    });
    let page = lw
        .list(&ListOptions {
            resource_version: Some("9".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(page.resource_version, "9");
    assert_eq!(page.items.len(), 9);
}

#[tokio::test(start_paused = true)]
async fn label_selectors_full_syntax() {
    let server = FakeApiServer::new();
    let mk = |name: &str, labels: &[(&str, &str)]| {
        let mut o = pod("a", name);
        for (k, v) in labels {
            o = o.with_label(*k, *v);
        }
        server.create("pods", &o).unwrap();
    };
    mk("a1", &[("app", "web"), ("env", "prod")]);
    mk("a2", &[("app", "web"), ("env", "dev")]);
    mk("a3", &[("app", "db"), ("canary", "")]);
    mk("a4", &[("gen", "5")]);
    let lw = lw(&server, None);
    let select = |sel: &'static str| {
        let lw = lw.clone();
        async move {
            let page = lw
                .list(&ListOptions {
                    label_selector: Some(sel.into()),
                    ..ListOptions::default()
                })
                .await
                .unwrap();
            names(&page)
        }
    };
    assert_eq!(select("app=web").await, ["a1", "a2"]);
    assert_eq!(select("app==web,env!=prod").await, ["a2"]);
    assert_eq!(select("app in (db, web)").await, ["a1", "a2", "a3"]);
    assert_eq!(select("app notin (web)").await, ["a3", "a4"]);
    assert_eq!(select("canary").await, ["a3"]);
    assert_eq!(select("!app").await, ["a4"]);
    assert_eq!(select("gen>3").await, ["a4"]);
    let err = lw
        .list(&ListOptions {
            label_selector: Some("app in web".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status_of(err).code, 400);
}

#[tokio::test(start_paused = true)]
async fn field_selectors_per_resource() {
    let server = seeded();
    let lw = lw(&server, None);
    let page = lw
        .list(&ListOptions {
            field_selector: Some("metadata.namespace=b,metadata.name!=q1".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap();
    assert_eq!(names(&page), ["q0", "q2"]);

    // Pods have the fields node-local controllers select by; missing ones read as the
    // real server's defaults.
    for (name, node, phase) in [
        ("n1-a", "n1", "Running"),
        ("n1-b", "n1", "Pending"),
        ("n2-a", "n2", "Running"),
    ] {
        let mut p = serde_json::to_value(pod("c", name)).unwrap();
        p["spec"] = serde_json::json!({"nodeName": node, "hostNetwork": name == "n1-b"});
        p["status"] =
            serde_json::json!({"phase": phase, "podIP": format!("10.0.0.{}", name.len())});
        server.create("pods", &p).unwrap();
    }
    let select = |selector: &str| {
        let lw = lw.clone();
        let selector = selector.to_owned();
        async move {
            let page = lw
                .list(&ListOptions {
                    field_selector: Some(selector),
                    ..ListOptions::default()
                })
                .await
                .unwrap();
            names(&page)
        }
    };
    assert_eq!(select("spec.nodeName=n1").await, ["n1-a", "n1-b"]);
    assert_eq!(
        select("spec.nodeName=n1,status.phase=Running").await,
        ["n1-a"]
    );
    assert_eq!(
        select("spec.nodeName!=n1,metadata.namespace=c").await,
        ["n2-a"]
    );
    assert_eq!(select("spec.hostNetwork=true").await, ["n1-b"]);
    assert_eq!(
        select("spec.restartPolicy=Always,metadata.namespace=c")
            .await
            .len(),
        3
    );
    assert_eq!(
        select("status.podIP=10.0.0.4").await,
        ["n1-a", "n1-b", "n2-a"]
    );
    assert_eq!(
        select("spec.schedulerName=default-scheduler,metadata.namespace=b")
            .await
            .len(),
        3
    );

    // Other resources keep the generic fields; nodes and namespaces not even the namespace.
    let cms = server
        .lister_watcher::<JsonObject>("configmaps", None)
        .unwrap();
    let err = cms
        .list(&ListOptions {
            field_selector: Some("spec.nodeName=n1".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    let s = status_of(err);
    assert_eq!(
        (s.code, s.message.as_str()),
        (400, "field label not supported: spec.nodeName")
    );
    let nodes = server.lister_watcher::<JsonObject>("nodes", None).unwrap();
    let err = nodes
        .list(&ListOptions {
            field_selector: Some("metadata.namespace=x".into()),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status_of(err).code, 400);
    let ok = nodes
        .list(&ListOptions {
            field_selector: Some("spec.unschedulable=false".into()),
            ..ListOptions::default()
        })
        .await;
    assert!(ok.is_ok());
}

#[tokio::test(start_paused = true)]
async fn invalid_list_options_are_422() {
    let server = seeded();
    let target = server.target("pods", None).unwrap();
    let cases: Vec<(Query, &str)> = vec![
        (
            Query {
                resource_version_match: Some("NotOlderThan".into()),
                ..Query::default()
            },
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            Query {
                resource_version: Some("0".into()),
                resource_version_match: Some("Exact".into()),
                ..Query::default()
            },
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            Query {
                resource_version: Some("5".into()),
                resource_version_match: Some("Exact".into()),
                continue_token: Some("x".into()),
                ..Query::default()
            },
            "resourceVersionMatch is forbidden when continue is provided",
        ),
        (
            Query {
                send_initial_events: Some(true),
                ..Query::default()
            },
            "sendInitialEvents is forbidden for list",
        ),
        (
            Query {
                resource_version: Some("5".into()),
                resource_version_match: Some("Sometimes".into()),
                ..Query::default()
            },
            "Unsupported value",
        ),
    ];
    for (query, want) in cases {
        let s = server.list(&target, &query).await.unwrap_err();
        assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{query:?}");
        assert!(
            s.message
                .starts_with("ListOptions.meta.k8s.io \"\" is invalid: "),
            "{}",
            s.message
        );
        assert!(
            s.message.contains(want),
            "{} should contain {want}",
            s.message
        );
        assert_eq!(s.class(), ErrorClass::Invalid);
    }
    // Through the ListerWatcher too.
    let err = lw(&server, None)
        .list(&ListOptions {
            resource_version_match: Some(ResourceVersionMatch::Exact),
            ..ListOptions::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status_of(err).code, 422);
}

#[tokio::test(start_paused = true)]
async fn list_response_renders_a_typed_list() {
    let server = seeded();
    let target = server.target("pods", Some("b")).unwrap();
    let resp = server
        .list(
            &target,
            &Query {
                limit: Some(2),
                ..Query::default()
            },
        )
        .await
        .unwrap();
    let body: serde_json::Value = serde_json::from_slice(&resp.to_json()).unwrap();
    assert_eq!(body["kind"], "PodList");
    assert_eq!(body["apiVersion"], "v1");
    assert_eq!(body["metadata"]["resourceVersion"], "8");
    assert_eq!(body["metadata"]["remainingItemCount"], 1);
    assert!(body["metadata"]["continue"].is_string());
    assert_eq!(body["items"].as_array().unwrap().len(), 2);
    assert_eq!(body["items"][0]["metadata"]["name"], "q0");
}

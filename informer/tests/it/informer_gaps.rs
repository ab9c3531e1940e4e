//! Informer scenarios around watch gaps, on the in-process fake API server: what handlers hear
//! when objects are deleted, or deleted and re-created under the same name, while the watch is
//! down and the history they were in has been compacted away.

use fake_apiserver::FakeApiServer;
use informer::{InformerConfig, QueueChoice, UidChange};
use informer_testing::JsonObject;

use crate::informer_support::*;

/// A full list: paginated, or streamed (the default since issue 10).
fn is_relist(r: &fake_apiserver::RequestRecord) -> bool {
    r.is_list_of(RESOURCE)
        || (r.is_watch_of(RESOURCE) && r.param("sendInitialEvents") == Some("true"))
}

fn configs() -> Vec<(&'static str, InformerConfig<JsonObject>)> {
    vec![
        ("DeltaFifo", InformerConfig::default()),
        (
            "InOrderFifo",
            InformerConfig {
                queue: QueueChoice::in_order(),
                ..InformerConfig::default()
            },
        ),
    ]
}

/// Opens a gap: the watch ends, then `during` changes the server, then the history is
/// compacted, all before the reflector can react (no await in between), so the re-watch from
/// the old resourceVersion gets 410 and the reflector relists.
fn gap(server: &FakeApiServer, during: impl FnOnce(&FakeApiServer)) {
    assert_eq!(server.faults().drop_watches(RESOURCE), 1);
    during(server);
    server.compact_all();
}

/// Makes a change after the gap and waits for it, so everything before it has been handled.
async fn settle(server: &FakeApiServer, log: &Log) {
    let marker = server.create(RESOURCE, &cm("zz-marker")).unwrap();
    let rv = marker.resource_version().to_string();
    log.wait_until("the marker's add", |s| {
        s.iter()
            .any(|e| matches!(e, Seen::Add { key, rv: r, .. } if key == "ns/zz-marker" && *r == rv))
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn delete_during_a_watch_gap_is_exactly_one_tombstone() {
    for (queue, config) in configs() {
        let server = FakeApiServer::new();
        server.create(RESOURCE, &cm("a")).unwrap();
        server.create(RESOURCE, &cm("b")).unwrap();
        let informer = informer(&server, config);
        let log = Log::default();
        informer.add_handler(log.handler()).unwrap();
        let running = Running::start(&informer);
        running.synced(&server).await;
        log.wait_for_len(2).await;
        let lists_before = server.requests().iter().filter(|r| is_relist(r)).count();
        let old_rv = informer.last_synced_resource_version().unwrap();

        gap(&server, |s| {
            s.delete(RESOURCE, Some(NS), "a").unwrap();
        });
        log.wait_until("the delete of a", |s| {
            s.iter()
                .any(|e| e.key() == "ns/a" && matches!(e, Seen::Delete { .. }))
        })
        .await;
        settle(&server, &log).await;

        let deletes: Vec<Seen> = log
            .seen()
            .into_iter()
            .filter(|e| matches!(e, Seen::Delete { .. }))
            .collect();
        assert_eq!(deletes.len(), 1, "{queue}: {deletes:?}");
        assert!(
            matches!(&deletes[0], Seen::Delete { key, tombstone: true, .. } if key == "ns/a"),
            "{queue}: {deletes:?}"
        );
        assert_eq!(log.fold().unwrap(), server_state(&server), "{queue}");
        assert_eq!(cache_state(&informer), server_state(&server), "{queue}");

        // The request log shows the re-watch from the old resourceVersion and the relist.
        let requests = server.requests();
        assert!(
            requests
                .iter()
                .any(|r| r.is_watch_of(RESOURCE)
                    && r.param("resourceVersion") == Some(old_rv.as_str())),
            "{queue}: no re-watch from {old_rv}: {requests:?}"
        );
        assert!(
            requests.iter().filter(|r| is_relist(r)).count() > lists_before,
            "{queue}: no relist"
        );
        let report = running.stop().await;
        assert!(report.stuck.is_empty());
    }
}

#[tokio::test(start_paused = true)]
async fn delete_and_recreate_during_a_gap_is_delete_then_add() {
    for (queue, config) in configs() {
        let server = FakeApiServer::new();
        let first = server.create(RESOURCE, &cm("a")).unwrap();
        let informer = informer(&server, config);
        let log = Log::default();
        informer.add_handler(log.handler()).unwrap();
        let running = Running::start(&informer);
        running.synced(&server).await;
        log.wait_for_len(1).await;

        let mut second = None;
        gap(&server, |s| {
            s.delete(RESOURCE, Some(NS), "a").unwrap();
            second = Some(
                s.create(RESOURCE, &cm("a").with_label("generation", "2"))
                    .unwrap(),
            );
        });
        let second = second.unwrap();
        assert_ne!(first.uid(), second.uid());
        settle(&server, &log).await;

        let about_a: Vec<Seen> = log
            .seen()
            .into_iter()
            .filter(|e| e.key() == "ns/a")
            .collect();
        assert_eq!(
            about_a,
            vec![
                Seen::Add {
                    key: "ns/a".into(),
                    rv: first.resource_version().to_string(),
                    uid: first.uid().into(),
                    initial: true,
                },
                Seen::Delete {
                    key: "ns/a".into(),
                    rv: first.resource_version().to_string(),
                    uid: first.uid().into(),
                    tombstone: true,
                },
                Seen::Add {
                    key: "ns/a".into(),
                    rv: second.resource_version().to_string(),
                    uid: second.uid().into(),
                    initial: false,
                },
            ],
            "{queue}"
        );
        assert_eq!(log.fold().unwrap(), server_state(&server), "{queue}");
        running.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn client_go_mode_reports_the_recreation_as_an_update() {
    let server = FakeApiServer::new();
    let first = server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(
        &server,
        InformerConfig {
            uid_change: UidChange::Update,
            ..InformerConfig::default()
        },
    );
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    log.wait_for_len(1).await;

    let mut second = None;
    gap(&server, |s| {
        s.delete(RESOURCE, Some(NS), "a").unwrap();
        second = Some(s.create(RESOURCE, &cm("a")).unwrap());
    });
    let second = second.unwrap();
    settle(&server, &log).await;

    let about_a: Vec<Seen> = log
        .seen()
        .into_iter()
        .filter(|e| e.key() == "ns/a")
        .collect();
    assert_eq!(
        about_a[1..],
        [Seen::Update {
            key: "ns/a".into(),
            old_rv: first.resource_version().to_string(),
            new_rv: second.resource_version().to_string(),
            new_uid: second.uid().into(),
        }]
    );
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_deletion_seen_by_the_watch_carries_the_final_object() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    let deleted = server.delete(RESOURCE, Some(NS), "a").unwrap();
    log.wait_for_len(2).await;
    assert_eq!(
        log.seen()[1],
        Seen::Delete {
            key: "ns/a".into(),
            rv: deleted.object().resource_version().to_string(),
            uid: deleted.object().uid().into(),
            tombstone: false,
        }
    );
    // Re-created with the watch up: a plain delete then add, no tombstone.
    server.create(RESOURCE, &cm("a")).unwrap();
    log.wait_for_len(3).await;
    assert!(matches!(&log.seen()[2], Seen::Add { initial: false, .. }));
    assert!(informer.lister().get(Some(NS), "a").is_some());
    running.stop().await;
}

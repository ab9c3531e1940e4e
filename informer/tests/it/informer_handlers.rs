//! Handler scenarios on the in-process fake API server: late handlers, per-handler sync, slow,
//! stuck, panicking and overflowing handlers, removal, streams and shutdown.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use futures::StreamExt;
use informer::{
    Delivery, HandlerOptions, Incident, IncidentKind, InformerConfig, InformerError, Notification,
    RegistrationStatus, handler, label_index_func, wait_for_cache_sync,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::informer_support::*;

fn incidents() -> (Arc<Mutex<Vec<Incident>>>, InformerConfig<JsonObject>) {
    let seen: Arc<Mutex<Vec<Incident>>> = Arc::default();
    let sink = Arc::clone(&seen);
    let config = InformerConfig {
        on_incident: Some(Arc::new(move |i: &Incident| sink.lock().push(i.clone()))),
        ..InformerConfig::default()
    };
    (seen, config)
}

/// Random creates, updates and deletes while a handler is added at a random moment: the late
/// handler's notifications fold into exactly the server's state (no gap: nothing missing or
/// updated before it was added; no duplicate: nothing added twice), its initial-list adds come
/// first, and the early handler agrees.
#[tokio::test(start_paused = true)]
async fn a_late_handler_gets_the_cache_then_live_events_with_no_gap_or_duplicate() {
    for seed in 0..64u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let server = FakeApiServer::new();
        for i in 0..rng.random_range(0..6) {
            server.create(RESOURCE, &cm(&format!("o{i}"))).unwrap();
        }
        let informer = informer(&server, InformerConfig::default());
        let early = Log::default();
        informer.add_handler(early.handler()).unwrap();
        let running = Running::start(&informer);

        let ops = 40;
        let join_at = rng.random_range(0..ops);
        let late = Log::default();
        let mut late_registration = None;
        for op in 0..ops {
            if op == join_at {
                late_registration = Some(informer.add_handler(late.handler()).unwrap());
            }
            let name = format!("o{}", rng.random_range(0..8));
            match rng.random_range(0..3) {
                0 => {
                    let _ = server.create(RESOURCE, &cm(&name));
                }
                1 => {
                    let _ = server.update(
                        RESOURCE,
                        &cm(&name).with_label("n", rng.random_range(0..1000).to_string()),
                    );
                }
                _ => {
                    let _ = server.delete(RESOURCE, Some(NS), &name);
                }
            }
            for _ in 0..rng.random_range(0..4) {
                tokio::task::yield_now().await;
            }
        }
        let marker = server.create(RESOURCE, &cm("zz-marker")).unwrap();
        let marker_rv = marker.resource_version().to_string();
        for log in [&early, &late] {
            log.wait_until("the marker", |s| {
                s.iter().any(|e| matches!(e, Seen::Add { key, rv, .. } if key == "ns/zz-marker" && *rv == marker_rv))
            })
            .await;
        }

        let expected = server_state(&server);
        assert_eq!(cache_state(&informer), expected, "seed {seed}");
        assert_eq!(early.fold(), Ok(expected.clone()), "seed {seed}");
        assert_eq!(late.fold(), Ok(expected), "seed {seed}: {:?}", late.seen());
        let seen = late.seen();
        let initial = seen
            .iter()
            .take_while(|e| matches!(e, Seen::Add { initial: true, .. }))
            .count();
        assert!(
            seen[initial..]
                .iter()
                .all(|e| !matches!(e, Seen::Add { initial: true, .. })),
            "seed {seed}: initial-list adds after live events: {seen:?}"
        );
        assert!(late_registration.unwrap().has_synced(), "seed {seed}");
        running.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn registration_syncs_only_once_its_handler_has_the_initial_list() {
    let server = FakeApiServer::new();
    for name in ["a", "b", "c"] {
        server.create(RESOURCE, &cm(name)).unwrap();
    }
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    let fast = informer.add_handler(log.handler()).unwrap();
    let mut stream = informer.stream_with(HandlerOptions::named("lazy")).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    assert!(informer.has_synced());
    assert!(fast.wait_for_sync().await);
    assert!(fast.has_synced());
    // The stream has not yielded anything: the informer has synced, its registration not.
    assert!(!stream.registration().has_synced());
    assert_eq!(stream.registration().stats().initial_pending, 3);
    let err = wait_for_cache_sync(Duration::from_secs(5), &[&informer, &fast, &stream])
        .await
        .unwrap_err();
    assert_eq!(err.not_synced, ["configmaps/lazy"]);

    for _ in 0..2 {
        stream.next().await.unwrap();
    }
    assert!(!stream.registration().has_synced());
    stream.next().await.unwrap();
    assert!(stream.registration().has_synced());
    wait_for_cache_sync(Duration::from_secs(5), &[&informer, &fast, &stream])
        .await
        .unwrap();

    // A handler added after sync is not synced until it has handled the replay.
    let gate = Arc::new(Gate::default());
    let late_log = Log::default();
    let late = informer
        .add_handler_with(
            late_log.handler().gated(Arc::clone(&gate)),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::named("late")
            },
        )
        .unwrap();
    assert!(!late.has_synced());
    assert_eq!(late.stats().initial_pending, 3);
    gate.open();
    spin_until("the late handler's sync", || late.has_synced()).await;
    assert!(late.wait_for_sync().await);
    assert_eq!(late_log.len(), 3);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_stream_does_not_delay_other_handlers_and_gets_everything_in_order() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    // Nobody polls this stream until the end: its consumer is "blocked".
    let mut slow = informer.stream_with(HandlerOptions::named("slow")).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    for i in 0..20 {
        server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
        server
            .update(RESOURCE, &cm(&format!("n{i}")).with_label("v", "2"))
            .unwrap();
    }
    log.wait_for_len(41).await;
    assert_eq!(slow.registration().pending(), 41);
    assert_eq!(slow.registration().stats().max_pending, 41);

    let mut from_stream = Vec::new();
    while from_stream.len() < 41 {
        from_stream.push(Seen::from_notification(&slow.next().await.unwrap()));
    }
    assert_eq!(from_stream, log.seen());
    assert_eq!(slow.registration().pending(), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_blocked_handler_does_not_delay_other_handlers() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let gate = Arc::new(Gate::default());
    let blocked_log = Log::default();
    let blocked = informer
        .add_handler_with(
            blocked_log.handler().gated(Arc::clone(&gate)),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::named("blocked")
            },
        )
        .unwrap();
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    for i in 0..10 {
        server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
    }
    log.wait_for_len(10).await;
    // One notification is in the blocked handler's hands, the rest wait in its buffer.
    assert_eq!(blocked.pending(), 10);
    assert!(blocked_log.seen().is_empty());

    gate.open();
    spin_until("the blocked handler's catch-up", || blocked_log.len() == 10).await;
    assert_eq!(blocked_log.seen(), log.seen());
    assert_eq!(blocked.pending(), 0);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_panicking_handler_is_reported_and_keeps_receiving() {
    let server = FakeApiServer::new();
    let (incidents, config) = incidents();
    let informer = informer(&server, config);
    let handled: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = Arc::clone(&handled);
    let registration = informer
        .add_handler_with(
            handler().on_add(move |obj: &Arc<JsonObject>, _| {
                let name = obj.metadata.name.clone().unwrap();
                assert_ne!(name, "boom", "the handler refuses boom");
                sink.lock().push(name);
            }),
            HandlerOptions::named("fragile"),
        )
        .unwrap();
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    for name in ["ok1", "boom", "ok2"] {
        server.create(RESOURCE, &cm(name)).unwrap();
    }
    log.wait_for_len(3).await;
    tokio::time::timeout(Duration::from_secs(60), async {
        while registration.stats().delivered < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();

    assert_eq!(*handled.lock(), ["ok1", "ok2"]);
    assert_eq!(registration.stats().panics, 1);
    assert_eq!(informer.stats().handler_panics, 1);
    let incidents = incidents.lock().clone();
    assert_eq!(incidents.len(), 1);
    assert_eq!(incidents[0].handler, "fragile");
    match &incidents[0].kind {
        IncidentKind::Panicked {
            message,
            notification,
        } => {
            assert!(message.contains("the handler refuses boom"), "{message}");
            assert!(notification.contains("ns/boom"), "{notification}");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(registration.is_active());
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_handler_over_its_bound_is_disconnected_and_reported() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let (incidents, config) = incidents();
    let informer = informer(&server, config);
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let mut bounded = informer
        .stream_with(HandlerOptions {
            buffer_limit: NonZeroUsize::new(3),
            ..HandlerOptions::named("bounded")
        })
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    // The initial list does not count against the bound.
    assert_eq!(bounded.registration().pending(), 1);

    for i in 0..5 {
        server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
    }
    log.wait_for_len(6).await;
    assert_eq!(
        bounded.registration().status(),
        RegistrationStatus::Disconnected
    );
    assert!(!bounded.registration().has_synced());
    assert_eq!(bounded.registration().pending(), 0);
    assert!(bounded.next().await.is_none(), "a disconnected stream ends");
    assert_eq!(informer.stats().handlers_disconnected, 1);
    assert_eq!(informer.registrations().len(), 1);
    let incidents = incidents.lock().clone();
    assert_eq!(
        incidents.iter().map(|i| &i.kind).collect::<Vec<_>>(),
        [&IncidentKind::Overflowed {
            limit: 3,
            dropped: 4
        }]
    );
    // The others go on.
    server.create(RESOURCE, &cm("after")).unwrap();
    log.wait_for_len(7).await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn removed_handlers_and_dropped_streams_hear_nothing_more() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let kept = Log::default();
    informer.add_handler(kept.handler()).unwrap();
    let removed = Log::default();
    let registration = informer.add_handler(removed.handler()).unwrap();
    let stream = informer.stream().unwrap();
    assert_eq!(informer.registrations().len(), 3);
    let running = Running::start(&informer);
    running.synced(&server).await;

    server.create(RESOURCE, &cm("a")).unwrap();
    kept.wait_for_len(1).await;
    removed.wait_for_len(1).await;
    assert!(informer.remove_handler(&registration));
    assert!(!informer.remove_handler(&registration));
    assert_eq!(registration.status(), RegistrationStatus::Removed);
    drop(stream);
    assert_eq!(informer.registrations().len(), 1);

    server.create(RESOURCE, &cm("b")).unwrap();
    kept.wait_for_len(2).await;
    assert_eq!(removed.len(), 1);
    assert!(!registration.has_synced());
    assert!(!registration.wait_for_sync().await);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_handlers_to_drain() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let gate = Arc::new(Gate::default());
    let log = Log::default();
    let registration = informer
        .add_handler_with(
            log.handler().gated(Arc::clone(&gate)),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::default()
            },
        )
        .unwrap();
    let witness = Log::default();
    informer.add_handler(witness.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    for i in 0..5 {
        server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
    }
    witness.wait_for_len(5).await;
    assert_eq!(registration.pending(), 5);

    // The gate opens while shutdown is waiting; virtual time stands still while the handler
    // thread drains, so shutdown's bound cannot run out meanwhile.
    let opener = tokio::spawn({
        let gate = Arc::clone(&gate);
        async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let hold = hold_time();
            gate.open();
            hold
        }
    });
    let report = running.stop().await;
    opener.await.unwrap().release().await;
    assert_eq!(report.drained, 2);
    assert!(report.stuck.is_empty());
    assert_eq!(log.len(), 5);
    assert_eq!(registration.status(), RegistrationStatus::Stopped);
    assert!(registration.has_synced());
    assert!(matches!(
        informer.add_handler(handler()),
        Err(InformerError::Stopped { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn shutdown_abandons_and_reports_a_stuck_handler() {
    let server = FakeApiServer::new();
    let (incidents, mut config) = incidents();
    config.shutdown_timeout = Duration::from_secs(5);
    let informer = informer(&server, config);
    let gate = Arc::new(Gate::default());
    let stuck = informer
        .add_handler_with(
            Log::default().handler().gated(Arc::clone(&gate)),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::named("stuck")
            },
        )
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    for i in 0..3 {
        server.create(RESOURCE, &cm(&format!("n{i}"))).unwrap();
    }
    tokio::time::timeout(Duration::from_secs(60), async {
        while stuck.pending() < 3 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();

    let report = running.stop().await;
    assert_eq!(report.stuck.len(), 1);
    assert_eq!(report.stuck[0].name, "stuck");
    assert_eq!(report.stuck[0].pending, 3);
    assert_eq!(informer.stats().handlers_stuck, 1);
    assert!(matches!(
        incidents.lock().last().map(|i| &i.kind),
        Some(IncidentKind::StuckAtShutdown { pending: 3 })
    ));
    // Released, the thread handles the notification it held and ends.
    gate.open();
}

#[tokio::test(start_paused = true)]
async fn a_stream_yields_the_cache_then_changes_and_ends_after_stop() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let running = Running::start(&informer);
    running.synced(&server).await;
    // Created after sync: the stream starts with the cache.
    let mut stream = informer.stream().unwrap();
    server
        .update(RESOURCE, &cm("a").with_label("v", "2"))
        .unwrap();
    server.delete(RESOURCE, Some(NS), "a").unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(stream.next().await.unwrap());
    }
    assert!(matches!(
        &seen[0],
        Notification::Add {
            is_in_initial_list: true,
            ..
        }
    ));
    assert!(matches!(&seen[1], Notification::Update { .. }));
    assert!(matches!(&seen[2], Notification::Delete(obj) if !obj.is_tombstone()));
    assert!(stream.registration().has_synced());

    server.create(RESOURCE, &cm("b")).unwrap();
    // Wait until the stream holds the notification, then stop: it is still yielded.
    tokio::time::timeout(Duration::from_secs(60), async {
        while stream.backlog() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    let report = running.stop().await;
    assert_eq!(report.streams, 1);
    assert!(matches!(
        stream.next().await,
        Some(Notification::Add { .. })
    ));
    assert!(stream.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn indexers_can_be_added_after_start_and_the_transform_runs_before_storing() {
    let server = FakeApiServer::new();
    server
        .create(
            RESOURCE,
            &cm("a").with_label("app", "web").with_label("secret", "x"),
        )
        .unwrap();
    let informer = informer(
        &server,
        InformerConfig {
            transform: Some(Arc::new(|mut obj: JsonObject| {
                obj.metadata.labels.remove("secret");
                obj
            })),
            ..InformerConfig::default()
        },
    );
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;

    let cached = informer.lister().get(Some(NS), "a").unwrap();
    assert!(!cached.metadata.labels.contains_key("secret"));
    informer
        .add_indexers([("app".to_owned(), label_index_func("app"))].into())
        .unwrap();
    assert_eq!(informer.lister().by_index("app", "web").unwrap().len(), 1);
    assert!(matches!(
        informer.add_indexers([("app".to_owned(), label_index_func("app"))].into()),
        Err(InformerError::Indexers { .. })
    ));
    server
        .create(RESOURCE, &cm("b").with_label("app", "web"))
        .unwrap();
    log.wait_for_len(2).await;
    assert_eq!(informer.lister().by_index("app", "web").unwrap().len(), 2);
    assert!(matches!(
        informer.run(Default::default()).await,
        Err(InformerError::AlreadyStarted { .. })
    ));
    running.stop().await;
}

/// Objects are decoded once and shared: every handler of an event and the cache hold the very
/// same `Arc` (ARCHITECTURE.md's "decoded once" invariant).
#[tokio::test(start_paused = true)]
async fn handlers_and_the_cache_share_one_arc_per_object() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    type Seen = Vec<(usize, Arc<JsonObject>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    for h in 0..3 {
        let sink = Arc::clone(&seen);
        informer
            .add_handler(handler().on_change(move |o: &Arc<JsonObject>| {
                sink.lock().push((h, Arc::clone(o)));
            }))
            .unwrap();
    }
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    server
        .update(RESOURCE, &cm("a").with_label("v", "2"))
        .unwrap();
    server.create(RESOURCE, &cm("b")).unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        while seen.lock().len() < 9 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("every handler heard the three changes");
    let lister = informer.lister();
    let seen: Seen = seen.lock().clone();
    for key in ["ns/a", "ns/b"] {
        let cached = lister.get_by_key(key).unwrap();
        let newest: Vec<&Arc<JsonObject>> = (0..3)
            .filter_map(|h| {
                seen.iter()
                    .rev()
                    .find(|(who, o)| {
                        *who == h && informer::key_of(o.as_ref()).unwrap().as_str() == key
                    })
                    .map(|(_, o)| o)
            })
            .collect();
        assert_eq!(newest.len(), 3, "{key}");
        for o in newest {
            assert!(Arc::ptr_eq(o, &cached), "{key}: a handler got a copy");
        }
    }
    running.stop().await;
}

//! client-go `tools/cache/shared_informer_test.go`, ported: the shared informer over the
//! in-process fake API server (client-go's `FakeControllerSource`) or a script. client-go's
//! `eventHandlerCount` is our `registrations().len()`, `isRegistered` our
//! `Registration::is_active` on the informer's registrations.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    Delivery, HandlerOptions, IncidentKind, InformerConfig, InformerError, Object, Registration,
    SharedIndexInformer, handler,
};
use informer_core::{IndexFunc, Indexers, Status, WatchEvent};
use informer_testing::JsonObject;
use parking_lot::Mutex;

use super::support::*;
use crate::informer_support::*;
use crate::reflector_support::{Answer, ScriptedListerWatcher, Step, page};

/// Names of the objects a handler was told about by adds and updates (client-go's
/// `testListener` records exactly those).
fn names(log: &Log) -> BTreeSet<String> {
    log.seen()
        .iter()
        .filter(|s| !matches!(s, Seen::Delete { .. }))
        .map(|s| s.key().trim_start_matches("ns/").to_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

fn is_registered(informer: &SharedIndexInformer<JsonObject>, r: &Registration) -> bool {
    informer.registrations().iter().any(|x| x.id() == r.id())
}

fn one_second_resync() -> InformerConfig<JsonObject> {
    InformerConfig {
        resync_period: Some(secs(1)),
        ..InformerConfig::default()
    }
}

/// An index of every label key.
fn label_keys() -> IndexFunc<JsonObject> {
    Arc::new(|o: &JsonObject| o.metadata.labels.keys().cloned().collect())
}

/// client-go tools/cache/shared_informer_test.go: TestIndexer
#[tokio::test(start_paused = true)]
async fn indexer() {
    let server = FakeApiServer::new();
    server
        .create(
            RESOURCE,
            &cm("pod1")
                .with_label("a", "a-val")
                .with_label("b", "b-val1"),
        )
        .unwrap();
    server
        .create(RESOURCE, &cm("pod2").with_label("b", "b-val2"))
        .unwrap();
    let informer = informer(&server, one_second_resync());
    informer
        .add_indexers(Indexers::from([("labels".to_owned(), label_keys())]))
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    let by_label = |index: &str| -> Vec<String> {
        let mut names: Vec<String> = informer
            .lister()
            .by_index(index, "a")
            .unwrap()
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        names.sort();
        names
    };
    assert_eq!(by_label("labels"), ["pod1"]);
    // An object added later is indexed too.
    server
        .create(RESOURCE, &cm("pod3").with_label("a", "a-val2"))
        .unwrap();
    eventually("pod3 indexed", || by_label("labels") == ["pod1", "pod3"]).await;
    // An index added later is built over the current content at once.
    informer
        .add_indexers(Indexers::from([("labels-again".to_owned(), label_keys())]))
        .unwrap();
    assert_eq!(by_label("labels-again"), ["pod1", "pod3"]);
    for index in ["labels", "labels-again"] {
        let values: BTreeSet<String> = informer
            .lister()
            .list_index_func_values(index)
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(values, set(&["a", "b"]));
    }
    running.stop().await;
}

/// client-go's testListenerResyncPeriods: three handlers (never, 2 s, 3 s) under a 1 s
/// resync; each gets the initial list, then only the due one gets each resync. `gate`
/// holds the handlers' first calls until 1 s has passed (the "delayed" variant).
async fn run_listener_resync_periods(gate: Option<Arc<Gate>>) {
    let start = tokio::time::Instant::now();
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    server.create(RESOURCE, &cm("pod2")).unwrap();
    let informer = informer(&server, one_second_resync());
    let logs: Vec<Log> = (0..3).map(|_| Log::default()).collect();
    for (log, period) in logs.iter().zip([0, 2, 3]) {
        let mut recorder = log.handler();
        let mut options = with_resync("listener", secs(period));
        if let Some(gate) = &gate {
            recorder = recorder.gated(Arc::clone(gate));
            options.delivery = Delivery::Thread;
        }
        informer.add_handler_with(recorder, options).unwrap();
    }
    let running = Running::start(&informer);
    if let Some(gate) = &gate {
        tokio::time::sleep_until(start + secs(1)).await;
        gate.open();
    }
    spin_until("every listener has the initial list", || {
        logs.iter().all(|l| names(l) == set(&["pod1", "pod2"]))
    })
    .await;
    let cleared: Vec<usize> = logs.iter().map(Log::len).collect();
    let since = |i: usize| -> BTreeSet<String> {
        let seen = logs[i].seen();
        seen[cleared[i]..]
            .iter()
            .map(|s| s.key().trim_start_matches("ns/").to_owned())
            .collect()
    };
    // Listener 2 (every 2 s) gets the resync at 2 s, the others nothing.
    tokio::time::sleep_until(start + millis(2_500)).await;
    spin_until("listener 2's resync", || since(1) == set(&["pod1", "pod2"])).await;
    assert!(since(0).is_empty());
    assert!(since(2).is_empty());
    // Listener 3 (every 3 s) gets the one at 3 s; listener 2 nothing more.
    let cleared_two = logs[1].len();
    tokio::time::sleep_until(start + millis(3_500)).await;
    spin_until("listener 3's resync", || since(2) == set(&["pod1", "pod2"])).await;
    assert!(since(0).is_empty());
    assert_eq!(logs[1].len(), cleared_two);
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestListenerResyncPeriods
#[tokio::test(start_paused = true)]
async fn listener_resync_periods() {
    run_listener_resync_periods(None).await;
}

/// client-go tools/cache/shared_informer_test.go: TestListenerResyncPeriodsDelayed
///
/// Ours: the handlers, on their own threads, cannot start handling until 1 s has passed.
#[tokio::test(start_paused = true)]
async fn listener_resync_periods_delayed() {
    run_listener_resync_periods(Some(Arc::new(Gate::default()))).await;
}

/// client-go tools/cache/shared_informer_test.go: TestResyncCheckPeriod
#[tokio::test(start_paused = true)]
async fn resync_check_period() {
    let server = FakeApiServer::new();
    let informer = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(12 * 3600)),
            ..InformerConfig::default()
        },
    );
    let add = |period: u64| {
        informer
            .add_handler_with(Log::default().handler(), with_resync("l", secs(period)))
            .unwrap()
    };
    let period = |r: &Registration| r.stats().resync_period;
    let h1 = add(0);
    assert_eq!(informer.resync_check_period(), secs(12 * 3600));
    assert_eq!(period(&h1), Duration::ZERO);
    let h2 = add(60);
    assert_eq!(informer.resync_check_period(), secs(60));
    assert_eq!((period(&h1), period(&h2)), (Duration::ZERO, secs(60)));
    let h3 = add(55);
    assert_eq!(informer.resync_check_period(), secs(55));
    assert_eq!(
        (period(&h1), period(&h2), period(&h3)),
        (Duration::ZERO, secs(60), secs(55))
    );
    let h4 = add(5);
    assert_eq!(informer.resync_check_period(), secs(5));
    assert_eq!(
        (period(&h1), period(&h2), period(&h3), period(&h4)),
        (Duration::ZERO, secs(60), secs(55), secs(5))
    );
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerInitializationRace
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_informer_initialization_race() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    let log = Log::default();
    let adding = tokio::spawn({
        let informer = informer.clone();
        let handler = log.handler();
        async move { informer.add_handler(handler) }
    });
    let running = Running::start(&informer);
    let registration = adding.await.unwrap().unwrap();
    // Registered before or after start, it gets the initial list exactly once.
    tokio::time::timeout(secs(10), registration.wait_for_sync())
        .await
        .unwrap();
    assert_eq!(names(&log), set(&["pod1"]));
    assert_eq!(log.len(), 1);
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerWatchDisruption
///
/// The disruption is a 410 on the watch; the relist finds pod2 changed and pod3 new.
#[tokio::test(start_paused = true)]
async fn shared_informer_watch_disruption() {
    let pod = |name: &str, rv: &str| {
        JsonObject::new(Some(NS), name)
            .with_uid(name)
            .with_resource_version(rv)
    };
    let lw = ScriptedListerWatcher::new(vec![
        Answer::List(Ok(page(
            vec![pod("pod1", "1"), pod("pod2", "2")],
            "2",
            None,
        ))),
        Answer::Watch(Ok(vec![
            Step::Sleep(millis(10_500)),
            Step::event(WatchEvent::Error(Status::failure(
                410, "Expired", "too old",
            ))),
        ])),
        Answer::List(Ok(page(
            vec![pod("pod1", "1"), pod("pod2", "4"), pod("pod3", "3")],
            "4",
            None,
        ))),
        Answer::Watch(Ok(vec![Step::Hang])),
    ]);
    let mut config = one_second_resync();
    config.list_watch.watch_list = informer::reflector::WatchListMode::Off;
    config.seed = Some(7);
    let informer = SharedIndexInformer::new(lw.clone(), config).unwrap();
    let no_resync = Log::default();
    let resync = Log::default();
    informer
        .add_handler_with(
            no_resync.handler(),
            with_resync("no-resync", Duration::ZERO),
        )
        .unwrap();
    informer
        .add_handler_with(resync.handler(), with_resync("resync", secs(1)))
        .unwrap();
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    tokio::time::sleep(secs(5)).await;
    assert_eq!(names(&no_resync), set(&["pod1", "pod2"]));
    assert_eq!(no_resync.len(), 2, "no resync, no change: nothing more");
    let before = resync.len();
    eventually("the relist", || {
        informer.stats().reflector.unwrap().counters.lists == 2
    })
    .await;
    eventually("pod3", || names(&no_resync).contains("pod3")).await;
    tokio::time::sleep(millis(100)).await;
    // The handler without resync hears the changes only: pod2's update and pod3's add.
    let after: Vec<Seen> = no_resync.seen()[2..].to_vec();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(after.iter().any(|s| matches!(s,
        Seen::Update { key, old_rv, new_rv, .. } if key == "ns/pod2" && old_rv == "2" && new_rv == "4")));
    assert!(
        after
            .iter()
            .any(|s| matches!(s, Seen::Add { key, .. } if key == "ns/pod3"))
    );
    // The resyncing one, due at every check, hears pod1 too.
    let seen: BTreeSet<String> = resync.seen()[before..]
        .iter()
        .map(|s| s.key().trim_start_matches("ns/").to_owned())
        .collect();
    assert_eq!(seen, set(&["pod1", "pod2", "pod3"]));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerErrorHandling
#[tokio::test(start_paused = true)]
async fn shared_informer_error_handling() {
    let source = FakeSource::new(|_| Err(api(Status::failure(403, "Forbidden", "Access Denied"))));
    let mut config = one_second_resync();
    list_then_watch(&mut config);
    let failures = record_failures(&mut config.watch_error_handler);
    let informer = SharedIndexInformer::new(source, config).unwrap();
    let running = Running::start(&informer);
    eventually("the error handler is called", || {
        !failures.lock().is_empty()
    })
    .await;
    assert!(failures.lock()[0].message.contains("Access Denied"));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerTransformer
///
/// Ours: the transform must keep the name, so it sets a label where client-go upper-cases the
/// name.
#[tokio::test(start_paused = true)]
async fn shared_informer_transformer() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    server.create(RESOURCE, &cm("pod2")).unwrap();
    let informer = informer(
        &server,
        InformerConfig {
            transform: Some(Arc::new(|o: JsonObject| {
                let upper = o.object_name().unwrap_or_default().to_uppercase();
                o.with_label("upper", upper)
            })),
            ..one_second_resync()
        },
    );
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let sink = Arc::clone(&seen);
    informer
        .add_handler(handler().on_add(move |o: &Arc<JsonObject>, _| {
            sink.lock().insert(o.metadata.labels["upper"].clone());
        }))
        .unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    eventually("both", || seen.lock().len() == 2).await;
    assert_eq!(*seen.lock(), set(&["POD1", "POD2"]));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerRemoveHandler
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_handler() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    let h1 = informer.add_handler(handler()).unwrap();
    let h2 = informer.add_handler(handler()).unwrap();
    assert_eq!(informer.registrations().len(), 2);
    assert!(informer.remove_handler(&h2));
    assert_eq!(informer.registrations().len(), 1);
    assert!(informer.remove_handler(&h1));
    assert_eq!(informer.registrations().len(), 0);
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerRemoveForeignHandler
#[tokio::test(start_paused = true)]
async fn shared_informer_remove_foreign_handler() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer1 = informer(&server, one_second_resync());
    let informer2 = informer(&server, one_second_resync());
    let h1 = informer1.add_handler(handler()).unwrap();
    let h2 = informer1.add_handler(handler()).unwrap();
    assert_eq!(informer1.registrations().len(), 2);
    assert_eq!(informer2.registrations().len(), 0);
    assert!(!is_registered(&informer2, &h1));
    assert!(!is_registered(&informer2, &h2));
    // Removing from the other informer does nothing.
    assert!(!informer2.remove_handler(&h1));
    assert_eq!(informer1.registrations().len(), 2);
    assert_eq!(informer2.registrations().len(), 0);
    assert!(is_registered(&informer1, &h1) && is_registered(&informer1, &h2));
    assert!(h1.is_active());
    assert!(informer1.remove_handler(&h2));
    assert_eq!(informer1.registrations().len(), 1);
    assert!(informer1.remove_handler(&h1));
    assert_eq!(informer1.registrations().len(), 0);
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerMultipleRegistration
#[tokio::test(start_paused = true)]
async fn shared_informer_multiple_registration() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    // The same handler (one log) registered twice: two registrations.
    let log = Log::default();
    let r1 = informer.add_handler(log.handler()).unwrap();
    assert!(is_registered(&informer, &r1));
    let r2 = informer.add_handler(log.handler()).unwrap();
    assert!(is_registered(&informer, &r2));
    assert_eq!(informer.registrations().len(), 2);
    assert!(informer.remove_handler(&r1));
    assert!(!is_registered(&informer, &r1));
    assert!(is_registered(&informer, &r2));
    assert_eq!(informer.registrations().len(), 1);
    assert!(informer.remove_handler(&r2));
    assert!(!is_registered(&informer, &r2));
    assert_eq!(informer.registrations().len(), 0);
}

/// client-go tools/cache/shared_informer_test.go: TestRemovingRemovedSharedInformer
#[tokio::test(start_paused = true)]
async fn removing_removed_shared_informer() {
    let server = FakeApiServer::new();
    let informer = informer(&server, one_second_resync());
    let r = informer.add_handler(handler()).unwrap();
    assert!(informer.remove_handler(&r));
    assert!(!is_registered(&informer, &r));
    // A second removal is harmless.
    assert!(!informer.remove_handler(&r));
    assert!(!is_registered(&informer, &r));
}

/// client-go tools/cache/shared_informer_test.go: TestSharedInformerHandlerAbuse
///
/// Scaled down: 20 workers and 2,000 writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_informer_handler_abuse() {
    let server = FakeApiServer::new();
    let informer = informer(&server, one_second_resync());
    let running = Running::start(&informer);
    let done = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for seed in 0..20u64 {
        let informer = informer.clone();
        let done = Arc::clone(&done);
        workers.push(tokio::spawn(async move {
            let mut handles: Vec<Registration> = Vec::new();
            let mut state = seed.wrapping_mul(6_364_136_223_846_793_005) | 1;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            while !done.load(Ordering::Acquire) {
                if next() % 2 == 0 {
                    match informer.add_handler_with(
                        handler().on_change(|_: &Arc<JsonObject>| {}),
                        with_resync("abuse", secs(1)),
                    ) {
                        Ok(r) => handles.push(r),
                        Err(InformerError::Stopped { .. }) => return,
                        Err(other) => panic!("{other}"),
                    }
                } else if !handles.is_empty() {
                    let i = (next() % handles.len() as u64) as usize;
                    let r = handles.swap_remove(i);
                    informer.remove_handler(&r);
                }
                tokio::task::yield_now().await;
            }
        }));
    }
    let mut live: Vec<String> = Vec::new();
    for i in 0..2_000u64 {
        let pick = (i * 2_654_435_761) % 3;
        if live.is_empty() || pick == 0 {
            let name = format!("pod{i}");
            server.create(RESOURCE, &cm(&name)).unwrap();
            live.push(name);
        } else if pick == 1 {
            let name = &live[(i as usize) % live.len()];
            server
                .update(RESOURCE, &cm(name).with_label("i", i.to_string()))
                .unwrap();
        } else {
            let name = live.swap_remove((i as usize) % live.len());
            server.delete(RESOURCE, Some(NS), &name).unwrap();
        }
        if i % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    // Stop the informer while the workers still add and remove handlers.
    tokio::time::timeout(secs(30), running.stop())
        .await
        .unwrap();
    done.store(true, Ordering::Release);
    for w in workers {
        tokio::time::timeout(secs(30), w).await.unwrap().unwrap();
    }
}

/// client-go tools/cache/shared_informer_test.go: TestStateSharedInformer
#[tokio::test(start_paused = true)]
async fn state_shared_informer() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    assert!(!informer.is_started());
    assert!(!informer.is_stopped());
    let running = Running::start(&informer);
    log.wait_for_len(1).await;
    assert!(informer.is_started());
    assert!(!informer.is_stopped());
    running.stop().await;
    assert!(informer.is_stopped());
    assert!(informer.is_started());
}

/// client-go tools/cache/shared_informer_test.go: TestAddOnStoppedSharedInformer
#[tokio::test(start_paused = true)]
async fn add_on_stopped_shared_informer() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    Running::start(&informer).stop().await;
    assert!(informer.is_stopped());
    let err = informer.add_handler(Log::default().handler()).unwrap_err();
    assert!(matches!(err, InformerError::Stopped { .. }), "{err}");
    assert!(err.to_string().contains("has stopped"), "{err}");
}

/// client-go tools/cache/shared_informer_test.go: TestRemoveOnStoppedSharedInformer
///
/// Ours: removal after stop is harmless; shutdown already ended the registration.
#[tokio::test(start_paused = true)]
async fn remove_on_stopped_shared_informer() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let informer = informer(&server, one_second_resync());
    let r = informer.add_handler(Log::default().handler()).unwrap();
    Running::start(&informer).stop().await;
    assert!(informer.is_stopped());
    informer.remove_handler(&r);
    assert!(!r.is_active());
    assert!(!is_registered(&informer, &r));
}

/// client-go tools/cache/shared_informer_test.go: TestRemoveWhileActive
#[tokio::test(start_paused = true)]
async fn remove_while_active() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    let r = informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    server.create(RESOURCE, &cm("pod1")).unwrap();
    log.wait_for_len(1).await;
    assert!(informer.remove_handler(&r));
    assert!(!is_registered(&informer, &r));
    server.create(RESOURCE, &cm("pod2")).unwrap();
    tokio::time::sleep(secs(2)).await;
    assert_eq!(names(&log), set(&["pod1"]));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestAddWhileActive
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_while_active() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let log1 = Log::default();
    let h1 = informer.add_handler(log1.handler()).unwrap();
    assert!(!h1.has_synced(), "synced before run");
    let running = Running::start(&informer);
    server.create(RESOURCE, &cm("pod1")).unwrap();
    tokio::time::timeout(secs(10), log1.wait_for_len(1))
        .await
        .unwrap();
    assert!(
        tokio::time::timeout(secs(10), h1.wait_for_sync())
            .await
            .unwrap()
    );
    // The second handler is held before its first notification: not synced yet.
    let gate = Arc::new(Gate::default());
    let log2 = Log::default();
    let h2 = informer
        .add_handler_with(
            log2.handler().gated(Arc::clone(&gate)),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::named("listener2")
            },
        )
        .unwrap();
    assert!(!h2.has_synced(), "synced before handling anything");
    gate.open();
    server.create(RESOURCE, &cm("pod2")).unwrap();
    tokio::time::timeout(secs(10), log2.wait_for_len(2))
        .await
        .unwrap();
    assert_eq!(names(&log2), set(&["pod1", "pod2"]));
    assert!(h2.has_synced());
    assert!(is_registered(&informer, &h1) && is_registered(&informer, &h2));
    tokio::time::timeout(secs(10), log1.wait_for_len(2))
        .await
        .unwrap();
    assert_eq!(names(&log1), set(&["pod1", "pod2"]));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestShutdown/no-context
#[tokio::test(start_paused = true)]
async fn shutdown_no_context() {
    let server = FakeApiServer::new();
    let informer = informer(&server, one_second_resync());
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    assert!(informer.remove_handler(&r));
    let report = running.stop().await;
    assert!(report.stuck.is_empty());
    r.wait_for_stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestShutdown/no-context-later
#[tokio::test(start_paused = true)]
async fn shutdown_no_context_later() {
    let server = FakeApiServer::new();
    let informer = informer(&server, one_second_resync());
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    assert!(informer.remove_handler(&r));
    r.wait_for_stop().await;
    let report = running.stop().await;
    assert!(report.stuck.is_empty());
}

/// client-go tools/cache/shared_informer_test.go: TestShutdown/no-run
#[tokio::test(start_paused = true)]
async fn shutdown_no_run() {
    let server = FakeApiServer::new();
    let informer = informer(&server, one_second_resync());
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    // Neither the informer nor the handler runs anything: nothing to stop, nothing requested.
    assert!(!informer.is_started());
    assert!(r.is_active());
    drop(informer);
    assert!(server.requests().is_empty());
}

/// Incidents reported, by handler name.
fn incident_log(config: &mut InformerConfig<JsonObject>) -> Arc<Mutex<Vec<(String, String)>>> {
    let log = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&log);
    config.on_incident = Some(Arc::new(move |incident: &informer::Incident| {
        if let IncidentKind::Panicked { message, .. } = &incident.kind {
            sink.lock()
                .push((incident.handler.clone(), message.clone()));
        }
    }));
    log
}

fn panicking_handler() -> informer::ClosureHandler<JsonObject> {
    handler().on_add(|_: &Arc<JsonObject>, _| panic!("fake panic"))
}

/// client-go tools/cache/shared_informer_test.go: TestEventPanics/simple
///
/// Ours: the panic is an incident, and the notification counts as handled, so the handler does
/// sync; client-go's never syncs (kubernetes#129024).
#[tokio::test(start_paused = true)]
async fn event_panics_simple() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    let mut config = one_second_resync();
    let incidents = incident_log(&mut config);
    let informer = informer(&server, config);
    let r = informer.add_handler(panicking_handler()).unwrap();
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    assert!(r.wait_for_sync().await);
    eventually("the panic is reported", || incidents.lock().len() == 1).await;
    assert_eq!(incidents.lock()[0].1, "fake panic");
    assert!(r.is_active(), "the handler keeps its registration");
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestEventPanics/many
///
/// Ours: no delay after a panic; client-go's listener sleeps a second.
#[tokio::test(start_paused = true)]
async fn event_panics_many() {
    let server = FakeApiServer::new();
    for i in 1..=5 {
        server.create(RESOURCE, &cm(&format!("pod{i}"))).unwrap();
    }
    let mut config = one_second_resync();
    let incidents = incident_log(&mut config);
    let informer = informer(&server, config);
    for name in ["fake-event-handler-1", "fake-event-handler-2"] {
        informer
            .add_handler_with(panicking_handler(), HandlerOptions::named(name))
            .unwrap();
    }
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    eventually("ten panics", || incidents.lock().len() == 10).await;
    for name in ["fake-event-handler-1", "fake-event-handler-2"] {
        let count = incidents.lock().iter().filter(|(h, _)| h == name).count();
        assert_eq!(count, 5, "{name}");
    }
    assert_eq!(informer.stats().handler_panics, 10);
    running.stop().await;
}

/// A handler on its own thread that blocks in its first add until `gate` opens, then sets
/// `finished`.
fn blocking_handler(
    started: Arc<AtomicBool>,
    gate: Arc<Gate>,
    finished: Arc<AtomicBool>,
    calls: Arc<AtomicUsize>,
) -> informer::ClosureHandler<JsonObject> {
    handler().on_add(move |_: &Arc<JsonObject>, _| {
        calls.fetch_add(1, Ordering::AcqRel);
        started.store(true, Ordering::Release);
        gate.pass();
        finished.store(true, Ordering::Release);
    })
}

/// client-go tools/cache/shared_informer_test.go: TestRemoveEventHandler_AsynchronousPanic
///
/// Ours: removal returns at once while the handler is inside a call; the call completes, and
/// nothing more is delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_event_handler_asynchronous_panic() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let running = Running::start(&informer);
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (gate, calls) = (Arc::new(Gate::default()), Arc::new(AtomicUsize::new(0)));
    let r = informer
        .add_handler_with(
            blocking_handler(
                started.clone(),
                gate.clone(),
                finished.clone(),
                calls.clone(),
            ),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::default()
            },
        )
        .unwrap();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    server.create(RESOURCE, &cm("pod2")).unwrap();
    tokio::time::timeout(secs(10), async {
        while !started.load(Ordering::Acquire) {
            tokio::time::sleep(millis(5)).await;
        }
    })
    .await
    .unwrap();
    // Returns at once, though the handler is blocked in a call.
    assert!(informer.remove_handler(&r));
    assert!(!finished.load(Ordering::Acquire));
    gate.open();
    tokio::time::timeout(secs(10), r.wait_for_stop())
        .await
        .unwrap();
    assert!(finished.load(Ordering::Acquire));
    assert_eq!(calls.load(Ordering::Acquire), 1, "pod2 was never delivered");
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestRemoveEventHandler_SynchronousShutdown
///
/// `ShutDownEventHandler` is our `remove_handler` then `Registration::wait_for_stop`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn remove_event_handler_synchronous_shutdown() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let running = Running::start(&informer);
    let (started, finished) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let (gate, calls) = (Arc::new(Gate::default()), Arc::new(AtomicUsize::new(0)));
    let r = informer
        .add_handler_with(
            blocking_handler(
                started.clone(),
                gate.clone(),
                finished.clone(),
                calls.clone(),
            ),
            HandlerOptions {
                delivery: Delivery::Thread,
                ..HandlerOptions::default()
            },
        )
        .unwrap();
    server.create(RESOURCE, &cm("pod1")).unwrap();
    tokio::time::timeout(secs(10), async {
        while !started.load(Ordering::Acquire) {
            tokio::time::sleep(millis(5)).await;
        }
    })
    .await
    .unwrap();
    gate.open();
    assert!(informer.remove_handler(&r));
    tokio::time::timeout(secs(10), r.wait_for_stop())
        .await
        .unwrap();
    // Once stopped, the handler is out of its call for good: safe to tear down what it uses.
    assert!(finished.load(Ordering::Acquire));
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestShutDownEventHandler_Lifecycles/InformerNeverStarted
#[tokio::test(start_paused = true)]
async fn shut_down_event_handler_lifecycles_informer_never_started() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    assert!(informer.remove_handler(&r));
    tokio::time::timeout(secs(1), r.wait_for_stop())
        .await
        .unwrap();
}

/// client-go tools/cache/shared_informer_test.go: TestShutDownEventHandler_Lifecycles/StartedThenAddedThenShutDown
#[tokio::test(start_paused = true)]
async fn shut_down_event_handler_lifecycles_started_then_added_then_shut_down() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    assert!(informer.remove_handler(&r));
    tokio::time::timeout(secs(1), r.wait_for_stop())
        .await
        .unwrap();
    running.stop().await;
}

/// client-go tools/cache/shared_informer_test.go: TestShutDownEventHandler_Lifecycles/AddedThenStartedThenShutDown
#[tokio::test(start_paused = true)]
async fn shut_down_event_handler_lifecycles_added_then_started_then_shut_down() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let r = informer
        .add_handler(handler().on_add(|_: &Arc<JsonObject>, _| {}))
        .unwrap();
    let running = Running::start(&informer);
    assert!(informer.wait_for_sync().await);
    assert!(informer.remove_handler(&r));
    tokio::time::timeout(secs(1), r.wait_for_stop())
        .await
        .unwrap();
    running.stop().await;
}

//! End to end: kube-client → the HTTP fake API server (in process, over a real loopback
//! socket) → informer. No mocks: every list and watch is an HTTP request answered by the
//! fake server's engine with the API server's rules; faults are staged on that engine.
//!
//! Time is real (virtual time cannot advance across a real socket), so every wait is
//! event-driven with a generous guard against hangs, and nothing asserts on durations.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::support::{
    Env, Errors, GUARD, Model, ModelHandler, cache_state, converge, handler_synced, synced,
    wait_until, watching,
};
use fake_apiserver::seed::{Churn, ChurnConfig, SeedConfig, seed};
use fake_apiserver::{RawLine, status};
use informer::reflector::{Stage, WatchListMode};
use informer::{ErrorClass, NAMESPACE_INDEX, SharedIndexInformer};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use serde_json::json;

fn lists_of(env: &Env, plural: &str) -> Vec<fake_apiserver::RequestRecord> {
    env.engine
        .requests()
        .into_iter()
        .filter(|r| r.is_list_of(plural))
        .collect()
}

fn watches_of(env: &Env, plural: &str) -> Vec<fake_apiserver::RequestRecord> {
    env.engine
        .requests()
        .into_iter()
        .filter(|r| r.is_watch_of(plural))
        .collect()
}

/// Waits until the model handler's view equals the server's pods (handlers run on their own
/// tasks, behind the cache).
async fn handler_caught_up(
    env: &Env,
    model: &std::sync::Arc<parking_lot::Mutex<crate::support::Model>>,
    changes: tokio::sync::watch::Receiver<u64>,
) {
    wait_until(
        "the handler to catch up with the server",
        Some(changes),
        || model.lock().live == env.server_state("pods", None),
        || crate::support::diff(&model.lock().live, &env.server_state("pods", None)),
    )
    .await;
}

fn relists<K: informer::Object>(informer: &SharedIndexInformer<K>) -> u64 {
    informer.stats().reflector.map_or(0, |r| r.counters.relists)
}

/// What [`pod_informer`] sets up.
struct Watched {
    env: Env,
    errors: Errors,
    factory: informer_kube::KubeInformerFactory,
    pods: SharedIndexInformer<Pod>,
    model: Arc<Mutex<Model>>,
    changes: tokio::sync::watch::Receiver<u64>,
}

/// A fake server seeded with `config`, and a started, synced pod informer whose watch errors
/// go to `errors` and whose events feed a model handler.
async fn pod_informer(config: SeedConfig) -> Watched {
    let env = Env::start().await;
    seed(&env.engine, &config).unwrap();
    let errors = Errors::new();
    let factory = env.factory();
    let pods = factory
        .informer_with::<Pod>(|c| c.watch_error_handler = Some(errors.handler()))
        .unwrap();
    let (handler, model, changes) = ModelHandler::new();
    let registration = pods.add_handler(handler).unwrap();
    factory.start();
    synced(&pods).await;
    handler_synced(&registration).await;
    Watched {
        env,
        errors,
        factory,
        pods,
        model,
        changes,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_sync_of_10k_realistic_pods() {
    let env = Env::start().await;
    let report = seed(
        &env.engine,
        &SeedConfig {
            namespaces: 20,
            pods: 10_000,
            ..SeedConfig::default()
        },
    )
    .unwrap();
    let factory = env.factory();
    let pods = factory.informer::<Pod>().unwrap();
    let (handler, model, _) = ModelHandler::new();
    let registration = pods.add_handler(handler).unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    assert!(
        tokio::time::timeout(GUARD, registration.wait_for_sync())
            .await
            .unwrap()
    );

    let server = env.server_state("pods", None);
    assert_eq!(server.len(), 10_000);
    assert_eq!(cache_state(&pods), server);
    {
        let m = model.lock();
        assert_eq!(m.live, server, "handler saw another state");
        assert_eq!(m.initial_adds, 10_000);
        assert!(m.violations.is_empty(), "{:?}", m.violations);
    }
    // The namespace index agrees with the server, namespace by namespace.
    let lister = pods.lister();
    for ns in &report.namespaces {
        let indexed = lister.by_index(NAMESPACE_INDEX, ns).unwrap().len();
        assert_eq!(indexed, env.engine.objects("pods", Some(ns)).unwrap().len());
        assert_eq!(indexed, 500);
    }
    // Typed decoding kept the realistic content.
    let pod = lister.list_all().pop().unwrap();
    let spec = pod.spec.as_ref().expect("spec");
    assert!(!spec.containers.is_empty());
    assert!(
        pod.metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty())
    );
    // Since issue 10 the default loads the cache with a streaming list (client-go's default
    // since 1.35): one watch with sendInitialEvents, no list.
    assert!(lists_of(&env, "pods").is_empty());
    let first = &watches_of(&env, "pods")[0];
    assert_eq!(first.param("sendInitialEvents"), Some("true"));
    assert_eq!(first.param("resourceVersionMatch"), Some("NotOlderThan"));
    let report = factory.shutdown().await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn churn_converges_to_the_server() {
    let env = Env::start().await;
    let report = seed(
        &env.engine,
        &SeedConfig {
            namespaces: 5,
            pods: 1_000,
            ..SeedConfig::default()
        },
    )
    .unwrap();
    let factory = env.factory();
    let pods = factory.informer::<Pod>().unwrap();
    let (handler, model, changes) = ModelHandler::new();
    let registration = pods.add_handler(handler).unwrap();
    factory.start();
    synced(&pods).await;
    // Every initial add handled, so that the changes counted below are the churn's (under
    // load the handler could still be catching up with the list and count those instead).
    handler_synced(&registration).await;

    let churn = Churn::start(
        env.engine.clone(),
        ChurnConfig {
            rate_per_second: 400.0,
            namespaces: report.namespaces.clone(),
            resources: vec!["pods".into()],
            ..ChurnConfig::default()
        },
    );
    // Let the informer hear a good share of live changes, then stop writing.
    let seen = {
        let m = model.lock();
        m.adds + m.updates
    };
    wait_until(
        "live changes to reach the handler",
        Some(changes.clone()),
        || {
            let m = model.lock();
            m.adds + m.updates + m.deletes.len() as u64 >= seen + 600
        },
        || format!("{:?}", model.lock().adds),
    )
    .await;
    let writes = churn.stop().await;
    assert!(
        writes.creates > 0 && writes.updates > 0 && writes.deletes > 0,
        "{writes:?}"
    );

    converge(&env, &pods, "pods", None, Some(changes.clone())).await;
    handler_caught_up(&env, &model, changes).await;
    {
        let m = model.lock();
        assert!(m.violations.is_empty(), "{:?}", m.violations);
        assert!(
            m.deletes.values().all(|n| *n == 1),
            "a delete was seen twice"
        );
    }
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_and_broken_watches_lose_nothing() {
    let Watched {
        env,
        errors,
        factory,
        pods,
        model,
        changes,
    } = pod_informer(SeedConfig {
        namespaces: 3,
        pods: 300,
        ..SeedConfig::default()
    })
    .await;
    let faults = env.engine.faults();
    let pod = |name: &str| {
        let mut rng = rand::rng();
        fake_apiserver::seed::pod("ns-0", name, &mut rng)
    };

    // A connection broken mid-stream: re-watch from the last resourceVersion, no relist.
    let starts = watching(&pods, 1).await;
    let lists = lists_of(&env, "pods").len();
    assert!(faults.break_watches("pods") >= 1);
    env.engine.create("pods", &pod("after-break")).unwrap();
    converge(&env, &pods, "pods", None, Some(changes.clone())).await;
    errors
        .wait_for("a transport error", |r| {
            r.stage == Stage::Watch && r.class == ErrorClass::Transport
        })
        .await;
    // A clean end of stream: the same.
    let starts = watching(&pods, starts + 1).await;
    assert!(faults.drop_watches("pods") >= 1);
    env.engine.create("pods", &pod("after-drop")).unwrap();
    converge(&env, &pods, "pods", None, Some(changes.clone())).await;
    assert_eq!(
        lists_of(&env, "pods").len(),
        lists,
        "no relist after a broken watch"
    );
    assert_eq!(relists(&pods), 0);

    // The next watch closes after a few events, mid-stream: the rest come on the next one.
    let starts = watching(&pods, starts + 1).await;
    faults.drop_next_watch_after("pods", 3);
    faults.drop_watches("pods");
    for i in 0..10 {
        env.engine
            .create("pods", &pod(&format!("burst-{i}")))
            .unwrap();
    }
    converge(&env, &pods, "pods", None, Some(changes.clone())).await;

    // Changes while the watch is down and the history compacted past them: the next watch
    // gets 410, the informer relists, and deletions come as tombstones, once each.
    watching(&pods, starts + 2).await;
    faults.fail_watches("pods", 2, status::internal_error("etcd unavailable"));
    faults.drop_watches("pods");
    let victims: Vec<_> = env.engine.objects("pods", Some("ns-1")).unwrap()[..20].to_vec();
    for v in &victims {
        env.engine.delete("pods", Some("ns-1"), v.name()).unwrap();
    }
    for v in &env.engine.objects("pods", Some("ns-2")).unwrap()[..20] {
        env.engine
            .patch(
                "pods",
                Some("ns-2"),
                v.name(),
                &json!({"metadata": {"labels": {"touched": "yes"}}}),
            )
            .unwrap();
    }
    for i in 0..20 {
        env.engine
            .create("pods", &pod(&format!("while-down-{i}")))
            .unwrap();
    }
    env.engine.compact_all();
    converge(&env, &pods, "pods", None, Some(changes.clone())).await;
    assert!(relists(&pods) >= 1, "compaction must force a relist");
    errors
        .wait_for("the 410 after compaction", |r| {
            r.class == ErrorClass::Expired
        })
        .await;
    handler_caught_up(&env, &model, changes).await;
    {
        let m = model.lock();
        assert!(m.violations.is_empty(), "{:?}", m.violations);
        for v in &victims {
            let deletes = m.deletes.get(&(v.key().to_owned(), v.uid().to_owned()));
            assert_eq!(deletes, Some(&1), "{} deleted {deletes:?} times", v.key());
        }
        assert!(m.deletes.values().all(|n| *n == 1));
    }
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gone_as_http_status_and_as_error_event_both_relist() {
    let Watched {
        env,
        errors,
        factory,
        pods,
        model: _,
        changes,
    } = pod_informer(SeedConfig {
        pods: 50,
        ..SeedConfig::default()
    })
    .await;
    let faults = env.engine.faults();

    // 410 as the HTTP answer to the watch request.
    let starts = watching(&pods, 1).await;
    faults.fail_watches(
        "pods",
        1,
        status::expired("too old resource version: 1 (2)"),
    );
    faults.drop_watches("pods");
    let e = errors
        .wait_for("an HTTP 410 on watch start", |r| {
            r.stage == Stage::WatchStart && r.class == ErrorClass::Expired
        })
        .await;
    assert!(e.message.contains("watching pods"), "{}", e.message);
    wait_until(
        "a relist",
        None,
        || relists(&pods) >= 1,
        || format!("{:?}", pods.stats()),
    )
    .await;

    // 410 as an ERROR event inside a running watch.
    watching(&pods, starts + 1).await;
    assert!(faults.expire_watches("pods") >= 1);
    errors
        .wait_for("an ERROR 410 event", |r| {
            r.stage == Stage::Watch && r.class == ErrorClass::Expired
        })
        .await;
    wait_until(
        "a second relist",
        None,
        || relists(&pods) >= 2,
        || format!("{:?}", pods.stats()),
    )
    .await;

    let mut rng = rand::rng();
    let pod = fake_apiserver::seed::pod("ns-0", "after-410", &mut rng);
    env.engine.create("pods", &pod).unwrap();
    converge(&env, &pods, "pods", None, Some(changes)).await;
    assert!(faults.pending().is_empty());
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_honours_retry_after_and_too_large_lists_read_consistently() {
    let env = Env::start().await;
    seed(
        &env.engine,
        &SeedConfig {
            pods: 20,
            configmaps: 10,
            ..SeedConfig::default()
        },
    )
    .unwrap();
    let faults = env.engine.faults();
    faults.fail_lists("pods", 1, status::too_many_requests(1));
    faults.fail_lists("configmaps", 1, status::resource_version_too_large(999, 10));
    let errors = Errors::new();
    let factory = env.factory();
    // Paginated lists: this test is about failed lists (the default streams first since
    // issue 10).
    let pods = factory
        .informer_with::<Pod>(|c| {
            c.watch_error_handler = Some(errors.handler());
            c.list_watch.watch_list = WatchListMode::Off;
        })
        .unwrap();
    let config_maps = factory
        .informer_with::<ConfigMap>(|c| {
            c.watch_error_handler = Some(errors.handler());
            c.list_watch.watch_list = WatchListMode::Off;
        })
        .unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();

    // The list's 429 reached the reflector with the Retry-After header (kube-client's own
    // retries are off), and the list was retried.
    let throttled = errors
        .wait_for("a 429 on list", |r| {
            r.stage == Stage::List && r.class == ErrorClass::Throttled
        })
        .await;
    assert_eq!(throttled.header_retry_after, Some(Duration::from_secs(1)));
    assert_eq!(lists_of(&env, "pods").len(), 2);
    assert_eq!(cache_state(&pods), env.server_state("pods", None));

    // A 504 ResourceVersionTooLarge makes the next list a consistent read.
    errors
        .wait_for("a 504 too large", |r| {
            r.class == ErrorClass::ResourceVersionTooLarge
        })
        .await;
    let cm_lists = lists_of(&env, "configmaps");
    assert_eq!(cm_lists[0].param("resourceVersion"), Some("0"));
    assert_eq!(
        cm_lists[1].param("resourceVersion"),
        None,
        "{}",
        cm_lists[1]
    );
    assert_eq!(
        cache_state(&config_maps),
        env.server_state("configmaps", None)
    );

    // A 429 on a watch start: wait as told, re-watch without relisting.
    let starts = watching(&pods, 1).await;
    let pod_lists = lists_of(&env, "pods").len();
    let watches = watches_of(&env, "pods").len();
    faults.fail_watches("pods", 1, status::too_many_requests(2));
    faults.drop_watches("pods");
    let throttled = errors
        .wait_for("a 429 on watch", |r| {
            r.stage == Stage::WatchStart && r.class == ErrorClass::Throttled
        })
        .await;
    assert_eq!(throttled.header_retry_after, Some(Duration::from_secs(2)));
    watching(&pods, starts + 1).await;
    assert!(watches_of(&env, "pods").len() >= watches + 2);
    assert_eq!(
        lists_of(&env, "pods").len(),
        pod_lists,
        "a 429 must not relist"
    );
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn undecodable_lines_are_reported_and_the_informer_goes_on() {
    let Watched {
        env,
        errors,
        factory,
        pods,
        model: _,
        changes,
    } = pod_informer(SeedConfig {
        pods: 10,
        ..SeedConfig::default()
    })
    .await;
    let faults = env.engine.faults();

    let starts = watching(&pods, 1).await;
    faults.inject_raw_line("pods", RawLine::garbage());
    let bad = errors
        .wait_for("a decode error", |r| r.class == ErrorClass::Decode)
        .await;
    assert!(bad.is_decode_with_excerpt, "{bad:?}");
    assert!(bad.message.contains("watching pods"), "{}", bad.message);

    watching(&pods, starts + 1).await;
    faults.inject_raw_line("pods", RawLine::unknown_event_type());
    wait_until(
        "an unknown event type error",
        None,
        || {
            errors
                .all()
                .iter()
                .filter(|r| r.class == ErrorClass::Decode)
                .count()
                >= 2
        },
        || format!("{:?}", errors.all()),
    )
    .await;
    let mut rng = rand::rng();
    let pod = fake_apiserver::seed::pod("ns-0", "after-garbage", &mut rng);
    env.engine.create("pods", &pod).unwrap();
    converge(&env, &pods, "pods", None, Some(changes)).await;
    // Issue 10 changed the rule: an undecodable line relists (as client-go does), where
    // re-watching from the same resourceVersion would meet the same bad event again.
    assert_eq!(relists(&pods), 2, "each bad line relists");
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_initial_list_and_fallback_when_the_server_ignores_it() {
    let env = Env::start().await;
    seed(
        &env.engine,
        &SeedConfig {
            namespaces: 4,
            pods: 2_000,
            configmaps: 300,
            ..SeedConfig::default()
        },
    )
    .unwrap();
    // Config maps: a server that ignores sendInitialEvents (an old one).
    env.engine
        .faults()
        .ignore_send_initial_events("configmaps", true);
    let factory = env.factory();
    let pods = factory
        .informer_with::<Pod>(|c| c.list_watch.watch_list = WatchListMode::On)
        .unwrap();
    let config_maps = factory
        .informer_with::<ConfigMap>(|c| {
            c.list_watch.watch_list = WatchListMode::On;
            c.list_watch.initial_events_timeout = Duration::from_secs(2);
        })
        .unwrap();
    let (handler, model, changes) = ModelHandler::new();
    let registration = pods.add_handler(handler).unwrap();
    factory.start();
    factory.wait_for_cache_sync(GUARD).await.unwrap();
    // The factory's sync is the caches'; the handler may still be working through its
    // initial adds.
    assert!(
        tokio::time::timeout(GUARD, registration.wait_for_sync())
            .await
            .unwrap()
    );

    // Pods streamed: one watch, no list.
    assert_eq!(cache_state(&pods), env.server_state("pods", None));
    assert!(
        lists_of(&env, "pods").is_empty(),
        "{:?}",
        lists_of(&env, "pods")
    );
    let first = &watches_of(&env, "pods")[0];
    assert_eq!(first.param("sendInitialEvents"), Some("true"));
    assert_eq!(first.param("resourceVersionMatch"), Some("NotOlderThan"));
    assert_eq!(first.param("allowWatchBookmarks"), Some("true"));
    assert_eq!(model.lock().initial_adds, 2_000);
    let stats = pods.stats().reflector.unwrap();
    assert!(stats.streaming);
    let mut rng = rand::rng();
    let pod = fake_apiserver::seed::pod("ns-3", "streamed-later", &mut rng);
    env.engine.create("pods", &pod).unwrap();
    converge(&env, &pods, "pods", None, Some(changes)).await;

    // Config maps: no end bookmark came, so the informer fell back to list + watch.
    assert_eq!(
        cache_state(&config_maps),
        env.server_state("configmaps", None)
    );
    let stats = config_maps.stats().reflector.unwrap();
    assert_eq!(stats.counters.streaming_fallbacks, 1);
    assert!(!stats.streaming);
    assert!(!lists_of(&env, "configmaps").is_empty());
    factory.shutdown().await;
}

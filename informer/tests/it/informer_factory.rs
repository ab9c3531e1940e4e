//! The factory (one informer per type and spec, start, sync with a timeout, shutdown) and the
//! listers (selectors, namespaces, cluster-scoped objects, indices), on the fake API server.

use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, status};
use informer::{
    FactoryConfig, FactoryError, InformerFactory, InformerSpec, LabelSelector, ListerWatcher,
    ProviderError, StoreError, label_index_func, wait_for_cache_sync,
};
use informer_testing::JsonObject;

use crate::informer_support::*;

type Provider = Box<
    dyn Fn(&InformerSpec) -> Result<Arc<dyn ListerWatcher<JsonObject>>, ProviderError>
        + Send
        + Sync,
>;

fn provider(server: &FakeApiServer) -> Provider {
    let server = server.clone();
    Box::new(move |spec: &InformerSpec| {
        let lw = server
            .lister_watcher::<JsonObject>(&spec.resource, spec.namespace.as_deref())
            .map_err(|s| s.to_string())?;
        Ok(Arc::new(lw) as Arc<dyn ListerWatcher<JsonObject>>)
    })
}

/// A newtype so the boxed closure is a provider (the blanket impl covers unboxed closures).
struct Boxed(Provider);

impl informer::ListerWatcherProvider<JsonObject> for Boxed {
    fn lister_watcher(
        &self,
        spec: &InformerSpec,
    ) -> Result<Arc<dyn ListerWatcher<JsonObject>>, ProviderError> {
        (self.0)(spec)
    }
}

fn labelled(ns: &str, name: &str, labels: &[(&str, &str)]) -> JsonObject {
    let mut obj = JsonObject::new(Some(ns), name);
    for (k, v) in labels {
        obj = obj.with_label(*k, *v);
    }
    obj
}

#[tokio::test(start_paused = true)]
async fn the_factory_shares_one_informer_per_type_and_spec() {
    let server = FakeApiServer::new();
    server
        .create("pods", &labelled("a", "web-0", &[("app", "web")]))
        .unwrap();
    server
        .create("pods", &labelled("b", "db-0", &[("app", "db")]))
        .unwrap();
    let factory = InformerFactory::new(Boxed(provider(&server)), FactoryConfig::default());

    let all = factory
        .informer::<JsonObject>(InformerSpec::new("pods"))
        .unwrap();
    let again = factory
        .informer::<JsonObject>(InformerSpec::new("pods"))
        .unwrap();
    let in_a = factory
        .informer::<JsonObject>(InformerSpec::new("pods").namespace("a"))
        .unwrap();
    let web = factory
        .informer::<JsonObject>(InformerSpec::new("pods").label_selector("app=web"))
        .unwrap();
    assert!(all.ptr_eq(&again));
    assert!(!all.ptr_eq(&in_a));
    assert!(!all.ptr_eq(&web));
    assert_eq!(factory.len(), 3);
    assert!(matches!(
        factory.informer::<JsonObject>(InformerSpec::new("gizmos")),
        Err(FactoryError::Provider { .. })
    ));

    let log = Log::default();
    let registration = all.add_handler(log.handler()).unwrap();
    factory.start();
    factory.start(); // idempotent
    factory
        .wait_for_cache_sync(Duration::from_secs(10))
        .await
        .unwrap();
    wait_for_cache_sync(Duration::from_secs(10), &[&registration])
        .await
        .unwrap();
    assert_eq!(all.lister().len(), 2);
    assert_eq!(in_a.lister().len(), 1);
    assert_eq!(web.lister().len(), 1);
    assert_eq!(log.len(), 2);
    // The selector went to the server.
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.param("labelSelector") == Some("app=web"))
    );

    let report = factory.shutdown().await;
    assert_eq!(report.informers.len(), 3);
    assert!(report.failures.is_empty());
    assert!(all.is_stopped());
    assert!(matches!(
        factory.informer::<JsonObject>(InformerSpec::new("pods")),
        Err(FactoryError::ShutDown { .. })
    ));
}

#[tokio::test(start_paused = true)]
async fn waiting_for_sync_times_out_naming_what_did_not_sync() {
    let server = FakeApiServer::new();
    // Every list of secrets fails, and so does every watch (a streaming list, the default
    // since issue 10, is a watch): that informer never syncs.
    server.faults().fail_lists(
        "secrets",
        usize::MAX,
        status::internal_error("etcd is down"),
    );
    server.faults().fail_watches(
        "secrets",
        usize::MAX,
        status::internal_error("etcd is down"),
    );
    let factory = InformerFactory::new(Boxed(provider(&server)), FactoryConfig::default());
    let pods = factory
        .informer::<JsonObject>(InformerSpec::new("pods"))
        .unwrap();
    let secrets = factory
        .informer::<JsonObject>(InformerSpec::new("secrets"))
        .unwrap();
    factory.start();

    let err = factory
        .wait_for_cache_sync(Duration::from_secs(30))
        .await
        .unwrap_err();
    assert_eq!(err.not_synced, ["secrets"]);
    assert_eq!(err.timeout, Duration::from_secs(30));
    assert!(pods.has_synced());
    assert!(!secrets.has_synced());
    // The reflector kept retrying meanwhile.
    assert!(secrets.stats().reflector.unwrap().counters.list_failures > 1);

    // Waiting together with a source of one's own: both are named.
    let pods_alone = pods.clone();
    let err = factory
        .wait_for_cache_sync_with(Duration::from_secs(1), &[&pods_alone])
        .await
        .unwrap_err();
    assert_eq!(err.not_synced, ["secrets"]);
    assert!(
        wait_for_cache_sync(Duration::from_secs(1), &[&secrets])
            .await
            .is_err()
    );
    factory.shutdown().await;
    // Stopped before syncing: waiting says so at once.
    assert!(!secrets.wait_for_sync().await);
}

#[tokio::test(start_paused = true)]
async fn listers_answer_by_selector_namespace_name_and_index() {
    let server = FakeApiServer::new();
    for (ns, name, labels) in [
        ("a", "web-0", vec![("app", "web"), ("tier", "front")]),
        ("a", "web-1", vec![("app", "web")]),
        ("a", "db-0", vec![("app", "db"), ("tier", "back")]),
        ("b", "web-0", vec![("app", "web"), ("tier", "front")]),
        ("b", "cache-0", vec![]),
    ] {
        server
            .create("configmaps", &labelled(ns, name, &labels))
            .unwrap();
    }
    server
        .create("namespaces", &JsonObject::new(None, "a"))
        .unwrap();
    let factory = InformerFactory::new(Boxed(provider(&server)), FactoryConfig::default());
    let cms = factory
        .informer_with::<JsonObject>(InformerSpec::new("configmaps"), |config| {
            config
                .indexers
                .insert("tier".to_owned(), label_index_func("tier"));
        })
        .unwrap();
    let namespaces = factory
        .informer::<JsonObject>(InformerSpec::new("namespaces"))
        .unwrap();
    factory.start();
    factory
        .wait_for_cache_sync(Duration::from_secs(10))
        .await
        .unwrap();

    let lister = cms.lister();
    let names = |objs: Vec<Arc<JsonObject>>| {
        let mut v: Vec<String> = objs.iter().map(|o| key(o)).collect();
        v.sort();
        v
    };
    let sel = |s: &str| LabelSelector::parse(s).unwrap();
    assert_eq!(lister.list(&LabelSelector::everything()).len(), 5);
    assert_eq!(
        names(lister.list(&sel("app=web"))),
        ["a/web-0", "a/web-1", "b/web-0"]
    );
    assert_eq!(names(lister.list(&sel("app in (db,cache)"))), ["a/db-0"]);
    assert_eq!(names(lister.list(&sel("!tier"))), ["a/web-1", "b/cache-0"]);
    assert_eq!(names(lister.list(&sel("app,app!=web"))), ["a/db-0"]);
    assert_eq!(
        names(lister.namespaced("a").list(&sel("tier"))),
        ["a/db-0", "a/web-0"]
    );
    assert_eq!(
        names(lister.namespaced("b").list(&LabelSelector::everything())),
        ["b/cache-0", "b/web-0"]
    );
    assert!(
        lister
            .namespaced("c")
            .list(&LabelSelector::everything())
            .is_empty()
    );
    assert!(lister.get(Some("b"), "web-0").is_some());
    assert!(lister.get(Some("b"), "db-0").is_none());
    assert!(lister.get(Some("b"), "bad/name").is_none());
    assert_eq!(
        lister
            .namespaced("a")
            .get("db-0")
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("db-0")
    );
    assert_eq!(
        names(lister.by_index("tier", "front").unwrap()),
        ["a/web-0", "b/web-0"]
    );
    assert!(matches!(
        lister.by_index("nope", "x"),
        Err(StoreError::IndexNotFound { .. })
    ));
    // The same Arc as the cache: no copies.
    let a = lister.get(Some("a"), "web-0").unwrap();
    assert!(Arc::ptr_eq(
        &a,
        &cms.lister().get_by_key("a/web-0").unwrap()
    ));

    // Cluster-scoped objects have no namespace.
    assert!(namespaces.lister().get(None, "a").is_some());
    factory.shutdown().await;
}

/// The factory's wait covers handler registrations: it returns only once every handler
/// registered on a started informer has handled its initial list.
#[tokio::test(start_paused = true)]
async fn waiting_for_sync_includes_handler_registrations() {
    let server = FakeApiServer::new();
    for i in 0..20 {
        server
            .create("configmaps", &labelled("a", &format!("cm-{i}"), &[]))
            .unwrap();
    }
    let factory = InformerFactory::new(Boxed(provider(&server)), FactoryConfig::default());
    let cms = factory
        .informer::<JsonObject>(InformerSpec::new("configmaps"))
        .unwrap();
    let seen = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&seen);
    // A slow handler: each initial add takes a (virtual) second.
    let registration = cms
        .add_handler(informer::handler().on_add(move |_, _| {
            std::thread::sleep(Duration::from_millis(1));
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }))
        .unwrap();
    factory.start();
    factory
        .wait_for_cache_sync(Duration::from_secs(30))
        .await
        .unwrap();
    assert!(registration.has_synced());
    assert_eq!(seen.load(std::sync::atomic::Ordering::SeqCst), 20);
    factory.shutdown().await;
}

/// `informer_with` refuses to configure an informer the factory already holds (its
/// configuration could no longer apply), where it used to skip the closure silently; and the
/// closure runs without the factory's lock, so it may ask the factory for other informers.
#[tokio::test(start_paused = true)]
async fn informer_with_refuses_an_existing_informer_and_runs_outside_the_lock() {
    let server = FakeApiServer::new();
    let factory = InformerFactory::new(Boxed(provider(&server)), FactoryConfig::default());
    let first = factory
        .informer::<JsonObject>(InformerSpec::new("pods"))
        .unwrap();
    let err = factory
        .informer_with::<JsonObject>(InformerSpec::new("pods"), |config| {
            config
                .indexers
                .insert("app".into(), informer::label_index_func("app"));
        })
        .unwrap_err();
    assert!(
        matches!(err, informer::FactoryError::AlreadyCreated { .. }),
        "{err}"
    );
    assert!(err.to_string().contains("already exists"), "{err}");
    // `informer` still hands out the existing one.
    let again = factory
        .informer::<JsonObject>(InformerSpec::new("pods"))
        .unwrap();
    assert!(first.ptr_eq(&again));

    // A configure closure asking the factory for another informer (a deadlock before).
    let inner = factory.clone();
    let cms = factory
        .informer_with::<JsonObject>(InformerSpec::new("configmaps"), move |config| {
            let secrets = inner
                .informer::<JsonObject>(InformerSpec::new("secrets"))
                .expect("the factory answers from inside a configure closure");
            config.name = format!("configmaps (beside {})", secrets.name());
        })
        .unwrap();
    assert_eq!(cms.name(), "configmaps (beside secrets)");
    assert_eq!(factory.len(), 3);
}

//! Relists over HTTP through kube-client (issue 10, defect 4): a relist at a specific
//! resourceVersion is one request without a page size (client-go's choice, so that the API
//! server answers it from its watch cache instead of paging through etcd), as the fake
//! server's request log shows; and that one response is decoded as it arrives, each unchanged
//! object swapped for the one already cached, so that the relist holds neither the whole
//! body nor a second copy of the cache.

use std::sync::Arc;

use crate::support::{Env, cache_state, diff, seed_pods, server_state, synced, wait_until};
use fake_apiserver::FakeApiServer;
use informer::reflector::WatchListMode;
use informer::{
    CompactOptions, InformerConfig, ListOptions, ListerWatcher, SharedIndexInformer, StoreChoice,
    StoreKind,
};
use informer_kube::{KubeInformerFactory, KubeListerWatcher};
use k8s_openapi::api::core::v1::Pod;
use tokio_util::sync::CancellationToken;

/// A pod informer over `lister_watcher` keeping its cache in `store`, with streaming lists off:
/// the list path is under test (streaming lists have their own tests).
fn listing_informer(
    lister_watcher: &KubeListerWatcher<Pod>,
    store: StoreChoice<Pod>,
) -> SharedIndexInformer<Pod> {
    SharedIndexInformer::new(
        Arc::new(lister_watcher.clone()),
        InformerConfig {
            name: "pods".into(),
            store,
            list_watch: informer::reflector::ListWatchConfig {
                watch_list: WatchListMode::Off,
                ..informer::reflector::ListWatchConfig::default()
            },
            ..InformerConfig::default()
        },
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relist_is_one_unpaginated_request_decoded_item_by_item() {
    let engine = FakeApiServer::new();
    seed_pods(&engine, 4, 2000);
    let env = Env::with_engine(engine).await.unwrap();
    let engine = &env.engine;
    let lister_watcher = KubeListerWatcher::<Pod>::all(env.client.clone());
    let informer = listing_informer(&lister_watcher, StoreChoice::Indexed);
    let cancel = CancellationToken::new();
    informer.spawn(cancel.clone());
    synced(&informer).await;
    let listed = engine.resource_version().to_string();
    let sample: Vec<Arc<Pod>> = informer.lister().list_all().into_iter().take(50).collect();
    assert_eq!(sample.len(), 50);
    engine.clear_requests();
    lister_watcher.decoder_memory().reset_peak();

    // The watch is told 410: the informer relists at the last resourceVersion it saw.
    assert!(engine.faults().expire_watches("pods") >= 1);
    wait_until(
        "the relist",
        None,
        || {
            informer
                .stats()
                .reflector
                .is_some_and(|r| r.counters.lists >= 2)
                && cache_state(&informer) == server_state(engine, "pods", None)
        },
        || diff(&cache_state(&informer), &server_state(engine, "pods", None)),
    )
    .await;

    let lists: Vec<_> = engine
        .requests()
        .into_iter()
        .filter(|r| r.is_list_of("pods"))
        .collect();
    assert_eq!(lists.len(), 1, "{lists:#?}");
    let relist = &lists[0];
    assert_eq!(relist.param("resourceVersion"), Some(listed.as_str()));
    assert_eq!(relist.param("limit"), None, "{relist}");
    assert_eq!(relist.param("resourceVersionMatch"), None, "{relist}");
    assert_eq!(relist.param("continue"), None, "{relist}");

    // 2,000 pods (megabytes of JSON) in one response, and the decoder never held more than
    // one object's text and a read slice.
    let peak = lister_watcher.decoder_memory().peak_held_bytes();
    assert!(peak <= 256 << 10, "the decoder held {peak} bytes");
    let mut items: Vec<Pod> = Vec::new();
    let whole = lister_watcher
        .list_into(
            &ListOptions {
                resource_version: Some(listed.clone()),
                ..ListOptions::default()
            },
            &mut items,
        )
        .await
        .unwrap();
    let body = whole.bytes.unwrap();
    assert_eq!(items.len(), 2000);
    eprintln!("relist body {body} bytes, decoder peak {peak} bytes");
    assert!(
        body > 8 * peak as u64,
        "body {body} bytes, decoder peak {peak}"
    );
    // Unchanged objects are the very allocations cached before the relist.
    for pod in &sample {
        let now = informer
            .lister()
            .get(
                pod.metadata.namespace.as_deref(),
                pod.metadata.name.as_deref().unwrap(),
            )
            .unwrap();
        assert!(Arc::ptr_eq(pod, &now), "{:?} was copied", pod.metadata.name);
    }
    cancel.cancel();
}

/// A compact store's lists travel as text: the list decodes no item (it reads each one's
/// metadata), the queue decodes each when it pops it. An item that is JSON but not a Pod is
/// then found at that decode: reported and left out, while every other pod syncs (with the
/// default store, such an item fails the whole list).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_informer_lists_as_text_and_leaves_out_an_item_that_is_not_a_pod() {
    let engine = FakeApiServer::new();
    seed_pods(&engine, 2, 60);
    let mut rng = rand::rng();
    let mut bad = fake_apiserver::seed::pod("ns-0", "not-a-pod", &mut rng);
    bad["spec"]["containers"] = serde_json::json!(5);
    engine.create("pods", &bad).unwrap();
    let env = Env::with_engine(engine).await.unwrap();
    let engine = &env.engine;
    let informer = listing_informer(
        &KubeListerWatcher::<Pod>::all(env.client.clone()),
        StoreChoice::compact(CompactOptions::default()),
    );
    let cancel = CancellationToken::new();
    informer.spawn(cancel.clone());
    synced(&informer).await;
    let mut expected = server_state(engine, "pods", None);
    assert!(expected.remove("ns-0/not-a-pod").is_some());
    assert_eq!(expected.len(), 60);
    wait_until(
        "every pod but the one that is not a Pod",
        None,
        || cache_state(&informer) == expected,
        || diff(&cache_state(&informer), &expected),
    )
    .await;
    let stats = informer.stats();
    let reflector = stats.reflector.unwrap();
    assert_eq!(reflector.listed_as_text, 61, "{reflector:?}");
    assert_eq!(
        reflector.counters.lists, 1,
        "one list: the bad item did not fail it"
    );
    assert_eq!(
        stats.apply_errors, 1,
        "the item left out is counted as a refused delta"
    );
    assert!(informer.has_synced());
    cancel.cancel();
}

/// A factory informer lists first (a paginated list, items handed over as text) for a store that
/// takes lists as text, since a streaming list's initial events arrive decoded, are dropped and
/// decoded again at the pop (about twice the sync time at 100k pods): the default
/// `WatchListMode::Auto` settles so. A configure closure can turn streaming back on, and a
/// store that cannot decode text, or an informer with a transform, keeps streaming.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_factory_with_a_text_store_lists_first_unless_told_to_stream() {
    let engine = FakeApiServer::new();
    seed_pods(&engine, 2, 40);
    let env = Env::with_engine(engine).await.unwrap();
    let message_pack = CompactOptions::default().codec(informer::Codec::MessagePack);
    let compact = || StoreKind::Compact(CompactOptions::default());
    // (store, the mode a configure closure sets, a transform, list requests and items listed
    // as text expected: a streaming list's items reach the queue as text too, once decoded)
    let cases = [
        (compact(), None, false, 1, 40),
        (compact(), Some(WatchListMode::On), false, 0, 40),
        (compact(), Some(WatchListMode::Off), false, 1, 40),
        (compact(), None, true, 0, 0),
        (StoreKind::Compact(message_pack), None, false, 0, 0),
        (
            StoreKind::Compact(CompactOptions::default().lists_as_text(false)),
            None,
            false,
            0,
            0,
        ),
        (StoreKind::Indexed, None, false, 0, 0),
        (StoreKind::Indexed, Some(WatchListMode::Off), false, 1, 0),
    ];
    for (store, mode, transform, list_requests, as_text) in cases {
        let case = format!("{store:?}, mode {mode:?}, transform: {transform}");
        let factory = KubeInformerFactory::new(env.client.clone());
        factory.set_store(store);
        let informer = factory
            .informer_with::<Pod>(|config| {
                assert_eq!(config.list_watch.watch_list, WatchListMode::Auto, "{case}");
                if let Some(mode) = mode {
                    config.list_watch.watch_list = mode;
                }
                if transform {
                    config.transform = Some(informer_kube::drop_managed_fields());
                }
            })
            .unwrap();
        factory.start();
        synced(&informer).await;
        assert_eq!(
            cache_state(&informer),
            server_state(&env.engine, "pods", None),
            "{case}"
        );
        let reflector = informer.stats().reflector.unwrap();
        assert_eq!(
            reflector.counters.list_requests, list_requests,
            "{case}: {reflector:?}"
        );
        assert_eq!(reflector.listed_as_text, as_text, "{case}: {reflector:?}");
        assert_eq!(
            reflector.streaming,
            list_requests == 0,
            "{case}: {reflector:?}"
        );
        factory.shutdown().await;
    }
}

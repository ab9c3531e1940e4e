//! Fake API server: realistic objects, seeding and churn.

use std::time::{Duration, UNIX_EPOCH};

use fake_apiserver::seed::{self, Churn, ChurnConfig, SeedConfig};
use fake_apiserver::{FakeApiServer, ServerConfig};
use futures::StreamExt;
use informer_core::{ListerWatcher, WatchEvent, WatchOptions};
use informer_testing::JsonObject;
use rand::SeedableRng;
use rand::rngs::StdRng;

fn fixed_server() -> FakeApiServer {
    FakeApiServer::with_config(ServerConfig {
        wall_clock_start: Some(UNIX_EPOCH + Duration::from_secs(1_767_323_045)),
        ..ServerConfig::default()
    })
}

#[test]
fn pods_look_like_a_real_clusters() {
    let mut rng = StdRng::seed_from_u64(3);
    let pod = seed::pod("prod", "web-1", &mut rng);
    let bytes = serde_json::to_vec(&pod).unwrap();
    assert!(
        (3_000..12_000).contains(&bytes.len()),
        "pod is {} bytes",
        bytes.len()
    );
    assert_eq!(
        pod["metadata"]["managedFields"].as_array().unwrap().len(),
        5
    );
    assert_eq!(pod["spec"]["containers"].as_array().unwrap().len(), 2);
    assert!(pod["spec"]["containers"][0]["resources"]["requests"]["cpu"].is_string());
    assert!(
        !pod["spec"]["containers"][0]["env"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(!pod["spec"]["volumes"].as_array().unwrap().is_empty());
    assert_eq!(pod["status"]["conditions"].as_array().unwrap().len(), 5);
    assert_eq!(
        pod["status"]["containerStatuses"].as_array().unwrap().len(),
        2
    );
    assert!(pod["metadata"]["labels"].as_object().unwrap().len() >= 4);
    let cm = seed::config_map("prod", "settings", &mut rng);
    assert!(cm["data"].as_object().unwrap().len() >= 3);
}

#[tokio::test(start_paused = true)]
async fn seed_spreads_objects_over_namespaces() {
    let server = FakeApiServer::new();
    let report = seed::seed(
        &server,
        &SeedConfig {
            namespaces: 4,
            pods: 40,
            configmaps: 8,
            seed: 9,
        },
    )
    .unwrap();
    assert_eq!(report.namespaces, ["ns-0", "ns-1", "ns-2", "ns-3"]);
    assert_eq!(report.resource_version, 4 + 40 + 8);
    assert_eq!(server.objects("namespaces", None).unwrap().len(), 4);
    assert_eq!(server.objects("pods", None).unwrap().len(), 40);
    for ns in &report.namespaces {
        assert_eq!(server.objects("pods", Some(ns)).unwrap().len(), 10);
        assert_eq!(server.objects("configmaps", Some(ns)).unwrap().len(), 2);
    }
    // Typed clients can decode what was seeded.
    let lw = server
        .lister_watcher::<JsonObject>("pods", Some("ns-2"))
        .unwrap();
    let page = lw.list(&Default::default()).await.unwrap();
    assert_eq!(page.items.len(), 10);
    // Seeding again keeps the namespaces and adds objects.
    seed::seed(
        &server,
        &SeedConfig {
            namespaces: 4,
            pods: 0,
            configmaps: 0,
            seed: 10,
        },
    )
    .unwrap();
    assert_eq!(server.resource_version(), 52);
}

#[tokio::test(start_paused = true)]
async fn seeding_is_deterministic() {
    let config = SeedConfig {
        namespaces: 2,
        pods: 10,
        configmaps: 3,
        seed: 5,
    };
    let (a, b) = (fixed_server(), fixed_server());
    seed::seed(&a, &config).unwrap();
    seed::seed(&b, &config).unwrap();
    let bytes = |s: &FakeApiServer| -> Vec<Vec<u8>> {
        s.objects("pods", None)
            .unwrap()
            .iter()
            .map(|o| o.bytes().to_vec())
            .collect()
    };
    assert_eq!(bytes(&a), bytes(&b));
}

#[tokio::test(start_paused = true)]
async fn churn_writes_at_the_given_rate_and_stops() {
    let server = fixed_server();
    seed::seed(
        &server,
        &SeedConfig {
            namespaces: 2,
            pods: 20,
            configmaps: 10,
            seed: 1,
        },
    )
    .unwrap();
    let before = server.resource_version();
    let lw = server.lister_watcher::<JsonObject>("pods", None).unwrap();
    let mut events = lw
        .watch(&WatchOptions {
            resource_version: Some(before.to_string()),
            ..WatchOptions::default()
        })
        .await
        .unwrap();
    let churn = Churn::start(
        server.clone(),
        ChurnConfig {
            rate_per_second: 50.0,
            namespaces: seed::namespace_names(2),
            ..ChurnConfig::default()
        },
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    let stats = churn.stop().await;
    let writes = stats.creates + stats.updates + stats.deletes;
    assert!((490..=510).contains(&writes), "{stats:?}");
    assert_eq!(stats.errors, 0, "{stats:?}");
    assert!(
        stats.creates > 0 && stats.updates > 0 && stats.deletes > 0,
        "{stats:?}"
    );
    assert_eq!(server.resource_version(), before + writes);
    let after = server.resource_version();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        server.resource_version(),
        after,
        "stopped churn writes nothing"
    );

    // The pod events seen by a watcher add up to the pods left.
    let mut live = 20i64;
    let mut seen = 0;
    while let Ok(Some(ev)) = tokio::time::timeout(Duration::from_secs(1), events.next()).await {
        seen += 1;
        match ev.unwrap() {
            WatchEvent::Added(_) => live += 1,
            WatchEvent::Deleted(_) => live -= 1,
            WatchEvent::Modified(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(seen > 0);
    assert_eq!(live, server.objects("pods", None).unwrap().len() as i64);
}

#[tokio::test(start_paused = true)]
async fn churn_is_reproducible() {
    let run = || async {
        let server = fixed_server();
        seed::seed(
            &server,
            &SeedConfig {
                pods: 5,
                configmaps: 5,
                ..SeedConfig::default()
            },
        )
        .unwrap();
        let churn = Churn::start(
            server.clone(),
            ChurnConfig {
                rate_per_second: 20.0,
                seed: 42,
                ..ChurnConfig::default()
            },
        );
        // Not a multiple of the churn's 50 ms tick: a deadline that coincides with a tick
        // leaves it to the scheduler whether that tick runs before the stop (with tokio's IO
        // driver enabled, as the HTTP front end's dependencies do, it varies from run to run).
        tokio::time::sleep(Duration::from_millis(3025)).await;
        let stats = churn.stop().await;
        let names: Vec<String> = server
            .objects("pods", None)
            .unwrap()
            .iter()
            .map(|o| o.name().to_owned())
            .collect();
        (stats, names)
    };
    assert_eq!(run().await, run().await);
}

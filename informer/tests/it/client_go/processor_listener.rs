//! client-go `tools/cache/processor_listener_test.go` holds no test, only `BenchmarkListener`:
//! five goroutines add notifications to one listener as fast as they can, and the benchmark
//! waits until the handler has received every one. Its scenario, as a test: not a counted
//! case (see the parity doc); `informer/benches/informer.rs` measures the speed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fake_apiserver::FakeApiServer;
use informer::{InformerConfig, handler};
use informer_testing::JsonObject;

use super::support::*;
use crate::informer_support::*;

/// client-go tools/cache/processor_listener_test.go: BenchmarkListener
///
/// Five concurrent writers, 200 creates each: the one handler receives all 1,000 adds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_listener() {
    let server = FakeApiServer::new();
    let informer = informer(&server, InformerConfig::default());
    let received = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&received);
    let registration = informer
        .add_handler(handler().on_add(move |_: &Arc<JsonObject>, _| {
            counter.fetch_add(1, Ordering::AcqRel);
        }))
        .unwrap();
    let running = Running::start(&informer);
    tokio::time::timeout(secs(10), running.synced(&server))
        .await
        .unwrap();
    let writers: Vec<_> = (0..5)
        .map(|w| {
            let server = server.clone();
            tokio::spawn(async move {
                for i in 0..200 {
                    server.create(RESOURCE, &cm(&format!("w{w}-{i}"))).unwrap();
                    if i % 20 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    tokio::time::timeout(secs(30), async {
        while received.load(Ordering::Acquire) < 1_000 {
            tokio::time::sleep(millis(5)).await;
        }
    })
    .await
    .unwrap();
    tokio::time::sleep(millis(50)).await;
    assert_eq!(received.load(Ordering::Acquire), 1_000);
    assert_eq!(registration.pending(), 0);
    running.stop().await;
}

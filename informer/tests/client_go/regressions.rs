//! Regression tests of the defects issue 10 found in the reflector and the informer. Each
//! failed on the code before its fix (the failure is recorded in the commit that fixed it);
//! the real-time half of defect 1 is in `real_time`.

use std::time::Duration;

use informer::{HandlerOptions, InformerConfig};
use informer_testing::fake::FakeApiServer;

use crate::informer_support::*;
use crate::support::*;

fn with_resync(name: &str, period: Duration) -> HandlerOptions {
    HandlerOptions {
        resync_period: Some(period),
        ..HandlerOptions::named(name)
    }
}

/// Defect 1, in paused time: handlers of 1, 2 and 3 s under a 1 s resync check period are
/// resynced exactly every 1, 2 and 3 s (6, 3 and 2 times in 6.5 s, for each object).
#[tokio::test(start_paused = true)]
async fn per_handler_resync_counts_in_paused_time() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    server.create(RESOURCE, &cm("b")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let logs: Vec<Log> = (0..3).map(|_| Log::default()).collect();
    for (i, log) in logs.iter().enumerate() {
        let period = secs(i as u64 + 1);
        informer
            .add_handler_with(log.handler(), with_resync(&format!("h{i}"), period))
            .unwrap();
    }
    assert_eq!(informer.resync_check_period(), secs(1));
    let running = Running::start(&informer);
    running.synced(&server).await;
    tokio::time::sleep(millis(6_500)).await;
    let syncs: Vec<usize> = logs
        .iter()
        .map(|log| log.seen().iter().filter(|s| s.is_sync()).count())
        .collect();
    assert_eq!(syncs, [12, 6, 4]);
    running.stop().await;
}

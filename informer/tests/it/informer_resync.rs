//! Resync per handler, on virtual time: equal-resourceVersion updates go only to handlers
//! whose own period is due, and the resync check period follows client-go's rules.

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{HandlerOptions, InformerConfig};

use crate::informer_support::*;
use crate::support::secs;

fn with_resync(name: &str, period: Option<Duration>) -> HandlerOptions {
    HandlerOptions {
        resync_period: period,
        ..HandlerOptions::named(name)
    }
}

#[tokio::test(start_paused = true)]
async fn equal_version_updates_go_only_to_handlers_whose_period_is_due() {
    let start = tokio::time::Instant::now();
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    server.create(RESOURCE, &cm("b")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let logs: Vec<(Log, Option<Duration>)> = vec![
        (Log::default(), Some(secs(10))),
        (Log::default(), Some(secs(30))),
        (Log::default(), Some(Duration::ZERO)),
        (Log::default(), None),
    ];
    let registrations: Vec<_> = logs
        .iter()
        .enumerate()
        .map(|(i, (log, period))| {
            informer
                .add_handler_with(log.handler(), with_resync(&format!("h{i}"), *period))
                .unwrap()
        })
        .collect();
    assert_eq!(informer.resync_check_period(), secs(10));
    let resync_periods: Vec<Duration> = registrations
        .iter()
        .map(|r| r.stats().resync_period)
        .collect();
    assert_eq!(resync_periods, [secs(10), secs(30), secs(0), secs(0)]);

    let running = Running::start(&informer);
    running.synced(&server).await;
    tokio::time::sleep_until(start + secs(5)).await;
    let updated = server
        .update(RESOURCE, &cm("a").with_label("v", "2"))
        .unwrap();
    // Resyncs happen at 10, 20, ... 60 s; stop looking at 65 s.
    tokio::time::sleep_until(start + secs(65)).await;

    let syncs: Vec<usize> = logs
        .iter()
        .map(|(log, _)| log.seen().iter().filter(|s| s.is_sync()).count())
        .collect();
    // Two objects: h0 is due at all six checks, h1 at 30 s and 60 s, the others never.
    assert_eq!(syncs, [12, 4, 0, 0]);
    for (log, _) in &logs {
        // The real update reached everyone.
        let real: Vec<Seen> = log
            .seen()
            .into_iter()
            .filter(|s| matches!(s, Seen::Update { .. }) && !s.is_sync())
            .collect();
        assert_eq!(real.len(), 1);
        assert!(
            matches!(&real[0], Seen::Update { new_rv, .. } if *new_rv == updated.resource_version().to_string())
        );
        assert_eq!(log.fold().unwrap(), server_state(&server));
    }
    let stats = informer.stats().reflector.unwrap();
    assert_eq!(stats.resyncs, 6);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_relist_that_saw_no_change_tells_handlers_that_do_not_resync_nothing() {
    let server = FakeApiServer::new();
    server.create(RESOURCE, &cm("a")).unwrap();
    let informer = informer(&server, InformerConfig::default());
    let log = Log::default();
    informer.add_handler(log.handler()).unwrap();
    let running = Running::start(&informer);
    running.synced(&server).await;
    log.wait_for_len(1).await;

    // The watch ends and the history is compacted past the informer's resourceVersion (a
    // write to another resource moves it on): the reflector relists and finds the same object
    // at the same resourceVersion.
    server.clear_requests();
    server.faults().drop_watches(RESOURCE);
    server
        .create(
            "pods",
            &informer_testing::JsonObject::new(Some(NS), "elsewhere"),
        )
        .unwrap();
    server.compact_all();
    // A relist: a paginated list or (the default since issue 10) a streaming one.
    tokio::time::timeout(
        secs(600),
        server.wait_for_request(|r| {
            r.is_list_of(RESOURCE)
                || (r.is_watch_of(RESOURCE) && r.param("sendInitialEvents") == Some("true"))
        }),
    )
    .await
    .unwrap();
    running.watching(&server).await;
    server.create(RESOURCE, &cm("marker")).unwrap();
    log.wait_for_len(2).await;
    assert!(matches!(&log.seen()[1], Seen::Add { key, .. } if key == "ns/marker"));
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn resync_periods_follow_client_go_rules() {
    let server = FakeApiServer::new();

    // Before start: a shorter period lowers the check period (after the 1 s minimum).
    let informer_a = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(20)),
            ..InformerConfig::default()
        },
    );
    let default = informer_a
        .add_handler_with(Log::default().handler(), with_resync("default", None))
        .unwrap();
    let tiny = informer_a
        .add_handler_with(
            Log::default().handler(),
            with_resync("tiny", Some(Duration::from_millis(500))),
        )
        .unwrap();
    assert_eq!(informer_a.resync_check_period(), secs(1));
    assert_eq!(tiny.stats().resync_period, secs(1));
    assert_eq!(default.stats().resync_period, secs(20));

    // After start: a shorter period is raised to the check period.
    let informer_b = informer(
        &server,
        InformerConfig {
            resync_period: Some(secs(30)),
            ..InformerConfig::default()
        },
    );
    informer_b
        .add_handler_with(Log::default().handler(), with_resync("ten", Some(secs(10))))
        .unwrap();
    assert_eq!(informer_b.resync_check_period(), secs(10));
    let running_b = Running::start(&informer_b);
    running_b.synced(&server).await;
    let five = informer_b
        .add_handler_with(Log::default().handler(), with_resync("five", Some(secs(5))))
        .unwrap();
    let forty = informer_b
        .add_handler_with(
            Log::default().handler(),
            with_resync("forty", Some(secs(40))),
        )
        .unwrap();
    assert_eq!(informer_b.resync_check_period(), secs(10));
    assert_eq!(five.stats().resync_period, secs(10));
    assert_eq!(forty.stats().resync_period, secs(40));
    running_b.stop().await;

    // A running informer that does not resync cannot be asked to.
    let informer_c = informer(&server, InformerConfig::default());
    let running_c = Running::start(&informer_c);
    running_c.synced(&server).await;
    let late = informer_c
        .add_handler_with(
            Log::default().handler(),
            with_resync("late", Some(secs(10))),
        )
        .unwrap();
    assert_eq!(late.stats().resync_period, Duration::ZERO);
    running_c.stop().await;

    // Ours: before start, a handler's period turns resync on for an informer without one
    // (client-go would silently never resync it).
    let informer_d = informer(&server, InformerConfig::default());
    let early = informer_d
        .add_handler_with(
            Log::default().handler(),
            with_resync("early", Some(secs(10))),
        )
        .unwrap();
    assert_eq!(informer_d.resync_check_period(), secs(10));
    assert_eq!(early.stats().resync_period, secs(10));
}

//! The harness itself, end to end at a tiny size: every contender in its own process against
//! an in-process HTTP fake API server, every phase, and the report rendered from the results.
//! (The full benchmark is `cargo xtask bench`; it is not run by tests.)

#[cfg(target_os = "linux")]
#[test]
fn every_contender_goes_through_every_phase_at_a_tiny_size() {
    use std::path::PathBuf;
    use std::time::Duration;

    use fake_apiserver::FakeApiServer;
    use fake_apiserver::http::{FakeHttpServer, HttpConfig};
    use informer_benchmarks::contender::ContenderKind;
    use informer_benchmarks::machine::Machine;
    use informer_benchmarks::report::{ReportContext, render, targets};
    use informer_benchmarks::suite::{self, ServerSource, SuiteConfig};

    const PODS: usize = 200;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let http = runtime
        .block_on(FakeHttpServer::start(
            FakeApiServer::new(),
            HttpConfig::default(),
        ))
        .unwrap();
    let config = SuiteConfig {
        sizes: vec![PODS],
        namespaces: 10,
        steady_rate: 200.0,
        steady_seconds: 0.5,
        burst: 150,
        lookup_seconds: 0.01,
        lookup_keys: 20,
        settle: Duration::from_millis(20),
        phase_timeout: Duration::from_secs(60),
        ..SuiteConfig::quick(
            PathBuf::from(env!("CARGO_BIN_EXE_bench-contender")),
            ServerSource::External(http.url()),
        )
    };
    let results = suite::run(&config, &mut |line| eprintln!("{line}")).unwrap();

    let size = &results.sizes[0];
    assert_eq!(size.pods, PODS);
    assert_eq!(size.contenders.len(), ContenderKind::ALL.len());
    for c in &size.contenders {
        let kind = c.kind;
        assert_eq!(c.sync_seconds.len(), 2, "{kind}");
        assert!(c.sync_seconds.iter().all(|s| *s > 0.0), "{kind}");
        assert!(c.rss_after_sync.iter().all(|b| *b > 0), "{kind}");
        // The relist was seen by the server, as a list or as a streaming list.
        let requests = c.relist.list_requests + c.relist.streaming_requests;
        assert!(requests > 0, "{kind}: {:?}", c.relist);
        if kind == ContenderKind::KubeRuntimeStreaming {
            assert!(c.relist.streaming_requests > 0, "{kind}: {:?}", c.relist);
        }
        assert!(c.relist.peak > 0, "{kind}");
        // Every stamped write reached the handler, with a latency for each.
        assert_eq!(c.steady.written, 100, "{kind}");
        assert_eq!(
            c.steady.received, c.steady.written,
            "{kind}: {:?}",
            c.steady
        );
        assert_eq!(c.steady.latency_micros.count, 100, "{kind}");
        assert!(c.steady.latency_micros.p50 > 0.0, "{kind}");
        assert_eq!(c.burst.received, 150, "{kind}: {:?}", c.burst);
        assert!(c.burst.applied_rate() > 0.0, "{kind}");
        assert_eq!(c.lookups.is_some(), kind.has_cache(), "{kind}");
        if let Some(l) = c.lookups {
            assert_eq!(l.namespace.found_per_pass, PODS as u64, "{kind}");
            assert_eq!(l.get.found_per_pass, 20, "{kind}");
            assert!(
                l.namespace.operations >= 10 && l.get.operations >= 20,
                "{kind}"
            );
        }
    }
    // Every target can be evaluated from these results, and the report shows them all.
    assert!(targets(size).iter().all(|t| t.met().is_some()));
    let text = render(
        &results,
        &ReportContext {
            machine: Machine::describe(),
            date: "today".into(),
            command: "test".into(),
            analysis: None,
        },
    );
    for kind in ContenderKind::ALL {
        assert!(text.contains(kind.label()), "{}", kind.label());
    }
    // Four of issue 7's targets at this size (its lookup target applies from 100k pods on)
    // and issue 15's seven.
    assert_eq!(targets(size).len(), 11);
    assert_eq!(
        text.matches("**met**").count() + text.matches("**missed**").count(),
        11
    );
    runtime.block_on(http.shutdown()).unwrap();
}

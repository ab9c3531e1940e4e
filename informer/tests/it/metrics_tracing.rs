//! Observability without metrics: the `tracing` events an informer run emits (targets,
//! levels, fields), captured as text: list and watch lifecycle, relist with its reason, sync,
//! handler registration, the slow-handler warning, shutdown. Virtual time.

use std::io;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    Delivery, HandlerOptions, InformerConfig, SharedIndexInformer, handler, wait_for_cache_sync,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use crate::support::{GUARD, set_scoped_subscriber};

/// Everything the subscriber wrote.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8(self.0.lock().clone())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// The first line holding every one of `parts`.
    fn find(&self, parts: &[&str]) -> String {
        let lines = self.lines();
        lines
            .iter()
            .find(|line| parts.iter().all(|p| line.contains(p)))
            .cloned()
            .unwrap_or_else(|| panic!("no line with {parts:?} in:\n{}", lines.join("\n")))
    }
}

#[tokio::test(start_paused = true)]
async fn an_informer_run_tells_its_story() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    // Scoped to this thread (the tests share the process), with tracing's interest cache kept
    // honest while other tests run (see `set_scoped_subscriber`).
    let _default = set_scoped_subscriber(subscriber);

    let server = FakeApiServer::new();
    server
        .create("pods", &JsonObject::new(Some("prod"), "web-0"))
        .unwrap();
    let lister_watcher = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
    let informer = SharedIndexInformer::new(
        lister_watcher,
        InformerConfig {
            name: "pods".into(),
            // The story of a paginated list (the default streams the initial list first since
            // issue 10).
            list_watch: informer::reflector::ListWatchConfig {
                watch_list: informer::reflector::WatchListMode::Off,
                ..informer::reflector::ListWatchConfig::default()
            },
            ..InformerConfig::default()
        },
    )
    .unwrap();
    // A handler that blocks on its first live notification, on its own thread: its lag grows.
    let (release, blocked) = mpsc::channel::<()>();
    let blocked = Mutex::new(blocked);
    let slow = informer
        .add_handler_with(
            handler().on_add(move |_: &Arc<JsonObject>, initial| {
                if !initial {
                    let _ = blocked.lock().recv();
                }
            }),
            HandlerOptions {
                name: Some("slow".into()),
                buffer_limit: NonZeroUsize::new(5000),
                delivery: Delivery::Thread,
                ..HandlerOptions::default()
            },
        )
        .unwrap();
    let stop = CancellationToken::new();
    let run = informer.spawn(stop.clone());
    // The slow handler takes its initial list on its own thread: keep the runtime busy (virtual
    // time stands still) until it has, or paused time would jump straight to the guard.
    let started = std::time::Instant::now();
    while !(informer.has_synced() && slow.has_synced()) {
        assert!(started.elapsed() < Duration::from_secs(60), "never synced");
        tokio::task::yield_now().await;
    }
    wait_for_cache_sync(GUARD, &[&informer, &slow])
        .await
        .unwrap();
    tokio::time::timeout(GUARD, server.wait_for_open_watches("pods", 1))
        .await
        .unwrap();

    // A relist (ERROR 410), then enough creates to put the slow handler 1024 behind.
    server.faults().expire_watches("pods");
    for i in 0..1100 {
        server
            .create("pods", &JsonObject::new(Some("prod"), &format!("p-{i}")))
            .unwrap();
    }
    let caught_up = async {
        while informer.lister().list_all().len() < 1101 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(GUARD, caught_up).await.unwrap();
    assert!(slow.pending() >= 1024, "{}", slow.pending());

    release.send(()).unwrap();
    drop(release);
    stop.cancel();
    run.await.unwrap().unwrap();

    // Registration, at DEBUG, from the processor.
    captured.find(&[
        "DEBUG",
        "informer::processor",
        "handler registered",
        "informer=pods",
        "handler=slow",
        "replayed=0",
    ]);
    // The reflector: a list, its replace and the sync.
    captured.find(&[
        "DEBUG",
        "informer::reflector",
        "listing",
        "reflector=\"pods\"",
    ]);
    captured.find(&["DEBUG", "informer::reflector", "list replaced", "count=1"]);
    captured.find(&["INFO", "informer::reflector", "synced", "count=1"]);
    captured.find(&[
        "INFO",
        "informer::shared_informer",
        "informer synced",
        "cached=1",
    ]);
    // The watch, its expiry, and the relist with its reason.
    captured.find(&[
        "DEBUG",
        "informer::reflector",
        "watch started",
        "streaming=false",
    ]);
    captured.find(&["INFO", "informer::reflector", "410", "then=Some(Relist)"]);
    captured.find(&[
        "DEBUG",
        "informer::reflector",
        "watch restarts",
        "reason=\"expired\"",
    ]);
    captured.find(&[
        "INFO",
        "informer::reflector",
        "relisting",
        "reason=\"expired\"",
    ]);
    captured.find(&["DEBUG", "informer::reflector", "watch closed", "events="]);
    captured.find(&["DEBUG", "informer::reflector", "backing off"]);
    // The slow handler, warned about at 1024 (once: it never reached 2048).
    let warning = captured.find(&["WARN", "informer::listener", "falls behind", "lag=1024"]);
    assert!(warning.contains("handler=slow"), "{warning}");
    assert_eq!(
        captured
            .lines()
            .iter()
            .filter(|l| l.contains("falls behind"))
            .count(),
        1
    );
    // Shutdown (the slow handler, on its own thread, may still be draining when the virtual
    // clock reaches shutdown's bound: then it is reported stuck).
    captured.find(&[
        "INFO",
        "informer::shared_informer",
        "informer stopped",
        "drained=",
        "stuck=",
    ]);
}

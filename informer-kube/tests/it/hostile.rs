//! The informer against broken and hostile API servers (issue 11): kube-client → a
//! misbehaving HTTP server written for these tests (`support::hostile`) → informer. Each test
//! stages one failure, checks that the informer neither spins, nor parks, nor hangs, nor
//! grows its buffers past their caps, that every stall ends in a typed error within its
//! timeout (plus a tolerance for a loaded machine), and that once the server behaves the
//! cache equals the server's state.
//!
//! Time is real: these are the real-time tests of the timers (the paused-time ones are unit
//! tests of `lister_watcher.rs` and of the core backoff). Rates are measured over short
//! windows against bounds derived from the backoff; a bound that holds for the slowest
//! machine is loose on a fast one, never the other way round.

use std::sync::Arc;
use std::time::Duration;

use crate::support::hostile::{Behaviour, Hostile, Kind};
use crate::support::{self, GUARD, State, cache_state, diff, seed_pods, server_state, wait_until};
use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use informer::reflector::{BackoffConfig, Jitter, ListLimits, Stage, WatchListMode};
use informer::{
    ErrorClass, InformerConfig, Limit, ListOptions, ListerWatcher, SharedIndexInformer,
};
use informer_kube::{ClientLimits, KubeListerWatcher, client_for_informers};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a loaded 2-core CI machine may add to a timer before the test notices.
const TOLERANCE: Duration = Duration::from_secs(3);

/// One failure the reflector reported, with when.
#[derive(Debug, Clone)]
struct Failure {
    at: Instant,
    stage: Stage,
    class: ErrorClass,
    limit: Option<Limit>,
    header_retry_after: Option<Duration>,
    message: String,
}

/// The real fake API server, the hostile one in front of it, and an informer on pods through
/// the hostile one.
struct Rig {
    engine: FakeApiServer,
    _http: FakeHttpServer,
    hostile: Hostile,
    lister_watcher: KubeListerWatcher<Pod>,
    informer: SharedIndexInformer<Pod>,
    failures: Arc<Mutex<Vec<Failure>>>,
    cancel: CancellationToken,
    started: Instant,
}

impl Rig {
    /// Seeds 40 pods, starts both servers with the hostile one behaving as `list` and
    /// `watch`, and an informer (`configure` sees its config first).
    async fn start(
        list: Behaviour,
        watch: Behaviour,
        limits: ClientLimits,
        configure: impl FnOnce(&mut InformerConfig<Pod>),
    ) -> Self {
        let engine = FakeApiServer::new();
        seed_pods(&engine, 2, 40);
        let http = FakeHttpServer::start(engine.clone(), HttpConfig::default())
            .await
            .unwrap();
        let hostile = Hostile::start(http.addr()).await;
        hostile.set_list(list);
        hostile.set_watch(watch);
        let lister_watcher =
            KubeListerWatcher::<Pod>::all(support::client(&hostile.url()).unwrap())
                .with_limits(limits);
        let failures: Arc<Mutex<Vec<Failure>>> = Arc::default();
        let mut config = InformerConfig::<Pod> {
            name: "pods".into(),
            ..InformerConfig::default()
        };
        config.seed = Some(7);
        // These scenarios are about paginated lists and watches; the proxy refuses streaming
        // lists anyway (as a server without WatchList), which would add a 422 to each round.
        config.list_watch.watch_list = WatchListMode::Off;
        let recorded = Arc::clone(&failures);
        config.watch_error_handler = Some(Arc::new(move |error, context| {
            recorded.lock().push(Failure {
                at: Instant::now(),
                stage: context.stage,
                class: error.class(),
                limit: error.limit_exceeded(),
                header_retry_after: match error {
                    informer::Error::Api { retry_after, .. } => *retry_after,
                    _ => None,
                },
                message: error.to_string(),
            });
        }));
        configure(&mut config);
        let informer = SharedIndexInformer::new(Arc::new(lister_watcher.clone()), config).unwrap();
        let cancel = CancellationToken::new();
        let started = Instant::now();
        informer.spawn(cancel.clone());
        Self {
            engine,
            _http: http,
            hostile,
            lister_watcher,
            informer,
            failures,
            cancel,
            started,
        }
    }

    fn failures(&self) -> Vec<Failure> {
        self.failures.lock().clone()
    }

    /// Waits (at most [`GUARD`]) for a failure matching `pred`.
    async fn failure(&self, what: &str, pred: impl Fn(&Failure) -> bool) -> Failure {
        let mut found = None;
        wait_until(
            what,
            None,
            || {
                found = self.failures().into_iter().find(|f| pred(f));
                found.is_some()
            },
            || format!("{:#?}", self.failures()),
        )
        .await;
        found.expect("found")
    }

    fn server_state(&self) -> State {
        server_state(&self.engine, "pods", None)
    }

    /// The server behaves from now on; a pod is created so that a live event must arrive
    /// too; waits until the cache equals the server.
    async fn recovers(&self) {
        self.hostile.behave();
        self.engine
            .create(
                "pods",
                &json!({"apiVersion":"v1","kind":"Pod",
                        "metadata":{"name":"after-recovery","namespace":"ns-0"}}),
            )
            .unwrap();
        wait_until(
            "the cache to equal the server after it recovers",
            None,
            || cache_state(&self.informer) == self.server_state(),
            || diff(&cache_state(&self.informer), &self.server_state()),
        )
        .await;
        assert!(self.informer.has_synced());
    }

    /// Waits `window` of real time from now and returns it.
    async fn window(&self, window: Duration) -> (Instant, Instant) {
        let from = Instant::now();
        tokio::time::sleep(window).await;
        (from, Instant::now())
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

fn small_limits() -> ClientLimits {
    ClientLimits {
        response_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(10),
        max_frame_bytes: 256 << 10,
        ..ClientLimits::default()
    }
}

fn no_jitter(config: &mut InformerConfig<Pod>) {
    config.list_watch.backoff = BackoffConfig {
        jitter: Jitter::None,
        ..BackoffConfig::default()
    };
}

/// Requests of `kind` that start a list (no continue token) or are watches, in order.
fn attempts(hostile: &Hostile, kind: Kind) -> Vec<crate::support::hostile::Seen> {
    hostile
        .seen()
        .into_iter()
        .filter(|s| s.kind == kind && s.param("continue").is_none())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_zero_on_every_list_backs_off_instead_of_spinning() {
    let rig = Rig::start(
        Behaviour::Throttle {
            retry_after: "0".into(),
        },
        Behaviour::Pass,
        small_limits(),
        |_| {},
    )
    .await;
    let (from, to) = rig.window(Duration::from_secs(6)).await;
    // Each delay is at least the backoff's 800 ms floor, whatever the jitter: at most
    // 6 / 0.8 + 1 requests in six seconds (the issue saw 41,285 in a minute).
    let lists = rig.hostile.count(Kind::List, from, to);
    assert!((2..=9).contains(&lists), "{lists} lists in 6 s");
    let failures = rig.failures();
    assert!(failures.iter().all(|f| f.stage == Stage::List
        && f.class == ErrorClass::Throttled
        && f.header_retry_after == Some(Duration::ZERO)));
    // Consecutive requests are never closer than the floor (minus scheduling noise).
    let times: Vec<Instant> = attempts(&rig.hostile, Kind::List)
        .iter()
        .map(|s| s.at)
        .collect();
    for pair in times.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(750),
            "{:?}",
            pair[1] - pair[0]
        );
    }
    assert!(!rig.informer.has_synced());
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_on_watches_is_clamped_between_floor_and_cap_without_relisting() {
    let rig = Rig::start(
        Behaviour::Pass,
        Behaviour::Throttle {
            retry_after: "0".into(),
        },
        small_limits(),
        |config| {
            // A short cap, so that the test sees several capped delays.
            config.list_watch.backoff.max = Duration::from_secs(2);
        },
    )
    .await;
    tokio::time::timeout(GUARD, rig.informer.wait_for_sync())
        .await
        .unwrap();
    let (from, to) = rig.window(Duration::from_secs(5)).await;
    let zero = rig.hostile.count(Kind::Watch, from, to);
    // At least 800 ms apart: at most 5 / 0.8 + 1.
    assert!((2..=7).contains(&zero), "{zero} watches in 5 s");
    // A day's Retry-After: the 2 s cap, not a day.
    rig.hostile.set_watch(Behaviour::Throttle {
        retry_after: "100000".into(),
    });
    let (from, to) = rig.window(Duration::from_secs(7)).await;
    let day = rig.hostile.count(Kind::Watch, from, to);
    assert!((2..=5).contains(&day), "{day} watches in 7 s");
    let watches = attempts(&rig.hostile, Kind::Watch);
    let capped: Vec<Duration> = watches
        .windows(2)
        .filter(|w| w[0].behaviour == w[1].behaviour && w[0].at >= from)
        .map(|w| w[1].at - w[0].at)
        .collect();
    assert!(
        capped
            .iter()
            .all(|d| *d >= Duration::from_millis(1900) && *d <= Duration::from_secs(2) + TOLERANCE),
        "{capped:?}"
    );
    // Throttling re-watches: no relist.
    assert_eq!(attempts(&rig.hostile, Kind::List).len(), 1);
    assert!(
        rig.failures()
            .iter()
            .all(|f| f.stage == Stage::WatchStart && f.class == ErrorClass::Throttled)
    );
    rig.recovers().await;
    assert_eq!(attempts(&rig.hostile, Kind::List).len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_pagination_stops_at_the_byte_cap_with_a_typed_error() {
    let max_bytes = 1 << 20;
    let rig = Rig::start(
        Behaviour::EndlessPages {
            items: 50,
            item_bytes: 1000,
            same_token: false,
        },
        Behaviour::Pass,
        small_limits(),
        |config| {
            no_jitter(config);
            config.list_watch.list_limits = ListLimits {
                max_pages: 100_000,
                max_bytes,
            };
        },
    )
    .await;
    let (from, to) = rig.window(Duration::from_secs(6)).await;
    let failures = rig.failures();
    assert!(!failures.is_empty());
    assert!(failures.iter().all(|f| f.stage == Stage::List
        && f.class == ErrorClass::Other
        && f.limit == Some(Limit::ListBytes(max_bytes))));
    // Without jitter the backoff waits 0.8, 1.6, 3.2 s between attempts: at most 4 attempts
    // start in six seconds (a spin would start hundreds).
    let started: Vec<_> = attempts(&rig.hostile, Kind::List)
        .into_iter()
        .filter(|s| s.at >= from && s.at < to)
        .collect();
    assert!(
        (1..=4).contains(&started.len()),
        "{} attempts",
        started.len()
    );
    // Each attempt stopped asking within one page of the cap.
    let seen = rig.hostile.seen();
    let mut per_attempt: Vec<u64> = Vec::new();
    for s in seen.iter().filter(|s| s.kind == Kind::List) {
        if s.param("continue").is_none() {
            per_attempt.push(0);
        }
        *per_attempt.last_mut().unwrap() += *s.body_bytes.lock();
    }
    let page = 50 * 1000 + 1000;
    for bytes in &per_attempt {
        assert!(*bytes <= max_bytes + page, "an attempt took {bytes} bytes");
    }
    // The decoder held about one item at a time, never a page.
    let memory = rig.lister_watcher.decoder_memory();
    assert!(
        memory.peak_held_bytes() <= (256 << 10) + (64 << 10),
        "{}",
        memory.peak_held_bytes()
    );
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_pagination_by_repeated_tokens_or_too_many_pages_is_refused() {
    let rig = Rig::start(
        Behaviour::EndlessPages {
            items: 2,
            item_bytes: 200,
            same_token: true,
        },
        Behaviour::Pass,
        small_limits(),
        |config| {
            no_jitter(config);
            config.list_watch.list_limits = ListLimits {
                max_pages: 5,
                max_bytes: 1 << 30,
            };
        },
    )
    .await;
    let repeated = rig
        .failure("a repeated continue token", |f| {
            f.limit == Some(Limit::RepeatedContinueToken)
        })
        .await;
    assert_eq!(repeated.stage, Stage::List);
    // The token came back on the second page: the list ended there.
    let lists: Vec<_> = rig
        .hostile
        .seen()
        .into_iter()
        .filter(|s| s.kind == Kind::List)
        .collect();
    assert_eq!(lists[0].param("continue"), None);
    assert_eq!(lists[1].param("continue"), Some("the-same-token"));
    // Fresh tokens forever: the fifth page ends the list.
    rig.hostile.set_list(Behaviour::EndlessPages {
        items: 2,
        item_bytes: 200,
        same_token: false,
    });
    let too_many = rig
        .failure("too many pages", |f| f.limit == Some(Limit::ListPages(5)))
        .await;
    // Attempts up to that failure: (whether its first page had fresh tokens, its pages).
    let mut attempts: Vec<(bool, usize)> = Vec::new();
    for s in rig
        .hostile
        .seen()
        .iter()
        .filter(|s| s.kind == Kind::List && s.at <= too_many.at)
    {
        match (s.param("continue"), attempts.last_mut()) {
            (Some(_), Some(attempt)) => attempt.1 += 1,
            _ => attempts.push((s.behaviour != lists[0].behaviour, 1)),
        }
    }
    // The attempt that failed took exactly five pages.
    assert_eq!(attempts.last().map(|a| a.1), Some(5), "{attempts:?}");
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_ends_in_a_response_timeout() {
    let limits = ClientLimits {
        response_timeout: Duration::from_secs(1),
        ..small_limits()
    };
    let rig = Rig::start(Behaviour::Silent, Behaviour::Pass, limits, |_| {}).await;
    let first = rig
        .failure("a response timeout", |f| f.limit.is_some())
        .await;
    let took = first.at - rig.started;
    assert!(
        took >= Duration::from_millis(950) && took <= Duration::from_secs(1) + TOLERANCE,
        "{took:?}"
    );
    assert_eq!(
        first.limit,
        Some(Limit::ResponseTimeout(Duration::from_secs(1)))
    );
    assert_eq!(
        (first.stage, first.class),
        (Stage::List, ErrorClass::Transport)
    );
    assert!(
        first.message.contains("no response within 1s"),
        "{}",
        first.message
    );
    // The client hung up: the server saw the connection close.
    let seen = &rig.hostile.seen()[0];
    let closed = wait_closed(seen).await;
    assert!(closed - seen.at <= Duration::from_secs(1) + TOLERANCE);
    // The normal retry path: another list after the backoff.
    wait_until(
        "a second list",
        None,
        || attempts(&rig.hostile, Kind::List).len() >= 2,
        || format!("{:?}", rig.failures()),
    )
    .await;
    rig.recovers().await;
}

async fn wait_closed(seen: &crate::support::hostile::Seen) -> Instant {
    let mut at = None;
    wait_until(
        "the client to hang up",
        None,
        || {
            at = *seen.closed_at.lock();
            at.is_some()
        },
        || "never closed".into(),
    )
    .await;
    at.expect("closed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stalls_behind_a_huge_content_length_ends_in_an_idle_timeout() {
    let limits = ClientLimits {
        idle_timeout: Duration::from_secs(1),
        ..small_limits()
    };
    let rig = Rig::start(
        Behaviour::Stall {
            content_length: Some(10_000_000_000),
            body: br#"{"kind":"PodList","items":[{"metadata":{"name":"a","namespace":"x"}},"#
                .to_vec(),
        },
        Behaviour::Pass,
        limits,
        |_| {},
    )
    .await;
    let first = rig.failure("an idle timeout", |f| f.limit.is_some()).await;
    let took = first.at - rig.started;
    assert!(
        took >= Duration::from_millis(950) && took <= Duration::from_secs(1) + TOLERANCE,
        "{took:?}"
    );
    assert_eq!(
        first.limit,
        Some(Limit::IdleTimeout(Duration::from_secs(1)))
    );
    assert_eq!(
        (first.stage, first.class),
        (Stage::List, ErrorClass::Transport)
    );
    // A 10 GB Content-Length reserved nothing: the decoder held what arrived.
    let peak = rig.lister_watcher.decoder_memory().peak_held_bytes();
    assert!(peak <= 128 << 10, "{peak} bytes held");
    // The same lie with the connection closed early: a transport error, nothing reserved.
    rig.hostile.set_list(Behaviour::LyingLength {
        content_length: 10_000_000_000,
        body: br#"{"kind":"PodList","items":["#.to_vec(),
    });
    rig.failure("a body cut short", |f| {
        f.limit.is_none() && f.class == ErrorClass::Transport
    })
    .await;
    let peak = rig.lister_watcher.decoder_memory().peak_held_bytes();
    assert!(peak <= 128 << 10, "{peak} bytes held");
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_watch_stream_ends_at_its_deadline_above_timeout_seconds() {
    let limits = ClientLimits {
        watch_deadline_margin: Duration::from_secs(1),
        ..small_limits()
    };
    let rig = Rig::start(
        Behaviour::Pass,
        Behaviour::Stall {
            content_length: None,
            body: Vec::new(),
        },
        limits,
        |config| {
            // timeoutSeconds=1 (drawn from [1, 2) whole seconds): the deadline is 2 s.
            config.list_watch.min_watch_timeout = Duration::from_secs(1);
        },
    )
    .await;
    let failure = rig.failure("a watch deadline", |f| f.limit.is_some()).await;
    let watch = attempts(&rig.hostile, Kind::Watch)[0].clone();
    assert_eq!(watch.param("timeoutSeconds"), Some("1"));
    let took = failure.at - watch.at;
    assert!(
        took >= Duration::from_millis(1900) && took <= Duration::from_secs(2) + TOLERANCE,
        "{took:?}"
    );
    assert_eq!(
        failure.limit,
        Some(Limit::WatchDeadline(Duration::from_secs(2)))
    );
    assert_eq!(
        (failure.stage, failure.class),
        (Stage::Watch, ErrorClass::Transport)
    );
    let closed = wait_closed(&watch).await;
    assert!(closed - watch.at <= Duration::from_secs(2) + TOLERANCE);
    // The normal retry path: a new watch from the same point, no relist.
    wait_until(
        "a second watch",
        None,
        || attempts(&rig.hostile, Kind::Watch).len() >= 2,
        || format!("{:?}", rig.failures()),
    )
    .await;
    let second = attempts(&rig.hostile, Kind::Watch)[1].clone();
    assert_eq!(
        second.param("resourceVersion"),
        watch.param("resourceVersion")
    );
    assert_eq!(attempts(&rig.hostile, Kind::List).len(), 1);
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_watch_ends_at_its_idle_timeout_when_one_is_set() {
    let limits = ClientLimits {
        watch_idle_timeout: Some(Duration::from_secs(1)),
        ..small_limits()
    };
    let rig = Rig::start(
        Behaviour::Pass,
        Behaviour::Stall {
            content_length: None,
            body: Vec::new(),
        },
        limits,
        |_| {},
    )
    .await;
    let failure = rig
        .failure("a watch idle timeout", |f| f.limit.is_some())
        .await;
    let watch = attempts(&rig.hostile, Kind::Watch)[0].clone();
    let took = failure.at - watch.at;
    assert!(
        took >= Duration::from_millis(950) && took <= Duration::from_secs(1) + TOLERANCE,
        "{took:?}"
    );
    assert_eq!(
        failure.limit,
        Some(Limit::IdleTimeout(Duration::from_secs(1)))
    );
    assert_eq!(
        (failure.stage, failure.class),
        (Stage::Watch, ErrorClass::Transport)
    );
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_watch_line_is_cut_at_the_frame_cap_and_the_informer_recovers() {
    let rig = Rig::start(
        Behaviour::Pass,
        Behaviour::EndlessLine,
        small_limits(),
        |_| {},
    )
    .await;
    tokio::time::timeout(GUARD, rig.informer.wait_for_sync())
        .await
        .unwrap();
    let failure = rig
        .failure("a frame over the cap", |f| f.limit.is_some())
        .await;
    assert_eq!(failure.limit, Some(Limit::FrameBytes(256 << 10)));
    assert_eq!(
        (failure.stage, failure.class),
        (Stage::Watch, ErrorClass::Decode)
    );
    // The decoder never held more than the cap and one read slice.
    let peak = rig.lister_watcher.decoder_memory().peak_held_bytes();
    assert!(peak <= (256 << 10) + (64 << 10), "{peak} bytes held");
    // The rest of the stream was discarded: the client hung up long before the server's
    // 256 MiB were out.
    let watch = attempts(&rig.hostile, Kind::Watch)[0].clone();
    wait_closed(&watch).await;
    let sent = *watch.body_bytes.lock();
    assert!(sent < 64 << 20, "the server wrote {sent} bytes");
    rig.recovers().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connect_that_never_completes_ends_at_the_connect_timeout() {
    // A listener whose accept queue is full: the kernel drops further SYNs, so connecting
    // hangs until the client gives up.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut held = Vec::new();
    loop {
        match tokio::time::timeout(
            Duration::from_millis(300),
            tokio::net::TcpStream::connect(addr),
        )
        .await
        {
            Ok(Ok(stream)) => held.push(stream),
            Ok(Err(e)) => panic!("connect failed instead of hanging: {e}"),
            Err(_) => break,
        }
        assert!(held.len() < 100, "the accept queue never filled");
    }
    let mut config = kube_client::Config::new(format!("http://{addr}").parse().unwrap());
    config.connect_timeout = Some(Duration::from_secs(1));
    let lister_watcher = KubeListerWatcher::<Pod>::all(client_for_informers(config).unwrap())
        .with_limits(small_limits());
    let started = Instant::now();
    let error = lister_watcher
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(950) && took <= Duration::from_secs(1) + TOLERANCE,
        "{took:?}: {error}"
    );
    // A transport failure (the normal retry path), not our 10 s response timeout.
    assert_eq!(error.class(), ErrorClass::Transport);
    assert_eq!(error.limit_exceeded(), None);
    drop(listener);
}

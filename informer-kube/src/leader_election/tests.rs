//! The elector's IO in virtual time, against an in-memory Lease endpoint behind a kube
//! `Client` (no socket, so `tokio::time::pause` holds): renewal cadence, request timeouts that
//! end at the renew deadline, takeover after the lease duration by the observer's clock,
//! release on stop, dropped runs. A short real-time test runs the same timers on the real
//! clock.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::{Arc, Mutex as StdMutex};

use bytes::Bytes;
use http_body_util::BodyExt;
use informer_core::leader_election::{ElectionConfig, StepDown};
use k8s_openapi::api::coordination::v1::Lease;
use kube_client::client::Body;
use kube_client::{Api, Client};
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::*;

const NS: &str = "ns";
const NAME: &str = "lock";

/// How the in-memory server answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Normal,
    /// Never answers.
    Hang,
    /// 500 to everything.
    Fail,
}

/// One Lease, served as the API server would: GET, POST (409 when it exists), PUT with a
/// resourceVersion precondition (409 when stale).
#[derive(Clone)]
struct LeaseServer {
    state: Arc<StdMutex<ServerState>>,
}

struct ServerState {
    lease: Option<Value>,
    rv: u64,
    mode: Mode,
    /// (when, method) of every request.
    log: Vec<(Instant, String)>,
}

fn status(code: u16, reason: &str, message: &str) -> (u16, Value) {
    (
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "reason": reason, "message": message, "code": code}),
    )
}

impl LeaseServer {
    fn new() -> Self {
        Self {
            state: Arc::new(StdMutex::new(ServerState {
                lease: None,
                rv: 0,
                mode: Mode::Normal,
                log: Vec::new(),
            })),
        }
    }

    fn set_mode(&self, mode: Mode) {
        self.state.lock().unwrap().mode = mode;
    }

    fn spec(&self) -> Value {
        self.state.lock().unwrap().lease.as_ref().unwrap()["spec"].clone()
    }

    fn log(&self) -> Vec<(Instant, String)> {
        self.state.lock().unwrap().log.clone()
    }

    fn answer(&self, method: &str, path: &str, body: &[u8]) -> (u16, Value) {
        let mut s = self.state.lock().unwrap();
        let collection = format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases");
        let object = format!("{collection}/{NAME}");
        match (method, path) {
            ("GET", p) if p == object => match &s.lease {
                Some(lease) => (200, lease.clone()),
                None => status(404, "NotFound", "leases \"lock\" not found"),
            },
            ("POST", p) if p == collection => {
                if s.lease.is_some() {
                    return status(409, "AlreadyExists", "leases \"lock\" already exists");
                }
                s.rv += 1;
                let mut lease: Value = serde_json::from_slice(body).unwrap();
                lease["metadata"]["resourceVersion"] = json!(s.rv.to_string());
                lease["metadata"]["namespace"] = json!(NS);
                lease["metadata"]["uid"] = json!("uid-1");
                s.lease = Some(lease.clone());
                (201, lease)
            }
            ("PUT", p) if p == object => {
                let Some(current) = &s.lease else {
                    return status(404, "NotFound", "leases \"lock\" not found");
                };
                let mut lease: Value = serde_json::from_slice(body).unwrap();
                if lease["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
                    return status(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled on leases.coordination.k8s.io \"lock\": \
                         the object has been modified; please apply your changes to the latest \
                         version and try again",
                    );
                }
                s.rv += 1;
                lease["metadata"]["resourceVersion"] = json!(s.rv.to_string());
                s.lease = Some(lease.clone());
                (200, lease)
            }
            _ => status(404, "NotFound", "no such path"),
        }
    }

    fn client(&self) -> Client {
        let server = self.clone();
        let service = tower::service_fn(move |request: http::Request<Body>| {
            let server = server.clone();
            async move {
                let method = request.method().to_string();
                let path = request.uri().path().to_owned();
                let body = request
                    .into_body()
                    .collect()
                    .await
                    .map_err(|e| std::io::Error::other(e.to_string()))?
                    .to_bytes();
                let mode = {
                    let mut s = server.state.lock().unwrap();
                    s.log.push((Instant::now(), method.clone()));
                    s.mode
                };
                let (code, value) = match mode {
                    Mode::Hang => std::future::pending().await,
                    Mode::Fail => status(500, "InternalError", "etcd is down"),
                    Mode::Normal => server.answer(&method, &path, &body),
                };
                Ok::<_, std::io::Error>(
                    http::Response::builder()
                        .status(code)
                        .header("content-type", "application/json")
                        .body(http_body_util::Full::new(Bytes::from(value.to_string())))
                        .unwrap(),
                )
            }
        });
        Client::new(service, NS)
    }

    fn elector(&self, config: ElectionConfig) -> LeaderElector {
        LeaderElector::new(Api::<Lease>::namespaced(self.client(), NS), NAME, config).unwrap()
    }
}

/// Lease 3 s, renew deadline 2 s, retry period 0.5 s.
fn short(identity: &str) -> ElectionConfig {
    ElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        ..ElectionConfig::new(identity)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Heard {
    Started,
    Stopped(StepDown),
    Leader(Option<String>),
    Released,
    Failed(String),
}

/// Callbacks that record what they hear, and when.
#[derive(Clone, Default)]
struct Recorder {
    heard: Arc<StdMutex<Vec<(Instant, Heard)>>>,
    leadership: Arc<StdMutex<Option<Leadership>>>,
}

impl Recorder {
    fn heard(&self) -> Vec<Heard> {
        self.heard
            .lock()
            .unwrap()
            .iter()
            .map(|(_, h)| h.clone())
            .filter(|h| !matches!(h, Heard::Failed(_)))
            .collect()
    }

    fn when(&self, what: impl Fn(&Heard) -> bool) -> Option<Instant> {
        self.heard
            .lock()
            .unwrap()
            .iter()
            .find(|(_, h)| what(h))
            .map(|(at, _)| *at)
    }

    fn leadership(&self) -> Leadership {
        self.leadership.lock().unwrap().clone().expect("leading")
    }

    fn push(&self, heard: Heard) {
        self.heard.lock().unwrap().push((Instant::now(), heard));
    }
}

impl LeaderCallbacks for Recorder {
    fn started_leading(&mut self, leadership: Leadership) {
        *self.leadership.lock().unwrap() = Some(leadership);
        self.push(Heard::Started);
    }
    fn stopped_leading(&mut self, why: &StepDown) {
        self.push(Heard::Stopped(why.clone()));
    }
    fn new_leader(&mut self, identity: Option<&str>) {
        self.push(Heard::Leader(identity.map(str::to_owned)));
    }
    fn released(&mut self) {
        self.push(Heard::Released);
    }
    fn request_failed(&mut self, error: &LeaseError) {
        self.push(Heard::Failed(format!("{error}: {}", error.kind)));
    }
}

/// Runs `elector` on a task; the handle gives its outcome.
fn spawn(
    elector: LeaderElector,
    recorder: &Recorder,
    stop: &CancellationToken,
) -> tokio::task::JoinHandle<ElectionOutcome> {
    let mut recorder = recorder.clone();
    let stop = stop.clone();
    tokio::spawn(async move { elector.run(&stop, &mut recorder).await })
}

/// Every test's bound: on the virtual clock a hang fails at once (time jumps when idle); on
/// the real clock it fails after 60 s.
async fn bounded(test: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(60), test)
        .await
        .expect("the test ran past its bound");
}

async fn until(what: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(600), async {
        while !what() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("condition never held");
}

#[test]
fn configs_and_names_are_checked() {
    let server = LeaseServer::new();
    let api = || Api::<Lease>::namespaced(server.client(), NS);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let bad = ElectionConfig {
        renew_deadline: Duration::from_secs(20),
        ..ElectionConfig::new("a")
    };
    let err = LeaderElector::new(api(), NAME, bad).unwrap_err();
    assert!(matches!(
        err,
        LeaderElectionError::Config(ElectionConfigError::LeaseNotLongerThanRenewDeadline { .. })
    ));
    assert_eq!(
        LeaderElector::new(api(), "", ElectionConfig::new("a")).unwrap_err(),
        LeaderElectionError::EmptyLeaseName
    );
    assert!(LeaderElector::new(api(), NAME, ElectionConfig::new("")).is_err());
}

/// Creates the lease, leads, renews every retry period; when requests hang, each renewal's
/// timeout ends at the deadline and leadership ends exactly 2 s after the start of the last
/// successful renewal.
#[tokio::test(start_paused = true)]
async fn renews_every_retry_period_and_steps_down_at_the_deadline() {
    bounded(async {
        let server = LeaseServer::new();
        let recorder = Recorder::default();
        let stop = CancellationToken::new();
        let t0 = Instant::now();
        let run = spawn(server.elector(short("a")), &recorder, &stop);
        until(|| recorder.heard().contains(&Heard::Started)).await;
        assert_eq!(
            recorder.heard(),
            [Heard::Leader(Some("a".into())), Heard::Started]
        );
        let spec = server.spec();
        assert_eq!(spec["holderIdentity"], "a");
        assert_eq!(spec["leaseDurationSeconds"], 3);
        assert_eq!(spec["leaseTransitions"], 0);
        let leadership = recorder.leadership();
        assert!(leadership.is_current());
        assert_eq!(leadership.identity(), "a");

        tokio::time::sleep(Duration::from_millis(2600)).await;
        let log = server.log();
        let methods: Vec<&str> = log.iter().map(|(_, m)| m.as_str()).collect();
        // GET (404), POST, then a PUT every 500 ms on the fast path (no GET).
        assert_eq!(methods, ["GET", "POST", "PUT", "PUT", "PUT", "PUT", "PUT"]);
        let puts: Vec<Duration> = log[2..].iter().map(|(at, _)| *at - t0).collect();
        assert_eq!(
            puts,
            [500, 1000, 1500, 2000, 2500].map(Duration::from_millis)
        );
        assert_eq!(
            leadership.valid_until(),
            t0 + Duration::from_millis(2500) + Duration::from_secs(2)
        );
        assert_eq!(spec["acquireTime"], server.spec()["acquireTime"]);

        // The server stops answering: the renewal sent at 3.0 s hangs until the deadline.
        server.set_mode(Mode::Hang);
        let lost = tokio::time::timeout(Duration::from_secs(10), leadership.lost()).await;
        assert!(lost.is_ok());
        let stopped = recorder.when(|h| matches!(h, Heard::Stopped(_))).unwrap();
        assert_eq!(stopped - t0, Duration::from_millis(4500));
        assert!(!leadership.is_current());
        let outcome = run.await.unwrap();
        assert_eq!(
            outcome,
            ElectionOutcome {
                led: true,
                step_down: Some(StepDown::RenewDeadlineExceeded),
                released: false
            }
        );
        let failures: Vec<String> = recorder
            .heard
            .lock()
            .unwrap()
            .iter()
            .filter_map(|(_, h)| match h {
                Heard::Failed(f) => Some(f.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            failures,
            ["updating lease ns/lock: no answer within 1.5s"],
            "{failures:?}"
        );
        drop(stop);
    })
    .await;
}

/// Another candidate waits while the lease is renewed, and takes it over once the leader is
/// gone (stopped without release) and a full lease duration has passed on its own clock.
#[tokio::test(start_paused = true)]
async fn a_second_candidate_takes_over_a_lease_duration_after_the_last_renewal() {
    bounded(async {
        let server = LeaseServer::new();
        let (ra, rb) = (Recorder::default(), Recorder::default());
        let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
        let run_a = spawn(server.elector(short("a")), &ra, &stop_a);
        until(|| ra.heard().contains(&Heard::Started)).await;
        let run_b = spawn(server.elector(short("b")), &rb, &stop_b);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(rb.heard(), [Heard::Leader(Some("a".into()))]);

        stop_a.cancel();
        let outcome = run_a.await.unwrap();
        assert_eq!(outcome.step_down, Some(StepDown::Stopped));
        assert!(!outcome.released);
        let last_renewal = server
            .log()
            .iter()
            .rev()
            .find(|(_, m)| m == "PUT")
            .map(|(at, _)| *at)
            .unwrap();
        until(|| rb.heard().contains(&Heard::Started)).await;
        let took = rb.when(|h| *h == Heard::Started).unwrap() - last_renewal;
        // At least the lease duration. At most that plus two jittered retries (each up to
        // 0.5 s × 2.2): the candidate sees the last renewal only at its next poll, counts the
        // lease duration from then (its own clock, as client-go's observedTime), and sees the
        // expiry at the first poll after it. (One retry was the bound once: the jitter is
        // random, and a run with both waits near their maximum took 4.69 s.)
        assert!(
            took >= Duration::from_secs(3) && took <= Duration::from_millis(5200),
            "{took:?}"
        );
        let spec = server.spec();
        assert_eq!(spec["holderIdentity"], "b");
        assert_eq!(spec["leaseTransitions"], 1);
        assert_eq!(
            rb.heard(),
            [
                Heard::Leader(Some("a".into())),
                Heard::Leader(Some("b".into())),
                Heard::Started
            ]
        );
        stop_b.cancel();
        run_b.await.unwrap();
    })
    .await;
}

/// Release on stop: leadership ends first, then the lease is handed back (holder cleared,
/// 1 s), and the other candidate takes it at its next attempt.
#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_the_lease_over_at_once() {
    bounded(async {
        let server = LeaseServer::new();
        let (ra, rb) = (Recorder::default(), Recorder::default());
        let (stop_a, stop_b) = (CancellationToken::new(), CancellationToken::new());
        let config = ElectionConfig {
            release_on_cancel: true,
            ..short("a")
        };
        let run_a = spawn(server.elector(config), &ra, &stop_a);
        until(|| ra.heard().contains(&Heard::Started)).await;
        let run_b = spawn(server.elector(short("b")), &rb, &stop_b);
        tokio::time::sleep(Duration::from_secs(5)).await;
        let leadership = ra.leadership();

        let stopped_at = Instant::now();
        stop_a.cancel();
        let outcome = run_a.await.unwrap();
        assert_eq!(
            outcome,
            ElectionOutcome {
                led: true,
                step_down: Some(StepDown::Stopped),
                released: true
            }
        );
        assert!(!leadership.is_current());
        assert_eq!(
            ra.heard(),
            [
                Heard::Leader(Some("a".into())),
                Heard::Started,
                Heard::Stopped(StepDown::Stopped),
                Heard::Leader(None),
                Heard::Released
            ]
        );
        until(|| rb.heard().contains(&Heard::Started)).await;
        let took = rb.when(|h| *h == Heard::Started).unwrap() - stopped_at;
        assert!(took <= Duration::from_millis(1100), "{took:?}");
        assert_eq!(server.spec()["holderIdentity"], "b");
        stop_b.cancel();
        run_b.await.unwrap();
    })
    .await;
}

/// A run whose future is dropped (its task aborted) ends the term: the guarded work hears it.
#[tokio::test(start_paused = true)]
async fn dropping_a_run_ends_leadership() {
    bounded(async {
        let server = LeaseServer::new();
        let recorder = Recorder::default();
        let stop = CancellationToken::new();
        let run = spawn(server.elector(short("a")), &recorder, &stop);
        until(|| recorder.heard().contains(&Heard::Started)).await;
        let leadership = recorder.leadership();
        let token = leadership.cancellation_token();
        run.abort();
        let _ = run.await;
        assert!(token.is_cancelled());
        assert!(!leadership.is_current());
    })
    .await;
}

/// Failed requests are reported, typed, and acquisition keeps retrying with jitter.
#[tokio::test(start_paused = true)]
async fn failed_requests_are_reported_and_retried() {
    bounded(async {
        let server = LeaseServer::new();
        server.set_mode(Mode::Fail);
        let recorder = Recorder::default();
        let stop = CancellationToken::new();
        let run = spawn(server.elector(short("a")), &recorder, &stop);
        tokio::time::sleep(Duration::from_secs(10)).await;
        let attempts = server.log().len();
        // One attempt every 0.5 s × [1, 2.2).
        assert!((5..=21).contains(&attempts), "{attempts}");
        assert!(recorder.heard().is_empty());
        let first = recorder.heard.lock().unwrap()[0].1.clone();
        assert_eq!(
            first,
            Heard::Failed(
                "reading lease ns/lock: API error 500 InternalError: etcd is down".into()
            )
        );
        server.set_mode(Mode::Normal);
        until(|| recorder.heard().contains(&Heard::Started)).await;
        stop.cancel();
        assert!(run.await.unwrap().led);
    })
    .await;
}

/// The same timers on the real clock: a leader whose server stops answering steps down at
/// its renew deadline (lease 1 s, renew deadline 0.6 s, retry 0.2 s).
#[tokio::test]
async fn real_time_step_down_at_the_renew_deadline() {
    bounded(async {
        let server = LeaseServer::new();
        let recorder = Recorder::default();
        let stop = CancellationToken::new();
        let config = ElectionConfig {
            lease_duration: Duration::from_secs(1),
            renew_deadline: Duration::from_millis(600),
            retry_period: Duration::from_millis(200),
            ..ElectionConfig::new("a")
        };
        let run = spawn(server.elector(config), &recorder, &stop);
        until(|| recorder.heard().contains(&Heard::Started)).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        let leadership = recorder.leadership();
        assert!(leadership.is_current());
        server.set_mode(Mode::Hang);
        let hung_at = Instant::now();
        tokio::time::timeout(Duration::from_secs(30), leadership.lost())
            .await
            .expect("still leading long after the deadline");
        let after = hung_at.elapsed();
        // The last success started at most one retry period before the hang.
        assert!(
            after <= Duration::from_millis(600) + Duration::from_millis(300),
            "{after:?}"
        );
        assert_eq!(
            run.await.unwrap().step_down,
            Some(StepDown::RenewDeadlineExceeded)
        );
    })
    .await;
}

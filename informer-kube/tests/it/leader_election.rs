//! Leader election over HTTP through kube-client against the fake API server, in real time
//! with short durations (lease 3 s, renew deadline 2 s, retry period 0.5 s): two electors in
//! one process, exactly one leads at any moment; a leader that stops without releasing is
//! replaced once the lease has not changed for its duration; a leader that releases is
//! replaced at the other's next attempt. Every test is bounded (60 s).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::Env;
use informer_core::leader_election::{ElectionConfig, StepDown};
use informer_kube::leader_election::{
    ElectionOutcome, LeaderCallbacks, LeaderElector, Leadership, LeaseError,
};
use k8s_openapi::api::coordination::v1::Lease;
use kube_client::Api;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const BOUND: Duration = Duration::from_secs(60);
const NS: &str = "election";

fn short(identity: &str, release_on_cancel: bool) -> ElectionConfig {
    ElectionConfig {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(500),
        release_on_cancel,
        ..ElectionConfig::new(identity)
    }
}

/// One candidate: its leadership while it leads, and when it started and stopped.
#[derive(Clone, Default)]
struct Candidate {
    leadership: Arc<Mutex<Option<Leadership>>>,
    started: Arc<Mutex<Vec<Instant>>>,
    stopped: Arc<Mutex<Vec<(Instant, StepDown)>>>,
    leaders_seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Candidate {
    fn leads(&self) -> bool {
        self.leadership
            .lock()
            .unwrap()
            .as_ref()
            .is_some_and(Leadership::is_current)
    }

    fn started_at(&self) -> Option<Instant> {
        self.started.lock().unwrap().first().copied()
    }
}

impl LeaderCallbacks for Candidate {
    fn started_leading(&mut self, leadership: Leadership) {
        *self.leadership.lock().unwrap() = Some(leadership);
        self.started.lock().unwrap().push(Instant::now());
    }
    fn stopped_leading(&mut self, why: &StepDown) {
        self.stopped
            .lock()
            .unwrap()
            .push((Instant::now(), why.clone()));
    }
    fn new_leader(&mut self, identity: Option<&str>) {
        self.leaders_seen
            .lock()
            .unwrap()
            .push(identity.map(str::to_owned));
    }
    fn request_failed(&mut self, error: &LeaseError) {
        eprintln!("{error}: {}", error.kind);
    }
}

struct Running {
    candidate: Candidate,
    stop: CancellationToken,
    run: tokio::task::JoinHandle<ElectionOutcome>,
}

async fn env() -> Env {
    let env = Env::start().await;
    env.engine
        .create("namespaces", &json!({"metadata": {"name": NS}}))
        .unwrap();
    env
}

fn start(env: &Env, config: ElectionConfig) -> Running {
    let api = Api::<Lease>::namespaced(env.client.clone(), NS);
    let elector = LeaderElector::new(api, "singleton", config).unwrap();
    let candidate = Candidate::default();
    let stop = CancellationToken::new();
    let run = {
        let mut candidate = candidate.clone();
        let stop = stop.clone();
        tokio::spawn(async move { elector.run(&stop, &mut candidate).await })
    };
    Running {
        candidate,
        stop,
        run,
    }
}

/// Waits (polling every 10 ms) until `what` holds, checking at every poll that the two
/// candidates never lead at once.
async fn until_one_leader(a: &Candidate, b: &Candidate, what: impl Fn() -> bool) {
    loop {
        assert!(!(a.leads() && b.leads()), "two leaders at once");
        if what() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn holder(env: &Env) -> Option<String> {
    let lease = env.engine.get("leases", Some(NS), "singleton").unwrap();
    lease.to_value()["spec"]["holderIdentity"]
        .as_str()
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_one_leads_and_the_other_takes_over_after_the_lease_duration() {
    tokio::time::timeout(BOUND, async {
        let env = env().await;
        let a = start(&env, short("a", false));
        let b = start(&env, short("b", false));
        let (ca, cb) = (a.candidate.clone(), b.candidate.clone());
        until_one_leader(&ca, &cb, || ca.leads() || cb.leads()).await;
        // For 4 s (eight renewals), the same one leads and the other waits.
        let watch_until = Instant::now() + Duration::from_secs(4);
        until_one_leader(&ca, &cb, || Instant::now() >= watch_until).await;
        let (leader, follower) = if ca.leads() { (a, b) } else { (b, a) };
        assert!(leader.candidate.leads() && !follower.candidate.leads());
        assert_eq!(follower.candidate.started_at(), None);
        let leader_name = holder(&env).unwrap();

        // The leader stops without releasing: the lease stays its own until it expires.
        let stopped = Instant::now();
        leader.stop.cancel();
        let outcome = leader.run.await.unwrap();
        assert_eq!(outcome.step_down, Some(StepDown::Stopped));
        assert!(!outcome.released);
        assert!(!leader.candidate.leads());
        let (fc, lc) = (follower.candidate.clone(), leader.candidate.clone());
        until_one_leader(&fc, &lc, || fc.leads()).await;
        let took = follower.candidate.started_at().unwrap() - stopped;
        // The last renewal was at most 0.5 s before the stop (plus a request's time); the
        // follower waits 3 s from seeing it, then up to one jittered retry (1.1 s).
        assert!(
            took >= Duration::from_millis(2400) && took <= Duration::from_millis(5500),
            "took over after {took:?}"
        );
        assert_ne!(holder(&env).unwrap(), leader_name);
        let seen = follower.candidate.leaders_seen.lock().unwrap().clone();
        assert_eq!(seen.first().cloned().flatten(), Some(leader_name));
        follower.stop.cancel();
        follower.run.await.unwrap();
    })
    .await
    .expect("the test ran past its bound");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_lease_is_taken_over_at_once() {
    tokio::time::timeout(BOUND, async {
        let env = env().await;
        let a = start(&env, short("a", true));
        let ca = a.candidate.clone();
        until_one_leader(&ca, &Candidate::default(), || ca.leads()).await;
        let b = start(&env, short("b", true));
        let cb = b.candidate.clone();
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(ca.leads() && !cb.leads());

        let stopped = Instant::now();
        a.stop.cancel();
        let outcome = a.run.await.unwrap();
        assert_eq!(outcome.step_down, Some(StepDown::Stopped));
        assert!(outcome.released);
        until_one_leader(&ca, &cb, || cb.leads()).await;
        let took = cb.started_at().unwrap() - stopped;
        // The next attempt, 0.5 s × [1, 2.2) later, not a lease duration.
        assert!(
            took <= Duration::from_millis(2000),
            "took over after {took:?}"
        );
        assert_eq!(holder(&env).as_deref(), Some("b"));
        let lease = env.engine.get("leases", Some(NS), "singleton").unwrap();
        assert_eq!(lease.to_value()["spec"]["leaseTransitions"], 1);
        b.stop.cancel();
        b.run.await.unwrap();
    })
    .await
    .expect("the test ran past its bound");
}

/// A leader whose writes fail (the server refuses lease updates) steps down at its renew
/// deadline, before its lease could expire for anyone else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_renewals_step_down_before_the_lease_expires() {
    tokio::time::timeout(BOUND, async {
        let env = env().await;
        let a = start(&env, short("a", false));
        let ca = a.candidate.clone();
        until_one_leader(&ca, &Candidate::default(), || ca.leads()).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        let faulted = Instant::now();
        env.engine.faults().fail_writes(
            "leases",
            1000,
            fake_apiserver::status::internal_error("etcd is down"),
        );
        let outcome = a.run.await.unwrap();
        let (stepped, why) = ca.stopped.lock().unwrap()[0].clone();
        assert_eq!(why, StepDown::RenewDeadlineExceeded);
        assert_eq!(outcome.step_down, Some(StepDown::RenewDeadlineExceeded));
        // 2 s after the start of the last successful renewal, itself at most 0.5 s (plus a
        // request) before the fault.
        let after = stepped - faulted;
        assert!(
            after >= Duration::from_millis(1400) && after <= Duration::from_millis(2600),
            "stepped down {after:?} after the fault"
        );
        assert!(!ca.leads());
    })
    .await
    .expect("the test ran past its bound");
}

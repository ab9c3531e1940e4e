//! [`LeaderElector`]: leader election on a `coordination.k8s.io/v1` Lease through kube-client,
//! for controllers that must run as a singleton.
//!
//! The decisions are [`informer_core::leader_election`]'s machine (client-go's rules; its
//! module docs list them and where we differ); this module performs its requests with an
//! `Api<Lease>`, each with the timeout the machine gives (a renewal never outlives the
//! leadership it would extend), every update guarded by the resourceVersion last read, and
//! tells the user through [`LeaderCallbacks`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use informer_core::leader_election::{ElectionConfig, StepDown};
//! use informer_kube::leader_election::{LeaderCallbacks, LeaderElector, Leadership};
//! use k8s_openapi::api::coordination::v1::Lease;
//! use kube_client::{Api, Client};
//! use tokio_util::sync::CancellationToken;
//!
//! struct Controller;
//!
//! impl LeaderCallbacks for Controller {
//!     fn started_leading(&mut self, leadership: Leadership) {
//!         tokio::spawn(async move {
//!             // The guarded work: runs until leadership ends.
//!             while leadership.is_current() {
//!                 // ... reconcile, then check again ...
//!                 tokio::select! {
//!                     _ = leadership.lost() => break,
//!                     _ = tokio::time::sleep(Duration::from_secs(1)) => {}
//!                 }
//!             }
//!         });
//!     }
//!     fn stopped_leading(&mut self, why: &StepDown) {
//!         eprintln!("no longer leading: {why:?}");
//!     }
//!     fn new_leader(&mut self, identity: Option<&str>) {
//!         eprintln!("leader: {identity:?}");
//!     }
//! }
//!
//! let client = Client::try_default().await?;
//! let leases: Api<Lease> = Api::namespaced(client, "kube-system");
//! let identity = std::env::var("POD_NAME")?;
//! let elector = LeaderElector::new(leases, "my-controller", ElectionConfig::new(identity))?;
//! let stop = CancellationToken::new();
//! let outcome = elector.run(&stop, &mut Controller).await;
//! println!("election over: {outcome:?}");
//! # Ok(()) }
//! ```

use std::sync::Arc;
use std::time::Duration;

use informer_core::leader_election::{
    ElectionConfig, ElectionConfigError, Event, GetOutcome, LeaseRecord, LeaseWrite, Machine, Next,
    StepDown, WriteOutcome,
};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Runs leader elections on one Lease for one candidate.
///
/// Each [`run`](Self::run) campaigns until this candidate has led one term and lost it, or
/// until stopped, as client-go's `Run` does; call it again to campaign again.
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    config: ElectionConfig,
    /// A fresh machine for the config, cloned by every run.
    fresh: Machine,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lease", &self.name)
            .field("identity", &self.config.identity)
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// An elector for the Lease `name` of `api` (namespaced: the Lease lives in the `Api`'s
    /// namespace), with a config checked as client-go checks it.
    pub fn new(
        api: Api<Lease>,
        name: impl Into<String>,
        config: ElectionConfig,
    ) -> Result<Self, LeaderElectionError> {
        let name = name.into();
        if name.is_empty() {
            return Err(LeaderElectionError::EmptyLeaseName);
        }
        let fresh = Machine::new(config.clone())?;
        Ok(Self {
            api,
            name,
            config,
            fresh,
        })
    }

    /// The config.
    pub fn config(&self) -> &ElectionConfig {
        &self.config
    }

    /// The Lease's name.
    pub fn lease_name(&self) -> &str {
        &self.name
    }

    /// Campaigns, leads one term, and returns when it ends or when `stop` fires (then, while
    /// leading and with [`release_on_cancel`](ElectionConfig::release_on_cancel), after the
    /// release). Callbacks run on this task, in order; they must not block.
    ///
    /// Leadership also ends when the returned future is dropped.
    pub async fn run(
        &self,
        stop: &CancellationToken,
        callbacks: &mut (dyn LeaderCallbacks + Send),
    ) -> ElectionOutcome {
        let mut run = Run {
            elector: self,
            machine: self.fresh.clone(),
            rng: StdRng::from_os_rng(),
            cached: None,
            term: TermGuard(None),
            outcome: ElectionOutcome::default(),
        };
        let mut stopped = false;
        let mut next = run.machine.start(now());
        loop {
            run.dispatch(callbacks);
            let request = match next {
                Next::Done => break,
                Next::Wait { delay } => {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {
                            let random = run.rng.random::<f64>();
                            next = run.machine.wait_elapsed(now(), random);
                        }
                        () = stop.cancelled(), if !stopped => {
                            stopped = true;
                            next = run.machine.stop(now());
                        }
                    }
                    continue;
                }
                request => request,
            };
            // A stop abandons the request in flight, except during the release.
            let outcome = if stopped {
                Some(run.perform(&request, callbacks).await)
            } else {
                tokio::select! {
                    outcome = run.perform(&request, callbacks) => Some(outcome),
                    () = stop.cancelled() => None,
                }
            };
            let random = run.rng.random::<f64>();
            next = match outcome {
                Some(Outcome::Got(got)) => run.machine.got(got, now(), random),
                Some(Outcome::Wrote(wrote)) => run.machine.wrote(wrote, now(), random),
                None => {
                    stopped = true;
                    run.machine.stop(now())
                }
            };
        }
        run.dispatch(callbacks);
        run.outcome
    }
}

/// What the user hears of an election. Every method has a default that does nothing but
/// [`started_leading`](Self::started_leading).
pub trait LeaderCallbacks {
    /// This candidate leads. `leadership` tells for how long, and ends (its
    /// [`lost`](Leadership::lost) future completes) when leadership does. Start the guarded
    /// work here (spawned: callbacks must not block).
    fn started_leading(&mut self, leadership: Leadership);

    /// Leadership ended (only ever after [`started_leading`](Self::started_leading)).
    fn stopped_leading(&mut self, why: &StepDown) {
        let _ = why;
    }

    /// The observed holder changed (`None`: the lease is free), including the first one seen
    /// and this candidate itself.
    fn new_leader(&mut self, identity: Option<&str>) {
        let _ = identity;
    }

    /// The lease was handed back after a stop.
    fn released(&mut self) {}

    /// A request failed (it is retried as the election's rules say). Conflicts are normal
    /// when candidates race.
    fn request_failed(&mut self, error: &LeaseError) {
        let _ = error;
    }
}

/// One term of leadership, shared with the guarded work: cheap to clone.
#[derive(Debug, Clone)]
pub struct Leadership {
    inner: Arc<LeadershipInner>,
}

#[derive(Debug)]
struct LeadershipInner {
    identity: String,
    token: CancellationToken,
    valid_until: Mutex<Instant>,
}

impl Leadership {
    fn new(identity: &str, valid_until: Instant) -> Self {
        Self {
            inner: Arc::new(LeadershipInner {
                identity: identity.to_owned(),
                token: CancellationToken::new(),
                valid_until: Mutex::new(valid_until),
            }),
        }
    }

    /// This candidate's identity.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// Whether this term still holds, by the clock, now: not ended, and the renew deadline of
    /// the last successful renewal not passed. Check it right before each guarded action; it
    /// turns false at the deadline even when the elector's task has not run since (a paused
    /// process, a busy runtime).
    pub fn is_current(&self) -> bool {
        !self.inner.token.is_cancelled() && Instant::now() < *self.inner.valid_until.lock()
    }

    /// Until when this term holds unless renewed before.
    pub fn valid_until(&self) -> Instant {
        *self.inner.valid_until.lock()
    }

    /// Completes when the term ends.
    pub async fn lost(&self) {
        self.inner.token.cancelled().await;
    }

    /// A token cancelled when the term ends (cancelling it yourself ends nothing).
    pub fn cancellation_token(&self) -> CancellationToken {
        self.inner.token.child_token()
    }

    fn renewed(&self, valid_until: Instant) {
        *self.inner.valid_until.lock() = valid_until;
    }

    fn end(&self) {
        self.inner.token.cancel();
        *self.inner.valid_until.lock() = Instant::now();
    }
}

/// How a [`LeaderElector::run`] ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ElectionOutcome {
    /// Whether this candidate led.
    pub led: bool,
    /// How leadership ended, when it led.
    pub step_down: Option<StepDown>,
    /// Whether the lease was handed back.
    pub released: bool,
}

/// An elector that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LeaderElectionError {
    /// The config breaks a rule.
    #[error("invalid leader election config")]
    Config(#[from] ElectionConfigError),
    /// No lease name.
    #[error("the lease name is empty")]
    EmptyLeaseName,
}

/// A lease request that failed.
#[derive(Debug, thiserror::Error)]
#[error("{operation} lease {lease}")]
pub struct LeaseError {
    /// What was being done.
    pub operation: LeaseOperation,
    /// `namespace/name` (or the name alone when the `Api` has no namespace).
    pub lease: String,
    /// Why.
    #[source]
    pub kind: LeaseErrorKind,
}

/// The request of a [`LeaseError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LeaseOperation {
    /// GET.
    Get,
    /// POST.
    Create,
    /// PUT with a resourceVersion.
    Update,
}

impl std::fmt::Display for LeaseOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Get => "reading",
            Self::Create => "creating",
            Self::Update => "updating",
        })
    }
}

/// Why a lease request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseErrorKind {
    /// No answer within the timeout the election allowed.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// 409: the lease changed since it was read, or it exists already.
    #[error("conflict: {0}")]
    Conflict(String),
    /// Another API error.
    #[error("API error {code} {reason}: {message}")]
    Api {
        /// HTTP code.
        code: u16,
        /// The `Status` reason.
        reason: String,
        /// The `Status` message.
        message: String,
    },
    /// A lease without a resourceVersion: an update could not be guarded.
    #[error("the lease has no resourceVersion")]
    NoResourceVersion,
    /// The request could not be made or its answer read.
    #[error("request failed")]
    Transport(#[source] kube_client::Error),
}

/// What a request ended with, for the machine.
enum Outcome {
    Got(GetOutcome),
    Wrote(WriteOutcome),
}

/// One run's state.
struct Run<'a> {
    elector: &'a LeaderElector,
    machine: Machine,
    rng: StdRng,
    /// The lease as last read or written: the base of updates (its metadata is kept).
    cached: Option<Lease>,
    term: TermGuard,
    outcome: ElectionOutcome,
}

/// Ends the term when dropped (a run whose future is dropped stops leading).
struct TermGuard(Option<Leadership>);

impl Drop for TermGuard {
    fn drop(&mut self) {
        if let Some(leadership) = self.0.take() {
            leadership.end();
        }
    }
}

impl Run<'_> {
    /// Tells the user what happened, and keeps the term's deadline in step with the machine.
    fn dispatch(&mut self, callbacks: &mut (dyn LeaderCallbacks + Send)) {
        while let Some(event) = self.machine.poll_event() {
            match event {
                Event::NewLeader(identity) => {
                    tracing::debug!(lease = %self.elector.name, leader = ?identity, "new leader observed");
                    callbacks.new_leader(identity.as_deref());
                }
                Event::StartedLeading => {
                    let until = self
                        .machine
                        .valid_until()
                        .map_or_else(Instant::now, Instant::from_std);
                    let leadership = Leadership::new(&self.elector.config.identity, until);
                    self.term.0 = Some(leadership.clone());
                    self.outcome.led = true;
                    tracing::info!(lease = %self.elector.name, identity = %self.elector.config.identity, "started leading");
                    callbacks.started_leading(leadership);
                }
                Event::StoppedLeading(why) => {
                    if let Some(leadership) = self.term.0.take() {
                        leadership.end();
                    }
                    tracing::info!(lease = %self.elector.name, identity = %self.elector.config.identity, reason = ?why, "stopped leading");
                    callbacks.stopped_leading(&why);
                    self.outcome.step_down = Some(why);
                }
                Event::Released => {
                    self.outcome.released = true;
                    callbacks.released();
                }
                _ => {}
            }
        }
        if let (Some(leadership), Some(until)) = (&self.term.0, self.machine.valid_until()) {
            leadership.renewed(Instant::from_std(until));
        }
    }

    fn lease_label(&self) -> String {
        match self.elector.api.namespace() {
            Some(ns) => format!("{ns}/{}", self.elector.name),
            None => self.elector.name.clone(),
        }
    }

    fn failed(
        &self,
        operation: LeaseOperation,
        kind: LeaseErrorKind,
        callbacks: &mut (dyn LeaderCallbacks + Send),
    ) {
        let error = LeaseError {
            operation,
            lease: self.lease_label(),
            kind,
        };
        tracing::debug!(error = %error, cause = %error.kind, "lease request failed");
        callbacks.request_failed(&error);
    }

    /// Performs one request of the machine, each bounded by its timeout.
    async fn perform(
        &mut self,
        request: &Next,
        callbacks: &mut (dyn LeaderCallbacks + Send),
    ) -> Outcome {
        let api = &self.elector.api;
        let name = self.elector.name.as_str();
        match request {
            Next::Get { timeout } => {
                let op = LeaseOperation::Get;
                match tokio::time::timeout(*timeout, api.get_opt(name)).await {
                    Err(_) => {
                        self.failed(op, LeaseErrorKind::Timeout(*timeout), callbacks);
                        Outcome::Got(GetOutcome::Failed)
                    }
                    Ok(Err(error)) => {
                        self.failed(op, error_kind(error), callbacks);
                        Outcome::Got(GetOutcome::Failed)
                    }
                    Ok(Ok(None)) => Outcome::Got(GetOutcome::NotFound),
                    Ok(Ok(Some(lease))) => match resource_version(&lease) {
                        Some(resource_version) => {
                            let record = record_of(&lease);
                            self.cached = Some(lease);
                            Outcome::Got(GetOutcome::Found {
                                record,
                                resource_version,
                            })
                        }
                        None => {
                            self.failed(op, LeaseErrorKind::NoResourceVersion, callbacks);
                            Outcome::Got(GetOutcome::Failed)
                        }
                    },
                }
            }
            Next::Create { write, timeout } => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(spec_of(write)),
                };
                let params = PostParams::default();
                let sent = api.create(&params, &lease);
                let result = tokio::time::timeout(*timeout, sent).await;
                self.written(LeaseOperation::Create, *timeout, result, callbacks)
            }
            Next::Update {
                write,
                resource_version,
                timeout,
            } => {
                let mut lease = self.cached.clone().unwrap_or_else(|| Lease {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        ..ObjectMeta::default()
                    },
                    spec: None,
                });
                lease.metadata.resource_version = Some(resource_version.clone());
                lease.metadata.managed_fields = None;
                lease.spec = Some(spec_of(write));
                let params = PostParams::default();
                let sent = api.replace(name, &params, &lease);
                let result = tokio::time::timeout(*timeout, sent).await;
                self.written(LeaseOperation::Update, *timeout, result, callbacks)
            }
            Next::Wait { .. } | Next::Done => Outcome::Wrote(WriteOutcome::Failed),
        }
    }

    fn written(
        &mut self,
        op: LeaseOperation,
        timeout: Duration,
        result: Result<kube_client::Result<Lease>, tokio::time::error::Elapsed>,
        callbacks: &mut (dyn LeaderCallbacks + Send),
    ) -> Outcome {
        let outcome = match result {
            Err(_) => {
                self.failed(op, LeaseErrorKind::Timeout(timeout), callbacks);
                WriteOutcome::Failed
            }
            Ok(Err(error)) => {
                let kind = error_kind(error);
                let conflict = matches!(kind, LeaseErrorKind::Conflict(_));
                self.failed(op, kind, callbacks);
                if conflict {
                    WriteOutcome::Conflict
                } else {
                    WriteOutcome::Failed
                }
            }
            Ok(Ok(lease)) => match resource_version(&lease) {
                Some(resource_version) => {
                    let record = record_of(&lease);
                    self.cached = Some(lease);
                    WriteOutcome::Written {
                        record,
                        resource_version,
                    }
                }
                None => {
                    self.failed(op, LeaseErrorKind::NoResourceVersion, callbacks);
                    WriteOutcome::Failed
                }
            },
        };
        Outcome::Wrote(outcome)
    }
}

/// The current instant on tokio's clock (virtual under `tokio::time::pause`), as the machine
/// takes it.
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

fn resource_version(lease: &Lease) -> Option<String> {
    lease
        .metadata
        .resource_version
        .clone()
        .filter(|rv| !rv.is_empty())
}

fn error_kind(error: kube_client::Error) -> LeaseErrorKind {
    match error {
        kube_client::Error::Api(status) if status.code == 409 => {
            LeaseErrorKind::Conflict(status.message)
        }
        kube_client::Error::Api(status) => LeaseErrorKind::Api {
            code: status.code,
            reason: status.reason,
            message: status.message,
        },
        other => LeaseErrorKind::Transport(other),
    }
}

/// A `MicroTime` as its wire text.
fn time_text(time: &MicroTime) -> Option<String> {
    match serde_json::to_value(time) {
        Ok(serde_json::Value::String(text)) => Some(text),
        _ => None,
    }
}

/// Wire text back into a `MicroTime` (the machine only ever hands back text that came from
/// one, or from [`now_text`]).
pub(crate) fn parse_time(text: &str) -> Option<MicroTime> {
    serde_json::from_value(serde_json::Value::String(text.to_owned())).ok()
}

pub(crate) fn now_text() -> String {
    let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
    // MicroTime always serializes to a string; the fallback is never used.
    time_text(&now).unwrap_or_default()
}

/// The election fields of a Lease.
pub(crate) fn record_of(lease: &Lease) -> LeaseRecord {
    let spec = lease.spec.clone().unwrap_or_default();
    LeaseRecord {
        holder_identity: spec.holder_identity,
        lease_duration_seconds: spec.lease_duration_seconds,
        acquire_time: spec.acquire_time.as_ref().and_then(time_text),
        renew_time: spec.renew_time.as_ref().and_then(time_text),
        lease_transitions: spec.lease_transitions,
        preferred_holder: spec.preferred_holder,
        strategy: spec.strategy,
    }
}

/// The spec a write sends, stamped now.
fn spec_of(write: &LeaseWrite) -> LeaseSpec {
    let stamp = now_text();
    let record = write.record(&stamp);
    let time = |text: Option<String>| {
        text.as_deref()
            .and_then(parse_time)
            .or_else(|| parse_time(&stamp))
    };
    LeaseSpec {
        holder_identity: record.holder_identity,
        lease_duration_seconds: record.lease_duration_seconds,
        acquire_time: time(record.acquire_time),
        renew_time: time(record.renew_time),
        lease_transitions: record.lease_transitions,
        preferred_holder: record.preferred_holder,
        strategy: record.strategy,
    }
}

#[cfg(test)]
mod tests;

//! Leader election on a Lease, without IO: which request next, and when leadership starts and
//! ends.
//!
//! Candidates share one `coordination.k8s.io/v1` Lease. The holder writes its identity and
//! renews the lease every [`retry_period`](ElectionConfig::retry_period); the others read it
//! every retry period and take it over only once it has not changed for its
//! `leaseDurationSeconds`. The async driver (`informer_kube::LeaderElector`) performs the
//! requests; every choice comes from a [`Machine`] fed with their outcomes. The machine reads
//! no clock and draws no random numbers: each call takes `now` (and, where it waits before
//! retrying an acquisition, a `random` sample in `[0, 1)`).
//!
//! # The rules (client-go's `tools/leaderelection`, with a Lease lock)
//!
//! - **Nobody trusts the record's timestamps.** A candidate notes the time, by its own clock,
//!   at which it first saw the current content of the lease (`observedTime`); the lease has
//!   expired when `leaseDurationSeconds` of the record have passed since then without the
//!   content changing. `renewTime` and `acquireTime` are written for humans and never read.
//!   Clock skew between candidates does not matter; a difference in clock *rates* does, within
//!   the margin between [`lease_duration`](ElectionConfig::lease_duration) and
//!   [`renew_deadline`](ElectionConfig::renew_deadline).
//! - **Acquiring:** read the lease every retry period, jittered to `[1, 1 + 1.2)` × the retry
//!   period. Absent: create it. Held by another and not expired: wait. Otherwise (free, expired,
//!   or already ours): update it with our identity, the lease duration in whole seconds,
//!   `renewTime = acquireTime = now` and `leaseTransitions + 1` (keeping `acquireTime` and
//!   the count when it was already ours). Every update carries the resourceVersion that was
//!   read: of two candidates racing for an expired lease, one gets 409 Conflict.
//! - **Leading:** every retry period, update the lease with the resourceVersion of our last
//!   write (client-go's fast path); on 409, read it and update again if it is still ours.
//!   Failed attempts are retried every retry period.
//! - **Stepping down:** leadership is valid until `renew_deadline` after the *start* of the
//!   last successful write. Past that the holder stops leading, whatever happens to requests
//!   still in flight: every request is sent with a timeout that ends at that deadline. Since
//!   another candidate waits `leaseDurationSeconds` from a moment it saw *after* that write,
//!   and `renew_deadline < lease_duration`, the holder stops before anyone may start.
//! - **Releasing** ([`release_on_cancel`](ElectionConfig::release_on_cancel)): when stopped
//!   while leading, read the lease and, if it is still ours, update it (with that
//!   resourceVersion) to `holderIdentity: ""`, `leaseDurationSeconds: 1`, keeping the
//!   transitions count; retry on 409 until `renew_deadline` has passed. The others may then
//!   take over at their next attempt instead of a lease duration later. As in client-go,
//!   guarded work must have finished before the stop: leadership ends (the
//!   [`Event::StoppedLeading`]) before the release is sent.
//! - A leader observation ([`Event::NewLeader`]) is reported whenever the observed holder
//!   differs from the last one reported, including the first one and `None` (a free lease).
//!
//! # Where we differ from client-go
//!
//! - client-go's renew loop gives up `renew_deadline` after the start of a *retry round*,
//!   itself up to a retry period after the last success; here the deadline counts from the
//!   start of the last successful write: the holder stops up to a retry period earlier, with a
//!   wider margin before another candidate may take over.
//! - A leader that reads the lease and finds another holder steps down at once; client-go
//!   keeps retrying until its renew deadline.
//! - A release first checks that the lease it read is still ours; client-go checks only its
//!   own last observation, and could clear a lease another candidate holds by now.
//! - A write that succeeds after the renew deadline (a slow answer) does not start or extend
//!   leadership.
//! - `lease_duration` must be a whole number of seconds: the Lease stores whole seconds and
//!   client-go truncates, which with `lease_duration = 1.5 s, renew_deadline = 1.2 s` would let
//!   others take over (after 1 s) before the holder gives up.
//! - [`Event::StoppedLeading`] is reported only after [`Event::StartedLeading`]; client-go
//!   calls `OnStoppedLeading` on every exit, even without having led.
//!
//! # Driving a machine
//!
//! ```
//! use std::time::{Duration, Instant};
//! use informer_core::leader_election::{
//!     ElectionConfig, Event, GetOutcome, LeaseRecord, Machine, Next, WriteOutcome,
//! };
//!
//! let mut machine = Machine::new(ElectionConfig::new("pod-a"))?;
//! let t0 = Instant::now();
//! assert!(matches!(machine.start(t0), Next::Get { .. }));
//! // Nobody has created the lease yet: create it.
//! let Next::Create { write, .. } = machine.got(GetOutcome::NotFound, t0, 0.5) else {
//!     unreachable!()
//! };
//! let record = write.record("2026-01-01T00:00:00.000000Z");
//! assert_eq!(record.holder(), Some("pod-a"));
//! let next = machine.wrote(WriteOutcome::Written { record, resource_version: "1".into() }, t0, 0.5);
//! assert_eq!(next, Next::Wait { delay: Duration::from_secs(2) });
//! assert_eq!(machine.poll_event(), Some(Event::NewLeader(Some("pod-a".into()))));
//! assert_eq!(machine.poll_event(), Some(Event::StartedLeading));
//! assert_eq!(machine.valid_until(), Some(t0 + Duration::from_secs(10)));
//! # Ok::<(), informer_core::leader_election::ElectionConfigError>(())
//! ```

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// The spread of acquisition retries: a candidate waits `retry_period × (1 + JITTER_FACTOR ×
/// random)` between attempts (client-go's value), and the renew deadline must exceed
/// `retry_period × JITTER_FACTOR`.
pub const JITTER_FACTOR: f64 = 1.2;

/// The parameters of an election. Every candidate of one lease should use the same durations.
#[derive(Debug, Clone, PartialEq)]
pub struct ElectionConfig {
    /// This candidate's identity, unique among the candidates (a pod name, a hostname plus a
    /// random suffix). Written as `holderIdentity`.
    pub identity: String,
    /// How long others wait, after they last saw the lease change, before taking it over; a
    /// whole number of seconds (the Lease stores seconds). Default 15 s.
    pub lease_duration: Duration,
    /// How long the holder keeps leading after the start of its last successful renewal
    /// before it gives up. Must be less than `lease_duration`. Default 10 s.
    pub renew_deadline: Duration,
    /// The interval between renewals, and (jittered) between acquisition attempts. Default 2 s.
    pub retry_period: Duration,
    /// On stop, hand the lease back (clear the holder) so that another candidate can take it
    /// over at once. Only when the guarded work has stopped before the stop. Default false.
    pub release_on_cancel: bool,
}

impl ElectionConfig {
    /// client-go's defaults for core components: 15 s lease, 10 s renew deadline, 2 s retry.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            release_on_cancel: false,
        }
    }

    /// Checks the config as client-go does (lease duration > renew deadline > retry period ×
    /// [`JITTER_FACTOR`], all positive, identity not empty), and that the lease duration is a
    /// whole number of seconds that fits the Lease's `int32`.
    pub fn validate(&self) -> Result<(), ElectionConfigError> {
        use ElectionConfigError as E;
        if self.identity.is_empty() {
            return Err(E::EmptyIdentity);
        }
        for (what, value) in [
            ("lease duration", self.lease_duration),
            ("renew deadline", self.renew_deadline),
            ("retry period", self.retry_period),
        ] {
            if value.is_zero() {
                return Err(E::NotPositive(what));
            }
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(E::LeaseNotLongerThanRenewDeadline {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
            });
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return Err(E::RenewDeadlineTooShortForRetries {
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            });
        }
        if self.lease_duration.subsec_nanos() != 0 {
            return Err(E::LeaseDurationNotWholeSeconds(self.lease_duration));
        }
        if i32::try_from(self.lease_duration.as_secs()).is_err() {
            return Err(E::LeaseDurationTooLong(self.lease_duration));
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written. Valid configs fit; others saturate.
    fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// A config that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ElectionConfigError {
    /// No identity.
    #[error("the candidate's identity is empty")]
    EmptyIdentity,
    /// A zero duration.
    #[error("the {0} must be greater than zero")]
    NotPositive(&'static str),
    /// Others could take over while the holder still leads.
    #[error(
        "the lease duration ({lease_duration:?}) must be greater than the renew deadline \
         ({renew_deadline:?})"
    )]
    LeaseNotLongerThanRenewDeadline {
        /// The lease duration.
        lease_duration: Duration,
        /// The renew deadline.
        renew_deadline: Duration,
    },
    /// Not even one jittered retry fits before the deadline.
    #[error(
        "the renew deadline ({renew_deadline:?}) must be greater than the retry period \
         ({retry_period:?}) × {JITTER_FACTOR}"
    )]
    RenewDeadlineTooShortForRetries {
        /// The renew deadline.
        renew_deadline: Duration,
        /// The retry period.
        retry_period: Duration,
    },
    /// The Lease stores whole seconds.
    #[error("the lease duration ({0:?}) must be a whole number of seconds")]
    LeaseDurationNotWholeSeconds(Duration),
    /// More seconds than an `int32` holds.
    #[error("the lease duration ({0:?}) does not fit the Lease's leaseDurationSeconds")]
    LeaseDurationTooLong(Duration),
}

/// The election fields of a Lease's `spec`, as read or to be written.
///
/// Times are the wire text (RFC 3339 with microseconds) and are never interpreted: expiry is
/// measured on the observer's clock. Two records are the same observation when every field is
/// equal.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct LeaseRecord {
    /// `holderIdentity` (empty or absent: nobody holds the lease).
    pub holder_identity: Option<String>,
    /// `leaseDurationSeconds`: how long others wait after seeing a change.
    pub lease_duration_seconds: Option<i32>,
    /// `acquireTime`.
    pub acquire_time: Option<String>,
    /// `renewTime`.
    pub renew_time: Option<String>,
    /// `leaseTransitions`: how many times the holder changed.
    pub lease_transitions: Option<i32>,
    /// `preferredHolder` (coordinated leader election; not used here).
    pub preferred_holder: Option<String>,
    /// `strategy` (coordinated leader election; not used here).
    pub strategy: Option<String>,
}

impl LeaseRecord {
    /// The holder, `None` when the lease is free.
    pub fn holder(&self) -> Option<&str> {
        self.holder_identity.as_deref().filter(|h| !h.is_empty())
    }

    /// How long others wait after seeing this record: `leaseDurationSeconds`, zero when
    /// absent or negative (the lease is then expired as soon as it is seen).
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(
            self.lease_duration_seconds
                .and_then(|s| u64::try_from(s).ok())
                .unwrap_or(0),
        )
    }
}

/// Why a write is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WriteKind {
    /// Take (or create) the lease.
    Acquire,
    /// Renew the lease we hold.
    Renew,
    /// Hand the lease back.
    Release,
}

/// A lease write the machine asks for; [`record`](Self::record) stamps it with the time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseWrite {
    /// Why.
    pub kind: WriteKind,
    /// `holderIdentity` to write (empty when releasing, as client-go writes it).
    pub holder_identity: String,
    /// `leaseDurationSeconds` to write.
    pub lease_duration_seconds: i32,
    /// `leaseTransitions` to write.
    pub lease_transitions: i32,
    /// `acquireTime` to keep (renewing); `None` stamps the write's time.
    pub keep_acquire_time: Option<String>,
}

impl LeaseWrite {
    /// The record to send, written at `now` (the wire text of a `MicroTime`): `renewTime` is
    /// `now`, and `acquireTime` too unless kept. `preferredHolder` and `strategy` are cleared,
    /// as client-go's updates do.
    pub fn record(&self, now: &str) -> LeaseRecord {
        LeaseRecord {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: Some(
                self.keep_acquire_time
                    .clone()
                    .unwrap_or_else(|| now.to_owned()),
            ),
            renew_time: Some(now.to_owned()),
            lease_transitions: Some(self.lease_transitions),
            preferred_holder: None,
            strategy: None,
        }
    }
}

/// What the driver must do next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Read the lease (with at most this timeout), then report [`Machine::got`].
    Get {
        /// The request's timeout.
        timeout: Duration,
    },
    /// Create the lease with `write.record(now)`, then report [`Machine::wrote`] (an
    /// `AlreadyExists` answer is a [`WriteOutcome::Conflict`]).
    Create {
        /// What to write.
        write: LeaseWrite,
        /// The request's timeout.
        timeout: Duration,
    },
    /// Replace the lease's spec with `write.record(now)`, sending `resource_version` as the
    /// precondition, then report [`Machine::wrote`].
    Update {
        /// What to write.
        write: LeaseWrite,
        /// The resourceVersion the update must find.
        resource_version: String,
        /// The request's timeout.
        timeout: Duration,
    },
    /// Wait this long, then report [`Machine::wait_elapsed`].
    Wait {
        /// How long.
        delay: Duration,
    },
    /// The election is over for this machine (stopped, or its term ended).
    Done,
}

/// The outcome of a [`Next::Get`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GetOutcome {
    /// The lease, and its resourceVersion.
    Found {
        /// Its election fields.
        record: LeaseRecord,
        /// Its `metadata.resourceVersion`.
        resource_version: String,
    },
    /// 404: there is no lease.
    NotFound,
    /// Any other failure (timeout included).
    Failed,
}

/// The outcome of a [`Next::Create`] or [`Next::Update`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteOutcome {
    /// The lease as the server stored it.
    Written {
        /// Its election fields.
        record: LeaseRecord,
        /// Its new `metadata.resourceVersion`.
        resource_version: String,
    },
    /// 409: the resourceVersion was stale (update) or the lease exists (create).
    Conflict,
    /// Any other failure (timeout included): the write may or may not have happened.
    Failed,
}

/// What the driver tells the user. Take them with [`Machine::poll_event`] after every call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event {
    /// The observed holder changed (or was seen for the first time); `None`: the lease is
    /// free.
    NewLeader(Option<String>),
    /// This candidate leads, until [`Machine::valid_until`] unless renewed.
    StartedLeading,
    /// This candidate no longer leads.
    StoppedLeading(StepDown),
    /// The lease was handed back after a stop.
    Released,
}

/// Why leadership ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepDown {
    /// No renewal succeeded within the renew deadline.
    RenewDeadlineExceeded,
    /// The lease was read with another holder (`None`: freed by someone else).
    LeaseTaken {
        /// The holder found.
        holder: Option<String>,
    },
    /// The driver was stopped ([`Machine::stop`]).
    Stopped,
}

/// Where the machine is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    /// Not started.
    Idle,
    /// Trying to take the lease.
    Acquiring,
    /// Holding it, until `valid_until`.
    Leading { valid_until: Instant },
    /// Handing it back, until `deadline`.
    Releasing { deadline: Instant },
    /// Over.
    Done,
}

/// The election's state machine (see the module docs).
#[derive(Debug, Clone)]
pub struct Machine {
    config: ElectionConfig,
    phase: Phase,
    /// The write in flight and when it was sent.
    writing: Option<(WriteKind, Instant)>,
    /// The last lease content seen, and when (by our clock) it was first seen.
    observed: Option<(LeaseRecord, Instant)>,
    /// The lease's last known resourceVersion.
    resource_version: Option<String>,
    /// The last holder reported in a [`Event::NewLeader`] (`None`: nothing reported yet).
    reported: Option<Option<String>>,
    events: VecDeque<Event>,
}

impl Machine {
    /// A machine for a valid config.
    pub fn new(config: ElectionConfig) -> Result<Self, ElectionConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            phase: Phase::Idle,
            writing: None,
            observed: None,
            resource_version: None,
            reported: None,
            events: VecDeque::new(),
        })
    }

    /// The config.
    pub fn config(&self) -> &ElectionConfig {
        &self.config
    }

    /// Starts campaigning: the first request.
    pub fn start(&mut self, now: Instant) -> Next {
        let _ = now;
        match self.phase {
            Phase::Idle => {
                self.phase = Phase::Acquiring;
                self.get(self.config.renew_deadline)
            }
            _ => Next::Done,
        }
    }

    /// Reports the outcome of a [`Next::Get`], answered at `now`.
    pub fn got(&mut self, outcome: GetOutcome, now: Instant, random: f64) -> Next {
        match self.phase.clone() {
            Phase::Acquiring => match outcome {
                GetOutcome::Found {
                    record,
                    resource_version,
                } => {
                    self.observe(record, resource_version, now);
                    if self.held_by_another(now) {
                        return self.retry_acquire(random);
                    }
                    let write = self.take_over_write();
                    self.update(write, now, self.config.renew_deadline)
                }
                GetOutcome::NotFound => {
                    let write = LeaseWrite {
                        kind: WriteKind::Acquire,
                        holder_identity: self.config.identity.clone(),
                        lease_duration_seconds: self.config.lease_duration_seconds(),
                        lease_transitions: 0,
                        keep_acquire_time: None,
                    };
                    self.writing = Some((WriteKind::Acquire, now));
                    Next::Create {
                        write,
                        timeout: self.config.renew_deadline,
                    }
                }
                GetOutcome::Failed => self.retry_acquire(random),
            },
            Phase::Leading { valid_until } => {
                if now >= valid_until {
                    return self.step_down(StepDown::RenewDeadlineExceeded);
                }
                let remaining = valid_until - now;
                match outcome {
                    GetOutcome::Found {
                        record,
                        resource_version,
                    } => {
                        let holder = record.holder().map(str::to_owned);
                        self.observe(record, resource_version, now);
                        if holder.as_deref() != Some(self.config.identity.as_str()) {
                            return self.step_down(StepDown::LeaseTaken { holder });
                        }
                        let write = self.renew_write();
                        self.update(write, now, remaining)
                    }
                    GetOutcome::NotFound => {
                        // Deleted under us: create it again, still ours.
                        let mut write = self.renew_write();
                        write.keep_acquire_time = None;
                        self.writing = Some((WriteKind::Renew, now));
                        Next::Create {
                            write,
                            timeout: remaining,
                        }
                    }
                    GetOutcome::Failed => self.retry_renew(now, valid_until),
                }
            }
            Phase::Releasing { deadline } => {
                if now >= deadline {
                    return self.finish();
                }
                match outcome {
                    GetOutcome::Found {
                        record,
                        resource_version,
                    } => {
                        let ours = record.holder() == Some(self.config.identity.as_str());
                        self.observe(record, resource_version, now);
                        if !ours {
                            return self.finish();
                        }
                        let write = LeaseWrite {
                            kind: WriteKind::Release,
                            holder_identity: String::new(),
                            lease_duration_seconds: 1,
                            lease_transitions: self.observed_transitions(),
                            keep_acquire_time: None,
                        };
                        self.update(write, now, deadline - now)
                    }
                    GetOutcome::NotFound | GetOutcome::Failed => self.finish(),
                }
            }
            Phase::Idle | Phase::Done => Next::Done,
        }
    }

    /// Reports the outcome of a [`Next::Create`] or [`Next::Update`], answered at `now`.
    pub fn wrote(&mut self, outcome: WriteOutcome, now: Instant, random: f64) -> Next {
        let sent_at = self.writing.take().map_or(now, |(_, at)| at);
        match self.phase.clone() {
            Phase::Acquiring => match outcome {
                WriteOutcome::Written {
                    record,
                    resource_version,
                } => {
                    self.observe(record, resource_version, now);
                    let valid_until = sent_at + self.config.renew_deadline;
                    if now >= valid_until {
                        // Too slow an answer to build on: try again from a fresh read.
                        return self.retry_acquire(random);
                    }
                    self.phase = Phase::Leading { valid_until };
                    self.events.push_back(Event::StartedLeading);
                    self.wait_renew(now, valid_until)
                }
                WriteOutcome::Conflict | WriteOutcome::Failed => self.retry_acquire(random),
            },
            Phase::Leading { valid_until } => match outcome {
                WriteOutcome::Written {
                    record,
                    resource_version,
                } => {
                    self.observe(record, resource_version, now);
                    let valid_until = valid_until.max(sent_at + self.config.renew_deadline);
                    if now >= valid_until {
                        return self.step_down(StepDown::RenewDeadlineExceeded);
                    }
                    self.phase = Phase::Leading { valid_until };
                    self.wait_renew(now, valid_until)
                }
                WriteOutcome::Conflict => {
                    if now >= valid_until {
                        return self.step_down(StepDown::RenewDeadlineExceeded);
                    }
                    self.get(valid_until - now)
                }
                WriteOutcome::Failed => self.retry_renew(now, valid_until),
            },
            Phase::Releasing { deadline } => match outcome {
                WriteOutcome::Written {
                    record,
                    resource_version,
                } => {
                    self.observe(record, resource_version, now);
                    self.events.push_back(Event::Released);
                    self.finish()
                }
                WriteOutcome::Conflict if now < deadline => self.get(deadline - now),
                WriteOutcome::Conflict | WriteOutcome::Failed => self.finish(),
            },
            Phase::Idle | Phase::Done => Next::Done,
        }
    }

    /// Reports that a [`Next::Wait`] has elapsed.
    pub fn wait_elapsed(&mut self, now: Instant, random: f64) -> Next {
        let _ = random;
        match self.phase {
            Phase::Acquiring => self.get(self.config.renew_deadline),
            Phase::Leading { valid_until } => {
                if now >= valid_until {
                    return self.step_down(StepDown::RenewDeadlineExceeded);
                }
                match self.resource_version.clone() {
                    // The fast path: update from what we last wrote, without reading.
                    Some(resource_version) => {
                        let write = self.renew_write();
                        self.writing = Some((WriteKind::Renew, now));
                        Next::Update {
                            write,
                            resource_version,
                            timeout: valid_until - now,
                        }
                    }
                    None => self.get(valid_until - now),
                }
            }
            Phase::Idle | Phase::Releasing { .. } | Phase::Done => Next::Done,
        }
    }

    /// Stops the election; a request in flight is abandoned (the driver drops it). While
    /// leading, leadership ends now ([`StepDown::Stopped`]) and, with
    /// [`release_on_cancel`](ElectionConfig::release_on_cancel), the release begins.
    pub fn stop(&mut self, now: Instant) -> Next {
        self.writing = None;
        match self.phase {
            Phase::Leading { .. } => {
                self.events
                    .push_back(Event::StoppedLeading(StepDown::Stopped));
                if self.config.release_on_cancel {
                    self.phase = Phase::Releasing {
                        deadline: now + self.config.renew_deadline,
                    };
                    self.get(self.config.renew_deadline)
                } else {
                    self.finish()
                }
            }
            Phase::Idle | Phase::Acquiring | Phase::Releasing { .. } | Phase::Done => self.finish(),
        }
    }

    /// The next event for the user, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Whether this candidate leads at `now`: it has taken the lease and the renew deadline
    /// of its last successful write has not passed.
    pub fn is_leading(&self, now: Instant) -> bool {
        matches!(self.phase, Phase::Leading { valid_until } if now < valid_until)
    }

    /// While leading: the instant leadership ends unless renewed before.
    pub fn valid_until(&self) -> Option<Instant> {
        match self.phase {
            Phase::Leading { valid_until } => Some(valid_until),
            _ => None,
        }
    }

    /// The holder of the lease as last seen (`None`: free, or never seen).
    pub fn observed_holder(&self) -> Option<&str> {
        self.observed.as_ref().and_then(|(r, _)| r.holder())
    }

    /// The lease content last seen, and the instant it was first seen.
    pub fn observed(&self) -> Option<(&LeaseRecord, Instant)> {
        self.observed.as_ref().map(|(r, at)| (r, *at))
    }

    /// Whether the machine has finished ([`Next::Done`]).
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    // ----- Helpers --------------------------------------------------------------------------

    /// Notes a lease read or written at `now`: its content restarts the expiry clock only when
    /// it changed; a new holder is reported.
    fn observe(&mut self, record: LeaseRecord, resource_version: String, now: Instant) {
        self.resource_version = Some(resource_version);
        let changed = self
            .observed
            .as_ref()
            .is_none_or(|(seen, _)| *seen != record);
        if changed {
            let holder = record.holder().map(str::to_owned);
            self.observed = Some((record, now));
            if self.reported.as_ref() != Some(&holder) {
                self.reported = Some(holder.clone());
                self.events.push_back(Event::NewLeader(holder));
            }
        }
    }

    /// Whether the observed lease is held by another candidate and not expired by our clock.
    fn held_by_another(&self, now: Instant) -> bool {
        let Some((record, seen_at)) = &self.observed else {
            return false;
        };
        match record.holder() {
            Some(holder) if holder != self.config.identity => {
                now < *seen_at + record.lease_duration()
            }
            _ => false,
        }
    }

    fn observed_transitions(&self) -> i32 {
        self.observed
            .as_ref()
            .and_then(|(r, _)| r.lease_transitions)
            .unwrap_or(0)
    }

    /// Taking the observed (free, expired, or already ours) lease.
    fn take_over_write(&self) -> LeaseWrite {
        let ours = self.observed_holder() == Some(self.config.identity.as_str());
        if ours {
            LeaseWrite {
                kind: WriteKind::Acquire,
                ..self.renew_write()
            }
        } else {
            LeaseWrite {
                kind: WriteKind::Acquire,
                holder_identity: self.config.identity.clone(),
                lease_duration_seconds: self.config.lease_duration_seconds(),
                lease_transitions: self.observed_transitions().saturating_add(1),
                keep_acquire_time: None,
            }
        }
    }

    /// Renewing the lease we hold: keep its acquire time and transitions.
    fn renew_write(&self) -> LeaseWrite {
        LeaseWrite {
            kind: WriteKind::Renew,
            holder_identity: self.config.identity.clone(),
            lease_duration_seconds: self.config.lease_duration_seconds(),
            lease_transitions: self.observed_transitions(),
            keep_acquire_time: self
                .observed
                .as_ref()
                .and_then(|(r, _)| r.acquire_time.clone()),
        }
    }

    fn get(&self, timeout: Duration) -> Next {
        Next::Get { timeout }
    }

    fn update(&mut self, write: LeaseWrite, now: Instant, timeout: Duration) -> Next {
        match self.resource_version.clone() {
            Some(resource_version) => {
                self.writing = Some((write.kind, now));
                Next::Update {
                    write,
                    resource_version,
                    timeout,
                }
            }
            // Unreachable in practice: an update always follows a read that set it.
            None => self.get(timeout),
        }
    }

    /// The jittered wait before the next acquisition attempt.
    fn retry_acquire(&mut self, random: f64) -> Next {
        let random = if random.is_finite() {
            random.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let period = self.config.retry_period;
        Next::Wait {
            delay: period + period.mul_f64(JITTER_FACTOR * random),
        }
    }

    /// After a successful write: the next renewal, a retry period later (never past the
    /// deadline).
    fn wait_renew(&self, now: Instant, valid_until: Instant) -> Next {
        Next::Wait {
            delay: self.config.retry_period.min(valid_until - now),
        }
    }

    /// After a failed renewal: retry a retry period later, or step down at the deadline.
    fn retry_renew(&mut self, now: Instant, valid_until: Instant) -> Next {
        if now >= valid_until {
            return self.step_down(StepDown::RenewDeadlineExceeded);
        }
        self.wait_renew(now, valid_until)
    }

    fn step_down(&mut self, why: StepDown) -> Next {
        self.events.push_back(Event::StoppedLeading(why));
        self.finish()
    }

    fn finish(&mut self) -> Next {
        self.phase = Phase::Done;
        self.writing = None;
        Next::Done
    }
}

#[cfg(test)]
mod tests;

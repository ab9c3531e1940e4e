//! Shard membership, without IO: which replicas of a sharded controller are live, given the
//! Leases they renew, and which slice of the hash space this one takes.
//!
//! Each replica holds one `coordination.k8s.io/v1` Lease in a namespace shared by the group
//! and renews it every [`renew_period`](MembershipConfig::renew_period); every replica watches
//! all the group's Leases. The API server is the only thing the replicas share: nothing else
//! coordinates them. The async driver (`informer_kube::shard_manager::ShardManager`)
//! performs the requests and feeds a [`Membership`] with what it sees; the membership reads
//! no clock: every call takes `now`.
//!
//! # The rules
//!
//! - **Liveness by the observer's clock.** As in leader election
//!   ([`crate::leader_election`]), a replica notes when, by its own clock, it first saw the
//!   current content of each Lease; a Lease whose content has not changed for its
//!   `leaseDurationSeconds` is expired, and its holder is no longer a member. Record
//!   timestamps are never read. A Lease without a holder, or deleted, counts for nothing.
//!   This replica is always a member of its own view.
//! - **Ranks.** The live members' identities, sorted, give each its rank; replica `rank` of
//!   `count` takes [`ShardRange::even_split`]`(rank, count)`. Every replica that sees the same
//!   Leases computes the same split, so the slices cover the hash space without gaps or
//!   overlaps once the views agree.
//! - **Handovers overlap, never gap.** A range a replica gains is taken at once. A range it
//!   loses is kept for [`handover`](MembershipConfig::handover) more (its
//!   [`Assignment::selector`] is the new range joined with the old one by `||`), so that
//!   the replica gaining it has listed it before this one lets go: during a planned change
//!   (a replica joining or leaving cleanly) an object may be owned by two replicas briefly,
//!   and by none only if the new owner takes longer than `handover` to relist.
//! - **Failures.** A replica that stops renewing is dropped by each of the others
//!   `leaseDurationSeconds` after they last saw its Lease change, which is at most that long
//!   after its last renewal; they then take over its range at once. Its objects are owned by
//!   none for at most the lease duration plus two relists (theirs: a list of theirs in
//!   progress then completes before the one with the new range, see
//!   `Reflector::set_shard_selector`). A lease duration later
//!   the first to see it still unchanged deletes its Lease ([`Membership::stale`]): a
//!   replica starting later would otherwise count it as live for a whole lease duration (it
//!   cannot tell an old Lease from a fresh one without trusting timestamps).
//!
//! # Where it differs from a lease-per-shard design
//!
//! Ranks follow the sorted identities, so a change of membership moves the boundaries of
//! every slice after the changed rank (an even split cannot be had otherwise). Stable
//! identities (a StatefulSet's pod names) keep the ranks stable across restarts.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, Instant};
//! use informer_core::leader_election::LeaseRecord;
//! use informer_core::membership::{Membership, MembershipConfig};
//! use informer_core::shard::ShardRange;
//!
//! let mut view = Membership::new(MembershipConfig::new("replica-b"))?;
//! let t0 = Instant::now();
//! let a = LeaseRecord {
//!     holder_identity: Some("replica-a".into()),
//!     lease_duration_seconds: Some(15),
//!     renew_time: Some("2026-01-01T00:00:00.000000Z".into()),
//!     ..LeaseRecord::default()
//! };
//! view.observe("shards-replica-a", a, t0);
//! let mine = view.update(t0).expect("a first assignment");
//! assert_eq!((mine.rank, mine.count), (1, 2));
//! assert_eq!(mine.range, ShardRange::even_split(1, 2)?);
//! // replica-a stops renewing: 15 s later (by this replica's clock) it is dropped.
//! assert_eq!(view.next_deadline(t0), Some(t0 + Duration::from_secs(15)));
//! let alone = view.update(t0 + Duration::from_secs(15)).expect("a new assignment");
//! assert_eq!(alone.range, ShardRange::ALL);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crate::leader_election::LeaseRecord;
use crate::shard::{ShardField, ShardRange, ShardSelector};

/// The parameters of one replica's view. Every replica of a group should use the same
/// durations and field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MembershipConfig {
    /// This replica's identity, unique in the group (a pod name). Written as the Lease's
    /// `holderIdentity`; ranks follow the sorted identities.
    pub identity: String,
    /// The field the group shards by. Default [`ShardField::Uid`].
    pub field: ShardField,
    /// How long others wait, after they last saw this replica's Lease change, before they
    /// drop it: written as `leaseDurationSeconds`, so a whole number of seconds. Default 15 s.
    pub lease_duration: Duration,
    /// How often this replica renews its Lease. Less than the lease duration; a third of it
    /// or less leaves room for a slow request or two. Default 5 s.
    pub renew_period: Duration,
    /// How long a replica keeps a range it hands over, besides its new one (see the module
    /// docs); zero lets go at once. Longer than a relist of one slice. Default 10 s.
    pub handover: Duration,
}

impl MembershipConfig {
    /// The defaults for `identity`: sharded by uid, 15 s lease, renewed every 5 s, 10 s
    /// handovers.
    pub fn new(identity: impl Into<String>) -> Self {
        Self {
            identity: identity.into(),
            field: ShardField::Uid,
            lease_duration: Duration::from_secs(15),
            renew_period: Duration::from_secs(5),
            handover: Duration::from_secs(10),
        }
    }

    /// Checks that the config can work: an identity, positive durations, a renewal more
    /// often than the lease duration, and a lease duration of whole seconds that fits the
    /// Lease's `int32`.
    pub fn validate(&self) -> Result<(), MembershipConfigError> {
        use MembershipConfigError as E;
        if self.identity.is_empty() {
            return Err(E::EmptyIdentity);
        }
        for (what, value) in [
            ("lease duration", self.lease_duration),
            ("renew period", self.renew_period),
        ] {
            if value.is_zero() {
                return Err(E::NotPositive(what));
            }
        }
        if self.renew_period >= self.lease_duration {
            return Err(E::RenewNotShorterThanLease {
                renew_period: self.renew_period,
                lease_duration: self.lease_duration,
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
    pub fn lease_duration_seconds(&self) -> i32 {
        i32::try_from(self.lease_duration.as_secs()).unwrap_or(i32::MAX)
    }
}

/// A membership config that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MembershipConfigError {
    /// No identity.
    #[error("the replica's identity is empty")]
    EmptyIdentity,
    /// A zero duration.
    #[error("the {0} must be greater than zero")]
    NotPositive(&'static str),
    /// Others would drop this replica between two renewals.
    #[error(
        "the renew period ({renew_period:?}) must be shorter than the lease duration \
         ({lease_duration:?})"
    )]
    RenewNotShorterThanLease {
        /// The renew period.
        renew_period: Duration,
        /// The lease duration.
        lease_duration: Duration,
    },
    /// The Lease stores whole seconds.
    #[error("the lease duration ({0:?}) must be a whole number of seconds")]
    LeaseDurationNotWholeSeconds(Duration),
    /// More seconds than an `int32` holds.
    #[error("the lease duration ({0:?}) does not fit the Lease's leaseDurationSeconds")]
    LeaseDurationTooLong(Duration),
}

/// This replica's share of the hash space, as its current view of the members gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The live members' identities, sorted (this replica's included).
    pub members: Vec<String>,
    /// This replica's index in [`members`](Self::members).
    pub rank: u64,
    /// How many members there are.
    pub count: u64,
    /// The slice this replica owns: [`ShardRange::even_split`]`(rank, count)`.
    pub range: ShardRange,
    /// What to list and watch now: [`range`](Self::range), joined during a handover by the
    /// parts of earlier ranges not yet handed over (ranges merged, in order).
    pub selector: ShardSelector,
}

impl Assignment {
    /// Whether the selector holds more than the range (a handover is in progress).
    pub fn handing_over(&self) -> bool {
        self.selector.ranges() != [self.range]
    }
}

/// A Lease as this replica saw it.
#[derive(Debug, Clone)]
struct Seen {
    record: LeaseRecord,
    /// When, by our clock, the current content was first seen.
    since: Instant,
}

impl Seen {
    /// The holder, while the lease has not expired at `now`.
    fn live_holder(&self, now: Instant) -> Option<&str> {
        let holder = self.record.holder()?;
        (now < self.expires()).then_some(holder)
    }

    fn expires(&self) -> Instant {
        self.since
            .checked_add(self.record.lease_duration())
            .unwrap_or(self.since)
    }
}

/// One replica's view of its group: the Leases it saw, when, and the assignment they give
/// (see the [module documentation](self) for the rules).
#[derive(Debug, Clone)]
pub struct Membership {
    config: MembershipConfig,
    /// By Lease name.
    leases: BTreeMap<String, Seen>,
    /// Ranges being handed over, each kept until its instant.
    retained: Vec<(ShardRange, Instant)>,
    assignment: Option<Assignment>,
}

impl Membership {
    /// A view that has seen nothing yet (this replica alone), for a valid config.
    pub fn new(config: MembershipConfig) -> Result<Self, MembershipConfigError> {
        config.validate()?;
        Ok(Self {
            config,
            leases: BTreeMap::new(),
            retained: Vec::new(),
            assignment: None,
        })
    }

    /// The config.
    pub fn config(&self) -> &MembershipConfig {
        &self.config
    }

    /// A Lease of the group was seen (listed, added or modified) with this content. A
    /// content seen before keeps the instant it was first seen; a new one starts its lease
    /// duration at `now`.
    pub fn observe(&mut self, lease: &str, record: LeaseRecord, now: Instant) {
        match self.leases.get_mut(lease) {
            Some(seen) if seen.record == record => {}
            Some(seen) => *seen = Seen { record, since: now },
            None => {
                self.leases
                    .insert(lease.to_owned(), Seen { record, since: now });
            }
        }
    }

    /// A Lease of the group was deleted: its holder is no longer a member (a clean leave).
    pub fn forget(&mut self, lease: &str) {
        self.leases.remove(lease);
    }

    /// The record this replica writes to its own Lease at `now` (the wire text of a
    /// `MicroTime`): its identity, the lease duration, `renewTime = now`, and `acquireTime`
    /// kept from `acquired` (or `now`).
    pub fn own_record(&self, now: &str, acquired: Option<&str>) -> LeaseRecord {
        LeaseRecord {
            holder_identity: Some(self.config.identity.clone()),
            lease_duration_seconds: Some(self.config.lease_duration_seconds()),
            acquire_time: Some(acquired.unwrap_or(now).to_owned()),
            renew_time: Some(now.to_owned()),
            ..LeaseRecord::default()
        }
    }

    /// The live members' identities at `now`, sorted, this replica's included.
    pub fn live(&self, now: Instant) -> Vec<String> {
        let mut members: BTreeSet<&str> = self
            .leases
            .values()
            .filter_map(|seen| seen.live_holder(now))
            .collect();
        members.insert(&self.config.identity);
        members.into_iter().map(str::to_owned).collect()
    }

    /// The current assignment (`None` before the first [`update`](Self::update)).
    pub fn assignment(&self) -> Option<&Assignment> {
        self.assignment.as_ref()
    }

    /// Recomputes the assignment at `now`; returns it when it differs from the last one (the
    /// first one included): members, range, or selector (a handover that began or ended).
    pub fn update(&mut self, now: Instant) -> Option<Assignment> {
        let members = self.live(now);
        // `live` always holds our identity: the position exists.
        let rank = members
            .iter()
            .position(|m| *m == self.config.identity)
            .unwrap_or(0);
        let count = members.len().max(1);
        let (rank, count) = (rank as u64, count as u64);
        // rank < count by construction, so the split cannot fail; ALL is the sole member's.
        let range = ShardRange::even_split(rank, count).unwrap_or(ShardRange::ALL);
        if let Some(previous) = &self.assignment
            && previous.range != range
            && !self.config.handover.is_zero()
        {
            let until = now.checked_add(self.config.handover).unwrap_or(now);
            self.retained.push((previous.range, until));
        }
        self.retained
            .retain(|(kept, until)| now < *until && !range.covers(*kept));
        let mut ranges: Vec<ShardRange> = self.retained.iter().map(|(r, _)| *r).collect();
        ranges.push(range);
        let merged = ShardRange::merge(ranges);
        // Never empty: it holds `range`.
        let selector = ShardSelector::new(self.config.field, merged).ok()?;
        let assignment = Assignment {
            members,
            rank,
            count,
            range,
            selector,
        };
        if self.assignment.as_ref() == Some(&assignment) {
            return None;
        }
        self.assignment = Some(assignment.clone());
        Some(assignment)
    }

    /// The Leases to delete at `now`: another holder's that has not changed for twice its
    /// duration by this replica's clock (it has counted for nothing for a whole lease
    /// duration), or one without a holder. The driver deletes them, guarded by the
    /// resourceVersion it saw (a Lease renewed meanwhile stays), so that a replica starting
    /// later, which would count a Lease it sees for the first time as live for a whole lease
    /// duration, does not count a crashed replica. The extra lease duration spares a replica
    /// that was only slow (an overloaded API server answering its renewals late) the churn
    /// of losing its Lease: it is dropped from the split at once, and takes its place again
    /// with its next renewal.
    pub fn stale(&self, now: Instant) -> Vec<&str> {
        self.leases
            .iter()
            .filter(|(_, seen)| seen.record.holder() != Some(self.config.identity.as_str()))
            .filter(|(_, seen)| {
                let unchanged = now.saturating_duration_since(seen.since);
                seen.record.holder().is_none() || unchanged >= 2 * seen.record.lease_duration()
            })
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// When [`update`](Self::update) must run again even if nothing new is observed: the
    /// next expiry of another member's Lease, or the end of a handover. `None` when nothing
    /// would change by time alone.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let expiries = self
            .leases
            .values()
            .filter(|seen| seen.record.holder() != Some(self.config.identity.as_str()))
            .filter(|seen| seen.live_holder(now).is_some())
            .map(Seen::expires);
        let handovers = self.retained.iter().map(|(_, until)| *until);
        expiries.chain(handovers).filter(|at| *at > now).min()
    }
}

#[cfg(test)]
mod tests;

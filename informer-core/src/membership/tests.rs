//! The membership view in virtual time: config checks, ranks by sorted identity, expiry by
//! the observer's own clock (never the record's timestamps), handovers that overlap, the
//! deadlines a driver sleeps until, and a simulation of a group with joins, clean leaves,
//! crashes and restarts in which no hash is ever owned by nobody except within a lease
//! duration of a crashed replica's last renewal.

use proptest::prelude::*;

use super::*;

const SEC: Duration = Duration::from_secs(1);

fn config(identity: &str) -> MembershipConfig {
    MembershipConfig {
        lease_duration: 3 * SEC,
        renew_period: SEC,
        handover: 2 * SEC,
        ..MembershipConfig::new(identity)
    }
}

fn lease(holder: &str, renew: u64) -> LeaseRecord {
    LeaseRecord {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(3),
        renew_time: Some(format!("t{renew}")),
        ..LeaseRecord::default()
    }
}

fn split(rank: u64, count: u64) -> ShardRange {
    ShardRange::even_split(rank, count).unwrap()
}

#[test]
fn configs_are_checked() {
    assert_eq!(MembershipConfig::new("a").validate(), Ok(()));
    let bad = |f: fn(&mut MembershipConfig)| {
        let mut c = MembershipConfig::new("a");
        f(&mut c);
        c.validate().unwrap_err()
    };
    assert_eq!(
        bad(|c| c.identity.clear()),
        MembershipConfigError::EmptyIdentity
    );
    assert_eq!(
        bad(|c| c.renew_period = Duration::ZERO),
        MembershipConfigError::NotPositive("renew period")
    );
    assert!(matches!(
        bad(|c| c.renew_period = c.lease_duration),
        MembershipConfigError::RenewNotShorterThanLease { .. }
    ));
    assert!(matches!(
        bad(|c| c.lease_duration = Duration::from_millis(15_500)),
        MembershipConfigError::LeaseDurationNotWholeSeconds(_)
    ));
    assert!(matches!(
        bad(|c| c.lease_duration = Duration::from_secs(1 << 40)),
        MembershipConfigError::LeaseDurationTooLong(_)
    ));
    assert!(Membership::new(MembershipConfig::new("")).is_err());
    // A zero handover is allowed: let go at once.
    let mut c = MembershipConfig::new("a");
    c.handover = Duration::ZERO;
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn alone_a_replica_owns_everything() {
    let mut view = Membership::new(config("a")).unwrap();
    let t0 = Instant::now();
    assert_eq!(view.assignment(), None);
    let mine = view.update(t0).unwrap();
    assert_eq!(mine.members, ["a"]);
    assert_eq!((mine.rank, mine.count), (0, 1));
    assert_eq!(mine.range, ShardRange::ALL);
    assert_eq!(mine.selector.ranges(), [ShardRange::ALL]);
    assert!(!mine.handing_over());
    // Nothing changed: nothing to report, nothing to wait for.
    assert_eq!(view.update(t0 + SEC), None);
    assert_eq!(view.next_deadline(t0), None);
}

#[test]
fn ranks_follow_the_sorted_identities() {
    let t0 = Instant::now();
    for (me, rank) in [("a", 0), ("m", 1), ("z", 2)] {
        let mut view = Membership::new(config(me)).unwrap();
        for other in ["a", "m", "z"].into_iter().filter(|o| *o != me) {
            view.observe(&format!("g-{other}"), lease(other, 0), t0);
        }
        let mine = view.update(t0).unwrap();
        assert_eq!(mine.members, ["a", "m", "z"]);
        assert_eq!((mine.rank, mine.count), (rank, 3));
        assert_eq!(mine.range, split(rank, 3));
    }
}

#[test]
fn expiry_is_measured_on_the_observers_clock() {
    let mut view = Membership::new(config("a")).unwrap();
    let t0 = Instant::now();
    // The record says it was renewed long ago; that is never read.
    let mut old = lease("b", 0);
    old.renew_time = Some("1970-01-01T00:00:00.000000Z".into());
    view.observe("g-b", old.clone(), t0);
    assert_eq!(view.live(t0), ["a", "b"]);
    // The same content seen again does not extend it...
    view.observe("g-b", old.clone(), t0 + 2 * SEC);
    assert_eq!(view.next_deadline(t0 + 2 * SEC), Some(t0 + 3 * SEC));
    assert_eq!(
        view.live(t0 + 3 * SEC - Duration::from_millis(1)),
        ["a", "b"]
    );
    assert_eq!(view.live(t0 + 3 * SEC), ["a"]);
    // Dropped at once, deleted a lease duration later (it may only have been slow).
    assert!(view.stale(t0 + 3 * SEC).is_empty());
    assert_eq!(view.stale(t0 + 6 * SEC), ["g-b"]);
    // ... a renewal (new content) does.
    view.observe("g-b", lease("b", 1), t0 + 2 * SEC);
    assert_eq!(view.live(t0 + 4 * SEC), ["a", "b"]);
    assert_eq!(view.next_deadline(t0 + 2 * SEC), Some(t0 + 5 * SEC));
    assert!(view.stale(t0 + 7 * SEC).is_empty());
}

#[test]
fn a_lease_without_a_holder_or_deleted_counts_for_nothing() {
    let mut view = Membership::new(config("a")).unwrap();
    let t0 = Instant::now();
    let mut released = lease("b", 0);
    released.holder_identity = Some(String::new());
    view.observe("g-b", released, t0);
    view.observe("g-c", lease("c", 0), t0);
    assert_eq!(view.live(t0), ["a", "c"]);
    assert_eq!(view.stale(t0), ["g-b"]);
    view.forget("g-c");
    assert_eq!(view.live(t0), ["a"]);
    // Our own lease, even expired in the view, is never handed to the driver to delete.
    view.observe("g-a", lease("a", 0), t0);
    assert!(view.stale(t0 + 10 * SEC).iter().all(|l| *l != "g-a"));
    assert_eq!(view.live(t0 + 10 * SEC), ["a"]);
}

#[test]
fn a_replica_that_stops_renewing_is_dropped_and_its_range_taken_over() {
    let mut view = Membership::new(config("b")).unwrap();
    let t0 = Instant::now();
    view.observe("g-a", lease("a", 0), t0);
    view.observe("g-c", lease("c", 0), t0);
    assert_eq!(view.update(t0).unwrap().range, split(1, 3));
    // a and c renew at t0 + 1 s; c stops after that.
    view.observe("g-a", lease("a", 1), t0 + SEC);
    view.observe("g-c", lease("c", 1), t0 + SEC);
    view.observe("g-a", lease("a", 2), t0 + 2 * SEC);
    view.observe("g-a", lease("a", 3), t0 + 3 * SEC);
    assert_eq!(view.update(t0 + 3 * SEC), None);
    // c's lease was last seen changing at t0 + 1 s: dropped at t0 + 4 s, not before.
    assert_eq!(view.next_deadline(t0 + 3 * SEC), Some(t0 + 4 * SEC));
    let after = view.update(t0 + 4 * SEC).unwrap();
    assert_eq!(after.members, ["a", "b"]);
    assert_eq!(after.range, split(1, 2));
    // b grows from [1/3, 2/3) to [1/2, 1): the part it loses, [1/3, 1/2), is kept for the
    // handover.
    assert!(after.handing_over());
    assert_eq!(
        after.selector.to_string(),
        "shardRange(object.metadata.uid, '0x5555555555555555', '0x10000000000000000')"
    );
    view.observe("g-a", lease("a", 5), t0 + 5 * SEC);
    assert_eq!(view.next_deadline(t0 + 5 * SEC), Some(t0 + 6 * SEC));
    let settled = view.update(t0 + 6 * SEC).unwrap();
    assert_eq!(settled.members, ["a", "b"]);
    assert!(!settled.handing_over());
    assert_eq!(settled.selector.ranges(), [split(1, 2)]);
}

#[test]
fn a_joining_replica_is_taken_in_with_an_overlapping_handover() {
    let t0 = Instant::now();
    let mut a = Membership::new(config("a")).unwrap();
    let mut b = Membership::new(config("b")).unwrap();
    a.observe("g-b", lease("b", 0), t0);
    b.observe("g-a", lease("a", 0), t0);
    let (a0, b0) = (a.update(t0).unwrap(), b.update(t0).unwrap());
    assert_eq!((a0.range, b0.range), (split(0, 2), split(1, 2)));
    // c joins at t0 + 1 s; everybody sees its lease at once.
    let mut c = Membership::new(config("c")).unwrap();
    let t1 = t0 + SEC;
    c.observe("g-a", lease("a", 0), t1);
    c.observe("g-b", lease("b", 0), t1);
    a.observe("g-c", lease("c", 0), t1);
    b.observe("g-c", lease("c", 0), t1);
    let (a1, b1, c1) = (
        a.update(t1).unwrap(),
        b.update(t1).unwrap(),
        c.update(t1).unwrap(),
    );
    assert_eq!(
        (a1.range, b1.range, c1.range),
        (split(0, 3), split(1, 3), split(2, 3))
    );
    // c takes its range at once; a and b keep their old ones for the handover: overlap,
    // never a gap.
    assert!(!c1.handing_over());
    assert_eq!(a1.selector.ranges(), [split(0, 2)]);
    assert_eq!(
        b1.selector.ranges(),
        [ShardRange::new(split(1, 3).start(), split(1, 2).end()).unwrap()]
    );
    for hash in [0u64, 1 << 62, 1 << 63, u64::MAX - 1, u64::MAX] {
        assert!(
            [&a1, &b1, &c1]
                .iter()
                .any(|x| x.selector.contains_hash(hash)),
            "{hash:#x} owned by none"
        );
    }
    // Everybody renews; after the handover the slices partition the space again.
    let t2 = t1 + 2 * SEC;
    for (name, holder) in [("g-a", "a"), ("g-b", "b"), ("g-c", "c")] {
        for view in [&mut a, &mut b] {
            view.observe(name, lease(holder, 2), t2 - SEC);
        }
    }
    let (a2, b2) = (a.update(t2).unwrap(), b.update(t2).unwrap());
    assert_eq!(a2.members, ["a", "b", "c"]);
    assert_eq!(a2.selector.ranges(), [split(0, 3)]);
    assert_eq!(b2.selector.ranges(), [split(1, 3)]);
}

#[test]
fn no_handover_lets_go_at_once() {
    let mut cfg = config("b");
    cfg.handover = Duration::ZERO;
    let mut view = Membership::new(cfg).unwrap();
    let t0 = Instant::now();
    view.observe("g-a", lease("a", 0), t0);
    view.update(t0).unwrap();
    view.observe("g-c", lease("c", 0), t0 + SEC);
    let after = view.update(t0 + SEC).unwrap();
    assert_eq!(after.selector.ranges(), [split(1, 3)]);
    assert!(!after.handing_over());
}

#[test]
fn own_records_carry_the_identity_and_duration() {
    let view = Membership::new(config("a")).unwrap();
    let fresh = view.own_record("t1", None);
    assert_eq!(fresh.holder(), Some("a"));
    assert_eq!(fresh.lease_duration_seconds, Some(3));
    assert_eq!(fresh.acquire_time.as_deref(), Some("t1"));
    let renewed = view.own_record("t2", Some("t1"));
    assert_eq!(renewed.acquire_time.as_deref(), Some("t1"));
    assert_eq!(renewed.renew_time.as_deref(), Some("t2"));
}

#[test]
fn merging_joins_overlapping_and_adjacent_ranges() {
    let r = |a: u128, b: u128| ShardRange::new(a, b).unwrap();
    assert_eq!(
        ShardRange::merge(vec![r(10, 20), r(0, 5), r(5, 8), r(15, 30), r(40, 50)]),
        [r(0, 8), r(10, 30), r(40, 50)]
    );
    assert_eq!(ShardRange::merge(vec![r(0, 100), r(10, 20)]), [r(0, 100)]);
}

/// What happens to a replica in the simulation.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Nothing but time (100 ms).
    Tick,
    /// Replica `n` (0..5) starts (or restarts), if it is not running.
    Start(usize),
    /// Replica `n` leaves cleanly: it deletes its lease, keeps working for the handover,
    /// then stops.
    Leave(usize),
    /// Replica `n` crashes: it stops renewing and owning at once.
    Crash(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => Just(Step::Tick),
        2 => (0..5usize).prop_map(Step::Start),
        1 => (0..5usize).prop_map(Step::Leave),
        1 => (0..5usize).prop_map(Step::Crash),
    ]
}

/// How long a relist takes in the simulation: a replica's cache holds the objects of the
/// selector it last listed, and listing a new one takes this long.
const RELIST: Duration = Duration::from_millis(500);

/// A replica of the simulation.
struct Replica {
    view: Membership,
    renewed: Instant,
    renewals: u64,
    /// What its cache holds (nothing before its first list).
    listed: Option<ShardSelector>,
    /// The selector it is listing, and when that list completes.
    listing: Option<(ShardSelector, Instant)>,
    /// Leaving: its lease is gone, it stops at this instant.
    leaving: Option<Instant>,
}

impl Replica {
    /// Follows the view's selector as the reflector does: a change starts a list that
    /// completes `RELIST` later; a change meanwhile starts it again, unless the list in
    /// progress overlaps the new selector and covers what the cache holds of it: that list
    /// completes first, and the new one starts after it.
    fn relist(&mut self, now: Instant) {
        let Some(wanted) = self.view.assignment().map(|a| a.selector.clone()) else {
            return;
        };
        let keep = self.listing.as_ref().is_some_and(|(listing, _)| {
            listing.intersection(&wanted).is_some()
                && self
                    .listed
                    .as_ref()
                    .and_then(|listed| listed.intersection(&wanted))
                    .is_none_or(|held| listing.covers(&held))
        });
        match &self.listing {
            _ if keep => {}
            _ if self.listed.as_ref() == Some(&wanted) => self.listing = None,
            _ => self.listing = Some((wanted.clone(), now + RELIST)),
        }
        if let Some((selector, done)) = &self.listing
            && now >= *done
        {
            self.listed = Some(selector.clone());
            // The new selector's list follows at once.
            self.listing = (*selector != wanted).then(|| (wanted, now + RELIST));
        }
    }

    fn owns(&self, hash: u64) -> bool {
        self.listed.as_ref().is_some_and(|s| s.contains_hash(hash))
    }
}

/// The group's Leases, as the API server holds them: by replica, its record.
type Leases = BTreeMap<usize, LeaseRecord>;

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Every replica sees every lease change at once (an ideal watch); a relist takes 500 ms
    /// (less than the 2 s handover). At every 100 ms step, every hash is in what some
    /// running replica's cache holds, except:
    /// - within a lease duration plus two relists (plus one step) of a crash, or of a
    ///   replica starting while a crashed one's lease was still there
    ///   (nobody running had deleted it: the newcomer counts it as live until it expires by
    ///   its clock); two relists because a list in progress when the crash is seen, for a
    ///   range gained just before, completes first (a restart would starve it if changes
    ///   kept coming);
    /// - within a relist (plus one step) of the first replica starting in an empty group,
    ///   or in one where every running replica is leaving (its handover may end first).
    ///
    /// Joins and clean leaves never leave a hash unowned. When every view holds exactly the
    /// running replicas, no handover is in progress and every cache holds its view's
    /// selector, the caches partition the space.
    #[test]
    fn no_hash_is_orphaned_beyond_a_lease_duration_and_two_relists(
        steps in proptest::collection::vec(step(), 1..200),
    ) {
        let tick = Duration::from_millis(100);
        let t0 = Instant::now();
        let mut now = t0;
        let mut running: BTreeMap<usize, Replica> = BTreeMap::new();
        let mut leases: Leases = BTreeMap::new();
        // Instants from which a gap is excused for a while, and for how long.
        let mut excused: Vec<(Instant, Duration)> = Vec::new();
        let name = |n: usize| format!("g-r{n}");
        let probes: Vec<u64> = (0..64u64)
            .map(|i| i.wrapping_mul(0x0400_0000_0000_0001))
            .chain([u64::MAX])
            .collect();
        for s in steps.into_iter().chain(std::iter::repeat_n(Step::Tick, 60)) {
            match s {
                Step::Tick => now += tick,
                Step::Start(n) if !running.contains_key(&n) => {
                    // Nobody staying: the group is empty but for replicas on their way out,
                    // whose handover may end before the newcomer's first list does.
                    if running.values().all(|r| r.leaving.is_some()) {
                        excused.push((now, RELIST));
                    }
                    if leases.keys().any(|l| *l != n && !running.contains_key(l)) {
                        excused.push((now, 3 * SEC + 2 * RELIST));
                    }
                    let mut view = Membership::new(config(&format!("r{n}"))).unwrap();
                    for (other, record) in &leases {
                        view.observe(&name(*other), record.clone(), now);
                    }
                    let record = view.own_record(&format!("{now:?}"), None);
                    leases.insert(n, record.clone());
                    for r in running.values_mut() {
                        r.view.observe(&name(n), record.clone(), now);
                    }
                    view.observe(&name(n), record, now);
                    running.insert(
                        n,
                        Replica {
                            view,
                            renewed: now,
                            renewals: 0,
                            listed: None,
                            listing: None,
                            leaving: None,
                        },
                    );
                }
                Step::Leave(n) if running.get(&n).is_some_and(|r| r.leaving.is_none()) => {
                    leases.remove(&n);
                    for r in running.values_mut() {
                        r.view.forget(&name(n));
                    }
                    if let Some(r) = running.get_mut(&n) {
                        r.leaving = Some(now + 2 * SEC);
                    }
                }
                // A crash of a running replica (removed here; another step otherwise).
                Step::Crash(n) if running.remove(&n).is_some() => {
                    // Its last renewal was at most now; a replica that started after it saw
                    // the lease first at its own start, at most now too.
                    excused.push((now, 3 * SEC + 2 * RELIST));
                }
                _ => {}
            }
            running.retain(|_, r| r.leaving.is_none_or(|until| now < until));
            // Renewals due (a leaving replica no longer renews).
            let due: Vec<usize> = running
                .iter()
                .filter(|(_, r)| r.leaving.is_none() && now.duration_since(r.renewed) >= SEC)
                .map(|(n, _)| *n)
                .collect();
            for n in due {
                let r = running.get_mut(&n).unwrap();
                r.renewals += 1;
                r.renewed = now;
                let record = r.view.own_record(&format!("{n}-{}", r.renewals), Some("t0"));
                leases.insert(n, record.clone());
                for r in running.values_mut() {
                    r.view.observe(&name(n), record.clone(), now);
                }
            }
            // Each view updates and its cache follows; stale leases are deleted by whoever
            // sees them first.
            let mut deleted = Vec::new();
            for r in running.values_mut() {
                r.view.update(now);
                r.relist(now);
                if r.leaving.is_none() {
                    deleted.extend(r.view.stale(now).into_iter().map(str::to_owned));
                }
            }
            for lease in deleted {
                let n: usize = lease.trim_start_matches("g-r").parse().unwrap();
                leases.remove(&n);
                for r in running.values_mut() {
                    r.view.forget(&lease);
                }
            }
            if running.is_empty() {
                continue;
            }
            let excuse = excused.iter().any(|(at, d)| now < *at + *d + tick);
            if !excuse {
                for hash in &probes {
                    let owners = running.values().filter(|r| r.owns(*hash)).count();
                    prop_assert!(owners >= 1, "{:#x} owned by none at {:?}", hash, now - t0);
                }
            }
            let views: BTreeSet<Vec<String>> = running
                .values()
                .filter_map(|r| r.view.assignment().map(|a| a.members.clone()))
                .collect();
            let identities: Vec<String> = running.keys().map(|n| format!("r{n}")).collect();
            let settled = running.values().all(|r| {
                r.leaving.is_none()
                    && r.view.assignment().is_some_and(|a| {
                        !a.handing_over() && r.listed.as_ref() == Some(&a.selector)
                    })
            });
            if views.len() == 1 && views.contains(&identities) && settled {
                for hash in &probes {
                    let owners = running.values().filter(|r| r.owns(*hash)).count();
                    prop_assert_eq!(owners, 1, "{:#x} at {:?}", hash, now - t0);
                }
            }
        }
    }
}

//! The election machine in virtual time: client-go's `leaderelection_test.go` scenarios
//! (acquire from nothing, from a free lease, from an expired one, not from a fresh one, renew,
//! release, config validation), expiry by the observer's own clock, step-down before anyone
//! may take over, and a simulation of several candidates over a faulty network in which two
//! never lead at once.

use proptest::prelude::*;

use super::*;

const SEC: Duration = Duration::from_secs(1);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A lease 3 s, renew 2 s, retry 0.5 s machine for `identity`.
fn short(identity: &str) -> ElectionConfig {
    ElectionConfig {
        lease_duration: 3 * SEC,
        renew_deadline: 2 * SEC,
        retry_period: ms(500),
        ..ElectionConfig::new(identity)
    }
}

fn record(holder: &str, duration: i32, renew: &str) -> LeaseRecord {
    LeaseRecord {
        holder_identity: Some(holder.to_owned()),
        lease_duration_seconds: Some(duration),
        acquire_time: Some("2026-01-01T00:00:00.000000Z".into()),
        renew_time: Some(renew.to_owned()),
        lease_transitions: Some(4),
        ..LeaseRecord::default()
    }
}

fn found(record: LeaseRecord, rv: &str) -> GetOutcome {
    GetOutcome::Found {
        record,
        resource_version: rv.into(),
    }
}

fn written(record: LeaseRecord, rv: &str) -> WriteOutcome {
    WriteOutcome::Written {
        record,
        resource_version: rv.into(),
    }
}

fn events(m: &mut Machine) -> Vec<Event> {
    std::iter::from_fn(|| m.poll_event()).collect()
}

fn update(next: Next) -> (LeaseWrite, String, Duration) {
    match next {
        Next::Update {
            write,
            resource_version,
            timeout,
        } => (write, resource_version, timeout),
        other => panic!("expected an update, got {other:?}"),
    }
}

/// A machine that has just taken a fresh lease at `t0` (resourceVersion "1").
fn leading(config: ElectionConfig, t0: Instant) -> Machine {
    let mut m = Machine::new(config).unwrap();
    m.start(t0);
    let Next::Create { write, .. } = m.got(GetOutcome::NotFound, t0, 0.0) else {
        panic!("no create")
    };
    m.wrote(written(write.record("t0"), "1"), t0, 0.0);
    assert!(m.is_leading(t0));
    events(&mut m);
    m
}

// ----- Config ---------------------------------------------------------------------------

/// client-go's `NewLeaderElector` checks, plus ours (whole seconds).
#[test]
fn configs_are_checked_like_client_go() {
    use ElectionConfigError as E;
    assert_eq!(ElectionConfig::new("a").validate(), Ok(()));
    assert_eq!(short("a").validate(), Ok(()));
    let with = |f: &dyn Fn(&mut ElectionConfig)| {
        let mut c = ElectionConfig::new("a");
        f(&mut c);
        c.validate()
    };
    assert_eq!(with(&|c| c.identity.clear()), Err(E::EmptyIdentity));
    assert!(matches!(
        with(&|c| c.renew_deadline = c.lease_duration),
        Err(E::LeaseNotLongerThanRenewDeadline { .. })
    ));
    // renew deadline must exceed retry × 1.2: 2 s × 1.2 = 2.4 s.
    assert!(matches!(
        with(&|c| c.renew_deadline = ms(2400)),
        Err(E::RenewDeadlineTooShortForRetries { .. })
    ));
    assert_eq!(with(&|c| c.renew_deadline = ms(2401)), Ok(()));
    assert_eq!(
        with(&|c| c.retry_period = Duration::ZERO),
        Err(E::NotPositive("retry period"))
    );
    assert_eq!(
        with(&|c| c.lease_duration = ms(15_500)),
        Err(E::LeaseDurationNotWholeSeconds(ms(15_500)))
    );
    assert!(matches!(
        with(&|c| c.lease_duration = Duration::from_secs(1 << 40)),
        Err(E::LeaseDurationTooLong(_))
    ));
    assert!(Machine::new(ElectionConfig::new("")).is_err());
    assert_eq!(
        E::RenewDeadlineTooShortForRetries {
            renew_deadline: SEC,
            retry_period: SEC
        }
        .to_string(),
        "the renew deadline (1s) must be greater than the retry period (1s) × 1.2"
    );
}

// ----- Acquiring ------------------------------------------------------------------------

/// "acquire from no object": create the lease, lead.
#[test]
fn acquires_by_creating_a_missing_lease() {
    let t0 = Instant::now();
    let mut m = Machine::new(ElectionConfig::new("baz")).unwrap();
    assert_eq!(m.start(t0), Next::Get { timeout: 10 * SEC });
    let Next::Create { write, timeout } = m.got(GetOutcome::NotFound, t0, 0.3) else {
        panic!()
    };
    assert_eq!(timeout, 10 * SEC);
    let rec = write.record("2026-05-01T10:00:00.000000Z");
    assert_eq!(
        rec,
        LeaseRecord {
            holder_identity: Some("baz".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some("2026-05-01T10:00:00.000000Z".into()),
            renew_time: Some("2026-05-01T10:00:00.000000Z".into()),
            lease_transitions: Some(0),
            ..LeaseRecord::default()
        }
    );
    let next = m.wrote(written(rec, "7"), t0 + ms(40), 0.3);
    assert_eq!(next, Next::Wait { delay: 2 * SEC });
    assert_eq!(
        events(&mut m),
        [Event::NewLeader(Some("baz".into())), Event::StartedLeading]
    );
    // Valid from the write's start, not its answer.
    assert_eq!(m.valid_until(), Some(t0 + 10 * SEC));
    assert!(m.is_leading(t0 + 10 * SEC - ms(1)));
    assert!(!m.is_leading(t0 + 10 * SEC));
}

/// "acquire from unled object", "acquire from empty led, acked object": a free lease is
/// taken at once, with one more transition.
#[test]
fn takes_a_free_lease_at_once() {
    for holder in [None, Some("")] {
        let t0 = Instant::now();
        let mut m = Machine::new(ElectionConfig::new("baz")).unwrap();
        m.start(t0);
        let free = LeaseRecord {
            holder_identity: holder.map(str::to_owned),
            lease_duration_seconds: Some(1),
            lease_transitions: Some(3),
            ..LeaseRecord::default()
        };
        let (write, rv, _) = update(m.got(found(free, "12"), t0, 0.0));
        assert_eq!(rv, "12");
        assert_eq!(write.kind, WriteKind::Acquire);
        assert_eq!(write.lease_transitions, 4);
        assert_eq!(write.keep_acquire_time, None);
        assert_eq!(events(&mut m), [Event::NewLeader(None)]);
    }
}

/// "acquire from led, unacked object": a record without leaseDurationSeconds expires as soon
/// as it is seen.
#[test]
fn a_lease_without_duration_is_expired() {
    let t0 = Instant::now();
    let mut m = Machine::new(ElectionConfig::new("baz")).unwrap();
    m.start(t0);
    let unacked = LeaseRecord {
        holder_identity: Some("bing".into()),
        ..LeaseRecord::default()
    };
    let (write, _, _) = update(m.got(found(unacked, "3"), t0, 0.0));
    assert_eq!(write.holder_identity, "baz");
    assert_eq!(write.lease_transitions, 1);
}

/// "don't acquire from led, acked object" and "acquire from led object with the lease
/// duration seconds": a held lease is taken only after its duration has passed on *our*
/// clock since we first saw its content, whatever its timestamps say.
#[test]
fn a_held_lease_expires_by_the_observers_clock_not_its_timestamps() {
    for renew_time in [
        // Long ago, in the future, garbage: never read.
        "2000-01-01T00:00:00.000000Z",
        "2999-01-01T00:00:00.000000Z",
        "not a time",
    ] {
        let t0 = Instant::now();
        let mut m = Machine::new(ElectionConfig::new("baz")).unwrap();
        m.start(t0);
        let held = record("bing", 3, renew_time);
        // First seen at t0 + 100 ms (the answer's time).
        let seen = t0 + ms(100);
        let Next::Wait { delay } = m.got(found(held.clone(), "5"), seen, 0.0) else {
            panic!("took a fresh lease")
        };
        assert_eq!(delay, 2 * SEC);
        assert_eq!(events(&mut m), [Event::NewLeader(Some("bing".into()))]);
        assert_eq!(
            m.wait_elapsed(seen + delay, 0.0),
            Next::Get { timeout: 10 * SEC }
        );
        // Unchanged, just before the record's 3 s: still held.
        assert!(matches!(
            m.got(found(held.clone(), "5"), seen + 3 * SEC - ms(1), 0.0),
            Next::Wait { .. }
        ));
        m.wait_elapsed(seen + 3 * SEC, 0.0);
        // Unchanged at 3 s: expired. Taken over with the resourceVersion read.
        let (write, rv, _) = update(m.got(found(held, "5"), seen + 3 * SEC, 0.0));
        assert_eq!((write.holder_identity.as_str(), rv.as_str()), ("baz", "5"));
        assert_eq!(write.lease_transitions, 5);
        assert!(events(&mut m).is_empty(), "{renew_time}");
    }
}

/// A holder that keeps renewing (the content changes) is never taken over: every change
/// restarts the wait.
#[test]
fn a_renewed_lease_is_never_taken() {
    let t0 = Instant::now();
    let mut m = Machine::new(short("b")).unwrap();
    m.start(t0);
    let mut now = t0;
    for i in 0..40u32 {
        let held = record("a", 3, &format!("renew {i}"));
        let next = m.got(found(held, &i.to_string()), now, 0.9);
        let Next::Wait { delay } = next else {
            panic!("took a renewed lease at round {i}: {next:?}")
        };
        // Jittered: retry × (1 + 1.2 × 0.9).
        assert_eq!(delay, ms(500) + ms(540));
        now += delay;
        m.wait_elapsed(now, 0.9);
    }
    assert_eq!(events(&mut m), [Event::NewLeader(Some("a".into()))]);
}

/// The lease's own duration decides, not ours: 1 s in the record is 1 s.
#[test]
fn the_records_duration_is_used() {
    let t0 = Instant::now();
    let mut m = Machine::new(ElectionConfig::new("b")).unwrap();
    m.start(t0);
    assert!(matches!(
        m.got(found(record("a", 1, "x"), "1"), t0, 0.0),
        Next::Wait { .. }
    ));
    m.wait_elapsed(t0 + SEC, 0.0);
    update(m.got(found(record("a", 1, "x"), "1"), t0 + SEC, 0.0));
}

#[test]
fn acquisition_waits_are_jittered_within_client_gos_bounds() {
    let t0 = Instant::now();
    for (random, want) in [
        (0.0, ms(2000)),
        (0.5, ms(3200)),
        (0.999_999, ms(4399)),
        (1.0, ms(4400)),
        (-1.0, ms(2000)),
        (f64::NAN, ms(2000)),
    ] {
        let mut m = Machine::new(ElectionConfig::new("b")).unwrap();
        m.start(t0);
        let Next::Wait { delay } = m.got(GetOutcome::Failed, t0, random) else {
            panic!()
        };
        assert!(
            delay.abs_diff(want) < ms(1),
            "random {random}: {delay:?} vs {want:?}"
        );
    }
}

/// Two candidates racing for an expired lease: the loser's update conflicts; it reads again
/// and finds the winner's fresh lease.
#[test]
fn the_loser_of_a_race_waits_again() {
    let t0 = Instant::now();
    let mut m = Machine::new(short("b")).unwrap();
    m.start(t0);
    let (_, _, _) = update(m.got(found(record("", 3, "x"), "8"), t0, 0.0));
    let Next::Wait { delay } = m.wrote(WriteOutcome::Conflict, t0 + ms(10), 0.0) else {
        panic!()
    };
    assert_eq!(delay, ms(500));
    assert!(!m.is_leading(t0 + ms(10)));
    m.wait_elapsed(t0 + ms(510), 0.0);
    assert!(matches!(
        m.got(found(record("c", 3, "y"), "9"), t0 + ms(520), 0.0),
        Next::Wait { .. }
    ));
    assert_eq!(
        events(&mut m),
        [Event::NewLeader(None), Event::NewLeader(Some("c".into()))]
    );
}

/// An acquisition whose answer comes after the renew deadline is not built upon.
#[test]
fn a_too_slow_acquisition_does_not_lead() {
    let t0 = Instant::now();
    let mut m = Machine::new(short("b")).unwrap();
    m.start(t0);
    let (write, _, timeout) = update(m.got(found(record("", 3, "x"), "8"), t0, 0.0));
    assert_eq!(timeout, 2 * SEC);
    let next = m.wrote(written(write.record("t"), "9"), t0 + 2 * SEC, 0.0);
    assert!(matches!(next, Next::Wait { .. }), "{next:?}");
    assert!(!m.is_leading(t0 + 2 * SEC));
    assert!(!events(&mut m).contains(&Event::StartedLeading));
    // Next round: the lease is ours already; renewing it (keeping acquireTime) leads.
    m.wait_elapsed(t0 + 3 * SEC, 0.0);
    let mine = write.record("t");
    let (again, rv, _) = update(m.got(found(mine.clone(), "9"), t0 + 3 * SEC, 0.0));
    assert_eq!(rv, "9");
    assert_eq!(again.lease_transitions, mine.lease_transitions.unwrap());
    assert_eq!(again.keep_acquire_time, mine.acquire_time);
    m.wrote(written(again.record("t2"), "10"), t0 + 3 * SEC, 0.0);
    assert_eq!(events(&mut m), [Event::StartedLeading]);
}

// ----- Leading --------------------------------------------------------------------------

/// "renew already acquired object", client-go's fast path: updates from the last write
/// without reading; the deadline moves with every successful write's start.
#[test]
fn renews_on_the_fast_path_and_moves_the_deadline() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    let mut rv = 1;
    let mut now = t0;
    for _ in 0..10 {
        now += ms(500);
        let (write, sent_rv, timeout) = update(m.wait_elapsed(now, 0.0));
        assert_eq!(write.kind, WriteKind::Renew);
        assert_eq!(write.keep_acquire_time.as_deref(), Some("t0"));
        assert_eq!(sent_rv, rv.to_string());
        // The request may not outlive leadership.
        assert_eq!(timeout, m.valid_until().unwrap() - now);
        rv += 1;
        let answered = now + ms(30);
        assert_eq!(
            m.wrote(written(write.record("t"), &rv.to_string()), answered, 0.0),
            Next::Wait { delay: ms(500) }
        );
        assert_eq!(m.valid_until(), Some(now + 2 * SEC));
        now = answered;
    }
    assert!(events(&mut m).is_empty());
}

/// A conflict on the fast path reads the lease and updates again while it is still ours.
#[test]
fn a_conflict_reads_and_renews_if_still_ours() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    let (_, _, _) = update(m.wait_elapsed(t0 + ms(500), 0.0));
    assert_eq!(
        m.wrote(WriteOutcome::Conflict, t0 + ms(520), 0.0),
        Next::Get { timeout: ms(1480) }
    );
    // Someone touched the lease (a label) but it is ours.
    let mut ours = record("a", 3, "t0");
    ours.acquire_time = Some("t0".into());
    let (write, rv, _) = update(m.got(found(ours, "5"), t0 + ms(540), 0.0));
    assert_eq!(rv, "5");
    assert_eq!(write.holder_identity, "a");
    assert_eq!(write.lease_transitions, 4);
}

/// A leader that finds another holder steps down at once (client-go would keep trying until
/// its deadline).
#[test]
fn a_leader_finding_another_holder_steps_down_at_once() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    update(m.wait_elapsed(t0 + ms(500), 0.0));
    m.wrote(WriteOutcome::Conflict, t0 + ms(520), 0.0);
    assert_eq!(
        m.got(found(record("b", 3, "t9"), "6"), t0 + ms(540), 0.0),
        Next::Done
    );
    assert!(!m.is_leading(t0 + ms(540)));
    assert_eq!(
        events(&mut m),
        [
            Event::NewLeader(Some("b".into())),
            Event::StoppedLeading(StepDown::LeaseTaken {
                holder: Some("b".into())
            })
        ]
    );
}

/// Renewals fail (a partition): retried every retry period, each bounded by the deadline;
/// leadership ends at the start of the last success + renew deadline (2 s), strictly before
/// another candidate that saw that write may take over (its observation + 3 s).
#[test]
fn failed_renewals_step_down_before_the_lease_can_be_taken() {
    let t0 = Instant::now();
    let mut holder = leading(short("a"), t0);
    let mut observer = Machine::new(short("b")).unwrap();
    observer.start(t0);
    // The observer saw the holder's write right after it happened.
    let lease = record("a", 3, "t0");
    observer.got(found(lease.clone(), "1"), t0 + ms(1), 0.0);

    let mut now = t0;
    let mut attempts = 0;
    let stepped_down = loop {
        let next = match holder.wait_elapsed(now, 0.0) {
            Next::Done => break now,
            next => next,
        };
        let (_, _, timeout) = update(next);
        attempts += 1;
        // The request hangs until its timeout.
        now += timeout;
        match holder.wrote(WriteOutcome::Failed, now, 0.0) {
            Next::Wait { delay } => now += delay,
            Next::Done => break now,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(stepped_down, t0 + 2 * SEC);
    assert!(attempts >= 1);
    assert_eq!(
        events(&mut holder),
        [Event::StoppedLeading(StepDown::RenewDeadlineExceeded)]
    );
    // Quick failures instead: attempts every retry period until the deadline.
    let mut quick = leading(short("a"), t0);
    let mut now = t0 + ms(500);
    let mut tries = Vec::new();
    while let Next::Update { .. } = quick.wait_elapsed(now, 0.0) {
        tries.push(now - t0);
        match quick.wrote(WriteOutcome::Failed, now + ms(5), 0.0) {
            Next::Wait { delay } => now = now + ms(5) + delay,
            _ => break,
        }
    }
    assert_eq!(tries, [ms(500), ms(1005), ms(1510)]);
    assert!(!quick.is_leading(t0 + 2 * SEC));
    // The observer may take over only from t0 + 1 ms + 3 s.
    observer.wait_elapsed(t0 + 3 * SEC, 0.0);
    assert!(matches!(
        observer.got(found(lease.clone(), "1"), t0 + 3 * SEC, 0.0),
        Next::Wait { .. }
    ));
    observer.wait_elapsed(t0 + 3 * SEC + ms(1), 0.0);
    update(observer.got(found(lease, "1"), t0 + 3 * SEC + ms(1), 0.0));
    assert!(stepped_down < t0 + 3 * SEC + ms(1));
}

/// A renewal the server applied but whose answer came too late does not extend leadership.
#[test]
fn a_late_renewal_answer_steps_down() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    let (write, _, timeout) = update(m.wait_elapsed(t0 + ms(500), 0.0));
    assert_eq!(timeout, ms(1500));
    // The answer arrives (the driver was paused) at 2.5 s: the deadline counts from t0 + 0.5.
    let next = m.wrote(written(write.record("t1"), "2"), t0 + ms(2500), 0.0);
    assert_eq!(next, Next::Done);
    assert_eq!(
        events(&mut m),
        [Event::StoppedLeading(StepDown::RenewDeadlineExceeded)]
    );
    // A paused leader that wakes after its deadline steps down on its next call.
    let mut paused = leading(short("a"), t0);
    assert_eq!(paused.wait_elapsed(t0 + 60 * SEC, 0.0), Next::Done);
    assert!(!paused.is_leading(t0 + 60 * SEC));
}

/// A lease deleted under its holder is created again.
#[test]
fn a_deleted_lease_is_created_again_by_its_holder() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    update(m.wait_elapsed(t0 + ms(500), 0.0));
    m.wrote(WriteOutcome::Conflict, t0 + ms(510), 0.0);
    let Next::Create { write, timeout } = m.got(GetOutcome::NotFound, t0 + ms(520), 0.0) else {
        panic!()
    };
    assert_eq!(timeout, ms(1480));
    assert_eq!(write.holder_identity, "a");
    m.wrote(written(write.record("t"), "30"), t0 + ms(530), 0.0);
    assert_eq!(m.valid_until(), Some(t0 + ms(2520)));
}

// ----- Stopping and releasing -----------------------------------------------------------

#[test]
fn stopping_without_release_only_ends_leadership() {
    let t0 = Instant::now();
    let mut m = leading(short("a"), t0);
    assert_eq!(m.stop(t0 + SEC), Next::Done);
    assert!(!m.is_leading(t0 + SEC));
    assert_eq!(events(&mut m), [Event::StoppedLeading(StepDown::Stopped)]);
    assert_eq!(m.wait_elapsed(t0 + 2 * SEC, 0.0), Next::Done);
    // Never led: no StoppedLeading (client-go would call OnStoppedLeading anyway).
    let mut idle = Machine::new(short("a")).unwrap();
    idle.start(t0);
    assert_eq!(idle.stop(t0), Next::Done);
    assert!(events(&mut idle).is_empty());
}

/// "release acquired lock", TestReleaseMethodCallsGet, TestReleaseRetriesOnConflict: read,
/// then clear the holder with the resourceVersion read, retrying on conflict.
#[test]
fn release_on_cancel_reads_then_clears_the_holder() {
    let t0 = Instant::now();
    let config = ElectionConfig {
        release_on_cancel: true,
        ..short("a")
    };
    let mut m = leading(config, t0);
    let stop = t0 + SEC;
    assert_eq!(m.stop(stop), Next::Get { timeout: 2 * SEC });
    assert!(!m.is_leading(stop));
    assert_eq!(events(&mut m), [Event::StoppedLeading(StepDown::Stopped)]);
    let mine = LeaseRecord {
        lease_transitions: Some(6),
        ..record("a", 3, "t1")
    };
    let (write, rv, timeout) = update(m.got(found(mine.clone(), "4"), stop + ms(10), 0.0));
    assert_eq!((write.kind, rv.as_str()), (WriteKind::Release, "4"));
    assert_eq!(timeout, 2 * SEC - ms(10));
    let released = write.record("t2");
    assert_eq!(released.holder_identity.as_deref(), Some(""));
    assert_eq!(released.holder(), None);
    assert_eq!(released.lease_duration_seconds, Some(1));
    assert_eq!(released.lease_transitions, Some(6));
    // An in-flight renewal landed first: conflict, read again, release again.
    assert_eq!(
        m.wrote(WriteOutcome::Conflict, stop + ms(20), 0.0),
        Next::Get {
            timeout: 2 * SEC - ms(20)
        }
    );
    let (write, rv, _) = update(m.got(found(mine, "5"), stop + ms(30), 0.0));
    assert_eq!(rv, "5");
    assert_eq!(
        m.wrote(written(write.record("t3"), "6"), stop + ms(40), 0.0),
        Next::Done
    );
    assert_eq!(events(&mut m), [Event::NewLeader(None), Event::Released]);
}

/// A lease someone else holds by now is not released (client-go checks only its own last
/// observation).
#[test]
fn release_leaves_a_lease_another_holds() {
    let t0 = Instant::now();
    let mut m = leading(
        ElectionConfig {
            release_on_cancel: true,
            ..short("a")
        },
        t0,
    );
    m.stop(t0 + SEC);
    assert_eq!(
        m.got(found(record("b", 3, "x"), "9"), t0 + SEC, 0.0),
        Next::Done
    );
    let ev = events(&mut m);
    assert!(!ev.contains(&Event::Released), "{ev:?}");
    // Release gives up at its deadline.
    let mut late = leading(
        ElectionConfig {
            release_on_cancel: true,
            ..short("a")
        },
        t0,
    );
    late.stop(t0);
    assert_eq!(
        late.wrote(WriteOutcome::Conflict, t0 + 2 * SEC, 0.0),
        Next::Done
    );
}

/// After a release, another candidate takes the lease at its next attempt.
#[test]
fn a_released_lease_is_taken_at_the_next_attempt() {
    let t0 = Instant::now();
    let mut b = Machine::new(short("b")).unwrap();
    b.start(t0);
    assert!(matches!(
        b.got(found(record("a", 3, "t0"), "1"), t0, 0.0),
        Next::Wait { .. }
    ));
    let released = LeaseWrite {
        kind: WriteKind::Release,
        holder_identity: String::new(),
        lease_duration_seconds: 1,
        lease_transitions: 4,
        keep_acquire_time: None,
    }
    .record("t1");
    b.wait_elapsed(t0 + ms(500), 0.0);
    let (write, _, _) = update(b.got(found(released, "2"), t0 + ms(500), 0.0));
    assert_eq!(write.lease_transitions, 5);
    assert_eq!(
        events(&mut b),
        [Event::NewLeader(Some("a".into())), Event::NewLeader(None)]
    );
}

// ----- Many candidates, a faulty network ------------------------------------------------

/// A tiny lease store: what the API server does with one Lease.
#[derive(Default)]
struct Store {
    lease: Option<(LeaseRecord, u64)>,
    rv: u64,
}

impl Store {
    fn apply(&mut self, request: &Next, stamp: &str) -> Applied {
        match request {
            Next::Get { .. } => Applied::Got(match &self.lease {
                Some((record, rv)) => found(record.clone(), &rv.to_string()),
                None => GetOutcome::NotFound,
            }),
            Next::Create { write, .. } => Applied::Wrote(if self.lease.is_some() {
                WriteOutcome::Conflict
            } else {
                self.rv += 1;
                let record = write.record(stamp);
                self.lease = Some((record.clone(), self.rv));
                written(record, &self.rv.to_string())
            }),
            Next::Update {
                write,
                resource_version,
                ..
            } => Applied::Wrote(match &self.lease {
                None => WriteOutcome::Failed, // 404
                Some((_, rv)) if rv.to_string() != *resource_version => WriteOutcome::Conflict,
                Some(_) => {
                    self.rv += 1;
                    let record = write.record(stamp);
                    self.lease = Some((record.clone(), self.rv));
                    written(record, &self.rv.to_string())
                }
            }),
            Next::Wait { .. } | Next::Done => unreachable!(),
        }
    }

    fn holder(&self) -> Option<&str> {
        self.lease.as_ref().and_then(|(r, _)| r.holder())
    }
}

enum Applied {
    Got(GetOutcome),
    Wrote(WriteOutcome),
}

/// What one candidate waits for.
#[allow(clippy::large_enum_variant, reason = "a handful per simulation")]
enum Pending {
    /// A request: applied by the server at `apply_at` (never if lost on the way), answered at
    /// `answer_at` (a failure if the answer is lost or the timeout came first).
    Request {
        request: Next,
        apply_at: Option<Instant>,
        answer_at: Instant,
        answer_lost: bool,
        outcome: Option<Applied>,
    },
    Wait(Instant),
    /// Stopped; campaigns again (a new machine) at this instant.
    Restart(Instant),
}

struct Candidate {
    machine: Machine,
    pending: Pending,
    terms: u32,
    /// Cut off until then; `true`: requests still reach the server, answers do not.
    cut: Option<(Instant, bool)>,
}

/// xorshift64*: reproducible randomness from proptest's seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
    fn millis(&mut self, max: u64) -> Duration {
        ms(self.next() % (max + 1))
    }
}

struct Faults {
    /// A request lost before the server.
    drop_request: f64,
    /// An answer lost after the server applied the request.
    drop_answer: f64,
    /// A request slower than its timeout.
    hang: f64,
    /// A request that takes up to its whole timeout, and succeeds.
    slow: f64,
    /// A candidate stops (and later starts again) at a step.
    stop: f64,
    /// A candidate is cut off from the server for up to 5 s (its requests lost, or only the
    /// answers), starting at a request.
    partition: f64,
}

/// Runs `n` candidates for `duration`, faults stopping at `calm_after`; checks at every step
/// that at most one candidate leads and that a leader is the lease's holder on the server.
/// Returns how many terms were led in all, and whether someone led at the end.
fn simulate(
    seed: u64,
    n: usize,
    faults: &Faults,
    release: bool,
    renew_deadline: Duration,
) -> (u32, bool) {
    let mut rng = Rng(seed | 1);
    let t0 = Instant::now();
    let end = t0 + 120 * SEC;
    let calm_after = t0 + 90 * SEC;
    let config = |i: usize| ElectionConfig {
        release_on_cancel: release,
        renew_deadline,
        ..short(&format!("c{i}"))
    };
    let mut store = Store::default();
    let mut candidates: Vec<Candidate> = (0..n)
        .map(|i| {
            let mut machine = Machine::new(config(i)).unwrap();
            let first = machine.start(t0);
            let mut c = Candidate {
                machine,
                pending: Pending::Wait(t0),
                terms: 0,
                cut: None,
            };
            c.pending = send(first, t0, &mut rng, faults, false, None);
            c
        })
        .collect();
    let mut now = t0;
    while now < end {
        // The next thing to happen.
        let (i, at) = candidates
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let at = match &c.pending {
                    Pending::Request {
                        apply_at,
                        answer_at,
                        outcome,
                        ..
                    } => match apply_at {
                        Some(a) if outcome.is_none() => *a,
                        _ => *answer_at,
                    },
                    Pending::Wait(at) | Pending::Restart(at) => *at,
                };
                (i, at)
            })
            .min_by_key(|(_, at)| *at)
            .unwrap();
        now = at.max(now);
        let calm = now >= calm_after;
        let random = rng.unit();
        let c = &mut candidates[i];
        let next = match &mut c.pending {
            Pending::Request {
                request,
                apply_at: Some(a),
                outcome: outcome @ None,
                ..
            } if *a <= now => {
                let stamp = format!("{:?}", now - t0);
                *outcome = Some(store.apply(request, &stamp));
                continue;
            }
            Pending::Request {
                request,
                outcome,
                answer_lost,
                ..
            } => {
                let outcome = outcome.take().filter(|_| !*answer_lost);
                match (request, outcome) {
                    (Next::Get { .. }, Some(Applied::Got(o))) => c.machine.got(o, now, random),
                    (Next::Get { .. }, _) => c.machine.got(GetOutcome::Failed, now, random),
                    (_, Some(Applied::Wrote(o))) => c.machine.wrote(o, now, random),
                    (_, _) => c.machine.wrote(WriteOutcome::Failed, now, random),
                }
            }
            Pending::Wait(_) => {
                if !calm && rng.chance(faults.stop) {
                    c.machine.stop(now)
                } else {
                    c.machine.wait_elapsed(now, random)
                }
            }
            Pending::Restart(_) => {
                c.machine = Machine::new(config(i)).unwrap();
                c.machine.start(now)
            }
        };
        while let Some(event) = c.machine.poll_event() {
            if event == Event::StartedLeading {
                c.terms += 1;
            }
        }
        if !calm && c.cut.is_none_or(|(until, _)| until <= now) && rng.chance(faults.partition) {
            c.cut = Some((now + rng.millis(5000), rng.chance(0.5)));
        }
        let cut = c
            .cut
            .filter(|(until, _)| *until > now && !calm)
            .map(|(_, a)| a);
        c.pending = match next {
            Next::Wait { delay } => Pending::Wait(now + delay),
            Next::Done => Pending::Restart(now + rng.millis(3000)),
            request => send(request, now, &mut rng, faults, calm, cut),
        };
        // The safety property, at every step.
        let leaders: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| c.machine.is_leading(now))
            .map(|(i, _)| i)
            .collect();
        assert!(
            leaders.len() <= 1,
            "two leaders at {:?}: {leaders:?}",
            now - t0
        );
        if let [leader] = leaders[..] {
            assert_eq!(
                store.holder(),
                Some(format!("c{leader}").as_str()),
                "c{leader} leads at {:?} but the lease says otherwise",
                now - t0
            );
        }
    }
    let terms = candidates.iter().map(|c| c.terms).sum();
    let someone_leads = candidates.iter().any(|c| c.machine.is_leading(now));
    (terms, someone_leads)
}

/// Sends a request at `now`; `cut`: the candidate is cut off (`true`: only the answers).
fn send(
    request: Next,
    now: Instant,
    rng: &mut Rng,
    faults: &Faults,
    calm: bool,
    cut: Option<bool>,
) -> Pending {
    let timeout = match &request {
        Next::Get { timeout } | Next::Create { timeout, .. } | Next::Update { timeout, .. } => {
            *timeout
        }
        Next::Wait { .. } | Next::Done => unreachable!(),
    };
    let faulty = !calm;
    let latency = if faulty && rng.chance(faults.hang) {
        timeout + rng.millis(2000)
    } else if faulty && rng.chance(faults.slow) {
        timeout.mul_f64(rng.unit() * 0.999)
    } else {
        ms(1) + rng.millis(200)
    };
    let lost = cut == Some(false) || (faulty && rng.chance(faults.drop_request));
    let apply_at = (!lost).then(|| now + latency.mul_f64(rng.unit()));
    let timed_out = latency >= timeout;
    Pending::Request {
        request,
        apply_at,
        answer_at: now + latency.min(timeout),
        answer_lost: timed_out || cut.is_some() || (faulty && rng.chance(faults.drop_answer)),
        outcome: None,
    }
}

#[test]
fn without_faults_one_candidate_leads_for_good() {
    let none = Faults {
        drop_request: 0.0,
        drop_answer: 0.0,
        hang: 0.0,
        slow: 0.0,
        stop: 0.0,
        partition: 0.0,
    };
    for seed in 1..20 {
        let (terms, leads) = simulate(seed, 3, &none, false, 2 * SEC);
        assert_eq!(terms, 1, "seed {seed}");
        assert!(leads);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Three candidates, lost requests, lost answers, hung and slow requests, partitions,
    /// stops and restarts (with
    /// and without release): never two leaders at once, a leader is always the lease's holder
    /// on the server, and once the faults stop someone leads.
    #[test]
    fn never_two_leaders_over_a_faulty_network(
        seed in any::<u64>(),
        drop_request in 0.0f64..0.4,
        drop_answer in 0.0f64..0.4,
        hang in 0.0f64..0.2,
        slow in 0.0f64..0.5,
        stop in 0.0f64..0.05,
        partition in 0.0f64..0.1,
        release in any::<bool>(),
        // The narrower the margin under the lease duration (3 s), the sharper the test.
        renew_deadline in prop_oneof![Just(2 * SEC), Just(ms(2500)), Just(ms(2900))],
    ) {
        let faults = Faults { drop_request, drop_answer, hang, slow, stop, partition };
        let (_, leads) = simulate(seed, 3, &faults, release, renew_deadline);
        prop_assert!(leads, "nobody leads 30 s after the faults stopped");
    }
}

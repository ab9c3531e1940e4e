//! Resync cadence: during a quiet window (no writes, no faults), does each handler get its
//! resyncs at its own period, complete, and never before it is due?

use std::collections::BTreeSet;
use std::time::Duration;

use informer_core::{Notification, Object, key_of};
use tokio::time::Instant;

/// The resync rule of one handler: its effective period (zero: never resynced) and the
/// informer's resync check period.
///
/// An informer checks every `check_period` which handlers are due; a handler is due when its
/// own `period` has passed since its last resync (or its registration). So, in a quiet window,
/// a handler's resyncs come in *bursts* (an equal-resourceVersion update of every cached
/// object, at one check), and two consecutive bursts are exactly the smallest multiple of
/// `check_period` that is not below `period` apart: never before due, and no check skipped
/// once due (client-go's cadence: its timer is re-armed after each resync, and a listener is
/// due once `now` reaches its next resync).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResyncCadence {
    /// The handler's effective resync period (its registration's); zero: never.
    pub period: Duration,
    /// The informer's resync check period (`resync_check_period`).
    pub check_period: Duration,
    /// Slack on every bound (timer granularity; zero is right on paused time but for the
    /// timer wheel's millisecond).
    pub tolerance: Duration,
}

/// What [`check_resync_cadence`] saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CadenceSummary {
    /// Resync bursts in the window.
    pub bursts: usize,
    /// Resync notifications in the window.
    pub resyncs: usize,
}

/// Checks one handler's notifications recorded during a quiet window `[start, end]`
/// (`timed`, from [`Recording::timed`](super::Recording::timed)) against `cadence`, given the
/// keys the cache held throughout (`keys`). Notifications outside the window are ignored.
///
/// The rules, for a handler whose period is not zero:
/// - in the window it hears only resyncs (updates whose old and new resourceVersions are equal
///   and whose objects are the same);
/// - resyncs recorded within `tolerance` of each other form one burst, which holds every key
///   of `keys` exactly once;
/// - consecutive bursts are at least `period - tolerance` apart (never before due) and at most
///   `due + tolerance`, where `due` is the smallest multiple of `check_period` not below
///   `period` (no check skipped); the first burst comes at most `period + check_period +
///   tolerance` after `start` (the handler may have been registered just before it), and the
///   last one at most `due + tolerance` before `end`.
///
/// A handler whose period is zero hears nothing at all in the window. With an empty `keys`
/// there is nothing to resync, and only "nothing but resyncs" is checked.
///
/// Returns what was seen, or every broken rule, one line each.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer_core::Notification;
/// use informer_testing::JsonObject;
/// use informer_testing::convergence::{Recording, ResyncCadence, check_resync_cadence};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// let a = Arc::new(JsonObject::new(Some("ns"), "a").with_resource_version("7"));
/// let handler = Recording::new("h");
/// let start = tokio::time::Instant::now();
/// for _ in 0..3 {
///     tokio::time::sleep(Duration::from_secs(10)).await;
///     handler.record(Notification::Update { old: Arc::clone(&a), new: Arc::clone(&a) });
/// }
/// let end = tokio::time::Instant::now();
/// let keys = ["ns/a".to_owned()].into();
/// let cadence = ResyncCadence {
///     period: Duration::from_secs(10),
///     check_period: Duration::from_secs(5),
///     tolerance: Duration::from_millis(1),
/// };
/// let seen = check_resync_cadence(&handler.timed(0), start, end, &cadence, &keys).unwrap();
/// assert_eq!(seen.bursts, 3);
///
/// // Resynced every 5 s when its period is 10 s: before it was due.
/// let early = ResyncCadence { period: Duration::from_secs(20), ..cadence };
/// assert!(check_resync_cadence(&handler.timed(0), start, end, &early, &keys).is_err());
/// # }
/// ```
pub fn check_resync_cadence<K: Object>(
    timed: &[(Instant, Notification<K>)],
    start: Instant,
    end: Instant,
    cadence: &ResyncCadence,
    keys: &BTreeSet<String>,
) -> Result<CadenceSummary, Vec<String>> {
    let mut problems = Vec::new();
    let mut summary = CadenceSummary::default();
    // (time, key) of every resync in the window.
    let mut resyncs: Vec<(Instant, String)> = Vec::new();
    for (at, n) in timed {
        if *at < start || *at > end {
            continue;
        }
        let resync = match n {
            Notification::Update { old, new }
                if old.object_resource_version() == new.object_resource_version() =>
            {
                key_of(new.as_ref()).ok().map(|k| k.to_string())
            }
            _ => None,
        };
        match resync {
            Some(key) => resyncs.push((*at, key)),
            None => problems.push(format!(
                "{:?} into the quiet window: {n:?}, which is not a resync",
                at.duration_since(start)
            )),
        }
    }
    summary.resyncs = resyncs.len();
    if cadence.period.is_zero() {
        if let Some((at, key)) = resyncs.first() {
            problems.push(format!(
                "resynced ({key}, {:?} into the window, {} resync(s) in all) although its \
                 resync period is zero",
                at.duration_since(start),
                resyncs.len()
            ));
        }
        return finish(summary, problems);
    }
    let tolerance = cadence.tolerance;
    // Bursts: runs of resyncs within `tolerance` of each other.
    let mut bursts: Vec<(Instant, Vec<String>)> = Vec::new();
    for (at, key) in resyncs {
        match bursts.last_mut() {
            Some((first, keys)) if at.duration_since(*first) <= tolerance => keys.push(key),
            _ => bursts.push((at, vec![key])),
        }
    }
    summary.bursts = bursts.len();
    for (at, got) in &bursts {
        let when = at.duration_since(start);
        let mut seen = BTreeSet::new();
        let duplicates: Vec<&String> = got.iter().filter(|k| !seen.insert(k.as_str())).collect();
        if !duplicates.is_empty() {
            problems.push(format!(
                "the resync at {when:?} into the window told some objects twice: {duplicates:?}"
            ));
        }
        let missing: Vec<&String> = keys.iter().filter(|k| !seen.contains(k.as_str())).collect();
        let extra: Vec<&&str> = seen.iter().filter(|k| !keys.contains(**k)).collect();
        if !missing.is_empty() || !extra.is_empty() {
            problems.push(format!(
                "the resync at {when:?} into the window is not the cache: missing {missing:?}, \
                 not cached {extra:?}"
            ));
        }
    }
    if keys.is_empty() {
        return finish(summary, problems);
    }
    let earliest = cadence.period.saturating_sub(tolerance);
    let latest = due_gap(cadence) + tolerance;
    let first_latest = cadence.period + cadence.check_period + tolerance;
    for pair in bursts.windows(2) {
        let gap = pair[1].0.duration_since(pair[0].0);
        if gap < earliest {
            problems.push(format!(
                "resynced {:?} after its previous resync (at {:?} into the window): before its \
                 period of {:?} was due",
                gap,
                pair[1].0.duration_since(start),
                cadence.period
            ));
        } else if gap > latest {
            problems.push(format!(
                "{:?} between two resyncs (the later at {:?} into the window): a check was \
                 skipped (period {:?}, check period {:?}: due every {:?})",
                gap,
                pair[1].0.duration_since(start),
                cadence.period,
                cadence.check_period,
                due_gap(cadence)
            ));
        }
    }
    let length = end.duration_since(start);
    match (bursts.first(), bursts.last()) {
        (Some((first, _)), Some((last, _))) => {
            if first.duration_since(start) > first_latest {
                problems.push(format!(
                    "first resync only {:?} into the window (period {:?}, check period {:?})",
                    first.duration_since(start),
                    cadence.period,
                    cadence.check_period
                ));
            }
            if end.duration_since(*last) > latest {
                problems.push(format!(
                    "no resync in the last {:?} of the window (period {:?}, check period {:?})",
                    end.duration_since(*last),
                    cadence.period,
                    cadence.check_period
                ));
            }
        }
        _ if length > first_latest => problems.push(format!(
            "no resync in a quiet window of {length:?} (period {:?}, check period {:?})",
            cadence.period, cadence.check_period
        )),
        _ => {}
    }
    finish(summary, problems)
}

/// The smallest multiple of the check period not below the period: the gap between two
/// resyncs of a handler checked on a steady grid.
fn due_gap(cadence: &ResyncCadence) -> Duration {
    let (period, check) = (cadence.period, cadence.check_period);
    if check.is_zero() || check >= period {
        return check.max(period);
    }
    let checks = period.as_nanos().div_ceil(check.as_nanos());
    check.saturating_mul(u32::try_from(checks).unwrap_or(u32::MAX))
}

fn finish(summary: CadenceSummary, problems: Vec<String>) -> Result<CadenceSummary, Vec<String>> {
    if problems.is_empty() {
        Ok(summary)
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use std::sync::Arc;

    use super::*;
    use crate::JsonObject;
    use crate::convergence::Recording;

    fn obj(name: &str, rv: &str) -> Arc<JsonObject> {
        Arc::new(JsonObject::new(Some("ns"), name).with_resource_version(rv))
    }

    fn resync(r: &Recording<JsonObject>, o: &Arc<JsonObject>) {
        r.record(Notification::Update {
            old: Arc::clone(o),
            new: Arc::clone(o),
        });
    }

    fn cadence(period: u64, check: u64) -> ResyncCadence {
        ResyncCadence {
            period: Duration::from_secs(period),
            check_period: Duration::from_secs(check),
            tolerance: Duration::from_millis(1),
        }
    }

    fn keys(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| format!("ns/{n}")).collect()
    }

    /// Records bursts of resyncs of `objects` at the given offsets (seconds) from now; returns
    /// the window's start and end (`end` seconds after the start).
    async fn bursts(
        r: &Recording<JsonObject>,
        objects: &[Arc<JsonObject>],
        at: &[u64],
        end: u64,
    ) -> (Instant, Instant) {
        let start = Instant::now();
        for t in at {
            tokio::time::sleep_until(start + Duration::from_secs(*t)).await;
            for o in objects {
                resync(r, o);
            }
        }
        tokio::time::sleep_until(start + Duration::from_secs(end)).await;
        (start, Instant::now())
    }

    #[tokio::test(start_paused = true)]
    async fn resyncs_at_a_multiple_of_the_check_period_pass() {
        let r = Recording::new("h");
        let (a, b) = (obj("a", "1"), obj("b", "2"));
        // Period 15 s, checks every 10 s: due at 15, told at the check at 20, and so on.
        let (start, end) = bursts(&r, &[a, b], &[10, 30, 50], 60).await;
        let seen = check_resync_cadence(
            &r.timed(0),
            start,
            end,
            &cadence(15, 10),
            &keys(&["a", "b"]),
        )
        .unwrap();
        assert_eq!((seen.bursts, seen.resyncs), (3, 6));
    }

    #[tokio::test(start_paused = true)]
    async fn a_skipped_check_is_caught() {
        let r = Recording::new("h");
        let (start, end) = bursts(&r, &[obj("a", "1")], &[10, 30, 40], 50).await;
        let problems =
            check_resync_cadence(&r.timed(0), start, end, &cadence(10, 10), &keys(&["a"]))
                .unwrap_err();
        assert!(
            problems[0].contains("20s between two resyncs"),
            "{problems:?}"
        );
        assert!(problems[0].contains("a check was skipped"), "{problems:?}");
        assert_eq!(
            due_gap(&cadence(15, 10)),
            Duration::from_secs(20),
            "a 15 s period checked every 10 s is due every 20 s"
        );
        assert_eq!(due_gap(&cadence(30, 10)), Duration::from_secs(30));
    }

    #[tokio::test(start_paused = true)]
    async fn an_early_resync_is_caught() {
        let r = Recording::new("h");
        let (start, end) = bursts(&r, &[obj("a", "1")], &[10, 15, 30], 35).await;
        let problems =
            check_resync_cadence(&r.timed(0), start, end, &cadence(10, 5), &keys(&["a"]))
                .unwrap_err();
        assert!(problems[0].contains("before its period"), "{problems:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn incomplete_or_missing_resyncs_are_caught() {
        let r = Recording::new("h");
        let (start, end) = bursts(&r, &[obj("a", "1")], &[10, 20], 30).await;
        let problems = check_resync_cadence(
            &r.timed(0),
            start,
            end,
            &cadence(10, 10),
            &keys(&["a", "b"]),
        )
        .unwrap_err();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("missing [\"ns/b\"]"), "{problems:?}");

        let silent = Recording::<JsonObject>::new("silent");
        let problems = check_resync_cadence(
            &silent.timed(0),
            start,
            end,
            &cadence(10, 10),
            &keys(&["a"]),
        )
        .unwrap_err();
        assert!(
            problems[0].contains("no resync in a quiet window"),
            "{problems:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_that_never_resyncs_hears_nothing() {
        let r = Recording::new("h");
        let (start, end) = bursts(&r, &[obj("a", "1")], &[10], 20).await;
        let problems =
            check_resync_cadence(&r.timed(0), start, end, &cadence(0, 10), &keys(&["a"]))
                .unwrap_err();
        assert!(problems[0].contains("period is zero"), "{problems:?}");
        let quiet = Recording::<JsonObject>::new("quiet");
        check_resync_cadence(&quiet.timed(0), start, end, &cadence(0, 10), &keys(&["a"])).unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn anything_but_a_resync_in_the_window_is_caught() {
        let r = Recording::new("h");
        let start = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        r.record(Notification::Update {
            old: obj("a", "1"),
            new: obj("a", "2"),
        });
        let problems = check_resync_cadence(
            &r.timed(0),
            start,
            Instant::now(),
            &cadence(10, 10),
            &keys(&["a"]),
        )
        .unwrap_err();
        assert!(problems[0].contains("not a resync"), "{problems:?}");
    }
}

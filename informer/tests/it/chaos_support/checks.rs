//! The checks of one seed beyond the convergence checker's rules: initial-list flags, the
//! index, the transform on every path, resyncs (who gets them, and when), the moment of sync.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use informer::{Notification, ObjectOrTombstone, Registration, SharedIndexInformer};
use informer_testing::JsonObject;
use informer_testing::convergence::{
    CheckOptions, Recording, ResyncCadence, check_resync_cadence, fold,
};

use super::queue::{FirstList, rv_of};

/// Once a handler got an add that is not part of the initial list (or of a late handler's
/// replay of the cache), it gets no more initial-list adds.
pub fn initial_flags(recordings: &[&Recording<JsonObject>]) -> Result<(), String> {
    for r in recordings {
        let mut live_since = None;
        for (i, n) in r.notifications().iter().enumerate() {
            if let Notification::Add {
                is_in_initial_list, ..
            } = n
            {
                match (is_in_initial_list, live_since) {
                    (false, None) => live_since = Some(i),
                    (true, Some(live)) => {
                        return Err(format!(
                            "handler {:?}: #{i} {n:?} is flagged initial after the live add #{live}",
                            r.name()
                        ));
                    }
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// The `tier` index lists exactly the cached objects carrying each tier.
pub fn index_matches_cache(informer: &SharedIndexInformer<JsonObject>) -> Result<(), String> {
    let reader = informer.lister();
    let cached = reader.list_all();
    let mut values: BTreeSet<String> = BTreeSet::new();
    for obj in &cached {
        if let Some(tier) = obj.metadata.labels.get("tier") {
            values.insert(tier.clone());
        }
    }
    let indexed: BTreeSet<String> = reader
        .list_index_func_values("tier")
        .map_err(|e| e.to_string())?
        .into_iter()
        .collect();
    if indexed != values {
        return Err(format!("index values {indexed:?}, cached tiers {values:?}"));
    }
    for tier in values {
        let mut by_index: Vec<String> = reader
            .index_keys("tier", &tier)
            .map_err(|e| e.to_string())?
            .iter()
            .map(ToString::to_string)
            .collect();
        by_index.sort();
        let mut expected: Vec<String> = cached
            .iter()
            .filter(|o| o.metadata.labels.get("tier") == Some(&tier))
            .map(|o| {
                informer::key_of(o.as_ref())
                    .map(|k| k.to_string())
                    .unwrap_or_default()
            })
            .collect();
        expected.sort();
        if by_index != expected {
            return Err(format!(
                "tier {tier}: index {by_index:?}, cache {expected:?}"
            ));
        }
    }
    Ok(())
}

/// Every object the cache holds and every object any handler was told about went through the
/// transform (it has no `v` label) when the informer has one, and did not otherwise: the
/// transform runs on every path (list pages, streaming lists, each watch event type, relists
/// reusing stored objects).
pub fn transform_everywhere(
    transform: bool,
    cached: &[Arc<JsonObject>],
    recordings: &[&Recording<JsonObject>],
) -> Result<usize, String> {
    let ok = |o: &JsonObject| o.metadata.labels.contains_key("v") != transform;
    let what = if transform {
        "kept the label the transform removes"
    } else {
        "lost a label without a transform"
    };
    let mut checked = 0;
    for o in cached {
        checked += 1;
        if !ok(o) {
            return Err(format!("the cache's {} {what}", o.key_string()));
        }
    }
    for r in recordings {
        for (i, n) in r.notifications().iter().enumerate() {
            let objects: Vec<&Arc<JsonObject>> = match n {
                Notification::Add { object, .. } => vec![object],
                Notification::Update { old, new } => vec![old, new],
                Notification::Delete(ObjectOrTombstone::Object(o)) => vec![o],
                Notification::Delete(ObjectOrTombstone::Tombstone(t)) => vec![&t.last_known],
            };
            for o in objects {
                checked += 1;
                if !ok(o) {
                    return Err(format!("handler {:?}: #{i} {n:?} {what}", r.name()));
                }
            }
        }
    }
    Ok(checked)
}

/// `ns/name` of a cached object, for messages.
trait KeyString {
    fn key_string(&self) -> String;
}

impl KeyString for JsonObject {
    fn key_string(&self) -> String {
        informer::key_of(self)
            .map(|k| k.to_string())
            .unwrap_or_default()
    }
}

/// A handler whose resync period is zero never gets an update with equal resourceVersions:
/// neither a resync nor a relist that saw no change goes to a handler that is not due.
pub fn no_resync_unless_due(
    handlers: &[(&Recording<JsonObject>, &Registration)],
) -> Result<(), String> {
    for (recording, registration) in handlers {
        if !registration.stats().resync_period.is_zero() {
            continue;
        }
        let resync = recording
            .notifications()
            .into_iter()
            .enumerate()
            .find(|(_, n)| {
                matches!(n, Notification::Update { old, new }
                if old.metadata.resource_version == new.metadata.resource_version)
            });
        if let Some((i, n)) = resync {
            return Err(format!(
                "handler {:?} has no resync period, yet got #{i} {n:?} (an update with equal \
                 resourceVersions goes only to handlers whose resync is due)",
                recording.name()
            ));
        }
    }
    Ok(())
}

/// The notifications of a handler that stopped receiving them (removed, or disconnected on
/// overflow) fold without violations: what it heard is a consistent prefix.
pub fn consistent_prefix(
    recording: &Recording<JsonObject>,
    options: &CheckOptions,
) -> Result<(), String> {
    let folded = fold(recording.name(), &recording.notifications(), options);
    if folded.violations.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = folded
        .violations
        .iter()
        .map(|v| format!("  - {v}"))
        .collect();
    Err(format!(
        "handler {:?} (stopped early) heard an inconsistent story:\n{}",
        recording.name(),
        lines.join("\n")
    ))
}

/// At the moment a registration made before start reports synced, the informer has synced
/// and the handler has been told every object of the first list, at its listed
/// resourceVersion, as an initial-list add.
pub fn told_first_list(
    recording: &Recording<JsonObject>,
    informer_synced: bool,
    first: &FirstList,
) -> Result<(), String> {
    if !informer_synced {
        return Err(format!(
            "registration {:?} reported synced before the informer",
            recording.name()
        ));
    }
    let told: BTreeSet<(String, u64)> = recording
        .notifications()
        .iter()
        .filter_map(|n| match n {
            Notification::Add {
                object,
                is_in_initial_list: true,
            } => Some((object.key_string(), rv_of(object))),
            _ => None,
        })
        .collect();
    let missing: Vec<String> = first
        .iter()
        .filter(|(k, rv)| !told.contains(&(k.clone(), *rv)))
        .map(|(k, rv)| format!("{k}@{rv}"))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "registration {:?} reported synced before its handler was told {} of the {} \
             first-list objects as initial adds: {}",
            recording.name(),
            missing.len(),
            first.len(),
            missing.join(", ")
        ))
    }
}

/// What the quiet window found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CadenceStats {
    /// Handlers whose cadence was checked.
    pub handlers: u64,
    /// Resync bursts seen and checked.
    pub bursts: u64,
    /// Windows not checked because the informer relisted during them.
    pub skipped: u64,
    /// Handlers disconnected during the window (a bounded stream overflowing on resyncs).
    pub disconnected: u64,
}

/// A handler whose cadence the quiet window checks.
pub struct Cadenced<'a> {
    pub recording: &'a Recording<JsonObject>,
    pub registration: &'a Registration,
}

/// Runs a quiet window (no writes, no faults: resyncs only) long enough for every handler
/// to resync a few times, then checks each handler's cadence with
/// [`check_resync_cadence`]: at its own period, each resync holding every cached object once,
/// never before due, and no check skipped. Paused time only (virtual time is exact; real-time
/// lateness is what issue 10's own real-time tests are for). A window in which the informer
/// relisted (its watch from `"0"` ended) is not checked, and counted as skipped.
pub async fn cadence_window(
    informer: &SharedIndexInformer<JsonObject>,
    handlers: &[Cadenced<'_>],
) -> Result<CadenceStats, String> {
    let check = informer.resync_check_period();
    let mut stats = CadenceStats::default();
    if check.is_zero() {
        return Ok(stats);
    }
    let longest = handlers
        .iter()
        .map(|h| h.registration.stats().resync_period)
        .max()
        .unwrap_or_default()
        .max(check);
    let window = ((longest + check) * 3).min(Duration::from_secs(600));
    let lists = || {
        informer
            .stats()
            .reflector
            .map_or(0, |r| r.counters.lists + r.counters.list_requests)
    };
    let before = lists();
    let starts: Vec<usize> = handlers.iter().map(|h| h.recording.len()).collect();
    let start = tokio::time::Instant::now();
    tokio::time::sleep(window).await;
    let end = tokio::time::Instant::now();
    if lists() != before {
        stats.skipped += 1;
        return Ok(stats);
    }
    let keys: BTreeSet<String> = informer
        .lister()
        .list_keys()
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut problems = Vec::new();
    for (h, from) in handlers.iter().zip(starts) {
        // A bounded stream may overflow on a burst of resyncs: it is then disconnected
        // (checked as such by the caller), and its cadence is moot.
        if !h.registration.is_active() {
            stats.disconnected += 1;
            continue;
        }
        let cadence = ResyncCadence {
            period: h.registration.stats().resync_period,
            check_period: check,
            // The timer wheel's granularity.
            tolerance: Duration::from_millis(2),
        };
        match check_resync_cadence(&h.recording.timed(from), start, end, &cadence, &keys) {
            Ok(seen) => {
                stats.handlers += 1;
                stats.bursts += seen.bursts as u64;
            }
            Err(found) => {
                for p in found {
                    problems.push(format!(
                        "handler {:?} (resync period {:?}, check period {check:?}): {p}",
                        h.recording.name(),
                        cadence.period
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(stats)
    } else {
        Err(format!(
            "in a quiet window of {window:?}:\n  - {}",
            problems.join("\n  - ")
        ))
    }
}

/// Whenever the informer is idle (nothing queued or held back) the cache is exactly the
/// server's state at the informer's last synced resourceVersion, within its namespace and
/// selector: a stale or missing object, even one a later relist would repair, is caught here.
/// Keys the index trap fired on are left out (their skipped delta waits for a later change),
/// and so is a resourceVersion of `"0"` (a watch from `"0"` applies a snapshot's events
/// without moving the resourceVersion). Returns whether the check ran.
pub fn idle_cache_is_the_server_at_its_resource_version(
    informer: &SharedIndexInformer<JsonObject>,
    queue: &super::queue::ChaosQueue,
    world: &super::world::World<'_>,
) -> Result<bool, String> {
    use informer::Queue as _;
    if !queue.is_empty() {
        return Ok(false);
    }
    let Some(rv) = informer
        .last_synced_resource_version()
        .and_then(|rv| rv.parse::<u64>().ok())
        .filter(|rv| *rv > 0)
    else {
        return Ok(false);
    };
    let plan = &world.plan;
    let selector = plan
        .selector
        .map(|s| informer::LabelSelector::parse(s).expect("a valid selector"));
    let namespace = plan.namespace.map(super::namespace);
    let trapped: BTreeSet<String> = world.trap.keys();
    let expected: std::collections::BTreeMap<String, (String, u64)> = world
        .state_at(rv)
        .into_iter()
        .filter(|(key, s)| {
            !trapped.contains(key)
                && namespace
                    .as_deref()
                    .is_none_or(|ns| s.namespace.as_deref() == Some(ns))
                && selector.as_ref().is_none_or(|sel| sel.matches(&s.labels))
        })
        .map(|(key, s)| (key, (s.uid, s.rv)))
        .collect();
    let cached: std::collections::BTreeMap<String, (String, u64)> = informer
        .lister()
        .list_all()
        .iter()
        .map(|o| (o.key_string(), o))
        .filter(|(key, _)| !trapped.contains(key))
        .map(|(key, o)| (key, (o.metadata.uid.clone().unwrap_or_default(), rv_of(o))))
        .collect();
    if expected == cached {
        return Ok(true);
    }
    let keys: BTreeSet<&String> = expected.keys().chain(cached.keys()).collect();
    let diffs: Vec<String> = keys
        .into_iter()
        .filter_map(|k| {
            let (e, c) = (expected.get(k), cached.get(k));
            (e != c).then(|| {
                let show = |v: Option<&(String, u64)>| {
                    v.map_or("nothing".to_owned(), |(uid, rv)| {
                        format!("uid={} rv={rv}", uid.get(..8).unwrap_or(uid))
                    })
                };
                format!(
                    "{k}: the server had {}, the cache holds {}",
                    show(e),
                    show(c)
                )
            })
        })
        .collect();
    Err(format!(
        "idle at resourceVersion {rv} (nothing queued), the cache is not the server's state \
         then: {}",
        diffs.join("; ")
    ))
}

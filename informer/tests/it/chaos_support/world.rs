//! The world the informer lives in: the server, the schedule's writes and faults, and what
//! the schedule did (the expected deletions, with their final contents).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use fake_apiserver::{
    DeleteOutcome, FakeApiServer, Faults, RawLine, StoredObject, UnseenAnnouncement, status,
};
use informer::IndexFunc;
use informer_testing::JsonObject;
use informer_testing::convergence::Expected;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::plan::{Clock, Plan};
use super::{DELIBERATE_PANIC, RESOURCE, content_digest, name, namespace};

/// The finalizer some objects are created with.
const FINALIZER: &str = "chaos.example/hold";

/// The `tier` index function, with a trap: once armed, the next object it indexes makes it
/// panic (the informer reports the delta and skips it: the object stays out of the cache, or
/// at its older version, until its next change). Armed only after the informer has synced.
pub struct IndexTrap {
    armed: AtomicBool,
    /// The objects it fired on: key and resourceVersion.
    fired: Mutex<Vec<(String, String)>>,
}

impl IndexTrap {
    /// A disarmed trap.
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            armed: AtomicBool::new(false),
            fired: Mutex::new(Vec::new()),
        })
    }

    /// The index function: the `tier` label's value.
    pub fn index_func(self: &Arc<Self>) -> IndexFunc<JsonObject> {
        let trap = Arc::clone(self);
        Arc::new(move |obj: &JsonObject| {
            if trap.armed.swap(false, Ordering::AcqRel) {
                let key = informer::key_of(obj)
                    .map(|k| k.to_string())
                    .unwrap_or_default();
                let rv = obj.metadata.resource_version.clone().unwrap_or_default();
                trap.fired.lock().push((key, rv));
                std::panic::panic_any(DELIBERATE_PANIC);
            }
            obj.metadata
                .labels
                .get("tier")
                .cloned()
                .into_iter()
                .collect()
        })
    }

    fn arm(&self) {
        self.armed.store(true, Ordering::Release);
    }

    /// Disarms it; returns the keys it fired on so far.
    pub fn disarm(&self) -> Vec<String> {
        self.armed.store(false, Ordering::Release);
        self.fired.lock().iter().map(|(k, _)| k.clone()).collect()
    }

    /// The keys it fired on.
    pub fn keys(&self) -> std::collections::BTreeSet<String> {
        self.fired.lock().iter().map(|(k, _)| k.clone()).collect()
    }

    /// How often it fired.
    pub fn fired(&self) -> usize {
        self.fired.lock().len()
    }
}

/// The server, the schedule's RNG and what the schedule did.
pub struct World<'a> {
    pub server: FakeApiServer,
    pub faults: Faults,
    pub rng: StdRng,
    pub plan: Plan,
    /// Live objects as (namespace index, name index), mirroring the server.
    pub live: BTreeSet<(usize, usize)>,
    /// Live objects created with a finalizer: a delete only marks them.
    pub held: BTreeSet<(usize, usize)>,
    /// Held objects marked for deletion: the next update, which drops the finalizer, deletes.
    pub finalizing: BTreeSet<(usize, usize)>,
    pub expected: Expected,
    pub counter: u64,
    pub writes: u64,
    pub fault_count: u64,
    pub trap: Arc<IndexTrap>,
    /// Set once the informer has synced (the trap is only armed after).
    pub synced: Arc<AtomicBool>,
    /// Every write's outcome, in resourceVersion order: what the server held at any
    /// resourceVersion ([`World::state_at`]).
    pub timeline: Vec<Change>,
    pub log: &'a mut Vec<String>,
}

/// One write's outcome on one key: its resourceVersion and the object's state after it
/// (`None`: gone).
#[derive(Debug, Clone)]
pub struct Change {
    pub rv: u64,
    pub key: String,
    pub after: Option<Snapshot>,
}

/// What the idle check compares of an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub uid: String,
    pub rv: u64,
    pub namespace: Option<String>,
    pub labels: std::collections::BTreeMap<String, String>,
}

impl Snapshot {
    fn of(obj: &StoredObject) -> Self {
        Self {
            uid: obj.uid().to_owned(),
            rv: obj.resource_version(),
            namespace: obj.namespace().map(str::to_owned),
            labels: obj.labels().clone(),
        }
    }
}

impl<'a> World<'a> {
    pub fn new(
        server: &FakeApiServer,
        plan: &Plan,
        trap: Arc<IndexTrap>,
        synced: Arc<AtomicBool>,
        log: &'a mut Vec<String>,
    ) -> Self {
        let mut expected = Expected::new();
        expected.track_deletions();
        Self {
            server: server.clone(),
            faults: server.faults(),
            rng: StdRng::seed_from_u64(plan.seed),
            plan: plan.clone(),
            live: BTreeSet::new(),
            held: BTreeSet::new(),
            finalizing: BTreeSet::new(),
            expected,
            counter: 0,
            writes: 0,
            fault_count: 0,
            trap,
            synced,
            timeline: Vec::new(),
            log,
        }
    }

    fn changed(&mut self, obj: &StoredObject, gone: bool) {
        self.timeline.push(Change {
            rv: obj.resource_version(),
            key: obj.key().to_owned(),
            after: (!gone).then(|| Snapshot::of(obj)),
        });
    }

    /// What the server held at resourceVersion `rv`, by key.
    pub fn state_at(&self, rv: u64) -> std::collections::BTreeMap<String, Snapshot> {
        let mut state = std::collections::BTreeMap::new();
        for c in self.timeline.iter().take_while(|c| c.rv <= rv) {
            match &c.after {
                Some(s) => state.insert(c.key.clone(), s.clone()),
                None => state.remove(&c.key),
            };
        }
        state
    }

    pub fn note(&mut self, line: String) {
        self.log.push(line);
    }

    /// A duration of the plan on the seed's clock.
    fn time(&self, d: Duration) -> Duration {
        self.plan.time(d)
    }

    fn object(&mut self, ns: usize, n: usize, hold: bool) -> JsonObject {
        self.counter += 1;
        let mut obj = JsonObject::new(Some(&namespace(ns)), &name(n))
            .with_label("v", self.counter.to_string());
        if hold {
            obj.metadata
                .other
                .insert("finalizers".into(), serde_json::json!([FINALIZER]));
        }
        if self.rng.random_bool(0.6) {
            obj = obj.with_label("tier", ["a", "b"][self.rng.random_range(0..2)]);
        }
        obj
    }

    fn random_slot(&mut self) -> (usize, usize) {
        (
            self.rng.random_range(0..self.plan.namespaces),
            self.rng.random_range(0..self.plan.names),
        )
    }

    fn random_live(&mut self) -> Option<(usize, usize)> {
        if self.live.is_empty() {
            return None;
        }
        let i = self.rng.random_range(0..self.live.len());
        self.live.iter().nth(i).copied()
    }

    /// Records the deletion of `obj` (its final state), with the content the informer should
    /// hand out for it.
    fn record_deletion(&mut self, obj: &StoredObject) {
        let rv = obj.resource_version().to_string();
        self.expected
            .record_deletion(obj.uid(), obj.key(), Some(&rv));
        let digest = content_digest(&self.plan, obj);
        self.expected.set_final_content(obj.uid(), digest);
    }

    fn create(&mut self, (ns, n): (usize, usize)) -> String {
        let hold = self.rng.random_bool(0.15);
        let obj = self.object(ns, n, hold);
        let created = self
            .server
            .create(RESOURCE, &obj)
            .unwrap_or_else(|s| panic!("create {}/{}: {s}", namespace(ns), name(n)));
        self.changed(&created, false);
        self.live.insert((ns, n));
        if hold {
            self.held.insert((ns, n));
        }
        self.writes += 1;
        format!(
            "create {}@{}{}",
            created.key(),
            created.resource_version(),
            if hold { " (with a finalizer)" } else { "" }
        )
    }

    /// An update; of an object marked for deletion, it drops the finalizer, which deletes it.
    fn update(&mut self, slot: (usize, usize)) -> String {
        let finalizing = self.finalizing.remove(&slot);
        let hold = self.held.contains(&slot) && !finalizing;
        let obj = self.object(slot.0, slot.1, hold);
        let updated = self
            .server
            .update(RESOURCE, &obj)
            .unwrap_or_else(|s| panic!("update {}/{}: {s}", namespace(slot.0), name(slot.1)));
        self.writes += 1;
        self.changed(&updated, finalizing);
        let rv = updated.resource_version().to_string();
        if finalizing {
            self.record_deletion(&updated);
            self.live.remove(&slot);
            self.held.remove(&slot);
            return format!("update {}@{rv} (finalizer dropped: deleted)", updated.key());
        }
        format!("update {}@{rv}", updated.key())
    }

    /// A delete; returns whether the object is gone (not just marked for deletion).
    fn delete(&mut self, (ns, n): (usize, usize)) -> (String, bool) {
        let outcome = self
            .server
            .delete(RESOURCE, Some(&namespace(ns)), &name(n))
            .unwrap_or_else(|s| panic!("delete {}/{}: {s}", namespace(ns), name(n)));
        self.writes += 1;
        let obj = outcome.object();
        let text = format!("delete {}@{}", obj.key(), obj.resource_version());
        self.changed(obj, matches!(outcome, DeleteOutcome::Deleted(_)));
        match outcome {
            DeleteOutcome::Deleted(obj) => {
                self.record_deletion(&obj);
                self.live.remove(&(ns, n));
                (text, true)
            }
            _ => {
                self.finalizing.insert((ns, n));
                (format!("{text} (finalizer: marked)"), false)
            }
        }
    }

    pub fn create_random(&mut self) -> String {
        for _ in 0..8 {
            let slot = self.random_slot();
            if !self.live.contains(&slot) {
                return self.create(slot);
            }
        }
        self.create_or_update_random()
    }

    pub fn create_or_update_random(&mut self) -> String {
        let slot = self.random_slot();
        if self.live.contains(&slot) {
            self.update(slot)
        } else {
            self.create(slot)
        }
    }

    /// One random write: create, update, delete, or delete and re-create (a new UID).
    pub fn write(&mut self) -> String {
        let roll = self.rng.random_range(0..100);
        match (roll, self.random_live()) {
            (0..30, _) | (_, None) => self.create_random(),
            (30..60, Some(slot)) => self.update(slot),
            (60..82, Some(slot)) => self.delete(slot).0,
            (_, Some(slot)) => match self.delete(slot) {
                (deleted, true) => {
                    let created = self.create(slot);
                    format!("{deleted}; re-{created}")
                }
                (marked, false) => marked,
            },
        }
    }

    fn writes(&mut self, count: usize) -> String {
        (0..count)
            .map(|_| self.write())
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Disarms the index trap and updates every live object it fired on, so that each
    /// skipped delta is repaired by a later change, as it would be in production.
    pub fn repair_trapped(&mut self) -> Option<String> {
        let fired = self.trap.disarm();
        if fired.is_empty() {
            return None;
        }
        let slots: Vec<(usize, usize)> = self
            .live
            .iter()
            .copied()
            .filter(|(ns, n)| fired.contains(&format!("{}/{}", namespace(*ns), name(*n))))
            .collect();
        let writes: Vec<String> = slots.into_iter().map(|slot| self.update(slot)).collect();
        Some(format!(
            "the index trap fired on {fired:?}; repaired: {}",
            writes.join("; ")
        ))
    }

    fn random_failure(&mut self) -> informer::Status {
        let rv = self.server.resource_version();
        match self.rng.random_range(0..5) {
            0 => status::internal_error("etcd leader changed"),
            // A Retry-After is whole seconds: real-time seeds in a hurry throttle for the
            // shortest, in-process ones (the chaos test's, 1000× faster) not at all.
            1 => match self.plan.clock {
                Clock::Paused => status::too_many_requests(self.rng.random_range(1..=5)),
                Clock::RealTime { scale } if scale >= 1000 => {
                    status::internal_error("throttled (as a 500: see random_failure)")
                }
                Clock::RealTime { .. } => status::too_many_requests(1),
            },
            2 => status::too_old_resource_version(rv.saturating_sub(1), rv),
            3 => status::resource_version_too_large(rv + 10, rv),
            _ => status::gone("legacy gone"),
        }
    }

    /// One step: a burst of writes or a fault (some with writes), then a pause.
    pub async fn step(&mut self, step: usize) {
        let what = if self.rng.random_bool(self.plan.fault_rate) {
            self.fault_count += 1;
            self.fault().await
        } else {
            let n = self.rng.random_range(1..=3);
            self.writes(n)
        };
        let pause = self.pause().await;
        self.note(format!("step {step}: {what}; then {pause}"));
    }

    /// Most faults that hit open watches first wait (up to a minute) for the informer to have
    /// one, so that they are not wasted on a reflector that is backing off.
    async fn await_watch(&mut self) -> String {
        if !self.rng.random_bool(0.6) || self.server.open_watches(RESOURCE) > 0 {
            return String::new();
        }
        let start = tokio::time::Instant::now();
        let opened = tokio::time::timeout(
            self.time(Duration::from_secs(60)),
            self.server.wait_for_open_watches(RESOURCE, 1),
        )
        .await;
        match opened {
            Ok(()) => format!("(after {:?} waiting for a watch) ", start.elapsed()),
            Err(_) => "(no watch within 60s) ".to_owned(),
        }
    }

    /// One fault.
    async fn fault(&mut self) -> String {
        let roll = self.rng.random_range(40..108);
        let waited = if matches!(roll, 40..70 | 87..91 | 94..96) {
            self.await_watch().await
        } else {
            String::new()
        };
        let what = match roll {
            40..47 => {
                let n = self.rng.random_range(1..=4);
                format!(
                    "drop watches ({}); {}",
                    self.faults.drop_watches(RESOURCE),
                    self.writes(n)
                )
            }
            47..52 => format!("break watches ({})", self.faults.break_watches(RESOURCE)),
            52..60 => {
                // A watch gap across a compaction: the re-watch gets 410, a relist follows.
                let dropped = if self.rng.random_bool(0.5) {
                    self.faults.drop_watches(RESOURCE)
                } else {
                    self.faults.break_watches(RESOURCE)
                };
                let n = self.rng.random_range(0..=5);
                let writes = self.writes(n);
                let rv = self.server.compact_all();
                format!("gap ({dropped} watches): {writes}; compact to {rv}")
            }
            60..64 => {
                let current = self.server.resource_version();
                let floor = self.server.compacted_resource_version();
                let rv = self.rng.random_range(floor..=current);
                let _ = self.server.compact(rv);
                format!("compact to {rv} with watches up")
            }
            64..68 => format!(
                "ERROR 410 into open watches ({})",
                self.faults.expire_watches(RESOURCE)
            ),
            68..70 => format!(
                "ERROR 500 into open watches ({})",
                self.faults
                    .inject_error(RESOURCE, status::internal_error("watch cache reset"))
            ),
            70..74 => {
                let n = self.rng.random_range(1..=3);
                let s = self.random_failure();
                let text = format!("fail the next {n} lists with {} {}", s.code, s.reason);
                self.faults.fail_lists(RESOURCE, n, s);
                text
            }
            74..78 => {
                let n = self.rng.random_range(1..=3);
                let s = self.random_failure();
                let text = format!("fail the next {n} watches with {} {}", s.code, s.reason);
                self.faults.fail_watches(RESOURCE, n, s);
                text
            }
            78..81 => {
                let n = self.rng.random_range(1..=2);
                self.faults.expire_next_continues(RESOURCE, n);
                if self.rng.random_bool(0.5) {
                    self.faults.expire_continue_tokens();
                }
                format!("expire the next {n} continue pages")
            }
            81..84 => {
                let delay = if self.rng.random_bool(0.5) {
                    let millis = self.rng.random_range(10..=3_000);
                    Some(self.time(Duration::from_millis(millis)))
                } else {
                    None
                };
                self.faults.delay_lists(RESOURCE, delay);
                format!("list delay {delay:?}")
            }
            84..87 => {
                let delay = if self.rng.random_bool(0.5) {
                    let millis = self.rng.random_range(1..=2_000);
                    Some(self.time(Duration::from_millis(millis)))
                } else {
                    None
                };
                self.faults.delay_watch_events(RESOURCE, delay);
                format!("watch event delay {delay:?}")
            }
            87..91 => {
                let (line, what) = match self.rng.random_range(0..3) {
                    0 => (RawLine::garbage(), "garbage"),
                    1 => (RawLine::unknown_event_type(), "an unknown event type"),
                    _ => (
                        RawLine::object_without_metadata(),
                        "an object without metadata",
                    ),
                };
                let n = self.faults.inject_raw_line(RESOURCE, line);
                format!("inject {what} into open watches ({n})")
            }
            91..94 => {
                let after = self.rng.random_range(0..=5);
                self.faults.drop_next_watch_after(RESOURCE, after);
                format!("drop the next watch after {after} events")
            }
            94..96 => format!("bookmark ({})", self.server.send_bookmark(RESOURCE)),
            96..98 => {
                let next = self.server.resource_version() + self.rng.random_range(2..=500);
                let _ = self.server.set_next_resource_version(next);
                format!("resourceVersion jump to {next}; {}", self.write())
            }
            98..100 => {
                if self.plan.streaming {
                    let ignore = self.rng.random_bool(0.5);
                    self.faults.ignore_send_initial_events(RESOURCE, ignore);
                    format!("ignore sendInitialEvents: {ignore}")
                } else {
                    self.write()
                }
            }
            100..104 => {
                // Objects the informer has never seen, announced as MODIFIED.
                let how = [
                    UnseenAnnouncement::Added,
                    UnseenAnnouncement::ModifiedOnEntering,
                    UnseenAnnouncement::Modified,
                    UnseenAnnouncement::Modified,
                ][self.rng.random_range(0..4)];
                self.faults.announce_unseen(RESOURCE, how);
                let n = self.rng.random_range(1..=3);
                format!("announce unseen objects as {how:?}; {}", self.writes(n))
            }
            _ => {
                // The next object indexed makes the index function panic, once.
                let n = self.rng.random_range(1..=3);
                if self.synced.load(Ordering::Acquire) {
                    self.trap.arm();
                    format!("arm the index trap; {}", self.writes(n))
                } else {
                    self.writes(n)
                }
            }
        };
        format!("{waited}{what}")
    }

    /// Lets time pass (or not): nothing, a yield, or a sleep.
    async fn pause(&mut self) -> String {
        let d = match self.rng.random_range(0..100) {
            0..20 => return "no pause".to_owned(),
            20..35 => {
                tokio::task::yield_now().await;
                return "yield".to_owned();
            }
            35..60 => Duration::from_millis(self.rng.random_range(1..=200)),
            60..88 => Duration::from_millis(self.rng.random_range(200..=5_000)),
            _ => Duration::from_secs(self.rng.random_range(5..=45)),
        };
        let d = self.time(d);
        tokio::time::sleep(d).await;
        format!("sleep {d:?}")
    }
}

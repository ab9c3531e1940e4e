//! The chaos scenario engine: one seed → one plan (server, informer and handler settings) and
//! one schedule of writes, faults and pauses, run on a fresh paused-time runtime, followed by
//! quiescence and the convergence check.
//!
//! Everything the schedule does is drawn from RNGs seeded by the seed, so the same seed always
//! gives the same plan and the same schedule (the server's UIDs and the reflector's jitter are
//! seeded too). What is not pinned: the order in which the informer's hash maps hand out
//! entries, so the interleaving inside the informer can differ between two runs of a seed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use informer::reflector::{ReflectorStats, WatchListMode};
use informer::{
    HandlerOptions, InOrderFifoConfig, InformerConfig, LabelSelector, ListOptions, ListPage,
    ListerWatcher, ObjectOrTombstone, QueueChoice, Registration, ResourceEventHandler,
    SharedIndexInformer, UidChange, WatchEvent, WatchOptions, WatchStream, label_index_func,
};
use informer_testing::JsonObject;
use informer_testing::convergence::{
    CheckOptions, CheckSummary, ConvergenceReport, Expected, Recording, UidChanges,
    check_convergence, fold,
};
use informer_testing::fake::{
    DeleteOutcome, FakeApiServer, Faults, HistoryConfig, RawLine, ServerConfig, status,
};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

/// The resource every scenario writes and watches.
pub const RESOURCE: &str = "configmaps";

/// The finalizer some objects are created with.
const FINALIZER: &str = "chaos.example/hold";

/// How long quiescence may take, in virtual time, once faults stop.
const QUIESCENCE_BOUND: Duration = Duration::from_secs(30 * 60);

/// A deliberate defect between the server and the informer, to prove the chaos test catches
/// lost events (it must fail for most seeds then).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sabotage {
    /// None: the real test.
    #[default]
    None,
    /// Every `n`th object event of every watch is silently dropped.
    DropWatchEvents(u64),
    /// Every `n`th item of every list page is silently dropped.
    DropListItems(u64),
}

/// A `ListerWatcher` that loses what [`Sabotage`] says.
struct Sabotaged {
    inner: Arc<dyn ListerWatcher<JsonObject>>,
    sabotage: Sabotage,
    seen: Arc<AtomicU64>,
}

impl Sabotaged {
    /// Whether the next item is the one to lose (every `n`th).
    fn lose(seen: &AtomicU64, n: u64) -> bool {
        (seen.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(n)
    }
}

#[async_trait::async_trait]
impl ListerWatcher<JsonObject> for Sabotaged {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<JsonObject>, informer::Error> {
        let mut page = self.inner.list(options).await?;
        if let Sabotage::DropListItems(n) = self.sabotage {
            page.items.retain(|_| !Self::lose(&self.seen, n));
        }
        Ok(page)
    }

    async fn watch(
        &self,
        options: &WatchOptions,
    ) -> Result<WatchStream<JsonObject>, informer::Error> {
        let stream = self.inner.watch(options).await?;
        let Sabotage::DropWatchEvents(n) = self.sabotage else {
            return Ok(stream);
        };
        let seen = Arc::clone(&self.seen);
        Ok(Box::pin(stream.filter(move |event| {
            let object_event = matches!(
                event,
                Ok(WatchEvent::Added(_) | WatchEvent::Modified(_) | WatchEvent::Deleted(_))
            );
            std::future::ready(!(object_event && Self::lose(&seen, n)))
        })))
    }
}

/// The settings one seed draws.
#[derive(Debug, Clone)]
pub struct Plan {
    pub seed: u64,
    pub namespaces: usize,
    pub names: usize,
    pub initial_objects: usize,
    pub steps: usize,
    /// The share of steps that inject a fault (the others only write).
    pub fault_rate: f64,
    pub page_size: Option<u32>,
    pub streaming: bool,
    pub ignore_send_initial_events: bool,
    pub resync: Option<Duration>,
    pub in_order_batch: Option<usize>,
    pub client_go_uid_changes: bool,
    /// The informer watches only this namespace (else all).
    pub namespace: Option<usize>,
    /// The informer's label selector (objects leave and re-enter it as their labels change).
    pub selector: Option<&'static str>,
    /// The informer strips the `v` label before storing.
    pub transform: bool,
    /// A handler added at the first step and removed at the second (checked as a prefix).
    pub churn_handler: Option<(usize, usize)>,
    /// The trait handler panics (after recording) on this share of notifications.
    pub panic_rate: f64,
    pub history: HistoryConfig,
    pub min_watch_timeout: Duration,
    pub initial_events_timeout: Duration,
    pub bookmark_interval: Duration,
    pub stream_delay_max: Duration,
    pub late_handler_at: Option<usize>,
    pub late_handler_resync: Option<Duration>,
    pub sabotage: Sabotage,
}

impl Plan {
    /// The plan of `seed`.
    pub fn of(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let streaming = rng.random_bool(0.35);
        let steps = rng.random_range(60..=160);
        let min_events = rng.random_range(5..=60);
        Self {
            seed,
            namespaces: rng.random_range(1..=3),
            names: rng.random_range(3..=8),
            initial_objects: rng.random_range(0..=12),
            steps,
            fault_rate: rng.random_range(0.15..0.65),
            page_size: if rng.random_bool(0.15) {
                None
            } else {
                Some(rng.random_range(1..=6))
            },
            streaming,
            ignore_send_initial_events: streaming && rng.random_bool(0.4),
            resync: rng
                .random_bool(0.3)
                .then(|| Duration::from_secs(rng.random_range(1..=40))),
            in_order_batch: rng.random_bool(0.5).then(|| rng.random_range(1..=32)),
            client_go_uid_changes: rng.random_bool(0.12),
            namespace: rng.random_bool(0.2).then(|| rng.random_range(0..3)),
            selector: rng
                .random_bool(0.25)
                .then(|| ["tier!=b", "tier in (a)", "!tier"][rng.random_range(0..3)]),
            transform: rng.random_bool(0.3),
            churn_handler: rng.random_bool(0.4).then(|| {
                let added = rng.random_range(0..steps);
                (added, rng.random_range(added..=steps))
            }),
            panic_rate: if rng.random_bool(0.25) { 0.05 } else { 0.0 },
            history: HistoryConfig {
                min_events,
                max_events: min_events + rng.random_range(0..=200),
                min_age: Duration::from_millis(rng.random_range(500..=30_000)),
            },
            min_watch_timeout: Duration::from_secs(rng.random_range(5..=300)),
            initial_events_timeout: Duration::from_secs(rng.random_range(3..=60)),
            bookmark_interval: Duration::from_secs(rng.random_range(2..=60)),
            stream_delay_max: Duration::from_millis([0, 0, 5, 50, 400][rng.random_range(0..5)]),
            late_handler_at: rng.random_bool(0.6).then(|| rng.random_range(0..steps)),
            late_handler_resync: rng
                .random_bool(0.5)
                .then(|| Duration::from_secs(rng.random_range(1..=20))),
            sabotage: Sabotage::None,
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ns × {} names, {} initial objects, {} steps ({:.0}% faults), page {:?}, queue {}, \
             uid changes {}, streaming {}{}, resync {:?}, history {}..{} events / {:?}, watch timeout ≥ {:?}, \
             bookmarks every {:?}, stream delay ≤ {:?}, late handler {}, namespace {:?}, \
             selector {:?}, transform {}, churn handler {:?}, trait handler panics {:.0}%",
            self.namespaces,
            self.names,
            self.initial_objects,
            self.steps,
            self.fault_rate * 100.0,
            self.page_size,
            match self.in_order_batch {
                Some(b) => format!("in-order (batch {b})"),
                None => "delta-fifo".to_owned(),
            },
            if self.client_go_uid_changes {
                "as updates"
            } else {
                "as delete+add"
            },
            self.streaming,
            if self.ignore_send_initial_events {
                " (server ignores sendInitialEvents)"
            } else {
                ""
            },
            self.resync,
            self.history.min_events,
            self.history.max_events,
            self.history.min_age,
            self.min_watch_timeout,
            self.bookmark_interval,
            self.stream_delay_max,
            match (self.late_handler_at, self.late_handler_resync) {
                (None, _) => "none".to_owned(),
                (Some(at), resync) => format!("at step {at}, resync {resync:?}"),
            },
            self.namespace.map(namespace),
            self.selector,
            self.transform,
            self.churn_handler,
            self.panic_rate * 100.0,
        )
    }
}

/// What a passing seed did: evidence that the run was not vacuous.
#[derive(Debug, Clone, Default)]
pub struct SeedStats {
    pub check: CheckSummary,
    pub reflector: Option<ReflectorStats>,
    pub writes: u64,
    pub faults: u64,
    pub virtual_time: Duration,
    /// List requests carrying a continue token.
    pub continue_pages: u64,
    /// Lists without a limit right after a continue page: the full-list fallback of an
    /// expired continue token.
    pub full_list_fallbacks: u64,
    /// Panics of the trait handler, caught and reported by the informer.
    pub handler_panics: u64,
    /// Failures the reflector reported, by `stage/class`.
    pub errors: BTreeMap<String, u64>,
}

/// Why a seed failed.
#[derive(Debug)]
pub enum Failure {
    /// The informer was quiet but its cache or a handler disagrees with the server.
    Diverged(ConvergenceReport),
    /// The informer did not catch up within the virtual-time bound.
    NoQuiescence(String),
    /// A handler got an initial-list add after a live one.
    InitialFlag(String),
    /// The cache's index disagrees with its content.
    Index(String),
    /// The handler added and removed mid-run heard something inconsistent.
    Churn(String),
    /// The informer or a registration does not report `has_synced` once quiet.
    NotSynced(String),
    /// Shutting down failed or left handlers stuck.
    Shutdown(String),
    /// Something panicked (the informer's task, or the scenario itself).
    Panicked(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Diverged(report) => write!(f, "{report}"),
            Self::NoQuiescence(diagnosis) => write!(
                f,
                "no quiescence within {QUIESCENCE_BOUND:?} of virtual time after faults stopped\n\
                 {diagnosis}"
            ),
            Self::InitialFlag(what) => write!(f, "initial-list flags out of order: {what}"),
            Self::Index(what) => write!(f, "the tier index is wrong: {what}"),
            Self::Churn(what) => write!(
                f,
                "the churn handler's notifications break the rules:\n{what}"
            ),
            Self::NotSynced(what) => write!(f, "not synced once quiet: {what}"),
            Self::Shutdown(what) => write!(f, "shutdown failed: {what}"),
            Self::Panicked(message) => write!(f, "panicked: {message}"),
        }
    }
}

/// One seed's result, with the schedule that was run.
pub struct Outcome {
    pub plan: Plan,
    pub result: Result<SeedStats, Failure>,
    /// One line per schedule step.
    pub schedule: Vec<String>,
}

/// Runs one seed on its own paused-time runtime, with a deliberate defect unless `sabotage` is
/// `None`. A lossy watch runs with few faults: relists would repair much of its damage (which
/// is the informer's job, but not what such a run is about).
pub fn run_seed_with(seed: u64, sabotage: Sabotage) -> Outcome {
    let base = Plan::of(seed);
    let plan = Plan {
        sabotage,
        fault_rate: match sabotage {
            Sabotage::DropWatchEvents(_) => 0.05,
            Sabotage::None | Sabotage::DropListItems(_) => base.fault_rate,
        },
        ..base
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let mut schedule = Vec::new();
    let result = runtime.block_on(scenario(&plan, &mut schedule));
    Outcome {
        plan,
        result,
        schedule,
    }
}

/// The handlers of one run.
struct Handlers {
    trait_handler: (Recording<JsonObject>, Registration),
    stream: (Recording<JsonObject>, Registration),
    stream_task: tokio::task::JoinHandle<()>,
    late: Option<(Recording<JsonObject>, Registration)>,
}

impl Handlers {
    fn registrations(&self) -> Vec<&Registration> {
        let mut all = vec![&self.trait_handler.1, &self.stream.1];
        if let Some((_, r)) = &self.late {
            all.push(r);
        }
        all
    }

    fn recordings(&self) -> Vec<&Recording<JsonObject>> {
        let mut all = vec![&self.trait_handler.0, &self.stream.0];
        if let Some((r, _)) = &self.late {
            all.push(r);
        }
        all
    }
}

async fn scenario(plan: &Plan, schedule: &mut Vec<String>) -> Result<SeedStats, Failure> {
    let started = tokio::time::Instant::now();
    let server = FakeApiServer::with_config(ServerConfig {
        history: plan.history.clone(),
        bookmark_interval: plan.bookmark_interval,
        seed: plan.seed,
        ..ServerConfig::default()
    });
    let mut world = World {
        server: server.clone(),
        faults: server.faults(),
        rng: StdRng::seed_from_u64(plan.seed),
        plan: plan.clone(),
        live: BTreeSet::new(),
        held: BTreeSet::new(),
        finalizing: BTreeSet::new(),
        expected: Expected::new(),
        counter: 0,
        writes: 0,
        fault_count: 0,
        log: schedule,
    };
    world.expected.track_deletions();
    for _ in 0..plan.initial_objects {
        world.create_random();
    }
    if plan.ignore_send_initial_events {
        world.faults.ignore_send_initial_events(RESOURCE, true);
    }

    let errors = Arc::new(Mutex::new(BTreeMap::new()));
    let informer = build_informer(&server, plan, &errors);
    let trait_recording = Recording::new("trait");
    let panics = Arc::new(AtomicU64::new(0));
    let trait_registration = informer
        .add_handler_with(
            Panicky {
                inner: trait_recording.handler(),
                rng: StdRng::seed_from_u64(plan.seed ^ 0xdead),
                rate: plan.panic_rate,
                panics: Arc::clone(&panics),
            },
            HandlerOptions::named("trait"),
        )
        .expect("add the trait handler");
    let stream_recording = Recording::new("stream");
    let stream = informer
        .stream_with(HandlerOptions::named("stream"))
        .expect("open the stream");
    let stream_registration = stream.registration().clone();
    let hurry = Arc::new(AtomicBool::new(false));
    let stream_task = tokio::spawn(consume(
        stream,
        stream_recording.clone(),
        plan.stream_delay_max,
        plan.seed,
        Arc::clone(&hurry),
    ));
    let mut handlers = Handlers {
        trait_handler: (trait_recording, trait_registration),
        stream: (stream_recording, stream_registration),
        stream_task,
        late: None,
    };

    let stop = CancellationToken::new();
    let run = informer.spawn(stop.clone());

    let mut churn: Option<Recording<JsonObject>> = None;
    let mut churn_registration: Option<Registration> = None;
    for step in 0..plan.steps {
        if let Some((added, removed)) = plan.churn_handler {
            if step == added {
                let recording = Recording::new("churn");
                churn_registration = Some(
                    informer
                        .add_handler_with(recording.handler(), HandlerOptions::named("churn"))
                        .expect("add the churn handler"),
                );
                churn = Some(recording);
                world.note(format!("step {step}: add the churn handler"));
            }
            if step == removed
                && let Some(registration) = churn_registration.take()
            {
                assert!(informer.remove_handler(&registration));
                world.note(format!("step {step}: remove the churn handler"));
            }
        }
        if plan.late_handler_at == Some(step) {
            let recording = Recording::new("late");
            let registration = informer
                .add_handler_with(
                    recording.handler(),
                    HandlerOptions {
                        resync_period: plan.late_handler_resync,
                        ..HandlerOptions::named("late")
                    },
                )
                .expect("add the late handler");
            world.note(format!("step {step}: add the late handler"));
            handlers.late = Some((recording, registration));
        }
        world.step(step).await;
    }
    // A last write, so that the server's resourceVersion is an event the informer must see.
    world.create_or_update_random();

    world.note("quiescence: faults cleared".to_owned());
    world.faults.clear();
    // A consumer slower than the resync rate would never catch up.
    hurry.store(true, Ordering::Relaxed);
    let quiet = quiesce(&informer, &server, &handlers).await;
    let virtual_time = started.elapsed();
    if let Err(diagnosis) = quiet {
        stop.cancel();
        return Err(Failure::NoQuiescence(diagnosis));
    }

    let store = informer.reader().list();
    let expected = expected_state(&server, plan, &world.expected);
    let options = CheckOptions {
        objects_may_return: plan.selector.is_some(),
        uid_changes: if plan.client_go_uid_changes {
            UidChanges::Update
        } else {
            UidChanges::DeleteAndAdd
        },
        ..CheckOptions::default()
    };
    let check = check_convergence(&expected, &store, &handlers.recordings(), &options)
        .map_err(Failure::Diverged)?;
    initial_flags(&handlers.recordings()).map_err(Failure::InitialFlag)?;
    index_matches_cache(&informer).map_err(Failure::Index)?;
    let reported = informer.stats().handler_panics;
    let panicked = panics.load(Ordering::Relaxed);
    if reported != panicked {
        return Err(Failure::Panicked(format!(
            "the trait handler panicked {panicked} times, the informer reports {reported}"
        )));
    }
    if let Some(churn) = &churn {
        let folded = fold(churn.name(), &churn.notifications(), &options);
        if !folded.violations.is_empty() {
            let lines: Vec<String> = folded
                .violations
                .iter()
                .map(|v| format!("  - {v}"))
                .collect();
            return Err(Failure::Churn(lines.join("\n")));
        }
    }
    let reflector = informer.stats().reflector;
    if !informer.has_synced() || handlers.registrations().iter().any(|r| !r.has_synced()) {
        return Err(Failure::NotSynced(format!(
            "informer {}, {}",
            informer.has_synced(),
            handlers
                .registrations()
                .iter()
                .map(|r| format!("{} {}", r.name(), r.has_synced()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }

    stop.cancel();
    let report = match tokio::time::timeout(Duration::from_secs(120), run).await {
        Ok(Ok(Ok(report))) => report,
        Ok(Ok(Err(e))) => return Err(Failure::Shutdown(format!("run failed: {e}"))),
        Ok(Err(e)) => return Err(Failure::Panicked(format!("the informer's task: {e}"))),
        Err(_) => return Err(Failure::Shutdown("run did not return".to_owned())),
    };
    if !report.stuck.is_empty() {
        return Err(Failure::Shutdown(format!(
            "stuck handlers: {:?}",
            report.stuck
        )));
    }
    if let Err(e) = (&mut handlers.stream_task).await {
        return Err(Failure::Panicked(format!("the stream consumer: {e}")));
    }
    let (continue_pages, full_list_fallbacks) = paging(&server);
    Ok(SeedStats {
        check,
        reflector,
        writes: world.writes,
        faults: world.fault_count,
        virtual_time,
        continue_pages,
        full_list_fallbacks,
        errors: errors.lock().clone(),
        handler_panics: reported,
    })
}

/// The text deliberate handler panics carry (the chaos test's panic hook keeps them quiet).
pub const DELIBERATE_PANIC: &str = "chaos: deliberate handler panic";

/// A recording handler that panics, after recording, on a share of its notifications: the
/// informer must report the panic and go on delivering.
struct Panicky {
    inner: informer_testing::convergence::RecordingHandler<JsonObject>,
    rng: StdRng,
    rate: f64,
    panics: Arc<AtomicU64>,
}

impl Panicky {
    fn maybe_panic(&mut self) {
        if self.rate > 0.0 && self.rng.random_bool(self.rate) {
            self.panics.fetch_add(1, Ordering::Relaxed);
            std::panic::panic_any(DELIBERATE_PANIC);
        }
    }
}

impl ResourceEventHandler<JsonObject> for Panicky {
    fn on_add(&mut self, obj: &Arc<JsonObject>, is_in_initial_list: bool) {
        self.inner.on_add(obj, is_in_initial_list);
        self.maybe_panic();
    }

    fn on_update(&mut self, old: &Arc<JsonObject>, new: &Arc<JsonObject>) {
        self.inner.on_update(old, new);
        self.maybe_panic();
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<JsonObject>) {
        self.inner.on_delete(obj);
        self.maybe_panic();
    }
}

/// Once a handler got an add that is not part of the initial list (or of a late handler's
/// replay of the cache), it gets no more initial-list adds.
fn initial_flags(recordings: &[&Recording<JsonObject>]) -> Result<(), String> {
    for r in recordings {
        let mut live_since = None;
        for (i, n) in r.notifications().iter().enumerate() {
            if let informer::Notification::Add {
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
fn index_matches_cache(informer: &SharedIndexInformer<JsonObject>) -> Result<(), String> {
    let reader = informer.reader();
    let cached = reader.list();
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

/// The server's truth for this plan: its objects in the informer's namespace and selection,
/// and (without a selector, under which leaving the selection looks like a deletion) the
/// deletions the schedule made.
fn expected_state(server: &FakeApiServer, plan: &Plan, recorded: &Expected) -> Expected {
    let selector = plan
        .selector
        .map(|s| LabelSelector::parse(s).expect("a valid selector"));
    let mut expected = Expected::new();
    let objects = server
        .objects(RESOURCE, plan.namespace.map(namespace).as_deref())
        .expect("configmaps are built in");
    for obj in objects {
        if selector.as_ref().is_none_or(|s| s.matches(obj.labels())) {
            let rv = obj.resource_version().to_string();
            expected.insert(obj.key(), Some(obj.uid()), Some(&rv));
        }
    }
    if selector.is_none()
        && let Some(deletions) = recorded.deletions()
    {
        expected.track_deletions();
        for (uid, d) in deletions {
            expected.record_deletion(uid, &d.key, d.final_resource_version.as_deref());
        }
    }
    expected
}

/// Counts continue pages and full-list fallbacks in the server's request log.
fn paging(server: &FakeApiServer) -> (u64, u64) {
    let (mut pages, mut fallbacks) = (0, 0);
    let mut after_continue = false;
    for r in server.requests().iter().filter(|r| r.is_list_of(RESOURCE)) {
        let continued = r.param("continue").is_some();
        if continued {
            pages += 1;
        } else if after_continue && r.param("limit").is_none() {
            fallbacks += 1;
        }
        after_continue = continued;
    }
    (pages, fallbacks)
}

fn build_informer(
    server: &FakeApiServer,
    plan: &Plan,
    errors: &Arc<Mutex<BTreeMap<String, u64>>>,
) -> SharedIndexInformer<JsonObject> {
    let mut lister_watcher: Arc<dyn ListerWatcher<JsonObject>> = Arc::new(
        server
            .lister_watcher::<JsonObject>(RESOURCE, plan.namespace.map(namespace).as_deref())
            .expect("configmaps are built in"),
    );
    if plan.sabotage != Sabotage::None {
        lister_watcher = Arc::new(Sabotaged {
            inner: lister_watcher,
            sabotage: plan.sabotage,
            seen: Arc::default(),
        });
    }
    let mut config = InformerConfig::<JsonObject> {
        name: format!("chaos-{}", plan.seed),
        resync_period: plan.resync,
        uid_change: if plan.client_go_uid_changes {
            UidChange::Update
        } else {
            UidChange::DeleteAndAdd
        },
        ..InformerConfig::default()
    };
    if let Some(batch) = plan.in_order_batch {
        config.queue = QueueChoice::InOrder(InOrderFifoConfig {
            max_batch_size: NonZeroUsize::new(batch).unwrap_or(NonZeroUsize::MIN),
            ..InOrderFifoConfig::default()
        });
    }
    config.reflector.page_size = plan.page_size;
    config.reflector.watch_list = if plan.streaming {
        WatchListMode::On
    } else {
        WatchListMode::Off
    };
    config.reflector.min_watch_timeout = plan.min_watch_timeout;
    config.reflector.initial_events_timeout = plan.initial_events_timeout;
    config.reflector.seed = Some(plan.seed);
    config.indexers = [("tier".to_owned(), label_index_func("tier"))].into();
    config.reflector.label_selector = plan.selector.map(str::to_owned);
    let errors = Arc::clone(errors);
    config.reflector.watch_error_handler = Some(Arc::new(move |error, context| {
        let key = format!("{:?}/{:?}", context.stage, error.class());
        *errors.lock().entry(key).or_default() += 1;
    }));
    if plan.transform {
        config.transform = Some(Arc::new(|mut obj: JsonObject| {
            obj.metadata.labels.remove("v");
            obj
        }));
    }
    SharedIndexInformer::new(lister_watcher, config).expect("a valid informer config")
}

/// The stream's consumer: records each notification, then dawdles (virtual time) to build a
/// backlog, until told to hurry.
async fn consume(
    mut stream: informer::EventStream<JsonObject>,
    recording: Recording<JsonObject>,
    max_delay: Duration,
    seed: u64,
    hurry: Arc<AtomicBool>,
) {
    let mut rng = StdRng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(7));
    while let Some(n) = stream.next().await {
        recording.record(n);
        if !max_delay.is_zero() && !hurry.load(Ordering::Relaxed) {
            let millis = u64::try_from(max_delay.as_millis()).unwrap_or(u64::MAX);
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..=millis))).await;
        }
    }
}

/// Waits until the informer has seen the server's last resourceVersion, its queue is empty
/// and every handler has handled its buffer, and it stays so for a few virtual seconds.
async fn quiesce(
    informer: &SharedIndexInformer<JsonObject>,
    server: &FakeApiServer,
    handlers: &Handlers,
) -> Result<(), String> {
    let quiet = || {
        let server_rv = server.resource_version().to_string();
        informer.last_synced_resource_version().as_deref() == Some(server_rv.as_str())
            && informer.stats().queued == 0
            && handlers.registrations().iter().all(|r| r.pending() == 0)
    };
    let waited = tokio::time::timeout(QUIESCENCE_BOUND, async {
        loop {
            if quiet() {
                tokio::time::sleep(Duration::from_secs(5)).await;
                if quiet() {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    waited.map_err(|_| diagnose(informer, server, handlers))
}

fn diagnose(
    informer: &SharedIndexInformer<JsonObject>,
    server: &FakeApiServer,
    handlers: &Handlers,
) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "  server resourceVersion {}, informer last synced {:?}, open watches {}",
        server.resource_version(),
        informer.last_synced_resource_version(),
        server.open_watches(RESOURCE)
    );
    let _ = writeln!(text, "  informer stats: {:?}", informer.stats());
    for r in handlers.registrations() {
        let _ = writeln!(text, "  {}: {:?}", r.name(), r.stats());
    }
    let requests = server.requests();
    let _ = writeln!(text, "  last requests ({} in all):", requests.len());
    for r in requests.iter().rev().take(10).rev() {
        let _ = writeln!(text, "    {r}");
    }
    text
}

/// The server, the schedule's RNG and what the schedule did.
struct World<'a> {
    server: FakeApiServer,
    faults: Faults,
    rng: StdRng,
    plan: Plan,
    /// Live objects as (namespace index, name index), mirroring the server.
    live: BTreeSet<(usize, usize)>,
    /// Live objects created with a finalizer: a delete only marks them.
    held: BTreeSet<(usize, usize)>,
    /// Held objects marked for deletion: the next update, which drops the finalizer, deletes.
    finalizing: BTreeSet<(usize, usize)>,
    expected: Expected,
    counter: u64,
    writes: u64,
    fault_count: u64,
    log: &'a mut Vec<String>,
}

fn namespace(i: usize) -> String {
    format!("ns-{i}")
}

fn name(i: usize) -> String {
    format!("cm-{i}")
}

impl World<'_> {
    fn note(&mut self, line: String) {
        self.log.push(line);
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

    fn create(&mut self, (ns, n): (usize, usize)) -> String {
        let hold = self.rng.random_bool(0.15);
        let obj = self.object(ns, n, hold);
        let created = self
            .server
            .create(RESOURCE, &obj)
            .unwrap_or_else(|s| panic!("create {}/{}: {s}", namespace(ns), name(n)));
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
        let rv = updated.resource_version().to_string();
        if finalizing {
            self.expected
                .record_deletion(updated.uid(), updated.key(), Some(&rv));
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
        self.expected.record_delete_outcome(&outcome);
        self.writes += 1;
        let obj = outcome.object();
        let text = format!("delete {}@{}", obj.key(), obj.resource_version());
        match outcome {
            DeleteOutcome::Deleted(_) => {
                self.live.remove(&(ns, n));
                (text, true)
            }
            _ => {
                self.finalizing.insert((ns, n));
                (format!("{text} (finalizer: marked)"), false)
            }
        }
    }

    fn create_random(&mut self) -> String {
        for _ in 0..8 {
            let slot = self.random_slot();
            if !self.live.contains(&slot) {
                return self.create(slot);
            }
        }
        self.create_or_update_random()
    }

    fn create_or_update_random(&mut self) -> String {
        let slot = self.random_slot();
        if self.live.contains(&slot) {
            self.update(slot)
        } else {
            self.create(slot)
        }
    }

    /// One random write: create, update, delete, or delete and re-create (a new UID).
    fn write(&mut self) -> String {
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

    fn random_failure(&mut self) -> informer::Status {
        let rv = self.server.resource_version();
        match self.rng.random_range(0..5) {
            0 => status::internal_error("etcd leader changed"),
            1 => status::too_many_requests(self.rng.random_range(1..=5)),
            2 => status::too_old_resource_version(rv.saturating_sub(1), rv),
            3 => status::resource_version_too_large(rv + 10, rv),
            _ => status::gone("legacy gone"),
        }
    }

    /// One step: a burst of writes or a fault (some with writes), then a pause.
    async fn step(&mut self, step: usize) {
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
            Duration::from_secs(60),
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
        let roll = self.rng.random_range(40..100);
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
                    Some(Duration::from_millis(self.rng.random_range(10..=3_000)))
                } else {
                    None
                };
                self.faults.delay_lists(RESOURCE, delay);
                format!("list delay {delay:?}")
            }
            84..87 => {
                let delay = if self.rng.random_bool(0.5) {
                    Some(Duration::from_millis(self.rng.random_range(1..=2_000)))
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
            _ => {
                if self.plan.streaming {
                    let ignore = self.rng.random_bool(0.5);
                    self.faults.ignore_send_initial_events(RESOURCE, ignore);
                    format!("ignore sendInitialEvents: {ignore}")
                } else {
                    self.write()
                }
            }
        };
        format!("{waited}{what}")
    }

    /// Lets time pass (or not): nothing, a yield, or a virtual sleep.
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
        tokio::time::sleep(d).await;
        format!("sleep {d:?}")
    }
}

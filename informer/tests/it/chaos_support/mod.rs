//! The chaos scenario engine: one seed → one plan (server, informer and handler settings, how
//! time runs) and one schedule of writes, faults and pauses, run on a fresh runtime, followed
//! by quiescence and the checks.
//!
//! The engine is shared by the chaos test of the `informer` crate (in-process fake server,
//! mostly paused time) and the HTTP chaos test of `informer-kube` (the HTTP fake server through
//! kube-client, real time), which includes this module by path: the `informer` crate cannot
//! depend on `informer-kube`, and neither `informer-testing` nor `fake-apiserver` may depend on `informer`. The
//! [`Transport`] is what differs.
//!
//! On paused time everything the schedule does is drawn from RNGs seeded by the seed, so the
//! same seed always gives the same plan and the same schedule (the server's UIDs and the
//! reflector's jitter are seeded too). What is not pinned: the order in which the informer's
//! hash maps hand out entries, so the interleaving inside the informer can differ between two
//! runs of a seed. Real-time seeds are not reproducible in their interleaving at all.

#![allow(
    dead_code,
    reason = "the two tests including this module use different parts"
)]

pub mod checks;
pub mod guard;
pub mod plan;
pub mod queue;
pub mod world;

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use fake_apiserver::{FakeApiServer, ServerConfig, StoredObject};
use futures::StreamExt;
use informer::reflector::{BackoffConfig, ReflectorStats, WatchListMode};
use informer::{
    Codec, CompactOptions, DeltaFifo, DeltaFifoConfig, HandlerOptions, InOrderFifo,
    InOrderFifoConfig, IncidentKind, IndexedStore, Indexer, Indexers, InformerConfig, KeyFunc,
    LabelSelector, ListerWatcher, NAMESPACE_INDEX, ObjectOrTombstone, Queue, QueueBuilder,
    QueueChoice, QueueWiring, Registration, RegistrationStatus, ResourceEventHandler,
    RoundTripCheck, SharedIndexInformer, StoreChoice, UidChange, ZstdDictionary,
    namespace_index_func,
};
use informer_testing::JsonObject;
use informer_testing::convergence::{
    CheckOptions, CheckSummary, ConvergenceReport, Expected, Recording,
    check_convergence_with_content, digest,
};
use parking_lot::Mutex;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tokio_util::sync::CancellationToken;

use checks::{CadenceStats, Cadenced};
use guard::{RequestCounts, RequestGuard, Sabotaged};
use plan::{Clock, Plan, PlanStore, StoreUnderTest};
use queue::{ChaosQueue, QueueStats};
use world::{IndexTrap, World};

/// The resource every scenario writes and watches.
pub const RESOURCE: &str = "configmaps";

/// How long quiescence may take once faults stop, on the seed's clock (at least
/// [`REAL_QUIESCENCE_FLOOR`] of real time).
const QUIESCENCE_BOUND: Duration = Duration::from_secs(30 * 60);

/// Real time is never shorter than this for quiescence (an HTTP round trip is not scaled).
const REAL_QUIESCENCE_FLOOR: Duration = Duration::from_secs(30);

/// The text deliberate panics carry (handlers, the index trap); the tests' panic hook keeps
/// them quiet.
pub const DELIBERATE_PANIC: &str = "chaos: deliberate panic";

/// Installs (once) a panic hook that keeps the deliberate panics quiet and prints every other.
pub fn quiet_deliberate_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info.payload().downcast_ref::<&str>() != Some(&DELIBERATE_PANIC) {
                default(info);
            }
        }));
    });
}

pub fn namespace(i: usize) -> String {
    format!("ns-{i}")
}

pub fn name(i: usize) -> String {
    format!("cm-{i}")
}

/// The informer's transform, when the plan has one: drops the `v` label.
fn transform(mut obj: JsonObject) -> JsonObject {
    obj.metadata.labels.remove("v");
    obj
}

/// The digest of a server object as the informer should hold it (decoded, transformed).
pub fn content_digest(plan: &Plan, stored: &StoredObject) -> u64 {
    match stored.decode::<JsonObject>() {
        Ok(obj) if plan.transform => digest(&transform(obj)),
        Ok(obj) => digest(&obj),
        Err(e) => digest(&e.to_string()),
    }
}

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

/// How the informer reaches the seed's server.
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    /// A `ListerWatcher` for [`RESOURCE`] in `namespace` (all when `None`) on `server`, and
    /// whatever must live as long as it (an HTTP server).
    async fn connect(
        &self,
        server: &FakeApiServer,
        namespace: Option<&str>,
    ) -> Result<Connection, String>;
}

/// What a [`Transport`] connects.
pub struct Connection {
    pub lister_watcher: Arc<dyn ListerWatcher<JsonObject>>,
    /// Dropped at the end of the seed.
    pub keep_alive: Box<dyn std::any::Any + Send>,
}

/// The in-process front end of the fake server.
pub struct InProcess;

#[async_trait::async_trait]
impl Transport for InProcess {
    async fn connect(
        &self,
        server: &FakeApiServer,
        namespace: Option<&str>,
    ) -> Result<Connection, String> {
        let lw = server
            .lister_watcher::<JsonObject>(RESOURCE, namespace)
            .map_err(|s| s.to_string())?;
        Ok(Connection {
            lister_watcher: Arc::new(lw),
            keep_alive: Box::new(()),
        })
    }
}

/// What a passing seed did: evidence that the run was not vacuous.
#[derive(Debug, Clone, Default)]
pub struct SeedStats {
    pub check: CheckSummary,
    pub reflector: Option<ReflectorStats>,
    pub writes: u64,
    pub faults: u64,
    /// Time on the seed's clock.
    pub elapsed: Duration,
    pub real_time: bool,
    /// List requests carrying a continue token.
    pub continue_pages: u64,
    /// Lists without a limit right after a continue page: the full-list fallback of an
    /// expired continue token.
    pub full_list_fallbacks: u64,
    /// Panics of the trait handler, caught and reported by the informer.
    pub handler_panics: u64,
    /// Failures the reflector reported, by `stage/class`.
    pub errors: BTreeMap<String, u64>,
    pub queue: QueueStats,
    pub requests: RequestCounts,
    /// Times the index trap fired (a delta skipped, repaired by a later change).
    pub index_failures: u64,
    /// Handlers registered while the informer ran (removed again: `registrations_removed`).
    pub registrations: u64,
    pub registrations_removed: u64,
    /// Registrations made from another OS thread.
    pub registrations_from_threads: u64,
    /// Bounded streams disconnected on overflow.
    pub overflows: u64,
    /// Sync probes that ran: the informer's and each registration's.
    pub sync_probes: u64,
    pub cadence: CadenceStats,
    /// Objects checked to have gone through the transform (or not).
    pub transformed_checked: u64,
    /// Idle moments at which the cache was checked against the server's state at the
    /// informer's resourceVersion.
    pub idle_checks: u64,
}

/// Why a seed failed.
#[derive(Debug)]
pub enum Failure {
    /// The informer was quiet but its cache or a handler disagrees with the server.
    Diverged(ConvergenceReport),
    /// The informer did not catch up within the bound.
    NoQuiescence(String),
    /// The informer made requests at a rate (or in a number) only a livelock makes.
    Livelock(String),
    /// Idle, the cache was not the server's state at the informer's resourceVersion.
    Stale(String),
    /// A handler got an initial-list add after a live one.
    InitialFlag(String),
    /// The cache's index disagrees with its content.
    Index(String),
    /// A handler that stopped receiving (removed, disconnected) heard something inconsistent,
    /// or a bounded handler broke its bound.
    Prefix(String),
    /// An object skipped the transform, somewhere.
    Transform(String),
    /// A handler got resyncs it was not due, or missed ones it was.
    Resync(String),
    /// `has_synced` became true with the cache or a handler missing part of the first list.
    SyncMoment(String),
    /// The informer or a registration does not report `has_synced` once quiet.
    NotSynced(String),
    /// Shutting down failed or left handlers stuck.
    Shutdown(String),
    /// The transport could not be set up.
    Setup(String),
    /// Something panicked (the informer's task, or the scenario itself).
    Panicked(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Diverged(report) => write!(f, "{report}"),
            Self::NoQuiescence(diagnosis) => write!(
                f,
                "no quiescence within {QUIESCENCE_BOUND:?} of the seed's clock after faults \
                 stopped\n{diagnosis}"
            ),
            Self::Livelock(what) => write!(f, "{what}"),
            Self::Stale(what) => write!(f, "stale cache: {what}"),
            Self::InitialFlag(what) => write!(f, "initial-list flags out of order: {what}"),
            Self::Index(what) => write!(f, "the tier index is wrong: {what}"),
            Self::Prefix(what) => write!(f, "{what}"),
            Self::Transform(what) => write!(f, "transform skipped: {what}"),
            Self::Resync(what) => write!(f, "resync cadence: {what}"),
            Self::SyncMoment(what) => write!(f, "has_synced too early: {what}"),
            Self::NotSynced(what) => write!(f, "not synced once quiet: {what}"),
            Self::Shutdown(what) => write!(f, "shutdown failed: {what}"),
            Self::Setup(what) => write!(f, "setup failed: {what}"),
            Self::Panicked(message) => write!(f, "panicked: {message}"),
        }
    }
}

impl Failure {
    /// One line saying what failed: for a divergence, its first violation.
    pub fn summary(&self) -> String {
        let text = self.to_string();
        let mut lines = text.lines();
        let first = lines.next().unwrap_or_default().to_owned();
        match self {
            Self::Diverged(_) | Self::Resync(_) | Self::Prefix(_) => match lines.next() {
                Some(detail) => format!("{first} {}", detail.trim()),
                None => first,
            },
            _ => first,
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

/// Runs one seed of the chaos test (in process, on the clock [`Plan::of`] gives it), with a
/// deliberate defect unless `sabotage` is `None`. A lossy watch runs with few faults: relists
/// would repair much of its damage (which is the informer's job, but not what such a run is
/// about).
pub fn run_seed_with(seed: u64, sabotage: Sabotage, store: StoreUnderTest) -> Outcome {
    let base = Plan::of(seed).with_store(store);
    let plan = Plan {
        sabotage,
        fault_rate: match sabotage {
            Sabotage::DropWatchEvents(_) => 0.05,
            Sabotage::None | Sabotage::DropListItems(_) => base.fault_rate,
        },
        ..base
    };
    run_plan(plan, &InProcess)
}

/// Runs `plan` over `transport` on a fresh runtime of the plan's clock.
pub fn run_plan(plan: Plan, transport: &dyn Transport) -> Outcome {
    let runtime = match plan.clock {
        Clock::Paused => tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build(),
        Clock::RealTime { .. } => tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build(),
    }
    .expect("a runtime");
    let mut schedule = Vec::new();
    let result = runtime.block_on(scenario(&plan, transport, &mut schedule));
    // Handler threads and tasks of a failed seed may still run: do not wait for them.
    runtime.shutdown_timeout(Duration::from_secs(1));
    Outcome {
        plan,
        result,
        schedule,
    }
}

/// One handler and its registration.
struct Registered {
    recording: Recording<JsonObject>,
    registration: Registration,
    /// Removed on purpose (checked as a prefix).
    removed: bool,
}

/// The handlers of one run.
struct Handlers {
    trait_handler: Registered,
    stream: Registered,
    bounded: Option<(Registered, usize)>,
    late: Option<Registered>,
    churn: Option<Registered>,
    /// Registered while the informer runs (from the schedule, or another thread).
    registrar: Vec<Registered>,
    consumers: Vec<tokio::task::JoinHandle<()>>,
}

impl Handlers {
    fn all(&self) -> Vec<&Registered> {
        let mut all = vec![&self.trait_handler, &self.stream];
        all.extend(self.bounded.iter().map(|(r, _)| r));
        all.extend(&self.late);
        all.extend(&self.churn);
        all.extend(&self.registrar);
        all
    }

    /// The handlers that must end up with the server's state: neither removed nor
    /// disconnected.
    fn converging(&self) -> Vec<&Registered> {
        self.all()
            .into_iter()
            .filter(|r| !r.removed && r.registration.status() != RegistrationStatus::Disconnected)
            .collect()
    }
}

/// What the sync probes found.
#[derive(Default)]
struct Probes {
    problems: Vec<String>,
    ran: u64,
}

async fn scenario(
    plan: &Plan,
    transport: &dyn Transport,
    schedule: &mut Vec<String>,
) -> Result<SeedStats, Failure> {
    let started = tokio::time::Instant::now();
    let server = FakeApiServer::with_config(ServerConfig {
        history: fake_apiserver::HistoryConfig {
            min_age: plan.time(plan.history.min_age),
            ..plan.history.clone()
        },
        bookmark_interval: plan.time(plan.bookmark_interval),
        too_large_wait: plan.time(Duration::from_secs(3)),
        seed: plan.seed,
        ..ServerConfig::default()
    });
    let trap = IndexTrap::new();
    let informer_synced = Arc::new(AtomicBool::new(false));
    let mut world = World::new(
        &server,
        plan,
        Arc::clone(&trap),
        Arc::clone(&informer_synced),
        schedule,
    );
    for _ in 0..plan.initial_objects {
        world.create_random();
    }
    if plan.ignore_send_initial_events {
        world.faults.ignore_send_initial_events(RESOURCE, true);
    }

    let ns = plan.namespace.map(namespace);
    let connection = transport
        .connect(&server, ns.as_deref())
        .await
        .map_err(Failure::Setup)?;
    let mut lister_watcher = Arc::clone(&connection.lister_watcher);
    if plan.sabotage != Sabotage::None {
        lister_watcher = Arc::new(Sabotaged {
            inner: lister_watcher,
            sabotage: plan.sabotage,
            seen: Arc::default(),
        });
    }
    let guard = Arc::new(RequestGuard::new(
        lister_watcher,
        plan.time(Duration::from_secs(1)),
    ));

    let errors = Arc::new(Mutex::new(BTreeMap::new()));
    let incidents: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let (informer, queue) = build_informer(
        Arc::clone(&guard) as Arc<dyn ListerWatcher<JsonObject>>,
        plan,
        &trap,
        &errors,
        &incidents,
    );
    let hurry = Arc::new(AtomicBool::new(false));
    let (panics, mut handlers) = register_before_start(&informer, plan, &hurry);

    let probes: Arc<Mutex<Probes>> = Arc::default();
    spawn_sync_probes(
        &informer,
        &handlers,
        &queue,
        &probes,
        &informer_synced,
        plan.clock,
    );

    let stop = CancellationToken::new();
    let run = informer.spawn(stop.clone());
    let registrar_thread = plan
        .clock
        .is_real()
        .then(|| spawn_registrar_thread(&informer, plan));

    // Paused time: the registrar's handlers come from the schedule (step to add, step to
    // remove).
    let mut rng = StdRng::seed_from_u64(plan.seed ^ 0x00ad_d5a1);
    let mut registrar_steps: Vec<(usize, Option<usize>)> = Vec::new();
    if !plan.clock.is_real() {
        for _ in 0..plan.registrar {
            let add = rng.random_range(0..plan.steps);
            let remove = rng
                .random_bool(0.25)
                .then(|| rng.random_range(add..=plan.steps));
            registrar_steps.push((add, remove));
        }
    }
    let mut idle_checks = 0;
    for step in 0..plan.steps {
        if let Some((added, removed)) = plan.churn_handler {
            if step == added {
                let recording = Recording::new("churn");
                let registration = informer
                    .add_handler_with(recording.handler(), HandlerOptions::named("churn"))
                    .expect("add the churn handler");
                handlers.churn = Some(Registered {
                    recording,
                    registration,
                    removed: false,
                });
                world.note(format!("step {step}: add the churn handler"));
            }
            if step == removed
                && let Some(churn) = &mut handlers.churn
                && !churn.removed
            {
                assert!(informer.remove_handler(&churn.registration));
                churn.removed = true;
                world.note(format!("step {step}: remove the churn handler"));
            }
        }
        if plan.late_handler_at == Some(step) {
            let recording = Recording::new("late");
            let registration = informer
                .add_handler_with(
                    recording.handler(),
                    HandlerOptions {
                        resync_period: plan.late_handler_resync.map(|p| plan.resync_time(p)),
                        ..HandlerOptions::named("late")
                    },
                )
                .expect("add the late handler");
            world.note(format!("step {step}: add the late handler"));
            handlers.late = Some(Registered {
                recording,
                registration,
                removed: false,
            });
        }
        for (i, (add, remove)) in registrar_steps.iter().enumerate() {
            if *add == step {
                let recording = Recording::new(format!("registered-{i}"));
                let registration = informer
                    .add_handler_with(
                        recording.handler(),
                        HandlerOptions::named(format!("registered-{i}")),
                    )
                    .expect("add a handler while running");
                world.note(format!("step {step}: add handler registered-{i}"));
                handlers.registrar.push(Registered {
                    recording,
                    registration,
                    removed: false,
                });
            }
            if *remove == Some(step)
                && let Some(r) = handlers
                    .registrar
                    .iter_mut()
                    .find(|r| r.recording.name() == format!("registered-{i}"))
            {
                informer.remove_handler(&r.registration);
                r.removed = true;
                world.note(format!("step {step}: remove handler registered-{i}"));
            }
        }
        world.step(step).await;
        if let Some(why) = guard.tripped() {
            stop.cancel();
            return Err(Failure::Livelock(why));
        }
        if !plan.clock.is_real() {
            match checks::idle_cache_is_the_server_at_its_resource_version(
                &informer, &queue, &world,
            ) {
                Ok(checked) => idle_checks += u64::from(checked),
                Err(stale) => {
                    stop.cancel();
                    return Err(Failure::Stale(stale));
                }
            }
        }
    }
    if let Some(repaired) = world.repair_trapped() {
        world.note(repaired);
    }
    // A last write, so that the server's resourceVersion is an event the informer must see.
    world.create_or_update_random();

    world.note("quiescence: faults cleared".to_owned());
    world.faults.clear();
    // A consumer slower than the resync rate would never catch up; pauses would only delay.
    hurry.store(true, Ordering::Relaxed);
    queue.hurry();
    if let Some((stop_registrar, thread)) = registrar_thread {
        stop_registrar.store(true, Ordering::Relaxed);
        let registered = thread
            .join()
            .map_err(|_| Failure::Panicked("the registrar thread".to_owned()))?;
        handlers.registrar.extend(registered);
    }
    let quiet = tokio::select! {
        quiet = quiesce(&informer, &server, plan) => quiet,
        () = guard.wait_tripped() => {
            stop.cancel();
            return Err(Failure::Livelock(guard.tripped().unwrap_or_default()));
        }
    };
    let elapsed = started.elapsed();
    if let Err(diagnosis) = quiet {
        stop.cancel();
        return Err(Failure::NoQuiescence(diagnosis));
    }

    let options = CheckOptions {
        objects_may_return: plan.selector.is_some(),
        uid_changes: if plan.client_go_uid_changes {
            UidChange::Update
        } else {
            UidChange::DeleteAndAdd
        },
        ..CheckOptions::default()
    };
    let converging = handlers.converging();
    let converging_recordings: Vec<&Recording<JsonObject>> =
        converging.iter().map(|r| &r.recording).collect();
    let check = check_now(
        &informer,
        &server,
        plan,
        &world.expected,
        &converging_recordings,
        &options,
    )?;

    let everyone: Vec<&Recording<JsonObject>> =
        handlers.all().iter().map(|r| &r.recording).collect();
    checks::initial_flags(&everyone).map_err(Failure::InitialFlag)?;
    checks::index_matches_cache(&informer).map_err(Failure::Index)?;
    let cached = informer.lister().list_all();
    let transformed_checked = checks::transform_everywhere(plan.transform, &cached, &everyone)
        .map_err(Failure::Transform)? as u64;
    let with_registrations: Vec<(&Recording<JsonObject>, &Registration)> = handlers
        .all()
        .iter()
        .map(|r| (&r.recording, &r.registration))
        .collect();
    checks::no_resync_unless_due(&with_registrations).map_err(Failure::Resync)?;
    let reported = informer.stats().handler_panics;
    let panicked = panics.load(Ordering::Relaxed);
    if reported != panicked {
        return Err(Failure::Panicked(format!(
            "the trait handler panicked {panicked} times, the informer reports {reported}"
        )));
    }
    let overflows = check_stopped_early(&handlers, &incidents, &options)?;
    {
        let mut problems = queue.problems.lock().clone();
        let probes = probes.lock();
        problems.extend(probes.problems.iter().cloned());
        if !problems.is_empty() {
            return Err(Failure::SyncMoment(problems.join("\n")));
        }
    }
    let registrations: Vec<&Registration> = converging.iter().map(|r| &r.registration).collect();
    if !informer.has_synced() || registrations.iter().any(|r| !r.has_synced()) {
        return Err(Failure::NotSynced(format!(
            "informer {}, {}",
            informer.has_synced(),
            registrations
                .iter()
                .map(|r| format!("{} {}", r.name(), r.has_synced()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }

    // Resync cadence, over a quiet window (paused time only), then everything must still hold.
    let cadence = if plan.clock.is_real() {
        CadenceStats::default()
    } else {
        let cadenced: Vec<Cadenced<'_>> = converging
            .iter()
            .map(|r| Cadenced {
                recording: &r.recording,
                registration: &r.registration,
            })
            .collect();
        let stats = checks::cadence_window(&informer, &cadenced)
            .await
            .map_err(Failure::Resync)?;
        // A bounded stream may have overflowed on a burst of resyncs meanwhile.
        check_stopped_early(&handlers, &incidents, &options)?;
        let converging: Vec<&Recording<JsonObject>> =
            handlers.converging().iter().map(|r| &r.recording).collect();
        check_now(
            &informer,
            &server,
            plan,
            &world.expected,
            &converging,
            &options,
        )?;
        stats
    };
    let reflector = informer.stats().reflector;

    stop.cancel();
    let shutdown_bound = plan
        .time(Duration::from_secs(120))
        .max(Duration::from_secs(10));
    let report = match tokio::time::timeout(shutdown_bound, run).await {
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
    for consumer in std::mem::take(&mut handlers.consumers) {
        if let Err(e) = consumer.await {
            return Err(Failure::Panicked(format!("a stream consumer: {e}")));
        }
    }
    let (continue_pages, full_list_fallbacks) = paging(&server);
    let registrar = &handlers.registrar;
    let sync_probes = probes.lock().ran;
    drop(connection);
    Ok(SeedStats {
        check,
        reflector,
        writes: world.writes,
        faults: world.fault_count,
        elapsed,
        real_time: plan.clock.is_real(),
        continue_pages,
        full_list_fallbacks,
        errors: errors.lock().clone(),
        handler_panics: reported,
        queue: queue.stats(),
        requests: guard.counts(),
        index_failures: trap.fired() as u64,
        registrations: registrar.len() as u64,
        registrations_removed: registrar.iter().filter(|r| r.removed).count() as u64,
        registrations_from_threads: if plan.clock.is_real() {
            registrar.len() as u64
        } else {
            0
        },
        overflows,
        sync_probes,
        cadence,
        transformed_checked,
        idle_checks,
    })
}

/// The convergence check (rules a to e) of the handlers that must have converged.
fn check_now(
    informer: &SharedIndexInformer<JsonObject>,
    server: &FakeApiServer,
    plan: &Plan,
    recorded: &Expected,
    recordings: &[&Recording<JsonObject>],
    options: &CheckOptions,
) -> Result<CheckSummary, Failure> {
    let store = informer.lister().list_all();
    let expected = expected_state(server, plan, recorded);
    check_convergence_with_content(&expected, &store, recordings, options, &|o| digest(o))
        .map_err(Failure::Diverged)
}

/// Handlers that stopped receiving early: removed ones (the churn handler, some of the
/// registrar's) heard a consistent prefix; the bounded stream either kept its bound or was
/// disconnected, reported, and heard a consistent prefix. Returns how many overflowed.
fn check_stopped_early(
    handlers: &Handlers,
    incidents: &Mutex<Vec<(String, String)>>,
    options: &CheckOptions,
) -> Result<u64, Failure> {
    let prefix = |r: &Registered| -> Result<(), Failure> {
        checks::consistent_prefix(&r.recording, options).map_err(Failure::Prefix)
    };
    for r in handlers.all() {
        if r.removed {
            prefix(r)?;
        }
    }
    let Some((bounded, limit)) = &handlers.bounded else {
        return Ok(0);
    };
    let overflow_incidents = incidents
        .lock()
        .iter()
        .filter(|(name, kind)| name == "bounded" && kind == "overflowed")
        .count();
    let stats = bounded.registration.stats();
    if stats.status == RegistrationStatus::Disconnected {
        prefix(bounded)?;
        if overflow_incidents != 1 {
            return Err(Failure::Prefix(format!(
                "the bounded stream was disconnected with {overflow_incidents} overflow \
                 incident(s) reported (expected 1)"
            )));
        }
        return Ok(1);
    }
    let initial = bounded
        .recording
        .notifications()
        .iter()
        .filter(|n| {
            matches!(
                n,
                informer::Notification::Add {
                    is_in_initial_list: true,
                    ..
                }
            )
        })
        .count();
    if overflow_incidents > 0 || stats.max_pending > limit + initial {
        return Err(Failure::Prefix(format!(
            "the bounded stream (limit {limit}) is still connected, yet {overflow_incidents} \
             overflow(s) were reported and up to {} notifications waited for it ({initial} of \
             them initial adds)",
            stats.max_pending
        )));
    }
    Ok(0)
}

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

/// The handlers registered before start: the trait handler (panicking now and then in some
/// plans), a slow stream, and a slower bounded stream. Returns the trait handler's panic count
/// and the handlers.
fn register_before_start(
    informer: &SharedIndexInformer<JsonObject>,
    plan: &Plan,
    hurry: &Arc<AtomicBool>,
) -> (Arc<AtomicU64>, Handlers) {
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
            HandlerOptions {
                resync_period: plan.trait_resync.map(|p| plan.resync_time(p)),
                ..HandlerOptions::named("trait")
            },
        )
        .expect("add the trait handler");
    let mut consumers = Vec::new();
    let stream_recording = Recording::new("stream");
    let stream = informer
        .stream_with(HandlerOptions::named("stream"))
        .expect("open the stream");
    let stream_registration = stream.registration().clone();
    consumers.push(tokio::spawn(consume(
        stream,
        stream_recording.clone(),
        plan.time(plan.stream_delay_max),
        plan.seed,
        Arc::clone(hurry),
    )));
    let bounded = plan.bounded.map(|limit| {
        let recording = Recording::new("bounded");
        let stream = informer
            .stream_with(HandlerOptions {
                buffer_limit: NonZeroUsize::new(limit),
                ..HandlerOptions::named("bounded")
            })
            .expect("open the bounded stream");
        let registration = stream.registration().clone();
        consumers.push(tokio::spawn(consume(
            stream,
            recording.clone(),
            plan.time(plan.stream_delay_max.max(Duration::from_millis(50)) * 4),
            plan.seed ^ 0xb0,
            Arc::clone(hurry),
        )));
        (
            Registered {
                recording,
                registration,
                removed: false,
            },
            limit,
        )
    });
    let handlers = Handlers {
        trait_handler: Registered {
            recording: trait_recording,
            registration: trait_registration,
            removed: false,
        },
        stream: Registered {
            recording: stream_recording,
            registration: stream_registration,
            removed: false,
        },
        bounded,
        late: None,
        churn: None,
        registrar: Vec::new(),
        consumers,
    };
    (panics, handlers)
}

/// Tasks that wait for the informer's and each early registration's sync and check, at that
/// moment, that the cache holds the first list (the informer) and that the handler has been
/// told all of it as initial adds (each registration).
fn spawn_sync_probes(
    informer: &SharedIndexInformer<JsonObject>,
    handlers: &Handlers,
    queue: &Arc<ChaosQueue>,
    probes: &Arc<Mutex<Probes>>,
    synced: &Arc<AtomicBool>,
    clock: Clock,
) {
    {
        let (informer, queue, probes, synced) = (
            informer.clone(),
            Arc::clone(queue),
            Arc::clone(probes),
            Arc::clone(synced),
        );
        tokio::spawn(async move {
            if !informer.wait_for_sync().await {
                return;
            }
            synced.store(true, Ordering::Release);
            let mut probes = probes.lock();
            probes.ran += 1;
            let Some((first, removable)) = queue.first_list() else {
                probes
                    .problems
                    .push("the informer synced without a first list".to_owned());
                return;
            };
            let cache = informer.lister();
            let in_cache = |key: &str| cache.get_by_key(key);
            let mut wrong = Vec::new();
            for (key, rv) in &first {
                match in_cache(key) {
                    Some(o) if queue::rv_of(&o) >= *rv => {}
                    _ if removable.contains(key) => {}
                    other => wrong.push(format!(
                        "{key}@{rv} ({})",
                        other.map_or("missing".to_owned(), |o| format!("at {}", queue::rv_of(&o)))
                    )),
                }
            }
            if !wrong.is_empty() {
                probes.problems.push(format!(
                    "when wait_for_sync returned, the cache lacked first-list objects: {}",
                    wrong.join(", ")
                ));
            }
        });
    }
    let mut early = vec![&handlers.trait_handler];
    // A stream's notification counts as handled once yielded, before its consumer records
    // it: on a multi-thread runtime the probe may look in between.
    if !clock.is_real() {
        early.push(&handlers.stream);
        early.extend(handlers.bounded.iter().map(|(r, _)| r));
    }
    for r in early {
        let (informer, queue, probes) = (informer.clone(), Arc::clone(queue), Arc::clone(probes));
        let (registration, recording) = (r.registration.clone(), r.recording.clone());
        tokio::spawn(async move {
            if !registration.wait_for_sync().await {
                return;
            }
            let informer_synced = informer.has_synced();
            let first = queue.first_list().map(|(f, _)| f).unwrap_or_default();
            let mut probes = probes.lock();
            probes.ran += 1;
            if let Err(problem) = checks::told_first_list(&recording, informer_synced, &first) {
                probes.problems.push(problem);
            }
        });
    }
}

/// Real time: an OS thread that registers `plan.registrar` handlers while the informer
/// distributes events (removing a quarter of them again soon after), until told to stop.
fn spawn_registrar_thread(
    informer: &SharedIndexInformer<JsonObject>,
    plan: &Plan,
) -> (Arc<AtomicBool>, std::thread::JoinHandle<Vec<Registered>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (informer, count, seed) = (informer.clone(), plan.registrar, plan.seed);
    let spread = plan
        .time(Duration::from_secs(120))
        .max(Duration::from_millis(10));
    let thread_stop = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x7e9);
        let mut registered = Vec::new();
        let pause_max = u64::try_from((spread / count.max(1) as u32).as_micros())
            .unwrap_or(1)
            .max(1);
        for i in 0..count {
            if thread_stop.load(Ordering::Relaxed) {
                break;
            }
            std::thread::sleep(Duration::from_micros(rng.random_range(0..=pause_max)));
            let recording = Recording::new(format!("thread-{i}"));
            let Ok(registration) = informer.add_handler_with(
                recording.handler(),
                HandlerOptions::named(format!("thread-{i}")),
            ) else {
                break;
            };
            let mut r = Registered {
                recording,
                registration,
                removed: false,
            };
            if rng.random_bool(0.25) {
                std::thread::sleep(Duration::from_micros(rng.random_range(0..=pause_max)));
                informer.remove_handler(&r.registration);
                r.removed = true;
            }
            registered.push(r);
        }
        registered
    });
    (stop, thread)
}

/// The server's truth for this plan: its objects in the informer's namespace and selection,
/// with the content the informer should hold (after its transform), and (without a selector,
/// under which leaving the selection looks like a deletion) the deletions the schedule made,
/// with their final contents.
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
            expected.set_content(obj.key(), content_digest(plan, &obj));
        }
    }
    if selector.is_none()
        && let Some(deletions) = recorded.deletions()
    {
        expected.track_deletions();
        for (uid, d) in deletions {
            expected.record_deletion(uid, &d.key, d.final_resource_version.as_deref());
            if let Some(digest) = d.final_digest {
                expected.set_final_content(uid, digest);
            }
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

/// The informer of a plan over `lister_watcher`, with its queue wrapped in a [`ChaosQueue`]
/// (so it builds the indexer and queue itself, as the informer would: the same key function,
/// the namespace index, and the `tier` index with the trap).
fn build_informer(
    lister_watcher: Arc<dyn ListerWatcher<JsonObject>>,
    plan: &Plan,
    trap: &Arc<IndexTrap>,
    errors: &Arc<Mutex<BTreeMap<String, u64>>>,
    incidents: &Arc<Mutex<Vec<(String, String)>>>,
) -> (SharedIndexInformer<JsonObject>, Arc<ChaosQueue>) {
    // The informer's default key function (`namespace/name`): kept as it is, so that the
    // informer knows its keys and relists may skip decoding what the cache holds unchanged.
    let key_func: KeyFunc<JsonObject> = InformerConfig::<JsonObject>::default().key_func;
    // The indexed store is built here, as the informer would; the compact one by the
    // informer, from its settings (with the trap's index among its indexers).
    let (indexer, store, indexers): (Option<Box<dyn Indexer<JsonObject>>>, _, _) = match plan.store
    {
        PlanStore::Indexed => (
            Some(Box::new(
                IndexedStore::builder()
                    .key_func(Arc::clone(&key_func))
                    .indexer(NAMESPACE_INDEX, namespace_index_func())
                    .indexer("tier", trap.index_func())
                    .build(),
            )),
            StoreChoice::Indexed,
            Indexers::new(),
        ),
        PlanStore::Compact {
            cache,
            eager_dictionary,
            json,
        } => {
            let dictionary = if eager_dictionary {
                ZstdDictionary::default()
                    .training_objects(12)
                    .dictionary_size(2 << 10)
            } else {
                ZstdDictionary::default()
            };
            let codec = if json {
                Codec::ZstdDictionary(dictionary)
            } else {
                Codec::MessagePackZstd(dictionary)
            };
            let options = CompactOptions::default()
                .cache_capacity(cache)
                .round_trip_check(RoundTripCheck::Always)
                .codec(codec);
            (
                None,
                StoreChoice::compact(options),
                [("tier".to_owned(), trap.index_func())].into(),
            )
        }
    };
    // The informer builds the queue with its own key function and indexer; the wrapper is
    // kept here too, for the checks.
    let built: Arc<OnceLock<Arc<ChaosQueue>>> = Arc::default();
    let queue_builder: QueueBuilder<JsonObject> = {
        let (built, plan) = (Arc::clone(&built), plan.clone());
        Box::new(move |wiring: QueueWiring<JsonObject>| {
            let inner: Arc<dyn Queue<JsonObject>> = match plan.in_order_batch {
                Some(batch) => Arc::new(InOrderFifo::new(InOrderFifoConfig {
                    key_func: Arc::clone(&wiring.key_func),
                    known_objects: Some(Arc::clone(&wiring.known_objects)),
                    max_batch_size: NonZeroUsize::new(batch).unwrap_or(NonZeroUsize::MIN),
                })),
                None => Arc::new(DeltaFifo::new(DeltaFifoConfig {
                    key_func: Arc::clone(&wiring.key_func),
                    known_objects: Some(Arc::clone(&wiring.known_objects)),
                })),
            };
            let queue = Arc::new(ChaosQueue::new(inner, wiring.known_objects, &plan));
            let _ = built.set(Arc::clone(&queue));
            queue
        })
    };
    let mut config = InformerConfig::<JsonObject> {
        name: format!("chaos-{}", plan.seed),
        resync_period: plan.resync.map(|p| plan.resync_time(p)),
        uid_change: if plan.client_go_uid_changes {
            UidChange::Update
        } else {
            UidChange::DeleteAndAdd
        },
        queue: QueueChoice::Custom(queue_builder),
        indexer,
        store,
        indexers,
        key_func,
        ..InformerConfig::default()
    };
    config.list_watch.page_size = plan.page_size;
    config.list_watch.watch_list = if plan.streaming {
        WatchListMode::On
    } else {
        WatchListMode::Off
    };
    config.list_watch.min_watch_timeout = plan
        .time(plan.min_watch_timeout)
        .max(Duration::from_secs(1));
    config.list_watch.initial_events_timeout = plan.time(plan.initial_events_timeout);
    let backoff = BackoffConfig::default();
    config.list_watch.backoff = BackoffConfig {
        initial: plan.time(backoff.initial),
        max: plan.time(backoff.max),
        reset_after: plan.time(backoff.reset_after),
        ..backoff
    };
    config.seed = Some(plan.seed);
    config.list_watch.label_selector = plan.selector.map(str::to_owned);
    let errors = Arc::clone(errors);
    config.watch_error_handler = Some(Arc::new(move |error, context| {
        let key = format!("{:?}/{:?}", context.stage, error.class());
        *errors.lock().entry(key).or_default() += 1;
    }));
    let incidents = Arc::clone(incidents);
    config.on_incident = Some(Arc::new(move |incident| {
        let kind = match incident.kind {
            IncidentKind::Panicked { .. } => "panicked",
            IncidentKind::Overflowed { .. } => "overflowed",
            IncidentKind::StuckAtShutdown { .. } => "stuck",
            _ => "other",
        };
        incidents
            .lock()
            .push((incident.handler.clone(), kind.to_owned()));
    }));
    if plan.transform {
        config.transform = Some(Arc::new(transform));
    }
    let informer =
        SharedIndexInformer::new(lister_watcher, config).expect("a valid informer config");
    let queue = Arc::clone(built.get().expect("the informer built its queue"));
    (informer, queue)
}

/// A stream's consumer: records each notification, then dawdles to build a backlog, until
/// told to hurry.
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
            let micros = u64::try_from(max_delay.as_micros()).unwrap_or(u64::MAX);
            tokio::time::sleep(Duration::from_micros(rng.random_range(0..=micros))).await;
        }
    }
}

/// Waits until the informer has seen the server's last resourceVersion, its queue is empty
/// and every handler has handled its buffer, and it stays so for a few seconds of the seed's
/// clock.
async fn quiesce(
    informer: &SharedIndexInformer<JsonObject>,
    server: &FakeApiServer,
    plan: &Plan,
) -> Result<(), String> {
    let quiet = || {
        let server_rv = server.resource_version().to_string();
        informer.last_synced_resource_version().as_deref() == Some(server_rv.as_str())
            && informer.stats().queued == 0
            && informer.registrations().iter().all(|r| r.pending() == 0)
    };
    let bound = match plan.clock {
        Clock::Paused => QUIESCENCE_BOUND,
        Clock::RealTime { .. } => plan.time(QUIESCENCE_BOUND).max(REAL_QUIESCENCE_FLOOR),
    };
    let settle = plan
        .time(Duration::from_secs(5))
        .max(Duration::from_millis(20));
    let poll = plan
        .time(Duration::from_millis(100))
        .max(Duration::from_millis(1));
    let waited = tokio::time::timeout(bound, async {
        loop {
            if quiet() {
                tokio::time::sleep(settle).await;
                if quiet() {
                    return;
                }
            }
            tokio::time::sleep(poll).await;
        }
    })
    .await;
    waited.map_err(|_| diagnose(informer, server))
}

fn diagnose(informer: &SharedIndexInformer<JsonObject>, server: &FakeApiServer) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "  server resourceVersion {}, informer last synced {:?}, open watches {}",
        server.resource_version(),
        informer.last_synced_resource_version(),
        server.open_watches(RESOURCE)
    );
    let _ = writeln!(text, "  informer stats: {:?}", informer.stats());
    for r in informer.registrations() {
        let _ = writeln!(text, "  {}: {:?}", r.name(), r.stats());
    }
    let requests = server.requests();
    let _ = writeln!(text, "  last requests ({} in all):", requests.len());
    for r in requests.iter().rev().take(10).rev() {
        let _ = writeln!(text, "    {r}");
    }
    text
}

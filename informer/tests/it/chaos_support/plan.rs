//! What one seed draws: the server, informer and handler settings, and how time runs.

use std::fmt;
use std::time::Duration;

use fake_apiserver::HistoryConfig;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::Sabotage;

/// One seed in `REALTIME_EVERY` of the chaos test runs in real time on a multi-thread
/// runtime (see [`Clock::RealTime`]).
pub const REALTIME_EVERY: u64 = 20;

/// Which seeds run in real time: `seed % REALTIME_EVERY == REALTIME_REMAINDER`.
pub const REALTIME_REMAINDER: u64 = 13;

/// How a seed's time runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// A current-thread runtime on paused (virtual) time: deterministic, and hours of
    /// virtual time in milliseconds. The informer, the schedule and every handler share one
    /// thread, so nothing runs truly in parallel.
    Paused,
    /// A multi-thread runtime (two workers) on real time, every duration of the plan divided
    /// by `scale` (resync periods stay at least the informer's 1 s minimum). The processing
    /// loop, the reflector, handlers and the schedule run in parallel, and extra handlers
    /// are registered from a separate OS thread while events are distributed.
    RealTime {
        /// How much faster than the virtual plan.
        scale: u32,
    },
}

impl Clock {
    /// A duration of the virtual plan, as this clock runs it.
    pub fn scaled(self, d: Duration) -> Duration {
        match self {
            Self::Paused => d,
            Self::RealTime { scale } => d / scale.max(1),
        }
    }

    /// Whether this clock is real.
    pub fn is_real(self) -> bool {
        matches!(self, Self::RealTime { .. })
    }
}

/// The informer's cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanStore {
    /// `IndexedStore`, built by the test (the default).
    Indexed,
    /// The compact store, through `InformerConfig::store` (`CHAOS_STORE=compact`).
    Compact {
        /// Decoded objects cached (0: every read decodes).
        cache: usize,
        /// A dictionary trained after a dozen objects (else the default 512: with the chaos
        /// test's few objects the store mostly keeps objects uncompressed).
        eager_dictionary: bool,
        /// JSON (kept as received: the raw-text path) rather than MessagePack (the default,
        /// encoded from the object).
        json: bool,
    },
}

/// Which cache the chaos test runs, from `CHAOS_STORE` (`indexed`, the default, or
/// `compact`).
pub fn store_from_env() -> StoreUnderTest {
    match std::env::var("CHAOS_STORE").as_deref() {
        Err(_) | Ok("" | "indexed") => StoreUnderTest::Indexed,
        Ok("compact") => StoreUnderTest::Compact,
        Ok(other) => panic!("CHAOS_STORE={other:?}: expected `indexed` or `compact`"),
    }
}

/// The cache every seed of a run uses (each compact seed draws its own settings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StoreUnderTest {
    #[default]
    Indexed,
    Compact,
}

/// Pauses of the processing loop between two pops, so that deltas pile up in the queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dawdle {
    /// The share of pops preceded by a pause.
    pub rate: f64,
    /// The longest pause (virtual).
    pub max: Duration,
}

/// The settings one seed draws.
#[derive(Debug, Clone)]
pub struct Plan {
    pub seed: u64,
    pub clock: Clock,
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
    /// The trait handler's own resync period (else the informer's).
    pub trait_resync: Option<Duration>,
    pub history: HistoryConfig,
    pub min_watch_timeout: Duration,
    pub initial_events_timeout: Duration,
    pub bookmark_interval: Duration,
    pub stream_delay_max: Duration,
    pub late_handler_at: Option<usize>,
    pub late_handler_resync: Option<Duration>,
    /// The informer's cache.
    pub store: PlanStore,
    /// Pauses between pops (a backlog across relists).
    pub dawdle: Option<Dawdle>,
    /// The share of pops before which the processing loop stalls until the next relist (at
    /// most two minutes), so that the relist meets everything queued since.
    pub stall_rate: f64,
    /// The share of relists that land while a batch is in flight (see
    /// [`ChaosQueue`](super::queue::ChaosQueue)).
    pub in_flight_replaces: f64,
    /// Handlers registered while the informer runs: from the schedule (paused time) or from a
    /// separate OS thread (real time); some are removed again.
    pub registrar: usize,
    /// A stream with this buffer bound, consumed slowly: it may overflow and be disconnected.
    pub bounded: Option<usize>,
    pub sabotage: Sabotage,
}

impl Plan {
    /// The plan of `seed` in the chaos test: paused time, except one seed in
    /// [`REALTIME_EVERY`], which runs in real time, shortened.
    pub fn of(seed: u64) -> Self {
        let clock = if seed % REALTIME_EVERY == REALTIME_REMAINDER {
            Clock::RealTime { scale: 1000 }
        } else {
            Clock::Paused
        };
        Self::with_clock(seed, clock)
    }

    /// The plan of `seed` on `clock`.
    pub fn with_clock(seed: u64, clock: Clock) -> Self {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x9e37_79b9_7f4a_7c15);
        let streaming = rng.random_bool(0.35);
        let steps = match clock {
            Clock::Paused => rng.random_range(60..=160),
            Clock::RealTime { scale } if scale >= 200 => rng.random_range(20..=40),
            Clock::RealTime { .. } => rng.random_range(40..=100),
        };
        let min_events = rng.random_range(5..=60);
        let mut plan = Self {
            seed,
            clock,
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
            trait_resync: None,
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
            dawdle: None,
            stall_rate: 0.0,
            in_flight_replaces: 0.0,
            registrar: 0,
            bounded: None,
            sabotage: Sabotage::None,
            store: PlanStore::Indexed,
        };
        // Drawn after the settings above, so that those keep their values per seed.
        plan.trait_resync = (plan.resync.is_some() && rng.random_bool(0.5))
            .then(|| Duration::from_secs(rng.random_range(1..=60)));
        plan.dawdle = rng.random_bool(0.6).then(|| Dawdle {
            rate: rng.random_range(0.05..0.6),
            max: Duration::from_millis([20, 300, 2_000, 8_000][rng.random_range(0..4)]),
        });
        plan.stall_rate = if rng.random_bool(0.5) {
            rng.random_range(0.01..0.1)
        } else {
            0.0
        };
        plan.in_flight_replaces = if rng.random_bool(0.6) {
            rng.random_range(0.2..=1.0)
        } else {
            0.0
        };
        plan.registrar = match clock {
            Clock::Paused => rng.random_range(0..=4),
            Clock::RealTime { .. } => rng.random_range(10..=40),
        };
        plan.bounded = rng.random_bool(0.35).then(|| rng.random_range(1..=12));
        plan
    }

    /// This plan with `store`: for the compact store, its settings are drawn from the seed
    /// with an RNG of their own, so that nothing else of the plan changes.
    pub fn with_store(mut self, store: StoreUnderTest) -> Self {
        self.store = match store {
            StoreUnderTest::Indexed => PlanStore::Indexed,
            StoreUnderTest::Compact => {
                let mut rng = StdRng::seed_from_u64(self.seed ^ 0x5eed_c0de_c0a1_e5ce);
                PlanStore::Compact {
                    cache: [0, 1, 3, 1_024][rng.random_range(0..4)],
                    eager_dictionary: rng.random_bool(0.5),
                    json: rng.random_bool(0.5),
                }
            }
        };
        self
    }

    /// A duration of the plan as the seed's clock runs it.
    pub fn time(&self, d: Duration) -> Duration {
        self.clock.scaled(d)
    }

    /// A resync period of the plan as the seed's clock runs it (never under the informer's
    /// minimum of 1 s, which it would raise anyway).
    pub fn resync_time(&self, d: Duration) -> Duration {
        self.time(d).max(Duration::from_secs(1))
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ns × {} names, {} initial objects, {} steps ({:.0}% faults), page {:?}, queue {}, \
             uid changes {}, streaming {}{}, resync {:?} (trait handler {:?}), history {}..{} \
             events / {:?}, watch timeout ≥ {:?}, bookmarks every {:?}, stream delay ≤ {:?}, \
             late handler {}, namespace {:?}, selector {:?}, transform {}, churn handler {:?}, \
             trait handler panics {:.0}%, pops {}, stalls until a relist {:.0}%, in-flight \
             relists {:.0}%, {} registered while running, bounded stream {:?}, store {:?}, \
             clock {}",
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
            self.trait_resync,
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
            self.namespace.map(super::namespace),
            self.selector,
            self.transform,
            self.churn_handler,
            self.panic_rate * 100.0,
            match self.dawdle {
                Some(d) => format!("pause {:.0}% of the time up to {:?}", d.rate * 100.0, d.max),
                None => "without pauses".to_owned(),
            },
            self.stall_rate * 100.0,
            self.in_flight_replaces * 100.0,
            self.registrar,
            self.bounded,
            self.store,
            match self.clock {
                Clock::Paused => "paused".to_owned(),
                Clock::RealTime { scale } => format!("real time, {scale}× faster"),
            },
        )
    }
}

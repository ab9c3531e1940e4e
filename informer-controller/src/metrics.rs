//! Prometheus metrics of controllers (feature `metrics`): controller-runtime's
//! `controller_runtime_*` series, see the crate docs' [Metrics](crate#metrics) section.
//!
//! [`ControllerMetrics`] is the public handle: the families, registered once into a registry.
//! Each controller records through a crate-internal [`Recorder`]. Without the feature both
//! are empty types whose methods do nothing, and no value of `ControllerMetrics` can exist.

#[cfg(feature = "metrics")]
pub use enabled::ControllerMetrics;
#[cfg(feature = "metrics")]
pub(crate) use enabled::Recorder;

#[cfg(not(feature = "metrics"))]
pub use disabled::ControllerMetrics;
#[cfg(not(feature = "metrics"))]
pub(crate) use disabled::Recorder;

/// The `result` label of `controller_runtime_reconcile_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// `success`: done.
    Success,
    /// `requeue_after`: done, with a requeue after a delay.
    RequeueAfter,
    /// `error`: failed (error, panic or timeout).
    Error,
}

#[cfg(not(feature = "metrics"))]
mod disabled {
    use std::convert::Infallible;
    use std::time::Duration;

    use super::Outcome;

    /// The `controller_runtime_*` metric families. This build has no `metrics` feature, so no
    /// value of this type exists and `metrics: None` is the only setting (the configuration
    /// keeps the same fields with and without the feature).
    #[derive(Debug, Clone)]
    pub struct ControllerMetrics {
        never: Infallible,
    }

    /// Records nothing.
    #[derive(Debug, Default)]
    pub(crate) struct Recorder;

    impl Recorder {
        pub(crate) fn new(metrics: Option<&ControllerMetrics>, _controller: &str) -> Self {
            if let Some(metrics) = metrics {
                match metrics.never {}
            }
            Self
        }

        #[inline(always)]
        pub(crate) fn workers(&self, _count: usize) {}

        #[inline(always)]
        pub(crate) fn started(&self) {}

        #[inline(always)]
        pub(crate) fn finished(&self, _outcome: Outcome, _took: Duration) {}

        #[inline(always)]
        pub(crate) fn terminal(&self) {}

        #[inline(always)]
        pub(crate) fn panicked(&self) {}

        #[inline(always)]
        pub(crate) fn timed_out(&self) {}
    }
}

#[cfg(feature = "metrics")]
mod enabled {
    use std::fmt;
    use std::sync::Arc;
    use std::time::Duration;

    use prometheus_client::metrics::counter::Counter;
    use prometheus_client::metrics::family::Family;
    use prometheus_client::metrics::gauge::Gauge;
    use prometheus_client::metrics::histogram::Histogram;
    use prometheus_client::registry::Registry;

    use super::Outcome;

    /// `controller="<name>"`.
    type ControllerLabel = [(&'static str, String); 1];
    /// `controller`, `result`.
    type ResultLabels = [(&'static str, String); 2];

    /// controller-runtime's buckets for reconcile durations: 5 ms to 60 s.
    const RECONCILE_TIME_BUCKETS: [f64; 40] = [
        0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
        0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
        15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
    ];

    fn reconcile_time_histogram() -> Histogram {
        Histogram::new(RECONCILE_TIME_BUCKETS)
    }

    /// The `controller_runtime_*` metric families, registered once into a registry and
    /// shared by any number of controllers (each one's series carry its name). Give a clone
    /// to [`ControllerConfig::metrics`](crate::ControllerConfig::metrics). Cloning is cheap.
    #[derive(Clone)]
    pub struct ControllerMetrics {
        families: Arc<Families>,
    }

    struct Families {
        reconciles: Family<ResultLabels, Counter>,
        errors: Family<ControllerLabel, Counter>,
        terminal_errors: Family<ControllerLabel, Counter>,
        panics: Family<ControllerLabel, Counter>,
        timeouts: Family<ControllerLabel, Counter>,
        reconcile_time: Family<ControllerLabel, Histogram>,
        max_concurrent: Family<ControllerLabel, Gauge>,
        active_workers: Family<ControllerLabel, Gauge>,
    }

    impl fmt::Debug for ControllerMetrics {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ControllerMetrics").finish_non_exhaustive()
        }
    }

    impl ControllerMetrics {
        /// Registers the controller families into `registry` (its prefix, if any, comes
        /// before `controller_runtime_`). Call once per registry and pass clones to every
        /// controller.
        pub fn register(registry: &mut Registry) -> Self {
            let families = Families {
                reconciles: Family::default(),
                errors: Family::default(),
                terminal_errors: Family::default(),
                panics: Family::default(),
                timeouts: Family::default(),
                reconcile_time: Family::new_with_constructor(reconcile_time_histogram),
                max_concurrent: Family::default(),
                active_workers: Family::default(),
            };
            let r = registry;
            r.register(
                "controller_runtime_reconcile",
                "Total number of reconciliations per controller, by result",
                families.reconciles.clone(),
            );
            r.register(
                "controller_runtime_reconcile_errors",
                "Total number of reconciliation errors per controller",
                families.errors.clone(),
            );
            r.register(
                "controller_runtime_terminal_reconcile_errors",
                "Total number of reconciliation errors given up on (no retry) per controller",
                families.terminal_errors.clone(),
            );
            r.register(
                "controller_runtime_reconcile_panics",
                "Total number of reconciliation panics per controller",
                families.panics.clone(),
            );
            r.register(
                "controller_runtime_reconcile_timeouts",
                "Total number of reconciliations that hit the reconcile timeout per controller",
                families.timeouts.clone(),
            );
            r.register(
                "controller_runtime_reconcile_time_seconds",
                "Length of time per reconciliation per controller",
                families.reconcile_time.clone(),
            );
            r.register(
                "controller_runtime_max_concurrent_reconciles",
                "Maximum number of concurrent reconciles per controller",
                families.max_concurrent.clone(),
            );
            r.register(
                "controller_runtime_active_workers",
                "Number of currently used workers per controller",
                families.active_workers.clone(),
            );
            Self {
                families: Arc::new(families),
            }
        }
    }

    /// One controller's series.
    struct Series {
        success: Counter,
        requeue_after: Counter,
        error: Counter,
        errors: Counter,
        terminal_errors: Counter,
        panics: Counter,
        timeouts: Counter,
        reconcile_time: Histogram,
        max_concurrent: Gauge,
        active_workers: Gauge,
    }

    /// One controller's series; inactive (records nothing) without metrics.
    #[derive(Default)]
    pub(crate) struct Recorder {
        series: Option<Series>,
    }

    impl fmt::Debug for Recorder {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Recorder")
                .field("active", &self.series.is_some())
                .finish()
        }
    }

    impl Recorder {
        /// The series of `controller`, created at zero (as controller-runtime does, so that
        /// rates exist before the first event).
        pub(crate) fn new(metrics: Option<&ControllerMetrics>, controller: &str) -> Self {
            let Some(metrics) = metrics else {
                return Self::default();
            };
            let f = &metrics.families;
            let label = [("controller", controller.to_owned())];
            let result = |r: &str| {
                [
                    ("controller", controller.to_owned()),
                    ("result", r.to_owned()),
                ]
            };
            // One statement per series: `get_or_create` answers a read guard on the family,
            // which must be gone before the next call may create a series.
            let success = f.reconciles.get_or_create(&result("success")).clone();
            let requeue_after = f.reconciles.get_or_create(&result("requeue_after")).clone();
            let error = f.reconciles.get_or_create(&result("error")).clone();
            let errors = f.errors.get_or_create(&label).clone();
            let terminal_errors = f.terminal_errors.get_or_create(&label).clone();
            let panics = f.panics.get_or_create(&label).clone();
            let timeouts = f.timeouts.get_or_create(&label).clone();
            let reconcile_time = f.reconcile_time.get_or_create(&label).clone();
            let max_concurrent = f.max_concurrent.get_or_create(&label).clone();
            let active_workers = f.active_workers.get_or_create(&label).clone();
            Self {
                series: Some(Series {
                    success,
                    requeue_after,
                    error,
                    errors,
                    terminal_errors,
                    panics,
                    timeouts,
                    reconcile_time,
                    max_concurrent,
                    active_workers,
                }),
            }
        }

        /// The number of workers (`controller_runtime_max_concurrent_reconciles`).
        pub(crate) fn workers(&self, count: usize) {
            if let Some(s) = &self.series {
                s.max_concurrent
                    .set(i64::try_from(count).unwrap_or(i64::MAX));
            }
        }

        /// A worker starts a reconcile.
        pub(crate) fn started(&self) {
            if let Some(s) = &self.series {
                s.active_workers.inc();
            }
        }

        /// A reconcile ended with `outcome` after `took`.
        pub(crate) fn finished(&self, outcome: Outcome, took: Duration) {
            if let Some(s) = &self.series {
                s.active_workers.dec();
                s.reconcile_time.observe(took.as_secs_f64());
                match outcome {
                    Outcome::Success => s.success.inc(),
                    Outcome::RequeueAfter => s.requeue_after.inc(),
                    Outcome::Error => {
                        s.error.inc();
                        s.errors.inc()
                    }
                };
            }
        }

        /// A failed key is given up.
        pub(crate) fn terminal(&self) {
            if let Some(s) = &self.series {
                s.terminal_errors.inc();
            }
        }

        /// A reconcile panicked.
        pub(crate) fn panicked(&self) {
            if let Some(s) = &self.series {
                s.panics.inc();
            }
        }

        /// A reconcile hit its time limit.
        pub(crate) fn timed_out(&self) {
            if let Some(s) = &self.series {
                s.timeouts.inc();
            }
        }
    }
}

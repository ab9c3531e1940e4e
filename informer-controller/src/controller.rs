//! [`Controller`]: the builder (primary informer, `owns`, `watches`, a managed factory) and
//! the run (register handlers, start, sync, workers, graceful shutdown, report).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use informer::{
    FactoryLifecycle, Object, ObjectKey, SharedIndexInformer, SyncSource, wait_for_cache_sync,
};
use informer_workqueue::{RateLimitingQueue, RateLimitingQueueConfig};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::action::{Action, OnError, ReconcileError};
use crate::config::ControllerConfig;
use crate::context::Context;
use crate::deleted::DeletedObjects;
use crate::error::ControllerError;
use crate::handle::ControllerHandle;
use crate::metrics::Recorder;
use crate::sources::{self, Registered, Source, UpdateFilter};
use crate::state::{Common, Shared, Stub};
use crate::stats::{ControllerReport, ControllerStats};
use crate::worker::Workers;

/// A controller: reconciles the objects of a primary informer whenever they, the objects
/// they own, or related objects change. See the [crate docs](crate) for the rules.
///
/// Build it with [`new`](Self::new) from the primary informer, add triggers with
/// [`owns`](Self::owns) and [`watches`](Self::watches), optionally hand it the factory to
/// start and stop ([`manage_factory`](Self::manage_factory)), then
/// [`run`](Self::run) it with a reconcile function until a cancellation token fires.
pub struct Controller<K: Object> {
    config: ControllerConfig,
    common: Arc<Common>,
    primary: SharedIndexInformer<K>,
    sources: Vec<Source<K>>,
    factory: Option<Box<dyn FactoryLifecycle>>,
    stub: Option<Stub<K>>,
    update_filter: Option<UpdateFilter<K>>,
}

impl<K: Object> Controller<K> {
    /// A controller of the objects of `primary` (keyed `namespace/name`: the informer must use
    /// the default key function). Its queue exists from now on (see
    /// [`handle`](Self::handle)); nothing is registered or started until [`run`](Self::run).
    pub fn new(primary: SharedIndexInformer<K>, config: ControllerConfig) -> Self {
        let mut queue = RateLimitingQueueConfig::<ObjectKey> {
            name: config.name.clone(),
            metrics: config.workqueue_metrics.clone(),
            ..RateLimitingQueueConfig::default()
        };
        if let Some(limiter) = &config.rate_limiter {
            queue.rate_limiter = Arc::clone(limiter);
        }
        let lister = primary.lister();
        let common = Arc::new(Common {
            name: config.name.as_str().into(),
            queue: RateLimitingQueue::with_config(queue),
            stats: watch::Sender::new(ControllerStats::default()),
            in_flight: Mutex::new(BTreeMap::new()),
            recorder: Recorder::new(config.metrics.as_ref(), &config.name),
            all_keys: Box::new(move || lister.list_keys()),
        });
        Self {
            config,
            common,
            primary,
            sources: Vec::new(),
            factory: None,
            stub: None,
            update_filter: None,
        }
    }

    /// Reconciles the owner of every object of `informer` that changes: each of its
    /// `metadata.ownerReferences` ([`Object::object_owners`]) naming a cached primary object
    /// (by name, in the object's namespace or cluster-scoped, and by UID) queues that
    /// object's key. Both states of an update count, so an owner that loses an object hears
    /// about it. Deletions count too (garbage collection of a child reconciles its owner).
    pub fn owns<O: Object>(mut self, informer: SharedIndexInformer<O>) -> Self {
        self.sources.push(sources::owned(informer));
        self
    }

    /// Reconciles what `mapper` answers for every object of `informer` that changes (both
    /// states of an update, and deletions): keys of primary objects. The mapper runs on the
    /// informer's handler task; it should be quick (read listers, not the API).
    ///
    /// A key whose primary object does not exist is not reconciled, unless
    /// [`reconcile_missing_as`](Self::reconcile_missing_as) says how to stand in for it.
    pub fn watches<O: Object, I>(
        mut self,
        informer: SharedIndexInformer<O>,
        mapper: impl Fn(&O) -> I + Send + Sync + 'static,
    ) -> Self
    where
        I: IntoIterator<Item = ObjectKey>,
    {
        let mapper = Arc::new(move |object: &O| mapper(object).into_iter().collect());
        self.sources.push(sources::watched(informer, mapper));
        self
    }

    /// Makes the controller the owner of `factory` (the one its informers come from): `run`
    /// starts it before waiting for the caches, and shuts it down last, after its workers
    /// stopped; the report carries the factory's shutdown report. Without it the caller owns
    /// the factory: start it (before or after `run` begins; `run` waits for the sync), and
    /// shut it down after `run` returns.
    pub fn manage_factory(mut self, factory: impl FactoryLifecycle) -> Self {
        self.factory = Some(Box::new(factory));
        self
    }

    /// Reconciles keys that have no object (neither cached nor recorded as deleted: named by
    /// a `watches` mapper, or whose deleted state was dropped at the bound) with the object
    /// `stub` builds from the key, as [`ObjectState::Missing`](crate::ObjectState::Missing).
    /// Without it such keys are skipped (counted in [`ControllerStats::skipped`]).
    pub fn reconcile_missing_as(
        mut self,
        stub: impl Fn(&ObjectKey) -> K + Send + Sync + 'static,
    ) -> Self {
        self.stub = Some(Arc::new(stub));
        self
    }

    /// Reconciles an update of a primary object only if `filter(old, new)` is true, for
    /// example [`generation_changed`](crate::generation_changed): then the controller's own
    /// status writes, and label or annotation changes, do not reconcile the object again.
    /// Adds, deletions, resyncs (the informer's periodic replay of an unchanged object) and
    /// the triggers of [`owns`](Self::owns) and [`watches`](Self::watches) always reconcile.
    /// Updates turned away are counted in [`ControllerStats::filtered`]. The filter runs on
    /// the primary informer's handler task: it should be quick.
    ///
    /// ```
    /// # fn build(informer: informer::SharedIndexInformer<informer_testing::JsonObject>) {
    /// use informer::Object;
    /// use informer_controller::{Controller, ControllerConfig, generation_changed};
    ///
    /// // Spec changes, and label changes too (a selector may read them).
    /// let controller = Controller::new(informer, ControllerConfig::default())
    ///     .reconcile_updates_if(|old, new| {
    ///         generation_changed(old, new) || old.object_labels() != new.object_labels()
    ///     });
    /// # drop(controller); }
    /// ```
    pub fn reconcile_updates_if(
        mut self,
        filter: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.update_filter = Some(Arc::new(filter));
        self
    }

    /// A handle on this controller: counts, keys in flight, manual triggers. Valid before,
    /// during and after the run.
    pub fn handle(&self) -> ControllerHandle {
        ControllerHandle {
            common: Arc::clone(&self.common),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }

    /// Runs the controller until `stop` fires, with the default error policy: every failure
    /// is retried after the rate limiter's delay, until the key has failed more than
    /// [`ControllerConfig::max_retries`] times in a row. See
    /// [`run_with_error_policy`](Self::run_with_error_policy).
    pub async fn run<C, F, Fut, E>(
        self,
        reconcile: F,
        data: C,
        stop: CancellationToken,
    ) -> Result<ControllerReport, ControllerError>
    where
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, Context<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
    {
        let policy = |_: &Arc<K>, _: &ReconcileError<E>, _: &Context<C>| OnError::Retry;
        self.run_with_error_policy(reconcile, policy, data, stop)
            .await
    }

    /// Runs the controller until `stop` fires:
    ///
    /// 1. registers its handlers (primary, `owns`, `watches`), starts the managed factory;
    /// 2. waits for every informer it reads and every handler it registered to sync (at most
    ///    [`ControllerConfig::sync_timeout`]), so the first reconcile sees full caches;
    /// 3. runs [`ControllerConfig::workers`] workers: each takes a key, calls `reconcile` with
    ///    its object and a [`Context`] holding `data`, then forgets the key's failures and
    ///    requeues it if asked ([`Action`]), or asks `error_policy` what to do
    ///    ([`OnError`]);
    /// 4. when `stop` fires: hands out no more keys, waits for the reconciles in flight at
    ///    most [`ControllerConfig::shutdown_timeout`] (then drops them and reports their
    ///    keys), shuts the queue down, removes its handlers, and shuts the managed factory
    ///    down.
    ///
    /// Fails only if the configuration is unusable, a handler cannot be registered, or the
    /// caches do not sync in time (everything started is stopped first). `stop` firing
    /// before the sync is a normal shutdown.
    pub async fn run_with_error_policy<C, F, Fut, E, P>(
        self,
        reconcile: F,
        error_policy: P,
        data: C,
        stop: CancellationToken,
    ) -> Result<ControllerReport, ControllerError>
    where
        C: Send + Sync + 'static,
        F: Fn(Arc<K>, Context<C>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: std::error::Error + Send + Sync + 'static,
        P: Fn(&Arc<K>, &ReconcileError<E>, &Context<C>) -> OnError + Send + Sync + 'static,
    {
        let Self {
            config,
            common,
            primary,
            mut sources,
            factory,
            stub,
            update_filter,
        } = self;
        let name = common.name.to_string();
        let stopping = Stopping {
            common: &common,
            factory: factory.as_deref(),
        };
        if config.workers == 0 {
            stopping.finish(&[]).await;
            return Err(ControllerError::Config {
                controller: name,
                reason: "at least one worker is needed".to_owned(),
            });
        }
        let shared = Arc::new(Shared {
            common: Arc::clone(&common),
            primary: primary.lister(),
            deleted: Mutex::new(DeletedObjects::new(config.max_deleted_objects)),
            stub,
        });
        sources.insert(0, sources::primary(primary, update_filter));
        let mut registered = Vec::with_capacity(sources.len());
        for source in sources {
            match source(&shared) {
                Ok(r) => registered.push(r),
                Err(error) => {
                    stopping.finish(&registered).await;
                    return Err(error);
                }
            }
        }
        if let Some(factory) = &factory {
            factory.start();
        }
        let mut report = ControllerReport::default();
        let synced = {
            let mut waits: Vec<&dyn SyncSource> = Vec::with_capacity(2 * registered.len());
            for r in &registered {
                waits.push(r.informer.as_ref());
                waits.push(&r.registration);
            }
            tokio::select! {
                synced = wait_for_cache_sync(config.sync_timeout, &waits) => Some(synced),
                () = stop.cancelled() => None,
            }
        };
        match synced {
            Some(Err(source)) => {
                stopping.finish(&registered).await;
                return Err(ControllerError::Sync {
                    controller: name,
                    source,
                });
            }
            None => tracing::info!(controller = %name, "stopped before the caches synced"),
            Some(Ok(())) => {
                let workers = Arc::new(Workers {
                    shared,
                    data: Arc::new(data),
                    reconcile,
                    policy: error_policy,
                    max_retries: config.max_retries,
                    reconcile_timeout: config.reconcile_timeout,
                });
                tracing::info!(
                    controller = %name,
                    workers = config.workers,
                    queued = common.queue.len(),
                    "caches synced; starting workers"
                );
                common.recorder.workers(config.workers);
                let mut tasks = JoinSet::new();
                for worker in 0..config.workers {
                    tasks.spawn(Arc::clone(&workers).work(worker, stop.clone()));
                }
                stop.cancelled().await;
                tracing::info!(
                    controller = %name,
                    in_flight = common.in_flight.lock().len(),
                    "shutting down: no more keys; waiting for the reconciles in flight"
                );
                let (abandoned, worker_panics) =
                    drain(&mut tasks, &common, config.shutdown_timeout).await;
                report.abandoned = abandoned;
                report.worker_panics = worker_panics;
                common.recorder.workers(0);
            }
        }
        report.queued = common.queue.len();
        report.informers = stopping.finish(&registered).await;
        let mut seen = Vec::new();
        for r in &registered {
            let informer_name = r.informer.sync_name();
            if !seen.contains(&informer_name) {
                seen.push(informer_name.clone());
                report
                    .informer_stats
                    .push((informer_name, r.informer.informer_stats()));
            }
        }
        report.stats = *common.stats.borrow();
        tracing::info!(
            controller = %name,
            stats = ?report.stats,
            abandoned = ?report.abandoned,
            queued = report.queued,
            "controller stopped"
        );
        Ok(report)
    }
}

/// Waits for the workers to end, at most `bound`; then aborts those still reconciling and
/// returns their keys, with the number of workers that panicked.
async fn drain(
    tasks: &mut JoinSet<()>,
    common: &Common,
    bound: std::time::Duration,
) -> (Vec<ObjectKey>, usize) {
    let mut panics = 0;
    let drained = tokio::time::timeout(bound, async {
        while let Some(joined) = tasks.join_next().await {
            if joined.as_ref().is_err_and(|e| e.is_panic()) {
                panics += 1;
            }
        }
    })
    .await;
    if drained.is_ok() {
        return (Vec::new(), panics);
    }
    let abandoned: Vec<ObjectKey> = common.in_flight.lock().values().cloned().collect();
    tracing::warn!(
        controller = %common.name,
        ?bound,
        abandoned = ?abandoned,
        "reconciles still running at the shutdown bound: abandoned"
    );
    tasks.abort_all();
    while let Some(joined) = tasks.join_next().await {
        if joined.as_ref().is_err_and(|e| e.is_panic()) {
            panics += 1;
        }
    }
    common.in_flight.lock().clear();
    (abandoned, panics)
}

/// The last steps of every run, whatever ended it: the queue shuts down, the handlers leave
/// their informers, the managed factory stops.
struct Stopping<'a> {
    common: &'a Common,
    factory: Option<&'a dyn FactoryLifecycle>,
}

impl Stopping<'_> {
    async fn finish(&self, registered: &[Registered]) -> Option<informer::FactoryShutdownReport> {
        self.common.queue.shut_down();
        for r in registered {
            r.informer.remove(&r.registration);
        }
        match self.factory {
            Some(factory) => Some(factory.shutdown().await),
            None => None,
        }
    }
}

impl<K: Object> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("config", &self.config)
            .field("primary", &self.primary.name())
            .field("triggers", &(self.sources.len() + 1))
            .field("manages_factory", &self.factory.is_some())
            .field("reconciles_missing", &self.stub.is_some())
            .finish_non_exhaustive()
    }
}

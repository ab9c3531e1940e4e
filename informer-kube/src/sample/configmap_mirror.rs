//! The ConfigMap mirror controller: informers, handlers, queue, workers, shutdown.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer::{
    FactoryConfig, InformerMetrics, LabelSelector, Lister, Object, Registration, SelectorError,
    SharedIndexInformer, SyncSource, handler, wait_for_cache_sync,
};
use informer_core::ErrorChain;
use informer_workqueue::{
    RateLimiter, RateLimitingQueue, RateLimitingQueueConfig, WorkQueueMetrics,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::Client;
use kube_client::api::{Api, DeleteParams, PostParams, Preconditions};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::reconcile::{Action, Wanted};
use crate::{KubeError, KubeInformerFactory, drop_managed_fields};

/// The label every mirror carries, with the value [`MANAGER`]; the mirrors informer selects
/// on it.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// The value of [`MANAGED_BY_LABEL`] on mirrors.
pub const MANAGER: &str = "informer-rs-configmap-mirror";

/// The annotation every mirror carries: the source as `namespace/name`.
pub const SOURCE_ANNOTATION: &str = "informer-rs/mirror-source";

/// The name of the controller's work queue (the `name` label of its metrics).
pub const QUEUE_NAME: &str = "configmap-mirror";

/// The settings of a [`ConfigMapMirror`]. Start from `Default`.
#[derive(Clone)]
pub struct MirrorConfig {
    /// The source's namespace. Default `default`.
    pub source_namespace: String,
    /// The source's name. Default `mirror-source`.
    pub source_name: String,
    /// The name of the mirror in every selected namespace. Default `mirror`.
    pub mirror_name: String,
    /// Label selector of the namespaces that get a mirror. Default `informer-rs/mirror=true`.
    pub namespace_selector: String,
    /// Concurrent workers. Default 2.
    pub workers: usize,
    /// A namespace whose reconcile fails this many times in a row is given up (logged; its
    /// next event enqueues it again). Default 15.
    pub max_retries: u32,
    /// How long to wait for the informers (and their handlers) to sync. Default 60 s.
    pub sync_timeout: Duration,
    /// The longest one write request may take before it counts as failed. Default 30 s.
    pub write_timeout: Duration,
    /// The queue's rate limiter; `None`: the work queue's default (client-go's).
    pub rate_limiter: Option<Arc<dyn RateLimiter<String>>>,
    /// Where the informers record `reflector_*` and `informer_*` metrics.
    pub informer_metrics: Option<InformerMetrics>,
    /// Where the queue records `workqueue_*` metrics (name [`QUEUE_NAME`]).
    pub workqueue_metrics: Option<WorkQueueMetrics>,
}

impl Default for MirrorConfig {
    fn default() -> Self {
        Self {
            source_namespace: "default".to_owned(),
            source_name: "mirror-source".to_owned(),
            mirror_name: "mirror".to_owned(),
            namespace_selector: "informer-rs/mirror=true".to_owned(),
            workers: 2,
            max_retries: 15,
            sync_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(30),
            rate_limiter: None,
            informer_metrics: None,
            workqueue_metrics: None,
        }
    }
}

impl fmt::Debug for MirrorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MirrorConfig")
            .field("source_namespace", &self.source_namespace)
            .field("source_name", &self.source_name)
            .field("mirror_name", &self.mirror_name)
            .field("namespace_selector", &self.namespace_selector)
            .field("workers", &self.workers)
            .field("max_retries", &self.max_retries)
            .field("sync_timeout", &self.sync_timeout)
            .field("write_timeout", &self.write_timeout)
            .field("rate_limiter", &self.rate_limiter.is_some())
            .field("informer_metrics", &self.informer_metrics.is_some())
            .field("workqueue_metrics", &self.workqueue_metrics.is_some())
            .finish()
    }
}

/// Why the mirror controller could not be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    /// The namespace selector does not parse.
    #[error("invalid namespace selector {selector:?}")]
    Selector {
        /// The selector as given.
        selector: String,
        /// Why.
        #[source]
        source: SelectorError,
    },
    /// A setting is unusable.
    #[error("invalid mirror configuration: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// An informer could not be created.
    #[error("creating the {what} informer")]
    Informer {
        /// Which informer.
        what: &'static str,
        /// Why.
        #[source]
        source: KubeError,
    },
    /// An informer refused the controller's handler.
    #[error("adding the handler of the {what} informer")]
    Handler {
        /// Which informer.
        what: &'static str,
        /// Why.
        #[source]
        source: informer::InformerError,
    },
    /// The caches did not sync in time (the controller was shut down).
    #[error("waiting for the mirror controller's caches to sync")]
    Sync {
        /// Which sources did not sync.
        #[source]
        source: informer::CacheSyncError,
    },
}

/// What the controller did so far. Counts since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirrorStats {
    /// Reconciles finished (successful or not).
    pub reconciles: u64,
    /// Mirrors created.
    pub created: u64,
    /// Mirrors replaced.
    pub updated: u64,
    /// Mirrors deleted (not counting one found already gone).
    pub deleted: u64,
    /// Reconciles that failed (a write refused, or timed out).
    pub failures: u64,
    /// Failed keys re-added with `add_rate_limited`.
    pub retries: u64,
    /// Keys given up after [`MirrorConfig::max_retries`] failures in a row.
    pub given_up: u64,
}

/// What [`ConfigMapMirror::run`] reports when it returns.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirrorReport {
    /// The final counts.
    pub stats: MirrorStats,
    /// The informers' shutdown.
    pub informers: informer::FactoryShutdownReport,
    /// Each informer's statistics at the end, by name (lists, relists, watch restarts...).
    pub informer_stats: Vec<(String, informer::InformerStats)>,
    /// Workers that panicked (none, unless there is a bug).
    pub worker_panics: usize,
}

/// The ConfigMap mirror controller (example code; see the [module docs](super)).
pub struct ConfigMapMirror {
    ctx: Arc<Context>,
    factory: KubeInformerFactory,
    registrations: Vec<Registration>,
    namespaces: SharedIndexInformer<Namespace>,
    sources: SharedIndexInformer<ConfigMap>,
    mirrors: SharedIndexInformer<ConfigMap>,
}

/// What workers and handlers share.
struct Context {
    client: Client,
    config: MirrorConfig,
    selector: LabelSelector,
    source_ref: String,
    namespaces: Lister<Namespace>,
    sources: Lister<ConfigMap>,
    mirrors: Lister<ConfigMap>,
    queue: RateLimitingQueue<String>,
    stats: watch::Sender<MirrorStats>,
}

impl fmt::Debug for ConfigMapMirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigMapMirror")
            .field("config", &self.ctx.config)
            .field("queue", &self.ctx.queue)
            .field("stats", &*self.ctx.stats.borrow())
            .finish_non_exhaustive()
    }
}

/// How a reconcile went.
enum Done {
    Nothing,
    Created,
    Updated,
    Deleted,
}

impl ConfigMapMirror {
    /// A controller over `client`: its informers and handlers are set up, nothing runs until
    /// [`run`](Self::run).
    pub fn new(client: Client, config: MirrorConfig) -> Result<Self, MirrorError> {
        let selector = LabelSelector::parse(&config.namespace_selector).map_err(|source| {
            MirrorError::Selector {
                selector: config.namespace_selector.clone(),
                source,
            }
        })?;
        if config.workers == 0 {
            return Err(MirrorError::Config {
                reason: "at least one worker is needed".to_owned(),
            });
        }
        for (what, name) in [
            ("source name", &config.source_name),
            ("source namespace", &config.source_namespace),
            ("mirror name", &config.mirror_name),
        ] {
            if name.is_empty() {
                return Err(MirrorError::Config {
                    reason: format!("the {what} is empty"),
                });
            }
        }
        if config.mirror_name == config.source_name {
            return Err(MirrorError::Config {
                reason: format!(
                    "the mirror's name {:?} is the source's: the source's namespace would \
                     mirror the source onto itself",
                    config.mirror_name
                ),
            });
        }

        let mut factory_config = FactoryConfig::default();
        factory_config.metrics = config.informer_metrics.clone();
        let factory = KubeInformerFactory::with_config(client.clone(), factory_config);
        let namespaces: SharedIndexInformer<Namespace> = factory
            .informer_with(|c| c.transform = Some(drop_managed_fields()))
            .map_err(|source| MirrorError::Informer {
                what: "namespaces",
                source,
            })?;
        let sources: SharedIndexInformer<ConfigMap> = factory
            .namespace(config.source_namespace.clone())
            .field_selector(format!("metadata.name={}", config.source_name))
            .informer_with(|c| c.transform = Some(drop_managed_fields()))
            .map_err(|source| MirrorError::Informer {
                what: "source",
                source,
            })?;
        let mirrors: SharedIndexInformer<ConfigMap> = factory
            .all_namespaces()
            .label_selector(format!("{MANAGED_BY_LABEL}={MANAGER}"))
            .informer_with(|c| c.transform = Some(drop_managed_fields()))
            .map_err(|source| MirrorError::Informer {
                what: "mirrors",
                source,
            })?;

        let mut queue_config = RateLimitingQueueConfig::<String> {
            name: QUEUE_NAME.to_owned(),
            metrics: config.workqueue_metrics.clone(),
            ..RateLimitingQueueConfig::default()
        };
        if let Some(limiter) = &config.rate_limiter {
            queue_config.rate_limiter = Arc::clone(limiter);
        }
        let ctx = Arc::new(Context {
            client,
            source_ref: format!("{}/{}", config.source_namespace, config.source_name),
            selector,
            namespaces: namespaces.lister(),
            sources: sources.lister(),
            mirrors: mirrors.lister(),
            queue: RateLimitingQueue::with_config(queue_config),
            stats: watch::Sender::new(MirrorStats::default()),
            config,
        });

        let registration_error = |what: &'static str| {
            move |source: informer::InformerError| MirrorError::Handler { what, source }
        };
        let mut registrations = Vec::new();
        // A namespace event: that namespace.
        let on_namespace = ctx.clone();
        registrations.push(
            namespaces
                .add_handler_with(
                    handler().on_change(move |ns: &Arc<Namespace>| {
                        on_namespace.enqueue_object(ns.as_ref());
                    }),
                    informer::HandlerOptions::named("enqueue-namespace"),
                )
                .map_err(registration_error("namespaces"))?,
        );
        // A mirror event: the mirror's namespace.
        let on_mirror = ctx.clone();
        registrations.push(
            mirrors
                .add_handler_with(
                    handler().on_change(move |cm: &Arc<ConfigMap>| {
                        on_mirror.enqueue_namespace_of(cm);
                    }),
                    informer::HandlerOptions::named("enqueue-mirror-namespace"),
                )
                .map_err(registration_error("mirrors"))?,
        );
        // A source event: every namespace.
        let on_source = ctx.clone();
        registrations.push(
            sources
                .add_handler_with(
                    handler().on_change(move |_: &Arc<ConfigMap>| on_source.enqueue_all()),
                    informer::HandlerOptions::named("enqueue-all-namespaces"),
                )
                .map_err(registration_error("source"))?,
        );
        Ok(Self {
            ctx,
            factory,
            registrations,
            namespaces,
            sources,
            mirrors,
        })
    }

    /// The work queue (to watch its length, or its metrics' name).
    pub fn queue(&self) -> &RateLimitingQueue<String> {
        &self.ctx.queue
    }

    /// What the controller did so far.
    pub fn stats(&self) -> MirrorStats {
        *self.ctx.stats.borrow()
    }

    /// A receiver that changes after every reconcile: wait on it instead of polling.
    pub fn watch_stats(&self) -> watch::Receiver<MirrorStats> {
        self.ctx.stats.subscribe()
    }

    /// The settings.
    pub fn config(&self) -> &MirrorConfig {
        &self.ctx.config
    }

    /// Starts the informers, waits for them and their handlers to sync, runs the workers
    /// until `cancel` fires, then shuts down cleanly (see the [module docs](super)).
    ///
    /// Fails only if the caches do not sync within [`MirrorConfig::sync_timeout`] (everything
    /// is shut down first). Cancelled before the sync, it shuts down and reports.
    pub async fn run(self, cancel: CancellationToken) -> Result<MirrorReport, MirrorError> {
        let Self {
            ctx,
            factory,
            registrations,
            namespaces,
            sources,
            mirrors,
        } = self;
        factory.start();
        let mut sync: Vec<&dyn SyncSource> = vec![&namespaces, &sources, &mirrors];
        sync.extend(registrations.iter().map(|r| r as &dyn SyncSource));
        let synced = tokio::select! {
            synced = wait_for_cache_sync(ctx.config.sync_timeout, &sync) => Some(synced),
            () = cancel.cancelled() => None,
        };
        if let Some(Err(source)) = synced {
            ctx.queue.shut_down();
            factory.shutdown().await;
            return Err(MirrorError::Sync { source });
        }
        let mut workers = JoinSet::new();
        if synced.is_some() {
            tracing::info!(
                workers = ctx.config.workers,
                queued = ctx.queue.len(),
                "mirror controller synced; starting workers"
            );
            for id in 0..ctx.config.workers {
                workers.spawn(Arc::clone(&ctx).work(id));
            }
            cancel.cancelled().await;
        }
        tracing::info!("mirror controller shutting down");
        let informers = factory.shutdown().await;
        ctx.queue.shut_down_with_drain().await;
        let mut worker_panics = 0;
        while let Some(joined) = workers.join_next().await {
            if joined.is_err() {
                worker_panics += 1;
            }
        }
        let stats = *ctx.stats.borrow();
        tracing::info!(?stats, worker_panics, "mirror controller stopped");
        let informer_stats = vec![
            (namespaces.name().to_owned(), namespaces.stats()),
            (sources.name().to_owned(), sources.stats()),
            (mirrors.name().to_owned(), mirrors.stats()),
        ];
        Ok(MirrorReport {
            stats,
            informers,
            informer_stats,
            worker_panics,
        })
    }
}

/// What the controller would still change, given every namespace and ConfigMap of a
/// cluster (or just the namespaces, the source and the mirrors): one line per namespace that
/// is not as it should be, empty once converged. For checks and demos; the controller itself
/// reads its caches.
pub fn divergences(
    config: &MirrorConfig,
    namespaces: &[Namespace],
    config_maps: &[ConfigMap],
) -> Result<Vec<String>, MirrorError> {
    let selector = LabelSelector::parse(&config.namespace_selector).map_err(|source| {
        MirrorError::Selector {
            selector: config.namespace_selector.clone(),
            source,
        }
    })?;
    let source_ref = format!("{}/{}", config.source_namespace, config.source_name);
    let wanted = Wanted {
        selector: &selector,
        mirror_name: &config.mirror_name,
        managed_by: (MANAGED_BY_LABEL, MANAGER),
        source_annotation: (SOURCE_ANNOTATION, &source_ref),
    };
    let source = config_maps.iter().find(|cm| {
        cm.object_namespace() == Some(config.source_namespace.as_str())
            && cm.object_name() == Some(config.source_name.as_str())
    });
    let mirror_in = |ns: &str| {
        config_maps.iter().find(|cm| {
            cm.object_namespace() == Some(ns)
                && cm.object_name() == Some(config.mirror_name.as_str())
                && wanted.is_managed(cm)
        })
    };
    let mut names: Vec<&str> = namespaces
        .iter()
        .filter_map(|ns| ns.object_name())
        .collect();
    names.extend(
        config_maps
            .iter()
            .filter(|cm| wanted.is_managed(cm))
            .filter_map(|cm| cm.object_namespace()),
    );
    names.sort_unstable();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let namespace = namespaces.iter().find(|ns| ns.object_name() == Some(name));
        let what = match wanted.decide(name, namespace, source, mirror_in(name)) {
            Action::Nothing => continue,
            Action::Create(_) => "has no mirror",
            Action::Replace(_) => "has a stale mirror",
            Action::Delete { .. } => "has a mirror it should not have",
        };
        out.push(format!("namespace {name:?} {what}"));
    }
    Ok(out)
}

impl Context {
    fn enqueue_object<K: Object>(&self, obj: &K) {
        if let Some(name) = obj.object_name() {
            self.queue.add(name.to_owned());
        }
    }

    fn enqueue_namespace_of(&self, cm: &ConfigMap) {
        if let Some(ns) = cm.object_namespace() {
            self.queue.add(ns.to_owned());
        }
    }

    /// Every namespace known, and every namespace holding a mirror (it may be gone).
    fn enqueue_all(&self) {
        for ns in self.namespaces.list_all() {
            self.enqueue_object(ns.as_ref());
        }
        for cm in self.mirrors.list_all() {
            self.enqueue_namespace_of(&cm);
        }
    }

    fn wanted(&self) -> Wanted<'_> {
        Wanted {
            selector: &self.selector,
            mirror_name: &self.config.mirror_name,
            managed_by: (MANAGED_BY_LABEL, MANAGER),
            source_annotation: (SOURCE_ANNOTATION, &self.source_ref),
        }
    }

    /// One worker: takes namespaces until the queue is shut down and empty.
    async fn work(self: Arc<Self>, id: usize) {
        while let Some(namespace) = self.queue.get().await {
            let span = tracing::info_span!("reconcile", %namespace, worker = id);
            let outcome = self.reconcile(&namespace).instrument(span.clone()).await;
            let _entered = span.enter();
            match outcome {
                Ok(done) => {
                    self.queue.forget(&namespace);
                    self.stats.send_modify(|s| {
                        s.reconciles += 1;
                        match done {
                            Done::Nothing => {}
                            Done::Created => s.created += 1,
                            Done::Updated => s.updated += 1,
                            Done::Deleted => s.deleted += 1,
                        }
                    });
                }
                Err(error) => {
                    let failures = self.queue.num_requeues(&namespace) + 1;
                    let retry = failures <= self.config.max_retries;
                    if retry {
                        tracing::warn!(
                            error = %ErrorChain(&error),
                            failures,
                            "reconcile failed; retrying later"
                        );
                        self.queue.add_rate_limited(namespace.clone());
                    } else {
                        tracing::error!(
                            error = %ErrorChain(&error),
                            failures,
                            "reconcile failed too often; giving up"
                        );
                        self.queue.forget(&namespace);
                    }
                    self.stats.send_modify(|s| {
                        s.reconciles += 1;
                        s.failures += 1;
                        if retry {
                            s.retries += 1;
                        } else {
                            s.given_up += 1;
                        }
                    });
                }
            }
            self.queue.done(&namespace);
        }
    }

    /// Makes `namespace` right: decides from the listers, then writes.
    async fn reconcile(&self, namespace: &str) -> Result<Done, WriteError> {
        let cached_namespace = self.namespaces.get(None, namespace);
        let source = self.sources.get(
            Some(&self.config.source_namespace),
            &self.config.source_name,
        );
        let mirror = self.mirrors.get(Some(namespace), &self.config.mirror_name);
        let action = self.wanted().decide(
            namespace,
            cached_namespace.as_deref(),
            source.as_deref(),
            mirror.as_deref(),
        );
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        let name = self.config.mirror_name.as_str();
        match action {
            Action::Nothing => Ok(Done::Nothing),
            Action::Create(cm) => {
                self.write(
                    "creating",
                    namespace,
                    api.create(&PostParams::default(), &cm),
                )
                .await?;
                tracing::info!("mirror created");
                Ok(Done::Created)
            }
            Action::Replace(cm) => {
                self.write(
                    "replacing",
                    namespace,
                    api.replace(name, &PostParams::default(), &cm),
                )
                .await?;
                tracing::info!("mirror updated");
                Ok(Done::Updated)
            }
            Action::Delete {
                uid,
                resource_version,
            } => {
                let params = DeleteParams {
                    preconditions: Some(Preconditions {
                        uid,
                        resource_version,
                    }),
                    ..DeleteParams::default()
                };
                match self
                    .write("deleting", namespace, api.delete(name, &params))
                    .await
                {
                    Ok(_) => {
                        tracing::info!("mirror deleted");
                        Ok(Done::Deleted)
                    }
                    // Already gone: what we wanted.
                    Err(WriteError::Api { ref source, .. }) if is_not_found(source) => {
                        tracing::debug!("mirror already deleted");
                        Ok(Done::Nothing)
                    }
                    Err(error) => Err(error),
                }
            }
        }
    }

    /// Sends one write, bounded by the write timeout.
    async fn write<T>(
        &self,
        verb: &'static str,
        namespace: &str,
        request: impl Future<Output = Result<T, kube_client::Error>>,
    ) -> Result<T, WriteError> {
        match tokio::time::timeout(self.config.write_timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(WriteError::Api {
                source: crate::map_kube_error(
                    format!("{verb} the mirror in namespace {namespace:?}"),
                    error,
                ),
            }),
            Err(_) => Err(WriteError::Timeout {
                verb,
                namespace: namespace.to_owned(),
                after: self.config.write_timeout,
            }),
        }
    }
}

fn is_not_found(error: &informer::Error) -> bool {
    error.status().is_some_and(|status| status.code == 404)
}

/// A failed write of a reconcile.
#[derive(Debug, thiserror::Error)]
enum WriteError {
    #[error(transparent)]
    Api { source: informer::Error },
    #[error("{verb} the mirror in namespace {namespace:?} took longer than {after:?}")]
    Timeout {
        verb: &'static str,
        namespace: String,
        after: Duration,
    },
}

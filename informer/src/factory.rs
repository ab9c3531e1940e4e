//! [`InformerFactory`]: one shared informer per (object type, resource, namespace, selectors),
//! started, synced and shut down together.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer_core::{ListerWatcher, Object, UidChange};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::config::InformerConfig;
use crate::error::{CacheSyncError, FactoryError, InformerError};
use crate::incident::IncidentHook;
use crate::metrics::InformerMetrics;
use crate::processor::ShutdownReport;
use crate::registration::Registration;
use crate::shared_informer::SharedIndexInformer;
use crate::sync::{SyncSource, wait_for_cache_sync};

/// The error a [`ListerWatcherProvider`] returns.
pub type ProviderError = Box<dyn std::error::Error + Send + Sync>;

/// What one informer of a factory watches. Two requests with equal specs (and the same object
/// type) share one informer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct InformerSpec {
    /// The resource, as the provider understands it (for example `pods`,
    /// `deployments.v1.apps`).
    pub resource: String,
    /// The namespace; `None`: all namespaces (or a cluster-scoped resource).
    pub namespace: Option<String>,
    /// `labelSelector` of every list and watch.
    pub label_selector: Option<String>,
    /// `fieldSelector` of every list and watch.
    pub field_selector: Option<String>,
}

impl InformerSpec {
    /// All objects of `resource` in all namespaces.
    pub fn new(resource: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            ..Self::default()
        }
    }

    /// Limits the spec to one namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into());
        self
    }

    /// Lists and watches only objects matching a label selector.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Lists and watches only objects matching a field selector.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

impl fmt::Display for InformerSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.resource)?;
        if let Some(ns) = &self.namespace {
            write!(f, " in {ns}")?;
        }
        if let Some(s) = &self.label_selector {
            write!(f, " labels[{s}]")?;
        }
        if let Some(s) = &self.field_selector {
            write!(f, " fields[{s}]")?;
        }
        Ok(())
    }
}

/// Builds the [`ListerWatcher`] of an informer the factory creates.
///
/// Selectors of the spec are applied by the informer's reflector to every request; the
/// provider only needs the resource and the namespace. `informer-kube` provides one over
/// kube-client; tests use one over the `fake-apiserver` crate's in-process fake server. Any
/// `Fn(&InformerSpec) -> Result<Arc<dyn ListerWatcher<K>>, ProviderError>` is one.
pub trait ListerWatcherProvider<K: Object>: Send + Sync + 'static {
    /// The lister-watcher for `spec`.
    fn lister_watcher(
        &self,
        spec: &InformerSpec,
    ) -> Result<Arc<dyn ListerWatcher<K>>, ProviderError>;
}

impl<K, F> ListerWatcherProvider<K> for F
where
    K: Object,
    F: Fn(&InformerSpec) -> Result<Arc<dyn ListerWatcher<K>>, ProviderError>
        + Send
        + Sync
        + 'static,
{
    fn lister_watcher(
        &self,
        spec: &InformerSpec,
    ) -> Result<Arc<dyn ListerWatcher<K>>, ProviderError> {
        self(spec)
    }
}

/// Settings every informer of a factory starts from.
#[derive(Clone)]
#[non_exhaustive]
pub struct FactoryConfig {
    /// [`InformerConfig::resync_period`]. Default `None`.
    pub resync_period: Option<Duration>,
    /// [`InformerConfig::uid_change`]. Default [`UidChange::DeleteAndAdd`].
    pub uid_change: UidChange,
    /// [`InformerConfig::shutdown_timeout`]. Default 30 s.
    pub shutdown_timeout: Duration,
    /// [`InformerConfig::on_incident`]. Default none.
    pub on_incident: Option<IncidentHook>,
    /// [`InformerConfig::metrics`]. Default none.
    pub metrics: Option<InformerMetrics>,
}

impl Default for FactoryConfig {
    fn default() -> Self {
        Self {
            resync_period: None,
            uid_change: UidChange::DeleteAndAdd,
            shutdown_timeout: Duration::from_secs(30),
            on_incident: None,
            metrics: None,
        }
    }
}

impl fmt::Debug for FactoryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FactoryConfig")
            .field("resync_period", &self.resync_period)
            .field("uid_change", &self.uid_change)
            .field("shutdown_timeout", &self.shutdown_timeout)
            .field("on_incident", &self.on_incident.is_some())
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// An informer as the factory keeps it: erased.
trait ErasedInformer: SyncSource {
    fn spawn(&self, cancel: CancellationToken)
    -> JoinHandle<Result<ShutdownReport, InformerError>>;
    fn registrations(&self) -> Vec<Registration>;
}

impl<K: Object> ErasedInformer for SharedIndexInformer<K> {
    fn spawn(
        &self,
        cancel: CancellationToken,
    ) -> JoinHandle<Result<ShutdownReport, InformerError>> {
        SharedIndexInformer::spawn(self, cancel)
    }

    fn registrations(&self) -> Vec<Registration> {
        SharedIndexInformer::registrations(self)
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct FactoryKey {
    type_id: TypeId,
    spec: InformerSpec,
}

struct FactoryEntry {
    typed: Box<dyn Any + Send + Sync>,
    control: Arc<dyn ErasedInformer>,
    task: Option<JoinHandle<Result<ShutdownReport, InformerError>>>,
}

#[derive(Default)]
struct FactoryState {
    entries: HashMap<FactoryKey, FactoryEntry>,
    /// Keys in creation order.
    order: Vec<FactoryKey>,
    shut_down: bool,
}

/// Hands out one shared informer per (object type, [`InformerSpec`]), starts them, waits for
/// them to sync, and shuts them down. Cheap to clone; clones share the informers.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::{FactoryConfig, InformerFactory, InformerSpec, ListerWatcher, ProviderError};
/// use informer_testing::JsonObject;
/// use fake_apiserver::FakeApiServer;
///
/// let server = FakeApiServer::new();
/// server.create("pods", &JsonObject::new(Some("a"), "web-0")).unwrap();
/// let provider = {
///     let server = server.clone();
///     move |spec: &InformerSpec| -> Result<Arc<dyn ListerWatcher<JsonObject>>, ProviderError> {
///         let lw = server
///             .lister_watcher(&spec.resource, spec.namespace.as_deref())
///             .map_err(|status| status.to_string())?;
///         Ok(Arc::new(lw))
///     }
/// };
/// let factory = InformerFactory::new(provider, FactoryConfig::default());
/// let pods = factory.informer::<JsonObject>(InformerSpec::new("pods")).unwrap();
/// let same = factory.informer::<JsonObject>(InformerSpec::new("pods")).unwrap();
/// assert!(pods.ptr_eq(&same));
///
/// factory.start();
/// factory.wait_for_cache_sync(Duration::from_secs(5)).await.unwrap();
/// assert!(pods.lister().get(Some("a"), "web-0").is_some());
/// let report = factory.shutdown().await;
/// assert!(report.failures.is_empty());
/// # }
/// ```
pub struct InformerFactory<P> {
    inner: Arc<FactoryInner<P>>,
}

impl<P> Clone for InformerFactory<P> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

struct FactoryInner<P> {
    provider: P,
    config: FactoryConfig,
    state: Mutex<FactoryState>,
    cancel: CancellationToken,
}

/// What [`InformerFactory::shutdown`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FactoryShutdownReport {
    /// Each informer that ran, by name, with its shutdown report.
    pub informers: Vec<(String, ShutdownReport)>,
    /// Informers whose run failed or panicked, by name, with the reason.
    pub failures: Vec<(String, String)>,
}

impl<P> InformerFactory<P> {
    /// A factory building lister-watchers with `provider`.
    pub fn new(provider: P, config: FactoryConfig) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                provider,
                config,
                state: Mutex::new(FactoryState::default()),
                cancel: CancellationToken::new(),
            }),
        }
    }

    /// The informer for `spec` and object type `K`, created on first request with the
    /// factory's settings.
    pub fn informer<K: Object>(
        &self,
        spec: InformerSpec,
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        P: ListerWatcherProvider<K>,
    {
        self.get_or_create(spec, None::<fn(&mut InformerConfig<K>)>, false)
    }

    /// Creates the informer for `spec` and object type `K`, with `configure` adjusting the
    /// factory's settings (indexers, transform, queue, list/watch settings...). Fails with
    /// [`FactoryError::AlreadyCreated`] if the factory already holds that informer (created
    /// by an earlier [`informer`](Self::informer), a lister, or another `informer_with`),
    /// since its configuration can no longer apply: configure informers before anything asks
    /// for them, then get them with [`informer`](Self::informer).
    ///
    /// `configure` runs without the factory's lock held: it may ask the factory for other
    /// informers.
    pub fn informer_with<K: Object>(
        &self,
        spec: InformerSpec,
        configure: impl FnOnce(&mut InformerConfig<K>),
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        P: ListerWatcherProvider<K>,
    {
        self.get_or_create(spec, Some(configure), true)
    }

    /// The existing informer for `spec`, or a new one that `configure` adjusts (it is not
    /// called when the informer exists). For wrappers of the factory that apply settings
    /// of their own to every informer they create (as `informer-kube`'s factory does); a
    /// user configuring one informer wants [`informer_with`](Self::informer_with), which
    /// refuses to skip a configuration silently.
    pub fn get_or_create_with<K: Object>(
        &self,
        spec: InformerSpec,
        configure: impl FnOnce(&mut InformerConfig<K>),
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        P: ListerWatcherProvider<K>,
    {
        self.get_or_create(spec, Some(configure), false)
    }

    /// The informer for `spec`: the existing one (an error instead if `exclusive`), else a
    /// new one built with `configure`. The provider and `configure` (user code) run outside
    /// the lock; if another caller created the same informer meanwhile, theirs wins (or,
    /// if `exclusive`, the call fails).
    fn get_or_create<K: Object>(
        &self,
        spec: InformerSpec,
        configure: Option<impl FnOnce(&mut InformerConfig<K>)>,
        exclusive: bool,
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        P: ListerWatcherProvider<K>,
    {
        let key = FactoryKey {
            type_id: TypeId::of::<K>(),
            spec,
        };
        let existing =
            |state: &FactoryState| -> Result<Option<SharedIndexInformer<K>>, FactoryError> {
                if state.shut_down {
                    return Err(FactoryError::ShutDown {
                        spec: key.spec.to_string(),
                    });
                }
                let found = state
                    .entries
                    .get(&key)
                    .and_then(|entry| entry.typed.downcast_ref::<SharedIndexInformer<K>>())
                    .cloned();
                match found {
                    Some(_) if exclusive => Err(FactoryError::AlreadyCreated {
                        spec: key.spec.to_string(),
                    }),
                    found => Ok(found),
                }
            };
        if let Some(informer) = existing(&self.inner.state.lock())? {
            return Ok(informer);
        }
        let informer = self.build(&key.spec, configure)?;
        let mut state = self.inner.state.lock();
        if let Some(theirs) = existing(&state)? {
            return Ok(theirs);
        }
        state.order.push(key.clone());
        state.entries.insert(
            key,
            FactoryEntry {
                typed: Box::new(informer.clone()),
                control: Arc::new(informer.clone()),
                task: None,
            },
        );
        Ok(informer)
    }

    /// A new informer for `spec` with the factory's settings and `configure`'s adjustments.
    fn build<K: Object>(
        &self,
        spec: &InformerSpec,
        configure: Option<impl FnOnce(&mut InformerConfig<K>)>,
    ) -> Result<SharedIndexInformer<K>, FactoryError>
    where
        P: ListerWatcherProvider<K>,
    {
        let lister_watcher =
            self.inner
                .provider
                .lister_watcher(spec)
                .map_err(|source| FactoryError::Provider {
                    spec: spec.to_string(),
                    source,
                })?;
        let factory = &self.inner.config;
        let mut config = InformerConfig::<K> {
            name: spec.to_string(),
            resync_period: factory.resync_period,
            uid_change: factory.uid_change,
            shutdown_timeout: factory.shutdown_timeout,
            on_incident: factory.on_incident.clone(),
            metrics: factory.metrics.clone(),
            ..InformerConfig::default()
        };
        config.list_watch.label_selector = spec.label_selector.clone();
        config.list_watch.field_selector = spec.field_selector.clone();
        if let Some(configure) = configure {
            configure(&mut config);
        }
        SharedIndexInformer::new(lister_watcher, config).map_err(|source| FactoryError::Informer {
            spec: spec.to_string(),
            source,
        })
    }

    /// How many informers the factory holds.
    pub fn len(&self) -> usize {
        self.inner.state.lock().entries.len()
    }

    /// Whether the factory holds no informer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts every informer not started yet, each on its own task of the current runtime.
    /// Informers requested later are started by the next call. Does nothing after
    /// [`shutdown`](Self::shutdown).
    pub fn start(&self) {
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return;
        }
        let FactoryState { entries, order, .. } = &mut *state;
        for key in order.iter() {
            if let Some(entry) = entries.get_mut(key)
                && entry.task.is_none()
            {
                entry.task = Some(entry.control.spawn(self.inner.cancel.child_token()));
            }
        }
    }

    /// Waits until every started informer has synced and every handler registered on them
    /// (when the wait begins) has handled its initial list, for at most `timeout`.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> Result<(), CacheSyncError> {
        self.wait_for_cache_sync_with(timeout, &[]).await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync), and also for `also` (for example
    /// informers made outside the factory, or event streams).
    pub async fn wait_for_cache_sync_with(
        &self,
        timeout: Duration,
        also: &[&dyn SyncSource],
    ) -> Result<(), CacheSyncError> {
        let started: Vec<Arc<dyn ErasedInformer>> = {
            let state = self.inner.state.lock();
            state
                .order
                .iter()
                .filter_map(|k| state.entries.get(k))
                .filter(|e| e.task.is_some())
                .map(|e| Arc::clone(&e.control))
                .collect()
        };
        let registrations: Vec<Registration> =
            started.iter().flat_map(|c| c.registrations()).collect();
        let mut sources: Vec<&dyn SyncSource> = started.iter().map(|c| c.as_ref() as _).collect();
        sources.extend(registrations.iter().map(|r| r as &dyn SyncSource));
        sources.extend_from_slice(also);
        wait_for_cache_sync(timeout, &sources).await
    }

    /// Stops every informer and waits for them (each drains its handlers within its
    /// shutdown bound). The factory hands out no informer afterwards.
    pub async fn shutdown(&self) -> FactoryShutdownReport {
        let tasks: Vec<(String, JoinHandle<_>)> = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            let FactoryState { entries, order, .. } = &mut *state;
            order
                .iter()
                .filter_map(|k| {
                    let entry = entries.get_mut(k)?;
                    Some((entry.control.sync_name(), entry.task.take()?))
                })
                .collect()
        };
        self.inner.cancel.cancel();
        let mut report = FactoryShutdownReport::default();
        for (name, task) in tasks {
            match task.await {
                Ok(Ok(r)) => report.informers.push((name, r)),
                Ok(Err(e)) => report.failures.push((name, e.to_string())),
                Err(e) => report.failures.push((name, e.to_string())),
            }
        }
        report
    }
}

impl<P> fmt::Debug for InformerFactory<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        let specs: Vec<String> = state.order.iter().map(|k| k.spec.to_string()).collect();
        f.debug_struct("InformerFactory")
            .field("informers", &specs)
            .field("shut_down", &state.shut_down)
            .finish_non_exhaustive()
    }
}

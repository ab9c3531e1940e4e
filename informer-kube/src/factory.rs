//! [`KubeInformerFactory`]: from a kube `Client` to started, synced shared informers.

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use informer::{
    CacheSyncError, FactoryConfig, FactoryShutdownReport, InformerConfig, InformerFactory,
    InformerSpec, Lister, ListerWatcher, ListerWatcherProvider, ProviderError, SharedIndexInformer,
    StoreChoice, StoreKind, SyncSource,
};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::core::{
    ApiResource, ClusterResourceScope, DynamicObject, GroupVersionKind, Resource,
};
use kube_client::discovery::Scope;
use kube_client::{Client, Config};
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{KubeError, Result};
use crate::resource::resource_name;
use crate::{ClientLimits, KubeListerWatcher, drop_managed_fields};

/// The connect timeout [`client_for_informers`] sets when the configuration has none.
pub(crate) const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// Object types a [`KubeInformerFactory`] builds informers for from the type alone:
/// k8s-openapi types, kube-derive custom resources and `PartialObjectMeta<K>` of those (their
/// kube `DynamicType` is `()`). Implemented for every such type. `Serialize` is asked for
/// because [`KubeInformerFactory::set_store`] may give any informer a store that keeps
/// objects encoded.
pub trait StaticResource:
    Resource<DynamicType = (), Scope: 'static> + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<K> StaticResource for K where
    K: Resource<DynamicType = (), Scope: 'static>
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The factory's [`ListerWatcherProvider`]: a [`KubeListerWatcher`] for the resource an
/// [`InformerSpec`] names, as registered by the [`KubeInformerFactory`] (the spec's resource
/// is [`resource_name`] of an [`ApiResource`]).
#[derive(Clone)]
pub struct KubeProvider {
    client: Client,
    resources: Arc<Mutex<HashMap<String, ApiResource>>>,
    drop_managed_fields: Arc<AtomicBool>,
    limits: Arc<Mutex<ClientLimits>>,
    store: Arc<Mutex<StoreKind>>,
}

impl KubeProvider {
    fn register(&self, resource: &ApiResource) -> String {
        let name = resource_name(resource);
        self.resources
            .lock()
            .entry(name.clone())
            .or_insert_with(|| resource.clone());
        name
    }
}

impl fmt::Debug for KubeProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<String> = self.resources.lock().keys().cloned().collect();
        names.sort();
        f.debug_struct("KubeProvider")
            .field("resources", &names)
            .finish_non_exhaustive()
    }
}

impl<K> ListerWatcherProvider<K> for KubeProvider
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    fn lister_watcher(
        &self,
        spec: &InformerSpec,
    ) -> std::result::Result<Arc<dyn ListerWatcher<K>>, ProviderError> {
        let resource = self
            .resources
            .lock()
            .get(&spec.resource)
            .cloned()
            .ok_or_else(|| format!("resource {:?} was never registered", spec.resource))?;
        let url_path = DynamicObject::url_path(&resource, spec.namespace.as_deref());
        let lister_watcher = KubeListerWatcher::<K>::from_url(
            self.client.clone(),
            url_path,
            spec.namespace.clone(),
            K::metadata_api(),
        )
        .with_limits(*self.limits.lock());
        Ok(Arc::new(lister_watcher))
    }
}

/// kube-client's configuration for the current context of the kubeconfig file at `path`, or
/// without a path as kube-client infers it (`KUBECONFIG` or `~/.kube/config`, else the
/// in-cluster service account). Pass it to [`client_for_informers`]:
///
/// ```no_run
/// # async fn demo(path: Option<&std::path::Path>) -> Result<(), informer_kube::KubeError> {
/// let client = informer_kube::client_for_informers(informer_kube::kube_config(path).await?)?;
/// # Ok(())
/// # }
/// ```
pub async fn kube_config(path: Option<&Path>) -> Result<Config> {
    let Some(path) = path else {
        return Config::infer()
            .await
            .map_err(|source| KubeError::Config { source });
    };
    let kubeconfig_error = |source| KubeError::Kubeconfig {
        path: path.to_owned(),
        source,
    };
    let kubeconfig = Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
    Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .map_err(kubeconfig_error)
}

/// A client for informers: `config` with kube-client's own retries turned off
/// (`default_retry = false`), so that 429, 503 and 504 answers reach the reflector, which
/// honours `Retry-After` (within its backoff's floor and cap) and turns a 504
/// `ResourceVersionTooLarge` into an immediate consistent list instead of retrying the same
/// request for minutes. A configuration without a connect timeout gets 30 s (kube's and
/// client-go's default).
pub fn client_for_informers(mut config: Config) -> Result<Client> {
    config.default_retry = false;
    config
        .connect_timeout
        .get_or_insert(DEFAULT_CONNECT_TIMEOUT);
    Client::try_from(config).map_err(|source| KubeError::Client { source })
}

/// Shared informers over a kube [`Client`] in a few lines: one informer per (object type,
/// resource, namespace, selectors), started together, synced together, shut down together.
/// Built on [`InformerFactory`]; clones and [scoped views](Self::namespace) share the
/// informers.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use informer_kube::KubeInformerFactory;
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
///
/// // kubeconfig (KUBECONFIG or ~/.kube/config) or the in-cluster service account.
/// let factory = KubeInformerFactory::try_default().await?;
/// let pods = factory.informer::<Pod>()?;
/// let web = factory.namespace("prod").label_selector("app=web").informer::<ConfigMap>()?;
/// factory.start();
/// factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
/// println!("{} pods, {} web config maps", pods.lister().list_all().len(), web.lister().list_all().len());
/// factory.shutdown().await;
/// # Ok(()) }
/// ```
///
/// Dynamic resources: [`dynamic_informer`](Self::dynamic_informer) for an [`ApiResource`] you
/// have, [`discovered_informer`](Self::discovered_informer) to find it by kind first.
///
/// A cluster-scoped resource is always watched cluster-wide: the view's namespace does not
/// apply to it (as with client-go's factory).
#[derive(Clone)]
pub struct KubeInformerFactory {
    factory: InformerFactory<KubeProvider>,
    provider: KubeProvider,
    scope: ViewScope,
}

/// What a view of the factory adds to the specs it asks for.
#[derive(Clone, Debug, Default)]
struct ViewScope {
    namespace: Option<String>,
    label_selector: Option<String>,
    field_selector: Option<String>,
}

impl KubeInformerFactory {
    /// A factory over `client`, with [`FactoryConfig::default`].
    pub fn new(client: Client) -> Self {
        Self::with_config(client, FactoryConfig::default())
    }

    /// A factory over `client` whose informers start from `config` (resync period, UID
    /// change handling, shutdown bound, incident hook).
    pub fn with_config(client: Client, config: FactoryConfig) -> Self {
        let provider = KubeProvider {
            client,
            resources: Arc::default(),
            drop_managed_fields: Arc::default(),
            limits: Arc::default(),
            store: Arc::default(),
        };
        Self {
            factory: InformerFactory::new(provider.clone(), config),
            provider,
            scope: ViewScope::default(),
        }
    }

    /// A factory over a client configured from the environment, as kube does it
    /// (`KUBECONFIG` or `~/.kube/config`, else the in-cluster service account), with
    /// kube-client's own retries off ([`client_for_informers`]).
    pub async fn try_default() -> Result<Self> {
        Ok(Self::new(client_for_informers(kube_config(None).await?)?))
    }

    /// A factory over a client configured from the kubeconfig file at `path` (its current
    /// context), with kube-client's own retries off.
    pub async fn from_kubeconfig(path: &Path) -> Result<Self> {
        Ok(Self::new(client_for_informers(
            kube_config(Some(path)).await?,
        )?))
    }

    /// Whether informers created from now on (in every view) drop `metadata.managedFields`
    /// from objects as they are decoded: their
    /// [`InformerConfig::transform`](informer::InformerConfig::transform) starts as
    /// [`drop_managed_fields`] (a configure closure sees it there, and may replace it or
    /// wrap it). Much less memory per cached object, for informers whose handlers do not read
    /// field ownership. Off by default.
    pub fn set_drop_managed_fields(&self, drop: bool) {
        self.provider
            .drop_managed_fields
            .store(drop, Ordering::Relaxed);
    }

    /// Which cache informers created from now on (in every view) keep: their
    /// [`InformerConfig::store`](informer::InformerConfig::store) starts as
    /// [`StoreChoice::from_kind`] of `store` (a configure closure sees it there, and may
    /// replace it). [`StoreKind::Indexed`] until set.
    ///
    /// With the `compact` feature, `StoreKind::Compact(options)` keeps every object encoded
    /// and decodes it on access: a cache of 100,000 pods in well under a gigabyte instead of
    /// several, lookups that miss its cache of decoded objects paying a decode. When such a
    /// store is handed lists as text (`options.takes_lists_as_text()`: the default options),
    /// the informer's lists (the first and any relist) are paginated lists instead of
    /// streaming ones, as for any informer with such a store: `list_watch.watch_list` is
    /// [`WatchListMode::Auto`](informer::reflector::WatchListMode::Auto) by default, which
    /// settles so, and the store syncs in about half the time (see
    /// `CompactOptions::takes_lists_as_text`). A configure closure of
    /// [`informer_with`](Self::informer_with) may set `WatchListMode::On` to stream anyway.
    ///
    /// ```no_run
    /// # #[cfg(feature = "compact")]
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use informer::{CompactOptions, StoreKind};
    /// use informer_kube::KubeInformerFactory;
    /// use k8s_openapi::api::core::v1::Pod;
    ///
    /// let factory = KubeInformerFactory::try_default().await?;
    /// factory.set_store(StoreKind::Compact(CompactOptions::default()));
    /// let pods = factory.informer::<Pod>()?;
    /// # Ok(()) }
    /// ```
    pub fn set_store(&self, store: StoreKind) {
        *self.provider.store.lock() = store;
    }

    /// The [`ClientLimits`] (timeouts, frame cap) of the lister-watchers of informers created
    /// from now on, in every view. [`ClientLimits::default`] until set.
    pub fn set_client_limits(&self, limits: ClientLimits) {
        *self.provider.limits.lock() = limits;
    }

    /// A view of this factory whose informers watch one namespace. The view shares the
    /// informers, the start and the shutdown of the factory it came from.
    pub fn namespace(&self, namespace: impl Into<String>) -> Self {
        let mut view = self.clone();
        view.scope.namespace = Some(namespace.into());
        view
    }

    /// A view of this factory whose informers watch every namespace.
    pub fn all_namespaces(&self) -> Self {
        let mut view = self.clone();
        view.scope.namespace = None;
        view
    }

    /// A view of this factory whose informers list and watch only objects matching a label
    /// selector (full syntax: `app=web,tier in (a,b),!canary`).
    pub fn label_selector(&self, selector: impl Into<String>) -> Self {
        let mut view = self.clone();
        view.scope.label_selector = Some(selector.into());
        view
    }

    /// A view of this factory whose informers list and watch only objects matching a field
    /// selector (`metadata.name=x`, `metadata.namespace!=y`, and what the resource supports).
    pub fn field_selector(&self, selector: impl Into<String>) -> Self {
        let mut view = self.clone();
        view.scope.field_selector = Some(selector.into());
        view
    }

    /// The shared informer for `K` in this view (created on first request with the
    /// factory's settings).
    pub fn informer<K: StaticResource>(&self) -> Result<SharedIndexInformer<K>> {
        let spec = self.static_spec::<K>();
        self.factory
            .get_or_create_with(spec, |config| self.defaults(config))
            .map_err(|source| KubeError::Factory { source })
    }

    /// Creates the shared informer for `K` in this view, `configure` adjusting its
    /// configuration (indexers, transform, queue, list/watch settings). Fails with
    /// [`FactoryError::AlreadyCreated`](informer::FactoryError::AlreadyCreated) if the
    /// informer exists already (asked for earlier by [`informer`](Self::informer),
    /// [`lister`](Self::lister) or another `informer_with`): configure first, then ask.
    pub fn informer_with<K: StaticResource>(
        &self,
        configure: impl FnOnce(&mut InformerConfig<K>),
    ) -> Result<SharedIndexInformer<K>> {
        let spec = self.static_spec::<K>();
        self.factory
            .informer_with(spec, |config| {
                self.defaults(config);
                configure(config);
            })
            .map_err(|source| KubeError::Factory { source })
    }

    fn static_spec<K: StaticResource>(&self) -> InformerSpec {
        let resource = ApiResource::erase::<K>(&());
        let cluster_scoped = TypeId::of::<K::Scope>() == TypeId::of::<ClusterResourceScope>();
        self.spec(&resource, cluster_scoped)
    }

    /// The factory's own settings of a new informer's configuration.
    fn defaults<K>(&self, config: &mut InformerConfig<K>)
    where
        K: Resource + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        if self.provider.drop_managed_fields.load(Ordering::Relaxed) {
            config.transform = Some(drop_managed_fields());
        }
        let store = self.provider.store.lock();
        config.store = StoreChoice::from_kind(&store);
    }

    /// The lister of the shared informer for `K` in this view (the informer is created if
    /// needed; it fills once the factory is started).
    pub fn lister<K: StaticResource>(&self) -> Result<Lister<K>> {
        Ok(self.informer::<K>()?.lister())
    }

    /// The shared informer for `resource` as [`DynamicObject`]s in this view. `scope` says
    /// whether the resource is namespaced (discovery's [`ApiCapabilities`] tell).
    ///
    /// [`ApiCapabilities`]: kube_client::discovery::ApiCapabilities
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        scope: Scope,
    ) -> Result<SharedIndexInformer<DynamicObject>> {
        let spec = self.spec(resource, matches!(scope, Scope::Cluster));
        self.factory
            .get_or_create_with(spec, |config| self.defaults(config))
            .map_err(|source| KubeError::Factory { source })
    }

    /// Creates the shared informer for `resource` as [`DynamicObject`]s in this view,
    /// `configure` adjusting its configuration; fails if it exists already (as
    /// [`informer_with`](Self::informer_with)).
    pub fn dynamic_informer_with(
        &self,
        resource: &ApiResource,
        scope: Scope,
        configure: impl FnOnce(&mut InformerConfig<DynamicObject>),
    ) -> Result<SharedIndexInformer<DynamicObject>> {
        let spec = self.spec(resource, matches!(scope, Scope::Cluster));
        self.factory
            .informer_with(spec, |config| {
                self.defaults(config);
                configure(config);
            })
            .map_err(|source| KubeError::Factory { source })
    }

    /// Finds the resource serving `gvk` with kube's discovery, then returns its shared
    /// [`DynamicObject`] informer in this view. For custom resources whose definition is
    /// known only at run time.
    pub async fn discovered_informer(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<SharedIndexInformer<DynamicObject>> {
        let (resource, capabilities) =
            crate::resource::discover(&self.provider.client, gvk).await?;
        self.dynamic_informer(&resource, capabilities.scope)
    }

    fn spec(&self, resource: &ApiResource, cluster_scoped: bool) -> InformerSpec {
        let name = self.provider.register(resource);
        InformerSpec {
            resource: name,
            namespace: if cluster_scoped {
                None
            } else {
                self.scope.namespace.clone()
            },
            label_selector: self.scope.label_selector.clone(),
            field_selector: self.scope.field_selector.clone(),
        }
    }

    /// Starts every informer not started yet (each on its own task of the current tokio
    /// runtime). Informers requested later are started by the next call.
    pub fn start(&self) {
        self.factory.start();
    }

    /// Waits until every started informer has synced and every handler registered on them
    /// has handled its initial list, for at most `timeout`.
    pub async fn wait_for_cache_sync(
        &self,
        timeout: Duration,
    ) -> std::result::Result<(), CacheSyncError> {
        self.factory.wait_for_cache_sync(timeout).await
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync), and also for `also` (informers
    /// made outside the factory, event streams...).
    pub async fn wait_for_cache_sync_with(
        &self,
        timeout: Duration,
        also: &[&dyn SyncSource],
    ) -> std::result::Result<(), CacheSyncError> {
        self.factory.wait_for_cache_sync_with(timeout, also).await
    }

    /// Stops every informer and waits for them (each drains its handlers within its
    /// shutdown bound). The factory creates no informer afterwards.
    pub async fn shutdown(&self) -> FactoryShutdownReport {
        self.factory.shutdown().await
    }

    /// How many informers the factory holds (over all views).
    pub fn len(&self) -> usize {
        self.factory.len()
    }

    /// Whether the factory holds no informer.
    pub fn is_empty(&self) -> bool {
        self.factory.is_empty()
    }

    /// The client every informer uses.
    pub fn client(&self) -> &Client {
        &self.provider.client
    }

    /// The generic factory underneath, for what this type does not wrap.
    pub fn inner(&self) -> &InformerFactory<KubeProvider> {
        &self.factory
    }
}

impl fmt::Debug for KubeInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeInformerFactory")
            .field("factory", &self.factory)
            .field("namespace", &self.scope.namespace)
            .field("label_selector", &self.scope.label_selector)
            .field("field_selector", &self.scope.field_selector)
            .finish_non_exhaustive()
    }
}

/// A controller that owns this factory starts it and shuts it down through this.
impl informer::FactoryLifecycle for KubeInformerFactory {
    fn start(&self) {
        KubeInformerFactory::start(self);
    }

    fn shutdown(&self) -> futures::future::BoxFuture<'static, FactoryShutdownReport> {
        let factory = self.clone();
        Box::pin(async move { factory.shutdown().await })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Pod};
    use kube_client::core::PartialObjectMeta;

    fn client() -> Client {
        // A client that never connects: nothing here sends a request.
        let config = Config::new("http://127.0.0.1:9".parse().unwrap());
        client_for_informers(config).unwrap()
    }

    #[tokio::test]
    async fn views_share_informers_and_scope_their_specs() {
        let factory = KubeInformerFactory::new(client());
        let all = factory.informer::<Pod>().unwrap();
        assert!(all.ptr_eq(&factory.informer::<Pod>().unwrap()));
        let prod = factory.namespace("prod");
        let in_prod = prod.informer::<Pod>().unwrap();
        assert!(!in_prod.ptr_eq(&all));
        assert_eq!(in_prod.name(), "pods in prod");
        let web = prod.label_selector("app=web").informer::<Pod>().unwrap();
        assert_eq!(web.name(), "pods in prod labels[app=web]");
        // Cluster-scoped resources ignore the view's namespace.
        assert_eq!(prod.informer::<Namespace>().unwrap().name(), "namespaces");
        assert_eq!(
            factory.informer::<Deployment>().unwrap().name(),
            "deployments.v1.apps"
        );
        // Metadata-only and dynamic informers are separate informers of the same resource.
        let meta = factory.informer::<PartialObjectMeta<Pod>>().unwrap();
        assert_eq!(meta.name(), "pods");
        let ar = ApiResource::erase::<Pod>(&());
        let dynamic = factory.dynamic_informer(&ar, Scope::Namespaced).unwrap();
        assert_eq!(dynamic.name(), "pods");
        assert_eq!(factory.len(), 7);
        assert_eq!(prod.len(), 7);
        let report = factory.shutdown().await;
        assert!(report.failures.is_empty());
        assert!(matches!(
            factory.informer::<Pod>(),
            Err(KubeError::Factory { .. })
        ));
    }

    #[test]
    fn resource_names_carry_group_and_version() {
        assert_eq!(resource_name(&ApiResource::erase::<Pod>(&())), "pods");
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
        assert_eq!(resource_name(&ar), "widgets.v1.example.com");
    }
}

//! `FakeApiServer`: the store, the request layer both front ends call, and the controls.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::Bytes;
use informer_core::Status;
use informer_core::selector::{FieldSelector, LabelSelector};
use informer_core::shard::ShardSelector;
use parking_lot::Mutex;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::continue_token::ContinueToken;
use super::fault_state::{FaultState, Scope};
use super::faults::Faults;
use super::mailbox::Injection;
use super::managed;
use super::object::Clock;
use super::shared::{ServerConfig, Shared};
use super::store::{
    DeleteOutcome, Eviction, Filter, HistoryConfig, Managing, Part, Preconditions,
    PropagationPolicy, Store, Warnings, WritePolicy,
};
use super::time::later;
use super::watch::{StartMode, WatchSubscription, Watcher, WatcherSpec};
use super::{Query, RequestRecord, ResourceDef, StoredObject, status};

#[cfg(feature = "http")]
thread_local! {
    /// Whether the writes this thread makes now are a request's passes before its webhooks
    /// are called ([`unrecorded`]).
    static UNRECORDED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, a request's pass before its webhooks are called (a dry run of the write, for
/// the object they are shown), with the requests it makes left out of the request log: the
/// log records the request once, by its own write.
#[cfg(feature = "http")]
pub(crate) fn unrecorded<T>(f: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            UNRECORDED.with(|u| u.set(false));
        }
    }
    UNRECORDED.with(|u| u.set(true));
    let _reset = Reset;
    f()
}

/// A resolved request target: one resource, in one namespace or across all.
#[derive(Clone, Debug)]
pub struct Target {
    res: usize,
    def: Arc<ResourceDef>,
    namespace: Option<String>,
    dry_run: bool,
    strict_fields: bool,
    propagation: PropagationPolicy,
    manager: Option<String>,
    /// The subresource writes go through when the write's part does not say (`scale`).
    subresource: Option<&'static str>,
    /// Where writes report their warnings (unknown fields dropped under
    /// `fieldValidation=Warn`, ratcheted or unchecked validation rules), if anyone listens.
    warnings: Option<Warnings>,
    /// Whether the unknown fields writes drop are reported (`fieldValidation=Warn`).
    warn_unknown_fields: bool,
    /// The resourceVersion an update's stored object must still be at (see
    /// [`Target::expecting`]).
    expect_rv: Option<u64>,
    /// Whether writes skip the validating admission policies (see
    /// [`Target::before_mutation`]).
    skip_policies: bool,
}

impl Target {
    /// The same target for dry runs (`dryRun=All`): its writes are checked, prepared and
    /// answered as the real server answers dry runs (a created object without a
    /// resourceVersion, an updated or deleted one at its stored resourceVersion), and leave
    /// nothing behind: no new resourceVersion, no watch event.
    pub fn dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Whether writes to this target are dry runs.
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// The same target with strict field validation (`fieldValidation=Strict`, what kubectl
    /// sends by default): a write to a custom resource with a schema that carries fields the
    /// schema does not declare is a 400 (`strict decoding error: unknown field "spec.x"`)
    /// instead of being pruned. Built-in kinds have no schema here: nothing to check.
    pub fn strict_field_validation(mut self) -> Self {
        self.strict_fields = true;
        self
    }

    /// Whether writes to this target validate fields strictly.
    pub fn is_strict_field_validation(&self) -> bool {
        self.strict_fields
    }

    /// The same target with writes made by field manager `manager` (`fieldManager`, or what
    /// the HTTP front end reads from the user agent): they keep `metadata.managedFields` as
    /// the real server keeps it, the manager owning the fields it changed (see
    /// [`server_side_apply_at`](FakeApiServer::server_side_apply_at) for applies). Without
    /// one, writes store the object's `managedFields` as they are sent.
    pub fn field_manager(mut self, manager: impl Into<String>) -> Self {
        self.manager = Some(manager.into());
        self
    }

    /// The same target for writes through `/scale` (their managed fields name the `scale`
    /// subresource, as upstream's scale handler records them).
    #[cfg(feature = "http")]
    pub(crate) fn via_scale(mut self) -> Self {
        self.subresource = Some("scale");
        self
    }

    /// The same target with writes that report their warnings into `sink`: validation
    /// rules ratcheted or not checked, and, with `unknown_fields`, the unknown fields of a
    /// custom resource they drop (upstream's `fieldValidation=Warn` warnings).
    #[cfg(feature = "http")]
    pub(crate) fn warning_into(mut self, sink: Warnings, unknown_fields: bool) -> Self {
        self.warnings = Some(sink);
        self.warn_unknown_fields = unknown_fields;
        self
    }

    /// The same target without a field manager.
    #[cfg(feature = "http")]
    pub(crate) fn without_field_manager(mut self) -> Self {
        self.manager = None;
        self
    }

    /// The same target with updates that replace the stored object only while it is at
    /// resourceVersion `rv` (a conflict otherwise): a write admitted by webhooks against
    /// that object is not stored over a newer one.
    #[cfg(feature = "http")]
    pub(crate) fn expecting(mut self, rv: u64) -> Self {
        self.expect_rv = Some(rv);
        self
    }

    /// The same target for the pass of a write before its mutating webhooks: the validating
    /// admission policies, which upstream runs after them, are left to the later passes.
    #[cfg(feature = "http")]
    pub(crate) fn before_mutation(mut self) -> Self {
        self.skip_policies = true;
        self
    }

    /// The same target with writes that report no warnings (the passes a write makes
    /// before its webhooks are called, whose warnings the request's own write reports).
    #[cfg(feature = "http")]
    pub(crate) fn without_warnings(mut self) -> Self {
        self.warnings = None;
        self.warn_unknown_fields = false;
        self
    }

    /// The field manager of writes through this target, if any.
    pub fn manager(&self) -> Option<&str> {
        self.manager.as_deref()
    }

    /// The same target with deletes that treat dependents as `policy` says
    /// (`DeleteOptions.propagationPolicy`; [`PropagationPolicy::Background`] by default).
    pub fn propagation(mut self, policy: PropagationPolicy) -> Self {
        self.propagation = policy;
        self
    }

    /// How deletes through this target treat dependents.
    pub fn propagation_policy(&self) -> PropagationPolicy {
        self.propagation
    }

    /// The resource's index in the store.
    pub(crate) fn index(&self) -> usize {
        self.res
    }

    /// The resource.
    pub fn resource(&self) -> &Arc<ResourceDef> {
        &self.def
    }

    /// The namespace (`None`: all namespaces, or a cluster-scoped resource).
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// The collection's URL path.
    pub fn collection_path(&self) -> String {
        self.def.collection_path(self.namespace.as_deref())
    }
}

/// The answer to a list request: the selected objects (shared, serialized once) and the list
/// metadata.
#[derive(Debug, Clone)]
pub struct ListResponse {
    /// The resource listed.
    pub resource: Arc<ResourceDef>,
    /// The objects on this page, in key order.
    pub items: Vec<Arc<StoredObject>>,
    /// The list's resourceVersion.
    pub resource_version: u64,
    /// The token for the next page.
    pub continue_token: Option<String>,
    /// How many items follow this page (only for lists without selectors).
    pub remaining_item_count: Option<i64>,
    /// The shard selector applied, in its canonical form: `metadata.shardInfo.selector`
    /// (`None` when the request had none, or the server has the feature off).
    pub shard_info_selector: Option<String>,
}

impl ListResponse {
    /// The response body as chunks to write in order (`{"kind":"PodList",...,"items":[`,
    /// the items separated by commas, `]}`), sharing the items' bytes.
    pub fn to_json_chunks(&self) -> Vec<Bytes> {
        let mut meta = serde_json::json!({ "resourceVersion": self.resource_version.to_string() });
        if let Some(c) = &self.continue_token {
            meta["continue"] = Value::String(c.clone());
        }
        if let Some(n) = self.remaining_item_count {
            meta["remainingItemCount"] = Value::from(n);
        }
        if let Some(selector) = &self.shard_info_selector {
            meta["shardInfo"] = serde_json::json!({ "selector": selector });
        }
        let head = format!(
            "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
            Value::String(self.resource.list_kind.clone()),
            Value::String(self.resource.api_version()),
            meta
        );
        let mut chunks = Vec::with_capacity(self.items.len() * 2 + 2);
        chunks.push(Bytes::from(head));
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                chunks.push(Bytes::from_static(b","));
            }
            chunks.push(item.bytes().clone());
        }
        chunks.push(Bytes::from_static(b"]}"));
        chunks
    }

    /// The response body in one buffer (`{"kind":"PodList","apiVersion":"v1",...}`).
    pub fn to_json(&self) -> Bytes {
        let chunks = self.to_json_chunks();
        let mut body = Vec::with_capacity(chunks.iter().map(Bytes::len).sum());
        for c in &chunks {
            body.extend_from_slice(c);
        }
        Bytes::from(body)
    }
}

/// An in-memory Kubernetes API server with real list/watch semantics. See the
/// [module documentation](super) for the model.
///
/// Cheap to clone: clones share the same server.
#[derive(Clone)]
pub struct FakeApiServer {
    pub(crate) shared: Arc<Shared>,
}

impl Default for FakeApiServer {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for FakeApiServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeApiServer")
            .field("resource_version", &self.resource_version())
            .finish_non_exhaustive()
    }
}

impl FakeApiServer {
    /// A server with the default configuration and the built-in resources.
    pub fn new() -> Self {
        Self::with_config(ServerConfig::default())
    }

    /// A server with the given configuration.
    pub fn with_config(config: ServerConfig) -> Self {
        let clock = Clock::new(config.wall_clock_start);
        let mut store = Store::new(
            config.history.clone(),
            config.history_max_bytes,
            config.initial_resource_version,
            config.seed,
            clock,
        );
        store.garbage_collection = config.garbage_collection;
        Self {
            shared: Arc::new(Shared {
                bookmark_interval: Mutex::new(config.bookmark_interval),
                sharded_list_and_watch: AtomicBool::new(config.sharded_list_and_watch),
                pod_logs: Mutex::new(crate::logs::PodLogs::default()),
                exec_handler: Mutex::new(None),
                #[cfg(feature = "http")]
                service_routes: Mutex::new(std::collections::HashMap::new()),
                config,
                store: Mutex::new(store),
                faults: Mutex::new(FaultState::default()),
                fault_generation: AtomicU64::new(0),
                watchers: Mutex::new(Vec::new()),
                log: Mutex::new(Vec::new()),
                activity: watch::channel(0).0,
            }),
        }
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        Faults {
            shared: Arc::clone(&self.shared),
        }
    }

    // ----- Resources -------------------------------------------------------------------

    /// Registers a resource (a CRD). Registering the same definition twice is a no-op; a
    /// different definition for the same group and plural is a 409; names that break the
    /// real server's grammars are a 422 (see [`ResourceDef::validate`]).
    pub fn register(&self, def: ResourceDef) -> Result<(), Status> {
        self.shared.store.lock().register(def).map(|_| ())
    }

    /// Replaces a registered resource's definition by one with the same group, plural,
    /// version, kind and scope (what a changed CRD does: a new schema, subresources or
    /// names), keeping its objects; later writes follow the new definition. `Ok(false)` when
    /// no such resource is registered ([`register`](Self::register) it); a 409 when the
    /// version, kind or scope differ.
    pub fn redefine(&self, def: ResourceDef) -> Result<bool, Status> {
        self.shared.store.lock().redefine(def)
    }

    /// Serves one custom resource in several versions at once, all stored in the version of
    /// `storage` (served or not), as the real server serves a CRD with several served
    /// versions and the `None` conversion strategy: each version reads, lists and watches
    /// the same objects at the same resourceVersions; a write through a version is pruned,
    /// defaulted and validated with its schema, then stored pruned by the storage version's
    /// schema with its defaults (what it does not know is lost, as upstream loses it), and
    /// every version reads it back pruned by its own. Called again, it redefines the versions
    /// in place: one no longer in `served` stops being served (its watches end), a new one
    /// starts with every object and a history from now. What a `POST` of a CRD does over
    /// HTTP.
    ///
    /// A 422 if the definitions do not share one group, plural, kind and scope; a 409 if
    /// those differ from the resource's registered ones.
    ///
    /// ```
    /// use fake_apiserver::{FakeApiServer, ResourceDef};
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// let v1 = ResourceDef::cluster_scoped("example.com", "v1", "widgets", "Widget");
    /// let v2 = ResourceDef::cluster_scoped("example.com", "v2", "widgets", "Widget");
    /// server.register_versions(vec![v1.clone(), v2], &v1).unwrap();
    /// server
    ///     .create("widgets.example.com", &json!({
    ///         "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
    ///     }))
    ///     .unwrap();
    /// let v2 = server.target_for("example.com", "v2", "widgets", None).unwrap();
    /// let read = server.get_at(&v2, "w").unwrap().to_value();
    /// assert_eq!(read["apiVersion"], "example.com/v2");
    /// ```
    pub fn register_versions(
        &self,
        served: Vec<ResourceDef>,
        storage: &ResourceDef,
    ) -> Result<(), Status> {
        let alike = |d: &ResourceDef| {
            d.group == storage.group
                && d.plural == storage.plural
                && d.kind == storage.kind
                && d.namespaced == storage.namespaced
        };
        if !served.iter().all(alike) {
            return Err(status::invalid(
                "CustomResourceDefinition",
                "apiextensions.k8s.io",
                &storage.qualified_name(),
                &[(
                    "spec.versions".into(),
                    "FieldValueInvalid",
                    "every version must have the same group, plural, kind and scope".into(),
                )],
            ));
        }
        let stored_in = crate::versions::StorageVersion {
            api_version: storage.api_version(),
            schema: storage.schema.clone(),
        };
        self.define_versions(&storage.group, &storage.plural, served, stored_in)
    }

    /// Serves a CRD's versions (`served`, all of one group and plural), stored in `storage`:
    /// see `Store::define_versions`.
    pub(crate) fn define_versions(
        &self,
        group: &str,
        plural: &str,
        served: Vec<ResourceDef>,
        storage: crate::versions::StorageVersion,
    ) -> Result<(), Status> {
        self.shared
            .store
            .lock()
            .define_versions(group, plural, served, storage)
    }

    /// Every registered resource.
    pub fn resources(&self) -> Vec<Arc<ResourceDef>> {
        self.shared
            .store
            .lock()
            .resources
            .iter()
            .filter(|r| r.served)
            .map(|r| Arc::clone(&r.def))
            .collect()
    }

    /// Resolves a resource name (`pods`, `po`, `deployments.apps`) and a namespace (`None`:
    /// all namespaces; ignored for cluster-scoped resources). Unknown resources are a 404.
    pub fn target(&self, resource: &str, namespace: Option<&str>) -> Result<Target, Status> {
        let store = self.shared.store.lock();
        let res = store
            .find(resource)
            .ok_or_else(status::resource_not_found)?;
        Ok(Self::make_target(&store, res, namespace))
    }

    /// Resolves a resource by group, version and plural, as a URL names it. A namespace on a
    /// cluster-scoped resource is a 404, as on the real server.
    pub fn target_for(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: Option<&str>,
    ) -> Result<Target, Status> {
        let store = self.shared.store.lock();
        let res = store
            .find_gvr(group, version, plural)
            .ok_or_else(status::resource_not_found)?;
        if namespace.is_some() && !store.resources[res].def.namespaced {
            return Err(status::resource_not_found());
        }
        Ok(Self::make_target(&store, res, namespace))
    }

    fn make_target(store: &Store, res: usize, namespace: Option<&str>) -> Target {
        let def = Arc::clone(&store.resources[res].def);
        let namespace = namespace
            .filter(|ns| def.namespaced && !ns.is_empty())
            .map(str::to_owned);
        Target {
            res,
            def,
            namespace,
            dry_run: false,
            strict_fields: false,
            propagation: PropagationPolicy::Background,
            manager: None,
            subresource: None,
            warnings: None,
            warn_unknown_fields: false,
            expect_rv: None,
            skip_policies: false,
        }
    }

    // ----- Request layer ---------------------------------------------------------------

    /// Records a request in the request log (the request layer records lists, watches and
    /// `*_at` writes itself; front ends record anything else they serve, e.g. discovery).
    pub fn record_request(&self, record: RequestRecord) {
        #[cfg(feature = "http")]
        if UNRECORDED.with(std::cell::Cell::get) {
            return;
        }
        self.shared.log.lock().push(record);
        self.shared.activity.send_modify(|n| *n += 1);
    }

    /// Serves a list request (one page). Records it, applies scripted faults, validates the
    /// query (422), selectors (400), resourceVersion semantics, paging and continue tokens.
    pub async fn list(&self, target: &Target, query: &Query) -> Result<ListResponse, Status> {
        let mut query = query.clone();
        query.watch = false;
        self.record_request(RequestRecord::new(
            "GET",
            target.collection_path(),
            query.to_pairs(),
        ));
        let (failure, delay) = {
            let mut f = self.shared.faults.lock();
            let failure = f.take_list_failure(&target.def).or_else(|| {
                (query.continue_token.is_some() && f.take_expire_continue(&target.def))
                    .then(status::continue_expired)
            });
            (failure, f.list_delay(&target.def))
        };
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        if let Some(s) = failure {
            return Err(s);
        }
        query.validate(true)?;
        let filter = self.filter(target, &query)?;
        let limit = query.page_size();
        if let Some(token) = &query.continue_token {
            if query
                .resource_version
                .as_deref()
                .is_some_and(|rv| rv != "0")
            {
                return Err(status::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let t = ContinueToken::decode(token).map_err(|e| {
                status::bad_request(format!(
                    "invalid continue token: continue key is not valid: {e}"
                ))
            })?;
            let store = self.shared.store.lock();
            if t.rv > store.rv {
                return Err(status::bad_request(
                    "invalid continue token: continue key is not valid: resourceVersion is in \
                     the future",
                ));
            }
            if t.epoch != store.continue_epoch || t.rv < store.resources[target.res].floor_rv {
                return Err(status::continue_expired());
            }
            return Ok(self.page(&store, target, &filter, t.rv, Some(&t.start), t.pos, limit));
        }
        match query.resource_version.as_deref() {
            None => {
                let store = self.shared.store.lock();
                let rv = store.rv;
                Ok(self.page(&store, target, &filter, rv, None, 0, limit))
            }
            Some("0") => {
                // Served from the watch cache, which ignores the limit for resourceVersion=0.
                let store = self.shared.store.lock();
                let rv = store.rv;
                Ok(self.page(&store, target, &filter, rv, None, 0, None))
            }
            Some(text) => {
                let rv = parse_rv(text)?;
                let exact = match query.resource_version_match.as_deref() {
                    Some("Exact") => true,
                    Some(_) => false,
                    None => limit.is_some(),
                };
                self.wait_for_rv(rv).await?;
                let store = self.shared.store.lock();
                if exact {
                    if rv < store.resources[target.res].floor_rv {
                        return Err(status::expired(status::LIST_EXPIRED_MESSAGE));
                    }
                    Ok(self.page(&store, target, &filter, rv, None, 0, limit))
                } else {
                    let current = store.rv;
                    Ok(self.page(&store, target, &filter, current, None, 0, limit))
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // Internal: the parts of one page request.
    fn page(
        &self,
        store: &Store,
        target: &Target,
        filter: &Filter,
        rv: u64,
        after: Option<&str>,
        pos: usize,
        limit: Option<usize>,
    ) -> ListResponse {
        let state = &store.resources[target.res];
        let view = state.view_at(rv);
        let page = view.page(filter, after, pos, limit);
        let continue_token = page.next.map(|(last, next_pos)| {
            ContinueToken::new(rv, &last, next_pos, store.continue_epoch).encode()
        });
        ListResponse {
            resource: Arc::clone(&target.def),
            items: page.items,
            resource_version: rv,
            continue_token,
            remaining_item_count: page.remaining,
            shard_info_selector: filter.shard.as_ref().map(ToString::to_string),
        }
    }

    /// Starts a watch. Records it, applies scripted faults (a failure is an `Err`: an HTTP
    /// error, not an `ERROR` event), validates (422, 400), then returns the subscription.
    /// Errors past validation come as an `ERROR` frame on the open stream, as on the real
    /// server: a too-old resourceVersion (410), or one the server does not reach within
    /// [`ServerConfig::too_large_wait`] (504).
    pub async fn watch(&self, target: &Target, query: &Query) -> Result<WatchSubscription, Status> {
        let mut query = query.clone();
        query.watch = true;
        self.record_request(RequestRecord::new(
            "GET",
            target.collection_path(),
            query.to_pairs(),
        ));
        let (failure, ignore_sie) = {
            let mut f = self.shared.faults.lock();
            (
                f.take_watch_failure(&target.def),
                f.ignores_send_initial_events(&target.def),
            )
        };
        if let Some(s) = failure {
            return Err(s);
        }
        query.validate(!ignore_sie)?;
        let filter = self.filter(target, &query)?;
        let send_initial_events = if ignore_sie {
            None
        } else {
            query.send_initial_events
        };
        let requested = match query.resource_version.as_deref() {
            None | Some("0") => None,
            Some(text) => Some(parse_rv(text)?),
        };
        let mode = match (send_initial_events, requested) {
            (Some(true), _) => StartMode::Snapshot {
                end_bookmark: query.allow_watch_bookmarks,
            },
            (Some(false), None) => StartMode::Now,
            (None, None) => StartMode::Snapshot {
                end_bookmark: false,
            },
            (_, Some(rv)) => StartMode::After(rv),
        };
        let timeout = watch_timeout(query.timeout_seconds);
        let drop_after = self.shared.faults.lock().take_drop_after(&target.def);
        let spec = WatcherSpec {
            res: target.res,
            filter,
            allow_bookmarks: query.allow_watch_bookmarks,
            timeout,
            drop_after,
            wait_for: requested
                .map(|rv| (rv, later(Instant::now(), self.shared.config.too_large_wait))),
            mode,
        };
        let watcher = {
            let store = self.shared.store.lock();
            Watcher::new(Arc::clone(&self.shared), &store, spec)
        };
        {
            let mut watchers = self.shared.watchers.lock();
            watchers.retain(|w| w.strong_count() > 0);
            watchers.push(Arc::downgrade(&watcher.handle));
        }
        self.shared.activity.send_modify(|n| *n += 1);
        Ok(WatchSubscription::new(watcher))
    }

    /// A 404 when `target`'s resource is no longer served (a CRD version dropped since the
    /// target was resolved; one served again later answers again, as its URL would).
    fn still_served(&self, target: &Target) -> Result<(), Status> {
        if self.shared.store.lock().resources[target.res].served {
            Ok(())
        } else {
            Err(status::resource_not_found())
        }
    }

    fn filter(&self, target: &Target, query: &Query) -> Result<Filter, Status> {
        self.still_served(target)?;
        let labels = match &query.label_selector {
            Some(s) => LabelSelector::parse(s)
                .map_err(|e| status::bad_request(format!("unable to parse requirement: {e}")))?,
            None => LabelSelector::default(),
        };
        let fields = match &query.field_selector {
            Some(s) => FieldSelector::parse(s).map_err(|e| status::bad_request(e.to_string()))?,
            None => FieldSelector::default(),
        };
        fields
            .check_fields(&target.def.field_labels())
            .map_err(status::bad_request)?;
        let shard = match &query.shard_selector {
            Some(text) if self.sharded_list_and_watch() => {
                Some(ShardSelector::parse(text).map_err(|e| {
                    status::bad_request(format!("invalid shardSelector {text:?}: {}", e.kind))
                })?)
            }
            // Without the feature the parameter means nothing, malformed or not.
            _ => None,
        };
        Ok(Filter {
            namespace: target.namespace.clone(),
            labels,
            fields,
            shard,
        })
    }

    /// Whether lists and watches honour `shardSelector` (see
    /// [`ServerConfig::sharded_list_and_watch`]).
    pub fn sharded_list_and_watch(&self) -> bool {
        self.shared.sharded_list_and_watch.load(Ordering::Relaxed)
    }

    /// Turns server-side sharded list and watch on or off for the requests that follow
    /// (open watches keep what they started with), as a server restarted with or without
    /// the `ShardedListAndWatch` gate. See [`ServerConfig::sharded_list_and_watch`].
    pub fn set_sharded_list_and_watch(&self, enabled: bool) {
        self.shared
            .sharded_list_and_watch
            .store(enabled, Ordering::Relaxed);
    }

    async fn wait_for_rv(&self, rv: u64) -> Result<(), Status> {
        let mut rx = self.shared.store.lock().rv_tx.subscribe();
        let deadline = later(Instant::now(), self.shared.config.too_large_wait);
        loop {
            let current = *rx.borrow_and_update();
            if current >= rv {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => {
                    return Err(status::resource_version_too_large(rv, current));
                }
            }
        }
    }

    /// `POST` to a collection: creates an object (namespace from the target, else from the
    /// body, else `default`). Recorded in the request log.
    pub fn create_at(&self, target: &Target, body: Value) -> Result<Arc<StoredObject>, Status> {
        self.record_request(RequestRecord::new(
            "POST",
            target.collection_path(),
            Vec::<(String, String)>::new(),
        ));
        self.write_admitted(target)?;
        let policy = self.policy(target, false);
        self.writing(target)
            .create(target.res, target.namespace(), body, policy)
    }

    /// The rules a request-layer write follows: namespace lifecycle admission, and the
    /// status subresource's split of the object.
    fn policy(&self, target: &Target, status: bool) -> WritePolicy {
        WritePolicy {
            require_namespace: self.shared.config.require_namespaces,
            part: match (status, target.def.status_subresource) {
                (true, _) => Part::Status,
                (false, true) => Part::Main,
                (false, false) => Part::Whole,
            },
        }
    }

    /// `PUT` of an object: replaces it, with optimistic concurrency when the body carries a
    /// resourceVersion. Recorded in the request log.
    pub fn update_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.record_object_request("PUT", target, name);
        self.write_admitted(target)?;
        let ns = self.namespace_for(target, &body);
        let part = self.policy(target, false).part;
        self.writing(target)
            .update_with(target.res, ns.as_deref(), name, body, part)
    }

    /// `PUT` of `<object>/status`: replaces only `.status` (everything else stays as stored),
    /// with optimistic concurrency when the body carries a resourceVersion. Only for
    /// resources with a status subresource (404 otherwise). Recorded in the request log.
    pub fn update_status_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PUT", target, name, "status", target.def.status_subresource)?;
        self.update_part(target, name, body, Part::Status)
    }

    /// `PATCH` of an object with a JSON merge patch (RFC 7386). A `metadata.resourceVersion`
    /// in the patch is a precondition. Recorded in the request log.
    pub fn patch_at(
        &self,
        target: &Target,
        name: &str,
        patch: &Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.record_object_request("PATCH", target, name);
        self.write_admitted(target)?;
        let part = self.policy(target, false).part;
        let mut store = self.writing(target);
        store.patching = true;
        store.patch_with(target.res, target.namespace(), name, patch, part)
    }

    /// `PATCH` of an object with a patch the front end applies itself (a strategic merge patch
    /// approximation, a JSON patch): `apply` turns the current object into the new one under
    /// the store lock, so no write falls in between. A `metadata.resourceVersion` that `apply`
    /// leaves different from the current one is a precondition (409 Conflict), as for merge
    /// patches. Recorded in the request log as a `PATCH`.
    pub fn patch_with_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.record_object_request("PATCH", target, name);
        self.patch_part(target, name, Part::Main, apply)
    }

    /// `PATCH` of `<object>/status` with a patch the front end applies itself (as
    /// [`patch_with_at`](Self::patch_with_at)): only `.status` of the result is kept. Only for
    /// resources with a status subresource (404 otherwise). Recorded in the request log.
    pub fn patch_status_with_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request(
            "PATCH",
            target,
            name,
            "status",
            target.def.status_subresource,
        )?;
        self.patch_part(target, name, Part::Status, apply)
    }

    /// `PUT certificatesigningrequests/<name>/approval`: the request's approval conditions
    /// replaced by `body`'s (the whole request, of which only `status.conditions` is taken),
    /// as an approver or `kubectl certificate approve` writes them and upstream's approval
    /// strategy keeps them: conditions without times get them; removing `Approved`,
    /// `Denied` or `Failed`, or both `Approved` and `Denied`, is a 422. Only for
    /// `CertificateSigningRequest`s (404 otherwise). Recorded in the request log.
    ///
    /// ```
    /// use fake_apiserver::FakeApiServer;
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// let requests = server
    ///     .target_for("certificates.k8s.io", "v1", "certificatesigningrequests", None)
    ///     .unwrap();
    /// let csr = json!({"metadata": {"name": "web"}, "spec": {"request": "cmVx",
    ///     "signerName": "example.com/signer", "usages": ["server auth"]}});
    /// server.create_at(&requests, csr).unwrap();
    /// let mut approved = server.get_at(&requests, "web").unwrap().to_value();
    /// approved["status"]["conditions"] = json!([{"type": "Approved", "status": "True",
    ///     "reason": "AutoApproved"}]);
    /// let stored = server.update_approval_at(&requests, "web", approved).unwrap().to_value();
    /// assert_eq!(stored["status"]["conditions"][0]["reason"], "AutoApproved");
    /// assert!(stored["status"]["conditions"][0]["lastTransitionTime"].is_string());
    /// ```
    pub fn update_approval_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PUT", target, name, "approval", target.def.is_csrs())?;
        self.update_part(target, name, body, Part::Approval)
    }

    /// `PATCH certificatesigningrequests/<name>/approval`: `apply` changes the stored request,
    /// of which the approval conditions are kept, as
    /// [`update_approval_at`](Self::update_approval_at) keeps them. Recorded in the request
    /// log.
    pub fn patch_approval_with_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PATCH", target, name, "approval", target.def.is_csrs())?;
        self.patch_part(target, name, Part::Approval, apply)
    }

    /// A `PUT` of a whole object of which a subresource's write keeps `part`, once admitted.
    fn update_part(
        &self,
        target: &Target,
        name: &str,
        body: Value,
        part: Part,
    ) -> Result<Arc<StoredObject>, Status> {
        self.write_admitted(target)?;
        let ns = self.namespace_for(target, &body);
        self.writing(target)
            .update_with(target.res, ns.as_deref(), name, body, part)
    }

    fn patch_part(
        &self,
        target: &Target,
        name: &str,
        part: Part,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.write_admitted(target)?;
        let part = match part {
            Part::Main => self.policy(target, false).part,
            other => other,
        };
        let mut store = self.writing(target);
        store.patching = true;
        let existing = store.get(target.res, target.namespace(), name)?;
        let mut value = existing.to_value();
        apply(&mut value)?;
        if !value.get("metadata").is_some_and(Value::is_object) {
            return Err(status::bad_request("a patch must not remove metadata"));
        }
        store.update_with(target.res, target.namespace(), name, value, part)
    }

    /// A `PATCH` that creates the object when it does not exist, the shape of server-side
    /// apply: `apply` gets the current object (`None` when there is none) and returns the
    /// object to store, under the store lock. Returns the stored object and whether it was
    /// created. Recorded in the request log as a `PATCH`.
    pub fn apply_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(Option<Value>) -> Result<Value, Status>,
    ) -> Result<(Arc<StoredObject>, bool), Status> {
        self.apply_with(target, name, None, |_, current| apply(current))
    }

    /// [`apply_at`](Self::apply_at), `apply` also getting the store; with `applier`, the
    /// write is that manager's server-side apply (its managed fields reckoned by `apply`).
    fn apply_with(
        &self,
        target: &Target,
        name: &str,
        applier: Option<String>,
        apply: impl FnOnce(&Store, Option<Value>) -> Result<Value, Status>,
    ) -> Result<(Arc<StoredObject>, bool), Status> {
        self.record_object_request("PATCH", target, name);
        self.write_admitted(target)?;
        let policy = self.policy(target, false);
        let mut store = self.writing(target);
        if let Some(manager) = applier {
            store.managing = Some(Managing {
                manager,
                applied: true,
                subresource: None,
            });
        }
        match store.get(target.res, target.namespace(), name) {
            Ok(existing) => {
                let value = apply(&store, Some(existing.to_value()))?;
                let obj =
                    store.update_with(target.res, target.namespace(), name, value, policy.part)?;
                Ok((obj, false))
            }
            Err(s) if s.code == 404 => {
                let value = apply(&store, None)?;
                match super::object::meta_str(&value, "name") {
                    Some(n) if n != name => {
                        return Err(status::bad_request(format!(
                            "the name of the object ({n}) does not match the name on the URL \
                             ({name})"
                        )));
                    }
                    _ => {}
                }
                let mut value = value;
                super::object::set_meta(&mut value, "name", Value::String(name.to_owned()));
                let obj = store.create(target.res, target.namespace(), value, policy)?;
                Ok((obj, true))
            }
            Err(s) => Err(s),
        }
    }

    /// Server-side apply (`PATCH` with `application/apply-patch+yaml`) by the target's field
    /// manager ([`Target::field_manager`]; without one, a 422 as upstream's
    /// `fieldManager: Required value`): `config` is merged into the object (created when
    /// there is none), the fields the manager applied last time and no longer applies are
    /// removed unless another manager owns them, and the managed fields are updated. A change
    /// to a field another manager owns is a 409 `Conflict` with one `FieldManagerConflict`
    /// cause per field, unless `force`. Returns the stored object and whether it was created.
    /// Recorded in the request log as a `PATCH`.
    pub fn server_side_apply_at(
        &self,
        target: &Target,
        name: &str,
        config: &Value,
        force: bool,
    ) -> Result<(Arc<StoredObject>, bool), Status> {
        let manager = required_manager(target)?;
        let api_version = target.def.api_version();
        let part = self.policy(target, false).part;
        self.apply_with(target, name, Some(manager.clone()), |store, current| {
            let now = store.now_rfc3339();
            let writer = managed::Writer {
                manager: &manager,
                api_version: &api_version,
                subresource: "",
                now: &now,
                scope: part.scope(),
            };
            managed::apply(&target.def, current.as_ref(), config, force, &writer)
        })
    }

    /// Server-side apply of `<object>/status` (as
    /// [`server_side_apply_at`](Self::server_side_apply_at), the manager's entry naming the
    /// `status` subresource): only `.status` of `config` counts. Only for resources with a
    /// status subresource, and existing objects (404 otherwise). Recorded in the request
    /// log as a `PATCH`.
    pub fn server_side_apply_status_at(
        &self,
        target: &Target,
        name: &str,
        config: &Value,
        force: bool,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request(
            "PATCH",
            target,
            name,
            "status",
            target.def.status_subresource,
        )?;
        let manager = required_manager(target)?;
        self.write_admitted(target)?;
        let mut store = self.writing(target);
        store.managing = Some(Managing {
            manager: manager.clone(),
            applied: true,
            subresource: None,
        });
        let existing = store.get(target.res, target.namespace(), name)?;
        let now = store.now_rfc3339();
        let api_version = target.def.api_version();
        let writer = managed::Writer {
            manager: &manager,
            api_version: &api_version,
            subresource: "status",
            now: &now,
            scope: Part::Status.scope(),
        };
        let value = managed::apply(
            &target.def,
            Some(&existing.to_value()),
            config,
            force,
            &writer,
        )?;
        store.update_with(target.res, target.namespace(), name, value, Part::Status)
    }

    /// `DELETE` of an object. With finalizers only `deletionTimestamp` is set. Recorded in the
    /// request log.
    pub fn delete_at(
        &self,
        target: &Target,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<DeleteOutcome, Status> {
        self.record_object_request("DELETE", target, name);
        self.write_admitted(target)?;
        // Upstream's namespace lifecycle admission: these are never deleted.
        if self.shared.config.require_namespaces
            && target.def.is_namespaces()
            && ["default", "kube-system", "kube-public"].contains(&name)
        {
            return Err(status::immortal_namespace(&target.def, name));
        }
        self.writing(target).delete(
            target.res,
            target.namespace(),
            name,
            preconditions,
            target.propagation,
        )
    }

    /// `GET` of one object. Recorded in the request log.
    pub fn get_at(&self, target: &Target, name: &str) -> Result<Arc<StoredObject>, Status> {
        self.record_object_request("GET", target, name);
        self.still_served(target)?;
        self.shared
            .store
            .lock()
            .get(target.res, target.namespace(), name)
    }

    /// `POST pods/<name>/eviction`: the pod deleted as an eviction deletes it, if no
    /// `PodDisruptionBudget` forbids it (429 `TooManyRequests` with a `DisruptionBudget`
    /// cause when one does, as upstream's eviction subresource answers; the budget's status
    /// is the test's to keep, as the disruption controller keeps it upstream), with the
    /// target's dry run and propagation policy and `preconditions`. Only for pods (404
    /// otherwise). Recorded in the request log as a `POST`.
    pub fn evict_at(
        &self,
        target: &Target,
        name: &str,
        preconditions: &Preconditions,
    ) -> Result<DeleteOutcome, Status> {
        self.subresource_request("POST", target, name, "eviction", target.def.is_pods())?;
        let Some(namespace) = target.namespace() else {
            return Err(status::resource_not_found());
        };
        self.write_admitted(target)?;
        let eviction = Eviction {
            preconditions: preconditions.clone(),
            propagation: target.propagation,
        };
        self.writing(target)
            .evict(target.res, namespace, name, &eviction)
    }

    /// `POST pods/<name>/binding` (and `POST bindings`): pod `name` bound to the node
    /// `binding` (a `v1` `Binding`) targets, as a scheduler binds it and upstream's binding
    /// subresource answers: `spec.nodeName` set, the nominated node cleared, the binding's
    /// annotations and labels copied, `PodScheduled=True`; the binding's `metadata.uid` and
    /// `resourceVersion` are preconditions; a pod being deleted, already bound or with
    /// scheduling gates is a 409. Returns the bound pod (the HTTP front end answers a
    /// `Success` status). Only for pods (404 otherwise). Recorded in the request log as a
    /// `POST`.
    ///
    /// ```
    /// use fake_apiserver::FakeApiServer;
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// server
    ///     .create("pods", &json!({"metadata": {"name": "web", "namespace": "prod"},
    ///                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}))
    ///     .unwrap();
    /// let pods = server.target_for("", "v1", "pods", Some("prod")).unwrap();
    /// let bound = server
    ///     .bind_at(&pods, "web", &json!({"metadata": {"name": "web"}, "target": {"name": "node-1"}}))
    ///     .unwrap();
    /// assert_eq!(bound.to_value()["spec"]["nodeName"], "node-1");
    /// // A bound pod stays where it is.
    /// let again = server
    ///     .bind_at(&pods, "web", &json!({"metadata": {"name": "web"}, "target": {"name": "node-2"}}))
    ///     .unwrap_err();
    /// assert_eq!(again.code, 409);
    /// ```
    pub fn bind_at(
        &self,
        target: &Target,
        name: &str,
        binding: &Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("POST", target, name, "binding", target.def.is_pods())?;
        let Some(namespace) = target.namespace() else {
            return Err(status::resource_not_found());
        };
        self.write_admitted(target)?;
        self.writing(target)
            .bind(target.res, namespace, name, binding)
    }

    /// `PUT pods/<name>/ephemeralcontainers`: the pod's `spec.ephemeralContainers` as `body`
    /// (the whole pod) has them, everything else as stored, as upstream's ephemeral containers
    /// subresource writes them (`kubectl debug`); an ephemeral container once added may not be
    /// removed or changed, and names are unique among the pod's containers (422 otherwise).
    /// No kubelet runs them: a test reports their status as a kubelet would. Only for pods
    /// (404 otherwise). Recorded in the request log.
    pub fn update_ephemeral_containers_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request(
            "PUT",
            target,
            name,
            "ephemeralcontainers",
            target.def.is_pods(),
        )?;
        self.update_part(target, name, body, Part::EphemeralContainers)
    }

    /// `PATCH pods/<name>/ephemeralcontainers`: `apply` changes the stored pod, of which the
    /// ephemeral containers are kept, as
    /// [`update_ephemeral_containers_at`](Self::update_ephemeral_containers_at) keeps them.
    /// Recorded in the request log.
    pub fn patch_ephemeral_containers_with_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request(
            "PATCH",
            target,
            name,
            "ephemeralcontainers",
            target.def.is_pods(),
        )?;
        self.patch_part(target, name, Part::EphemeralContainers, apply)
    }

    /// `PUT pods/<name>/resize`: the pod's containers resized in place, as upstream's resize
    /// subresource writes them (`kubectl patch --subresource resize`, a vertical autoscaler):
    /// only each container's `resources` and `resizePolicy` are taken from `body` (the whole
    /// pod), everything else as stored; only CPU and memory may change, nothing may be
    /// removed, the QoS class must stay, containers keep their names and order, sidecars but
    /// no other init containers resize, and static, Windows and pod-level-resource pods do
    /// not (422 otherwise). The generation moves when the spec does. No kubelet acts on it: a
    /// test reports the resize in the status as a kubelet would. Only for pods (404
    /// otherwise). Recorded in the request log.
    pub fn update_resize_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PUT", target, name, "resize", target.def.is_pods())?;
        self.update_part(target, name, body, Part::Resize)
    }

    /// `PATCH pods/<name>/resize`: `apply` changes the stored pod, of which the containers'
    /// resources are kept as [`update_resize_at`](Self::update_resize_at) keeps them.
    /// Recorded in the request log.
    pub fn patch_resize_with_at(
        &self,
        target: &Target,
        name: &str,
        apply: impl FnOnce(&mut Value) -> Result<(), Status>,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PATCH", target, name, "resize", target.def.is_pods())?;
        self.patch_part(target, name, Part::Resize, apply)
    }

    /// `PUT namespaces/<name>/finalize`: the namespace's `spec.finalizers` set as `body` (the
    /// whole namespace) has them, its status kept, as upstream's finalize subresource writes
    /// them (the only write that changes them: an update of the namespace keeps them). Each
    /// finalizer must be a standard one (`kubernetes`) or a qualified name (422 otherwise).
    /// A terminating namespace left without finalizers of either kind is deleted in this
    /// write, even with content left in it, as on a cluster; the namespace controller
    /// empties a terminating namespace only while `kubernetes` is among them. Only for
    /// namespaces (404 otherwise). Recorded in the request log as a `PUT`.
    ///
    /// ```
    /// use fake_apiserver::FakeApiServer;
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// let namespaces = server.target_for("", "v1", "namespaces", None).unwrap();
    /// server.create_at(&namespaces, json!({"metadata": {"name": "team"}})).unwrap();
    /// let mut ns = server.get_at(&namespaces, "team").unwrap().to_value();
    /// ns["spec"]["finalizers"] = json!(["kubernetes", "example.com/archive"]);
    /// let stored = server.finalize_at(&namespaces, "team", ns).unwrap().to_value();
    /// assert_eq!(stored["spec"]["finalizers"], json!(["kubernetes", "example.com/archive"]));
    /// ```
    pub fn finalize_at(
        &self,
        target: &Target,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.subresource_request("PUT", target, name, "finalize", target.def.is_namespaces())?;
        self.write_admitted(target)?;
        self.writing(target)
            .finalize_namespace(target.res, name, body)
    }

    /// `POST serviceaccounts/<name>/token`: a token for the service account `name` in the
    /// target's namespace, as `request` (an `authentication.k8s.io/v1` `TokenRequest`) asks
    /// (`spec.expirationSeconds`, default an hour, at least ten minutes; `spec.audiences`,
    /// default the server's; `spec.boundObjectRef`, a pod running as the account, a secret
    /// or a node). Answers the request with its status (`token`, `expirationTimestamp`), as
    /// upstream's `TokenREST` does. The token is a JWT with upstream's claims, signed by no
    /// key: only [`review_token`](Self::review_token) (a `TokenReview`) authenticates it.
    /// Only for service accounts (404 otherwise). Recorded in the request log as a `POST`.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// use fake_apiserver::FakeApiServer;
    /// use serde_json::json;
    ///
    /// let server = FakeApiServer::new();
    /// server
    ///     .create("serviceaccounts", &json!({"metadata": {"name": "robot", "namespace": "ci"}}))
    ///     .unwrap();
    /// let accounts = server.target_for("", "v1", "serviceaccounts", Some("ci")).unwrap();
    /// let issued = server
    ///     .request_token_at(&accounts, "robot", &json!({"spec": {"expirationSeconds": 600}}))
    ///     .unwrap();
    /// let token = issued["status"]["token"].as_str().unwrap();
    /// let review = server.review_token(&json!({"token": token})).unwrap();
    /// assert_eq!(review["authenticated"], true);
    /// assert_eq!(review["user"]["username"], "system:serviceaccount:ci:robot");
    /// # }
    /// ```
    pub fn request_token_at(
        &self,
        target: &Target,
        name: &str,
        request: &Value,
    ) -> Result<Value, Status> {
        self.subresource_request(
            "POST",
            target,
            name,
            "token",
            target.def.is_service_accounts(),
        )?;
        let Some(namespace) = target.namespace() else {
            return Err(status::resource_not_found());
        };
        self.write_admitted(target)?;
        self.writing(target).issue_token(namespace, name, request)
    }

    /// A `TokenReview`'s status for `spec` (its `token` and optional `audiences`): the token
    /// is authenticated if this server issued it ([`request_token_at`](Self::request_token_at)),
    /// it has not expired, shares an audience with the review (default: the server's), and
    /// its service account and bound object still exist with the same uids; the user is
    /// then `system:serviceaccount:<namespace>:<name>` with upstream's groups and extra
    /// fields. Otherwise `authenticated` is absent and `error` says why. An empty token is a
    /// 400, as upstream answers.
    pub fn review_token(&self, spec: &Value) -> Result<Value, Status> {
        self.shared.store.lock().review_token(spec)
    }

    /// Whether any validating admission policy binding is stored.
    #[cfg(feature = "http")]
    pub(crate) fn policies_bound(&self) -> bool {
        self.shared.store.lock().policies_bound()
    }

    /// What the admission webhooks of a write to `target` (in `namespace`, through
    /// `subresource`) are decided with, or none when no webhook names its resource.
    #[cfg(feature = "http")]
    pub(crate) fn webhook_scene(
        &self,
        target: &Target,
        namespace: Option<&str>,
        subresource: &str,
    ) -> Option<crate::store::webhooks::Scene> {
        self.shared
            .store
            .lock()
            .webhook_scene(target.res, namespace, subresource)
    }

    /// The store, locked for one request-layer write to `target` (a dry run if the target
    /// says so; the flag is cleared when the lock is released).
    fn writing(&self, target: &Target) -> Writing<'_> {
        let mut store = self.shared.store.lock();
        store.dry_run = target.dry_run;
        store.strict_fields = target.strict_fields;
        store.warnings = target.warnings.clone();
        store.warn_unknown_fields = target.warn_unknown_fields;
        store.decode_builtins = true;
        store.expect_rv = target.expect_rv;
        store.skip_policies = target.skip_policies;
        store.managing = target.manager.clone().map(|manager| Managing {
            manager,
            applied: false,
            subresource: target.subresource,
        });
        Writing(store)
    }

    /// Whether a write to `target` may go on: its resource is still served (a CRD version
    /// dropped since the target was resolved: 404), and no write failure is scripted (see
    /// [`Faults::fail_writes`]).
    fn write_admitted(&self, target: &Target) -> Result<(), Status> {
        self.still_served(target)?;
        match self.shared.faults.lock().take_write_failure(&target.def) {
            Some(status) => Err(status),
            None => Ok(()),
        }
    }

    /// Records a request to the subresource `sub` of `name`; a 404 unless the target's
    /// resource has it (`served`).
    pub(crate) fn subresource_request(
        &self,
        method: &str,
        target: &Target,
        name: &str,
        sub: &str,
        served: bool,
    ) -> Result<(), Status> {
        self.record_object_request(method, target, &format!("{name}/{sub}"));
        if served {
            Ok(())
        } else {
            Err(status::resource_not_found())
        }
    }

    fn record_object_request(&self, method: &str, target: &Target, name: &str) {
        self.record_request(RequestRecord::new(
            method,
            target.def.object_path(target.namespace(), name),
            Vec::<(String, String)>::new(),
        ));
    }

    fn namespace_for(&self, target: &Target, body: &Value) -> Option<String> {
        target.namespace.clone().or_else(|| {
            target.def.namespaced.then(|| {
                super::object::meta_str(body, "namespace")
                    .unwrap_or("default")
                    .to_owned()
            })
        })
    }

    // ----- Direct writes (tests, seeding; not recorded) ---------------------------------

    /// Creates an object of `resource` (namespace from its metadata, `default` if absent).
    /// Not recorded in the request log: this is the test's hand on the store.
    pub fn create<T: Serialize + ?Sized>(
        &self,
        resource: &str,
        object: &T,
    ) -> Result<Arc<StoredObject>, Status> {
        let body = to_body(object)?;
        let target = self.target(resource, None)?;
        self.shared
            .store
            .lock()
            .create(target.res, None, body, WritePolicy::default())
    }

    /// Replaces an object (namespace and name from its metadata). A resourceVersion in the
    /// object must be current (409 Conflict otherwise); without one the update is
    /// unconditional. An update that changes nothing is a no-op (no new resourceVersion), as
    /// on the real server.
    pub fn update<T: Serialize + ?Sized>(
        &self,
        resource: &str,
        object: &T,
    ) -> Result<Arc<StoredObject>, Status> {
        let body = to_body(object)?;
        let target = self.target(resource, None)?;
        let name = super::object::meta_str(&body, "name")
            .ok_or_else(|| status::bad_request("the object has no metadata.name"))?
            .to_owned();
        let ns = self.namespace_for(&target, &body);
        self.shared
            .store
            .lock()
            .update(target.res, ns.as_deref(), &name, body)
    }

    /// Applies a JSON merge patch to an object.
    pub fn patch(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Arc<StoredObject>, Status> {
        let target = self.target(resource, namespace)?;
        self.shared
            .store
            .lock()
            .patch(target.res, target.namespace(), name, patch)
    }

    /// Deletes an object (with finalizers: sets `deletionTimestamp` only).
    pub fn delete(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<DeleteOutcome, Status> {
        let target = self.target(resource, namespace)?;
        self.shared.store.lock().delete(
            target.res,
            target.namespace(),
            name,
            &Preconditions::default(),
            PropagationPolicy::Background,
        )
    }

    /// The current state of one object.
    pub fn get(
        &self,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<StoredObject>, Status> {
        let target = self.target(resource, namespace)?;
        self.shared
            .store
            .lock()
            .get(target.res, target.namespace(), name)
    }

    /// The current objects of `resource` in `namespace` (`None`: all), in key order. Not
    /// recorded in the request log.
    pub fn objects(
        &self,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<Vec<Arc<StoredObject>>, Status> {
        let target = self.target(resource, namespace)?;
        let filter = Filter {
            namespace: target.namespace.clone(),
            ..Filter::default()
        };
        Ok(self.shared.store.lock().snapshot(target.res, &filter))
    }

    // ----- Controls ---------------------------------------------------------------------

    /// The current resourceVersion (of the last write, or as set).
    pub fn resource_version(&self) -> u64 {
        self.shared.store.lock().rv
    }

    /// Makes the next write get resourceVersion `next`, which must be above the current one:
    /// a jump, as when other resources are written in the same etcd. `next` may be at most
    /// [`MAX_RESOURCE_VERSION`](super::MAX_RESOURCE_VERSION) (400 otherwise); once a write has
    /// that resourceVersion, every further write fails with 500 `InternalError` instead of
    /// wrapping around.
    pub fn set_next_resource_version(&self, next: u64) -> Result<(), Status> {
        self.shared.store.lock().set_next_rv(next)
    }

    /// Compacts the history of every resource up to `rv` (at most the current
    /// resourceVersion): watches from `rv` or older get `ERROR` 410, lists at an exact older
    /// resourceVersion and continue tokens issued before get 410, and open watches that had
    /// not read those events are dropped with 410.
    pub fn compact(&self, rv: u64) -> Result<(), Status> {
        self.shared.store.lock().compact(rv)
    }

    /// Compacts everything up to the current resourceVersion; returns it.
    pub fn compact_all(&self) -> u64 {
        let mut store = self.shared.store.lock();
        let rv = store.rv;
        // Compacting to the current resourceVersion cannot fail.
        let _ = store.compact(rv);
        rv
    }

    /// The highest resourceVersion compacted so far.
    pub fn compacted_resource_version(&self) -> u64 {
        self.shared.store.lock().compacted
    }

    /// The oldest resourceVersion a watch of `resource` can start from (history below it is
    /// gone).
    pub fn oldest_resource_version(&self, resource: &str) -> Result<u64, Status> {
        let target = self.target(resource, None)?;
        Ok(self.shared.store.lock().resources[target.res].floor_rv)
    }

    /// Changes the history window (applies from the next write).
    pub fn set_history(&self, history: HistoryConfig) {
        self.shared.store.lock().set_history(history);
    }

    /// Changes [`ServerConfig::history_max_bytes`], applied at once (the oldest events
    /// beyond the new bound are dropped now).
    pub fn set_history_max_bytes(&self, max_bytes: usize) {
        self.shared.store.lock().set_history_max_bytes(max_bytes);
    }

    /// The bytes the history of every resource accounts for now, which
    /// [`ServerConfig::history_max_bytes`] bounds: the serialized size of the object version
    /// each retained event carries.
    pub fn history_bytes(&self) -> usize {
        self.shared.store.lock().history_bytes
    }

    /// Sends a bookmark to every watcher in `scope` that asked for bookmarks, as soon as it
    /// has delivered every event before it. Returns how many watchers will get one.
    pub fn send_bookmark(&self, scope: impl Into<Scope>) -> usize {
        self.shared.inject(&scope.into(), |w| {
            w.allow_bookmarks.then_some(Injection::Bookmark)
        })
    }

    /// Changes the periodic bookmark interval (for watches scheduling their next bookmark
    /// from now on).
    pub fn set_bookmark_interval(&self, interval: Duration) {
        *self.shared.bookmark_interval.lock() = interval;
    }

    /// How many watches are open in `scope` (started, not ended, not dropped).
    pub fn open_watches(&self, scope: impl Into<Scope>) -> usize {
        self.count_open(&scope.into())
    }

    fn count_open(&self, scope: &Scope) -> usize {
        let mut watchers = self.shared.watchers.lock();
        watchers.retain(|w| w.strong_count() > 0);
        watchers
            .iter()
            .filter_map(Weak::upgrade)
            .filter(|w| w.is_open() && scope.covers(&w.def))
            .count()
    }

    /// Waits until exactly `count` watches are open in `scope` (for example until a client has
    /// re-established its watch, or has dropped it). Combine with a timeout in tests.
    pub async fn wait_for_open_watches(&self, scope: impl Into<Scope>, count: usize) {
        let scope = scope.into();
        let mut rx = self.shared.activity.subscribe();
        loop {
            rx.borrow_and_update();
            if self.count_open(&scope) == count {
                return;
            }
            if rx.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until the request log holds a request matching `predicate` and returns the
    /// first such request (at once if one is already there). Combine with a timeout in tests.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// # use fake_apiserver::FakeApiServer;
    /// # let server = FakeApiServer::new();
    /// # let lw = server.lister_watcher::<informer_testing::JsonObject>("pods", None).unwrap();
    /// # let client = tokio::spawn(async move {
    /// #     informer_core::ListerWatcher::watch(&lw, &Default::default()).await.map(|_| ())
    /// # });
    /// let watch = server.wait_for_request(|r| r.is_watch_of("pods")).await;
    /// assert_eq!(watch.param("resourceVersion"), None);
    /// # client.await.unwrap().unwrap();
    /// # }
    /// ```
    pub async fn wait_for_request(
        &self,
        predicate: impl Fn(&RequestRecord) -> bool,
    ) -> RequestRecord {
        let mut rx = self.shared.activity.subscribe();
        loop {
            rx.borrow_and_update();
            if let Some(r) = self.shared.log.lock().iter().find(|r| predicate(r)) {
                return r.clone();
            }
            // The sender lives as long as `self`: `changed` cannot fail here.
            let _ = rx.changed().await;
        }
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.log.lock().clone()
    }

    /// Every request received so far, emptying the log.
    pub fn take_requests(&self) -> Vec<RequestRecord> {
        std::mem::take(&mut *self.shared.log.lock())
    }

    /// Empties the request log.
    pub fn clear_requests(&self) {
        self.shared.log.lock().clear();
    }
}

fn to_body<T: Serialize + ?Sized>(object: &T) -> Result<Value, Status> {
    serde_json::to_value(object)
        .map_err(|e| status::bad_request(format!("cannot serialize the object: {e}")))
}

fn parse_rv(text: &str) -> Result<u64, Status> {
    text.parse::<u64>()
        .map_err(|_| status::bad_request(format!("invalid resource version: {text:?}")))
}

/// How long a watch with this `timeoutSeconds` lasts. Unset or 0: no timeout (the real
/// server picks 30 to 60 minutes). Negative: none at all, the watch ends at once, as on the
/// real server, whose watch deadline is then already past. Any positive value works: one too
/// far away for the clock saturates to about 30 years (the real server's Go arithmetic would
/// overflow).
fn watch_timeout(seconds: Option<i64>) -> Option<Duration> {
    match seconds {
        None | Some(0) => None,
        Some(t) if t < 0 => Some(Duration::ZERO),
        Some(t) => Some(Duration::from_secs(t.unsigned_abs())),
    }
}

/// The manager an apply needs (upstream's `PatchOptions` validation: 422).
fn required_manager(target: &Target) -> Result<String, Status> {
    target.manager.clone().ok_or_else(|| {
        status::invalid(
            "PatchOptions",
            "meta.k8s.io",
            "",
            &[(
                "fieldManager".to_owned(),
                "FieldValueRequired",
                "is required for apply patch".to_owned(),
            )],
        )
    })
}

/// The store locked for one request-layer write; see [`FakeApiServer::writing`].
struct Writing<'a>(parking_lot::MutexGuard<'a, Store>);

impl std::ops::Deref for Writing<'_> {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.0
    }
}

impl std::ops::DerefMut for Writing<'_> {
    fn deref_mut(&mut self) -> &mut Store {
        &mut self.0
    }
}

impl Drop for Writing<'_> {
    fn drop(&mut self) {
        self.0.dry_run = false;
        self.0.strict_fields = false;
        self.0.warnings = None;
        self.0.warn_unknown_fields = false;
        self.0.managing = None;
        self.0.decode_builtins = false;
        self.0.patching = false;
        self.0.expect_rv = None;
        self.0.skip_policies = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_timeouts_saturate_and_negative_ends_at_once() {
        assert_eq!(watch_timeout(None), None);
        assert_eq!(watch_timeout(Some(0)), None);
        assert_eq!(watch_timeout(Some(-1)), Some(Duration::ZERO));
        assert_eq!(watch_timeout(Some(i64::MIN)), Some(Duration::ZERO));
        assert_eq!(watch_timeout(Some(300)), Some(Duration::from_secs(300)));
        assert_eq!(
            watch_timeout(Some(i64::MAX)),
            Some(Duration::from_secs(i64::MAX.unsigned_abs()))
        );
    }
}

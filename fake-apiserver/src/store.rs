//! The versioned store: current state and history of every resource, one global
//! resourceVersion counter, writes with the API server's rules.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use informer_core::Status;
use informer_core::selector::{FieldSelector, LabelSelector};
use informer_core::shard::{ShardField, ShardSelector};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use tokio::sync::watch;
use tokio::time::Instant;

use super::defaults;
use super::generation;
use super::managed;
use super::object::{Clock, StoredObject, meta_str, set_meta};
use super::patch::merge_patch;
use super::rules;
use super::schema;
use super::twins;
use super::typed;
use super::versions::{self, StorageVersion};
use super::{ResourceDef, status};

/// How much history the server retains, per resource, for watches, exact-resourceVersion
/// lists and continue tokens.
///
/// Modelled on the API server's watch cache: at least `min_events` and every event younger
/// than `min_age` are kept, never more than `max_events`. Like the real ring buffer, history
/// is trimmed when events are added (a quiet resource keeps old events). Independently,
/// [`FakeApiServer::compact`](super::FakeApiServer::compact) drops everything up to a
/// resourceVersion in every resource, as etcd compaction eventually does.
///
/// ```
/// use std::time::Duration;
/// use fake_apiserver::HistoryConfig;
///
/// // A tiny window: a watcher more than 10 events behind is dropped with 410.
/// let tiny = HistoryConfig { min_events: 0, max_events: 10, min_age: Duration::ZERO };
/// assert_eq!(HistoryConfig::default().max_events, 102_400);
/// # let _ = tiny;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryConfig {
    /// Events always kept per resource (the watch cache's initial capacity, 100).
    pub min_events: usize,
    /// Events never exceeded per resource (the watch cache's upper bound, 102,400).
    pub max_events: usize,
    /// Events younger than this are kept (up to `max_events`); the watch cache's 75 s.
    pub min_age: Duration,
}

impl Default for HistoryConfig {
    fn default() -> Self {
        Self {
            min_events: 100,
            max_events: 102_400,
            min_age: Duration::from_secs(75),
        }
    }
}

/// The type of a history event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventKind {
    Added,
    Modified,
    Deleted,
}

/// One change, at one resourceVersion.
pub(crate) struct HistoryEvent {
    pub rv: u64,
    pub kind: EventKind,
    /// The new state (for `Deleted`: the last state, at the deletion's resourceVersion).
    pub object: Arc<StoredObject>,
    /// The state before (for `Added`: none).
    pub prev: Option<Arc<StoredObject>>,
    pub at: Instant,
    /// The bytes this event accounts for in the history's byte bound: the serialized size of
    /// `object` (`prev` is the object of the key's event before, accounted there).
    bytes: usize,
    /// `prev` re-stamped with this event's resourceVersion, made once on first need (a
    /// watcher whose selector no longer matches gets it as a `DELETED`).
    prev_at_rv: OnceLock<Option<Arc<StoredObject>>>,
}

impl HistoryEvent {
    pub(crate) fn prev_at_event_rv(&self) -> Option<Arc<StoredObject>> {
        self.prev_at_rv
            .get_or_init(|| {
                self.prev
                    .as_ref()
                    .and_then(|p| p.with_resource_version(self.rv).ok().map(Arc::new))
            })
            .clone()
    }
}

/// The state of one resource.
pub(crate) struct ResourceState {
    pub def: Arc<ResourceDef>,
    pub objects: BTreeMap<Arc<str>, Arc<StoredObject>>,
    ns_counts: HashMap<String, usize>,
    pub log: VecDeque<Arc<HistoryEvent>>,
    /// Absolute index of `log[0]`.
    pub log_start: u64,
    /// Every event with a resourceVersion above this one is in `log`.
    pub floor_rv: u64,
    /// Bumped to the log's end index whenever an event is appended.
    pub changed: watch::Sender<u64>,
    /// The other view of the same storage (Events: core `v1` and `events.k8s.io/v1`), to
    /// which every change is mirrored ([`crate::twins`]).
    twin: Option<usize>,
    /// A custom resource's storage version, when it is served from a CRD: every change is
    /// mirrored to its other served versions ([`crate::versions`], `views.rs`).
    storage: Option<Arc<StorageVersion>>,
    /// Whether the resource is served: a CRD version no longer served keeps its slot, empty.
    pub served: bool,
    /// The CRD being deleted that defines this resource: creates are refused, and its
    /// instances are deleted (`crds.rs`).
    deleting_crd: Option<Arc<str>>,
}

impl ResourceState {
    fn new(def: ResourceDef, floor_rv: u64) -> Self {
        Self {
            def: Arc::new(def),
            objects: BTreeMap::new(),
            ns_counts: HashMap::new(),
            log: VecDeque::new(),
            log_start: 0,
            floor_rv,
            changed: watch::channel(0).0,
            twin: None,
            storage: None,
            served: true,
            deleting_crd: None,
        }
    }

    pub(crate) fn log_end(&self) -> u64 {
        self.log_start + self.log.len() as u64
    }

    /// Drops the oldest history event (watchers behind it get 410 from now on); returns the
    /// bytes it accounted for.
    fn pop_oldest(&mut self) -> Option<usize> {
        let e = self.log.pop_front()?;
        self.floor_rv = self.floor_rv.max(e.rv);
        self.log_start += 1;
        Some(e.bytes)
    }

    fn count(&self, namespace: Option<&str>) -> usize {
        match namespace {
            Some(ns) => self.ns_counts.get(ns).copied().unwrap_or(0),
            None => self.objects.len(),
        }
    }

    /// The objects as they were at `rv`: the current state with every later event undone.
    /// `rv` must be at least `floor_rv`.
    pub(crate) fn view_at(&self, rv: u64) -> View<'_> {
        let mut overlay = BTreeMap::new();
        for ev in self.log.iter().rev() {
            if ev.rv <= rv {
                break;
            }
            let key: Arc<str> = ev
                .prev
                .as_ref()
                .map_or_else(|| ev.object.key().into(), |p| p.key().into());
            let before = match ev.kind {
                EventKind::Added => None,
                EventKind::Modified | EventKind::Deleted => ev.prev.clone(),
            };
            overlay.insert(key, before);
        }
        View {
            state: self,
            overlay,
        }
    }
}

/// Which objects a request selects.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// The shard selector applied (KEP-5866), when the server has the feature.
    pub shard: Option<ShardSelector>,
}

impl Filter {
    pub(crate) fn matches(&self, o: &StoredObject) -> bool {
        if let Some(ns) = &self.namespace
            && o.namespace() != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches(o.labels())
            && self.fields.matches_with(|f| o.field(f))
            && self
                .shard
                .as_ref()
                .is_none_or(|s| s.matches_value(shard_value(s, o)))
    }

    /// Whether label, field or shard selectors narrow the result (the namespace does not
    /// count).
    pub(crate) fn has_selectors(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty() || self.shard.is_some()
    }

    fn prefix(&self) -> Option<String> {
        self.namespace.as_ref().map(|ns| format!("{ns}/"))
    }
}

/// The value of the object's field a shard selector hashes: its uid, or its namespace (empty
/// for a cluster-scoped object, as the server hashes a missing value).
fn shard_value<'o>(selector: &ShardSelector, o: &'o StoredObject) -> &'o str {
    match selector.field() {
        ShardField::Namespace => o.namespace().unwrap_or(""),
        // `ShardField::Uid`; the parser accepts no other field (the enum is open for later
        // server versions).
        _ => o.uid(),
    }
}

/// A resource's objects at some resourceVersion: the current state, corrected by an overlay
/// of the keys that changed since.
pub(crate) struct View<'a> {
    state: &'a ResourceState,
    overlay: BTreeMap<Arc<str>, Option<Arc<StoredObject>>>,
}

/// One page of a list.
pub(crate) struct Page {
    pub items: Vec<Arc<StoredObject>>,
    /// The last key returned and the position after it, when more items follow.
    pub next: Option<(String, usize)>,
    pub remaining: Option<i64>,
}

impl View<'_> {
    /// The objects in key order, starting strictly after `after`, within `prefix`.
    fn iter_after<'s>(
        &'s self,
        after: Option<&'s str>,
        prefix: Option<&'s str>,
    ) -> impl Iterator<Item = (&'s Arc<str>, &'s Arc<StoredObject>)> + 's {
        let lower: Bound<&str> = match (after, prefix) {
            (Some(a), Some(p)) if a < p => Bound::Included(p),
            (Some(a), _) => Bound::Excluded(a),
            (None, Some(p)) => Bound::Included(p),
            (None, None) => Bound::Unbounded,
        };
        let range = (lower, Bound::Unbounded);
        let mut current = self.state.objects.range::<str, _>(range).peekable();
        let mut overlay = self.overlay.range::<str, _>(range).peekable();
        std::iter::from_fn(move || {
            loop {
                let take_current = match (current.peek(), overlay.peek()) {
                    (None, None) => return None,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (Some((a, _)), Some((b, _))) => {
                        if a < b {
                            true
                        } else {
                            if a == b {
                                current.next();
                            }
                            false
                        }
                    }
                };
                if take_current {
                    return current.next();
                }
                if let Some((k, Some(o))) = overlay.next() {
                    return Some((k, o));
                }
            }
        })
        .take_while(move |(k, _)| prefix.is_none_or(|p| k.starts_with(p)))
    }

    fn count(&self, filter: &Filter) -> usize {
        let prefix = filter.prefix();
        let mut n = self.state.count(filter.namespace.as_deref());
        for (k, at_rv) in &self.overlay {
            if prefix.as_deref().is_some_and(|p| !k.starts_with(p)) {
                continue;
            }
            let now = self.state.objects.contains_key(k);
            match (now, at_rv.is_some()) {
                (true, false) => n = n.saturating_sub(1),
                (false, true) => n += 1,
                _ => {}
            }
        }
        n
    }

    /// Selects up to `limit` objects after `after` (`pos` keys precede it).
    pub(crate) fn page(
        &self,
        filter: &Filter,
        after: Option<&str>,
        pos: usize,
        limit: Option<usize>,
    ) -> Page {
        let prefix = filter.prefix();
        let mut iter = self.iter_after(after, prefix.as_deref());
        let mut items = Vec::new();
        let mut scanned = 0usize;
        let mut last_key: Option<&Arc<str>> = None;
        let mut full = false;
        for (k, o) in iter.by_ref() {
            scanned += 1;
            if filter.matches(o) {
                items.push(Arc::clone(o));
                last_key = Some(k);
                if limit.is_some_and(|l| items.len() >= l) {
                    full = true;
                    break;
                }
            }
        }
        let more = full && iter.any(|(_, o)| filter.matches(o));
        match (more, last_key) {
            (true, Some(last)) => {
                let next_pos = pos + scanned;
                let remaining = (!filter.has_selectors()).then(|| {
                    i64::try_from(self.count(filter).saturating_sub(next_pos)).unwrap_or(i64::MAX)
                });
                Page {
                    items,
                    next: Some((last.to_string(), next_pos)),
                    remaining,
                }
            }
            _ => Page {
                items,
                next: None,
                remaining: None,
            },
        }
    }
}

/// What a watcher gets when it asks for the events after its cursor.
pub(crate) enum Fetch {
    /// Some events were appended to the buffer.
    Events,
    /// Nothing new; the store is at this resourceVersion.
    CaughtUp(u64),
    /// The cursor fell out of the retained history, whose floor is this resourceVersion.
    TooOld(u64),
}

/// What a delete did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum DeleteOutcome {
    /// The object is gone; this is its last state, at the deletion's resourceVersion.
    Deleted(Arc<StoredObject>),
    /// The object has finalizers: only `metadata.deletionTimestamp` was set (an update).
    Finalizing(Arc<StoredObject>),
}

impl DeleteOutcome {
    /// The object returned either way.
    pub fn object(&self) -> &Arc<StoredObject> {
        match self {
            Self::Deleted(o) | Self::Finalizing(o) => o,
        }
    }
}

/// Preconditions of a delete (`DeleteOptions.preconditions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preconditions {
    /// The object must have this UID.
    pub uid: Option<String>,
    /// The object must be at this resourceVersion.
    pub resource_version: Option<String>,
}

/// What a write goes through besides the store's own rules: the request layer's admission
/// and the status subresource's split of an object, which the test's direct writes skip.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct WritePolicy {
    /// Refuse namespaced creates in a namespace that does not exist (404), as the real
    /// server's NamespaceLifecycle admission does.
    pub require_namespace: bool,
    /// Which part of the object the write may change.
    pub part: Part,
}

/// Which part of an object a write changes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Part {
    /// Everything (direct writes, and resources without a status subresource).
    #[default]
    Whole,
    /// Everything but `.status` (a create resets it; an update keeps the stored one).
    Main,
    /// Only `.status` (writes to `<object>/status`).
    Status,
    /// A CSR's approval conditions (writes to `certificatesigningrequests/<name>/approval`);
    /// the body is the whole object, of which the CSR strategy keeps the conditions.
    Approval,
    /// A namespace's `spec.finalizers` (writes to `namespaces/<name>/finalize`); the body is
    /// the whole object, its status already the stored one.
    Finalize,
    /// A pod's ephemeral containers (writes to `pods/<name>/ephemeralcontainers`); the body
    /// is the whole pod, of which the pod strategy keeps `spec.ephemeralContainers`.
    EphemeralContainers,
    /// A pod's container resources (writes to `pods/<name>/resize`); the body is the whole
    /// pod, of which the resize strategy keeps the containers' resources and resize policies.
    Resize,
}

mod bindings;
mod crds;
mod csrs;
mod daemon_sets;
mod eviction;
mod gc;
mod jobs;
mod namespaces;
mod pod_admission;
mod pods;
mod policies;
mod resize;
mod services;
mod tokens;
mod views;
#[cfg(feature = "http")]
pub(crate) mod webhooks;

/// What an eviction asks besides the pod (its `deleteOptions`): see [`eviction`].
#[derive(Clone, Debug, Default)]
pub(crate) struct Eviction {
    pub preconditions: Preconditions,
    pub propagation: PropagationPolicy,
}

pub use crate::propagation::PropagationPolicy;

/// How many issued service account tokens the server remembers for token reviews (the
/// oldest are forgotten first).
pub(crate) const MAX_ISSUED_TOKENS: usize = 10_000;

/// The service account tokens the server issued ([`tokens`]), newest last.
#[derive(Default)]
pub(crate) struct IssuedTokens {
    by_token: HashMap<String, IssuedToken>,
    order: VecDeque<String>,
}

/// One issued token: whom it names and until when.
struct IssuedToken {
    namespace: String,
    service_account: String,
    service_account_uid: String,
    audiences: Vec<String>,
    /// Seconds since the epoch.
    expires: u64,
    bound: Option<BoundObject>,
    jti: String,
}

/// The object a token is bound to.
struct BoundObject {
    /// `Pod`, `Secret` or `Node`.
    kind: &'static str,
    res: usize,
    name: String,
    uid: String,
}

/// The whole store, behind the server's mutex.
pub(crate) struct Store {
    pub rv: u64,
    pub compacted: u64,
    pub continue_epoch: u64,
    pub resources: Vec<ResourceState>,
    pub rv_tx: watch::Sender<u64>,
    history: HistoryConfig,
    /// The byte bound over the history of every resource together.
    history_max_bytes: usize,
    /// What the history of every resource accounts for now (see [`HistoryEvent`]).
    pub history_bytes: usize,
    rng: StdRng,
    clock: Clock,
    /// Whether the writes under way are dry runs: checked, prepared and answered, but not
    /// committed (no new resourceVersion, no event). Set by the request layer for one request.
    pub dry_run: bool,
    /// Whether the writes under way validate fields strictly: fields a schema does not
    /// declare are a 400 instead of being pruned. Set by the request layer for one request.
    pub strict_fields: bool,
    /// Where the request's write reports what it warns about (the unknown fields it drops
    /// under `fieldValidation=Warn`, validation rules ratcheted or not checked), for the
    /// answer's `Warning` headers. Set by the request layer for one request.
    pub warnings: Option<Warnings>,
    /// Whether the unknown fields the request's write drops are reported in `warnings`.
    pub warn_unknown_fields: bool,
    /// The field management of the request's write (set by the request layer for one
    /// request). Taken by the first write, so the writes the collectors make on its behalf
    /// are not its manager's.
    pub managing: Option<Managing>,
    /// Whether the request's write decodes a built-in kind into its Go type (`typed`: unknown
    /// fields dropped or refused, wrong types refused), as the real server decodes a request
    /// body. Set by the request layer for one request and taken by its first write, as
    /// `managing` is; the test's direct writes and the collectors' store what they are given.
    pub decode_builtins: bool,
    /// Whether the request's write stores a patch's result: a body that does not decode is
    /// then upstream's 422 on the `patch` field rather than a create's or update's 400. Set
    /// by the request layer for one request and taken by its first write.
    pub patching: bool,
    /// The resourceVersion the object a request's update replaces must still be at (the
    /// stored object a webhook admitted the write against; a conflict otherwise). Set by the
    /// request layer for one request and taken by its first update.
    pub expect_rv: Option<u64>,
    /// Whether the request's writes skip the validating admission policies (its first pass
    /// before its webhooks, whose mutating webhooks may still change the object; the pass
    /// after them and the write itself run the policies). Set by the request layer for one
    /// request.
    pub skip_policies: bool,
    /// Whether removals cascade to dependents as the garbage collector cascades them
    /// ([`gc`]).
    pub garbage_collection: bool,
    /// Owner uid → the objects whose `ownerReferences` name it (resource index, key).
    dependents: HashMap<String, BTreeSet<(usize, Arc<str>)>>,
    /// The collectors' work still owed for the write under way, done in order by the
    /// outermost write (iteratively: an owner chain of any length never deepens the stack).
    /// At most one entry per object the write removes or marks.
    chores: VecDeque<Chore>,
    /// Whether the collectors are working through `chores` (nested writes only add to it).
    collecting: bool,
    /// The uids of the objects removed lately (at most [`REMEMBERED_REMOVALS`], oldest
    /// first), so that a dependent written naming one of them is collected ([`gc`]).
    removed: Removed,
    /// The service account tokens issued, for token reviews.
    tokens: IssuedTokens,
}

/// The warnings a request's writes collect (shared with the request layer).
pub(crate) type Warnings = Arc<parking_lot::Mutex<Vec<String>>>;

/// Who makes a request's write, for its field management ([`managed`]).
#[derive(Clone, Debug)]
pub(crate) struct Managing {
    /// The field manager.
    pub manager: String,
    /// Whether the write is a server-side apply whose managed fields are already reckoned
    /// (then the body's are stored as they are); otherwise the write is tracked as an
    /// update.
    pub applied: bool,
    /// The subresource the write is made through when its part does not say (`scale`).
    pub subresource: Option<&'static str>,
}

impl Part {
    /// The subresource a write of this part is made through, as `managedFields` names it.
    fn subresource(self) -> &'static str {
        match self {
            Part::Status => "status",
            Part::Approval => "approval",
            Part::Finalize => "finalize",
            Part::EphemeralContainers => "ephemeralcontainers",
            Part::Resize => "resize",
            _ => "",
        }
    }

    pub(crate) fn scope(self) -> managed::Scope {
        match self {
            Part::Whole
            | Part::Approval
            | Part::Finalize
            | Part::EphemeralContainers
            | Part::Resize => managed::Scope::Whole,
            Part::Main => managed::Scope::NoStatus,
            Part::Status => managed::Scope::StatusOnly,
        }
    }
}

/// Work for the collectors ([`gc`], [`namespaces`]).
enum Chore {
    /// An object left the store: collect its dependents, release owners waiting for it, and
    /// finish its namespace if that terminates.
    Removed(Arc<StoredObject>),
    /// An owner was marked deleted behind the finalizer of `policy`.
    Marked {
        res: usize,
        owner: Arc<StoredObject>,
        policy: PropagationPolicy,
    },
    /// A namespace was marked deleted: delete its content.
    EmptyNamespace(String),
    /// A CRD was marked deleted: delete its instances, then it.
    CleanCrd(String),
    /// An object was written naming an owner removed before: collect it if no owner is live.
    Dangling { res: usize, key: Arc<str> },
}

/// How many removed objects' uids the collector remembers.
const REMEMBERED_REMOVALS: usize = 10_000;

/// The uids of the objects removed lately, at most [`REMEMBERED_REMOVALS`].
#[derive(Debug, Default)]
struct Removed {
    uids: HashSet<String>,
    order: VecDeque<String>,
}

impl Removed {
    fn remember(&mut self, uid: &str) {
        if !self.uids.insert(uid.to_owned()) {
            return;
        }
        self.order.push_back(uid.to_owned());
        if self.order.len() > REMEMBERED_REMOVALS
            && let Some(oldest) = self.order.pop_front()
        {
            self.uids.remove(&oldest);
        }
    }

    fn contains(&self, uid: &str) -> bool {
        self.uids.contains(uid)
    }
}

/// The largest resourceVersion the server hands out: etcd's revisions (which the real
/// server's resourceVersions are) are 64-bit signed integers.
pub const MAX_RESOURCE_VERSION: u64 = i64::MAX.unsigned_abs();

const GENERATE_NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

impl Store {
    pub(crate) fn new(
        history: HistoryConfig,
        history_max_bytes: usize,
        initial_rv: u64,
        seed: u64,
        clock: Clock,
    ) -> Self {
        let mut store = Self {
            rv: initial_rv,
            compacted: 0,
            continue_epoch: 0,
            resources: Vec::new(),
            rv_tx: watch::channel(initial_rv).0,
            history,
            history_max_bytes,
            history_bytes: 0,
            rng: StdRng::seed_from_u64(seed),
            clock,
            dry_run: false,
            strict_fields: false,
            managing: None,
            decode_builtins: false,
            patching: false,
            expect_rv: None,
            skip_policies: false,
            warnings: None,
            warn_unknown_fields: false,
            garbage_collection: true,
            dependents: HashMap::new(),
            chores: VecDeque::new(),
            collecting: false,
            removed: Removed::default(),
            tokens: IssuedTokens::default(),
        };
        for def in ResourceDef::builtins() {
            let floor = store.rv;
            store.resources.push(ResourceState::new(def, floor));
        }
        for i in 0..store.resources.len() {
            store.resources[i].twin = (0..store.resources.len())
                .find(|&j| twins::are_twins(&store.resources[i].def, &store.resources[j].def));
        }
        store
    }

    pub(crate) fn register(&mut self, def: ResourceDef) -> Result<usize, Status> {
        def.validate()?;
        if let Some(i) = self
            .resources
            .iter()
            .position(|r| r.def.group == def.group && r.def.plural == def.plural)
        {
            if *self.resources[i].def == def {
                return Ok(i);
            }
            return Err(Status::failure(
                409,
                "AlreadyExists",
                format!(
                    "resource {} is already registered with a different definition",
                    def.qualified_name()
                ),
            ));
        }
        let floor = self.rv;
        self.resources.push(ResourceState::new(def, floor));
        Ok(self.resources.len() - 1)
    }

    /// Replaces the definition of the registered resource with `def`'s group and plural (a
    /// CRD changed: its schema, subresources or names), keeping its objects. `Ok(false)`:
    /// no such resource; a 409 if the version, kind or scope differ (the engine keeps one
    /// version and does not move objects).
    pub(crate) fn redefine(&mut self, def: ResourceDef) -> Result<bool, Status> {
        def.validate()?;
        let Some(i) = self
            .resources
            .iter()
            .position(|r| r.served && r.def.group == def.group && r.def.plural == def.plural)
        else {
            return Ok(false);
        };
        let current = &self.resources[i].def;
        if current.version != def.version
            || current.kind != def.kind
            || current.namespaced != def.namespaced
        {
            return Err(Status::failure(
                409,
                "AlreadyExists",
                format!(
                    "resource {} is already registered with another version, kind or scope",
                    def.qualified_name()
                ),
            ));
        }
        self.redefine_at(i, def);
        Ok(true)
    }

    /// Replaces resource `i`'s definition, keeping its objects.
    fn redefine_at(&mut self, i: usize, def: ResourceDef) {
        let current = &self.resources[i].def;
        if **current != def {
            if current.selectable_fields != def.selectable_fields {
                // The values field selectors read are kept per object: recompute them (the
                // real server computes them at each selection).
                for object in self.resources[i].objects.values_mut() {
                    *object = Arc::new(object.with_fields_of(&def));
                }
            }
            self.resources[i].def = Arc::new(def);
        }
    }

    /// Told whenever resource `res` changes (the end of its history).
    pub(crate) fn changes(&self, res: usize) -> watch::Receiver<u64> {
        self.resources[res].changed.subscribe()
    }

    /// Now, on the server's clock.
    pub(crate) fn now(&self) -> std::time::SystemTime {
        self.clock.now()
    }

    pub(crate) fn find(&self, name: &str) -> Option<usize> {
        self.resources
            .iter()
            .position(|r| r.served && r.def.is_named(name))
    }

    pub(crate) fn find_gvr(&self, group: &str, version: &str, plural: &str) -> Option<usize> {
        self.resources.iter().position(|r| {
            r.served && r.def.group == group && r.def.version == version && r.def.plural == plural
        })
    }

    pub(crate) fn set_history(&mut self, history: HistoryConfig) {
        self.history = history;
    }

    /// Changes the byte bound of the history and applies it at once.
    pub(crate) fn set_history_max_bytes(&mut self, max_bytes: usize) {
        self.history_max_bytes = max_bytes;
        self.trim_history_bytes(None);
    }

    /// Drops the oldest events, across resources, while the history accounts for more than
    /// its byte bound; the newest event of `keep` (the resource just written) stays, so a
    /// single object larger than the bound is still seen by the watchers that are caught up.
    fn trim_history_bytes(&mut self, keep: Option<usize>) {
        while self.history_bytes > self.history_max_bytes {
            let oldest = self
                .resources
                .iter()
                .enumerate()
                .filter(|(i, r)| r.log.len() > usize::from(Some(*i) == keep))
                .filter_map(|(i, r)| r.log.front().map(|e| (e.rv, i)))
                .min();
            let Some((_, i)) = oldest else { break };
            let freed = self.resources[i].pop_oldest().unwrap_or(0);
            self.history_bytes = self.history_bytes.saturating_sub(freed);
        }
    }

    /// Makes the next write get `next` (which must be above the current resourceVersion and
    /// at most [`MAX_RESOURCE_VERSION`]).
    pub(crate) fn set_next_rv(&mut self, next: u64) -> Result<(), Status> {
        if next <= self.rv {
            return Err(status::bad_request(format!(
                "the next resourceVersion must be above the current one ({}), got {next}",
                self.rv
            )));
        }
        if next > MAX_RESOURCE_VERSION {
            return Err(status::bad_request(format!(
                "the next resourceVersion must be at most {MAX_RESOURCE_VERSION} (etcd's \
                 revisions are 64-bit signed integers), got {next}"
            )));
        }
        self.rv = next - 1;
        self.rv_tx.send_replace(self.rv);
        Ok(())
    }

    /// The resourceVersion the next write gets; a 500 `InternalError` once the counter has
    /// reached [`MAX_RESOURCE_VERSION`] (the store never wraps around).
    fn next_rv(&self) -> Result<u64, Status> {
        self.rv
            .checked_add(1)
            .filter(|next| *next <= MAX_RESOURCE_VERSION)
            .ok_or_else(|| {
                status::internal_error(&format!(
                    "resourceVersion exhausted: the current resourceVersion {} is the largest \
                     this server hands out ({MAX_RESOURCE_VERSION}), so no further write is \
                     possible",
                    self.rv
                ))
            })
    }

    /// The resourceVersion a write of `existing` stores: the next one, or in a dry run the
    /// stored one (nothing is written).
    fn write_rv(&self, existing: &StoredObject) -> Result<u64, Status> {
        if self.dry_run {
            Ok(existing.resource_version())
        } else {
            self.next_rv()
        }
    }

    /// Drops every event at or below `rv` in every resource.
    pub(crate) fn compact(&mut self, rv: u64) -> Result<(), Status> {
        if rv > self.rv {
            return Err(status::bad_request(format!(
                "cannot compact to {rv}: the current resourceVersion is {}",
                self.rv
            )));
        }
        self.compacted = self.compacted.max(rv);
        for r in &mut self.resources {
            while r.log.front().is_some_and(|e| e.rv <= rv) {
                let freed = r.pop_oldest().unwrap_or(0);
                self.history_bytes = self.history_bytes.saturating_sub(freed);
            }
            r.floor_rv = r.floor_rv.max(rv);
        }
        Ok(())
    }

    pub(crate) fn snapshot(&self, res: usize, filter: &Filter) -> Vec<Arc<StoredObject>> {
        let state = &self.resources[res];
        let view = state.view_at(self.rv);
        let page = view.page(filter, None, 0, None);
        page.items
    }

    /// The log index of the first event after `rv`.
    pub(crate) fn cursor_after(&self, res: usize, rv: u64) -> Result<u64, Status> {
        let state = &self.resources[res];
        if rv < state.floor_rv {
            return Err(status::too_old_resource_version(rv, state.floor_rv));
        }
        let idx = state.log.partition_point(|e| e.rv <= rv);
        Ok(state.log_start + idx as u64)
    }

    pub(crate) fn fetch(
        &self,
        res: usize,
        cursor: u64,
        max: usize,
        out: &mut VecDeque<Arc<HistoryEvent>>,
    ) -> Fetch {
        let state = &self.resources[res];
        if cursor < state.log_start {
            return Fetch::TooOld(state.floor_rv);
        }
        let from = usize::try_from(cursor - state.log_start).unwrap_or(usize::MAX);
        if from >= state.log.len() {
            return Fetch::CaughtUp(self.rv);
        }
        out.extend(state.log.range(from..).take(max).cloned());
        Fetch::Events
    }

    pub(crate) fn get(
        &self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<StoredObject>, Status> {
        let state = &self.resources[res];
        let key = object_key(&state.def, namespace, name);
        state
            .objects
            .get(key.as_str())
            .cloned()
            .ok_or_else(|| status::not_found(&state.def, name))
    }

    pub(crate) fn create(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        mut body: Value,
        policy: WritePolicy,
    ) -> Result<Arc<StoredObject>, Status> {
        let managing = self.managing.take();
        let decode_builtins = std::mem::take(&mut self.decode_builtins);
        let sent = managed::Sent::of(&body);
        let def = Arc::clone(&self.resources[res].def);
        if self.crd_terminating(res) {
            return Err(status::crd_terminating(&def));
        }
        #[cfg(feature = "http")]
        if def.is_crds() {
            crate::crd::definition(&body)?;
        }
        check_type(&def, &mut body)?;
        let ns = self.resolve_namespace(&def, namespace, &mut body, policy.require_namespace)?;
        // The real server's create strategies reset the status (a pod's is set below, from
        // its decoded spec; `GetPodQOS` prefers the QoS class the request sent).
        let mut sent_status = None;
        if policy.part != Part::Whole
            && let Some(obj) = body.as_object_mut()
        {
            sent_status = obj.remove("status");
        }
        if meta_str(&body, "resourceVersion").is_some() {
            return Err(status::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let name = match meta_str(&body, "name") {
            Some(n) => n.to_owned(),
            None => match meta_str(&body, "generateName").map(str::to_owned) {
                Some(prefix) => self.generate_name(res, ns.as_deref(), &prefix),
                None => {
                    return Err(status::invalid(
                        &def.kind,
                        &def.group,
                        "",
                        &[(
                            "metadata.name".into(),
                            "FieldValueRequired",
                            "name or generateName is required".into(),
                        )],
                    ));
                }
            },
        };
        validate_name(&def, &name)?;
        let checks = self.checks(decode_builtins, false);
        apply_schema(&def, &name, &mut body, None, &checks)?;
        // Before the server's own fields and defaults, which nobody owns (upstream's field
        // manager runs before the registry's strategy).
        self.track(&def, managing, sent, policy.part, None, &mut body);
        if policy.part != Part::Whole && def.is_pods() {
            // The default admission plugins' additions (after the field manager, so
            // nobody owns them), then the strategy's status.
            let namespace = ns.clone().unwrap_or_default();
            self.admit_new_pod(&mut body, &namespace, &name)?;
        }
        if policy.part != Part::Whole
            && def.is_pods()
            && let Some(obj) = body.as_object_mut()
        {
            let spec = obj.get("spec").unwrap_or(&Value::Null);
            let status = pods::status_on_create(spec, sent_status.as_ref(), &self.now_rfc3339());
            obj.insert("status".into(), status);
        }
        let key = object_key(&def, ns.as_deref(), &name);
        if self.resources[res].objects.contains_key(key.as_str()) {
            return Err(status::already_exists(&def, &name));
        }
        if policy.part != Part::Whole && def.is_services() {
            self.allocate_service(res, &key, &name, &mut body, None)?;
        }
        if policy.part != Part::Whole && def.is_daemon_sets() {
            daemon_sets::on_create(&mut body);
        }
        if policy.part != Part::Whole && def.is_csrs() {
            csrs::on_create(&mut body);
        }
        // A dry run answers the object as prepared, without a resourceVersion (upstream's
        // dry-run storage hands back what it would have written; etcd assigns the version).
        let rv = if self.dry_run { 0 } else { self.next_rv()? };
        let uid = self.new_uid();
        if policy.part != Part::Whole && def.is_jobs() {
            jobs::generate_selector(&mut body, &name, &uid);
        }
        set_meta(&mut body, "name", Value::String(name));
        set_meta(&mut body, "uid", Value::String(uid));
        set_meta(
            &mut body,
            "creationTimestamp",
            Value::String(self.clock.now_rfc3339()),
        );
        if !self.dry_run {
            set_meta(&mut body, "resourceVersion", Value::String(rv.to_string()));
        }
        remove_meta(&mut body, "deletionTimestamp");
        remove_meta(&mut body, "deletionGracePeriodSeconds");
        if generation::is_tracked(&def) {
            set_meta(&mut body, "generation", Value::from(1));
        }
        self.prepare_namespace(&def, &mut body, true, policy.part != Part::Whole);
        let name = meta_str(&body, "name").unwrap_or_default().to_owned();
        self.check_policy_object(&def, &name, &body)?;
        self.admit(res, "CREATE", "", &name, ns.as_deref(), Some(&body), None)?;
        let settled = self.settle(res, &mut body)?;
        let obj = Arc::new(StoredObject::from_value(&body, rv, &def)?);
        self.commit_settled(res, EventKind::Added, Arc::clone(&obj), None, settled);
        Ok(obj)
    }

    pub(crate) fn update(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
        body: Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.update_with(res, namespace, name, body, Part::Whole)
    }

    /// An update that changes only `part` of the object.
    pub(crate) fn update_with(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
        mut body: Value,
        part: Part,
    ) -> Result<Arc<StoredObject>, Status> {
        let managing = self.managing.take();
        // What admission sees the write made through (`scale` is the managing's to say).
        let subresource = managing
            .as_ref()
            .and_then(|m| m.subresource)
            .unwrap_or(part.subresource());
        let decode_builtins = std::mem::take(&mut self.decode_builtins);
        let patching = std::mem::take(&mut self.patching);
        let expect_rv = self.expect_rv.take();
        let sent = managed::Sent::of(&body);
        let def = Arc::clone(&self.resources[res].def);
        check_type(&def, &mut body)?;
        let ns = if def.namespaced {
            namespace.map(str::to_owned)
        } else {
            None
        };
        let existing = self.get(res, ns.as_deref(), name)?;
        if expect_rv.is_some_and(|rv| rv != existing.resource_version()) {
            return Err(status::conflict(&def, name));
        }
        match part {
            Part::Whole
            | Part::Approval
            | Part::Finalize
            | Part::EphemeralContainers
            | Part::Resize => {}
            Part::Main => {
                // `.status` is written through the status subresource only.
                let old_status = existing.to_value().get("status").cloned();
                if let Some(obj) = body.as_object_mut() {
                    match old_status {
                        Some(s) => obj.insert("status".into(), s),
                        None => obj.remove("status"),
                    };
                }
            }
            Part::Status => {
                // Everything but `.status` stays as stored; the body's resourceVersion (a
                // precondition) and name are checked below as for any update.
                let mut merged = existing.to_value();
                let new_status = body.get("status").cloned();
                if let Some(obj) = merged.as_object_mut() {
                    match new_status {
                        Some(s) => obj.insert("status".into(), s),
                        None => obj.remove("status"),
                    };
                }
                // An apply through `/status` reckons the managed fields itself.
                let applied = managing.as_ref().is_some_and(|m| m.applied);
                let sent_fields = if applied { &["managedFields"][..] } else { &[] };
                for &field in ["resourceVersion", "name", "namespace", "uid"]
                    .iter()
                    .chain(sent_fields)
                {
                    match body.get("metadata").and_then(|m| m.get(field)) {
                        Some(v) => set_meta(&mut merged, field, v.clone()),
                        None => remove_meta(&mut merged, field),
                    }
                }
                body = merged;
            }
        }
        let old = existing.to_value();
        let checks = self.checks(decode_builtins, patching);
        apply_schema(&def, name, &mut body, Some(&old), &checks)?;
        // Before the server's own fields, which nobody owns (upstream's field manager runs
        // before the registry's strategy).
        self.track(&def, managing, sent, part, Some(&old), &mut body);
        if part == Part::Status && def.is_pods() {
            pods::keep_on_status_update(&mut body, &old);
        }
        if part == Part::EphemeralContainers && def.is_pods() {
            pods::ephemeral_containers_update(&mut body, &old)
                .map_err(|v| status::invalid(&def.kind, &def.group, name, &v))?;
        }
        if part == Part::Resize && def.is_pods() {
            resize::resize_update(&mut body, &old)
                .map_err(|v| status::invalid(&def.kind, &def.group, name, &v))?;
        }
        if part != Part::Whole && def.is_csrs() {
            let write = match part {
                Part::Status => csrs::Write::Status,
                Part::Approval => csrs::Write::Approval,
                _ => csrs::Write::Main,
            };
            csrs::on_update(write, &mut body, &old, &self.now_rfc3339())
                .map_err(|v| status::invalid(&def.kind, &def.group, name, &v))?;
        }
        if part == Part::Main && def.is_daemon_sets() {
            daemon_sets::on_update(&mut body, &old);
        }
        if part == Part::Main && def.is_crds() {
            versions::record_stored_version(&mut body);
            // Checked before it is stored (the HTTP front end serves what it defines after).
            #[cfg(feature = "http")]
            crd_checks(name, &body)?;
        }
        if part == Part::Main && def.is_services() {
            let key = object_key(&def, ns.as_deref(), name);
            self.allocate_service(res, &key, name, &mut body, Some(&old))?;
        }
        match meta_str(&body, "name") {
            Some(n) if n != name => {
                return Err(status::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            _ => set_meta(&mut body, "name", Value::String(name.to_owned())),
        }
        match (meta_str(&body, "namespace"), ns.as_deref()) {
            (Some(b), Some(u)) if b != u => {
                return Err(status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on \
                     the request",
                ));
            }
            (_, Some(u)) => set_meta(&mut body, "namespace", Value::String(u.to_owned())),
            (_, None) => remove_meta(&mut body, "namespace"),
        }
        if let Some(rv) = meta_str(&body, "resourceVersion")
            && rv != existing.resource_version().to_string()
        {
            return Err(status::conflict(&def, name));
        }
        if let Some(uid) = meta_str(&body, "uid")
            && uid != existing.uid()
        {
            return Err(uid_mismatch(&def, name, uid, existing.uid()));
        }
        if existing.is_deleting() {
            no_new_finalizers(&def, name, &old, &body)?;
        }
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
        ] {
            match old.get("metadata").and_then(|m| m.get(field)) {
                Some(v) => set_meta(&mut body, field, v.clone()),
                None => remove_meta(&mut body, field),
            }
        }
        set_meta(
            &mut body,
            "resourceVersion",
            Value::String(existing.resource_version().to_string()),
        );
        // Kept by the server: the stored value, plus one if the kind's desired state changed.
        match generation::on_update(&def, &old, &body) {
            Some(g) => set_meta(&mut body, "generation", Value::from(g)),
            None => remove_meta(&mut body, "generation"),
        }
        if part == Part::Main {
            // Requests change a namespace's finalizers only through `/finalize`, which this
            // server does not serve: its collector finalizes (as a whole-object write).
            self.keep_namespace_finalizers(&def, &old, &mut body);
        }
        self.prepare_namespace(&def, &mut body, false, false);
        if part != Part::Status {
            self.check_policy_object(&def, name, &body)?;
        }
        self.admit(
            res,
            "UPDATE",
            subresource,
            name,
            ns.as_deref(),
            Some(&body),
            Some(&old),
        )?;
        let settled = self.settle(res, &mut body)?;
        managed::keep_times_of_a_no_op(&mut body, &old);
        if body == old {
            // The real server skips no-op updates: no new resourceVersion, no event.
            return Ok(existing);
        }
        // A dry run answers the updated object at the stored version, as upstream's does.
        let rv = self.write_rv(&existing)?;
        set_meta(&mut body, "resourceVersion", Value::String(rv.to_string()));
        let obj = Arc::new(StoredObject::from_value(&body, rv, &def)?);
        let kind =
            if obj.is_deleting() && !obj.has_finalizers() && !self.namespace_held(&def, &body) {
                EventKind::Deleted
            } else {
                EventKind::Modified
            };
        self.commit_settled(res, kind, Arc::clone(&obj), Some(existing), settled);
        Ok(obj)
    }

    /// Keeps the field management of a request's write that is not an apply (a write the
    /// server makes itself, or an apply, keeps the body's).
    fn track(
        &self,
        def: &ResourceDef,
        managing: Option<Managing>,
        sent: managed::Sent,
        part: Part,
        old: Option<&Value>,
        body: &mut Value,
    ) {
        let Some(managing) = managing.filter(|m| !m.applied) else {
            return;
        };
        let now = self.clock.now_rfc3339();
        let api_version = def.api_version();
        let writer = managed::Writer {
            manager: &managing.manager,
            api_version: &api_version,
            subresource: managing.subresource.unwrap_or(part.subresource()),
            now: &now,
            scope: part.scope(),
        };
        managed::track_update(def, old, body, sent, &writer);
    }

    /// The request's settings a write's body is checked with.
    fn checks(&self, decode_builtins: bool, patching: bool) -> Checks<'_> {
        Checks {
            strict: self.strict_fields,
            warnings: self.warnings.as_ref(),
            warn_unknown_fields: self.warn_unknown_fields,
            decode_builtins,
            patching,
        }
    }

    /// The server's time, as `managedFields` and timestamps carry it.
    pub(crate) fn now_rfc3339(&self) -> String {
        self.clock.now_rfc3339()
    }

    pub(crate) fn patch(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
    ) -> Result<Arc<StoredObject>, Status> {
        self.patch_with(res, namespace, name, patch, Part::Whole)
    }

    /// A merge patch that changes only `part` of the object.
    pub(crate) fn patch_with(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
        patch: &Value,
        part: Part,
    ) -> Result<Arc<StoredObject>, Status> {
        if !patch.is_object() {
            return Err(status::bad_request("a merge patch must be a JSON object"));
        }
        let def = Arc::clone(&self.resources[res].def);
        let ns = if def.namespaced { namespace } else { None };
        let existing = self.get(res, ns, name)?;
        let mut value = existing.to_value();
        merge_patch(&mut value, patch);
        if !value.get("metadata").is_some_and(Value::is_object) {
            return Err(status::bad_request("a patch must not remove metadata"));
        }
        self.update_with(res, ns, name, value, part)
    }

    pub(crate) fn delete(
        &mut self,
        res: usize,
        namespace: Option<&str>,
        name: &str,
        preconditions: &Preconditions,
        policy: PropagationPolicy,
    ) -> Result<DeleteOutcome, Status> {
        // A delete changes no one's fields (the writes it makes are the server's).
        self.managing = None;
        let def = Arc::clone(&self.resources[res].def);
        let ns = if def.namespaced { namespace } else { None };
        let existing = self.get(res, ns, name)?;
        // Orphan and Foreground deletions wait for the garbage collector behind a finalizer,
        // and a namespace for the namespace controller (behind `spec.finalizers`).
        let gc_finalizer = policy.finalizer().filter(|_| self.garbage_collection);
        let namespace_held = self.stored_namespace_held(&def, &existing);
        let namespace_controlled = namespace_held && self.stored_namespace_controlled(&existing);
        let crd_cleanup = self.crd_cleanup_due(&def, &existing);
        if let Some(uid) = &preconditions.uid
            && uid != existing.uid()
        {
            return Err(delete_refused(
                &def,
                name,
                format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). \
                     The object might have been deleted and then recreated",
                    existing.uid()
                ),
            ));
        }
        if let Some(rv) = &preconditions.resource_version
            && *rv != existing.resource_version().to_string()
        {
            return Err(delete_refused(
                &def,
                name,
                format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the \
                     ResourceVersion in record ({}). The object might have been modified",
                    existing.resource_version()
                ),
            ));
        }
        if self.policies_bound() {
            let stored = existing.to_value();
            self.admit(res, "DELETE", "", name, ns, None, Some(&stored))?;
        }
        if (existing.has_finalizers() || namespace_held) && existing.is_deleting() {
            return Ok(DeleteOutcome::Finalizing(existing));
        }
        let rv = self.write_rv(&existing)?;
        if existing.has_finalizers() || gc_finalizer.is_some() || namespace_held || crd_cleanup {
            let mut value = existing.to_value();
            if let Some(finalizer) = gc_finalizer {
                crate::propagation::set_gc_finalizer(&mut value, finalizer);
            }
            if crd_cleanup {
                self.mark_crd_deleted(&mut value);
            }
            self.mark_namespace_terminating(&def, &mut value);
            set_meta(
                &mut value,
                "deletionTimestamp",
                Value::String(self.clock.now_rfc3339()),
            );
            set_meta(&mut value, "deletionGracePeriodSeconds", Value::from(0));
            if let Some(g) = generation::on_deletion_marked(&value) {
                set_meta(&mut value, "generation", Value::from(g));
            }
            set_meta(&mut value, "resourceVersion", Value::String(rv.to_string()));
            let obj = Arc::new(StoredObject::from_value(&value, rv, &def)?);
            self.commit(res, EventKind::Modified, Arc::clone(&obj), Some(existing));
            if !self.dry_run {
                if gc_finalizer.is_some() {
                    self.chores.push_back(Chore::Marked {
                        res,
                        owner: Arc::clone(&obj),
                        policy,
                    });
                }
                if namespace_controlled {
                    self.chores
                        .push_back(Chore::EmptyNamespace(name.to_owned()));
                }
                self.run_collectors();
            }
            return Ok(DeleteOutcome::Finalizing(obj));
        }
        if self.dry_run {
            return Ok(DeleteOutcome::Deleted(existing));
        }
        let obj = Arc::new(existing.with_resource_version(rv)?);
        self.commit(res, EventKind::Deleted, Arc::clone(&obj), Some(existing));
        Ok(DeleteOutcome::Deleted(obj))
    }

    /// Applies one change at `object.resource_version()` (which must be `self.rv + 1`).
    fn commit(
        &mut self,
        res: usize,
        kind: EventKind,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
    ) {
        self.commit_settled(res, kind, object, prev, None);
    }

    /// [`commit`](Self::commit) of a write whose body [`settle`](Self::settle) turned from
    /// `settled`, the storage form, into the view's (an `autoscaling/v1`
    /// HorizontalPodAutoscaler): the storage view gets `settled` (the view's own form says
    /// less: [`twins::mirror`]).
    fn commit_settled(
        &mut self,
        res: usize,
        kind: EventKind,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
        settled: Option<Value>,
    ) {
        if self.dry_run {
            return;
        }
        let rv = object.resource_version();
        let mut mirrors = self.version_mirrors(res, kind, &object);
        mirrors.extend(self.resources[res].twin.and_then(|t| {
            let to = &self.resources[t];
            let prev = to.objects.get(object.key()).cloned();
            let twin_prev = prev.as_ref().map(|p| p.to_value());
            // `settle` kept an object that does not convert from being stored, and the
            // converted object keeps the metadata `object` was built from, so it builds too;
            // were either not so, the twin would only miss this change.
            let value = twins::mirror(
                &self.resources[res].def,
                &to.def,
                &object.to_value(),
                settled,
                twin_prev.as_ref(),
            )
            .ok()?;
            let converted = StoredObject::from_value(&value, rv, &to.def).ok()?;
            Some((t, Arc::new(converted), prev))
        }));
        let removed = (kind == EventKind::Deleted).then(|| Arc::clone(&object));
        // Upstream's collector deletes an object whose owners are all gone, also one written
        // after they went (a controller acting on a stale cache): this fake knows which
        // owners went (not those that never existed, which it leaves alone).
        let dangling = (kind != EventKind::Deleted
            && self.garbage_collection
            && !object.is_deleting()
            && object
                .owners()
                .iter()
                .any(|o| self.removed.contains(&o.uid)))
        .then(|| Arc::<str>::from(object.key()));
        self.append(res, kind, object, prev);
        for (t, converted, prev) in mirrors {
            self.append(t, kind, converted, prev);
        }
        self.rv = rv;
        self.rv_tx.send_replace(rv);
        if let Some(removed) = removed
            && self.garbage_collection
        {
            self.removed.remember(removed.uid());
            self.chores.push_back(Chore::Removed(removed));
            self.run_collectors();
        }
        if let Some(key) = dangling {
            self.chores.push_back(Chore::Dangling { res, key });
            self.run_collectors();
        }
    }

    /// Appends one change to one resource's state and history.
    fn append(
        &mut self,
        res: usize,
        kind: EventKind,
        object: Arc<StoredObject>,
        prev: Option<Arc<StoredObject>>,
    ) {
        self.index_owners(res, kind, &object, prev.as_deref());
        let rv = object.resource_version();
        let now = Instant::now();
        let history = self.history.clone();
        let state = &mut self.resources[res];
        let key: Arc<str> = object.key().into();
        match kind {
            EventKind::Deleted => {
                if state.objects.remove(&key).is_some()
                    && let Some(ns) = object.namespace()
                    && let Some(n) = state.ns_counts.get_mut(ns)
                {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        state.ns_counts.remove(ns);
                    }
                }
            }
            EventKind::Added | EventKind::Modified => {
                let was = state.objects.insert(key, Arc::clone(&object));
                if was.is_none()
                    && let Some(ns) = object.namespace()
                {
                    *state.ns_counts.entry(ns.to_owned()).or_insert(0) += 1;
                }
            }
        }
        let bytes = object.bytes().len();
        state.log.push_back(Arc::new(HistoryEvent {
            rv,
            kind,
            object,
            prev,
            at: now,
            bytes,
            prev_at_rv: OnceLock::new(),
        }));
        let mut freed = 0;
        while state.log.len() > history.max_events
            || (state.log.len() > history.min_events
                && state
                    .log
                    .front()
                    .is_some_and(|e| now.duration_since(e.at) > history.min_age))
        {
            freed += state.pop_oldest().unwrap_or(0);
        }
        self.history_bytes = (self.history_bytes + bytes).saturating_sub(freed);
        self.trim_history_bytes(Some(res));
        let state = &mut self.resources[res];
        let end = state.log_end();
        state.changed.send_replace(end);
    }

    fn resolve_namespace(
        &self,
        def: &ResourceDef,
        namespace: Option<&str>,
        body: &mut Value,
        require_namespace: bool,
    ) -> Result<Option<String>, Status> {
        if !def.namespaced {
            remove_meta(body, "namespace");
            return Ok(None);
        }
        let in_body = meta_str(body, "namespace").map(str::to_owned);
        let ns = match (namespace, in_body) {
            (Some(u), Some(b)) if u != b => {
                return Err(status::bad_request(
                    "the namespace of the provided object does not match the namespace sent on \
                     the request",
                ));
            }
            (Some(u), _) => u.to_owned(),
            (None, Some(b)) => b,
            (None, None) => "default".to_owned(),
        };
        if require_namespace {
            let exists = self
                .find("namespaces")
                .is_some_and(|i| self.resources[i].objects.contains_key(ns.as_str()));
            if !exists {
                let ns_def = ResourceDef::cluster_scoped("", "v1", "namespaces", "Namespace");
                return Err(status::not_found(&ns_def, &ns));
            }
            if self.terminating_namespace(&ns).is_some() {
                return Err(status::namespace_terminating(
                    def,
                    meta_str(body, "name").unwrap_or_default(),
                    &ns,
                ));
            }
        }
        set_meta(body, "namespace", Value::String(ns.clone()));
        Ok(Some(ns))
    }

    /// Five characters as upstream's name generator picks them.
    fn name_suffix(&mut self) -> String {
        (0..5)
            .map(|_| {
                let i = self.rng.random_range(0..GENERATE_NAME_CHARS.len());
                char::from(GENERATE_NAME_CHARS[i])
            })
            .collect()
    }

    fn generate_name(&mut self, res: usize, ns: Option<&str>, prefix: &str) -> String {
        loop {
            let suffix = self.name_suffix();
            let name = format!("{prefix}{suffix}");
            let key = object_key(&self.resources[res].def, ns, &name);
            if !self.resources[res].objects.contains_key(key.as_str()) {
                return name;
            }
        }
    }

    /// `N` random bytes from the store's generator.
    fn rng_bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut bytes = [0; N];
        self.rng.fill(&mut bytes[..]);
        bytes
    }

    fn new_uid(&mut self) -> String {
        crate::object::uuid_v4(self.rng.random())
    }
}

fn object_key(def: &ResourceDef, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if def.namespaced => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}

/// The checks of a CRD update (`apiextensions`' `ValidateCustomResourceDefinitionUpdate`):
/// what its definition refuses, and stored versions left out of `spec.versions`.
#[cfg(feature = "http")]
fn crd_checks(name: &str, crd: &Value) -> Result<(), Status> {
    crate::crd::definition(crd)?;
    let violations = crate::crd::stored_versions_violations(crd);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            name,
            &violations,
        ))
    }
}

/// A delete's precondition refused as upstream's `rest.BeforeDelete` refuses it: a 409 on
/// the kind (`Pod`, `Deployment.apps`), not the resource.
fn delete_refused(def: &ResourceDef, name: &str, why: String) -> Status {
    let kind = if def.group.is_empty() {
        def.kind.clone()
    } else {
        format!("{}.{}", def.kind, def.group)
    };
    let mut s = Status::failure(
        409,
        "Conflict",
        format!("Operation cannot be fulfilled on {kind} {name:?}: {why}"),
    );
    s.details = Some(informer_core::StatusDetails {
        name: name.to_owned(),
        group: def.group.clone(),
        kind: def.kind.clone(),
        ..informer_core::StatusDetails::default()
    });
    s
}

fn uid_mismatch(def: &ResourceDef, name: &str, wanted: &str, actual: &str) -> Status {
    Status {
        message: format!(
            "Precondition failed: UID in precondition: {wanted}, UID in object meta: {actual}"
        ),
        ..status::conflict(def, name)
    }
}

fn remove_meta(value: &mut Value, field: &str) {
    if let Some(m) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove(field);
    }
}

fn check_type(def: &ResourceDef, body: &mut Value) -> Result<(), Status> {
    let Some(obj) = body.as_object_mut() else {
        return Err(status::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let api_version = def.api_version();
    match obj.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != api_version => {
            return Err(status::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version \
                 ({api_version})"
            )));
        }
        _ => {}
    }
    match obj.get("kind").and_then(Value::as_str) {
        Some(k) if k != def.kind => {
            return Err(status::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
        _ => {}
    }
    obj.insert("apiVersion".into(), Value::String(api_version));
    obj.insert("kind".into(), Value::String(def.kind.clone()));
    match obj.get("metadata") {
        None | Some(Value::Null) => {
            obj.insert("metadata".into(), Value::Object(serde_json::Map::new()));
        }
        Some(Value::Object(_)) => {}
        Some(other) => return Err(decode_error(def, "metadata", "v1.ObjectMeta", other)),
    }
    check_metadata(def, body)?;
    drop_empty_metadata(body);
    Ok(())
}

/// What a write's body is checked with (the request's settings, see [`Store`]'s fields).
#[derive(Clone, Copy)]
struct Checks<'a> {
    strict: bool,
    warnings: Option<&'a Warnings>,
    warn_unknown_fields: bool,
    decode_builtins: bool,
    patching: bool,
}

/// A custom resource's schema applied to a write: pruned (with `strict`, unknown fields are
/// a 400 instead, worded as upstream's strict decoding), defaulted, validated, its CEL
/// rules run (`old`: the stored object, on an update); a 422 with every violation. A
/// built-in kind is decoded into its Go type instead (`typed`), with `decode_builtins` (a
/// request's write): unknown fields dropped or, with `strict`, a 400, and a value of the
/// wrong type a 400 with Go's unmarshal error. A patch's result that does not decode is
/// upstream's 422 on the `patch` field instead (its patch handler's), naming the result.
fn apply_schema(
    def: &ResourceDef,
    name: &str,
    body: &mut Value,
    old: Option<&Value>,
    checks: &Checks<'_>,
) -> Result<(), Status> {
    let Checks {
        strict,
        warnings,
        warn_unknown_fields,
        decode_builtins,
        patching,
    } = *checks;
    // A patch's error names its result as it came (the pruning below drops what a strict
    // patch is refused for; a type error leaves the body as it was).
    let strict_patch = (patching && strict).then(|| body.to_string());
    let undecodable = |error: String, result: Option<String>| match result {
        // Upstream's patch handler: `Invalid` with no kind or name, on the field `patch`.
        Some(result) => status::invalid(
            "",
            "",
            "",
            &[(
                "patch".into(),
                "FieldValueInvalid",
                format!("{result:?}: {error}"),
            )],
        ),
        None => status::bad_request(format!(
            "{kind} in version {version:?} cannot be handled as a {kind}: {error}",
            kind = def.kind,
            version = def.version,
        )),
    };
    let unknown = match (&def.schema, &def.definition) {
        (Some(schema), _) => schema::prune(schema, body),
        // A built-in kind: decoded into its Go type, as upstream decodes it.
        (None, Some(definition)) if decode_builtins => match typed::decode(definition, body) {
            Ok(unknown) => {
                typed::convert(definition, body);
                defaults::apply(definition, body);
                unknown
            }
            Err(e) => return Err(undecodable(e, patching.then(|| body.to_string()))),
        },
        (None, _) => Vec::new(),
    };
    if strict && !unknown.is_empty() {
        let listed: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field {f:?}"))
            .collect();
        let error = format!("strict decoding error: {}", listed.join(", "));
        return Err(undecodable(error, strict_patch));
    }
    if let Some(warnings) = warnings.filter(|_| warn_unknown_fields) {
        // Upstream's `fieldValidation=Warn` (its default): a warning per field dropped.
        warnings
            .lock()
            .extend(unknown.iter().map(|f| format!("unknown field {f:?}")));
    }
    let Some(schema) = &def.schema else {
        return Ok(());
    };
    schema::apply_defaults(schema, body);
    let mut violations = schema::validate(schema, body);
    if rules::any_rules(schema) {
        // Upstream's `hasBlockingErr`: after these the rules are not run.
        let blocking = [
            "FieldValueNotSupported",
            "FieldValueRequired",
            "FieldValueTooLong",
            "FieldValueTooMany",
            "FieldValueTypeInvalid",
        ];
        if violations.iter().any(|v| blocking.contains(&v.1)) {
            violations.push((
                "<nil>".into(),
                "FieldValueInvalid",
                "null: some validation rules were not checked because the object was invalid; \
                 correct the existing errors to complete validation"
                    .into(),
            ));
        } else {
            let outcome = rules::check(schema, body, old);
            violations.extend(outcome.violations);
            if let Some(warnings) = warnings {
                warnings.lock().extend(outcome.warnings);
            }
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(status::invalid(&def.kind, &def.group, name, &violations))
    }
}

/// What the real server's round trip through the typed `ObjectMeta` does (built-in kinds
/// decode into it; custom resources' metadata is coerced through it): every field of
/// `ObjectMeta` is `omitempty`, so a null, an empty string, an empty list or map and a zero
/// generation are not stored (`finalizers: []` or `labels: {}` come back absent, and
/// `resourceVersion: ""` is no version at all). `deletionGracePeriodSeconds: 0` is a pointer
/// to zero and stays.
fn drop_empty_metadata(body: &mut Value) {
    let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    meta.retain(|field, value| match value {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(n) => !(field == "generation" && n.as_i64() == Some(0)),
        Value::Bool(_) => true,
    });
}

/// The decode errors the real server's typed decoding gives (400): metadata fields of the
/// wrong JSON type (`name: 5`, `labels: []`).
fn check_metadata(def: &ResourceDef, body: &Value) -> Result<(), Status> {
    let Some(meta) = body.get("metadata").and_then(Value::as_object) else {
        return Ok(());
    };
    for field in [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
    ] {
        match meta.get(field) {
            None | Some(Value::Null | Value::String(_)) => {}
            Some(other) => {
                return Err(decode_error(
                    def,
                    &format!("metadata.{field}"),
                    "string",
                    other,
                ));
            }
        }
    }
    match meta.get("generation") {
        None | Some(Value::Null) => {}
        Some(Value::Number(n)) if n.is_i64() => {}
        Some(other) => return Err(decode_error(def, "metadata.generation", "int64", other)),
    }
    for field in ["labels", "annotations"] {
        match meta.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                // Go's error context names struct fields only, not map keys.
                if let Some(v) = map.values().find(|v| !v.is_string()) {
                    return Err(decode_error(def, &format!("metadata.{field}"), "string", v));
                }
            }
            Some(other) => {
                return Err(decode_error(
                    def,
                    &format!("metadata.{field}"),
                    "map[string]string",
                    other,
                ));
            }
        }
    }
    validate_labels_and_annotations(def, meta)
}

/// The real server's rule for an object being deleted: its finalizers may be removed, not
/// added (422 Forbidden naming the new ones).
fn no_new_finalizers(
    def: &ResourceDef,
    name: &str,
    old: &Value,
    new: &Value,
) -> Result<(), Status> {
    let finalizers = |v: &Value| -> Vec<String> {
        super::object::string_list(v.pointer("/metadata/finalizers"))
    };
    let before = finalizers(old);
    // Sorted and deduplicated, as Go's string set lists them.
    let added: std::collections::BTreeSet<String> = finalizers(new)
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let go_list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
    Err(status::invalid(
        &def.kind,
        &def.group,
        name,
        &[(
            "metadata.finalizers".into(),
            "FieldValueForbidden",
            format!(
                "no new finalizers can be added if the object is being deleted, found new \
                 finalizers []string{{{}}}",
                go_list.join(", ")
            ),
        )],
    ))
}

/// Go's decoding error for `metadata` (`field` is `metadata` or one of its fields) holding
/// `got` where the type wants `want`, as the API server answers it for any kind.
fn decode_error(def: &ResourceDef, field: &str, want: &str, got: &Value) -> Status {
    let got = typed::go_kind(got);
    // The struct holding the field: the kind for `metadata` itself, else `ObjectMeta`.
    let holder = if field == "metadata" {
        def.kind.as_str()
    } else {
        "ObjectMeta"
    };
    status::bad_request(format!(
        "{kind} in version {version:?} cannot be handled as a {kind}: json: cannot unmarshal \
         {got} into Go struct field {holder}.{field} of type {want}",
        kind = def.kind,
        version = def.version,
    ))
}

/// The most annotation bytes (keys plus values) an object may carry, as on the real server.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Label keys and values, annotation keys and total annotation size, checked like the real
/// server's ObjectMeta validation (422 Invalid with one cause per problem).
fn validate_labels_and_annotations(
    def: &ResourceDef,
    meta: &serde_json::Map<String, Value>,
) -> Result<(), Status> {
    let mut causes: Vec<(String, &str, String)> = Vec::new();
    let entries = |field: &str| -> Vec<(String, String)> {
        meta.get(field)
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (k, v) in entries("labels") {
        if let Some(problem) = qualified_name_problem(&k) {
            causes.push((
                "metadata.labels".into(),
                "FieldValueInvalid",
                format!("{k:?}: {problem}"),
            ));
        }
        if let Some(problem) = label_value_problem(&v) {
            causes.push((
                "metadata.labels".into(),
                "FieldValueInvalid",
                format!("{v:?}: {problem}"),
            ));
        }
    }
    let annotations = entries("annotations");
    let mut total = 0usize;
    for (k, v) in &annotations {
        if let Some(problem) = qualified_name_problem(&k.to_ascii_lowercase()) {
            causes.push((
                "metadata.annotations".into(),
                "FieldValueInvalid",
                format!("{k:?}: {problem}"),
            ));
        }
        total += k.len() + v.len();
    }
    if total > MAX_ANNOTATIONS_BYTES {
        causes.push((
            "metadata.annotations".into(),
            "FieldValueTooLong",
            format!("may not be more than {MAX_ANNOTATIONS_BYTES} bytes"),
        ));
    }
    if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
        && generation < 0
    {
        causes.push((
            "metadata.generation".into(),
            "FieldValueInvalid",
            format!("{generation}: must be greater than or equal to 0"),
        ));
    }
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta.get("name").and_then(Value::as_str).unwrap_or_default();
    Err(status::invalid(&def.kind, &def.group, name, &causes))
}

/// Why `key` is not a qualified name (`[prefix/]name`, the name at most 63 characters of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric; the prefix a DNS
/// subdomain); `None` when it is one.
fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let subdomain = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && part.as_bytes()[0].is_ascii_alphanumeric()
                    && part.as_bytes()[part.len() - 1].is_ascii_alphanumeric()
            });
        if !subdomain {
            return Some(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case \
                 alphanumeric characters, '-' or '.', and must start and end with an \
                 alphanumeric character"
                    .into(),
            );
        }
    }
    if name.is_empty() {
        return Some("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Some("name part must be no more than 63 characters".into());
    }
    if !is_label_text(name) {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
             start and end with an alphanumeric character"
                .into(),
        );
    }
    None
}

/// Why `value` is not a valid label value (empty, or at most 63 characters like a name).
fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if value.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    if !is_label_text(value) {
        return Some(
            "a valid label must be an empty string or consist of alphanumeric characters, \
             '-', '_' or '.', and must start and end with an alphanumeric character"
                .into(),
        );
    }
    None
}

fn is_label_text(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn validate_name(def: &ResourceDef, name: &str) -> Result<(), Status> {
    let ok = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && name
            .as_bytes()
            .first()
            .is_some_and(u8::is_ascii_alphanumeric)
        && name
            .as_bytes()
            .last()
            .is_some_and(u8::is_ascii_alphanumeric);
    if ok {
        Ok(())
    } else {
        Err(status::invalid(
            &def.kind,
            &def.group,
            name,
            &[(
                "metadata.name".into(),
                "FieldValueInvalid",
                format!(
                    "{name:?}: a lowercase RFC 1123 subdomain must consist of lower case \
                     alphanumeric characters, '-' or '.', and must start and end with an \
                     alphanumeric character"
                ),
            )],
        ))
    }
}

//! [`ShardManager`]: the replicas of a sharded controller find each other through Leases and
//! split the hash space evenly, each driving the shard selectors of its informers.
//!
//! Each replica holds one `coordination.k8s.io/v1` Lease in a namespace the group shares,
//! labelled [`GROUP_LABEL`]`=<group>`, and renews it every
//! [`renew_period`](MembershipConfig::renew_period). It watches the group's Leases with an
//! informer (a label selector on a [`KubeListerWatcher`]) and feeds what it sees to
//! [`informer_core::membership::Membership`], the sans-IO view whose module docs hold the
//! rules: liveness by this replica's own clock, ranks by sorted identity, an even split of
//! `[0, 2^64)`, handovers that overlap. Each new [`Assignment`] sets the shard selector of
//! every informer the manager drives ([`ShardManager::drive`]), which relists with it (see
//! [`SharedIndexInformer::set_shard_selector`]). The API server is the only thing the
//! replicas share; nothing else sits between them.
//!
//! - A replica that stops renewing (crashed, partitioned) is dropped by each of the others a
//!   lease duration after they last saw its Lease change, and they take its range over at
//!   once: its objects are owned by none for at most the lease duration plus two relists
//!   (one when no list of theirs is in progress then).
//!   A lease duration later, the first replica to see the Lease still unchanged deletes it
//!   (guarded by the resourceVersion it saw), so that replicas starting later never count
//!   it.
//! - A replica that stops cleanly ([`ShardManager::run`] returning after its token fires)
//!   deletes its Lease, so that the others take over at once, then keeps going for the
//!   [`handover`](MembershipConfig::handover) before `run` returns: stop its informers
//!   after that, and its range is never owned by none.
//! - Identities must be unique in the group (a pod name). Lease names are
//!   `<group>-<identity>` unless
//!   [`ShardManagerConfig::lease_name`](ShardManagerConfig#structfield.lease_name) says
//!   otherwise.
//!
//! Request failures are retried every renew period (and counted in
//! [`ShardManagerStats`]); nothing a server answers stops the manager.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use informer::{InformerConfig, SharedIndexInformer};
//! use informer_kube::KubeListerWatcher;
//! use informer_kube::shard_manager::{ShardManager, ShardManagerConfig};
//! use k8s_openapi::api::core::v1::Pod;
//! use kube_client::Client;
//! use tokio_util::sync::CancellationToken;
//!
//! let client = Client::try_default().await?;
//! let identity = std::env::var("POD_NAME")?;
//! let manager = ShardManager::new(
//!     client.clone(),
//!     "my-controller-system",
//!     ShardManagerConfig::new("my-controller", identity),
//! )?;
//! let pods = SharedIndexInformer::new(
//!     Arc::new(KubeListerWatcher::<Pod>::all(client)),
//!     InformerConfig::default(),
//! )?;
//! manager.drive(&pods);
//!
//! let membership = CancellationToken::new();
//! let running = tokio::spawn({
//!     let (manager, stop) = (manager.clone(), membership.clone());
//!     async move { manager.run(stop).await }
//! });
//! // Start the informers once they know their shard.
//! let mine = manager.wait_for_assignment().await;
//! println!("replica {} of {}: {}", mine.rank, mine.count, mine.selector);
//! let informers = CancellationToken::new();
//! pods.spawn(informers.clone());
//! // ... run the controller; on shutdown, leave the group first, then stop the informers:
//! membership.cancel();
//! running.await??;
//! informers.cancel();
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer::reflector::ListWatchConfig;
use informer::{InformerConfig, InformerError, Object, SharedIndexInformer, handler};
use informer_core::leader_election::LeaseRecord;
use informer_core::membership::{Assignment, Membership, MembershipConfig, MembershipConfigError};
use informer_core::shard::ShardSelector;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{DeleteParams, PostParams, Preconditions};
use kube_client::{Api, Client};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::KubeListerWatcher;
use crate::leader_election::{now_text, parse_time, record_of};

/// The label every Lease of a group carries, with the group's name as its value.
pub const GROUP_LABEL: &str = "informer-rs.io/shard-group";

/// How a [`ShardManager`] is set up. Start from [`ShardManagerConfig::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardManagerConfig {
    /// The group's name: the value of [`GROUP_LABEL`] on its Leases (a label value: at most
    /// 63 characters, alphanumerics, `-`, `_`, `.`, starting and ending with an
    /// alphanumeric).
    pub group: String,
    /// This replica's identity and the group's durations and field (see
    /// [`MembershipConfig`]).
    pub membership: MembershipConfig,
    /// The name of this replica's Lease; `None`: `<group>-<identity>` (which must then be a
    /// valid object name: lowercase).
    pub lease_name: Option<String>,
    /// The timeout of each Lease request; `None`: the lease duration less the renew period
    /// (at least the renew period). A renewal answered late still keeps this replica in the
    /// group, so the default waits as long as one can help: an overloaded API server (every
    /// replica listing at once) then slows renewals down instead of failing them.
    pub request_timeout: Option<Duration>,
}

impl ShardManagerConfig {
    /// `identity` in `group`, with [`MembershipConfig::new`]'s defaults (sharded by uid,
    /// 15 s lease renewed every 5 s, 10 s handovers).
    pub fn new(group: impl Into<String>, identity: impl Into<String>) -> Self {
        Self {
            group: group.into(),
            membership: MembershipConfig::new(identity),
            lease_name: None,
            request_timeout: None,
        }
    }

    fn lease_name(&self) -> String {
        self.lease_name
            .clone()
            .unwrap_or_else(|| format!("{}-{}", self.group, self.membership.identity))
    }

    fn request_timeout(&self) -> Duration {
        let membership = &self.membership;
        self.request_timeout.unwrap_or_else(|| {
            membership
                .lease_duration
                .saturating_sub(membership.renew_period)
                .max(membership.renew_period)
        })
    }
}

/// A shard manager that cannot be built or run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShardManagerError {
    /// The durations or identity cannot work.
    #[error("invalid membership config for shard group {group:?}")]
    Config {
        /// The group.
        group: String,
        /// What is wrong.
        #[source]
        source: MembershipConfigError,
    },
    /// The group is not a label value.
    #[error(
        "the shard group {0:?} is not a valid label value (at most 63 characters: \
         alphanumerics, '-', '_', '.', starting and ending with an alphanumeric)"
    )]
    InvalidGroup(String),
    /// The Lease name is not an object name.
    #[error(
        "the lease name {0:?} is not a valid object name (at most 253 characters: lowercase \
         alphanumerics, '-', '.', starting and ending with an alphanumeric)"
    )]
    InvalidLeaseName(String),
    /// The informer on the group's Leases could not be built or run.
    #[error("the lease informer of shard group {group:?} failed")]
    Informer {
        /// The group.
        group: String,
        /// Why.
        #[source]
        source: InformerError,
    },
}

/// What a [`ShardManager`] has done so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShardManagerStats {
    /// Successful writes of this replica's Lease (creations included).
    pub renewals: u64,
    /// Failed or timed-out Lease requests (reads, writes, deletions).
    pub failures: u64,
    /// Assignments published (the first included).
    pub assignments: u64,
    /// Stale Leases of other replicas this one deleted.
    pub leases_collected: u64,
    /// The last failure, as text.
    pub last_error: Option<String>,
}

/// A callback told every new shard selector.
type Target = Arc<dyn Fn(&ShardSelector) + Send + Sync>;

/// One replica's membership of a sharded group (see the [module docs](self)). Cheap to
/// clone; clones share the manager.
#[derive(Clone)]
pub struct ShardManager {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    namespace: String,
    api: Api<Lease>,
    config: ShardManagerConfig,
    lease_name: String,
    targets: Mutex<Vec<Target>>,
    assignment: watch::Sender<Option<Assignment>>,
    stats: Mutex<ShardManagerStats>,
}

impl std::fmt::Debug for ShardManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardManager")
            .field("group", &self.inner.config.group)
            .field("identity", &self.inner.config.membership.identity)
            .field("namespace", &self.inner.namespace)
            .field("lease", &self.inner.lease_name)
            .finish_non_exhaustive()
    }
}

impl ShardManager {
    /// A manager for one replica, its Lease in `namespace`. Checks the config: durations
    /// (as [`MembershipConfig::validate`]), the group as a label value, the Lease name as an
    /// object name.
    pub fn new(
        client: Client,
        namespace: &str,
        config: ShardManagerConfig,
    ) -> Result<Self, ShardManagerError> {
        config
            .membership
            .validate()
            .map_err(|source| ShardManagerError::Config {
                group: config.group.clone(),
                source,
            })?;
        if !is_label_value(&config.group) || config.group.is_empty() {
            return Err(ShardManagerError::InvalidGroup(config.group));
        }
        let lease_name = config.lease_name();
        if !is_object_name(&lease_name) {
            return Err(ShardManagerError::InvalidLeaseName(lease_name));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                api: Api::namespaced(client.clone(), namespace),
                client,
                namespace: namespace.to_owned(),
                config,
                lease_name,
                targets: Mutex::new(Vec::new()),
                assignment: watch::Sender::new(None),
                stats: Mutex::new(ShardManagerStats::default()),
            }),
        })
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.inner.config.membership.identity
    }

    /// The name of this replica's Lease.
    pub fn lease_name(&self) -> &str {
        &self.inner.lease_name
    }

    /// The config.
    pub fn config(&self) -> &ShardManagerConfig {
        &self.inner.config
    }

    /// Sets `informer`'s shard selector to every new assignment's (at once if there is one
    /// already). Start the informer after [`wait_for_assignment`](Self::wait_for_assignment),
    /// or it lists everything before its first shard.
    pub fn drive<K: Object>(&self, informer: &SharedIndexInformer<K>) {
        let informer = informer.clone();
        self.drive_with(move |selector| {
            if let Err(error) = informer.set_shard_selector(Some(selector.clone())) {
                tracing::debug!(%error, "a driven informer has stopped");
            }
        });
    }

    /// Calls `target` with every new assignment's selector (at once if there is one
    /// already). It runs on the manager's task: it must not block.
    pub fn drive_with(&self, target: impl Fn(&ShardSelector) + Send + Sync + 'static) {
        let target: Target = Arc::new(target);
        if let Some(assignment) = self.inner.assignment.borrow().as_ref() {
            target(&assignment.selector);
        }
        self.inner.targets.lock().push(target);
    }

    /// The current assignment (`None` before the first).
    pub fn assignment(&self) -> Option<Assignment> {
        self.inner.assignment.borrow().clone()
    }

    /// A receiver of every new assignment.
    pub fn subscribe(&self) -> watch::Receiver<Option<Assignment>> {
        self.inner.assignment.subscribe()
    }

    /// Waits for the first assignment (at once if there is one): after [`run`](Self::run)
    /// has written this replica's Lease and seen the group's.
    pub async fn wait_for_assignment(&self) -> Assignment {
        let mut rx = self.subscribe();
        loop {
            if let Some(assignment) = rx.borrow_and_update().clone() {
                return assignment;
            }
            // The sender lives in `self`: `changed` fails only if it were dropped.
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// What the manager has done.
    pub fn stats(&self) -> ShardManagerStats {
        self.inner.stats.lock().clone()
    }

    /// Joins the group and keeps this replica's assignment up to date until `stop` fires;
    /// then deletes this replica's Lease and keeps going for the handover (so that the
    /// others have listed its range) before it returns. Fails only if the informer on the
    /// group's Leases cannot be built.
    pub async fn run(&self, stop: CancellationToken) -> Result<(), ShardManagerError> {
        let inner = &self.inner;
        let group = inner.config.group.clone();
        let informer_error = |source| ShardManagerError::Informer {
            group: group.clone(),
            source,
        };
        let lister_watcher =
            KubeListerWatcher::<Lease>::namespaced(inner.client.clone(), &inner.namespace);
        let leases = SharedIndexInformer::new(
            Arc::new(lister_watcher),
            InformerConfig {
                name: format!("shard-leases/{group}"),
                list_watch: ListWatchConfig {
                    label_selector: Some(format!("{GROUP_LABEL}={group}")),
                    ..ListWatchConfig::default()
                },
                ..InformerConfig::default()
            },
        )
        .map_err(informer_error)?;
        let (tx, rx) = mpsc::unbounded_channel();
        leases
            .add_handler(lease_handler(tx))
            .map_err(informer_error)?;
        let leases_stop = CancellationToken::new();
        let leases_task = leases.spawn(leases_stop.clone());
        let (registered, registered_rx) = watch::channel(false);
        let mut writer = Writer {
            manager: self,
            written: None,
            acquired: None,
            registered,
        };
        tokio::join!(
            writer.renew_until(&stop),
            self.follow(&leases, rx, registered_rx, &stop)
        );
        leases_stop.cancel();
        // The informer's result says nothing more than its own logs.
        let _ = leases_task.await;
        writer.leave().await;
        if !inner.config.membership.handover.is_zero() {
            tracing::info!(
                group = %inner.config.group,
                identity = %self.identity(),
                handover = ?inner.config.membership.handover,
                "left the group; working on for the handover"
            );
            tokio::time::sleep(inner.config.membership.handover).await;
        }
        Ok(())
    }

    /// Feeds the view with what the lease informer sees, wakes up at its deadlines, publishes
    /// new assignments, and deletes stale Leases; until `stop`.
    async fn follow(
        &self,
        leases: &SharedIndexInformer<Lease>,
        mut rx: mpsc::UnboundedReceiver<Seen>,
        mut registered: watch::Receiver<bool>,
        stop: &CancellationToken,
    ) {
        let inner = &self.inner;
        // Validated in `new`.
        let Ok(mut view) = Membership::new(inner.config.membership.clone()) else {
            return;
        };
        // The first assignment waits for the group's Leases, so that it is not "everything".
        tokio::select! {
            () = stop.cancelled() => return,
            synced = leases.wait_for_sync() => if !synced { return },
        }
        // Nor before this replica's own Lease exists: until then the others do not count it,
        // and whoever reads its Lease (an operator, a test) finds none.
        tokio::select! {
            () = stop.cancelled() => return,
            written = registered.wait_for(|written| *written) => if written.is_err() { return },
        }
        let mut collecting: BTreeMap<String, String> = BTreeMap::new();
        loop {
            while let Ok(seen) = rx.try_recv() {
                apply(&mut view, seen);
            }
            let now = now();
            if let Some(assignment) = view.update(now) {
                self.publish(assignment);
            }
            self.collect(&view, leases, &mut collecting, now);
            let deadline = view.next_deadline(now).map(Instant::from_std);
            tokio::select! {
                () = stop.cancelled() => return,
                seen = rx.recv() => match seen {
                    Some(seen) => apply(&mut view, seen),
                    None => return,
                },
                () = sleep_until(deadline) => {}
            }
        }
    }

    fn publish(&self, assignment: Assignment) {
        tracing::info!(
            group = %self.inner.config.group,
            identity = %self.identity(),
            rank = assignment.rank,
            count = assignment.count,
            selector = %assignment.selector,
            handing_over = assignment.handing_over(),
            "new shard assignment"
        );
        let selector = assignment.selector.clone();
        self.inner.assignment.send_replace(Some(assignment));
        self.inner.stats.lock().assignments += 1;
        let targets: Vec<Target> = self.inner.targets.lock().clone();
        for target in targets {
            target(&selector);
        }
    }

    /// Deletes the Leases the view found stale, each once per resourceVersion, guarded by
    /// that resourceVersion and uid (a Lease renewed meanwhile stays).
    fn collect(
        &self,
        view: &Membership,
        leases: &SharedIndexInformer<Lease>,
        attempted: &mut BTreeMap<String, String>,
        now: std::time::Instant,
    ) {
        let stale = view.stale(now);
        attempted.retain(|name, _| stale.contains(&name.as_str()));
        for name in stale {
            let Some(lease) = leases.lister().get(Some(&self.inner.namespace), name) else {
                continue;
            };
            let Some(rv) = lease.metadata.resource_version.clone() else {
                continue;
            };
            if attempted.get(name) == Some(&rv) {
                continue;
            }
            attempted.insert(name.to_owned(), rv.clone());
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    resource_version: Some(rv),
                    uid: lease.metadata.uid.clone(),
                }),
                ..DeleteParams::default()
            };
            let manager = self.clone();
            let name = name.to_owned();
            let timeout = self.inner.config.request_timeout();
            tokio::spawn(async move {
                let api = &manager.inner.api;
                match tokio::time::timeout(timeout, api.delete(&name, &params)).await {
                    Ok(Ok(_)) => {
                        tracing::info!(lease = %name, "deleted a stale lease of the group");
                        manager.inner.stats.lock().leases_collected += 1;
                    }
                    // Renewed or deleted meanwhile: nothing to do.
                    Ok(Err(kube_client::Error::Api(s))) if s.code == 409 || s.code == 404 => {}
                    Ok(Err(error)) => manager.failed(format!("deleting lease {name}: {error}")),
                    Err(_) => manager.failed(format!(
                        "deleting lease {name}: no answer within {timeout:?}"
                    )),
                }
            });
        }
    }

    fn failed(&self, message: String) {
        tracing::warn!(group = %self.inner.config.group, identity = %self.identity(), "{message}");
        let mut stats = self.inner.stats.lock();
        stats.failures += 1;
        stats.last_error = Some(message);
    }
}

/// What the lease informer saw.
enum Seen {
    Lease(String, LeaseRecord),
    Gone(String),
}

fn apply(view: &mut Membership, seen: Seen) {
    match seen {
        Seen::Lease(name, record) => view.observe(&name, record, now()),
        Seen::Gone(name) => view.forget(&name),
    }
}

fn lease_handler(tx: mpsc::UnboundedSender<Seen>) -> impl informer::ResourceEventHandler<Lease> {
    let seen = |lease: &Lease| {
        lease
            .metadata
            .name
            .clone()
            .map(|name| Seen::Lease(name, record_of(lease)))
    };
    let (on_add, on_update, on_delete) = (tx.clone(), tx.clone(), tx);
    handler()
        .on_add(move |lease: &Arc<Lease>, _| {
            if let Some(s) = seen(lease) {
                let _ = on_add.send(s);
            }
        })
        .on_update(move |_, lease: &Arc<Lease>| {
            if let Some(s) = seen(lease) {
                let _ = on_update.send(s);
            }
        })
        .on_delete(move |gone| {
            if let Some(name) = gone.object().metadata.name.clone() {
                let _ = on_delete.send(Seen::Gone(name));
            }
        })
}

/// This replica's Lease: created, renewed, deleted.
struct Writer<'a> {
    manager: &'a ShardManager,
    /// The Lease as last written or read (the base and resourceVersion of the next update).
    written: Option<Lease>,
    /// `acquireTime` of the first write.
    acquired: Option<String>,
    /// Set once the Lease is known to exist (created, found or renewed): the first
    /// assignment waits for it.
    registered: watch::Sender<bool>,
}

impl Writer<'_> {
    /// Writes the Lease every renew period (measured from the start of each write) until
    /// `stop`.
    async fn renew_until(&mut self, stop: &CancellationToken) {
        let period = self.manager.inner.config.membership.renew_period;
        loop {
            let started = Instant::now();
            tokio::select! {
                () = stop.cancelled() => return,
                () = self.renew() => {}
            }
            if self.written.is_some() {
                self.registered
                    .send_if_modified(|registered| !std::mem::replace(registered, true));
            }
            tokio::select! {
                () = stop.cancelled() => return,
                () = tokio::time::sleep_until(started + period) => {}
            }
        }
    }

    /// One renewal: an update guarded by the last resourceVersion; on a conflict or a missing
    /// Lease, read it (or create it) and try once more.
    async fn renew(&mut self) {
        for _ in 0..2 {
            if self.written.is_none() {
                match self.read().await {
                    Read::Found => {}
                    // A fresh Lease is a renewal in itself.
                    Read::Created | Read::Failed => return,
                }
            }
            match self.write().await {
                Ok(()) => return,
                Err(Retry::Again) => self.written = None,
                Err(Retry::Later) => return,
            }
        }
    }

    /// Reads the Lease into `written`; creates it when absent.
    async fn read(&mut self) -> Read {
        let inner = &self.manager.inner;
        let name = &inner.lease_name;
        let timeout = inner.config.request_timeout();
        match tokio::time::timeout(timeout, inner.api.get_opt(name)).await {
            Ok(Ok(Some(lease))) => {
                self.written = Some(lease);
                Read::Found
            }
            Ok(Ok(None)) => {
                let lease = self.lease(None);
                let params = PostParams::default();
                match tokio::time::timeout(timeout, inner.api.create(&params, &lease)).await {
                    Ok(Ok(created)) => {
                        self.written = Some(created);
                        self.manager.inner.stats.lock().renewals += 1;
                        Read::Created
                    }
                    // Created meanwhile (by a previous incarnation's retry): read it next time.
                    Ok(Err(kube_client::Error::Api(s))) if s.code == 409 => Read::Failed,
                    Ok(Err(error)) => {
                        self.manager
                            .failed(format!("creating lease {name}: {error}"));
                        Read::Failed
                    }
                    Err(_) => {
                        self.manager.failed(format!(
                            "creating lease {name}: no answer within {timeout:?}"
                        ));
                        Read::Failed
                    }
                }
            }
            Ok(Err(error)) => {
                self.manager
                    .failed(format!("reading lease {name}: {error}"));
                Read::Failed
            }
            Err(_) => {
                self.manager.failed(format!(
                    "reading lease {name}: no answer within {timeout:?}"
                ));
                Read::Failed
            }
        }
    }

    /// Replaces the Lease with a fresh record, guarded by the resourceVersion read or
    /// written last.
    async fn write(&mut self) -> Result<(), Retry> {
        let inner = &self.manager.inner;
        let name = &inner.lease_name;
        let timeout = inner.config.request_timeout();
        let base = self.written.take();
        let lease = self.lease(base.as_ref());
        self.written = base;
        let params = PostParams::default();
        let sent = inner.api.replace(name, &params, &lease);
        match tokio::time::timeout(timeout, sent).await {
            Ok(Ok(written)) => {
                self.written = Some(written);
                inner.stats.lock().renewals += 1;
                Ok(())
            }
            Ok(Err(kube_client::Error::Api(s))) if s.code == 409 || s.code == 404 => {
                tracing::debug!(
                    lease = %name,
                    code = s.code,
                    "lease changed or gone; reading it again"
                );
                Err(Retry::Again)
            }
            Ok(Err(error)) => {
                self.manager
                    .failed(format!("renewing lease {name}: {error}"));
                Err(Retry::Later)
            }
            Err(_) => {
                self.manager.failed(format!(
                    "renewing lease {name}: no answer within {timeout:?}"
                ));
                Err(Retry::Later)
            }
        }
    }

    /// The Lease to write: `base`'s metadata (its resourceVersion guards the update), the
    /// group label, and this replica's record stamped now.
    fn lease(&mut self, base: Option<&Lease>) -> Lease {
        let inner = &self.manager.inner;
        let stamp = now_text();
        let acquired = self.acquired.get_or_insert_with(|| stamp.clone()).clone();
        let view_config = &inner.config.membership;
        let record = LeaseRecord {
            holder_identity: Some(view_config.identity.clone()),
            lease_duration_seconds: Some(view_config.lease_duration_seconds()),
            acquire_time: Some(acquired),
            renew_time: Some(stamp),
            ..LeaseRecord::default()
        };
        let mut metadata = base
            .map(|l| l.metadata.clone())
            .unwrap_or_else(|| ObjectMeta {
                name: Some(inner.lease_name.clone()),
                ..ObjectMeta::default()
            });
        metadata.managed_fields = None;
        metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(GROUP_LABEL.to_owned(), inner.config.group.clone());
        Lease {
            metadata,
            spec: Some(LeaseSpec {
                holder_identity: record.holder_identity,
                lease_duration_seconds: record.lease_duration_seconds,
                acquire_time: record.acquire_time.as_deref().and_then(parse_time),
                renew_time: record.renew_time.as_deref().and_then(parse_time),
                ..LeaseSpec::default()
            }),
        }
    }

    /// Deletes the Lease (guarded by the last resourceVersion written), so that the others
    /// take over at once. A conflict means the Lease changed since: a renewal the stop cut
    /// short after the server had applied it. The Lease is read again and, while it is still
    /// this replica's, deleted under its new resourceVersion (once more at most).
    async fn leave(&mut self) {
        let inner = &self.manager.inner;
        let name = &inner.lease_name;
        let timeout = inner.config.request_timeout();
        for attempt in 0..2 {
            let params = DeleteParams {
                preconditions: self.written.as_ref().map(|lease| Preconditions {
                    resource_version: lease.metadata.resource_version.clone(),
                    uid: lease.metadata.uid.clone(),
                }),
                ..DeleteParams::default()
            };
            let error = match tokio::time::timeout(timeout, inner.api.delete(name, &params)).await {
                Ok(Ok(_)) => {
                    tracing::info!(lease = %name, "deleted this replica's lease");
                    return;
                }
                Ok(Err(kube_client::Error::Api(s))) if s.code == 404 => return,
                Ok(Err(kube_client::Error::Api(s))) if s.code == 409 && attempt == 0 => {
                    match tokio::time::timeout(timeout, inner.api.get_opt(name)).await {
                        Ok(Ok(Some(lease))) if self.holds(&lease) => {
                            self.written = Some(lease);
                            continue;
                        }
                        // Gone, or no longer ours: nothing of ours to delete.
                        Ok(Ok(_)) => return,
                        Ok(Err(error)) => format!("reading lease {name} again: {error}"),
                        Err(_) => {
                            format!("reading lease {name} again: no answer within {timeout:?}")
                        }
                    }
                }
                Ok(Err(error)) => format!("deleting lease {name}: {error}"),
                Err(_) => format!("deleting lease {name}: no answer within {timeout:?}"),
            };
            self.manager.failed(error);
            return;
        }
    }

    /// Whether `lease` names this replica as its holder.
    fn holds(&self, lease: &Lease) -> bool {
        lease
            .spec
            .as_ref()
            .and_then(|spec| spec.holder_identity.as_deref())
            == Some(self.manager.identity())
    }
}

/// What reading the Lease gave.
enum Read {
    /// It exists: `written` holds it.
    Found,
    /// It did not: it was created (a renewal).
    Created,
    /// The request failed (reported).
    Failed,
}

/// What to do after a failed write.
enum Retry {
    /// Read the Lease (or create it) and write again now.
    Again,
    /// Wait for the next renewal.
    Later,
}

/// The current instant on tokio's clock, as the view takes it.
fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// A label value: at most 63 characters, alphanumerics, `-`, `_`, `.`, starting and ending
/// with an alphanumeric (empty is a valid label value, not a valid group).
fn is_label_value(text: &str) -> bool {
    text.len() <= 63
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// An object name (a DNS subdomain): at most 253 characters, lowercase alphanumerics, `-`,
/// `.`, starting and ending with an alphanumeric.
fn is_object_name(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_as_the_server_checks_them() {
        assert!(is_label_value("my-controller.v2"));
        assert!(!is_label_value("-x"));
        assert!(!is_label_value(&"a".repeat(64)));
        assert!(!is_label_value("a/b"));
        assert!(is_object_name("group-pod-0"));
        assert!(!is_object_name("Group-pod-0"));
        assert!(!is_object_name("pod_0"));
        assert!(!is_object_name(""));
    }

    #[test]
    fn configs_default_the_lease_name_and_timeout() {
        let config = ShardManagerConfig::new("sharded", "pod-1");
        assert_eq!(config.lease_name(), "sharded-pod-1");
        assert_eq!(config.request_timeout(), Duration::from_secs(10));
        let mut short = config.clone();
        short.membership.lease_duration = Duration::from_secs(3);
        short.membership.renew_period = Duration::from_secs(2);
        assert_eq!(short.request_timeout(), Duration::from_secs(2));
    }
}

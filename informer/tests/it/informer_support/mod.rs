//! Shared tools of the informer scenario tests: a recording handler whose notifications can be
//! awaited and folded back into a state, and a rig over the in-process fake API server.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    InformerConfig, Notification, Object, ObjectOrTombstone, ResourceEventHandler,
    SharedIndexInformer, ShutdownReport,
};
use informer_testing::JsonObject;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::support::GUARD;
pub use crate::support::{NS, RESOURCE};

/// One notification as a handler saw it.
#[derive(Clone, PartialEq, Eq)]
pub enum Seen {
    Add {
        key: String,
        rv: String,
        uid: String,
        initial: bool,
    },
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
        new_uid: String,
    },
    Delete {
        key: String,
        rv: String,
        uid: String,
        tombstone: bool,
    },
}

impl Seen {
    pub fn key(&self) -> &str {
        match self {
            Self::Add { key, .. } | Self::Update { key, .. } | Self::Delete { key, .. } => key,
        }
    }

    /// An update with equal resourceVersions (a resync).
    pub fn is_sync(&self) -> bool {
        matches!(self, Self::Update { old_rv, new_rv, .. } if old_rv == new_rv)
    }

    pub fn from_notification(n: &Notification<JsonObject>) -> Self {
        match n {
            Notification::Add {
                object,
                is_in_initial_list,
            } => Self::Add {
                key: key(object),
                rv: rv(object),
                uid: uid(object),
                initial: *is_in_initial_list,
            },
            Notification::Update { old, new } => Self::Update {
                key: key(new),
                old_rv: rv(old),
                new_rv: rv(new),
                new_uid: uid(new),
            },
            Notification::Delete(obj) => Self::Delete {
                key: obj.key().map(|k| k.to_string()).unwrap_or_default(),
                rv: rv(obj.object()),
                uid: uid(obj.object()),
                tombstone: obj.is_tombstone(),
            },
        }
    }
}

impl fmt::Debug for Seen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Add {
                key,
                rv,
                uid,
                initial,
            } => write!(
                f,
                "Add({key}@{rv} uid={uid}{})",
                if *initial { " initial" } else { "" }
            ),
            Self::Update {
                key,
                old_rv,
                new_rv,
                ..
            } => write!(f, "Update({key}@{old_rv}->{new_rv})"),
            Self::Delete {
                key,
                rv,
                uid,
                tombstone,
            } => write!(
                f,
                "Delete({key}@{rv} uid={uid}{})",
                if *tombstone { " tombstone" } else { "" }
            ),
        }
    }
}

pub fn key(o: &JsonObject) -> String {
    informer::key_of(o).unwrap().to_string()
}

pub fn rv(o: &JsonObject) -> String {
    o.object_resource_version().unwrap_or_default().to_owned()
}

pub fn uid(o: &JsonObject) -> String {
    o.object_uid().unwrap_or_default().to_owned()
}

/// What a handler saw, awaitable.
#[derive(Clone)]
pub struct Log {
    seen: Arc<Mutex<Vec<Seen>>>,
    count: Arc<watch::Sender<usize>>,
}

impl Default for Log {
    fn default() -> Self {
        Self {
            seen: Arc::default(),
            count: Arc::new(watch::Sender::new(0)),
        }
    }
}

impl Log {
    pub fn push(&self, seen: Seen) {
        let len = {
            let mut all = self.seen.lock();
            all.push(seen);
            all.len()
        };
        self.count.send_replace(len);
    }

    /// A handler recording into this log.
    pub fn handler(&self) -> Recorder {
        Recorder {
            log: self.clone(),
            gate: None,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    pub fn len(&self) -> usize {
        self.seen.lock().len()
    }

    /// Waits (on notifications, not on time) until `condition` holds over what was seen;
    /// panics after an hour of virtual time.
    pub async fn wait_until(&self, what: &str, condition: impl Fn(&[Seen]) -> bool) {
        let mut rx = self.count.subscribe();
        let waited = tokio::time::timeout(Duration::from_secs(3600), async {
            loop {
                rx.borrow_and_update();
                if condition(&self.seen.lock()) {
                    return;
                }
                rx.changed().await.unwrap();
            }
        })
        .await;
        if waited.is_err() {
            panic!("never happened: {what}; seen: {:?}", self.seen());
        }
    }

    pub async fn wait_for_len(&self, n: usize) {
        self.wait_until(&format!("{n} notifications"), |s| s.len() >= n)
            .await;
    }

    /// Folds the notifications into `key → (resourceVersion, uid)`, checking that they follow
    /// each object's life: no add of a present key, no update or delete of an absent one.
    pub fn fold(&self) -> Result<BTreeMap<String, (String, String)>, String> {
        fold(&self.seen())
    }
}

pub fn fold(seen: &[Seen]) -> Result<BTreeMap<String, (String, String)>, String> {
    let mut state = BTreeMap::new();
    for (i, s) in seen.iter().enumerate() {
        match s {
            Seen::Add { key, rv, uid, .. } => {
                if state
                    .insert(key.clone(), (rv.clone(), uid.clone()))
                    .is_some()
                {
                    return Err(format!("#{i} {s:?}: add of a key already present"));
                }
            }
            Seen::Update {
                key,
                new_rv,
                new_uid,
                ..
            } => {
                if state
                    .insert(key.clone(), (new_rv.clone(), new_uid.clone()))
                    .is_none()
                {
                    return Err(format!("#{i} {s:?}: update of an absent key"));
                }
            }
            Seen::Delete { key, .. } => {
                if state.remove(key).is_none() {
                    return Err(format!("#{i} {s:?}: delete of an absent key"));
                }
            }
        }
    }
    Ok(state)
}

/// A handler that records into a [`Log`], optionally waiting at a gate before each call.
pub struct Recorder {
    log: Log,
    gate: Option<Arc<Gate>>,
}

impl Recorder {
    /// Blocks the calling thread at `gate` before recording each notification (use with
    /// `Delivery::Thread`).
    pub fn gated(mut self, gate: Arc<Gate>) -> Self {
        self.gate = Some(gate);
        self
    }

    fn record(&mut self, n: Notification<JsonObject>) {
        if let Some(gate) = &self.gate {
            gate.pass();
        }
        self.log.push(Seen::from_notification(&n));
    }
}

impl ResourceEventHandler<JsonObject> for Recorder {
    fn on_add(&mut self, obj: &Arc<JsonObject>, is_in_initial_list: bool) {
        self.record(Notification::Add {
            object: Arc::clone(obj),
            is_in_initial_list,
        });
    }

    fn on_update(&mut self, old: &Arc<JsonObject>, new: &Arc<JsonObject>) {
        self.record(Notification::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        });
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<JsonObject>) {
        self.record(Notification::Delete(obj.clone()));
    }
}

/// A gate that blocks threads until opened (for handlers on `Delivery::Thread`).
#[derive(Default)]
pub struct Gate {
    open: std::sync::Mutex<bool>,
    cond: std::sync::Condvar,
}

impl Gate {
    pub fn pass(&self) {
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.cond.wait(open).unwrap();
        }
    }

    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cond.notify_all();
    }
}

/// The fake server's objects of `RESOURCE` in `NS` as `key → (resourceVersion, uid)`.
pub fn server_state(server: &FakeApiServer) -> BTreeMap<String, (String, String)> {
    server
        .objects(RESOURCE, Some(NS))
        .unwrap()
        .iter()
        .map(|o| {
            (
                format!("{NS}/{}", o.name()),
                (o.resource_version().to_string(), o.uid().to_owned()),
            )
        })
        .collect()
}

/// The informer's cache as `key → (resourceVersion, uid)`.
pub fn cache_state(
    informer: &SharedIndexInformer<JsonObject>,
) -> BTreeMap<String, (String, String)> {
    informer
        .lister()
        .list_all()
        .iter()
        .map(|o| (key(o), (rv(o), uid(o))))
        .collect()
}

pub fn cm(name: &str) -> JsonObject {
    JsonObject::new(Some(NS), name)
}

/// An informer over `RESOURCE` in `NS` of `server`, with a fixed reflector seed.
pub fn informer(
    server: &FakeApiServer,
    mut config: InformerConfig<JsonObject>,
) -> SharedIndexInformer<JsonObject> {
    let lw = Arc::new(
        server
            .lister_watcher::<JsonObject>(RESOURCE, Some(NS))
            .unwrap(),
    );
    if config.name.is_empty() {
        config.name = RESOURCE.into();
    }
    config.seed = Some(7);
    SharedIndexInformer::new(lw, config).unwrap()
}

/// A running informer.
pub struct Running {
    pub informer: SharedIndexInformer<JsonObject>,
    pub stop: CancellationToken,
    pub task: tokio::task::JoinHandle<Result<ShutdownReport, informer::InformerError>>,
}

impl Running {
    pub fn start(informer: &SharedIndexInformer<JsonObject>) -> Self {
        let stop = CancellationToken::new();
        let task = informer.spawn(stop.clone());
        Self {
            informer: informer.clone(),
            stop,
            task,
        }
    }

    /// Waits until the informer has synced and its watch is open on `server`.
    pub async fn synced(&self, server: &FakeApiServer) {
        assert!(
            tokio::time::timeout(GUARD, self.informer.wait_for_sync())
                .await
                .unwrap()
        );
        self.watching(server).await;
    }

    /// Waits until one watch is open on `server`.
    pub async fn watching(&self, server: &FakeApiServer) {
        tokio::time::timeout(GUARD, server.wait_for_open_watches(RESOURCE, 1))
            .await
            .unwrap();
    }

    pub async fn stop(self) -> ShutdownReport {
        self.stop.cancel();
        self.task.await.unwrap().unwrap()
    }
}

/// Waits for a condition that a real thread (a handler on `Delivery::Thread`) makes true,
/// keeping the runtime busy meanwhile: paused time auto-advances only when the runtime is idle,
/// so virtual time stands still while the thread works. Panics after a minute of real time
/// (a hang guard, not a timing assertion).
pub async fn spin_until(what: &str, mut condition: impl FnMut() -> bool) {
    let started = std::time::Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never happened: {what}"
        );
        tokio::task::yield_now().await;
    }
}

/// Keeps the runtime busy (virtual time still) until the returned guard is dropped; see
/// [`spin_until`].
pub fn hold_time() -> HoldTime {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let task = tokio::spawn({
        let done = Arc::clone(&done);
        async move {
            spin_until("the time hold to end", || {
                done.load(std::sync::atomic::Ordering::Acquire)
            })
            .await;
        }
    });
    HoldTime { done, task }
}

/// See [`hold_time`].
pub struct HoldTime {
    done: Arc<std::sync::atomic::AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl HoldTime {
    pub async fn release(self) {
        self.done.store(true, std::sync::atomic::Ordering::Release);
        self.task.await.unwrap();
    }
}

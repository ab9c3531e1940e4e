//! The fixtures every test module shares: the HTTP fake API server with a kube client pointed
//! at it ([`Env`], the one place that sets them up), a handler that checks what informers tell
//! against a model, an error recorder, and convergence waits (event-driven, with generous
//! real-time guards against hangs; never a timing assertion). [`controller`] adds the sample
//! controller's helpers, [`hostile`] the misbehaving server.

pub mod controller;
pub mod hostile;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use informer::reflector::{FailureContext, Stage, WatchErrorHandler};
use informer::{ErrorClass, Object, ObjectOrTombstone, ResourceEventHandler, SharedIndexInformer};
use informer_kube::{KubeInformerFactory, client_for_informers};
use kube_client::Client;
use parking_lot::Mutex;
use tokio::sync::watch;

/// The longest any wait of these tests may take before it fails: far above what a loaded CI
/// machine needs, only there so that a bug fails the test instead of hanging it.
pub const GUARD: Duration = Duration::from_secs(120);

/// A kube client for informers ([`client_for_informers`]) at `url`, a plain-HTTP server of
/// these tests.
pub fn client(url: &str) -> Result<Client, String> {
    let parsed = url
        .parse()
        .map_err(|e| format!("the server's URL {url}: {e}"))?;
    client_for_informers(kube_client::Config::new(parsed))
        .map_err(|e| format!("a kube client: {e}"))
}

/// An HTTP fake API server on a free loopback port and a kube client for it.
pub struct Env {
    pub engine: FakeApiServer,
    pub http: FakeHttpServer,
    pub client: Client,
}

impl Env {
    /// A fresh engine behind the HTTP front end.
    pub async fn start() -> Self {
        Self::with_engine(FakeApiServer::new())
            .await
            .expect("the HTTP fake server and a client")
    }

    /// `engine` (seeded or configured by the caller) behind the HTTP front end. Errors are
    /// text, for callers that report instead of panicking (the HTTP chaos transport).
    pub async fn with_engine(engine: FakeApiServer) -> Result<Self, String> {
        let http = FakeHttpServer::start(engine.clone(), HttpConfig::default())
            .await
            .map_err(|e| format!("starting the HTTP fake server: {e}"))?;
        let client = client(&http.url())?;
        Ok(Self {
            engine,
            http,
            client,
        })
    }

    pub fn factory(&self) -> KubeInformerFactory {
        KubeInformerFactory::new(self.client.clone())
    }

    /// The server's objects of `resource` in `namespace` as key → (resourceVersion, uid).
    pub fn server_state(&self, resource: &str, namespace: Option<&str>) -> State {
        server_state(&self.engine, resource, namespace)
    }
}

/// key → (resourceVersion, uid).
pub type State = BTreeMap<String, (String, String)>;

/// Seeds `engine` with `pods` realistic pods over `namespaces` namespaces (the seed's other
/// settings at their defaults).
pub fn seed_pods(engine: &FakeApiServer, namespaces: usize, pods: usize) {
    fake_apiserver::seed::seed(
        engine,
        &fake_apiserver::seed::SeedConfig {
            namespaces,
            pods,
            ..fake_apiserver::seed::SeedConfig::default()
        },
    )
    .expect("seeding the fake server");
}

/// The objects of `resource` in `namespace` that `engine` holds, as key → (resourceVersion,
/// uid).
pub fn server_state(engine: &FakeApiServer, resource: &str, namespace: Option<&str>) -> State {
    engine
        .objects(resource, namespace)
        .expect("server objects")
        .iter()
        .map(|o| {
            (
                o.key().to_owned(),
                (o.resource_version().to_string(), o.uid().to_owned()),
            )
        })
        .collect()
}

/// What an informer's cache holds, as key → (resourceVersion, uid).
pub fn cache_state<K: Object>(informer: &SharedIndexInformer<K>) -> State {
    informer
        .lister()
        .list_all()
        .iter()
        .map(|o| key_and_state(o.as_ref()))
        .collect()
}

/// Waits (at most [`GUARD`]) until the informer has synced; fails if it stopped first.
pub async fn synced<K: Object>(informer: &SharedIndexInformer<K>) {
    let synced = tokio::time::timeout(GUARD, informer.wait_for_sync()).await;
    assert!(
        matches!(synced, Ok(true)),
        "{} did not sync",
        informer.name()
    );
}

/// Waits (at most [`GUARD`]) until a handler has handled every initial-list notification:
/// what it hears after that is live. (The informer's own sync does not wait for handlers.)
pub async fn handler_synced(registration: &informer::Registration) {
    let synced = tokio::time::timeout(GUARD, registration.wait_for_sync()).await;
    assert!(
        matches!(synced, Ok(true)),
        "handler {} did not sync",
        registration.name()
    );
}

/// The state handlers were told about, rebuilt from notifications, and every notification that
/// contradicts it (an update or delete of an unknown object, an add of a live one).
#[derive(Debug, Default)]
pub struct Model {
    pub live: State,
    /// (key, uid) → how many deletes were delivered.
    pub deletes: BTreeMap<(String, String), u32>,
    pub violations: Vec<String>,
    pub adds: u64,
    pub updates: u64,
    pub initial_adds: u64,
}

/// A handler that keeps a [`Model`]; `bump` ticks on every notification.
pub struct ModelHandler {
    pub model: Arc<Mutex<Model>>,
    pub bump: Arc<watch::Sender<u64>>,
}

fn key_and_state<K: Object>(o: &K) -> (String, (String, String)) {
    let key = match o.object_namespace() {
        Some(ns) => format!("{ns}/{}", o.object_name().unwrap_or_default()),
        None => o.object_name().unwrap_or_default().to_owned(),
    };
    (
        key,
        (
            o.object_resource_version().unwrap_or_default().to_owned(),
            o.object_uid().unwrap_or_default().to_owned(),
        ),
    )
}

impl<K: Object> ResourceEventHandler<K> for ModelHandler {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        let (key, state) = key_and_state(obj.as_ref());
        let mut m = self.model.lock();
        m.adds += 1;
        if is_in_initial_list {
            m.initial_adds += 1;
        }
        if let Some(old) = m.live.insert(key.clone(), state) {
            m.violations
                .push(format!("add of live {key} (was {old:?})"));
        }
        drop(m);
        self.bump.send_modify(|n| *n += 1);
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        let (key, state) = key_and_state(new.as_ref());
        let mut m = self.model.lock();
        m.updates += 1;
        let known = m.live.get(&key).cloned();
        match known {
            Some(known)
                if known.1 == state.1
                    && Some(known.0.as_str()) == old.object_resource_version() => {}
            other => {
                let message = format!(
                    "update of {key}: model has {other:?}, old rv {:?}",
                    old.object_resource_version()
                );
                m.violations.push(message);
            }
        }
        m.live.insert(key, state);
        drop(m);
        self.bump.send_modify(|n| *n += 1);
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<K>) {
        let (key, state) = key_and_state(obj.object().as_ref());
        let mut m = self.model.lock();
        if m.live.remove(&key).is_none() {
            m.violations.push(format!("delete of unknown {key}"));
        }
        *m.deletes.entry((key, state.1)).or_default() += 1;
        drop(m);
        self.bump.send_modify(|n| *n += 1);
    }
}

impl ModelHandler {
    pub fn new() -> (Self, Arc<Mutex<Model>>, watch::Receiver<u64>) {
        let model = Arc::new(Mutex::new(Model::default()));
        let (tx, rx) = watch::channel(0);
        (
            Self {
                model: Arc::clone(&model),
                bump: Arc::new(tx),
            },
            model,
            rx,
        )
    }
}

/// Waits until `done()` holds, re-checking on every tick of `changes` (and every 100 ms, for
/// conditions that become true without a notification). Panics with `describe()` after
/// [`GUARD`].
pub async fn wait_until(
    what: &str,
    mut changes: Option<watch::Receiver<u64>>,
    mut done: impl FnMut() -> bool,
    describe: impl Fn() -> String,
) {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        if done() {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("gave up waiting for {what}: {}", describe());
        }
        let tick = tokio::time::sleep(Duration::from_millis(100));
        match changes.as_mut() {
            Some(rx) => {
                tokio::select! {
                    _ = rx.changed() => {}
                    () = tick => {}
                }
            }
            None => tick.await,
        }
    }
}

/// Waits until the informer's cache equals the server's objects (same keys, resourceVersions
/// and UIDs).
pub async fn converge<K: Object>(
    env: &Env,
    informer: &SharedIndexInformer<K>,
    resource: &str,
    namespace: Option<&str>,
    changes: Option<watch::Receiver<u64>>,
) {
    wait_until(
        "the cache to equal the server",
        changes,
        || cache_state(informer) == env.server_state(resource, namespace),
        || {
            diff(
                &cache_state(informer),
                &env.server_state(resource, namespace),
            )
        },
    )
    .await;
}

/// A short description of how two states differ.
pub fn diff(cache: &State, server: &State) -> String {
    let missing: Vec<&String> = server
        .keys()
        .filter(|k| !cache.contains_key(*k))
        .take(5)
        .collect();
    let extra: Vec<&String> = cache
        .keys()
        .filter(|k| !server.contains_key(*k))
        .take(5)
        .collect();
    let stale: Vec<&String> = server
        .iter()
        .filter(|(k, v)| cache.get(*k).is_some_and(|c| c != *v))
        .map(|(k, _)| k)
        .take(5)
        .collect();
    format!(
        "cache {} objects, server {}; missing {missing:?}, extra {extra:?}, stale {stale:?}",
        cache.len(),
        server.len()
    )
}

/// One failure the reflector reported.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub stage: Stage,
    pub class: ErrorClass,
    /// The delay the error asks for, as the reflector classifies it.
    #[allow(dead_code, reason = "no test asserts on it; failure messages show it")]
    pub retry_after: Option<Duration>,
    /// The `Retry-After` header, as the lister-watcher read it.
    pub header_retry_after: Option<Duration>,
    pub message: String,
    pub is_decode_with_excerpt: bool,
}

/// Records the reflector's failures; `wait_for` waits for one matching a predicate.
#[derive(Clone)]
pub struct Errors {
    tx: Arc<watch::Sender<Vec<Recorded>>>,
}

impl Errors {
    pub fn new() -> Self {
        Self {
            tx: Arc::new(watch::channel(Vec::new()).0),
        }
    }

    pub fn handler(&self) -> WatchErrorHandler {
        let tx = Arc::clone(&self.tx);
        Arc::new(
            move |error: &informer::Error, context: &FailureContext<'_>| {
                let is_decode_with_excerpt = matches!(
                    error,
                    informer::Error::Decode { line_excerpt, .. } if !line_excerpt.is_empty()
                );
                let recorded = Recorded {
                    stage: context.stage,
                    class: error.class(),
                    retry_after: error.retry_after(),
                    header_retry_after: match error {
                        informer::Error::Api { retry_after, .. } => *retry_after,
                        _ => None,
                    },
                    message: error.to_string(),
                    is_decode_with_excerpt,
                };
                tx.send_modify(|v| v.push(recorded));
            },
        )
    }

    pub fn all(&self) -> Vec<Recorded> {
        self.tx.borrow().clone()
    }

    pub async fn wait_for(&self, what: &str, pred: impl Fn(&Recorded) -> bool) -> Recorded {
        let mut rx = self.tx.subscribe();
        let waited = tokio::time::timeout(GUARD, rx.wait_for(|v| v.iter().any(&pred))).await;
        match waited {
            Ok(Ok(v)) => v.iter().find(|r| pred(r)).cloned().expect("matched"),
            _ => panic!("no {what} reported; got {:?}", self.all()),
        }
    }
}

/// Watches the informer's reflector has started (successful watch requests).
pub fn watch_starts<K: Object>(informer: &SharedIndexInformer<K>) -> u64 {
    informer
        .stats()
        .reflector
        .map_or(0, |r| r.counters.watch_starts)
}

/// Waits until the reflector has started at least `count` watches: with a count one above
/// the starts before the last disruption, the watch open now on the server is the live one
/// (the server may still count the abandoned connection as an open watch for a while).
pub async fn watching<K: Object>(informer: &SharedIndexInformer<K>, count: u64) -> u64 {
    wait_until(
        "a watch to start",
        None,
        || watch_starts(informer) >= count,
        || format!("{:?}", informer.stats()),
    )
    .await;
    watch_starts(informer)
}

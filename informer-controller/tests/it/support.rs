//! What every test module shares: the in-process fake server with a factory of `JsonObject`
//! informers over it ([`Env`]), a reconcile that records what it was called with
//! ([`Calls`]), and waits on a controller's counts bounded by [`GUARD`].

use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use informer::{
    FactoryConfig, InformerFactory, InformerSpec, ListerWatcher, ProviderError, SharedIndexInformer,
};
use informer_controller::{ControllerHandle, ControllerStats, ObjectState};
use informer_testing::JsonObject;
use parking_lot::Mutex;

/// The longest any wait may take before the test fails. In virtual time a hang jumps to it
/// at once; on the real clock it is far above what a loaded machine needs.
pub const GUARD: Duration = Duration::from_secs(120);

/// The factory's provider type: lister-watchers of the in-process fake server.
pub type Provider = Box<
    dyn Fn(&InformerSpec) -> Result<Arc<dyn ListerWatcher<JsonObject>>, ProviderError>
        + Send
        + Sync,
>;

/// A fake API server and a factory of `JsonObject` informers over it.
pub struct Env {
    pub server: FakeApiServer,
    pub factory: InformerFactory<Provider>,
}

impl Env {
    pub fn new() -> Self {
        Self::with_config(FactoryConfig::default())
    }

    /// An environment whose factory starts every informer from `config`.
    pub fn with_config(config: FactoryConfig) -> Self {
        let server = FakeApiServer::new();
        let lw = server.clone();
        let provider: Provider = Box::new(move |spec: &InformerSpec| {
            let lister_watcher = lw
                .lister_watcher::<JsonObject>(&spec.resource, spec.namespace.as_deref())
                .map_err(|status| status.to_string())?;
            Ok(Arc::new(lister_watcher) as Arc<dyn ListerWatcher<JsonObject>>)
        });
        Self {
            server,
            factory: InformerFactory::new(provider, config),
        }
    }

    /// The factory's informer of `resource` in all namespaces.
    pub fn informer(&self, resource: &str) -> SharedIndexInformer<JsonObject> {
        self.factory
            .informer::<JsonObject>(InformerSpec::new(resource))
            .unwrap()
    }

    /// Creates `prod/<name>` of `resource`; returns its UID.
    pub fn create(&self, resource: &str, name: &str) -> String {
        self.server
            .create(resource, &JsonObject::new(Some("prod"), name))
            .unwrap()
            .uid()
            .to_owned()
    }

    /// Sets a label on `prod/<name>` (a new resourceVersion).
    pub fn touch(&self, resource: &str, name: &str, value: &str) {
        self.server
            .patch(
                resource,
                Some("prod"),
                name,
                &serde_json::json!({"metadata": {"labels": {"touched": value}}}),
            )
            .unwrap();
    }
}

/// One reconcile as the reconcile function saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    pub key: String,
    pub state: ObjectState,
    pub uid: Option<String>,
    pub resource_version: Option<String>,
    pub retries: u32,
}

/// Every reconcile so far.
#[derive(Debug, Default)]
pub struct Calls(Mutex<Vec<Call>>);

impl Calls {
    pub fn record(&self, object: &JsonObject, ctx_key: &str, state: ObjectState, retries: u32) {
        self.0.lock().push(Call {
            key: ctx_key.to_owned(),
            state,
            uid: object.metadata.uid.clone(),
            resource_version: object.metadata.resource_version.clone(),
            retries,
        });
    }

    pub fn all(&self) -> Vec<Call> {
        self.0.lock().clone()
    }

    /// The calls for `key`.
    pub fn of(&self, key: &str) -> Vec<Call> {
        self.0
            .lock()
            .iter()
            .filter(|c| c.key == key)
            .cloned()
            .collect()
    }
}

/// Waits (at most [`GUARD`]) until the controller's counts satisfy `done`.
pub async fn wait_for(
    handle: &ControllerHandle,
    done: impl Fn(&ControllerStats) -> bool,
) -> ControllerStats {
    let mut stats = handle.subscribe();
    match tokio::time::timeout(GUARD, stats.wait_for(|s| done(s))).await {
        Ok(Ok(stats)) => *stats,
        Ok(Err(_)) => panic!("the controller is gone at {:?}", handle.stats()),
        Err(_) => panic!("not reached within {GUARD:?}: {:?}", handle.stats()),
    }
}

/// Waits (at most [`GUARD`]) until `check` holds, re-checking after every reconcile.
pub async fn wait_until(handle: &ControllerHandle, what: &str, check: impl Fn() -> bool) {
    let mut stats = handle.subscribe();
    let wait = async {
        while !check() {
            if stats.changed().await.is_err() {
                panic!("{what}: the controller is gone");
            }
        }
    };
    if tokio::time::timeout(GUARD, wait).await.is_err() {
        panic!("{what}: not reached within {GUARD:?}: {:?}", handle.stats());
    }
}

/// An error type for reconciles that fail on purpose.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

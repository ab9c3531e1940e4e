//! The configmap-mirror example's tests' helpers on the shared [`Env`]: seeding, running the
//! example's controller (`examples/configmap-mirror/controller.rs`, included by `main.rs` as
//! `crate::configmap_mirror`), an independent convergence check (raw JSON from the server, not
//! the controller's own decision code), the writes it sent (from the server's request log), and
//! an event-driven wait for convergence (woken by every reconcile, with the [`GUARD`] against
//! hangs; never a timing assertion).

use fake_apiserver::FakeApiServer;
use informer::FactoryConfig;
use informer_controller::{
    ControllerConfig, ControllerError, ControllerHandle, ControllerReport, ControllerStats,
};
use informer_kube::KubeInformerFactory;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Env, GUARD};
use crate::configmap_mirror::{
    MANAGED_BY_LABEL, MANAGER, MirrorConfig, MirrorError, NAME, SOURCE_ANNOTATION, controller,
    reconcile,
};

/// The label selecting namespaces in these tests (the controller's default selector).
pub const LABEL: (&str, &str) = ("informer-rs/mirror", "true");

/// The controller settings of these tests: the example's name, three workers.
pub fn settings() -> ControllerConfig {
    ControllerConfig {
        name: NAME.into(),
        workers: 3,
        ..ControllerConfig::default()
    }
}

/// The mirror controller's fixtures.
impl Env {
    /// Creates a namespace, with the mirror label or without.
    pub fn namespace(&self, name: &str, labelled: bool) {
        let labels = if labelled {
            json!({ LABEL.0: LABEL.1 })
        } else {
            json!({ "team": name })
        };
        self.engine
            .create(
                "namespaces",
                &json!({"metadata": {"name": name, "labels": labels}}),
            )
            .expect("create namespace");
    }

    /// Adds or removes the mirror label of a namespace.
    pub fn label(&self, name: &str, labelled: bool) {
        let value = if labelled {
            json!(LABEL.1)
        } else {
            Value::Null
        };
        self.engine
            .patch(
                "namespaces",
                None,
                name,
                &json!({"metadata": {"labels": { LABEL.0: value }}}),
            )
            .expect("label namespace");
    }

    /// Creates or replaces the source with `data`.
    pub fn set_source(&self, config: &MirrorConfig, data: Value) {
        let (namespace, name) = &config.source;
        let body = json!({
            "metadata": {"namespace": namespace, "name": name},
            "data": data,
        });
        let exists = self.engine.get("configmaps", Some(namespace), name).is_ok();
        if exists {
            self.engine
                .update("configmaps", &body)
                .expect("update source");
        } else {
            self.engine
                .create("configmaps", &body)
                .expect("create source");
        }
    }

    pub fn delete_source(&self, config: &MirrorConfig) {
        let (namespace, name) = &config.source;
        self.engine
            .delete("configmaps", Some(namespace), name)
            .expect("delete source");
    }

    /// Builds the example's controller over this server's client and starts it on a task.
    pub fn run(&self, config: MirrorConfig, settings: ControllerConfig) -> Running {
        self.try_run(config, settings, FactoryConfig::default())
            .expect("the mirror controller")
    }

    /// [`run`](Self::run) with the factory's settings (metrics); fails as building fails.
    pub fn try_run(
        &self,
        config: MirrorConfig,
        settings: ControllerConfig,
        factory_config: FactoryConfig,
    ) -> Result<Running, MirrorError> {
        let factory = KubeInformerFactory::with_config(self.client.clone(), factory_config);
        factory.set_drop_managed_fields(true);
        let (controller, mirror) = controller(&factory, config, settings)?;
        let handle = controller.handle();
        let stats = handle.subscribe();
        let stop = CancellationToken::new();
        let task = tokio::spawn(controller.run(reconcile, mirror, stop.clone()));
        Ok(Running {
            stop,
            handle,
            stats,
            task,
        })
    }

    /// Waits until the server's state is the converged one, re-checking after every reconcile.
    pub async fn converge_mirrors(&self, config: &MirrorConfig, running: &mut Running, step: &str) {
        loop {
            let Err(divergence) = check(&self.engine, config) else {
                return;
            };
            match tokio::time::timeout(GUARD, running.stats.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => panic!("{step}: the controller stopped; {divergence}"),
                Err(_) => panic!(
                    "{step}: not converged after {GUARD:?} without a reconcile: {divergence}; \
                     stats {:?}, pending faults {:?}",
                    *running.stats.borrow(),
                    self.engine.faults().pending()
                ),
            }
        }
    }
}

/// A running controller.
pub struct Running {
    pub stop: CancellationToken,
    pub handle: ControllerHandle,
    pub stats: watch::Receiver<ControllerStats>,
    pub task: JoinHandle<Result<ControllerReport, ControllerError>>,
}

impl Running {
    pub fn stats(&self) -> ControllerStats {
        self.handle.stats()
    }

    /// Waits (within the guard) until the stats satisfy `done`.
    pub async fn wait_for_stats(
        &mut self,
        done: impl Fn(&ControllerStats) -> bool,
    ) -> ControllerStats {
        let waited = tokio::time::timeout(GUARD, self.stats.wait_for(|s| done(s)))
            .await
            .map(|r| r.map(|stats| *stats));
        match waited {
            Ok(Ok(stats)) => stats,
            Ok(Err(_)) => panic!("the controller stopped at {:?}", self.stats()),
            Err(_) => panic!("stats not reached within {GUARD:?}: {:?}", self.stats()),
        }
    }

    /// Cancels and waits for the report (within the guard).
    pub async fn stop(self) -> ControllerReport {
        self.stop.cancel();
        self.finish().await.expect("the controller failed")
    }

    /// Waits for the run's result (within the guard), without cancelling.
    pub async fn finish(self) -> Result<ControllerReport, ControllerError> {
        tokio::time::timeout(GUARD, self.task)
            .await
            .expect("the controller did not stop")
            .expect("the controller task panicked")
    }
}

/// How many requests with `method` on ConfigMaps (`POST`: creates, `PUT`: replaces,
/// `DELETE`: deletes) the server received over HTTP, failed ones included. The tests' direct
/// writes through the engine are not requests and do not count.
pub fn config_map_requests(engine: &FakeApiServer, method: &str) -> usize {
    engine
        .requests()
        .iter()
        .filter(|r| r.method == method && r.path.contains("/configmaps"))
        .count()
}

/// `Ok` when the server holds exactly what the controller should have made of it: every
/// namespace carrying the label holds a managed mirror with the source's data (when there is
/// a source), no other namespace holds a managed mirror, and foreign ConfigMaps are untouched
/// (the caller checks those). Written from the raw JSON, independently of the controller's
/// own decision code.
pub fn check(engine: &FakeApiServer, config: &MirrorConfig) -> Result<(), String> {
    let namespaces: Vec<Value> = engine
        .objects("namespaces", None)
        .expect("namespaces")
        .iter()
        .map(|o| o.to_value())
        .collect();
    let config_maps: Vec<Value> = engine
        .objects("configmaps", None)
        .expect("configmaps")
        .iter()
        .map(|o| o.to_value())
        .collect();
    let meta = |v: &Value, field: &str| v["metadata"][field].as_str().map(str::to_owned);
    let (source_namespace, source_name) = &config.source;
    let source = config_maps.iter().find(|cm| {
        meta(cm, "namespace").as_ref() == Some(source_namespace)
            && meta(cm, "name").as_ref() == Some(source_name)
    });
    let managed = |cm: &Value| cm["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGER;
    let source_ref = format!("{source_namespace}/{source_name}");
    let mut problems = Vec::new();
    for ns in &namespaces {
        let name = meta(ns, "name").unwrap_or_default();
        let labelled = ns["metadata"]["labels"][LABEL.0] == LABEL.1;
        let mirror = config_maps.iter().find(|cm| {
            meta(cm, "namespace").as_deref() == Some(name.as_str())
                && meta(cm, "name").as_deref() == Some(config.mirror_name.as_str())
        });
        match (labelled, source, mirror) {
            (true, Some(source), Some(mirror)) => {
                if !managed(mirror) {
                    problems.push(format!("{name}: the mirror is not marked as managed"));
                }
                if mirror["metadata"]["annotations"][SOURCE_ANNOTATION] != source_ref.as_str() {
                    problems.push(format!("{name}: the mirror does not name its source"));
                }
                if mirror["data"] != source["data"] {
                    problems.push(format!(
                        "{name}: mirror data {} != source data {}",
                        mirror["data"], source["data"]
                    ));
                }
            }
            (true, Some(_), None) => problems.push(format!("{name}: no mirror")),
            (_, _, Some(mirror)) if managed(mirror) => {
                problems.push(format!("{name}: a mirror it should not have"));
            }
            _ => {}
        }
    }
    for cm in config_maps.iter().filter(|cm| managed(cm)) {
        let ns = meta(cm, "namespace").unwrap_or_default();
        if !namespaces
            .iter()
            .any(|n| meta(n, "name").as_deref() == Some(ns.as_str()))
        {
            problems.push(format!("{ns}: a mirror in a namespace that does not exist"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The data of the mirror in `namespace`, if any.
pub fn mirror_data(
    engine: &FakeApiServer,
    config: &MirrorConfig,
    namespace: &str,
) -> Option<Value> {
    engine
        .get("configmaps", Some(namespace), &config.mirror_name)
        .ok()
        .map(|o| o.to_value()["data"].clone())
}

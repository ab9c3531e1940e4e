//! informer-rs: a shared informer from [`KubeInformerFactory`] with its defaults (or the
//! compact store, or `managedFields` dropped), and one handler that records stamped updates.

use std::sync::Arc;
use std::time::Duration;

use informer::reflector::RestartReason;
use informer::{Lister, NAMESPACE_INDEX, SharedIndexInformer, StoreKind, handler};
use informer_kube::KubeInformerFactory;
use k8s_openapi::api::core::v1::Pod;
use kube_client::Client;

use super::{Progress, Recorder};

pub(super) struct Run {
    factory: KubeInformerFactory,
    informer: SharedIndexInformer<Pod>,
    lister: Lister<Pod>,
}

impl Run {
    /// Builds the factory and the pod informer (all namespaces), adds the handler, starts.
    pub(super) fn start(
        client: Client,
        recorder: Arc<Recorder>,
        drop_managed_fields: bool,
        store: StoreKind,
    ) -> Result<Self, String> {
        let factory = KubeInformerFactory::new(client);
        factory.set_drop_managed_fields(drop_managed_fields);
        factory.set_store(store);
        let informer = factory
            .informer::<Pod>()
            .map_err(|e| format!("creating the pod informer: {e}"))?;
        let on_add = Arc::clone(&recorder);
        informer
            .add_handler(
                handler()
                    .on_add(move |pod: &Arc<Pod>, initial| {
                        if !initial {
                            on_add.record(pod.metadata.annotations.as_ref());
                        }
                    })
                    .on_update(move |_old, pod| recorder.record(pod.metadata.annotations.as_ref())),
            )
            .map_err(|e| format!("adding the handler: {e}"))?;
        factory.start();
        let lister = informer.lister();
        Ok(Self {
            factory,
            informer,
            lister,
        })
    }

    pub(super) async fn wait_synced(&self) -> Result<usize, String> {
        self.factory
            .wait_for_cache_sync(Duration::from_secs(3600))
            .await
            .map_err(|e| format!("waiting for the cache: {e}"))?;
        Ok(self.informer.stats().cached)
    }

    pub(super) fn progress(&self) -> Progress {
        let stats = self.informer.stats();
        let (lists, expired_seen) = stats.reflector.as_ref().map_or((0, false), |r| {
            (
                r.counters.lists,
                r.counters.watch_restarts.get(RestartReason::Expired) > 0,
            )
        });
        Progress {
            lists,
            idle: stats.queued == 0,
            expired_seen,
            objects: stats.cached,
        }
    }

    /// The pods of one namespace, through the namespace index.
    pub(super) fn namespace_lookup(&self, namespace: &str) -> usize {
        self.lister
            .by_index(NAMESPACE_INDEX, namespace)
            .map_or(0, |pods| pods.len())
    }

    pub(super) fn get(&self, namespace: &str, name: &str) -> usize {
        usize::from(self.lister.get(Some(namespace), name).is_some())
    }

    pub(super) async fn stop(self) {
        let _ = self.factory.shutdown().await;
    }
}

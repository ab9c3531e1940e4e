//! Waiting for caches to sync: [`SyncSource`] and [`wait_for_cache_sync`].

use std::time::Duration;

use futures::future::BoxFuture;
use informer_core::Object;

use crate::error::CacheSyncError;
use crate::registration::Registration;
use crate::shared_informer::{SharedIndexInformer, wait_phase};
use crate::stream::EventStream;

/// Something that syncs: an informer (its first list is in the cache), a registration (and
/// its handler has handled all of it), or a stream's registration.
pub trait SyncSource: Send + Sync {
    /// A name for reports.
    fn sync_name(&self) -> String;
    /// Whether it has synced.
    fn is_synced(&self) -> bool;
    /// Completes with `true` once synced, or `false` once it can no longer sync (stopped,
    /// removed, disconnected).
    fn synced(&self) -> BoxFuture<'static, bool>;
}

impl<K: Object> SyncSource for SharedIndexInformer<K> {
    fn sync_name(&self) -> String {
        self.name().to_owned()
    }

    fn is_synced(&self) -> bool {
        self.has_synced()
    }

    fn synced(&self) -> BoxFuture<'static, bool> {
        Box::pin(wait_phase(self.phase()))
    }
}

impl SyncSource for Registration {
    fn sync_name(&self) -> String {
        self.qualified_name()
    }

    fn is_synced(&self) -> bool {
        self.has_synced()
    }

    fn synced(&self) -> BoxFuture<'static, bool> {
        let registration = self.clone();
        Box::pin(async move { registration.wait_for_sync().await })
    }
}

impl<K: Object> SyncSource for EventStream<K> {
    fn sync_name(&self) -> String {
        self.registration().sync_name()
    }

    fn is_synced(&self) -> bool {
        self.registration().has_synced()
    }

    fn synced(&self) -> BoxFuture<'static, bool> {
        self.registration().synced()
    }
}

/// Waits until every source has synced, for at most `timeout` (on tokio's clock). On failure
/// the error names the sources that had not synced (some may have stopped, been removed or
/// disconnected: those fail before the timeout runs out).
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::sync::Arc;
/// use std::time::Duration;
/// use informer::{InformerConfig, SharedIndexInformer, handler, wait_for_cache_sync};
/// use informer_testing::JsonObject;
/// use fake_apiserver::FakeApiServer;
/// use tokio_util::sync::CancellationToken;
///
/// let server = FakeApiServer::new();
/// let lw = Arc::new(server.lister_watcher::<JsonObject>("pods", None).unwrap());
/// let informer = SharedIndexInformer::new(lw, InformerConfig::default()).unwrap();
/// let registration = informer.add_handler(handler()).unwrap();
/// let stop = CancellationToken::new();
/// let run = informer.spawn(stop.clone());
/// wait_for_cache_sync(Duration::from_secs(10), &[&informer, &registration]).await.unwrap();
/// stop.cancel();
/// run.await.unwrap().unwrap();
/// # }
/// ```
pub async fn wait_for_cache_sync(
    timeout: Duration,
    sources: &[&dyn SyncSource],
) -> Result<(), CacheSyncError> {
    let waits = futures::future::join_all(sources.iter().map(|s| s.synced()));
    // Each wait ends when its source synced or can no longer sync; the answer is what the
    // sources say afterwards.
    let _ = tokio::time::timeout(timeout, waits).await;
    let not_synced: Vec<String> = sources
        .iter()
        .filter(|s| !s.is_synced())
        .map(|s| s.sync_name())
        .collect();
    if not_synced.is_empty() {
        Ok(())
    } else {
        Err(CacheSyncError {
            timeout,
            not_synced,
        })
    }
}

//! [`EventStream`]: notifications as an async `Stream`, for consumers that `await`.

use std::fmt;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};

use futures::Stream;
use informer_core::{Notification, Object};

use crate::listener::Listener;
use crate::processor::Processor;
use crate::registration::Registration;

/// The notifications of one registration as a [`Stream`], from
/// [`SharedIndexInformer::stream`](crate::SharedIndexInformer::stream).
///
/// It behaves like a handler: it first yields the cached objects as initial-list adds (or,
/// before start, the first list's), then every change, in order; its buffer, lag, bound and
/// sync tracking are those of its [`registration`](Self::registration) (a notification counts
/// as handled once yielded). It ends when the informer stops (after yielding what it holds)
/// or the registration is removed or disconnected. Dropping it removes the registration.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::sync::Arc;
/// use futures::StreamExt;
/// use informer::{InformerConfig, Notification, SharedIndexInformer};
/// use informer_testing::JsonObject;
/// use fake_apiserver::FakeApiServer;
/// use tokio_util::sync::CancellationToken;
///
/// let server = FakeApiServer::new();
/// server.create("configmaps", &JsonObject::new(Some("a"), "one")).unwrap();
/// let lw = Arc::new(server.lister_watcher::<JsonObject>("configmaps", None).unwrap());
/// let informer = SharedIndexInformer::new(lw, InformerConfig::default()).unwrap();
/// let mut events = informer.stream().unwrap();
/// let stop = CancellationToken::new();
/// let run = informer.spawn(stop.clone());
///
/// match events.next().await {
///     Some(Notification::Add { object, is_in_initial_list }) => {
///         assert_eq!(object.metadata.name.as_deref(), Some("one"));
///         assert!(is_in_initial_list);
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// server.delete("configmaps", Some("a"), "one").unwrap();
/// assert!(matches!(events.next().await, Some(Notification::Delete(_))));
///
/// stop.cancel();
/// run.await.unwrap().unwrap();
/// assert!(events.next().await.is_none());
/// # }
/// ```
pub struct EventStream<K: Object> {
    listener: Arc<Listener<K>>,
    registration: Registration,
    processor: Weak<Processor<K>>,
}

impl<K: Object> EventStream<K> {
    pub(crate) fn new(
        listener: Arc<Listener<K>>,
        registration: Registration,
        processor: Weak<Processor<K>>,
    ) -> Self {
        Self {
            listener,
            registration,
            processor,
        }
    }

    /// The registration behind the stream: its lag, sync state and counters.
    pub fn registration(&self) -> &Registration {
        &self.registration
    }

    /// How many notifications are waiting to be yielded.
    pub fn backlog(&self) -> usize {
        self.listener.buffered()
    }
}

impl<K: Object> Stream for EventStream<K> {
    type Item = Notification<K>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let poll = self.listener.poll_next(cx);
        if let Poll::Ready(Some(n)) = &poll {
            self.listener.finish(n);
        }
        poll
    }
}

impl<K: Object> Drop for EventStream<K> {
    fn drop(&mut self) {
        if let Some(processor) = self.processor.upgrade() {
            processor.remove(self.registration.id());
        }
        self.registration.shared.finished.cancel();
    }
}

impl<K: Object> fmt::Debug for EventStream<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventStream")
            .field("registration", &self.registration)
            .finish_non_exhaustive()
    }
}

//! The `ListerWatcher` trait: how the reflector talks to an API server.

use std::pin::Pin;

use async_trait::async_trait;
use futures_core::Stream;

use crate::{Error, ListOptions, ListPage, Object, WatchEvent, WatchOptions};

/// A stream of watch events. It ends when the watch ends (server timeout, closed connection).
pub type WatchStream<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>, Error>> + Send>>;

/// Lists and watches one kind of object: the reflector's only view of the server.
///
/// Backends: `informer-kube` (kube-client's `Api<K>`), `informer-testing` (the in-process fake API
/// server), or your own.
///
/// # Contract
///
/// Implementers guarantee that:
/// - [`list`](ListerWatcher::list) performs exactly one request for exactly the options given (one
///   page when `limit` is set) and returns its items decoded, with the list's resourceVersion and
///   continue token. Paging, retries and fallbacks are the caller's job.
/// - [`watch`](ListerWatcher::watch) starts exactly one watch with the options given. An HTTP error
///   when starting is returned as `Err` (an [`Error::Api`] carrying the `Status`, with
///   `Retry-After` when the server sent it). Once started, the stream yields events in the
///   server's order, and ends (`None`) when the watch ends.
/// - A line that cannot be decoded is yielded as `Err(Error::Decode { .. })` or
///   `Err(Error::UnknownEventType { .. })` and the stream may continue; a broken connection is
///   yielded as `Err(Error::Transport { .. })`. An `ERROR` event is yielded as
///   `Ok(WatchEvent::Error(status))`.
/// - Both methods are cancel-safe: dropping the future or the stream abandons the request.
///
/// Callers may assume nothing about the resourceVersion format (it is opaque) and must not rely
/// on the stream ending after an `ERROR` event.
#[async_trait]
pub trait ListerWatcher<K: Object>: Send + Sync {
    /// Lists one page.
    async fn list(&self, options: &ListOptions) -> Result<ListPage<K>, Error>;

    /// Starts a watch.
    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, Error>;
}

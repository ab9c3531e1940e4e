//! The `ListerWatcher` trait: how the reflector talks to an API server.

use std::pin::Pin;

use async_trait::async_trait;
use futures_core::Stream;

use std::task::{Context, Poll};

use crate::{Error, ItemPeek, ListOptions, ListPage, Object, RawObject, WatchEvent, WatchOptions};

/// A stream of watch events. It ends when the watch ends (server timeout, closed connection).
pub type WatchStream<K> = Pin<Box<dyn Stream<Item = Result<WatchEvent<K>, Error>> + Send>>;

/// A stream of watch events with their objects' JSON text: what
/// [`ListerWatcher::watch_raw`] returns.
pub type RawWatchStream<K> = Pin<Box<dyn Stream<Item = Result<RawWatchEvent<K>, Error>> + Send>>;

/// A watch event with its object's JSON text as received, when the backend has it (`None` for
/// bookmarks, errors, and backends that do not read JSON).
pub struct RawWatchEvent<K> {
    /// The event.
    pub event: WatchEvent<K>,
    /// The JSON text of the event's object.
    pub raw: Option<RawObject>,
}

/// Lists and watches one kind of object: the reflector's only view of the server.
///
/// Backends: `informer-kube` (kube-client's `Api<K>`), `fake-apiserver` (the in-process fake API
/// server), or your own.
///
/// # Contract
///
/// Implementers guarantee that:
/// - [`list`](ListerWatcher::list) performs exactly one request for exactly the options given (one
///   page when `limit` is set) and returns its items decoded, with the list's resourceVersion and
///   continue token. Paging, retries and fallbacks are the caller's job.
/// - [`list_into`](ListerWatcher::list_into) does the same, handing the items to a
///   [`ListSink`] one at a time instead of returning them together. Its default calls
///   [`list`](ListerWatcher::list); a backend that decodes as the response arrives overrides it
///   so that a page is never held whole (a relist answered in one response then holds each
///   item once, not the body and the decoded list side by side).
/// - [`watch`](ListerWatcher::watch) starts exactly one watch with the options given. An HTTP error
///   when starting is returned as `Err` (an [`Error::Api`] carrying the `Status`, with
///   `Retry-After` when the server sent it). Once started, the stream yields events in the
///   server's order, and ends (`None`) when the watch ends.
/// - A line that cannot be decoded is yielded as `Err(Error::Decode { .. })` or
///   `Err(Error::UnknownEventType { .. })` and the stream may continue; a broken connection is
///   yielded as `Err(Error::Transport { .. })`. An `ERROR` event is yielded as
///   `Ok(WatchEvent::Error(status))`.
/// - Both methods are cancel-safe: dropping the future or the stream abandons the request.
/// - [`watch_raw`](ListerWatcher::watch_raw) is `watch` with each object's JSON text as
///   received; its default calls `watch` and carries no text. A backend that reads JSON
///   overrides it (and [`list_into`](ListerWatcher::list_into) calls
///   [`ListSink::item_raw`]) so that a store keeping objects encoded need not encode them
///   again; the text must decode to the object it comes with.
///
/// Callers may assume nothing about the resourceVersion format (it is opaque) and must not rely
/// on the stream ending after an `ERROR` event.
#[async_trait]
pub trait ListerWatcher<K: Object>: Send + Sync {
    /// Lists one page.
    async fn list(&self, options: &ListOptions) -> Result<ListPage<K>, Error>;

    /// Starts a watch.
    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, Error>;

    /// Lists one page into `sink`, item by item in the server's order, and returns what the
    /// page says about itself. An error from the sink stops the list: the request is
    /// abandoned and the error returned. Items handed over before a failure belong to a list
    /// that failed; the caller discards them.
    ///
    /// The default calls [`list`](ListerWatcher::list) and hands its items over.
    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<K>,
    ) -> Result<ListPageInfo, Error> {
        let page = self.list(options).await?;
        let ListPage {
            items,
            resource_version,
            continue_token,
            remaining_item_count,
        } = page;
        let count = items.len();
        for item in items {
            sink.item(item)?;
        }
        Ok(ListPageInfo::new(resource_version, continue_token)
            .with_remaining_item_count(remaining_item_count)
            .with_items(count))
    }

    /// Starts a watch whose events carry their objects' JSON text as received. Called instead
    /// of [`watch`](ListerWatcher::watch) only when the text is wanted (the store keeps objects
    /// encoded). The default calls `watch` and carries no text.
    async fn watch_raw(&self, options: &WatchOptions) -> Result<RawWatchStream<K>, Error> {
        let stream = self.watch(options).await?;
        Ok(Box::pin(WithoutRaw(stream)))
    }
}

/// A watch stream whose events carry no text (the default of [`ListerWatcher::watch_raw`]).
struct WithoutRaw<K>(WatchStream<K>);

// The error is the contract's `Error`, passed through unchanged from the inner stream.
#[allow(clippy::result_large_err)]
impl<K> Stream for WithoutRaw<K> {
    type Item = Result<RawWatchEvent<K>, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.0
            .as_mut()
            .poll_next(cx)
            .map(|item| item.map(|result| result.map(|event| RawWatchEvent { event, raw: None })))
    }
}

/// Where [`ListerWatcher::list_into`] puts a page's items, one at a time, as they are decoded.
// The error is the contract's `Error`, built only on the failure path that ends the list.
#[allow(clippy::result_large_err)]
pub trait ListSink<K>: Send {
    /// The next item of the page. An error stops the list.
    fn item(&mut self, item: K) -> Result<(), Error>;

    /// `bytes` more of the response body arrived, before they are decoded: for a limit on
    /// what one list may take. An error stops the list. The default accepts everything;
    /// backends that do not see bytes (an in-process server) never call it.
    fn received(&mut self, bytes: u64) -> Result<(), Error> {
        let _ = bytes;
        Ok(())
    }

    /// The next item with its JSON text exactly as received (`raw` decodes to `item`). A
    /// backend that reads JSON calls this instead of [`item`](ListSink::item); the default
    /// drops the text and calls `item`.
    fn item_raw(&mut self, item: K, raw: &str) -> Result<(), Error> {
        let _ = raw;
        self.item(item)
    }

    /// Whether the sink wants to see each item's identity before it is decoded
    /// ([`unchanged`](ListSink::unchanged)). Asked once per page; the default is `false`, and
    /// then backends do not read metadata ahead.
    fn peeks(&self) -> bool {
        false
    }

    /// Before an item is decoded, what its text says of its identity and version. `Ok(true)`:
    /// the sink already holds exactly this version and has taken the item from its own store;
    /// the backend then neither decodes it nor calls [`item`](ListSink::item) for it (it still
    /// counts as an item of the page). `Ok(false)`: decode and hand it over as usual. Called
    /// only when [`peeks`](ListSink::peeks) is true, by backends that can read an item's
    /// metadata cheaply ([`ItemPeek::of`]); an error stops the list.
    fn unchanged(&mut self, peek: &ItemPeek<'_>) -> Result<bool, Error> {
        let _ = peek;
        Ok(false)
    }

    /// Whether the sink takes items as their JSON text alone, not decoded
    /// ([`item_text`](ListSink::item_text)): a sink that would only keep the text and drop
    /// the decoded object (for a store that decodes text itself). Asked once per page; the
    /// default is `false`, and then backends decode every item.
    fn takes_text(&self) -> bool {
        false
    }

    /// The next item as its JSON text with what its metadata says, not decoded: called
    /// instead of [`item_raw`](ListSink::item_raw) when [`takes_text`](ListSink::takes_text)
    /// is true, by backends that can read the metadata from the text ([`ItemPeek::of`], which
    /// also checks that the text is JSON); a text that is JSON but not the object type is
    /// found when the sink's consumer decodes it. The default refuses (it is never called
    /// when `takes_text` is false). An error stops the list.
    fn item_text(&mut self, peek: &ItemPeek<'_>, raw: &str) -> Result<(), Error> {
        let _ = peek;
        Err(Error::decode(
            "a list item handed over as text",
            raw.as_bytes(),
            "this sink decodes items itself (takes_text is false)",
        ))
    }
}

impl<K: Send> ListSink<K> for Vec<K> {
    fn item(&mut self, item: K) -> Result<(), Error> {
        self.push(item);
        Ok(())
    }
}

/// What a list page says about itself, besides its items: the result of
/// [`ListerWatcher::list_into`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListPageInfo {
    /// The list's resourceVersion (the same on every page of one paginated list).
    pub resource_version: String,
    /// The token for the next page, `None` on the last page.
    pub continue_token: Option<String>,
    /// How many items remain after this page, when the server says.
    pub remaining_item_count: Option<i64>,
    /// How many items the page handed to the sink.
    pub items: usize,
    /// The size of the response body, when the backend saw bytes.
    pub bytes: Option<u64>,
    /// `metadata.shardInfo.selector`: the shard selector the server applied, echoed back.
    /// `None` when the list is not sharded, or when the server ignored a `shardSelector` it
    /// does not know (it then sent every object); see
    /// [`ShardSelector::check_echo`](crate::shard::ShardSelector::check_echo).
    pub shard_info_selector: Option<String>,
}

impl ListPageInfo {
    /// A page at `resource_version` followed by `continue_token` (an empty token counts as
    /// none).
    pub fn new(resource_version: impl Into<String>, continue_token: Option<String>) -> Self {
        Self {
            resource_version: resource_version.into(),
            continue_token: continue_token.filter(|t| !t.is_empty()),
            ..Self::default()
        }
    }

    /// With the server's `remainingItemCount`.
    pub fn with_remaining_item_count(mut self, remaining_item_count: Option<i64>) -> Self {
        self.remaining_item_count = remaining_item_count;
        self
    }

    /// With the number of items handed over.
    pub fn with_items(mut self, items: usize) -> Self {
        self.items = items;
        self
    }

    /// With the size of the response body.
    pub fn with_bytes(mut self, bytes: u64) -> Self {
        self.bytes = Some(bytes);
        self
    }

    /// With the echo of the shard selector (`metadata.shardInfo.selector`).
    pub fn with_shard_info_selector(mut self, selector: Option<String>) -> Self {
        self.shard_info_selector = selector;
        self
    }
}

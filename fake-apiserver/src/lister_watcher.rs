//! The in-process front end: a `ListerWatcher` over the request layer, without sockets.

use std::fmt;
use std::marker::PhantomData;

use async_trait::async_trait;
use futures::StreamExt;
use informer_core::{
    Bookmark, Error, INITIAL_EVENTS_END_ANNOTATION, ItemPeek, ListOptions, ListPage, ListPageInfo,
    ListSink, ListerWatcher, Object, RawObject, RawWatchEvent, RawWatchStream, Status, WatchEvent,
    WatchOptions, WatchStream,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::server::Target;
use super::{FakeApiServer, Query, WatchFrame};

/// A [`ListerWatcher`] for one resource (in one namespace or all) of a [`FakeApiServer`],
/// decoding every object once into `K` with `serde_json::from_slice`.
///
/// Like a backend reading JSON off the wire, it hands over each object's stored JSON text
/// with it ([`ListSink::item_raw`], [`ListerWatcher::watch_raw`]), and lets a sink that asks
/// skip list items it already holds before they are decoded ([`ListSink::unchanged`]).
///
/// It goes through the same request layer as the HTTP front end: requests are recorded in the
/// request log in the same form, scripted faults apply, and answers are the same. Failures map
/// onto informer-core's [`Error`] the way an HTTP client's would: a failed request is
/// `Error::Api { status, retry_after }` (with `retry_after` from `retryAfterSeconds`), an
/// `ERROR` event is `Ok(WatchEvent::Error(status))`, an undecodable line is
/// `Err(Error::Decode { .. })` or `Err(Error::UnknownEventType { .. })` and the stream goes
/// on, a broken watch is `Err(Error::Transport { .. })` and the stream ends.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use informer_core::{ListOptions, ListerWatcher};
/// use informer_testing::JsonObject;
/// use fake_apiserver::FakeApiServer;
///
/// let server = FakeApiServer::new();
/// server.create("configmaps", &JsonObject::new(Some("a"), "settings")).unwrap();
/// let lw = server.lister_watcher::<JsonObject>("configmaps", Some("a")).unwrap();
/// let page = lw.list(&ListOptions::default()).await.unwrap();
/// assert_eq!(page.items.len(), 1);
/// assert_eq!(
///     server.requests()[0].to_string(),
///     "GET /api/v1/namespaces/a/configmaps"
/// );
/// # }
/// ```
pub struct FakeListerWatcher<K> {
    server: FakeApiServer,
    target: Target,
    _object: PhantomData<fn() -> K>,
}

impl FakeApiServer {
    /// An in-process [`ListerWatcher`](informer_core::ListerWatcher) for `resource` in
    /// `namespace` (`None`: all namespaces), decoding objects into `K`.
    pub fn lister_watcher<K: Object + DeserializeOwned>(
        &self,
        resource: &str,
        namespace: Option<&str>,
    ) -> Result<FakeListerWatcher<K>, Status> {
        Ok(FakeListerWatcher::new(
            self.clone(),
            self.target(resource, namespace)?,
        ))
    }
}

impl<K> Clone for FakeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            server: self.server.clone(),
            target: self.target.clone(),
            _object: PhantomData,
        }
    }
}

impl<K> fmt::Debug for FakeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeListerWatcher")
            .field("path", &self.target.collection_path())
            .finish_non_exhaustive()
    }
}

impl<K> FakeListerWatcher<K> {
    pub(crate) fn new(server: FakeApiServer, target: Target) -> Self {
        Self {
            server,
            target,
            _object: PhantomData,
        }
    }

    /// The server.
    pub fn server(&self) -> &FakeApiServer {
        &self.server
    }

    /// The target (resource and namespace).
    pub fn target(&self) -> &Target {
        &self.target
    }

    fn context(&self, verb: &str) -> String {
        match self.target.namespace() {
            Some(ns) => format!(
                "{verb} {} in namespace {ns:?}",
                self.target.resource().qualified_name()
            ),
            None => format!("{verb} {}", self.target.resource().qualified_name()),
        }
    }
}

fn api_error(context: String, status: Status) -> Error {
    Error::Api {
        context,
        retry_after: status.retry_after(),
        status,
    }
}

impl<K: Object + DeserializeOwned> FakeListerWatcher<K> {
    /// One list request, its items decoded into `sink` one by one.
    async fn list_page(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<K>,
    ) -> Result<ListPageInfo, Error> {
        let response = self
            .server
            .list(&self.target, &Query::from(options))
            .await
            .map_err(|s| api_error(self.context("listing"), s))?;
        let context = || format!("list item from {}", self.target.collection_path());
        let peeks = sink.peeks();
        let takes_text = sink.takes_text();
        for item in &response.items {
            let text = std::str::from_utf8(item.bytes())
                .map_err(|e| Error::decode(context(), item.bytes(), e))?;
            if takes_text {
                let peek =
                    ItemPeek::of(text).map_err(|e| Error::decode(context(), item.bytes(), e))?;
                if !(peeks && sink.unchanged(&peek)?) {
                    sink.item_text(&peek, text)?;
                }
                continue;
            }
            if peeks
                && let Ok(peek) = ItemPeek::of(text)
                && sink.unchanged(&peek)?
            {
                continue;
            }
            let obj = serde_json::from_str::<K>(text)
                .map_err(|e| Error::decode(context(), item.bytes(), e))?;
            sink.item_raw(obj, text)?;
        }
        Ok(ListPageInfo::new(
            response.resource_version.to_string(),
            response.continue_token,
        )
        .with_remaining_item_count(response.remaining_item_count)
        .with_items(response.items.len())
        .with_shard_info_selector(response.shard_info_selector))
    }
}

#[async_trait]
impl<K: Object + DeserializeOwned> ListerWatcher<K> for FakeListerWatcher<K> {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<K>, Error> {
        let mut items = Vec::new();
        let info = self.list_page(options, &mut items).await?;
        Ok(ListPage {
            items,
            resource_version: info.resource_version,
            continue_token: info.continue_token,
            remaining_item_count: info.remaining_item_count,
        })
    }

    /// As [`list`](ListerWatcher::list), with the list's `metadata.shardInfo.selector` in
    /// the answer ([`ListPageInfo::shard_info_selector`]).
    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<K>,
    ) -> Result<ListPageInfo, Error> {
        self.list_page(options, sink).await
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, Error> {
        let subscription = self
            .server
            .watch(&self.target, &Query::from(options))
            .await
            .map_err(|s| api_error(self.context("watching"), s))?;
        let context = format!("watch event from {}", self.target.collection_path());
        let stream = subscription.map(move |frame| decode_frame::<K>(frame, &context));
        Ok(Box::pin(stream))
    }

    async fn watch_raw(&self, options: &WatchOptions) -> Result<RawWatchStream<K>, Error> {
        let subscription = self
            .server
            .watch(&self.target, &Query::from(options))
            .await
            .map_err(|s| api_error(self.context("watching"), s))?;
        let context = format!("watch event from {}", self.target.collection_path());
        let stream = subscription.map(move |frame| {
            let raw = match &frame {
                WatchFrame::Added(o) | WatchFrame::Modified(o) | WatchFrame::Deleted(o) => {
                    std::str::from_utf8(o.bytes()).ok().map(RawObject::new)
                }
                _ => None,
            };
            decode_frame::<K>(frame, &context).map(|event| RawWatchEvent { event, raw })
        });
        Ok(Box::pin(stream))
    }
}

/// Turns a frame into what an HTTP client decoding the same line would produce.
fn decode_frame<K: DeserializeOwned>(
    frame: WatchFrame,
    context: &str,
) -> Result<WatchEvent<K>, Error> {
    let object = |o: &super::StoredObject| {
        serde_json::from_slice::<K>(o.bytes()).map_err(|e| Error::decode(context, o.bytes(), e))
    };
    match frame {
        WatchFrame::Added(o) => object(&o).map(WatchEvent::Added),
        WatchFrame::Modified(o) => object(&o).map(WatchEvent::Modified),
        WatchFrame::Deleted(o) => object(&o).map(WatchEvent::Deleted),
        WatchFrame::Bookmark {
            resource_version,
            initial_events_end,
        } => Ok(WatchEvent::Bookmark(Bookmark {
            resource_version: resource_version.to_string(),
            initial_events_end,
        })),
        WatchFrame::Error(s) => Ok(WatchEvent::Error(s)),
        WatchFrame::Raw(line) => decode_line(&line, context),
        WatchFrame::Broken => Err(Error::transport(
            context,
            std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "the watch connection was broken (fault injected by the fake API server)",
            ),
        )),
    }
}

/// Decodes one watch line the way an HTTP client does.
pub(crate) fn decode_line<K: DeserializeOwned>(
    line: &[u8],
    context: &str,
) -> Result<WatchEvent<K>, Error> {
    let value: Value = serde_json::from_slice(line).map_err(|e| Error::decode(context, line, e))?;
    let event_type = value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let object = value.get("object").cloned().unwrap_or(Value::Null);
    let decode = |object: Value| {
        serde_json::from_value::<K>(object).map_err(|e| Error::decode(context, line, e))
    };
    match event_type.as_str() {
        "ADDED" => decode(object).map(WatchEvent::Added),
        "MODIFIED" => decode(object).map(WatchEvent::Modified),
        "DELETED" => decode(object).map(WatchEvent::Deleted),
        "BOOKMARK" => {
            let meta = object.get("metadata");
            let rv = meta
                .and_then(|m| m.get("resourceVersion"))
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    Error::decode(
                        context,
                        line,
                        "bookmark without metadata.resourceVersion".to_owned(),
                    )
                })?;
            let end = meta
                .and_then(|m| m.get("annotations"))
                .and_then(|a| a.get(INITIAL_EVENTS_END_ANNOTATION))
                .and_then(Value::as_str)
                == Some("true");
            Ok(WatchEvent::Bookmark(Bookmark {
                resource_version: rv.to_owned(),
                initial_events_end: end,
            }))
        }
        "ERROR" => serde_json::from_value::<Status>(object)
            .map(WatchEvent::Error)
            .map_err(|e| Error::decode(context, line, e)),
        _ => Err(Error::UnknownEventType {
            context: context.to_owned(),
            event_type,
        }),
    }
}

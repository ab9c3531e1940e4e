//! [`KubeListerWatcher`]: lists and watches one resource through a kube-client [`Client`].

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::stream;
use http_body_util::BodyExt;
use informer::reflector::Transform;
use informer_core::{
    Error, ListOptions, ListPage, ListerWatcher, Object, WatchOptions, WatchStream,
};
use kube_client::client::Body;
use kube_client::core::{ApiResource, DynamicObject, GroupVersionKind, Resource};
use kube_client::discovery::Scope;
use kube_client::{Api, Client};
use serde::de::DeserializeOwned;

use crate::decode;
use crate::error::KubeError;

/// `Accept` of list requests for metadata-only types (`PartialObjectMeta<K>`).
const METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// `Accept` of watch requests for metadata-only types.
const METADATA_ACCEPT: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

/// A [`ListerWatcher`] over kube-client: lists and watches one resource (in one namespace, or
/// in all) through a [`Client`], for any object type kube knows: k8s-openapi types, kube-derive
/// custom resources, [`DynamicObject`] and `PartialObjectMeta<K>` (metadata-only requests).
///
/// # How requests are made
///
/// The collection path comes from kube ([`Api::resource_url`], or
/// [`Resource::url_path`]); the requests go through [`Client::send`], so the client's
/// configuration applies unchanged (authentication, TLS, proxies, middleware). The query is
/// built here from [`ListOptions::query_pairs`] and [`WatchOptions::query_pairs`], not
/// with kube's `ListParams`/`WatchParams`, which cannot say everything the reflector needs:
/// `ListParams` drops `resourceVersion=0` when a `limit` is set (turning the cheap
/// "any state" first list into a consistent read) and refuses `resourceVersionMatch`
/// without `resourceVersion` instead of letting the server answer; `WatchParams` always
/// sends `timeoutSeconds` (290 by default), cannot send `resourceVersionMatch` apart from
/// `sendInitialEvents`, nor `sendInitialEvents=false`. Here every option given is sent, and
/// only those.
///
/// Responses are decoded here too, because `Api::list`/`Api::watch` lose what the reflector
/// needs to decide well: the `Retry-After` header, and the text of a watch line that does
/// not decode. The list body is read whole and decoded once, straight into `K`; a watch
/// body is split into lines as it arrives and each line decoded into a
/// [`WatchEvent`](informer_core::WatchEvent).
///
/// # Errors
///
/// Every error names the resource, the namespace and the request
/// (`listing pods in namespace "a" (GET /api/v1/namespaces/a/pods?limit=500)`):
///
/// - an HTTP error answer (on a list, or when a watch starts) is [`Error::Api`] with the
///   server's `Status` (code, reason, message, details with causes and `retryAfterSeconds`;
///   a body that is not a `Status` becomes one from the HTTP code) and the `Retry-After`
///   header as `retry_after` (delay-seconds form);
/// - a watch `ERROR` event is yielded as `Ok(WatchEvent::Error(status))`, the stream going
///   on until the server closes it; so 410 works both as an HTTP answer and as an event;
/// - a watch line that does not decode is `Err(Error::Decode)` with the line's start as
///   `line_excerpt`, an unknown event type `Err(Error::UnknownEventType)`, and the stream
///   continues with the next line; a list body that does not decode is `Error::Decode`
///   with the bytes around the failure;
/// - a failed connection, or a body broken mid-stream, is [`Error::Transport`] (a broken
///   watch body ends the stream after it).
///
/// # kube-client's own retries
///
/// A `Client` built from a [`Config`](kube_client::Config) with `default_retry` (kube's
/// default) retries 429, 503 and 504 answers itself, up to 15 times with a backoff of up to
/// minutes, before this type sees them. The reflector makes better decisions with the first
/// answer (a 504 `ResourceVersionTooLarge` asks for an immediate consistent list; a 429 is
/// retried after the server's `Retry-After`), so give informers a client built with
/// `default_retry = false`: [`client_for_informers`](crate::client_for_informers) does that,
/// and [`KubeInformerFactory::try_default`](crate::KubeInformerFactory::try_default) uses it.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use informer::{InformerConfig, SharedIndexInformer};
/// use informer_kube::KubeListerWatcher;
/// use k8s_openapi::api::core::v1::Pod;
/// use kube_client::{Api, Client};
///
/// let client = Client::try_default().await?;
/// let lister_watcher = KubeListerWatcher::new(Api::<Pod>::namespaced(client, "default"));
/// let informer = SharedIndexInformer::new(Arc::new(lister_watcher), InformerConfig::default())?;
/// # Ok(()) }
/// ```
pub struct KubeListerWatcher<K> {
    client: Client,
    target: Arc<Target>,
    transform: Option<Transform<K>>,
    _object: PhantomData<fn() -> K>,
}

/// What a lister-watcher talks to, for requests and error messages.
struct Target {
    /// The collection path, `/api/v1/namespaces/a/pods`.
    url_path: String,
    /// `pods`, `deployments.apps`.
    resource: String,
    namespace: Option<String>,
    metadata_only: bool,
}

impl<K> Clone for KubeListerWatcher<K> {
    fn clone(&self) -> Self {
        Self {
            client: self.client.clone(),
            target: Arc::clone(&self.target),
            transform: self.transform.clone(),
            _object: PhantomData,
        }
    }
}

impl<K> fmt::Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("url_path", &self.target.url_path)
            .field("metadata_only", &self.target.metadata_only)
            .field("transform", &self.transform.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: Resource> KubeListerWatcher<K> {
    /// Lists and watches what `api` covers: its resource, in its namespace or in all.
    pub fn new(api: Api<K>) -> Self {
        let url_path = api.resource_url().to_owned();
        let namespace = api.namespace().map(str::to_owned);
        Self::from_url(api.into_client(), url_path, namespace, K::metadata_api())
    }

    /// The resource in every namespace (or a cluster-scoped resource).
    pub fn all(client: Client) -> Self
    where
        K::DynamicType: Default,
    {
        Self::all_with(client, &K::DynamicType::default())
    }

    /// The resource in one namespace.
    pub fn namespaced(client: Client, namespace: &str) -> Self
    where
        K::DynamicType: Default,
    {
        Self::namespaced_with(client, namespace, &K::DynamicType::default())
    }

    /// The resource described by `dyntype` in every namespace.
    pub fn all_with(client: Client, dyntype: &K::DynamicType) -> Self {
        Self::from_url(client, K::url_path(dyntype, None), None, K::metadata_api())
    }

    /// The resource described by `dyntype` in one namespace.
    pub fn namespaced_with(client: Client, namespace: &str, dyntype: &K::DynamicType) -> Self {
        Self::from_url(
            client,
            K::url_path(dyntype, Some(namespace)),
            Some(namespace.to_owned()),
            K::metadata_api(),
        )
    }
}

impl KubeListerWatcher<DynamicObject> {
    /// Lists and watches `resource` as [`DynamicObject`]s, in `namespace` or in all
    /// namespaces. For a cluster-scoped resource pass `None`.
    pub fn dynamic(client: Client, resource: &ApiResource, namespace: Option<&str>) -> Self {
        Self::from_url(
            client,
            DynamicObject::url_path(resource, namespace),
            namespace.map(str::to_owned),
            false,
        )
    }

    /// Finds the resource serving `gvk` through kube's discovery (one request for its group
    /// version) and lists and watches it as [`DynamicObject`]s, in `namespace` or in all.
    ///
    /// Fails if discovery fails or does not know the kind, or if a namespace is given for a
    /// cluster-scoped resource.
    pub async fn discover(
        client: Client,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
    ) -> Result<Self, KubeError> {
        let (resource, capabilities) = crate::discover(&client, gvk).await?;
        if let (Scope::Cluster, Some(ns)) = (&capabilities.scope, namespace) {
            return Err(KubeError::ClusterScoped {
                resource: crate::resource_name(&resource),
                namespace: ns.to_owned(),
            });
        }
        Ok(Self::dynamic(client, &resource, namespace))
    }
}

impl<K> KubeListerWatcher<K> {
    /// A lister-watcher for the collection at `url_path` (`/api/v1/namespaces/a/pods`,
    /// `/apis/example.com/v1/widgets`), for object types that are not a kube `Resource`.
    /// With `metadata_only`, requests ask for `PartialObjectMetadata` renderings.
    pub fn from_url(
        client: Client,
        url_path: impl Into<String>,
        namespace: Option<String>,
        metadata_only: bool,
    ) -> Self {
        let url_path = url_path.into();
        let resource = resource_of_path(&url_path);
        Self {
            client,
            target: Arc::new(Target {
                url_path,
                resource,
                namespace,
                metadata_only,
            }),
            transform: None,
            _object: PhantomData,
        }
    }

    /// Applies `transform` to every object as soon as it is decoded: each list item before
    /// the next item is decoded, each watch event's object before the event is yielded.
    ///
    /// This is where a transform that makes objects smaller (such as
    /// [`drop_managed_fields`](crate::drop_managed_fields)) saves the most memory: the
    /// informer's own [`InformerConfig::transform`](informer::InformerConfig::transform) runs
    /// after a whole page is decoded, by which time the dropped parts of every item have been
    /// allocated side by side with the kept ones, and the allocator can rarely give their
    /// memory back. Here, the memory one item frees is reused by the next. The transform must
    /// keep the name, namespace, UID and resourceVersion.
    pub fn with_transform(mut self, transform: Transform<K>) -> Self {
        self.transform = Some(transform);
        self
    }

    /// The collection path requests go to.
    pub fn url_path(&self) -> &str {
        &self.target.url_path
    }

    /// The namespace, `None` for all namespaces.
    pub fn namespace(&self) -> Option<&str> {
        self.target.namespace.as_deref()
    }

    /// The client requests go through.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl Target {
    fn uri(&self, pairs: &[(&'static str, String)]) -> String {
        if pairs.is_empty() {
            return self.url_path.clone();
        }
        let mut query = form_urlencoded::Serializer::new(String::new());
        for (name, value) in pairs {
            query.append_pair(name, value);
        }
        format!("{}?{}", self.url_path, query.finish())
    }

    /// `listing pods in namespace "a" (GET /api/v1/...)`.
    fn context(&self, doing: &str, uri: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{doing} {} in namespace {ns:?} (GET {uri})", self.resource),
            None => format!("{doing} {} (GET {uri})", self.resource),
        }
    }

    fn request(&self, uri: &str, accept: &str, watch: bool) -> Result<http::Request<Body>, Error> {
        let mut builder = http::Request::get(uri).header(http::header::ACCEPT, accept);
        if watch {
            // One event per line, as it happens: no compression layer in between (kube-client's
            // optional gzip middleware decodes only the first member of a multi-member stream).
            builder = builder.header(http::header::ACCEPT_ENCODING, "identity");
        }
        builder
            .body(Body::empty())
            .map_err(|e| Error::transport(format!("building the request GET {uri}"), e))
    }
}

/// Sends `request`; an error answer becomes [`Error::Api`] (with `Retry-After`).
async fn send(
    client: &Client,
    request: http::Request<Body>,
    context: &str,
) -> Result<http::Response<Body>, Error> {
    let response = client
        .send(request)
        .await
        .map_err(|e| Error::transport(context.to_owned(), e))?;
    let code = response.status();
    if code.is_client_error() || code.is_server_error() {
        let retry_after = decode::retry_after(response.headers());
        let body = response.into_body().collect_bytes().await.map_err(|e| {
            Error::transport(format!("reading the error answer while {context}"), e)
        })?;
        return Err(Error::Api {
            context: context.to_owned(),
            status: decode::error_status(code, &body),
            retry_after,
        });
    }
    Ok(response)
}

#[async_trait]
impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Object + DeserializeOwned,
{
    async fn list(&self, options: &ListOptions) -> Result<ListPage<K>, Error> {
        let target = &*self.target;
        let uri = target.uri(&options.query_pairs());
        let context = target.context("listing", &uri);
        let accept = if target.metadata_only {
            METADATA_LIST_ACCEPT
        } else {
            "application/json"
        };
        let request = target.request(&uri, accept, false)?;
        let response = send(&self.client, request, &context).await?;
        let body = read_body(response, &context).await?;
        decode::list_page(&body, &context, self.transform.as_deref())
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, Error> {
        let target = &*self.target;
        let uri = target.uri(&options.query_pairs());
        let context: Arc<str> = target.context("watching", &uri).into();
        let accept = if target.metadata_only {
            METADATA_ACCEPT
        } else {
            "application/json"
        };
        let request = target.request(&uri, accept, true)?;
        let response = send(&self.client, request, &context).await?;
        Ok(Box::pin(watch_events::<K>(
            response.into_body(),
            context,
            self.transform.clone(),
        )))
    }
}

/// The most a list body's `Content-Length` may reserve up front; larger bodies grow from
/// there as they arrive.
const MAX_BODY_RESERVATION: usize = 1 << 30;

/// Reads a whole response body into one buffer, reserved from its `Content-Length` when the
/// server sends one, each chunk copied in and dropped as it arrives. (Gathering the chunks
/// first and joining them afterwards would hold the body twice: for a 100,000-pod list
/// answered in one response, 600 MB more at the peak and that many more page faults.)
async fn read_body(response: http::Response<Body>, context: &str) -> Result<Bytes, Error> {
    let expected = response
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    let mut body = response.into_body();
    let mut buf = BytesMut::with_capacity(expected.unwrap_or(0).min(MAX_BODY_RESERVATION));
    while let Some(frame) = body.frame().await {
        let frame = frame
            .map_err(|e| Error::transport(format!("reading the answer while {context}"), e))?;
        if let Ok(data) = frame.into_data() {
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Where a watch body's reader is.
struct Lines {
    body: Body,
    buf: BytesMut,
    /// Bytes of `buf` known to hold no newline.
    scanned: usize,
    ended: bool,
}

impl Lines {
    /// The next complete line (without its newline), if the buffer holds one.
    fn next_line(&mut self) -> Option<Bytes> {
        let newline = self.buf[self.scanned..].iter().position(|b| *b == b'\n');
        match newline {
            Some(at) => {
                let mut line = self.buf.split_to(self.scanned + at + 1);
                self.scanned = 0;
                line.truncate(line.len() - 1);
                Some(line.freeze())
            }
            None => {
                self.scanned = self.buf.len();
                None
            }
        }
    }
}

/// The events of a watch body, one per line, decoded as they arrive.
fn watch_events<K>(
    body: Body,
    context: Arc<str>,
    transform: Option<Transform<K>>,
) -> impl futures::Stream<Item = Result<informer_core::WatchEvent<K>, Error>> + Send
where
    K: Object + DeserializeOwned,
{
    let lines = Lines {
        body,
        buf: BytesMut::new(),
        scanned: 0,
        ended: false,
    };
    let line_context = Arc::clone(&context);
    let decode = move |line: &[u8]| {
        let event = decode::watch_line::<K>(line, &line_context)?;
        Ok(match &transform {
            Some(f) => event.map(|object| f(object)),
            None => event,
        })
    };
    stream::unfold(lines, move |mut lines| {
        let decode = decode.clone();
        let context = Arc::clone(&context);
        async move {
            loop {
                if let Some(line) = lines.next_line() {
                    if line.trim_ascii().is_empty() {
                        continue;
                    }
                    return Some((decode(&line), lines));
                }
                if lines.ended {
                    // A last line without its newline.
                    let rest = lines.buf.split().freeze();
                    if rest.trim_ascii().is_empty() {
                        return None;
                    }
                    return Some((decode(&rest), lines));
                }
                match lines.body.frame().await {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            lines.buf.extend_from_slice(&data);
                        }
                    }
                    Some(Err(e)) => {
                        // The connection broke: a partial line is lost, the stream ends.
                        lines.ended = true;
                        lines.buf.clear();
                        let error = Error::transport(format!("reading events while {context}"), e);
                        return Some((Err(error), lines));
                    }
                    None => lines.ended = true,
                }
            }
        }
    })
}

/// `pods` or `deployments.apps` from a collection path.
fn resource_of_path(path: &str) -> String {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let plural = segments.last().copied().unwrap_or_default();
    match segments.first() {
        Some(&"apis") if segments.len() >= 4 => format!("{plural}.{}", segments[1]),
        _ => plural.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_are_named_from_their_paths() {
        assert_eq!(resource_of_path("/api/v1/pods"), "pods");
        assert_eq!(resource_of_path("/api/v1/namespaces/a/pods"), "pods");
        assert_eq!(
            resource_of_path("/apis/apps/v1/deployments"),
            "deployments.apps"
        );
        assert_eq!(
            resource_of_path("/apis/example.com/v1/namespaces/x/widgets"),
            "widgets.example.com"
        );
    }

    #[test]
    fn every_option_reaches_the_query() {
        let target = Target {
            url_path: "/api/v1/namespaces/a/pods".into(),
            resource: "pods".into(),
            namespace: Some("a".into()),
            metadata_only: false,
        };
        let list = ListOptions {
            resource_version: Some("0".into()),
            resource_version_match: Some(informer_core::ResourceVersionMatch::NotOlderThan),
            limit: Some(500),
            continue_token: Some("tok/+=".into()),
            label_selector: Some("app in (web,api),!canary".into()),
            field_selector: Some("metadata.name=x".into()),
            timeout_seconds: Some(30),
        };
        let uri = target.uri(&list.query_pairs());
        let query = uri.split_once('?').map(|(_, q)| q).unwrap_or_default();
        let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let expected: Vec<(String, String)> = list
            .query_pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect();
        assert_eq!(pairs, expected);
        // resourceVersion=0 survives a limit (kube's ListParams would drop it).
        assert!(
            uri.contains("limit=500") && uri.contains("resourceVersion=0"),
            "{uri}"
        );

        let watch = WatchOptions {
            resource_version: Some("17".into()),
            resource_version_match: Some(informer_core::ResourceVersionMatch::NotOlderThan),
            timeout_seconds: Some(540),
            allow_watch_bookmarks: true,
            send_initial_events: Some(false),
            ..WatchOptions::default()
        };
        let uri = target.uri(&watch.query_pairs());
        for part in [
            "watch=1",
            "resourceVersion=17",
            "resourceVersionMatch=NotOlderThan",
            "timeoutSeconds=540",
            "allowWatchBookmarks=true",
            "sendInitialEvents=false",
        ] {
            assert!(uri.contains(part), "{part} missing from {uri}");
        }
        assert_eq!(
            target.context("watching", "/x"),
            "watching pods in namespace \"a\" (GET /x)"
        );
        assert_eq!(target.uri(&[]), "/api/v1/namespaces/a/pods");
    }

    #[tokio::test]
    async fn list_bodies_are_read_whole_with_or_without_a_length() {
        let text = br#"{"items":[],"metadata":{"resourceVersion":"5"}}"#;
        let with_length = |length: &str| {
            http::Response::builder()
                .header(http::header::CONTENT_LENGTH, length)
                .body(Body::from(Bytes::from_static(text)))
                .unwrap()
        };
        for length in [
            "47",
            "10",
            "99999999999999999999",
            "x",
            &usize::MAX.to_string(),
        ] {
            let body = read_body(with_length(length), "listing pods")
                .await
                .unwrap();
            assert_eq!(&body[..], &text[..], "Content-Length {length}");
        }
        let without = http::Response::new(Body::from(text.to_vec()));
        assert_eq!(
            &read_body(without, "listing pods").await.unwrap()[..],
            &text[..]
        );
        let empty = http::Response::new(Body::empty());
        assert!(read_body(empty, "listing pods").await.unwrap().is_empty());
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut lines = Lines {
            body: Body::empty(),
            buf: BytesMut::new(),
            scanned: 0,
            ended: false,
        };
        lines.buf.extend_from_slice(b"{\"a\":");
        assert!(lines.next_line().is_none());
        lines.buf.extend_from_slice(b"1}\n{\"b\"");
        assert_eq!(lines.next_line().as_deref(), Some(&b"{\"a\":1}"[..]));
        assert!(lines.next_line().is_none());
        lines.buf.extend_from_slice(b":2}\n\n");
        assert_eq!(lines.next_line().as_deref(), Some(&b"{\"b\":2}"[..]));
        assert_eq!(lines.next_line().as_deref(), Some(&b""[..]));
        assert!(lines.next_line().is_none());
    }
}

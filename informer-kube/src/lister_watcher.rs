//! [`KubeListerWatcher`]: lists and watches one resource through a kube-client [`Client`].

use std::fmt;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{StreamExt, stream};
use http_body_util::BodyExt;
use informer_core::{
    Error, Limit, ListOptions, ListPage, ListPageInfo, ListSink, ListerWatcher, Object, RawObject,
    RawWatchEvent, RawWatchStream, WatchOptions, WatchStream,
};
use kube_client::client::Body;
use kube_client::core::{ApiResource, DynamicObject, GroupVersionKind, Resource};
use kube_client::discovery::Scope;
use kube_client::{Api, Client};
use serde::de::DeserializeOwned;

use crate::buffer::{DecoderMemory, SLICE, TrackedBuf};
use crate::decode;
use crate::error::KubeError;
use crate::limits::ClientLimits;
use crate::list_stream::ListDecoder;

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
/// not decode. A list body is decoded as it arrives, each item straight into `K` as soon as
/// its last byte is in ([`ListerWatcher::list_into`] hands it over then; the body is never
/// held whole, nor sized from its `Content-Length`); a watch body is split into lines as it
/// arrives and each line decoded into a [`WatchEvent`](informer_core::WatchEvent).
///
/// # Hostile servers
///
/// Every request is bounded by [`ClientLimits`] (see [`with_limits`](Self::with_limits) and
/// the crate documentation's table): a response that does not start in time, a body that
/// stalls, a watch the server does not end at its `timeoutSeconds`, a watch line or list item
/// larger than the frame cap, each ends the request with
/// [`Error::LimitExceeded`]. What the decoders hold can be observed with
/// [`decoder_memory`](Self::decoder_memory).
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
///   watch body ends the stream after it);
/// - a broken limit is [`Error::LimitExceeded`], classified as a transport failure when the
///   server stalled and as a decode failure when a frame was too large; on a watch it ends
///   the stream after it.
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
    limits: ClientLimits,
    memory: DecoderMemory,
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
            limits: self.limits,
            memory: self.memory.clone(),
            _object: PhantomData,
        }
    }
}

impl<K> fmt::Debug for KubeListerWatcher<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeListerWatcher")
            .field("url_path", &self.target.url_path)
            .field("metadata_only", &self.target.metadata_only)
            .field("limits", &self.limits)
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
        let (resource, capabilities) = crate::resource::discover(&client, gvk).await?;
        if let (Scope::Cluster, Some(ns)) = (&capabilities.scope, namespace) {
            return Err(KubeError::ClusterScoped {
                resource: crate::resource::resource_name(&resource),
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
            limits: ClientLimits::default(),
            memory: DecoderMemory::default(),
            _object: PhantomData,
        }
    }

    /// Uses `limits` for every request (instead of [`ClientLimits::default`]).
    pub fn with_limits(mut self, limits: ClientLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits requests are made with.
    pub fn limits(&self) -> &ClientLimits {
        &self.limits
    }

    /// What the decoders of this lister-watcher (and its clones) hold: the bytes of partial
    /// items, lines and error answers, now and at the most. Decoded objects are not counted.
    pub fn decoder_memory(&self) -> &DecoderMemory {
        &self.memory
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

/// Sends `request` and waits for the response's head, at most `limits.response_timeout`; an
/// error answer becomes [`Error::Api`] (with `Retry-After`), its body read up to
/// `limits.max_error_body_bytes`.
async fn send(
    client: &Client,
    request: http::Request<Body>,
    context: &str,
    limits: &ClientLimits,
    memory: &DecoderMemory,
) -> Result<http::Response<Body>, Error> {
    let response = tokio::time::timeout(limits.response_timeout, client.send(request))
        .await
        .map_err(|_| {
            Error::limit(
                context.to_owned(),
                Limit::ResponseTimeout(limits.response_timeout),
            )
        })?
        .map_err(|e| Error::transport(context.to_owned(), e))?;
    let code = response.status();
    if code.is_client_error() || code.is_server_error() {
        let retry_after = decode::retry_after(response.headers());
        // The status line says what happened; a body that stalls or breaks only loses its
        // details.
        let body = read_prefix(
            response.into_body(),
            limits.max_error_body_bytes,
            limits.idle_timeout,
            memory,
        )
        .await;
        return Err(Error::Api {
            context: context.to_owned(),
            status: decode::error_status(code, &body),
            retry_after,
        });
    }
    Ok(response)
}

/// What the readers need of a response body: kube-client's [`Body`], or any other (tests).
pub(crate) trait ResponseBody:
    http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
    + Send
    + Unpin
    + 'static
{
}

impl<B> ResponseBody for B where
    B: http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static
{
}

/// The next frame of `body`, or a [`Limit::IdleTimeout`] error after `idle` without one.
async fn next_frame<B: ResponseBody>(
    body: &mut B,
    idle: Duration,
    context: &str,
) -> Result<Option<Bytes>, Error> {
    loop {
        let frame = tokio::time::timeout(idle, body.frame())
            .await
            .map_err(|_| Error::limit(context.to_owned(), Limit::IdleTimeout(idle)))?;
        match frame {
            None => return Ok(None),
            Some(Err(e)) => return Err(Error::transport(context.to_owned(), e)),
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    return Ok(Some(data));
                }
                // Trailers: nothing to read.
            }
        }
    }
}

/// Reads at most `max` bytes of a body (an error answer's: its `Status` is at the start, and
/// the rest is not worth waiting for), each read bounded by `idle`; a body that stalls or
/// breaks gives what arrived before. The buffer grows by what arrives, never by the
/// `Content-Length` the server announces.
async fn read_prefix<B: ResponseBody>(
    mut body: B,
    max: usize,
    idle: Duration,
    memory: &DecoderMemory,
) -> Vec<u8> {
    let mut buf = TrackedBuf::new(memory.clone(), max);
    while buf.len() < max {
        let Ok(Some(data)) = next_frame(&mut body, idle, "reading an error answer").await else {
            break;
        };
        for slice in data.chunks(SLICE) {
            let room = max - buf.len();
            buf.push(&slice[..slice.len().min(room)]);
            if buf.len() >= max {
                break;
            }
        }
    }
    buf.bytes().to_vec()
}

#[async_trait]
impl<K> ListerWatcher<K> for KubeListerWatcher<K>
where
    K: Object + DeserializeOwned,
{
    async fn list(&self, options: &ListOptions) -> Result<ListPage<K>, Error> {
        let mut items = Vec::new();
        let info = self.list_into(options, &mut items).await?;
        Ok(ListPage {
            items,
            resource_version: info.resource_version,
            continue_token: info.continue_token,
            remaining_item_count: info.remaining_item_count,
        })
    }

    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<K>,
    ) -> Result<ListPageInfo, Error> {
        let target = &*self.target;
        let uri = target.uri(&options.query_pairs());
        let context = target.context("listing", &uri);
        let accept = if target.metadata_only {
            METADATA_LIST_ACCEPT
        } else {
            "application/json"
        };
        let request = target.request(&uri, accept, false)?;
        let response = send(&self.client, request, &context, &self.limits, &self.memory).await?;
        read_list(
            response.into_body(),
            &context,
            &self.limits,
            &self.memory,
            sink,
        )
        .await
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<K>, Error> {
        let reader = self.start_watch(options).await?;
        Ok(Box::pin(
            watch_events::<K, _>(reader.0, reader.1, false)
                .map(|item| item.map(|event| event.event)),
        ))
    }

    /// Each object's text is copied once out of its line ([`RawObject::new`]).
    async fn watch_raw(&self, options: &WatchOptions) -> Result<RawWatchStream<K>, Error> {
        let reader = self.start_watch(options).await?;
        Ok(Box::pin(watch_events::<K, _>(reader.0, reader.1, true)))
    }
}

impl<K> KubeListerWatcher<K>
where
    K: Object + DeserializeOwned,
{
    /// Sends the watch request; the reader of its body and the context for errors.
    async fn start_watch(
        &self,
        options: &WatchOptions,
    ) -> Result<(WatchReader<Body>, Arc<str>), Error> {
        let target = &*self.target;
        let uri = target.uri(&options.query_pairs());
        let context: Arc<str> = target.context("watching", &uri).into();
        let accept = if target.metadata_only {
            METADATA_ACCEPT
        } else {
            "application/json"
        };
        let deadline =
            tokio::time::Instant::now() + self.limits.watch_deadline(options.timeout_seconds);
        let request = target.request(&uri, accept, true)?;
        let response = send(&self.client, request, &context, &self.limits, &self.memory).await?;
        let reader = WatchReader::new(
            response.into_body(),
            deadline,
            self.limits.watch_deadline(options.timeout_seconds),
            &self.limits,
            &self.memory,
        );
        Ok((reader, context))
    }
}

/// Reads and decodes a list body into `sink`, each read bounded by the idle timeout.
async fn read_list<K: DeserializeOwned, B: ResponseBody>(
    mut body: B,
    context: &str,
    limits: &ClientLimits,
    memory: &DecoderMemory,
    sink: &mut dyn ListSink<K>,
) -> Result<ListPageInfo, Error> {
    let mut decoder = ListDecoder::new(context, memory.clone(), limits.max_frame_bytes);
    let reading = format!("reading the answer while {context}");
    while let Some(data) = next_frame(&mut body, limits.idle_timeout, &reading).await? {
        decoder.feed(&data, sink)?;
    }
    decoder.finish()
}

/// Where a watch body's reader is: the body (gone once the stream has ended or failed), the
/// rest of the last frame, and the buffer holding the current line.
struct WatchReader<B> {
    body: Option<B>,
    /// What is left of the last frame, fed to `buf` a slice at a time.
    pending: Bytes,
    buf: TrackedBuf,
    /// Bytes of `buf` known to hold no newline.
    scanned: usize,
    /// A line returned by `read` (its length, newline included), consumed at the next call.
    returned: usize,
    ended: bool,
    /// Fires at the watch's deadline (one timer for the whole watch).
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// How long after its request the deadline is (for the error).
    deadline_after: Duration,
    idle: Option<Duration>,
    /// Fires after `idle` without a frame (re-armed by each frame), when `idle` is set.
    idle_timer: Option<Pin<Box<tokio::time::Sleep>>>,
    max_line: usize,
}

/// What the reader found next.
enum Read {
    /// A complete line of this many bytes (without its newline) starts the buffer.
    Line(usize),
    /// The stream ended; the buffer holds a last line without its newline, if any.
    End,
    /// The stream failed (and is over).
    Failed(Box<Error>),
}

impl<B: ResponseBody> WatchReader<B> {
    fn new(
        body: B,
        deadline: tokio::time::Instant,
        deadline_after: Duration,
        limits: &ClientLimits,
        memory: &DecoderMemory,
    ) -> Self {
        Self {
            body: Some(body),
            pending: Bytes::new(),
            buf: TrackedBuf::new(memory.clone(), limits.max_frame_bytes.saturating_add(SLICE)),
            scanned: 0,
            returned: 0,
            ended: false,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            deadline_after,
            idle: limits.watch_idle_timeout,
            idle_timer: limits
                .watch_idle_timeout
                .map(|idle| Box::pin(tokio::time::sleep(idle))),
            max_line: limits.max_frame_bytes,
        }
    }

    /// The length of the next complete line in the buffer (without its newline), if it
    /// holds one; the line stays at the buffer's start until the next `read`.
    fn next_line(&mut self) -> Option<usize> {
        let bytes = self.buf.bytes();
        let at = memchr::memchr(b'\n', &bytes[self.scanned..])?;
        let len = self.scanned + at;
        self.returned = len + 1;
        self.scanned = 0;
        Some(len)
    }

    /// The bytes a `Read::Line` or `Read::End` refers to.
    fn line(&self, len: usize) -> &[u8] {
        &self.buf.bytes()[..len]
    }

    /// Ends the stream: the body is dropped (the connection closes), memory given back.
    fn end(&mut self) {
        self.ended = true;
        self.body = None;
        self.pending = Bytes::new();
        self.buf.release();
        self.scanned = 0;
    }

    /// Reads until a line is complete, the stream ends, or it fails.
    async fn read(&mut self, context: &str) -> Read {
        self.buf.consume(std::mem::take(&mut self.returned));
        loop {
            if let Some(line) = self.next_line() {
                return Read::Line(line);
            }
            self.scanned = self.buf.len();
            if self.buf.len() > self.max_line {
                let error = Error::limit(
                    format!("reading events while {context}"),
                    Limit::FrameBytes(self.max_line as u64),
                );
                self.end();
                return Read::Failed(Box::new(error));
            }
            if !self.pending.is_empty() {
                let take = self.pending.len().min(SLICE);
                let slice = self.pending.split_to(take);
                self.buf.push(&slice);
                continue;
            }
            if self.ended {
                self.body = None;
                return Read::End;
            }
            let Some(body) = self.body.as_mut() else {
                self.ended = true;
                continue;
            };
            let idle_timer = &mut self.idle_timer;
            let idle = async {
                match idle_timer.as_mut() {
                    Some(timer) => timer.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let frame = tokio::select! {
                // A frame that is ready wins without touching the timers.
                biased;
                frame = body.frame() => frame,
                () = self.deadline.as_mut() => {
                    let error = Error::limit(
                        format!("reading events while {context}"),
                        Limit::WatchDeadline(self.deadline_after),
                    );
                    self.end();
                    return Read::Failed(Box::new(error));
                }
                () = idle => {
                    let error = Error::limit(
                        format!("reading events while {context}"),
                        Limit::IdleTimeout(self.idle.unwrap_or_default()),
                    );
                    self.end();
                    return Read::Failed(Box::new(error));
                }
            };
            if let (Some(timer), Some(idle)) = (self.idle_timer.as_mut(), self.idle) {
                timer.as_mut().reset(tokio::time::Instant::now() + idle);
            }
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.pending = data;
                    }
                }
                Some(Err(e)) => {
                    let e: Box<dyn std::error::Error + Send + Sync> = e.into();
                    // The connection broke: a partial line is lost, the stream ends.
                    let error = Error::transport(format!("reading events while {context}"), e);
                    self.end();
                    return Read::Failed(Box::new(error));
                }
                None => self.ended = true,
            }
        }
    }
}

/// The events of a watch body, one per line, decoded as they arrive; with each object's
/// text when `keep_text`.
fn watch_events<K, B: ResponseBody>(
    reader: WatchReader<B>,
    context: Arc<str>,
    keep_text: bool,
) -> impl futures::Stream<Item = Result<RawWatchEvent<K>, Error>> + Send
where
    K: Object + DeserializeOwned,
{
    let decode = move |line: &[u8], context: &str| {
        decode::watch_line_with_text::<K>(line, context).map(|(event, text)| RawWatchEvent {
            event,
            raw: text.filter(|_| keep_text).map(RawObject::new),
        })
    };
    stream::unfold(Some(reader), move |reader| {
        let context = Arc::clone(&context);
        async move {
            let mut reader = reader?;
            loop {
                match reader.read(&context).await {
                    Read::Line(len) => {
                        let line = reader.line(len);
                        if line.trim_ascii().is_empty() {
                            continue;
                        }
                        let event = decode(line, &context);
                        return Some((event, Some(reader)));
                    }
                    Read::End => {
                        // A last line without its newline.
                        let rest = reader.buf.bytes();
                        if rest.trim_ascii().is_empty() {
                            return None;
                        }
                        return Some((decode(rest, &context), None));
                    }
                    Read::Failed(error) => return Some((Err(*error), None)),
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
            shard_selector: Some(
                informer_core::shard::ShardSelector::even_split(
                    informer_core::shard::ShardField::Uid,
                    0,
                    2,
                )
                .unwrap(),
            ),
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
            shard_selector: list.shard_selector.clone(),
            ..WatchOptions::default()
        };
        let uri = target.uri(&watch.query_pairs());
        for part in [
            // shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')
            "shardSelector=shardRange%28object.metadata.uid%2C+%270x0000000000000000%27%2C+\
             %270x8000000000000000%27%29",
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

    /// A body fed by the test, frame by frame; dropping the sender ends it.
    fn channel_body() -> (
        tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>,
        impl ResponseBody,
    ) {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        let frames =
            futures::StreamExt::map(tokio_stream_of(rx), |r: Result<Bytes, std::io::Error>| {
                r.map(http_body::Frame::data)
            });
        (tx, http_body_util::StreamBody::new(frames))
    }

    fn tokio_stream_of<T: Send + 'static>(
        mut rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures::Stream<Item = T> + Send + Unpin + 'static {
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    fn small_limits() -> ClientLimits {
        ClientLimits {
            idle_timeout: Duration::from_secs(5),
            watch_idle_timeout: Some(Duration::from_secs(7)),
            watch_deadline_margin: Duration::from_secs(2),
            max_frame_bytes: 1000,
            max_error_body_bytes: 100,
            ..ClientLimits::default()
        }
    }

    #[tokio::test]
    async fn error_bodies_are_read_up_to_their_cap_whatever_the_length_header() {
        let memory = DecoderMemory::default();
        let (tx, body) = channel_body();
        tx.send(Ok(Bytes::from(vec![b'x'; 60]))).await.unwrap();
        tx.send(Ok(Bytes::from(vec![b'y'; 60]))).await.unwrap();
        // The sender stays open: the reader stops at its cap without waiting for more.
        let prefix = read_prefix(body, 100, Duration::from_secs(5), &memory).await;
        assert_eq!(prefix.len(), 100);
        assert!(
            memory.peak_held_bytes() <= 100,
            "{}",
            memory.peak_held_bytes()
        );
        assert_eq!(memory.held_bytes(), 0);
        drop(tx);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_list_body_is_an_idle_timeout() {
        let memory = DecoderMemory::default();
        let (tx, body) = channel_body();
        tx.send(Ok(Bytes::from_static(
            br#"{"items":[{"metadata":{"name":"a"}}"#,
        )))
        .await
        .unwrap();
        let started = tokio::time::Instant::now();
        let mut items: Vec<k8s_openapi::api::core::v1::Pod> = Vec::new();
        let error = read_list(body, "listing pods", &small_limits(), &memory, &mut items)
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(
            error.limit_exceeded(),
            Some(Limit::IdleTimeout(Duration::from_secs(5)))
        );
        assert_eq!(error.class(), informer_core::ErrorClass::Transport);
        // The first item was complete and went to the sink before the stall.
        assert_eq!(items.len(), 1);
        drop(tx);
    }

    #[tokio::test]
    async fn list_bodies_decode_in_any_chunking_and_count_their_bytes() {
        let text = br#"{"kind":"PodList","metadata":{"resourceVersion":"5","continue":"c"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}"#;
        for chunk in [1, 2, 7, 64, text.len()] {
            let memory = DecoderMemory::default();
            let (tx, body) = channel_body();
            tokio::spawn(async move {
                for piece in text.chunks(chunk) {
                    tx.send(Ok(Bytes::copy_from_slice(piece))).await.unwrap();
                }
            });
            let mut items: Vec<k8s_openapi::api::core::v1::Pod> = Vec::new();
            let info = read_list(body, "listing pods", &small_limits(), &memory, &mut items)
                .await
                .unwrap();
            assert_eq!(info.resource_version, "5");
            assert_eq!(info.continue_token.as_deref(), Some("c"));
            assert_eq!(info.items, 2);
            assert_eq!(info.bytes, Some(text.len() as u64));
            assert_eq!(items.len(), 2);
            assert_eq!(memory.held_bytes(), 0);
        }
    }

    async fn events(
        reader: WatchReader<impl ResponseBody>,
    ) -> Vec<Result<informer_core::WatchEvent<k8s_openapi::api::core::v1::Pod>, Error>> {
        raw_events(reader, false)
            .await
            .into_iter()
            .map(|item| item.map(|e| e.event))
            .collect()
    }

    async fn raw_events(
        reader: WatchReader<impl ResponseBody>,
        keep_text: bool,
    ) -> Vec<Result<RawWatchEvent<k8s_openapi::api::core::v1::Pod>, Error>> {
        futures::StreamExt::collect(watch_events::<k8s_openapi::api::core::v1::Pod, _>(
            reader,
            "watching pods".into(),
            keep_text,
        ))
        .await
    }

    /// With `keep_text`, each object event carries its object's text exactly as it stood in
    /// the line (both decode paths: the API server's own layout and any other), and nothing
    /// else carries one; without it, none does.
    #[tokio::test(start_paused = true)]
    async fn object_events_carry_their_objects_text_when_asked() {
        let object = r#"{"metadata":{"name":"a","resourceVersion":"2"},"spec":{"containers":[]}}"#;
        let lines = format!(
            "{{\"type\":\"ADDED\",\"object\":{object}}}\n\
             {{\"object\": {object}, \"type\": \"MODIFIED\"}}\n\
             {{\"type\":\"BOOKMARK\",\"object\":{{\"metadata\":{{\"resourceVersion\":\"3\"}}}}}}\n"
        );
        for keep_text in [true, false] {
            let (tx, body) = channel_body();
            tx.send(Ok(Bytes::from(lines.clone()))).await.unwrap();
            drop(tx);
            let reader = WatchReader::new(
                body,
                tokio::time::Instant::now() + Duration::from_secs(600),
                Duration::from_secs(600),
                &ClientLimits::default(),
                &DecoderMemory::default(),
            );
            let got = raw_events(reader, keep_text).await;
            assert_eq!(got.len(), 3);
            let texts: Vec<Option<String>> = got
                .iter()
                .map(|e| {
                    e.as_ref()
                        .unwrap()
                        .raw
                        .as_ref()
                        .map(|r| r.as_str().to_owned())
                })
                .collect();
            let expected = if keep_text {
                vec![Some(object.to_owned()), Some(object.to_owned()), None]
            } else {
                vec![None, None, None]
            };
            assert_eq!(texts, expected, "keep_text {keep_text}");
        }
    }

    const EVENT: &[u8] =
        br#"{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}"#;

    #[tokio::test(start_paused = true)]
    async fn a_watch_past_its_deadline_ends_with_a_typed_error() {
        let memory = DecoderMemory::default();
        let limits = ClientLimits {
            watch_idle_timeout: None,
            ..small_limits()
        };
        let (tx, body) = channel_body();
        let started = tokio::time::Instant::now();
        let after = limits.watch_deadline(Some(10));
        assert_eq!(after, Duration::from_secs(12));
        let reader = WatchReader::new(body, started + after, after, &limits, &memory);
        let feeder = tokio::spawn(async move {
            // An event every 5 s: never idle, never ending.
            loop {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let mut line = EVENT.to_vec();
                line.push(b'\n');
                if tx.send(Ok(Bytes::from(line))).await.is_err() {
                    return;
                }
            }
        });
        let got = events(reader).await;
        assert_eq!(started.elapsed(), Duration::from_secs(12));
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[..2].iter().all(Result::is_ok));
        let error = got[2].as_ref().unwrap_err();
        assert_eq!(error.limit_exceeded(), Some(Limit::WatchDeadline(after)));
        assert_eq!(error.class(), informer_core::ErrorClass::Transport);
        feeder.abort();
        assert_eq!(memory.held_bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_watch_ends_at_its_idle_timeout() {
        let memory = DecoderMemory::default();
        let limits = small_limits();
        let (tx, body) = channel_body();
        let started = tokio::time::Instant::now();
        let reader = WatchReader::new(
            body,
            started + Duration::from_secs(600),
            Duration::from_secs(600),
            &limits,
            &memory,
        );
        let mut line = EVENT.to_vec();
        line.push(b'\n');
        tx.send(Ok(Bytes::from(line))).await.unwrap();
        let got = events(reader).await;
        assert_eq!(started.elapsed(), Duration::from_secs(7));
        assert!(got[0].is_ok());
        assert_eq!(
            got[1].as_ref().unwrap_err().limit_exceeded(),
            Some(Limit::IdleTimeout(Duration::from_secs(7)))
        );
        drop(tx);
    }

    #[tokio::test]
    async fn an_endless_watch_line_is_cut_at_the_frame_cap() {
        let memory = DecoderMemory::default();
        let limits = small_limits();
        let (tx, body) = channel_body();
        let reader = WatchReader::new(
            body,
            tokio::time::Instant::now() + Duration::from_secs(600),
            Duration::from_secs(600),
            &limits,
            &memory,
        );
        let mut first = EVENT.to_vec();
        first.push(b'\n');
        first.extend_from_slice(&[b'x'; 300]);
        tx.send(Ok(Bytes::from(first))).await.unwrap();
        let feeder = tokio::spawn(async move {
            // 300 bytes at a time, no newline, until the reader hangs up.
            while tx.send(Ok(Bytes::from(vec![b'x'; 300]))).await.is_ok() {}
        });
        let got = events(reader).await;
        assert!(got[0].is_ok());
        let error = got[1].as_ref().unwrap_err();
        assert_eq!(error.limit_exceeded(), Some(Limit::FrameBytes(1000)));
        assert_eq!(error.class(), informer_core::ErrorClass::Decode);
        assert_eq!(got.len(), 2);
        // The rest of the stream was discarded: the feeder saw the body dropped.
        tokio::time::timeout(Duration::from_secs(10), feeder)
            .await
            .unwrap()
            .unwrap();
        assert!(
            memory.peak_held_bytes() <= 1000 + crate::buffer::SLICE,
            "{}",
            memory.peak_held_bytes()
        );
        assert_eq!(memory.held_bytes(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_server_that_never_answers_is_a_response_timeout() {
        let service = tower::service_fn(|_: http::Request<Body>| {
            std::future::pending::<Result<http::Response<Body>, std::io::Error>>()
        });
        let limits = ClientLimits {
            response_timeout: Duration::from_secs(3),
            ..small_limits()
        };
        let lister_watcher =
            KubeListerWatcher::<k8s_openapi::api::core::v1::Pod>::all(Client::new(service, "x"))
                .with_limits(limits);
        let started = tokio::time::Instant::now();
        let error = lister_watcher
            .list(&ListOptions::default())
            .await
            .unwrap_err();
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(
            error.limit_exceeded(),
            Some(Limit::ResponseTimeout(Duration::from_secs(3)))
        );
        assert!(error.to_string().contains("listing pods"), "{error}");
        let started = tokio::time::Instant::now();
        let Err(error) = lister_watcher.watch(&WatchOptions::default()).await else {
            panic!("a watch without an answer started");
        };
        assert_eq!(started.elapsed(), Duration::from_secs(3));
        assert_eq!(error.class(), informer_core::ErrorClass::Transport);
    }

    #[tokio::test(start_paused = true)]
    async fn an_error_answer_whose_body_stalls_is_still_the_api_error() {
        // 429 whose body never ends: the status line is enough, the body read is bounded.
        let (tx, body) = channel_body();
        let body = std::sync::Mutex::new(Some(body));
        let service = tower::service_fn(move |_: http::Request<Body>| {
            let body = body.lock().unwrap().take().unwrap();
            async move {
                Ok::<_, std::io::Error>(
                    http::Response::builder()
                        .status(429)
                        .header("retry-after", "3")
                        .header("content-length", "10000000000")
                        .body(http_body_util::BodyExt::boxed(body))
                        .unwrap(),
                )
            }
        });
        let lister_watcher =
            KubeListerWatcher::<k8s_openapi::api::core::v1::Pod>::all(Client::new(service, "x"))
                .with_limits(small_limits());
        tx.send(Ok(Bytes::from_static(b"slow down"))).await.unwrap();
        let started = tokio::time::Instant::now();
        let error = lister_watcher
            .list(&ListOptions::default())
            .await
            .unwrap_err();
        // The body's idle timeout, then the answer as far as it came.
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert_eq!(error.class(), informer_core::ErrorClass::Throttled);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(error.status().unwrap().message, "slow down");
        assert!(lister_watcher.decoder_memory().peak_held_bytes() <= 100);
        drop(tx);
    }

    #[tokio::test]
    async fn lines_split_across_frames_and_a_last_line_without_newline() {
        let memory = DecoderMemory::default();
        let (tx, body) = channel_body();
        let reader = WatchReader::new(
            body,
            tokio::time::Instant::now() + Duration::from_secs(600),
            Duration::from_secs(600),
            &small_limits(),
            &memory,
        );
        let mut text = EVENT.to_vec();
        text.extend_from_slice(b"\n\n  \n");
        text.extend_from_slice(EVENT);
        tokio::spawn(async move {
            for piece in text.chunks(5) {
                tx.send(Ok(Bytes::copy_from_slice(piece))).await.unwrap();
            }
        });
        let got = events(reader).await;
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(Result::is_ok));
    }
}

//! Kubernetes Events (`events.k8s.io/v1`) from controllers: [`EventRecorder::publish`] records
//! what a controller did or saw about an object, where `kubectl describe` and `kubectl events`
//! show it.
//!
//! Repeats are folded as client-go's event recorder folds them: an event with the same
//! action, reason, type, regarding and related object as one published in the last six
//! minutes is not created again; the first one's `series` counts it instead (`count`,
//! `lastObservedTime`). Unlike client-go, which writes the second occurrence at once and
//! later counts every 30 minutes, every repeat is written at once (one PATCH), as
//! kube-runtime's recorder does: the count on the server is always current. The folding
//! state is bounded ([`EventRecorder::with_capacity`]); an event the server no longer holds
//! (Events expire after an hour) is created anew.
//!
//! Each request is bounded by a timeout ([`EventRecorder::with_timeout`], 10 s by default).
//! Publishing never blocks on more than one request at a time per recorder: publishes are
//! serialised, which keeps the folding exact.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event as KubeEvent, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube_client::api::{Patch, PatchParams, PostParams};
use kube_client::{Api, Client};
use serde_json::json;
use tokio::sync::Mutex;
use tokio::time::Instant;

use crate::error::map_kube_error;

/// How long a published event folds its repeats (client-go's `finishTime`).
pub const SERIES_WINDOW: Duration = Duration::from_secs(6 * 60);

/// Events longer than this (the API server's limit on `note`, in bytes) are cut.
pub const MAX_NOTE_BYTES: usize = 1024;

/// The default bound of the folding state: events whose repeats are tracked at once.
pub const DEFAULT_CAPACITY: usize = 4096;

/// The default timeout of each request.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Who reports events: `reportingController` (`example.com/my-operator`) and
/// `reportingInstance` (the pod's name, for example).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reporter {
    /// The controller's name, `reportingController`.
    pub controller: String,
    /// The replica, `reportingInstance`; the controller's name when `None`.
    pub instance: Option<String>,
}

impl Reporter {
    /// A reporter named `controller`, its instance from the `POD_NAME` or `HOSTNAME`
    /// environment variable when one is set.
    pub fn new(controller: impl Into<String>) -> Self {
        let instance = ["POD_NAME", "HOSTNAME"]
            .iter()
            .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()));
        Self {
            controller: controller.into(),
            instance,
        }
    }
}

/// `Normal` or `Warning`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Things going as they should.
    Normal,
    /// Something the object's owner may want to look at.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Normal => "Normal",
            Self::Warning => "Warning",
        }
    }
}

/// One event to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `Normal` or `Warning`.
    pub type_: EventType,
    /// Why, in `UpperCamelCase` (`Created`, `FailedSync`); at most 128 characters.
    pub reason: String,
    /// What was done or failed (`Reconcile`, `Create`); at most 128 characters.
    pub action: String,
    /// A human-readable description; cut to [`MAX_NOTE_BYTES`].
    pub note: Option<String>,
    /// Another object involved (`related`), if any.
    pub related: Option<ObjectReference>,
}

/// Why [`EventRecorder::publish`] failed. The controller should go on: an event is
/// information, not state.
#[derive(Debug, thiserror::Error)]
#[error("cannot publish event {reason} about {regarding}")]
pub struct PublishError {
    /// The event's reason.
    pub reason: String,
    /// The object it is about (`namespace/name`).
    pub regarding: String,
    /// Why: an API error (classified), a transport error or a timeout.
    #[source]
    pub source: Box<informer_core::Error>,
}

/// What makes two events the same series (client-go's isomorphic key; the note is not part of
/// it).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SeriesKey {
    type_: EventType,
    reason: String,
    action: String,
    regarding: RefKey,
    related: Option<RefKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct RefKey {
    api_version: Option<String>,
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    field_path: Option<String>,
}

impl From<&ObjectReference> for RefKey {
    fn from(r: &ObjectReference) -> Self {
        Self {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            field_path: r.field_path.clone(),
        }
    }
}

/// A published event whose repeats are folded into its series.
#[derive(Debug, Clone)]
struct Published {
    namespace: String,
    name: String,
    count: i32,
    last: Instant,
}

/// The folding state: at most `capacity` events, each for [`SERIES_WINDOW`] after its last
/// occurrence.
#[derive(Debug)]
struct Series {
    capacity: usize,
    published: HashMap<SeriesKey, Published>,
}

impl Series {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            published: HashMap::new(),
        }
    }

    /// The live event of `key` at `now`, if one is folding repeats.
    fn live(&mut self, key: &SeriesKey, now: Instant) -> Option<&mut Published> {
        let expired = self
            .published
            .get(key)
            .is_some_and(|p| now.saturating_duration_since(p.last) >= SERIES_WINDOW);
        if expired {
            self.published.remove(key);
        }
        self.published.get_mut(key)
    }

    /// Remembers a newly created event, making room first: expired events go, then the
    /// least recently seen.
    fn insert(&mut self, key: SeriesKey, published: Published, now: Instant) {
        if self.capacity == 0 {
            return;
        }
        if self.published.len() >= self.capacity {
            self.published
                .retain(|_, p| now.saturating_duration_since(p.last) < SERIES_WINDOW);
        }
        while self.published.len() >= self.capacity {
            let oldest = self
                .published
                .iter()
                .min_by_key(|(_, p)| p.last)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => self.published.remove(&k),
                None => break,
            };
        }
        self.published.insert(key, published);
    }
}

/// Publishes Events for one [`Reporter`]; see the [module docs](self). Cheap to share behind
/// an `Arc`; publishes through it are serialised.
///
/// ```no_run
/// # async fn demo(client: kube_client::Client, cm: k8s_openapi::api::core::v1::ConfigMap) -> Result<(), Box<dyn std::error::Error>> {
/// use informer_kube::events::{Event, EventRecorder, EventType, Reporter};
/// use kube_client::core::Resource;
///
/// let recorder = EventRecorder::new(client, Reporter::new("example.com/mirror"));
/// let event = Event {
///     type_: EventType::Normal,
///     reason: "Mirrored".into(),
///     action: "Reconcile".into(),
///     note: Some("copied to 3 namespaces".into()),
///     related: None,
/// };
/// recorder.publish(&event, &cm.object_ref(&())).await?;
/// # Ok(()) }
/// ```
pub struct EventRecorder {
    client: Client,
    reporter: Reporter,
    timeout: Duration,
    series: Mutex<Series>,
    serial: AtomicU64,
}

impl std::fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventRecorder")
            .field("reporter", &self.reporter)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl EventRecorder {
    /// A recorder for `reporter`, folding the repeats of up to [`DEFAULT_CAPACITY`] events,
    /// each request bounded by [`DEFAULT_TIMEOUT`].
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            timeout: DEFAULT_TIMEOUT,
            series: Mutex::new(Series::new(DEFAULT_CAPACITY)),
            serial: AtomicU64::new(0),
        }
    }

    /// Folds the repeats of at most `capacity` events (0: none, every event is created).
    pub fn with_capacity(self, capacity: usize) -> Self {
        Self {
            series: Mutex::new(Series::new(capacity)),
            ..self
        }
    }

    /// Bounds each request by `timeout`.
    pub fn with_timeout(self, timeout: Duration) -> Self {
        Self { timeout, ..self }
    }

    /// Publishes `event` about `regarding` (in its namespace; `default` for a cluster-scoped
    /// object): a new Event, or one more in the series of the same event published in the last
    /// six minutes.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), PublishError> {
        let key = SeriesKey {
            type_: event.type_,
            reason: event.reason.clone(),
            action: event.action.clone(),
            regarding: regarding.into(),
            related: event.related.as_ref().map(RefKey::from),
        };
        let describe = || match (&regarding.namespace, &regarding.name) {
            (Some(ns), Some(name)) => format!("{ns}/{name}"),
            (_, name) => name.clone().unwrap_or_default(),
        };
        let fail = |source: informer_core::Error| PublishError {
            reason: event.reason.clone(),
            regarding: describe(),
            source: Box::new(source),
        };
        let mut series = self.series.lock().await;
        let now = Instant::now();
        if let Some(published) = series.live(&key, now) {
            let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &published.namespace);
            let count = published.count + 1;
            let patch = json!({"series": EventSeries {
                count,
                last_observed_time: MicroTime(k8s_openapi::jiff::Timestamp::now()),
            }});
            let sent = tokio::time::timeout(
                self.timeout,
                api.patch(
                    &published.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                ),
            )
            .await;
            match sent {
                Ok(Ok(_)) => {
                    published.count = count;
                    published.last = now;
                    return Ok(());
                }
                // Expired on the server (Events live an hour): start a new one.
                Ok(Err(kube_client::Error::Api(status))) if status.code == 404 => {
                    series.published.remove(&key);
                }
                Ok(Err(e)) => {
                    return Err(fail(map_kube_error("updating the event's series", e)));
                }
                Err(_) => return Err(fail(timed_out("updating the event's series", self.timeout))),
            }
        }
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = format!(
            "{}.{:x}{:04x}",
            regarding.name.as_deref().unwrap_or("unnamed"),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            self.serial.fetch_add(1, Ordering::Relaxed) & 0xffff,
        );
        let created = KubeEvent {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                ..ObjectMeta::default()
            },
            event_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            type_: Some(event.type_.as_str().to_owned()),
            reason: Some(event.reason.clone()),
            action: Some(event.action.clone()),
            note: event.note.as_deref().map(cut_note),
            regarding: Some(regarding.clone()),
            related: event.related.clone(),
            reporting_controller: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            ..KubeEvent::default()
        };
        let api: Api<KubeEvent> = Api::namespaced(self.client.clone(), &namespace);
        match tokio::time::timeout(self.timeout, api.create(&PostParams::default(), &created)).await
        {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(fail(map_kube_error("creating the event", e))),
            Err(_) => return Err(fail(timed_out("creating the event", self.timeout))),
        }
        series.insert(
            key,
            Published {
                namespace,
                name,
                count: 1,
                last: now,
            },
            now,
        );
        Ok(())
    }
}

/// A request that did not answer within `timeout`.
fn timed_out(context: &str, timeout: Duration) -> informer_core::Error {
    informer_core::Error::limit(context, informer_core::Limit::ResponseTimeout(timeout))
}

/// `note` cut to [`MAX_NOTE_BYTES`] on a character boundary.
fn cut_note(note: &str) -> String {
    informer_core::cut_at_char_boundary(note, MAX_NOTE_BYTES).to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    fn key(reason: &str) -> SeriesKey {
        SeriesKey {
            type_: EventType::Normal,
            reason: reason.to_owned(),
            action: "Reconcile".to_owned(),
            regarding: RefKey::from(&ObjectReference::default()),
            related: None,
        }
    }

    fn published(last: Instant) -> Published {
        Published {
            namespace: "ns".into(),
            name: "e".into(),
            count: 1,
            last,
        }
    }

    #[test]
    fn repeats_fold_for_six_minutes_after_the_last_occurrence() {
        let start = Instant::now();
        let mut series = Series::new(8);
        series.insert(key("A"), published(start), start);
        let later = start + SERIES_WINDOW - Duration::from_secs(1);
        assert!(series.live(&key("A"), later).is_some());
        assert!(series.live(&key("B"), later).is_none());
        assert!(
            series.live(&key("A"), start + SERIES_WINDOW).is_none(),
            "expired"
        );
        assert!(series.published.is_empty(), "and forgotten");
    }

    #[test]
    fn the_state_is_bounded_expired_first_then_the_least_recent() {
        let start = Instant::now();
        let mut series = Series::new(2);
        series.insert(key("old"), published(start), start);
        let t1 = start + SERIES_WINDOW;
        series.insert(key("a"), published(t1), t1);
        let t2 = t1 + Duration::from_secs(1);
        series.insert(key("b"), published(t2), t2);
        assert!(
            series.published.contains_key(&key("a")),
            "the expired one left"
        );
        assert!(!series.published.contains_key(&key("old")));
        let t3 = t2 + Duration::from_secs(1);
        series.insert(key("c"), published(t3), t3);
        assert_eq!(series.published.len(), 2);
        assert!(
            !series.published.contains_key(&key("a")),
            "the least recent left"
        );
        let mut none = Series::new(0);
        none.insert(key("a"), published(t3), t3);
        assert!(none.published.is_empty());
    }

    #[test]
    fn notes_are_cut_on_a_character_boundary() {
        assert_eq!(cut_note("short"), "short");
        let long = "é".repeat(MAX_NOTE_BYTES);
        let cut = cut_note(&long);
        assert!(cut.len() <= MAX_NOTE_BYTES && cut.len() >= MAX_NOTE_BYTES - 1);
        assert!(cut.chars().all(|c| c == 'é'));
    }
}

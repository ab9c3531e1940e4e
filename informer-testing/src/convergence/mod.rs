//! Convergence checking: did an informer's cache, and every one of its handlers, end up with the
//! server's state, having heard about each object's life exactly once?
//!
//! A test records what each handler received ([`Recording`]: a [`ResourceEventHandler`] for the
//! trait, [`Recording::record`] for event streams), writes down the server's truth at the end
//! ([`Expected`]: the live objects, and optionally every deletion the test made), and, once the
//! informer is quiet, calls [`check_convergence`] with the informer's cache content. The
//! checker depends only on `informer-core` types, so it works for any informer implementation.
//!
//! # The rules
//!
//! Each handler's notifications are *folded*, in order, into a state `key → (uid,
//! resourceVersion)` (the key is `namespace/name`, from [`key_of`] or the tombstone):
//!
//! | notification            | required before                                      | state after |
//! |-------------------------|------------------------------------------------------|-------------|
//! | `Add(new)`              | key absent; `new`'s UID never added before            | key → new   |
//! | `Update(old, new)`      | key present, holding exactly `old`'s UID and resourceVersion; `old` and `new` share the key; same UID (unless [`UidChange::Update`]); resourceVersion not lower | key → new |
//! | `Delete(object)`        | key present with the object's UID; with recorded deletions, the object is the server's final state (same resourceVersion as the deletion) | key removed |
//! | `Delete(tombstone)`     | key present; `last_known` is exactly the state (same UID and resourceVersion): the last thing the handler was told | key removed |
//!
//! An update with equal resourceVersions is a resync and is allowed. resourceVersions are
//! compared for order only when both are integers (the fake server's are); otherwise only for
//! equality. When a rule is broken the violation is recorded and folding goes on with the
//! notification applied, so that one bug gives one violation rather than a cascade.
//!
//! After folding, with the server's final state in hand:
//!
//! - **(a) cache**: the informer's cache holds exactly the server's keys, each with the
//!   server's UID and resourceVersion;
//! - **(b) handlers**: every handler's folded state equals the server's state, the same way;
//! - **(c) deletions**: per handler and per UID: at most one add; an object the handler was
//!   told about and that no longer exists on the server was reported deleted exactly once (by
//!   final state or tombstone); an object that still exists was never reported deleted; and,
//!   when deletions were recorded ([`Expected::track_deletions`]), a UID the handler heard of is
//!   either live on the server or among the recorded deletions. With
//!   [`CheckOptions::objects_may_return`] (informers with a label selector, where objects
//!   leave the selection and come back) a UID may be added again after its delete: each add is
//!   then closed by exactly one delete, except the last add of an object still selected;
//! - **(d) UID changes**: with [`UidChange::DeleteAndAdd`] (the informer's default), an update
//!   never changes the UID: a namesake replacing a deleted object must come as delete then add.
//!   With [`UidChange::Update`] (client-go's behaviour) such an update counts, for rule (c), as
//!   the deletion of the old UID and the addition of the new one.
//!
//! - **(e) content** (with [`check_convergence_with_content`] and digests in [`Expected`]):
//!   the cache's object of each key, each handler's last object of each key, and every
//!   `Delete` carrying a final object, have the content the server holds (after the
//!   informer's transform), compared as [`Digest`]s: same UID and resourceVersion is not
//!   enough, since a transform skipped on one path keeps both.
//!
//! Objects the server created and deleted while the informer was not looking (between two
//! relists) need never be reported at all: a handler that never heard of an object is not told
//! of its deletion.
//!
//! Resync cadence, checked over a quiet window by [`check_resync_cadence`] from a
//! [`Recording`]'s timestamps, is described there.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use informer_core::{Notification, ObjectOrTombstone};
//! use informer_testing::JsonObject;
//! use informer_testing::convergence::{CheckOptions, Expected, Recording, check_convergence};
//!
//! let obj = |rv: &str| Arc::new(JsonObject::new(Some("ns"), "a").with_uid("u1").with_resource_version(rv));
//! let handler = Recording::new("h1");
//! handler.record(Notification::Add { object: obj("1"), is_in_initial_list: true });
//! handler.record(Notification::Update { old: obj("1"), new: obj("2") });
//!
//! let mut expected = Expected::new();
//! expected.insert("ns/a", Some("u1"), Some("2"));
//! let summary = check_convergence(&expected, &[obj("2")], &[&handler], &CheckOptions::default()).unwrap();
//! assert_eq!(summary.handlers[0].updates, 1);
//!
//! // A missed deletion is caught, with who, what and where.
//! handler.record(Notification::Delete(ObjectOrTombstone::Object(obj("3"))));
//! handler.record(Notification::Add { object: obj("2"), is_in_initial_list: false });
//! let report = check_convergence(&expected, &[obj("2")], &[&handler], &CheckOptions::default()).unwrap_err();
//! assert!(report.to_string().contains("h1"));
//! ```

mod cadence;
mod model;
mod report;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use informer_core::{
    KeyError, Notification, Object, ObjectOrTombstone, ResourceEventHandler, UidChange, key_of,
};
use parking_lot::Mutex;
use tokio::time::Instant;

pub use cadence::{CadenceSummary, ResyncCadence, check_resync_cadence};
pub use model::{CheckSummary, Digest, HandlerSummary, Version, digest};
pub use report::{ConvergenceReport, Subject, Violation, ViolationKind};

/// One object deleted on the server, as the test recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Deletion {
    /// Its key (`namespace/name`).
    pub key: String,
    /// The resourceVersion of its final state (the deletion's), which a `DELETED` watch event
    /// carries.
    pub final_resource_version: Option<String>,
    /// The digest of its final state as the informer should hand it out (after its
    /// transform), when the test gave one ([`Expected::set_final_content`]).
    pub final_digest: Option<Digest>,
}

/// The server's truth at the end of a test: the live objects, and (optionally) every object
/// the test deleted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expected {
    objects: BTreeMap<String, Version>,
    deletions: Option<HashMap<String, Deletion>>,
    contents: BTreeMap<String, Digest>,
}

impl Expected {
    /// Nothing live, deletions not tracked.
    pub fn new() -> Self {
        Self::default()
    }

    /// The given objects as the live state. Objects without a key are reported as the error.
    pub fn from_objects<'a, K: Object>(
        objects: impl IntoIterator<Item = &'a K>,
    ) -> Result<Self, KeyError> {
        let mut expected = Self::new();
        for obj in objects {
            let key = key_of(obj)?;
            expected.insert(
                key.as_str(),
                obj.object_uid(),
                obj.object_resource_version(),
            );
        }
        Ok(expected)
    }

    /// Declares a live object (replacing any earlier declaration of the key, and forgetting
    /// its content digest).
    pub fn insert(&mut self, key: &str, uid: Option<&str>, resource_version: Option<&str>) {
        self.objects
            .insert(key.to_owned(), Version::new(uid, resource_version));
        self.contents.remove(key);
    }

    /// Declares the content of the live object under `key`, as the informer should hold it
    /// (after its transform), for rule (e). Keys without a digest are not content-checked.
    pub fn set_content(&mut self, key: &str, digest: Digest) {
        self.contents.insert(key.to_owned(), digest);
    }

    /// The content digests declared with [`set_content`](Self::set_content), by key.
    pub fn contents(&self) -> &BTreeMap<String, Digest> {
        &self.contents
    }

    /// Declares the content of the final state of the deleted object `uid` (recorded with
    /// [`record_deletion`](Self::record_deletion)), as the informer should hand it out.
    /// Returns false if no deletion of `uid` was recorded.
    pub fn set_final_content(&mut self, uid: &str, digest: Digest) -> bool {
        match self.deletions.as_mut().and_then(|d| d.get_mut(uid)) {
            Some(deletion) => {
                deletion.final_digest = Some(digest);
                true
            }
            None => false,
        }
    }

    /// Turns on deletion tracking (with no deletion yet): the checker then requires every UID
    /// a handler heard of to be live or recorded deleted, and every `Delete` carrying a final
    /// object to carry the recorded final state.
    pub fn track_deletions(&mut self) {
        self.deletions.get_or_insert_with(HashMap::new);
    }

    /// Records that the object `uid` under `key` was deleted, its final state at
    /// `final_resource_version`. Turns deletion tracking on.
    pub fn record_deletion(&mut self, uid: &str, key: &str, final_resource_version: Option<&str>) {
        self.deletions.get_or_insert_with(HashMap::new).insert(
            uid.to_owned(),
            Deletion {
                key: key.to_owned(),
                final_resource_version: final_resource_version.map(str::to_owned),
                final_digest: None,
            },
        );
    }

    /// Records the deletion of `obj` (its final state: the object a delete returned, or the
    /// `DELETED` event's object). Turns deletion tracking on. An object without a key is
    /// reported as the error.
    pub fn record_deleted<K: Object>(&mut self, obj: &K) -> Result<(), KeyError> {
        let key = key_of(obj)?;
        let uid = obj.object_uid().unwrap_or_default();
        self.record_deletion(uid, key.as_str(), obj.object_resource_version());
        Ok(())
    }

    /// The live objects, by key.
    pub fn objects(&self) -> &BTreeMap<String, Version> {
        &self.objects
    }

    /// The recorded deletions by UID, when tracked.
    pub fn deletions(&self) -> Option<&HashMap<String, Deletion>> {
        self.deletions.as_ref()
    }

    fn live_uids(&self) -> BTreeSet<&str> {
        self.objects
            .values()
            .filter_map(|v| v.uid.as_deref())
            .collect()
    }
}

/// Options of [`check_convergence`]. Start from `Default`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOptions {
    /// How updates that change the UID are judged, as the informer delivers them:
    /// [`UidChange::DeleteAndAdd`] (the default) makes such an update a violation (rule d: a
    /// namesake must come as delete then add); [`UidChange::Update`] (client-go's behaviour)
    /// allows it and counts it as the deletion of the old UID and the addition of the new one.
    pub uid_changes: UidChange,
    /// Whether an object may be reported deleted and later added again under the same UID:
    /// what an informer with a label selector sees when an object leaves the selection and
    /// comes back. Then each add must be closed by one delete (except the last add of an
    /// object the server still selects), and [`Expected`] should hold the selected objects
    /// only, without deletion tracking (leaving the selection is not a deletion). Default
    /// false: a UID is added at most once.
    pub objects_may_return: bool,
    /// How many notifications about an offending key the report shows per handler (the last
    /// ones). Default 12.
    pub trace_len: usize,
}

impl Default for CheckOptions {
    fn default() -> Self {
        Self {
            uid_changes: UidChange::DeleteAndAdd,
            objects_may_return: false,
            trace_len: 12,
        }
    }
}

/// The notifications one handler received, in order: thread-safe and cheap to clone.
///
/// Give [`handler`](Self::handler) to an informer, or call [`record`](Self::record) from the
/// consumer of an event stream. Objects are kept as the shared `Arc`s the informer handed out,
/// each with the (tokio) time it was recorded at ([`timed`](Self::timed)): virtual time on a
/// paused runtime.
pub struct Recording<K> {
    name: Arc<str>,
    notifications: Arc<Mutex<Recorded<K>>>,
}

/// The notifications and the instants they were recorded at, side by side.
struct Recorded<K> {
    notifications: Vec<Notification<K>>,
    at: Vec<Instant>,
}

impl<K> Default for Recorded<K> {
    fn default() -> Self {
        Self {
            notifications: Vec::new(),
            at: Vec::new(),
        }
    }
}

impl<K> Clone for Recording<K> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            notifications: Arc::clone(&self.notifications),
        }
    }
}

impl<K> fmt::Debug for Recording<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recording")
            .field("name", &self.name)
            .field("len", &self.len())
            .finish()
    }
}

impl<K> Recording<K> {
    /// An empty recording; `name` identifies the handler in reports.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: Arc::from(name.into()),
            notifications: Arc::default(),
        }
    }

    /// The handler's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Appends one notification, stamped with the current (tokio) time.
    pub fn record(&self, notification: Notification<K>) {
        let now = Instant::now();
        let mut recorded = self.notifications.lock();
        recorded.notifications.push(notification);
        recorded.at.push(now);
    }

    /// How many notifications were recorded.
    pub fn len(&self) -> usize {
        self.notifications.lock().notifications.len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the notifications (the objects are shared, not copied).
    pub fn notifications(&self) -> Vec<Notification<K>> {
        self.notifications.lock().notifications.clone()
    }

    /// The notifications recorded from position `from` on, each with the time it was recorded.
    pub fn timed(&self, from: usize) -> Vec<(Instant, Notification<K>)> {
        let recorded = self.notifications.lock();
        let from = from.min(recorded.notifications.len());
        recorded.at[from..]
            .iter()
            .copied()
            .zip(recorded.notifications[from..].iter().cloned())
            .collect()
    }

    /// A [`ResourceEventHandler`] appending to this recording.
    pub fn handler(&self) -> RecordingHandler<K> {
        RecordingHandler {
            recording: self.clone(),
        }
    }
}

/// A [`ResourceEventHandler`] that appends every call to a [`Recording`].
pub struct RecordingHandler<K> {
    recording: Recording<K>,
}

impl<K> fmt::Debug for RecordingHandler<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecordingHandler")
            .field("recording", &self.recording)
            .finish()
    }
}

impl<K: Object> ResourceEventHandler<K> for RecordingHandler<K> {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        self.recording.record(Notification::Add {
            object: Arc::clone(obj),
            is_in_initial_list,
        });
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        self.recording.record(Notification::Update {
            old: Arc::clone(old),
            new: Arc::clone(new),
        });
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<K>) {
        self.recording.record(Notification::Delete(obj.clone()));
    }
}

/// The state folded from one handler's notifications, and the rules they broke on the way.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Folded {
    /// `key → version` after the last notification.
    pub state: BTreeMap<String, Version>,
    /// Per UID: its key, and how often it was added and deleted.
    pub lives: BTreeMap<String, UidLife>,
    /// The broken rules, in order (subject: the handler's name).
    pub violations: Vec<Violation>,
    /// Counts by kind.
    pub summary: HandlerSummary,
}

/// How one UID's life looked to a handler.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct UidLife {
    /// The key it lived under.
    pub key: String,
    /// Times it was added (an update changing to it counts, with [`UidChange::Update`]).
    pub adds: usize,
    /// Times it was deleted (an update changing from it counts, with [`UidChange::Update`]).
    pub deletes: usize,
}

/// Folds one handler's notifications by the [module rules](self), without the final
/// comparison with the server (see [`check_convergence`]).
pub fn fold<K: Object>(
    handler: &str,
    notifications: &[Notification<K>],
    options: &CheckOptions,
) -> Folded {
    let mut f = Folder {
        subject: Subject::Handler(handler.to_owned()),
        options,
        out: Folded {
            summary: HandlerSummary {
                name: handler.to_owned(),
                notifications: notifications.len(),
                ..HandlerSummary::default()
            },
            ..Folded::default()
        },
        last_delete: None,
    };
    for (index, n) in notifications.iter().enumerate() {
        f.step(index, n);
    }
    f.out
}

struct Folder<'a> {
    subject: Subject,
    options: &'a CheckOptions,
    out: Folded,
    /// The key and UID of the previous notification when it was a delete.
    last_delete: Option<(String, Option<String>)>,
}

impl Folder<'_> {
    fn violation(&mut self, key: Option<&str>, kind: ViolationKind) {
        self.out.violations.push(Violation {
            subject: self.subject.clone(),
            key: key.map(str::to_owned),
            kind,
        });
    }

    fn life(&mut self, uid: &str, key: &str) -> &mut UidLife {
        self.out
            .lives
            .entry(uid.to_owned())
            .or_insert_with(|| UidLife {
                key: key.to_owned(),
                ..UidLife::default()
            })
    }

    fn step<K: Object>(&mut self, index: usize, n: &Notification<K>) {
        let last_delete = self.last_delete.take();
        match n {
            Notification::Add {
                object,
                is_in_initial_list,
            } => {
                if *is_in_initial_list {
                    self.out.summary.initial_adds += 1;
                } else {
                    self.out.summary.adds += 1;
                }
                let Some(key) = self.key(index, n, key_of(object.as_ref())) else {
                    return;
                };
                let new = Version::of(object.as_ref());
                if let Some((deleted_key, deleted_uid)) = last_delete
                    && deleted_key == key
                    && deleted_uid != new.uid
                {
                    self.out.summary.replacements += 1;
                }
                if let Some(present) = self.out.state.get(&key).cloned() {
                    self.violation(
                        Some(&key),
                        ViolationKind::AddOfPresentKey {
                            index,
                            present,
                            added: new.clone(),
                        },
                    );
                }
                if let Some(uid) = new.uid.as_deref() {
                    let life = self.life(uid, &key);
                    life.adds += 1;
                    let (adds, deletes) = (life.adds, life.deletes);
                    let returning = self.options.objects_may_return && adds == deletes + 1;
                    if adds > 1 && !returning {
                        self.violation(
                            Some(&key),
                            ViolationKind::DuplicateAdd {
                                index,
                                uid: uid.to_owned(),
                                deleted_in_between: deletes > 0,
                            },
                        );
                    }
                }
                self.out.state.insert(key, new);
            }
            Notification::Update { old, new } => {
                let Some(key) = self.key(index, n, key_of(new.as_ref())) else {
                    return;
                };
                let old_version = Version::of(old.as_ref());
                let new_version = Version::of(new.as_ref());
                if old_version.resource_version == new_version.resource_version {
                    self.out.summary.resyncs += 1;
                } else {
                    self.out.summary.updates += 1;
                }
                match key_of(old.as_ref()) {
                    Ok(old_key) if old_key.as_str() == key => {}
                    old_key => self.violation(
                        Some(&key),
                        ViolationKind::UpdateKeyMismatch {
                            index,
                            old_key: old_key.map_or_else(|e| e.to_string(), |k| k.to_string()),
                        },
                    ),
                }
                match self.out.state.get(&key).cloned() {
                    None => self.violation(
                        Some(&key),
                        ViolationKind::UpdateOfAbsentKey {
                            index,
                            old: old_version.clone(),
                        },
                    ),
                    Some(current) if current != old_version => self.violation(
                        Some(&key),
                        ViolationKind::UpdateFromStaleState {
                            index,
                            current,
                            old: old_version.clone(),
                        },
                    ),
                    Some(_) => {}
                }
                if regressed(&old_version, &new_version) {
                    self.violation(
                        Some(&key),
                        ViolationKind::ResourceVersionRegressed {
                            index,
                            from: old_version.clone(),
                            to: new_version.clone(),
                        },
                    );
                }
                if old_version.uid != new_version.uid {
                    match self.options.uid_changes {
                        UidChange::Update => {
                            if let Some(uid) = old_version.uid.as_deref() {
                                self.life(uid, &key).deletes += 1;
                            }
                            if let Some(uid) = new_version.uid.as_deref() {
                                self.life(uid, &key).adds += 1;
                            }
                        }
                        // Any mode but client-go's wants a namesake told as delete then add.
                        _ => self.violation(
                            Some(&key),
                            ViolationKind::UidChangedInUpdate {
                                index,
                                old: old_version.clone(),
                                new: new_version.clone(),
                            },
                        ),
                    }
                }
                self.out.state.insert(key, new_version);
            }
            Notification::Delete(obj) => {
                let object = obj.object();
                let tombstone = obj.is_tombstone();
                if tombstone {
                    self.out.summary.tombstones += 1;
                } else {
                    self.out.summary.deletes += 1;
                }
                let Some(key) = self.key(index, n, obj.key()) else {
                    return;
                };
                if let ObjectOrTombstone::Tombstone(t) = obj {
                    match key_of(t.last_known.as_ref()) {
                        Ok(k) if k == t.key => {}
                        other => self.violation(
                            Some(&key),
                            ViolationKind::TombstoneKeyMismatch {
                                index,
                                last_known_key: other
                                    .map_or_else(|e| e.to_string(), |k| k.to_string()),
                            },
                        ),
                    }
                }
                let deleted = Version::of(object.as_ref());
                match self.out.state.remove(&key) {
                    None => self.violation(
                        Some(&key),
                        ViolationKind::DeleteOfAbsentKey {
                            index,
                            deleted: deleted.clone(),
                            tombstone,
                        },
                    ),
                    Some(current) if current.uid != deleted.uid => self.violation(
                        Some(&key),
                        ViolationKind::DeleteOfOtherObject {
                            index,
                            current,
                            deleted: deleted.clone(),
                            tombstone,
                        },
                    ),
                    Some(current) if tombstone && current != deleted => self.violation(
                        Some(&key),
                        ViolationKind::StaleTombstone {
                            index,
                            current,
                            last_known: deleted.clone(),
                        },
                    ),
                    Some(current) if !tombstone && regressed(&current, &deleted) => self.violation(
                        Some(&key),
                        ViolationKind::ResourceVersionRegressed {
                            index,
                            from: current,
                            to: deleted.clone(),
                        },
                    ),
                    Some(_) => {}
                }
                if let Some(uid) = deleted.uid.as_deref() {
                    self.life(uid, &key).deletes += 1;
                }
                self.last_delete = Some((key, deleted.uid));
            }
        }
    }

    /// The notification's key, or records why there is none.
    fn key<K: Object>(
        &mut self,
        index: usize,
        n: &Notification<K>,
        key: Result<informer_core::ObjectKey, KeyError>,
    ) -> Option<String> {
        match key {
            Ok(k) => Some(k.to_string()),
            Err(error) => {
                self.violation(
                    None,
                    ViolationKind::Unkeyed {
                        index,
                        notification: format!("{n:?}"),
                        error: error.to_string(),
                    },
                );
                None
            }
        }
    }
}

/// Whether `to` is older than `from`: only decidable when both are integers.
fn regressed(from: &Version, to: &Version) -> bool {
    let parse = |v: &Version| v.resource_version.as_deref()?.parse::<u64>().ok();
    matches!((parse(from), parse(to)), (Some(a), Some(b)) if b < a)
}

/// Checks rules (a) to (d) of the [module documentation](self): `store` is the informer's
/// cache content, `handlers` the recordings of its handlers. Call it once the informer is quiet
/// (its last synced resourceVersion is the server's and every handler has handled its
/// buffer).
///
/// Returns what was checked, or every violation found, with traces of the offending keys.
pub fn check_convergence<K: Object>(
    expected: &Expected,
    store: &[Arc<K>],
    handlers: &[&Recording<K>],
    options: &CheckOptions,
) -> Result<CheckSummary, ConvergenceReport> {
    check(expected, store, handlers, options, None)
}

/// [`check_convergence`] plus rule (e) of the [module documentation](self): contents are
/// compared through `digest` (usually [`digest`](fn@digest)) with the digests declared in
/// `expected` ([`Expected::set_content`], [`Expected::set_final_content`]).
///
/// ```
/// use std::sync::Arc;
/// use informer_core::Notification;
/// use informer_testing::JsonObject;
/// use informer_testing::convergence::{
///     CheckOptions, Expected, Recording, ViolationKind, check_convergence_with_content, digest,
/// };
///
/// // The informer should strip the `v` label; this object kept it.
/// let server_side = JsonObject::new(Some("ns"), "a").with_uid("u1").with_resource_version("1")
///     .with_label("v", "1");
/// let mut transformed = server_side.clone();
/// transformed.metadata.labels.remove("v");
/// let mut expected = Expected::new();
/// expected.insert("ns/a", Some("u1"), Some("1"));
/// expected.set_content("ns/a", digest(&transformed));
///
/// let cached = Arc::new(server_side);
/// let handler = Recording::new("h");
/// handler.record(Notification::Add { object: Arc::clone(&cached), is_in_initial_list: true });
/// let report = check_convergence_with_content(
///     &expected, &[cached], &[&handler], &CheckOptions::default(), &|o: &JsonObject| digest(o),
/// ).unwrap_err();
/// assert_eq!(report.violations().len(), 2); // the cache and the handler
/// assert!(matches!(report.violations()[0].kind, ViolationKind::WrongContent { .. }));
/// ```
pub fn check_convergence_with_content<K: Object>(
    expected: &Expected,
    store: &[Arc<K>],
    handlers: &[&Recording<K>],
    options: &CheckOptions,
    digest: &dyn Fn(&K) -> Digest,
) -> Result<CheckSummary, ConvergenceReport> {
    check(expected, store, handlers, options, Some(digest))
}

fn check<K: Object>(
    expected: &Expected,
    store: &[Arc<K>],
    handlers: &[&Recording<K>],
    options: &CheckOptions,
    digest: Option<&dyn Fn(&K) -> Digest>,
) -> Result<CheckSummary, ConvergenceReport> {
    let mut violations = Vec::new();
    check_store(expected, store, &mut violations);
    let mut summary = CheckSummary {
        objects: expected.objects.len(),
        recorded_deletions: expected.deletions.as_ref().map(HashMap::len),
        handlers: Vec::with_capacity(handlers.len()),
        contents_checked: 0,
    };
    if let Some(digest) = digest {
        let cached = store
            .iter()
            .filter_map(|o| Some((key_of(o.as_ref()).ok()?.to_string(), o)));
        summary.contents_checked +=
            check_contents(&Subject::Cache, expected, cached, digest, &mut violations);
    }
    let mut traces = BTreeMap::new();
    let live = expected.live_uids();
    for recording in handlers {
        let notifications = recording.notifications();
        let folded = fold(recording.name(), &notifications, options);
        let subject = Subject::Handler(recording.name().to_owned());
        let mut found = folded.violations;
        compare_states(&subject, &expected.objects, &folded.state, &mut found);
        for (uid, life) in &folded.lives {
            let is_live = live.contains(uid.as_str());
            // Each add is closed by one delete, except the last one of a live object.
            let expected_deletes = life.adds.saturating_sub(usize::from(is_live));
            let kind = if is_live && !options.objects_may_return && life.deletes > 0 {
                Some(ViolationKind::DeleteOfLiveObject {
                    uid: uid.clone(),
                    deletes: life.deletes,
                })
            } else if !is_live
                && let Some(deletions) = &expected.deletions
                && !deletions.contains_key(uid)
            {
                Some(ViolationKind::NeverExisted { uid: uid.clone() })
            } else if life.adds > 0 && life.deletes != expected_deletes {
                Some(ViolationKind::DeleteCount {
                    uid: uid.clone(),
                    deletes: life.deletes,
                    expected: expected_deletes,
                })
            } else {
                None
            };
            if let Some(kind) = kind {
                found.push(Violation {
                    subject: subject.clone(),
                    key: Some(life.key.clone()),
                    kind,
                });
            }
        }
        if let Some(deletions) = &expected.deletions {
            check_final_states(&subject, deletions, &notifications, &mut found);
        }
        if let Some(digest) = digest {
            let last = last_objects(&notifications);
            summary.contents_checked +=
                check_contents(&subject, expected, last.into_iter(), digest, &mut found);
            if let Some(deletions) = &expected.deletions {
                summary.contents_checked +=
                    check_final_contents(&subject, deletions, &notifications, digest, &mut found);
            }
        }
        // Per offending key, the notifications up to just after its first violation.
        let mut focus: BTreeMap<&str, Option<usize>> = BTreeMap::new();
        for v in &found {
            if let Some(key) = &v.key {
                let first = focus.entry(key).or_insert(None);
                if let Some(index) = v.kind.index() {
                    *first = Some(first.map_or(index, |f| f.min(index)));
                }
            }
        }
        for (key, first) in focus {
            let trace = report::trace(&notifications, key, first, options.trace_len);
            traces.insert((subject.clone(), key.to_owned()), trace);
        }
        violations.extend(found);
        summary.handlers.push(folded.summary);
    }
    if violations.is_empty() {
        Ok(summary)
    } else {
        Err(ConvergenceReport::new(violations, traces, summary))
    }
}

/// Rule (a): the cache's content against the server's.
fn check_store<K: Object>(expected: &Expected, store: &[Arc<K>], out: &mut Vec<Violation>) {
    let mut cached = BTreeMap::new();
    for obj in store {
        match key_of(obj.as_ref()) {
            Ok(key) => {
                let version = Version::of(obj.as_ref());
                if let Some(previous) = cached.insert(key.to_string(), version.clone()) {
                    out.push(Violation {
                        subject: Subject::Cache,
                        key: Some(key.to_string()),
                        kind: ViolationKind::DuplicateCacheKey {
                            first: previous,
                            second: version,
                        },
                    });
                }
            }
            Err(error) => out.push(Violation {
                subject: Subject::Cache,
                key: None,
                kind: ViolationKind::Unkeyed {
                    index: 0,
                    notification: format!("cached object {}", Version::of(obj.as_ref())),
                    error: error.to_string(),
                },
            }),
        }
    }
    compare_states(&Subject::Cache, &expected.objects, &cached, out);
}

/// Every key present on either side whose versions differ becomes a violation.
fn compare_states(
    subject: &Subject,
    expected: &BTreeMap<String, Version>,
    got: &BTreeMap<String, Version>,
    out: &mut Vec<Violation>,
) {
    let keys: BTreeSet<&String> = expected.keys().chain(got.keys()).collect();
    for key in keys {
        let kind = match (expected.get(key), got.get(key)) {
            (Some(e), Some(g)) if e == g => continue,
            (Some(e), Some(g)) => ViolationKind::WrongVersion {
                expected: e.clone(),
                got: g.clone(),
            },
            (Some(e), None) => ViolationKind::MissingObject {
                expected: e.clone(),
            },
            (None, Some(g)) => ViolationKind::UnexpectedObject { got: g.clone() },
            (None, None) => continue,
        };
        out.push(Violation {
            subject: subject.clone(),
            key: Some(key.clone()),
            kind,
        });
    }
}

/// Each handler's last object per key, from its notifications.
fn last_objects<K: Object>(notifications: &[Notification<K>]) -> BTreeMap<String, &Arc<K>> {
    let mut last = BTreeMap::new();
    for n in notifications {
        match n {
            Notification::Add { object: o, .. } | Notification::Update { new: o, .. } => {
                if let Ok(key) = key_of(o.as_ref()) {
                    last.insert(key.to_string(), o);
                }
            }
            Notification::Delete(obj) => {
                if let Ok(key) = obj.key() {
                    last.remove(key.as_str());
                }
            }
        }
    }
    last
}

/// Rule (e) for live objects: `objects` whose version is the server's must have the declared
/// content (a wrong version is reported by rules a and b). Returns how many were compared.
fn check_contents<'a, K: Object + 'a>(
    subject: &Subject,
    expected: &Expected,
    objects: impl Iterator<Item = (String, &'a Arc<K>)>,
    digest: &dyn Fn(&K) -> Digest,
    out: &mut Vec<Violation>,
) -> usize {
    let mut compared = 0;
    for (key, obj) in objects {
        let Some(want) = expected.contents.get(&key) else {
            continue;
        };
        let version = Version::of(obj.as_ref());
        if expected.objects.get(&key) != Some(&version) {
            continue;
        }
        compared += 1;
        let got = digest(obj);
        if got != *want {
            out.push(Violation {
                subject: subject.clone(),
                key: Some(key),
                kind: ViolationKind::WrongContent {
                    version,
                    expected: *want,
                    got,
                },
            });
        }
    }
    compared
}

/// Rule (e) for deletions: a `Delete` carrying the final state carries its declared content.
fn check_final_contents<K: Object>(
    subject: &Subject,
    deletions: &HashMap<String, Deletion>,
    notifications: &[Notification<K>],
    digest: &dyn Fn(&K) -> Digest,
    out: &mut Vec<Violation>,
) -> usize {
    let mut compared = 0;
    for (index, n) in notifications.iter().enumerate() {
        let Notification::Delete(ObjectOrTombstone::Object(obj)) = n else {
            continue;
        };
        let version = Version::of(obj.as_ref());
        let Some(deletion) = version.uid.as_deref().and_then(|uid| deletions.get(uid)) else {
            continue;
        };
        let Some(want) = deletion.final_digest else {
            continue;
        };
        if deletion.final_resource_version != version.resource_version {
            continue;
        }
        compared += 1;
        let got = digest(obj);
        if got != want {
            out.push(Violation {
                subject: subject.clone(),
                key: Some(deletion.key.clone()),
                kind: ViolationKind::WrongFinalContent {
                    index,
                    version,
                    expected: want,
                    got,
                },
            });
        }
    }
    compared
}

/// With recorded deletions: a `Delete` carrying an object carries the server's final state.
fn check_final_states<K: Object>(
    subject: &Subject,
    deletions: &HashMap<String, Deletion>,
    notifications: &[Notification<K>],
    out: &mut Vec<Violation>,
) {
    for (index, n) in notifications.iter().enumerate() {
        let Notification::Delete(ObjectOrTombstone::Object(obj)) = n else {
            continue;
        };
        let got = Version::of(obj.as_ref());
        let Some(uid) = got.uid.as_deref() else {
            continue;
        };
        if let Some(deletion) = deletions.get(uid)
            && deletion.final_resource_version != got.resource_version
        {
            out.push(Violation {
                subject: subject.clone(),
                key: Some(deletion.key.clone()),
                kind: ViolationKind::WrongFinalState {
                    index,
                    expected: Version {
                        uid: got.uid.clone(),
                        resource_version: deletion.final_resource_version.clone(),
                    },
                    got,
                },
            });
        }
    }
}

#[cfg(test)]
mod tests;

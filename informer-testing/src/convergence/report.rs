//! What a failed convergence check says: the violations, who committed them, and the
//! notifications around them.

use std::collections::BTreeMap;
use std::fmt;

use informer_core::{Notification, Object, ObjectOrTombstone, ObjectSummary, key_of};

use super::model::{CheckSummary, Digest, Version};

/// Who broke a rule: the informer's cache or one handler.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum Subject {
    /// The informer's cache (rule a).
    Cache,
    /// The handler with this name (rules b to d).
    Handler(String),
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cache => f.write_str("cache"),
            Self::Handler(name) => write!(f, "handler {name:?}"),
        }
    }
}

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Who broke it.
    pub subject: Subject,
    /// The object's key, when the violation is about one key.
    pub key: Option<String>,
    /// Which rule, with what was expected and what was found.
    pub kind: ViolationKind,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.subject)?;
        if let Some(key) = &self.key {
            write!(f, ", key {key}")?;
        }
        write!(f, ": {}", self.kind)
    }
}

/// The rules of the [checker](super), as violations. `index` is the position of the offending
/// notification in the handler's recording.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ViolationKind {
    /// (a, b) The server holds the object; the cache or the handler's state does not.
    MissingObject {
        /// The server's version.
        expected: Version,
    },
    /// (a, b) The cache or the handler's state holds a key the server does not.
    UnexpectedObject {
        /// What is held.
        got: Version,
    },
    /// (a, b) Both hold the key, with a different UID or resourceVersion.
    WrongVersion {
        /// The server's version.
        expected: Version,
        /// What is held.
        got: Version,
    },
    /// (a) The cache listed two objects with one key.
    DuplicateCacheKey {
        /// The first.
        first: Version,
        /// The second.
        second: Version,
    },
    /// A notification (or cached object) whose key cannot be computed.
    Unkeyed {
        /// The position of the notification.
        index: usize,
        /// The notification.
        notification: String,
        /// Why it has no key.
        error: String,
    },
    /// An add of a key the handler already holds.
    AddOfPresentKey {
        /// The position of the notification.
        index: usize,
        /// What the handler held.
        present: Version,
        /// What was added.
        added: Version,
    },
    /// (c) A second add of the same UID.
    DuplicateAdd {
        /// The position of the notification.
        index: usize,
        /// The UID.
        uid: String,
        /// Whether it had been reported deleted in between (a deleted object came back).
        deleted_in_between: bool,
    },
    /// An update of a key the handler does not hold.
    UpdateOfAbsentKey {
        /// The position of the notification.
        index: usize,
        /// The update's old state.
        old: Version,
    },
    /// An update whose old state is not what the handler was last told.
    UpdateFromStaleState {
        /// The position of the notification.
        index: usize,
        /// What the handler held.
        current: Version,
        /// The update's old state.
        old: Version,
    },
    /// An update whose old and new objects have different keys.
    UpdateKeyMismatch {
        /// The position of the notification.
        index: usize,
        /// The old object's key (or why it has none).
        old_key: String,
    },
    /// (d) An update that changes the UID, where delete then add was required.
    UidChangedInUpdate {
        /// The position of the notification.
        index: usize,
        /// The old state.
        old: Version,
        /// The new state.
        new: Version,
    },
    /// A resourceVersion went backwards (integers only).
    ResourceVersionRegressed {
        /// The position of the notification.
        index: usize,
        /// The earlier state.
        from: Version,
        /// The later, older, state.
        to: Version,
    },
    /// (c) A delete of a key the handler does not hold (never added, or already deleted).
    DeleteOfAbsentKey {
        /// The position of the notification.
        index: usize,
        /// The deleted object or tombstone's last known state.
        deleted: Version,
        /// Whether it was a tombstone.
        tombstone: bool,
    },
    /// (c) A delete whose object has another UID than the one the handler holds.
    DeleteOfOtherObject {
        /// The position of the notification.
        index: usize,
        /// What the handler held.
        current: Version,
        /// The deleted object or tombstone's last known state.
        deleted: Version,
        /// Whether it was a tombstone.
        tombstone: bool,
    },
    /// A tombstone whose last known state is not the last state the handler was told.
    StaleTombstone {
        /// The position of the notification.
        index: usize,
        /// What the handler held.
        current: Version,
        /// The tombstone's last known state.
        last_known: Version,
    },
    /// A tombstone whose key is not its last known object's key.
    TombstoneKeyMismatch {
        /// The position of the notification.
        index: usize,
        /// The last known object's key (or why it has none).
        last_known_key: String,
    },
    /// (c) A delete carrying an object that is not the server's final state of it.
    WrongFinalState {
        /// The position of the notification.
        index: usize,
        /// The recorded final state.
        expected: Version,
        /// The delete's object.
        got: Version,
    },
    /// (c) An object the handler heard of was reported deleted a wrong number of times: not
    /// once when it no longer exists on the server (or, with objects that may return, not once
    /// per add, less one when it is live).
    DeleteCount {
        /// The UID.
        uid: String,
        /// How many deletes the handler got.
        deletes: usize,
        /// How many it should have got.
        expected: usize,
    },
    /// (c) An object that still exists on the server was reported deleted.
    DeleteOfLiveObject {
        /// The UID.
        uid: String,
        /// How many deletes the handler got.
        deletes: usize,
    },
    /// (c) The handler heard of a UID that is neither live nor among the recorded deletions.
    NeverExisted {
        /// The UID.
        uid: String,
    },
    /// (e) The cache's object, or the handler's last object, has the server's UID and
    /// resourceVersion but not its content (after the transform).
    WrongContent {
        /// The version held (the server's).
        version: Version,
        /// The declared digest.
        expected: Digest,
        /// The digest of what is held.
        got: Digest,
    },
    /// (e) A delete carries the final state's version but not its content.
    WrongFinalContent {
        /// The position of the notification.
        index: usize,
        /// The version it carries (the final state's).
        version: Version,
        /// The declared digest.
        expected: Digest,
        /// The digest of what it carries.
        got: Digest,
    },
}

impl ViolationKind {
    /// The position of the offending notification in the handler's recording, when one
    /// notification broke the rule (not for final-state comparisons).
    pub fn index(&self) -> Option<usize> {
        match self {
            Self::Unkeyed { index, .. }
            | Self::AddOfPresentKey { index, .. }
            | Self::DuplicateAdd { index, .. }
            | Self::UpdateOfAbsentKey { index, .. }
            | Self::UpdateFromStaleState { index, .. }
            | Self::UpdateKeyMismatch { index, .. }
            | Self::UidChangedInUpdate { index, .. }
            | Self::ResourceVersionRegressed { index, .. }
            | Self::DeleteOfAbsentKey { index, .. }
            | Self::DeleteOfOtherObject { index, .. }
            | Self::StaleTombstone { index, .. }
            | Self::TombstoneKeyMismatch { index, .. }
            | Self::WrongFinalState { index, .. }
            | Self::WrongFinalContent { index, .. } => Some(*index),
            Self::MissingObject { .. }
            | Self::UnexpectedObject { .. }
            | Self::WrongVersion { .. }
            | Self::DuplicateCacheKey { .. }
            | Self::DeleteCount { .. }
            | Self::DeleteOfLiveObject { .. }
            | Self::NeverExisted { .. }
            | Self::WrongContent { .. } => None,
        }
    }
}

impl fmt::Display for ViolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MissingObject { expected } => {
                write!(f, "missing; the server has {expected}")
            }
            Self::UnexpectedObject { got } => {
                write!(f, "holds {got}; the server has no such key")
            }
            Self::WrongVersion { expected, got } => {
                write!(f, "wrong version: expected {expected}, got {got}")
            }
            Self::DuplicateCacheKey { first, second } => {
                write!(f, "listed twice: {first} and {second}")
            }
            Self::Unkeyed {
                index,
                notification,
                error,
            } => write!(f, "#{index} {notification} has no key: {error}"),
            Self::AddOfPresentKey {
                index,
                present,
                added,
            } => write!(
                f,
                "#{index} add of {added} while the handler holds {present} (no delete in between)"
            ),
            Self::DuplicateAdd {
                index,
                uid,
                deleted_in_between,
            } => write!(
                f,
                "#{index} uid {uid} added again{}",
                if *deleted_in_between {
                    " after it was reported deleted"
                } else {
                    ""
                }
            ),
            Self::UpdateOfAbsentKey { index, old } => {
                write!(
                    f,
                    "#{index} update from {old} of a key the handler does not hold"
                )
            }
            Self::UpdateFromStaleState {
                index,
                current,
                old,
            } => write!(
                f,
                "#{index} update from {old}, but the handler was last told {current}"
            ),
            Self::UpdateKeyMismatch { index, old_key } => {
                write!(f, "#{index} update whose old object's key is {old_key}")
            }
            Self::UidChangedInUpdate { index, old, new } => write!(
                f,
                "#{index} update changes the UID ({old} -> {new}): expected delete then add"
            ),
            Self::ResourceVersionRegressed { index, from, to } => {
                write!(f, "#{index} resourceVersion went backwards: {from} -> {to}")
            }
            Self::DeleteOfAbsentKey {
                index,
                deleted,
                tombstone,
            } => write!(
                f,
                "#{index} delete ({}) of {deleted}: the handler does not hold the key",
                kind(*tombstone)
            ),
            Self::DeleteOfOtherObject {
                index,
                current,
                deleted,
                tombstone,
            } => write!(
                f,
                "#{index} delete ({}) of {deleted}, but the handler holds {current}",
                kind(*tombstone)
            ),
            Self::StaleTombstone {
                index,
                current,
                last_known,
            } => write!(
                f,
                "#{index} tombstone's last known state is {last_known}, but the handler was last \
                 told {current}"
            ),
            Self::TombstoneKeyMismatch {
                index,
                last_known_key,
            } => write!(
                f,
                "#{index} tombstone whose last known object's key is {last_known_key}"
            ),
            Self::WrongFinalState {
                index,
                expected,
                got,
            } => write!(
                f,
                "#{index} delete carries {got}, not the final state {expected}"
            ),
            Self::DeleteCount {
                uid,
                deletes,
                expected,
            } => write!(
                f,
                "uid {uid}: the handler got {deletes} delete(s), expected {expected}"
            ),
            Self::DeleteOfLiveObject { uid, deletes } => write!(
                f,
                "uid {uid} still exists on the server, but the handler got {deletes} delete(s)"
            ),
            Self::NeverExisted { uid } => write!(
                f,
                "uid {uid} is neither live on the server nor among the recorded deletions"
            ),
            Self::WrongContent {
                version,
                expected,
                got,
            } => write!(
                f,
                "{version} has the wrong content: digest {got:016x}, the server's (after the \
                 transform) is {expected:016x}"
            ),
            Self::WrongFinalContent {
                index,
                version,
                expected,
                got,
            } => write!(
                f,
                "#{index} delete carries {version} with the wrong content: digest {got:016x}, \
                 the final state's (after the transform) is {expected:016x}"
            ),
        }
    }
}

fn kind(tombstone: bool) -> &'static str {
    if tombstone {
        "tombstone"
    } else {
        "final object"
    }
}

/// Every violation a check found, the notifications of each offending key per handler, and
/// what was checked. `Display` prints all of it, one violation per line.
#[derive(Debug, Clone)]
pub struct ConvergenceReport {
    violations: Vec<Violation>,
    traces: BTreeMap<(Subject, String), Vec<String>>,
    summary: CheckSummary,
}

impl ConvergenceReport {
    pub(crate) fn new(
        violations: Vec<Violation>,
        traces: BTreeMap<(Subject, String), Vec<String>>,
        summary: CheckSummary,
    ) -> Self {
        Self {
            violations,
            traces,
            summary,
        }
    }

    /// The violations, cache first, then handler by handler in notification order.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// The last notifications about `key` a handler received, one line each (`#index Add(..)`).
    pub fn trace(&self, subject: &Subject, key: &str) -> Option<&[String]> {
        self.traces
            .get(&(subject.clone(), key.to_owned()))
            .map(Vec::as_slice)
    }

    /// What was checked.
    pub fn summary(&self) -> &CheckSummary {
        &self.summary
    }
}

impl fmt::Display for ConvergenceReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "convergence check failed: {} violation(s) ({} live objects on the server)",
            self.violations.len(),
            self.summary.objects
        )?;
        for v in &self.violations {
            writeln!(f, "  - {v}")?;
        }
        if !self.traces.is_empty() {
            writeln!(f, "notifications about the offending keys (the last ones):")?;
        }
        for ((subject, key), lines) in &self.traces {
            writeln!(f, "  {subject}, key {key}:")?;
            if lines.is_empty() {
                writeln!(f, "      (none)")?;
            }
            for line in lines {
                writeln!(f, "      {line}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConvergenceReport {}

/// The notifications about `key`, one line each: the last `limit` of them, or, when `focus`
/// (the first offending notification) is given, the last `limit` up to two after it.
pub(crate) fn trace<K: Object>(
    notifications: &[Notification<K>],
    key: &str,
    focus: Option<usize>,
    limit: usize,
) -> Vec<String> {
    let is_key = |o: &K| key_of(o).is_ok_and(|k| k.as_str() == key);
    let about: Vec<usize> = notifications
        .iter()
        .enumerate()
        .filter(|(_, n)| match n {
            Notification::Add { object, .. } => is_key(object),
            Notification::Update { old, new } => is_key(old) || is_key(new),
            Notification::Delete(obj) => obj.key().is_ok_and(|k| k.as_str() == key),
        })
        .map(|(i, _)| i)
        .collect();
    let end = match focus {
        Some(focus) => (about.partition_point(|i| *i <= focus) + 2).min(about.len()),
        None => about.len(),
    };
    let start = end.saturating_sub(limit);
    let mut lines = Vec::with_capacity(end - start + 2);
    if start > 0 {
        lines.push(format!("({start} earlier omitted)"));
    }
    lines.extend(
        about[start..end]
            .iter()
            .map(|i| format!("#{i} {}", describe(&notifications[*i]))),
    );
    if end < about.len() {
        lines.push(format!("({} later omitted)", about.len() - end));
    }
    lines
}

/// One notification with UIDs: `Add(ns/a@5 uid=0c1f2e3d, initial)`.
fn describe<K: Object>(n: &Notification<K>) -> String {
    let uid = |o: &K| {
        o.object_uid().map_or_else(
            || "<none>".to_owned(),
            |u| super::model::short_uid(u).to_owned(),
        )
    };
    match n {
        Notification::Add {
            object,
            is_in_initial_list,
        } => format!(
            "Add({} uid={}{})",
            ObjectSummary(object.as_ref()),
            uid(object),
            if *is_in_initial_list { ", initial" } else { "" }
        ),
        Notification::Update { old, new } => format!(
            "Update({} uid={} -> {} uid={})",
            ObjectSummary(old.as_ref()),
            uid(old),
            ObjectSummary(new.as_ref()),
            uid(new)
        ),
        Notification::Delete(ObjectOrTombstone::Object(o)) => {
            format!("Delete({} uid={})", ObjectSummary(o.as_ref()), uid(o))
        }
        Notification::Delete(ObjectOrTombstone::Tombstone(t)) => format!(
            "Delete(tombstone {}, last known {} uid={})",
            t.key,
            ObjectSummary(t.last_known.as_ref()),
            uid(&t.last_known)
        ),
    }
}

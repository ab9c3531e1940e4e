//! What the checks and their reports speak of: an object's identity and version, content
//! digests, and the summary of a successful check. A leaf of the checker.

use std::fmt;

use informer_core::Object;

/// A digest of an object's content, for rule (e): see [`digest`].
pub type Digest = u64;

/// The digest of a value's JSON serialization (64-bit FNV-1a): equal contents give equal
/// digests; a value that cannot be serialized digests as its error text.
///
/// ```
/// use informer_testing::JsonObject;
/// use informer_testing::convergence::digest;
///
/// let a = JsonObject::new(Some("ns"), "a").with_label("v", "1");
/// assert_eq!(digest(&a), digest(&a.clone()));
/// assert_ne!(digest(&a), digest(&a.clone().with_label("v", "2")));
/// ```
pub fn digest<T: serde::Serialize + ?Sized>(value: &T) -> Digest {
    let bytes = serde_json::to_vec(value).unwrap_or_else(|e| e.to_string().into_bytes());
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

/// The identity and version of one object: what the checker compares.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Version {
    /// `metadata.uid`.
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    pub resource_version: Option<String>,
}

impl Version {
    /// A version from its parts.
    pub fn new(uid: Option<&str>, resource_version: Option<&str>) -> Self {
        Self {
            uid: uid.map(str::to_owned),
            resource_version: resource_version.map(str::to_owned),
        }
    }

    /// The version of an object.
    pub fn of<K: Object + ?Sized>(obj: &K) -> Self {
        Self::new(obj.object_uid(), obj.object_resource_version())
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "uid={} rv={}",
            self.uid.as_deref().map_or("<none>", short_uid),
            self.resource_version.as_deref().unwrap_or("<none>")
        )
    }
}

/// The first 8 characters of a UID: enough to tell objects apart in a report.
pub(crate) fn short_uid(uid: &str) -> &str {
    uid.get(..8).unwrap_or(uid)
}

/// What one handler heard, by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerSummary {
    /// The handler's name.
    pub name: String,
    /// Notifications in all.
    pub notifications: usize,
    /// Adds flagged as part of the initial list.
    pub initial_adds: usize,
    /// Other adds.
    pub adds: usize,
    /// Updates that changed the resourceVersion.
    pub updates: usize,
    /// Updates with equal resourceVersions (resyncs).
    pub resyncs: usize,
    /// Deletions carrying the final object.
    pub deletes: usize,
    /// Deletions carrying a tombstone.
    pub tombstones: usize,
    /// Deletions of a UID immediately followed by the add of another UID under the same key:
    /// the namesake replacements rule (d) is about.
    pub replacements: usize,
}

/// What a successful check saw: evidence that it was not vacuous.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CheckSummary {
    /// Live objects on the server (and in the cache).
    pub objects: usize,
    /// Deletions recorded by the test, when tracked.
    pub recorded_deletions: Option<usize>,
    /// Per handler, in the order given.
    pub handlers: Vec<HandlerSummary>,
    /// Objects whose content was compared (rule e): cached, handlers' last, deleted.
    pub contents_checked: usize,
}

//! Objects as they were received: the JSON text of an object carried beside its decoded form to
//! a store that keeps objects encoded, what a list entry is when the store already holds it,
//! and the identity of a list item read from its text before it is decoded.
//!
//! The path, for a store that keeps objects encoded (`informer_store::CompactStore`):
//!
//! ```text
//! backend (JSON)   ── ListSink::item_raw(obj, text) / ListerWatcher::watch_raw ──▶ reflector
//! reflector        ── Queue::add_raw / update_raw / replace_listed(Listed::Object { raw }) ──▶ queue
//! queue            ── Delta { raw } ──▶ processing loop ── Store::add_raw / update_raw ──▶ store
//! ```
//!
//! A list bound for such a store travels as text ([`Listed::Encoded`]): a backend that can
//! read an item's metadata from its text hands the item over undecoded
//! ([`ListSink::item_text`]), otherwise the reflector drops each item's decoded form once it
//! has keyed it; the queue decodes it ([`KnownObjects::decode_raw`]) only when it pops it, so
//! that a list of a hundred thousand objects waits as text, not as objects, and is decoded
//! once. A store may pack each such text into its own form as it is listed
//! ([`KnownObjects::pack_text`], [`RawObject::packed`]): the list then waits in the queue at
//! about the size the store will keep, and the store takes that form as it is.
//!
//! [`KnownObjects::pack_text`]: crate::KnownObjects::pack_text
//!
//! [`ListSink::item_text`]: crate::ListSink::item_text
//!
//! [`KnownObjects::decode_raw`]: crate::KnownObjects::decode_raw
//!
//! Each hop has a provided default that drops the text, so backends, queues and stores that do
//! not know about it keep working: the store then encodes the object itself. The text is kept
//! only when the store asks for it ([`KnownObjects::wants_raw`]) and no transform changed the
//! object after it was decoded (the text would no longer be its encoding).
//!
//! Relists skip what the store already holds: a backend that can read an item's metadata
//! before decoding it asks [`ListSink::unchanged`] with an [`ItemPeek`]; the sink compares the
//! resourceVersion with the store's ([`KnownObjects::resource_version_of`]) and, when they
//! match, the item is not decoded. The sink then hands the queue the stored object, or, when
//! the store cannot share it without decoding it, a [`Listed::Unchanged`] key.
//!
//! [`KnownObjects::wants_raw`]: crate::KnownObjects::wants_raw
//! [`KnownObjects::resource_version_of`]: crate::KnownObjects::resource_version_of
//! [`ListSink::unchanged`]: crate::ListSink::unchanged

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::{KeyError, ObjectKey, non_empty};

/// The JSON text of one object exactly as the server sent it (a list item, or the object of a
/// watch event). Cheap to clone (reference-counted); always UTF-8.
///
/// It must decode to the object it travels with: a transform that changes the object after it
/// was decoded invalidates it, and the reflector then drops it.
///
/// A listed object waiting in a queue for a store that keeps objects encoded may be held in
/// that store's own encoded form instead ([`RawObject::packed`], made by
/// [`KnownObjects::pack_text`](crate::KnownObjects::pack_text)): the store takes it as it is,
/// and [`as_str`](RawObject::as_str) rebuilds the text (once) for anyone else.
#[derive(Clone)]
pub struct RawObject(Repr);

#[derive(Clone)]
enum Repr {
    Text(Arc<str>),
    Packed(Arc<Packed>),
}

struct Packed {
    form: Box<dyn PackedText>,
    /// The text, once rebuilt.
    text: OnceLock<Box<str>>,
}

/// An object's JSON text in a store's own encoded form (for example compressed), for
/// [`RawObject::packed`]. The store that made it recognises it with
/// [`RawObject::packed_as`]; anyone else reads the text, which [`unpack`](PackedText::unpack)
/// rebuilds.
pub trait PackedText: Any + Send + Sync {
    /// The length of the text in bytes.
    fn text_len(&self) -> usize;
    /// The text, rebuilt exactly.
    fn unpack(&self) -> String;
}

impl RawObject {
    /// The text of one object (copied once, into a shared buffer).
    pub fn new(json: &str) -> Self {
        Self(Repr::Text(Arc::from(json)))
    }

    /// The text of one object held in a store's own form (see [`PackedText`]).
    pub fn packed(form: impl PackedText) -> Self {
        Self(Repr::Packed(Arc::new(Packed {
            form: Box::new(form),
            text: OnceLock::new(),
        })))
    }

    /// The packed form, if this text is held as a `T` ([`RawObject::packed`]).
    ///
    /// ```
    /// use informer_core::{PackedText, RawObject};
    ///
    /// struct Reversed(String);
    /// impl PackedText for Reversed {
    ///     fn text_len(&self) -> usize {
    ///         self.0.len()
    ///     }
    ///     fn unpack(&self) -> String {
    ///         self.0.chars().rev().collect()
    ///     }
    /// }
    ///
    /// let raw = RawObject::packed(Reversed("}1:\"a\"{".to_owned()));
    /// assert!(raw.packed_as::<Reversed>().is_some());
    /// assert_eq!(raw.as_str(), r#"{"a":1}"#);
    /// assert_eq!(raw, RawObject::new(r#"{"a":1}"#));
    /// assert!(RawObject::new("{}").packed_as::<Reversed>().is_none());
    /// ```
    pub fn packed_as<T: PackedText>(&self) -> Option<&T> {
        match &self.0 {
            Repr::Text(_) => None,
            Repr::Packed(packed) => (packed.form.as_ref() as &dyn Any).downcast_ref(),
        }
    }

    /// The JSON text (rebuilt on first use if it is held packed).
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Text(text) => text,
            Repr::Packed(packed) => packed.text.get_or_init(|| packed.form.unpack().into()),
        }
    }

    /// The JSON text as bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.as_str().as_bytes()
    }

    /// The length of the text in bytes.
    pub fn len(&self) -> usize {
        match &self.0 {
            Repr::Text(text) => text.len(),
            Repr::Packed(packed) => packed.form.text_len(),
        }
    }

    /// Whether it is empty (never, for an object).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PartialEq for RawObject {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.as_str() == other.as_str()
    }
}

impl Eq for RawObject {}

impl From<String> for RawObject {
    fn from(json: String) -> Self {
        Self(Repr::Text(Arc::from(json)))
    }
}

impl fmt::Debug for RawObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Text(text) => write!(f, "RawObject({} bytes)", text.len()),
            Repr::Packed(packed) => {
                write!(f, "RawObject({} bytes, packed)", packed.form.text_len())
            }
        }
    }
}

/// One entry of a complete list, as the reflector hands it to
/// [`Queue::replace_listed`](crate::Queue::replace_listed).
pub enum Listed<K> {
    /// An object as listed, with its JSON text when the backend kept it (and the store wants
    /// it).
    Object {
        /// The object (shared with the store when it was unchanged and the store could hand
        /// out its own copy).
        object: Arc<K>,
        /// Its JSON text as received.
        raw: Option<RawObject>,
    },
    /// The store already holds this key at the listed resourceVersion and could not share its
    /// object without building it (a store that keeps objects encoded): only the key travels.
    /// The object was not decoded.
    Unchanged(ObjectKey),
    /// An object kept as its JSON text until the queue hands it to the processing loop, for a
    /// store that decodes text itself ([`KnownObjects::decodes_raw`]): a complete list then
    /// waits in the queue as text (about a seventh of a decoded Kubernetes object), or in the
    /// store's own form if it packs texts ([`KnownObjects::pack_text`](crate::KnownObjects::pack_text)), instead of as
    /// objects. A backend that hands items over as text ([`ListSink::takes_text`]) has only
    /// read its metadata (and checked that it is JSON); otherwise the reflector decoded it once
    /// (to key it and to check its shard) and dropped the result. The queue decodes it with
    /// [`KnownObjects::decode_raw`] when it is popped, so handlers still receive one `Arc<K>`
    /// per event; a text that is JSON but not a `K` is found then (reported, and left out).
    ///
    /// [`ListSink::takes_text`]: crate::ListSink::takes_text
    ///
    /// [`KnownObjects::decodes_raw`]: crate::KnownObjects::decodes_raw
    /// [`KnownObjects::decode_raw`]: crate::KnownObjects::decode_raw
    Encoded {
        /// The object's key (computed from the decoded object with the queue's key function).
        key: ObjectKey,
        /// Its JSON text as received.
        raw: RawObject,
    },
}

impl<K> Listed<K> {
    /// An object without its text.
    pub fn object(object: Arc<K>) -> Self {
        Self::Object { object, raw: None }
    }
}

impl<K> fmt::Debug for Listed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Object { raw, .. } => f.debug_struct("Object").field("raw", raw).finish(),
            Self::Unchanged(key) => f.debug_tuple("Unchanged").field(key).finish(),
            Self::Encoded { key, raw } => f
                .debug_struct("Encoded")
                .field("key", key)
                .field("raw", raw)
                .finish(),
        }
    }
}

/// What a backend read of a list item's metadata before decoding it: enough to key it and to
/// compare its version with the store's (see [`ListSink::unchanged`](crate::ListSink::unchanged)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ItemPeek<'a> {
    /// `metadata.namespace` (`None` when absent or empty).
    pub namespace: Option<Cow<'a, str>>,
    /// `metadata.name` (`None` when absent or empty).
    pub name: Option<Cow<'a, str>>,
    /// `metadata.resourceVersion` (`None` when absent or empty).
    pub resource_version: Option<Cow<'a, str>>,
}

impl<'a> ItemPeek<'a> {
    /// Reads `metadata.namespace`, `.name` and `.resourceVersion` of one object's JSON text,
    /// skipping everything else without building it (a scan of the text, several times
    /// cheaper than decoding the object). Strings without escapes are borrowed from `json`.
    ///
    /// ```
    /// use informer_core::ItemPeek;
    ///
    /// let peek = ItemPeek::of(r#"{"kind":"Pod","metadata":{"name":"web-0","namespace":"prod",
    ///     "resourceVersion":"42","labels":{"app":"web"}},"spec":{"containers":[]}}"#).unwrap();
    /// assert_eq!(peek.resource_version.as_deref(), Some("42"));
    /// assert_eq!(peek.key().unwrap().as_str(), "prod/web-0");
    /// ```
    pub fn of(json: &'a str) -> Result<Self, serde_json::Error> {
        let item: PeekItem<'a> = serde_json::from_str(json)?;
        let meta = item.metadata.unwrap_or_default();
        let keep = |v: Option<Cow<'a, str>>| v.filter(|v| !v.is_empty());
        Ok(Self {
            namespace: keep(meta.namespace),
            name: keep(meta.name),
            resource_version: keep(meta.resource_version),
        })
    }

    /// The key [`key_of`](crate::key_of) gives the object: `namespace/name`.
    pub fn key(&self) -> Result<ObjectKey, KeyError> {
        ObjectKey::new(
            non_empty(self.namespace.as_deref()),
            self.name.as_deref().unwrap_or_default(),
        )
    }
}

/// The members of an object that a peek reads; serde skips the others.
#[derive(Deserialize)]
struct PeekItem<'a> {
    #[serde(borrow, default)]
    metadata: Option<PeekMeta<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct PeekMeta<'a> {
    #[serde(borrow, default)]
    namespace: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    resource_version: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peeks_read_the_identity_and_skip_the_rest() {
        let peek = ItemPeek::of(
            r#"{"metadata":{"managedFields":[{"f:x":{}}],"resourceVersion":"7","name":"a\u002db","namespace":""},"status":{"phase":"Running"}}"#,
        )
        .unwrap();
        assert_eq!(peek.name.as_deref(), Some("a-b"));
        assert!(matches!(peek.name, Some(Cow::Owned(_))), "escaped: owned");
        assert_eq!(peek.namespace, None, "empty is none");
        assert_eq!(peek.resource_version.as_deref(), Some("7"));
        assert_eq!(peek.key().unwrap().as_str(), "a-b");
        let bare = ItemPeek::of(r#"{"kind":"Pod"}"#).unwrap();
        assert_eq!(bare, ItemPeek::default());
        assert!(bare.key().is_err());
        assert!(ItemPeek::of("[1]").is_err());
        assert!(ItemPeek::of(r#"{"metadata":{"name":1}}"#).is_err());
    }

    #[test]
    fn raw_objects_share_their_text() {
        let raw = RawObject::new(r#"{"a":1}"#);
        let copy = raw.clone();
        assert_eq!(copy.as_str(), r#"{"a":1}"#);
        assert_eq!(copy.as_bytes().len(), raw.len());
        assert!(!raw.is_empty());
        assert_eq!(format!("{raw:?}"), "RawObject(7 bytes)");
        assert_eq!(RawObject::from(String::from("{}")).as_str(), "{}");
    }
}

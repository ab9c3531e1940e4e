//! Listed texts packed by the store they are bound for ([`KnownObjects::pack_text`]): a list
//! waits in the informer's queue in the form the store keeps (compressed with its dictionary
//! once it is trained), and the store takes that form as it is when the entry is popped.
//!
//! [`KnownObjects::pack_text`]: informer_core::KnownObjects::pack_text

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use informer_core::PackedText;

use super::codec::{self, Dictionary, Encoded, Format};

/// Numbers stores, so that a store takes as its own only what it packed itself.
static NEXT_STORE: AtomicU64 = AtomicU64::new(1);

/// A fresh store number.
pub(crate) fn store_number() -> u64 {
    NEXT_STORE.fetch_add(1, Ordering::Relaxed)
}

/// A listed object's JSON text as a compact store with a JSON codec encoded it: compressed
/// with the store's dictionary, or (before the dictionary exists) as it is, already offered
/// as a training sample.
pub(crate) struct PackedJson {
    /// The number of the store that packed it.
    pub(crate) store: u64,
    pub(crate) encoded: Encoded,
    /// The dictionary it was compressed with (to rebuild the text for anyone else).
    pub(crate) dictionary: Option<Arc<Dictionary>>,
}

impl PackedText for PackedJson {
    fn text_len(&self) -> usize {
        self.encoded.raw_len()
    }

    fn unpack(&self) -> String {
        // The bytes are JSON text this process encoded with this dictionary: decompressing
        // them fails only if memory cannot be had, and the text is UTF-8 (it came as `&str`).
        codec::decompress(&self.encoded, self.dictionary.as_deref())
            .ok()
            .and_then(|raw| String::from_utf8(raw).ok())
            .unwrap_or_default()
    }
}

/// The format packed texts are in (only JSON codecs pack).
pub(crate) const FORMAT: Format = Format::Json;

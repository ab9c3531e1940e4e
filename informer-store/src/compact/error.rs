//! The compact store's errors. Through the `Store`/`Indexer` traits they arrive as
//! [`StoreError::Backend`] with this error as the source.

use std::io;

use informer_core::{ObjectKey, StoreError};

/// Why the compact store refused an object or could not decode one it holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// The object does not encode (its `Serialize` failed).
    #[error("cannot encode {key}")]
    Encode {
        /// The object's key.
        key: ObjectKey,
        /// The serializer's error (serde_json's or rmp-serde's).
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The object's encoding does not decode back to an object that encodes the same: the
    /// type's `Serialize` and `Deserialize` disagree, so the store could not give it back.
    /// Nothing was stored.
    #[error(
        "{key} does not survive a round trip through its encoding, so it cannot be stored encoded: {detail}"
    )]
    NotRoundTripping {
        /// The object's key.
        key: ObjectKey,
        /// What differed.
        detail: String,
    },
    /// The JSON handed in with an object (`add_encoded`) is not that object's JSON. Nothing was
    /// stored.
    #[error("the JSON given with {key} is not that object's: {detail}")]
    EncodedMismatch {
        /// The object's key.
        key: ObjectKey,
        /// What differed.
        detail: String,
    },
    /// The object's serialized form is longer than 4 GiB.
    #[error("{key} is too large to store ({len} bytes serialized)")]
    TooLarge {
        /// The object's key.
        key: ObjectKey,
        /// The length of its serialized form.
        len: usize,
    },
    /// zstd failed to compress the object.
    #[error("cannot compress {key}")]
    Compress {
        /// The object's key.
        key: ObjectKey,
        /// zstd's error.
        #[source]
        source: io::Error,
    },
    /// An object the store holds does not decode. Its bytes were written by the store itself, so
    /// this is a bug: in the store, or in a type whose `Deserialize` does not accept what its
    /// `Serialize` wrote for some objects (the round-trip check only samples writes by
    /// default; see [`RoundTripCheck`](crate::RoundTripCheck)).
    #[error("stored object {key} does not decode")]
    Decode {
        /// The object's key.
        key: ObjectKey,
        /// What failed.
        #[source]
        source: DecodeError,
    },
}

/// Why a stored object did not decode.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Its JSON is not UTF-8 text.
    #[error("its JSON is not UTF-8 text")]
    Utf8(#[source] std::str::Utf8Error),
    /// Its JSON does not deserialize into the store's type.
    #[error("its JSON does not deserialize")]
    Json(#[source] serde_json::Error),
    /// Its MessagePack does not deserialize into the store's type.
    #[error("its MessagePack does not deserialize")]
    MessagePack(#[source] rmp_serde::decode::Error),
    /// zstd failed to decompress it.
    #[error("it does not decompress")]
    Decompress(#[source] io::Error),
    /// It decompressed to another length than was recorded.
    #[error("it decompressed to {got} bytes, {expected} were recorded")]
    Length {
        /// The recorded length.
        expected: usize,
        /// What decompression produced.
        got: usize,
    },
    /// It is compressed but the store has no dictionary.
    #[error("it is compressed but the store has no dictionary")]
    NoDictionary,
}

impl CompactError {
    /// This error as a [`StoreError::Backend`], saying what was being done.
    pub(crate) fn into_store_error(self, doing: &str) -> StoreError {
        StoreError::Backend {
            context: format!("{doing} (compact store)"),
            source: Box::new(self),
        }
    }
}

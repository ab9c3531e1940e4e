//! How the compact store encodes objects: JSON or MessagePack, optionally compressed one
//! object at a time with zstd and a dictionary trained on the first objects stored, and the
//! checks that an object decodes back to itself.

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;
use std::io;
use std::sync::Arc;

use informer_core::ObjectKey;
use serde::Serialize;
use serde::de::DeserializeOwned;
use zstd::dict::{DecoderDictionary, EncoderDictionary};
use zstd::zstd_safe::{self, CCtx, DCtx};

use super::error::{CompactError, DecodeError};

/// How a [`CompactStore`](crate::CompactStore) keeps each object: a serialized form (JSON or
/// MessagePack), compressed or not.
///
/// What each costs, measured on realistic pods (`benches/encoding.rs`, CPU per pod): decoding
/// into a k8s-openapi `Pod` takes about 25 µs from JSON (parsed from `&str`) and about as long
/// from MessagePack, against about 18 µs to merely clone and drop the same `Pod`: building the
/// object's hundreds of allocations, not parsing, is most of a decode, whatever the format.
/// Compressed with a dictionary both keep under 300 bytes per pod; uncompressed, MessagePack is
/// about a fifth smaller than JSON. JSON can be stored as received
/// ([`CompactStore::add_encoded`](crate::CompactStore::add_encoded)), which saves serializing
/// each write (about 15 µs per pod); MessagePack is always written from the object. So the
/// default is JSON with a dictionary.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Codec {
    /// The JSON itself. Decoding is one `serde_json` pass; nothing to train.
    Json,
    /// The JSON compressed object by object with zstd, using a dictionary trained on the first
    /// objects stored (the default). Objects stored before the dictionary exists are kept as JSON and
    /// compressed as soon as it is trained; a store that never sees enough objects to train on
    /// keeps JSON. Each object still decompresses on its own, in a few microseconds.
    ZstdDictionary(ZstdDictionary),
    /// MessagePack (`rmp-serde`: structs as maps with their field names, human-readable, so
    /// every type reads exactly what it reads from JSON, `deserialize_any` included),
    /// uncompressed.
    MessagePack,
    /// MessagePack compressed object by object with zstd and a trained dictionary, as
    /// [`Codec::ZstdDictionary`] does with JSON.
    MessagePackZstd(ZstdDictionary),
}

/// The serialized form a codec keeps (before compression).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Json,
    MessagePack,
}

impl Codec {
    /// Whether the codec keeps JSON (compressed or not): a store with such a codec can store
    /// an object's text as received and decode text it is handed.
    pub fn keeps_json(&self) -> bool {
        self.format() == Format::Json
    }

    /// The serialized form objects are kept in.
    pub(crate) fn format(&self) -> Format {
        match self {
            Self::Json | Self::ZstdDictionary(_) => Format::Json,
            Self::MessagePack | Self::MessagePackZstd(_) => Format::MessagePack,
        }
    }

    /// The dictionary settings, for the codecs that train one.
    pub(crate) fn dictionary(&self) -> Option<&ZstdDictionary> {
        match self {
            Self::ZstdDictionary(settings) | Self::MessagePackZstd(settings) => Some(settings),
            Self::Json | Self::MessagePack => None,
        }
    }
}

impl Default for Codec {
    fn default() -> Self {
        Self::ZstdDictionary(ZstdDictionary::default())
    }
}

/// The settings of [`Codec::ZstdDictionary`] and [`Codec::MessagePackZstd`].
///
/// The defaults (level 3, a 64 KiB dictionary trained once 512 objects or 8 MiB of JSON have
/// been stored) were chosen by measurement on realistic pods: see `benches/encoding.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZstdDictionary {
    level: i32,
    dictionary_size: usize,
    pub(crate) training_objects: usize,
    pub(crate) training_bytes: usize,
}

impl Default for ZstdDictionary {
    fn default() -> Self {
        Self {
            level: 3,
            dictionary_size: 64 << 10,
            training_objects: 512,
            training_bytes: 8 << 20,
        }
    }
}

impl ZstdDictionary {
    /// The zstd compression level (1 is fastest, 19 smallest; default 3). Decompression speed
    /// hardly depends on it.
    pub fn level(mut self, level: i32) -> Self {
        self.level = level;
        self
    }

    /// The largest dictionary to train (default 64 KiB), held once per store.
    pub fn dictionary_size(mut self, bytes: usize) -> Self {
        self.dictionary_size = bytes;
        self
    }

    /// Trains the dictionary once this many objects have been stored (default 512), or
    /// [`ZstdDictionary::training_bytes`] of their serialized form, whichever comes first.
    /// Those bytes are held until then. zstd needs about ten samples at least: with fewer, training fails and
    /// the store keeps objects uncompressed
    /// ([`DictionaryState::Failed`](crate::DictionaryState::Failed)).
    pub fn training_objects(mut self, objects: usize) -> Self {
        self.training_objects = objects.max(1);
        self
    }

    /// Trains the dictionary once this many bytes (serialized) have been stored (default
    /// 8 MiB), or
    /// [`ZstdDictionary::training_objects`] objects, whichever comes first.
    pub fn training_bytes(mut self, bytes: usize) -> Self {
        self.training_bytes = bytes.max(1);
        self
    }
}

/// When a [`CompactStore`](crate::CompactStore) checks that an object survives its encoding.
///
/// The check decodes the bytes about to be stored (JSON or MessagePack) back into `K`, encodes
/// that as JSON and compares it with the object's JSON (as values, so map order does not
/// matter). It costs about a decode and two encodes, so by default only a sample of writes pays it: the first 64 objects of a store and
/// then one in 1,024. A type whose `Serialize` and `Deserialize` disagree is caught on its first
/// objects and refused with an error, before anything is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RoundTripCheck {
    /// Never check: for types known to round-trip.
    Never,
    /// Check every write.
    Always,
    /// Check the first `first` writes, then one in `then_every` (0: no more).
    Sampled {
        /// How many writes to check from the start.
        first: u64,
        /// After those, check one write in this many.
        then_every: u64,
    },
}

impl Default for RoundTripCheck {
    fn default() -> Self {
        Self::Sampled {
            first: 64,
            then_every: 1_024,
        }
    }
}

impl RoundTripCheck {
    /// Whether write number `n` (from 0) is checked.
    pub(crate) fn due(self, n: u64) -> bool {
        match self {
            Self::Never => false,
            Self::Always => true,
            Self::Sampled { first, then_every } => {
                n < first || (then_every > 0 && (n - first).is_multiple_of(then_every))
            }
        }
    }
}

/// What is kept of one object: its serialized form, compressed or not.
#[derive(Clone)]
pub(crate) struct Encoded {
    /// The serialized form, or its compressed form.
    bytes: Arc<[u8]>,
    /// The length of the serialized form (the buffer decompression needs).
    raw_len: u32,
    compressed: bool,
}

impl fmt::Debug for Encoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Encoded")
            .field("bytes", &self.bytes.len())
            .field("raw_len", &self.raw_len)
            .field("compressed", &self.compressed)
            .finish()
    }
}

impl Encoded {
    /// Bytes held.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Bytes of the serialized form this stands for.
    pub(crate) fn raw_len(&self) -> usize {
        self.raw_len as usize
    }

    pub(crate) fn is_compressed(&self) -> bool {
        self.compressed
    }

    /// The serialized form, if it is kept uncompressed.
    pub(crate) fn plain(&self) -> Option<&[u8]> {
        (!self.compressed).then_some(&*self.bytes)
    }
}

/// A trained dictionary, prepared for both directions.
pub(crate) struct Dictionary {
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
    size: usize,
}

impl Dictionary {
    /// Trains a dictionary on the serialized form of some objects (`sizes` splits `samples`).
    pub(crate) fn train(
        samples: &[u8],
        sizes: &[usize],
        settings: &ZstdDictionary,
    ) -> io::Result<Self> {
        let raw = zstd::dict::from_continuous(samples, sizes, settings.dictionary_size)?;
        Ok(Self {
            encoder: EncoderDictionary::try_copy(&raw, settings.level)?,
            decoder: DecoderDictionary::try_copy(&raw)?,
            size: raw.len(),
        })
    }

    /// The size of the trained dictionary (the prepared forms hold a few times that).
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

/// Per-thread zstd contexts and buffers, reused across calls and stores (the dictionary is
/// passed with every call, so a context is not tied to a store).
struct Scratch {
    cctx: Option<CCtx<'static>>,
    dctx: Option<DCtx<'static>>,
    buffer: Vec<u8>,
}

/// Buffers above this are not kept between calls.
const KEPT_BUFFER: usize = 1 << 20;

thread_local! {
    static SCRATCH: RefCell<Scratch> = const {
        RefCell::new(Scratch { cctx: None, dctx: None, buffer: Vec::new() })
    };
}

/// Runs `f` with this thread's scratch space, or with a fresh one if it is in use (a
/// `Deserialize` or `Serialize` impl that reenters the store).
fn with_scratch<T>(f: impl FnOnce(&mut Scratch) -> T) -> T {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            let out = f(&mut scratch);
            if scratch.buffer.capacity() > KEPT_BUFFER {
                scratch.buffer = Vec::new();
            }
            out
        }
        Err(_) => f(&mut Scratch {
            cctx: None,
            dctx: None,
            buffer: Vec::new(),
        }),
    })
}

fn zstd_error(code: usize) -> io::Error {
    io::Error::other(zstd_safe::get_error_name(code))
}

/// Serializes `obj` in `format` (for JSON: only when no text was handed in with it).
pub(crate) fn serialize<K: Serialize>(
    key: &ObjectKey,
    obj: &K,
    format: Format,
) -> Result<Vec<u8>, CompactError> {
    match format {
        Format::Json => serde_json::to_vec(obj).map_err(|source| CompactError::Encode {
            key: key.clone(),
            source: Box::new(source),
        }),
        Format::MessagePack => to_message_pack(obj).map_err(|source| CompactError::Encode {
            key: key.clone(),
            source: Box::new(source),
        }),
    }
}

/// MessagePack as the store writes it: structs as maps of field names, and human-readable, so
/// that every type writes (and later reads) exactly what it would as JSON.
fn to_message_pack<K: Serialize>(obj: &K) -> Result<Vec<u8>, rmp_serde::encode::Error> {
    let mut out = Vec::new();
    let mut serializer = rmp_serde::Serializer::new(&mut out)
        .with_struct_map()
        .with_human_readable();
    obj.serialize(&mut serializer)?;
    Ok(out)
}

fn from_message_pack<K: DeserializeOwned>(bytes: &[u8]) -> Result<K, DecodeError> {
    // The bytes are the store's own encoding of one object, so nothing follows it (rmp-serde
    // cannot tell where it stopped reading a borrowed slice).
    let mut deserializer = rmp_serde::Deserializer::from_read_ref(bytes).with_human_readable();
    K::deserialize(&mut deserializer).map_err(DecodeError::MessagePack)
}

/// Keeps `raw` (serialized) as it is.
pub(crate) fn plain(key: &ObjectKey, raw: &[u8]) -> Result<Encoded, CompactError> {
    Ok(Encoded {
        bytes: Arc::from(raw),
        raw_len: raw_len(key, raw)?,
        compressed: false,
    })
}

fn raw_len(key: &ObjectKey, raw: &[u8]) -> Result<u32, CompactError> {
    u32::try_from(raw.len()).map_err(|_| CompactError::TooLarge {
        key: key.clone(),
        len: raw.len(),
    })
}

/// Compresses `raw` (serialized) with `dictionary`.
pub(crate) fn compress(
    key: &ObjectKey,
    raw: &[u8],
    dictionary: &Dictionary,
) -> Result<Encoded, CompactError> {
    let raw_len = raw_len(key, raw)?;
    with_scratch(|scratch| {
        let cctx = scratch.cctx.get_or_insert_with(CCtx::create);
        scratch.buffer.clear();
        scratch.buffer.reserve(zstd_safe::compress_bound(raw.len()));
        cctx.compress_using_cdict(&mut scratch.buffer, raw, dictionary.encoder.as_cdict())
            .map_err(|code| CompactError::Compress {
                key: key.clone(),
                source: zstd_error(code),
            })?;
        Ok(Encoded {
            bytes: Arc::from(&scratch.buffer[..]),
            raw_len,
            compressed: true,
        })
    })
}

/// Decodes a stored object kept in `format`. `dictionary` must be the one `encoded` was
/// compressed with, if it was compressed.
pub(crate) fn decode<K: DeserializeOwned>(
    encoded: &Encoded,
    format: Format,
    dictionary: Option<&Dictionary>,
) -> Result<K, DecodeError> {
    with_serialized(encoded, dictionary, |raw| deserialize(raw, format))
}

/// The serialized form `encoded` stands for (decompressed if it was compressed; `dictionary`
/// as for [`decode`]).
pub(crate) fn decompress(
    encoded: &Encoded,
    dictionary: Option<&Dictionary>,
) -> Result<Vec<u8>, DecodeError> {
    with_serialized(encoded, dictionary, |raw| Ok(raw.to_vec()))
}

/// Runs `f` on the serialized form `encoded` stands for, decompressed into this thread's
/// scratch buffer if it was compressed.
fn with_serialized<T>(
    encoded: &Encoded,
    dictionary: Option<&Dictionary>,
    f: impl FnOnce(&[u8]) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    if !encoded.compressed {
        return f(&encoded.bytes);
    }
    let Some(dictionary) = dictionary else {
        return Err(DecodeError::NoDictionary);
    };
    with_scratch(|scratch| {
        let dctx = scratch.dctx.get_or_insert_with(DCtx::create);
        let buffer = &mut scratch.buffer;
        buffer.clear();
        buffer.reserve(encoded.raw_len());
        let written = dctx
            .decompress_using_ddict(buffer, &encoded.bytes, dictionary.decoder.as_ddict())
            .map_err(|code| DecodeError::Decompress(zstd_error(code)))?;
        if written != encoded.raw_len() {
            return Err(DecodeError::Length {
                expected: encoded.raw_len(),
                got: written,
            });
        }
        f(buffer)
    })
}

/// Deserializes an object's serialized form.
pub(crate) fn deserialize<K: DeserializeOwned>(
    raw: &[u8],
    format: Format,
) -> Result<K, DecodeError> {
    match format {
        Format::Json => from_json(raw),
        Format::MessagePack => from_message_pack(raw),
    }
}

/// Deserializes JSON text. Validating UTF-8 once up front and parsing from `&str` is about a
/// fifth faster than `serde_json::from_slice`, which validates every string it reads
/// (`benches/encoding.rs`).
fn from_json<K: DeserializeOwned>(json: &[u8]) -> Result<K, DecodeError> {
    let text = std::str::from_utf8(json).map_err(DecodeError::Utf8)?;
    serde_json::from_str(text).map_err(DecodeError::Json)
}

/// Checks that JSON handed in with an object is UTF-8 text, as JSON must be (cheap: done for
/// every such write, so that decoding can rely on it).
pub(crate) fn check_utf8(key: &ObjectKey, json: &[u8]) -> Result<(), CompactError> {
    std::str::from_utf8(json)
        .map(drop)
        .map_err(|e| CompactError::EncodedMismatch {
            key: key.clone(),
            detail: format!("it is not UTF-8 text: {e}"),
        })
}

/// Checks that `raw` (in `format`) decodes to a `K` that encodes to the same JSON as `obj`
/// does. `given` says `raw` is JSON handed in with `obj` rather than the store's own encoding
/// of it: a mismatch is then the caller's ([`CompactError::EncodedMismatch`]), else the type's
/// ([`CompactError::NotRoundTripping`]).
pub(crate) fn check_round_trip<K: Serialize + DeserializeOwned>(
    key: &ObjectKey,
    obj: &K,
    raw: &[u8],
    format: Format,
    given: bool,
) -> Result<(), CompactError> {
    let refused = |detail: String| {
        if given {
            CompactError::EncodedMismatch {
                key: key.clone(),
                detail,
            }
        } else {
            CompactError::NotRoundTripping {
                key: key.clone(),
                detail,
            }
        }
    };
    let decoded: K = match format {
        Format::Json => serde_json::from_slice(raw)
            .map_err(|e| refused(format!("its JSON does not decode: {e}")))?,
        Format::MessagePack => from_message_pack(raw)
            .map_err(|e| refused(format!("its MessagePack does not decode: {e}")))?,
    };
    let again = serde_json::to_vec(&decoded)
        .map_err(|e| refused(format!("the decoded object does not encode: {e}")))?;
    // The object's own JSON: `raw` itself when that is what the store wrote.
    let expected: Cow<'_, [u8]> = if format == Format::Json && !given {
        Cow::Borrowed(raw)
    } else {
        Cow::Owned(
            serde_json::to_vec(obj).map_err(|source| CompactError::Encode {
                key: key.clone(),
                source: Box::new(source),
            })?,
        )
    };
    if again == *expected {
        return Ok(());
    }
    // The same content with maps in another order is fine.
    let as_value = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).ok();
    match (as_value(&again), as_value(&expected)) {
        (Some(a), Some(b)) if a == b => Ok(()),
        _ => Err(refused(format!(
            "decoding and encoding again gives other JSON ({} bytes instead of {})",
            again.len(),
            expected.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;

    #[test]
    fn sampled_checks() {
        let check = RoundTripCheck::Sampled {
            first: 2,
            then_every: 3,
        };
        let due: Vec<u64> = (0..10).filter(|&n| check.due(n)).collect();
        assert_eq!(due, [0, 1, 2, 5, 8]);
        let only_first = RoundTripCheck::Sampled {
            first: 2,
            then_every: 0,
        };
        assert_eq!((0..10).filter(|&n| only_first.due(n)).count(), 2);
        assert!(!RoundTripCheck::Never.due(0));
        assert!(RoundTripCheck::Always.due(12345));
    }

    #[test]
    fn message_pack_round_trips_values_and_refuses_truncated_bytes() {
        let key = ObjectKey::from_raw("ns/a");
        let value = serde_json::json!({
            "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "web"}},
            "spec": {"replicas": 3, "ratio": 0.5, "negative": -7, "big": u64::MAX, "none": null,
                     "list": [1, "two", {"three": [true, false]}], "empty": {}}
        });
        let raw = serialize(&key, &value, Format::MessagePack).unwrap();
        assert!(raw.len() < serde_json::to_vec(&value).unwrap().len());
        let back: serde_json::Value = deserialize(&raw, Format::MessagePack).unwrap();
        assert_eq!(back, value);
        check_round_trip(&key, &value, &raw, Format::MessagePack, false).unwrap();
        assert!(matches!(
            deserialize::<serde_json::Value>(&raw[..raw.len() - 1], Format::MessagePack),
            Err(DecodeError::MessagePack(_))
        ));
    }

    #[test]
    fn compressed_objects_decode_with_their_dictionary_only() {
        let key = ObjectKey::from_raw("ns/a");
        let samples: Vec<serde_json::Value> = (0..200)
            .map(|i| serde_json::json!({"metadata": {"name": format!("obj-{i}"), "namespace": "ns"}, "data": {"k": "v".repeat(i % 7)}}))
            .collect();
        let mut joined = Vec::new();
        let mut sizes = Vec::new();
        for s in &samples {
            let json = serde_json::to_vec(s).unwrap();
            sizes.push(json.len());
            joined.extend(json);
        }
        let dictionary = Dictionary::train(
            &joined,
            &sizes,
            &ZstdDictionary::default().dictionary_size(4096),
        )
        .unwrap();
        let json = serde_json::to_vec(&samples[3]).unwrap();
        let encoded = compress(&key, &json, &dictionary).unwrap();
        assert!(encoded.is_compressed());
        assert!(encoded.len() < json.len());
        assert_eq!(encoded.raw_len(), json.len());
        let back: serde_json::Value = decode(&encoded, Format::Json, Some(&dictionary)).unwrap();
        assert_eq!(back, samples[3]);
        assert!(matches!(
            decode::<serde_json::Value>(&encoded, Format::Json, None),
            Err(DecodeError::NoDictionary)
        ));
        let plain = plain(&key, &json).unwrap();
        let back: serde_json::Value = decode(&plain, Format::Json, None).unwrap();
        assert_eq!(back, samples[3]);
    }
}

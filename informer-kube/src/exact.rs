//! Decoding with exact capacities: every `Vec` an object holds is allocated at its final
//! length, not grown by doubling.
//!
//! JSON does not say how long an array is before its end, so serde's `Vec` decoding starts
//! small and doubles; the spare capacity stays with the decoded object for as long as the
//! cache holds it. For k8s-openapi types the waste is large because their elements are: a
//! `Container` is over 2 KB inline, so a pod with three containers carries room for a fourth,
//! and the same goes for volumes, ports, env vars, managed fields and statuses (about 6 KB per
//! realistic pod, 13% of its memory). A deep clone after decoding would compact the object
//! (kube-runtime's store clones every object it stores) but costs a second pass of
//! allocations per object.
//!
//! Here one fast pre-pass over the text counts the elements of every array, in document order
//! ([`array_lengths`]), and a forwarding deserializer ([`Hinted`]) hands each sequence its
//! count as serde's `size_hint`, which `Vec` uses to allocate once. The hints change
//! capacities only, never values: a value decodes exactly as without them. Should the
//! sequence of arrays seen ever differ from the pre-pass (a type that captures raw JSON
//! without visiting it), the first mismatching array is detected at its end and no further
//! hints are given for that document; serde bounds any preallocation from a hint anyway.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};

/// The element count of every array in `text`, in the order the arrays open. Never fails:
/// malformed text yields counts that are merely useless, and the decoder reports the error.
pub(crate) fn array_lengths(text: &[u8]) -> Vec<u32> {
    /// An open array (its index in the output and whether it has an element yet) or object.
    enum Frame {
        Array {
            index: usize,
            commas: u32,
            nonempty: bool,
        },
        Object,
    }
    fn element_seen(stack: &mut [Frame]) {
        if let Some(Frame::Array { nonempty, .. }) = stack.last_mut() {
            *nonempty = true;
        }
    }
    let mut counts = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                element_seen(&mut stack);
                i += 1;
                // Skip to the closing quote, stepping over escapes.
                loop {
                    match memchr::memchr2(b'"', b'\\', &text[i.min(text.len())..]) {
                        Some(at) if text[i + at] == b'\\' => i += at + 2,
                        Some(at) => {
                            i += at + 1;
                            break;
                        }
                        None => {
                            i = text.len();
                            break;
                        }
                    }
                }
                continue;
            }
            b'[' => {
                element_seen(&mut stack);
                stack.push(Frame::Array {
                    index: counts.len(),
                    commas: 0,
                    nonempty: false,
                });
                counts.push(0);
            }
            b'{' => {
                element_seen(&mut stack);
                stack.push(Frame::Object);
            }
            b']' | b'}' => {
                if let Some(Frame::Array {
                    index,
                    commas,
                    nonempty: true,
                }) = stack.pop()
                {
                    counts[index] = commas + 1;
                }
            }
            b',' => {
                if let Some(Frame::Array { commas, .. }) = stack.last_mut() {
                    *commas += 1;
                }
            }
            b' ' | b'\n' | b'\r' | b'\t' | b':' => {}
            _ => element_seen(&mut stack),
        }
        i += 1;
    }
    counts
}

/// Where the decoder is in the pre-pass's counts.
pub(crate) struct Cursor {
    counts: Vec<u32>,
    next: Cell<usize>,
    aligned: Cell<bool>,
}

impl Cursor {
    /// Counts the arrays of `text` for one decode of it.
    pub(crate) fn new(text: &[u8]) -> Self {
        Self {
            counts: array_lengths(text),
            next: Cell::new(0),
            aligned: Cell::new(true),
        }
    }

    /// The count of the array that opens now, while the decode still follows the pre-pass.
    fn take(&self) -> Option<usize> {
        let next = self.next.get();
        self.next.set(next + 1);
        if !self.aligned.get() {
            return None;
        }
        let count = self.counts.get(next).map(|c| *c as usize);
        if count.is_none() {
            self.aligned.set(false);
        }
        count
    }

    fn check(&self, hint: Option<usize>, seen: usize) {
        if hint.is_some_and(|h| h != seen) {
            self.aligned.set(false);
        }
    }
}

/// Decodes one value from `de` (over `text`) with exact `Vec` capacities.
pub(crate) fn deserialize_seed<'de, S, D>(seed: S, de: D, text: &[u8]) -> Result<S::Value, D::Error>
where
    S: DeserializeSeed<'de>,
    D: Deserializer<'de>,
{
    let cursor = Cursor::new(text);
    seed.deserialize(Hinted {
        inner: de,
        cursor: &cursor,
    })
}

/// Decodes one `K` from the whole of `text` with exact `Vec` capacities; the result is the
/// plain decode's in every case.
///
/// Hints change capacities, never values, so a hinted decode that succeeds is the plain
/// decode. It can fail where the plain one does not: fields the type skips are walked with
/// `deserialize_any` (so that their arrays keep the hints in step), which checks more than
/// serde_json's skipping does (a number out of `f64` range in an unknown field is refused by
/// the one, accepted by the other; found by the `exact` fuzz target). On failure the text is
/// therefore decoded again plainly: what is accepted, and every error, are exactly serde's.
/// That second pass happens only for objects that fail the first, which real servers do not
/// send.
pub(crate) fn from_str<K: DeserializeOwned>(text: &str) -> serde_json::Result<K> {
    let mut de = serde_json::Deserializer::from_str(text);
    let hinted = deserialize_seed(PhantomData::<K>, &mut de, text.as_bytes())
        .and_then(|value| de.end().map(|()| value));
    match hinted {
        Ok(value) => Ok(value),
        Err(_) => serde_json::from_str(text),
    }
}

/// A deserializer that forwards to `inner` and gives every sequence its pre-counted length.
pub(crate) struct Hinted<'c, D> {
    inner: D,
    cursor: &'c Cursor,
}

/// Wraps a visitor, seed or access in the cursor's hints.
struct Wrap<'c, T> {
    inner: T,
    cursor: &'c Cursor,
}

impl<'c, T> Wrap<'c, T> {
    fn new(inner: T, cursor: &'c Cursor) -> Self {
        Self { inner, cursor }
    }
}

macro_rules! forward_deserialize {
    ($($method:ident),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.inner.$method(Wrap::new(visitor, self.cursor))
            }
        )*
    };
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Hinted<'_, D> {
    type Error = D::Error;

    forward_deserialize!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
    );

    /// Skipped values are walked through the hints too, so arrays inside them keep the
    /// cursor in step with the document.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(Wrap::new(visitor, self.cursor))
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_unit_struct(name, Wrap::new(visitor, self.cursor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_newtype_struct(name, Wrap::new(visitor, self.cursor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_tuple(len, Wrap::new(visitor, self.cursor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_tuple_struct(name, len, Wrap::new(visitor, self.cursor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_struct(name, fields, Wrap::new(visitor, self.cursor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner
            .deserialize_enum(name, variants, Wrap::new(visitor, self.cursor))
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(
            fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
                self.inner.$method(v)
            }
        )*
    };
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_some(Hinted {
            inner: d,
            cursor: self.cursor,
        })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.visit_newtype_struct(Hinted {
            inner: d,
            cursor: self.cursor,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let hint = self.cursor.take();
        self.inner.visit_seq(HintedSeq {
            inner: seq,
            cursor: self.cursor,
            hint,
            seen: 0,
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_map(Wrap::new(map, self.cursor))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.inner.visit_enum(Wrap::new(data, self.cursor))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<'_, S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.inner.deserialize(Hinted {
            inner: d,
            cursor: self.cursor,
        })
    }
}

/// A sequence that reports its pre-counted length and checks it at its end.
struct HintedSeq<'c, A> {
    inner: A,
    cursor: &'c Cursor,
    hint: Option<usize>,
    seen: usize,
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for HintedSeq<'_, A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        let next = self.inner.next_element_seed(Wrap::new(seed, self.cursor))?;
        match next {
            Some(_) => self.seen += 1,
            None => self.cursor.check(self.hint, self.seen),
        }
        Ok(next)
    }

    fn size_hint(&self) -> Option<usize> {
        match self.hint {
            Some(hint) if self.cursor.aligned.get() => Some(hint.saturating_sub(self.seen)),
            _ => self.inner.size_hint(),
        }
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Wrap::new(seed, self.cursor))
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.inner.next_value_seed(Wrap::new(seed, self.cursor))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'c, 'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<'c, A> {
    type Error = A::Error;
    type Variant = Wrap<'c, A::Variant>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), A::Error> {
        let (value, variant) = self.inner.variant_seed(Wrap::new(seed, self.cursor))?;
        Ok((value, Wrap::new(variant, self.cursor)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner
            .newtype_variant_seed(Wrap::new(seed, self.cursor))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner
            .tuple_variant(len, Wrap::new(visitor, self.cursor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner
            .struct_variant(fields, Wrap::new(visitor, self.cursor))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Pod, PodSpec};
    use rand::SeedableRng;
    use serde::Deserialize;
    use serde_json::value::RawValue;

    use super::*;

    #[test]
    fn arrays_are_counted_in_the_order_they_open() {
        let text = br#"{"a":[1,[2,3],[],{"b":[" [,]\" ",null]}],"c":[ ],"d":[{}],"e":"[1,2]"}"#;
        assert_eq!(array_lengths(text), vec![4, 2, 0, 2, 0, 1]);
        assert_eq!(array_lengths(b"[[[]]]"), vec![1, 1, 0]);
        assert_eq!(array_lengths(br#"["\\",["\\\""]]"#), vec![2, 1]);
        // Malformed text never panics.
        for bad in [&b"[1,2"[..], b"]]]", b"[\"abc", b"[\"a\\", b"{\"a\":[1,}"] {
            let _ = array_lengths(bad);
        }
    }

    fn seeded_pods(n: usize) -> Vec<Pod> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        (0..n)
            .map(|i| {
                let pod = fake_apiserver::seed::pod("ns", &format!("p-{i}"), &mut rng);
                serde_json::from_value(pod).unwrap()
            })
            .collect()
    }

    fn assert_exact(spec: &PodSpec) {
        assert_eq!(spec.containers.capacity(), spec.containers.len());
        for c in &spec.containers {
            if let Some(ports) = &c.ports {
                assert_eq!(ports.capacity(), ports.len());
            }
            if let Some(env) = &c.env {
                assert_eq!(env.capacity(), env.len());
            }
        }
        if let Some(volumes) = &spec.volumes {
            assert_eq!(volumes.capacity(), volumes.len());
        }
    }

    #[test]
    fn values_are_unchanged_and_vecs_are_exact() {
        for pod in seeded_pods(20) {
            let text = serde_json::to_string(&pod).unwrap();
            let plain: Pod = serde_json::from_str(&text).unwrap();
            let exact: Pod = from_str(&text).unwrap();
            assert_eq!(exact, plain);
            assert_exact(exact.spec.as_ref().unwrap());
            let managed = exact.metadata.managed_fields.as_ref().unwrap();
            assert_eq!(managed.capacity(), managed.len());
        }
    }

    #[test]
    fn list_pages_and_watch_lines_decode_exact() {
        let pods = seeded_pods(10);
        let items: Vec<String> = pods
            .iter()
            .map(|p| serde_json::to_string(p).unwrap())
            .collect();
        let body = format!(
            r#"{{"kind":"PodList","metadata":{{"resourceVersion":"9"}},"items":[{}]}}"#,
            items.join(",")
        );
        // As lists are decoded: streamed, item by item.
        let mut decoded: Vec<Pod> = Vec::new();
        let mut decoder = crate::list_stream::ListDecoder::<Pod>::new(
            "listing",
            crate::DecoderMemory::default(),
            1 << 20,
        );
        decoder.feed(body.as_bytes(), &mut decoded).unwrap();
        decoder.finish().unwrap();
        assert_eq!(decoded, pods);
        for pod in &decoded {
            assert_exact(pod.spec.as_ref().unwrap());
        }
        for (item, pod) in items.iter().zip(&pods) {
            // The API server's own shape (the one-pass path) and another (the general path).
            for line in [
                format!(r#"{{"type":"MODIFIED","object":{item}}}"#),
                format!(r#"{{"object":{item},"type":"MODIFIED"}}"#),
            ] {
                let event = crate::decode::watch_line::<Pod>(line.as_bytes(), "watching").unwrap();
                let informer_core::WatchEvent::Modified(decoded) = event else {
                    panic!("not a MODIFIED event: {event:?}");
                };
                assert_eq!(&decoded, pod);
                assert_exact(decoded.spec.as_ref().unwrap());
            }
        }
    }

    #[test]
    fn skipped_fields_with_arrays_keep_the_hints_in_step() {
        let mut pod = serde_json::to_value(&seeded_pods(1)[0]).unwrap();
        // Unknown fields (skipped by the decoder) holding arrays, before and inside the spec.
        pod["aaaUnknown"] = serde_json::json!([[1, 2], [], [[3]]]);
        pod["spec"]["aaaUnknown"] = serde_json::json!({"x": [1, 2, 3, [4]]});
        let text = serde_json::to_string(&pod).unwrap();
        let exact: Pod = from_str(&text).unwrap();
        assert_eq!(exact, serde_json::from_str::<Pod>(&text).unwrap());
        assert_exact(exact.spec.as_ref().unwrap());
    }

    #[test]
    fn raw_values_end_the_hints_without_changing_values() {
        #[derive(Deserialize)]
        struct Holder {
            raw: Box<RawValue>,
            items: Vec<Vec<u8>>,
            tail: Vec<u8>,
        }
        let text = r#"{"raw":[[1],[2,2]],"items":[[1,2,3],[4]],"tail":[9,9]}"#;
        let exact: Holder = from_str(text).unwrap();
        assert_eq!(exact.raw.get(), r#"[[1],[2,2]]"#);
        assert_eq!(exact.items, vec![vec![1, 2, 3], vec![4]]);
        assert_eq!(exact.tail, vec![9, 9]);
    }

    #[test]
    fn what_skipping_accepts_is_accepted() {
        // A number beyond f64 in a field the type skips: serde_json's skipping accepts it,
        // its parsing (what walking a skipped field through the hints does) does not.
        let text = r#"{"unknown":4E1111111111,"metadata":{"name":"a"},"spec":{"containers":[]}}"#;
        let plain: Pod = serde_json::from_str(text).unwrap();
        let exact: Pod = from_str(text).unwrap();
        assert_eq!(exact, plain);
    }

    #[test]
    fn errors_are_the_decoders_own() {
        let plain = serde_json::from_str::<Pod>(r#"{"spec":{"containers":[{"name":5}]}}"#)
            .unwrap_err()
            .to_string();
        let exact = from_str::<Pod>(r#"{"spec":{"containers":[{"name":5}]}}"#)
            .unwrap_err()
            .to_string();
        assert_eq!(exact, plain);
        assert!(from_str::<Pod>(r#"{"spec":{}} x"#).is_err());
    }
}

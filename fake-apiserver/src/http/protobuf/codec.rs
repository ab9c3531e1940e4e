//! Protobuf messages ↔ the JSON objects the fake server stores, driven by the schema.
//!
//! Decoding keeps every field present on the wire, zero values included: a Go client writes
//! non-pointer fields even when they hold their zero value, and the wire cannot tell those
//! from pointers set to zero (`replicas: 0`, `automountServiceAccountToken: false`), which
//! must be kept. Only `ObjectMeta` and `ListMeta`, whose shape is known, drop the empty
//! strings and zero counts a Go client always writes, as the real server's JSON omits them.
//! Encoding writes the fields the JSON object has; fields the schema does not know, and
//! values of the wrong JSON type (the test's direct writes store any JSON), are left out.

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use informer_core::Status;
use serde_json::{Map, Number, Value};

use crate::{ResourceDef, status};

use super::schema::{Field, MapValue, Message, Scalar, Schema, Shape, Special, Type};
use super::wire::{self, Raw, Reader};

const OBJECT_META: &str = "apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "apimachinery.pkg.apis.meta.v1.ListMeta";
const PROPS: &str = "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps";

/// Fields of `ObjectMeta`/`ListMeta` that Go writes even when empty (non-pointer strings and
/// counts) and its JSON omits when empty.
const META_OMIT_EMPTY: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "continue",
];

/// Decodes message `index` into its JSON form.
pub(super) fn decode(schema: &Schema, index: usize, data: &[u8]) -> Result<Value, String> {
    let msg = schema.message(index);
    match msg.shape {
        Shape::Object => {
            let mut out = Map::new();
            decode_fields(schema, msg, data, &mut out)?;
            if msg.name == OBJECT_META || msg.name == LIST_META {
                out.retain(|k, v| {
                    let omitted_empty = META_OMIT_EMPTY.contains(&k.as_str()) && is_empty_scalar(v);
                    let zero_time = k == "creationTimestamp" && v.is_null();
                    !(omitted_empty || zero_time)
                });
            }
            Ok(Value::Object(out))
        }
        Shape::Array => {
            let mut out = Map::new();
            decode_fields(schema, msg, data, &mut out)?;
            Ok(out
                .into_iter()
                .next()
                .map_or_else(|| Value::Array(Vec::new()), |(_, v)| v))
        }
        Shape::Special(s) => decode_special(schema, s, data),
    }
}

fn is_empty_scalar(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_i64() == Some(0),
        _ => false,
    }
}

fn decode_fields(
    schema: &Schema,
    msg: &Message,
    data: &[u8],
    out: &mut Map<String, Value>,
) -> Result<(), String> {
    let mut reader = Reader::new(data);
    while let Some((number, raw)) = reader.next_field()? {
        let Some(field) = msg.fields.iter().find(|f| f.number == number) else {
            continue;
        };
        let Some(json) = &field.json else {
            // A Go struct embedded inline: its fields join this object.
            if let (Type::Message(inner), Raw::Bytes(bytes)) = (field.ty, raw) {
                decode_fields(schema, schema.message(inner), bytes, out)?;
            }
            continue;
        };
        let context = || format!("{}.{json}", msg.name);
        match field.ty {
            Type::Map(value_type) => {
                let Raw::Bytes(entry) = raw else {
                    return Err(format!(
                        "{}: a map entry must be length-delimited",
                        context()
                    ));
                };
                let (k, v) = decode_map_entry(schema, value_type, entry)?;
                if let Value::Object(map) = out
                    .entry(json.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
                {
                    map.insert(k, v);
                }
            }
            ty if field.repeated => {
                let items = match (ty, raw) {
                    // Packed numbers (proto2 writes them unpacked, but readers accept both).
                    (
                        Type::Scalar(s @ (Scalar::Int32 | Scalar::Int64 | Scalar::Bool)),
                        Raw::Bytes(b),
                    ) => Reader::packed_varints(b)?
                        .into_iter()
                        .map(|v| varint_value(s, v))
                        .collect(),
                    (ty, raw) => vec![
                        decode_value(schema, ty, raw).map_err(|e| format!("{}: {e}", context()))?,
                    ],
                };
                if let Value::Array(list) = out
                    .entry(json.clone())
                    .or_insert_with(|| Value::Array(Vec::new()))
                {
                    list.extend(items);
                }
            }
            ty => {
                let value =
                    decode_value(schema, ty, raw).map_err(|e| format!("{}: {e}", context()))?;
                out.insert(json.clone(), value);
            }
        }
    }
    Ok(())
}

fn varint_value(scalar: Scalar, v: u64) -> Value {
    // Two's complement: int32 and int64 fields carry negative numbers as ten-byte varints.
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    match scalar {
        Scalar::Bool => Value::Bool(v != 0),
        Scalar::Int32 => Value::from(v as i64 as i32),
        _ => Value::from(v as i64),
    }
}

fn decode_value(schema: &Schema, ty: Type, raw: Raw<'_>) -> Result<Value, String> {
    match (ty, raw) {
        (Type::Scalar(s @ (Scalar::Bool | Scalar::Int32 | Scalar::Int64)), Raw::Varint(v)) => {
            Ok(varint_value(s, v))
        }
        (Type::Scalar(Scalar::Double), Raw::Fixed64(bits)) => {
            Ok(Number::from_f64(f64::from_bits(bits)).map_or(Value::Null, Value::Number))
        }
        (Type::Scalar(Scalar::String), Raw::Bytes(b)) => std::str::from_utf8(b)
            .map(|s| Value::String(s.to_owned()))
            .map_err(|e| format!("invalid UTF-8: {e}")),
        (Type::Scalar(Scalar::Bytes), Raw::Bytes(b)) => Ok(Value::String(BASE64.encode(b))),
        (Type::Message(m), Raw::Bytes(b)) => decode(schema, m, b),
        _ => Err("unexpected wire type".to_owned()),
    }
}

fn decode_map_entry(
    schema: &Schema,
    value_type: MapValue,
    entry: &[u8],
) -> Result<(String, Value), String> {
    let mut key = String::new();
    let mut value = None;
    let mut reader = Reader::new(entry);
    while let Some((number, raw)) = reader.next_field()? {
        match (number, raw) {
            (1, Raw::Bytes(b)) => {
                key = String::from_utf8(b.to_vec()).map_err(|e| format!("invalid map key: {e}"))?;
            }
            (2, raw) => {
                let ty = match value_type {
                    MapValue::Scalar(s) => Type::Scalar(s),
                    MapValue::Message(m) => Type::Message(m),
                };
                value = Some(decode_value(schema, ty, raw)?);
            }
            _ => {}
        }
    }
    let value = value.unwrap_or_else(|| match value_type {
        MapValue::Scalar(Scalar::String | Scalar::Bytes) => Value::String(String::new()),
        MapValue::Scalar(_) => Value::from(0),
        MapValue::Message(m) => decode(schema, m, &[]).unwrap_or(Value::Null),
    });
    Ok((key, value))
}

/// The fields of a small message, by number.
fn fields_of(data: &[u8]) -> Result<Vec<(u32, Raw<'_>)>, String> {
    let mut reader = Reader::new(data);
    let mut out = Vec::new();
    while let Some(f) = reader.next_field()? {
        out.push(f);
    }
    Ok(out)
}

fn decode_special(schema: &Schema, special: Special, data: &[u8]) -> Result<Value, String> {
    let fields = fields_of(data)?;
    let varint = |n: u32| {
        fields.iter().find_map(|(k, v)| match v {
            Raw::Varint(x) if *k == n => Some(*x),
            _ => None,
        })
    };
    let bytes = |n: u32| {
        fields.iter().find_map(|(k, v)| match v {
            Raw::Bytes(b) if *k == n => Some(*b),
            _ => None,
        })
    };
    let text = |n: u32| -> Result<String, String> {
        std::str::from_utf8(bytes(n).unwrap_or_default())
            .map(str::to_owned)
            .map_err(|e| format!("invalid UTF-8: {e}"))
    };
    let props = || {
        schema
            .find(PROPS)
            .ok_or_else(|| format!("the schema lacks {PROPS}"))
    };
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    Ok(match special {
        Special::Time | Special::MicroTime => {
            if fields.is_empty() {
                // The zero time, which Go writes as an empty message and JSON as null.
                Value::Null
            } else {
                let seconds = varint(1).unwrap_or(0) as i64;
                let nanos = varint(2).unwrap_or(0) as i64 as i32;
                Value::String(wire::format_time(
                    seconds,
                    nanos,
                    special == Special::MicroTime,
                ))
            }
        }
        Special::Duration => Value::String(wire::format_duration(varint(1).unwrap_or(0) as i64)),
        Special::RawJson => match bytes(1) {
            None | Some([]) => Value::Null,
            Some(raw) if raw.starts_with(MAGIC) => decode_envelope(raw).map_err(|s| s.message)?,
            Some(raw) => serde_json::from_slice(raw).map_err(|e| format!("embedded JSON: {e}"))?,
        },
        Special::Quantity => Value::String(text(1)?),
        Special::IntOrString => {
            if varint(1) == Some(1) {
                Value::String(text(3)?)
            } else {
                Value::from(varint(2).unwrap_or(0) as i64 as i32)
            }
        }
        Special::PropsOrArray => {
            let props = props()?;
            let list: Vec<&[u8]> = fields
                .iter()
                .filter_map(|(k, v)| match v {
                    Raw::Bytes(b) if *k == 2 => Some(*b),
                    _ => None,
                })
                .collect();
            if list.is_empty() {
                decode(schema, props, bytes(1).unwrap_or_default())?
            } else {
                Value::Array(
                    list.into_iter()
                        .map(|b| decode(schema, props, b))
                        .collect::<Result<_, _>>()?,
                )
            }
        }
        Special::PropsOrBool => match bytes(2) {
            Some(b) => decode(schema, props()?, b)?,
            None => Value::Bool(varint(1).unwrap_or(0) != 0),
        },
        Special::PropsOrStringArray => {
            let strings: Vec<Value> = fields
                .iter()
                .filter_map(|(k, v)| match v {
                    Raw::Bytes(b) if *k == 2 => {
                        Some(Value::String(String::from_utf8_lossy(b).into_owned()))
                    }
                    _ => None,
                })
                .collect();
            if strings.is_empty() {
                decode(schema, props()?, bytes(1).unwrap_or_default())?
            } else {
                Value::Array(strings)
            }
        }
    })
}

// ----- Encoding --------------------------------------------------------------------------

/// Encodes `value` as message `index` (the message's bytes, without envelope).
pub(super) fn encode(schema: &Schema, index: usize, value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_into(schema, index, value, &mut out);
    out
}

fn encode_into(schema: &Schema, index: usize, value: &Value, out: &mut Vec<u8>) {
    let msg = schema.message(index);
    match msg.shape {
        Shape::Object => {
            if let Value::Object(map) = value {
                encode_fields(schema, msg, map, out);
            }
        }
        Shape::Array => {
            if let (Value::Array(items), Some(field)) = (value, msg.fields.first()) {
                for item in items {
                    encode_single(schema, field, item, out);
                }
            }
        }
        Shape::Special(s) => encode_special(schema, s, value, out),
    }
}

fn encode_fields(schema: &Schema, msg: &Message, map: &Map<String, Value>, out: &mut Vec<u8>) {
    for field in &msg.fields {
        let Some(json) = &field.json else {
            // An embedded struct: its fields come from this same object.
            if let Type::Message(inner) = field.ty {
                let mut buf = Vec::new();
                encode_fields(schema, schema.message(inner), map, &mut buf);
                wire::put_bytes(field.number, &buf, out);
            }
            continue;
        };
        let Some(value) = map.get(json).filter(|v| !v.is_null()) else {
            continue;
        };
        match (field.ty, value) {
            (Type::Map(value_type), Value::Object(entries)) => {
                for (k, v) in entries {
                    let mut entry = Vec::new();
                    wire::put_bytes(1, k.as_bytes(), &mut entry);
                    let value_field = Field {
                        number: 2,
                        json: None,
                        ty: match value_type {
                            MapValue::Scalar(s) => Type::Scalar(s),
                            MapValue::Message(m) => Type::Message(m),
                        },
                        repeated: false,
                    };
                    encode_single(schema, &value_field, v, &mut entry);
                    wire::put_bytes(field.number, &entry, out);
                }
            }
            (Type::Map(_), _) => {}
            (_, Value::Array(items)) if field.repeated => {
                for item in items.iter().filter(|v| !v.is_null()) {
                    encode_single(schema, field, item, out);
                }
            }
            _ if field.repeated => {}
            _ => encode_single(schema, field, value, out),
        }
    }
}

/// Writes one value of `field` (one element of a repeated field); values of the wrong JSON
/// type are left out.
fn encode_single(schema: &Schema, field: &Field, value: &Value, out: &mut Vec<u8>) {
    let n = field.number;
    #[allow(clippy::cast_sign_loss)]
    match (field.ty, value) {
        (Type::Scalar(Scalar::String), Value::String(s)) => wire::put_bytes(n, s.as_bytes(), out),
        (Type::Scalar(Scalar::Bytes), Value::String(s)) => {
            if let Ok(b) = BASE64.decode(s) {
                wire::put_bytes(n, &b, out);
            }
        }
        (Type::Scalar(Scalar::Bool), Value::Bool(b)) => wire::put_varint(n, u64::from(*b), out),
        (Type::Scalar(Scalar::Int32 | Scalar::Int64), Value::Number(num)) => {
            if let Some(i) = num
                .as_i64()
                .or_else(|| num.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            {
                wire::put_varint(n, i as u64, out);
            }
        }
        (Type::Scalar(Scalar::Double), Value::Number(num)) => {
            if let Some(f) = num.as_f64() {
                wire::put_fixed64(n, f.to_bits(), out);
            }
        }
        (Type::Message(m), v) => {
            let mut buf = Vec::new();
            encode_into(schema, m, v, &mut buf);
            wire::put_bytes(n, &buf, out);
        }
        _ => {}
    }
}

fn encode_special(schema: &Schema, special: Special, value: &Value, out: &mut Vec<u8>) {
    #[allow(clippy::cast_sign_loss)]
    match (special, value) {
        (Special::Time | Special::MicroTime, Value::String(s)) => {
            if let Some((seconds, nanos)) = wire::parse_time(s) {
                wire::put_varint(1, seconds as u64, out);
                wire::put_varint(2, i64::from(nanos) as u64, out);
            }
        }
        (Special::Duration, Value::String(s)) => {
            if let Some(nanos) = wire::parse_duration(s) {
                wire::put_varint(1, nanos as u64, out);
            }
        }
        (Special::RawJson, v) => wire::put_bytes(1, v.to_string().as_bytes(), out),
        (Special::Quantity, Value::String(s)) => wire::put_bytes(1, s.as_bytes(), out),
        (Special::Quantity, Value::Number(num)) => {
            wire::put_bytes(1, num.to_string().as_bytes(), out)
        }
        (Special::IntOrString, Value::Number(num)) => {
            wire::put_varint(1, 0, out);
            wire::put_varint(2, num.as_i64().unwrap_or(0) as u64, out);
            wire::put_bytes(3, b"", out);
        }
        (Special::IntOrString, Value::String(s)) => {
            wire::put_varint(1, 1, out);
            wire::put_varint(2, 0, out);
            wire::put_bytes(3, s.as_bytes(), out);
        }
        (Special::PropsOrArray, Value::Array(items)) => {
            if let Some(props) = schema.find(PROPS) {
                for item in items {
                    wire::put_bytes(2, &encode(schema, props, item), out);
                }
            }
        }
        (Special::PropsOrArray | Special::PropsOrStringArray, v @ Value::Object(_)) => {
            if let Some(props) = schema.find(PROPS) {
                wire::put_bytes(1, &encode(schema, props, v), out);
            }
        }
        (Special::PropsOrBool, Value::Bool(b)) => wire::put_varint(1, u64::from(*b), out),
        (Special::PropsOrBool, v @ Value::Object(_)) => {
            wire::put_varint(1, 1, out);
            if let Some(props) = schema.find(PROPS) {
                wire::put_bytes(2, &encode(schema, props, v), out);
            }
        }
        (Special::PropsOrStringArray, Value::Array(items)) => {
            for s in items.iter().filter_map(Value::as_str) {
                wire::put_bytes(2, s.as_bytes(), out);
            }
        }
        _ => {}
    }
}

// ----- The envelope: `k8s\0` + `runtime.Unknown` around a message ---------------------

/// The prefix of every protobuf body.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

/// `(apiVersion, kind)` → message, for every built-in kind and list kind, plus the meta kinds
/// clients send or receive (`Status`, `DeleteOptions`, autoscaling/v1 `Scale`, the reviews).
fn kinds() -> &'static HashMap<(String, String), usize> {
    static KINDS: OnceLock<HashMap<(String, String), usize>> = OnceLock::new();
    KINDS.get_or_init(|| {
        let schema = Schema::get();
        let mut map = HashMap::new();
        for def in ResourceDef::builtins() {
            let Some(definition) = &def.definition else {
                continue;
            };
            // `io.k8s.api.core.v1.Pod` → k8s-pb's `api.core.v1.Pod`.
            let path = definition.trim_start_matches("io.k8s.").replace('-', "_");
            let package = path.trim_end_matches(def.kind.as_str());
            for (kind, name) in [
                (&def.kind, path.clone()),
                (&def.list_kind, format!("{package}{}", def.list_kind)),
            ] {
                if let Some(index) = schema.find(&name) {
                    map.insert((def.api_version(), kind.clone()), index);
                }
            }
        }
        let meta = "apimachinery.pkg.apis.meta.v1";
        for (api_version, kind, name) in [
            ("v1", "Status", format!("{meta}.Status")),
            ("meta.k8s.io/v1", "Status", format!("{meta}.Status")),
            ("v1", "DeleteOptions", format!("{meta}.DeleteOptions")),
            (
                "meta.k8s.io/v1",
                "DeleteOptions",
                format!("{meta}.DeleteOptions"),
            ),
            (
                "autoscaling/v1",
                "Scale",
                "api.autoscaling.v1.Scale".to_owned(),
            ),
            ("policy/v1", "Eviction", "api.policy.v1.Eviction".to_owned()),
            (
                "authentication.k8s.io/v1",
                "TokenRequest",
                "api.authentication.v1.TokenRequest".to_owned(),
            ),
        ]
        .into_iter()
        .chain(REVIEWS.iter().map(|(api_version, kind)| {
            let package = api_version.trim_end_matches(".k8s.io/v1");
            (*api_version, *kind, format!("api.{package}.v1.{kind}"))
        })) {
            if let Some(index) = schema.find(&name) {
                map.insert((api_version.to_owned(), kind.to_owned()), index);
            }
        }
        map
    })
}

/// The review kinds (`http/reviews.rs`), answered without storage.
const REVIEWS: &[(&str, &str)] = &[
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("authentication.k8s.io/v1", "TokenReview"),
];

pub(crate) fn message_for(api_version: &str, kind: &str) -> Option<usize> {
    kinds()
        .get(&(api_version.to_owned(), kind.to_owned()))
        .copied()
        .or_else(|| match kind {
            // Registered in every group version upstream: client-go sends a `DeleteOptions`
            // of the resource's own group version (`apps/v1`).
            "DeleteOptions" | "Status" => kinds().get(&("v1".to_owned(), kind.to_owned())).copied(),
            _ => None,
        })
}

/// Decodes a protobuf request body (`k8s\0` + `Unknown`) into the JSON object it stands for,
/// `apiVersion` and `kind` included. A body that is not valid protobuf, or of a kind without
/// a message, is a 400 (the real server's decode error) or a 415.
pub(crate) fn decode_envelope(data: &[u8]) -> Result<Value, Status> {
    let rest = data.strip_prefix(MAGIC).ok_or_else(|| {
        status::bad_request("the protobuf body does not start with the k8s\\0 prefix")
    })?;
    let mut api_version = String::new();
    let mut kind = String::new();
    let mut raw: &[u8] = &[];
    let mut content_encoding = String::new();
    let bad = |e: String| status::bad_request(format!("cannot decode the protobuf body: {e}"));
    let mut reader = wire::Reader::new(rest);
    while let Some((number, value)) = reader.next_field().map_err(bad)? {
        match (number, value) {
            (1, wire::Raw::Bytes(type_meta)) => {
                let mut tm = wire::Reader::new(type_meta);
                while let Some((n, v)) = tm.next_field().map_err(bad)? {
                    if let wire::Raw::Bytes(b) = v {
                        let text = String::from_utf8_lossy(b).into_owned();
                        match n {
                            1 => api_version = text,
                            2 => kind = text,
                            _ => {}
                        }
                    }
                }
            }
            (2, wire::Raw::Bytes(b)) => raw = b,
            (3, wire::Raw::Bytes(b)) => content_encoding = String::from_utf8_lossy(b).into_owned(),
            _ => {}
        }
    }
    if !content_encoding.is_empty() {
        return Err(unsupported(&format!(
            "protobuf bodies with contentEncoding {content_encoding:?} are not supported"
        )));
    }
    let index = message_for(&api_version, &kind).ok_or_else(|| {
        unsupported(&format!(
            "the fake API server has no protobuf encoding of {kind} ({api_version}); send JSON"
        ))
    })?;
    let mut object = decode(Schema::get(), index, raw).map_err(bad)?;
    if let Value::Object(map) = &mut object {
        map.insert("apiVersion".into(), Value::String(api_version));
        map.insert("kind".into(), Value::String(kind));
    }
    Ok(object)
}

fn unsupported(message: &str) -> Status {
    Status::failure(415, "UnsupportedMediaType", message)
}

/// `k8s\0` + `Unknown` around an encoded message.
pub(crate) fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let mut type_meta = Vec::new();
    wire::put_bytes(1, api_version.as_bytes(), &mut type_meta);
    wire::put_bytes(2, kind.as_bytes(), &mut type_meta);
    let mut out = Vec::with_capacity(raw.len() + type_meta.len() + 16);
    out.extend_from_slice(MAGIC);
    wire::put_bytes(1, &type_meta, &mut out);
    wire::put_bytes(2, raw, &mut out);
    wire::put_bytes(3, b"", &mut out);
    wire::put_bytes(4, b"", &mut out);
    out
}

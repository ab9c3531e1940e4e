//! How the fake server keeps an object: its JSON bytes once, plus the metadata selection needs.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use informer_core::Status;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{ResourceDef, status};

/// One stored version of an object: its JSON serialization (with `metadata.resourceVersion`
/// set) and the parsed metadata that selection needs.
///
/// Stored once and shared as `Arc<StoredObject>` by the current state, the history, every list
/// response and every watcher: nobody copies the bytes. Front ends write [`bytes`](Self::bytes)
/// as they are (HTTP) or decode them once into the caller's type (in-process).
pub struct StoredObject {
    bytes: Bytes,
    meta: StoredMeta,
}

#[derive(Debug, Clone)]
struct StoredMeta {
    key: Arc<str>,
    name: String,
    namespace: Option<String>,
    uid: String,
    labels: BTreeMap<String, String>,
    resource_version: u64,
    deleting: bool,
    has_finalizers: bool,
    /// The values of the resource's selectable fields beyond name and namespace.
    fields: Box<[(Cow<'static, str>, String)]>,
    /// `metadata.ownerReferences`, as the garbage collector reads them.
    owners: Box<[OwnerRef]>,
}

/// One of an object's `metadata.ownerReferences`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    /// `blockOwnerDeletion`: a foreground deletion of the owner waits for this dependent.
    pub blocks: bool,
}

fn owner_refs(meta: &Map<String, Value>) -> Box<[OwnerRef]> {
    let Some(refs) = meta.get("ownerReferences").and_then(Value::as_array) else {
        return Box::default();
    };
    refs.iter()
        .filter_map(|r| {
            let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
            Some(OwnerRef {
                api_version: text("apiVersion")?,
                kind: text("kind")?,
                name: text("name")?,
                uid: text("uid").filter(|u| !u.is_empty())?,
                blocks: r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true),
            })
        })
        .collect()
}

impl StoredObject {
    /// Serializes `value` (which must carry its final metadata) and extracts the metadata and
    /// the values of `def`'s selectable fields.
    pub(crate) fn from_value(
        value: &Value,
        resource_version: u64,
        def: &ResourceDef,
    ) -> Result<Self, Status> {
        let fields = super::fields::extract(def, value);
        Self::build(value, resource_version, fields)
    }

    fn build(
        value: &Value,
        resource_version: u64,
        fields: Box<[(Cow<'static, str>, String)]>,
    ) -> Result<Self, Status> {
        let meta = value
            .get("metadata")
            .and_then(Value::as_object)
            .ok_or_else(|| status::bad_request("object has no metadata"))?;
        let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let name = text("name");
        let namespace = Some(text("namespace")).filter(|n| !n.is_empty());
        let key: Arc<str> = match &namespace {
            Some(ns) => format!("{ns}/{name}").into(),
            None => name.as_str().into(),
        };
        let labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        let has_finalizers = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty());
        let deleting = meta.get("deletionTimestamp").is_some_and(|v| !v.is_null());
        let owners = owner_refs(meta);
        let bytes = serde_json::to_vec(value)
            .map_err(|e| status::internal_error(&format!("cannot serialize object: {e}")))?;
        Ok(Self {
            // `into_boxed_slice` drops the serializer's spare capacity: stored objects live long.
            bytes: Bytes::from(bytes.into_boxed_slice()),
            meta: StoredMeta {
                key,
                name,
                namespace,
                uid: text("uid"),
                labels,
                resource_version,
                deleting,
                has_finalizers,
                fields,
                owners,
            },
        })
    }

    /// The JSON serialization, exactly as list responses and watch events carry it.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }

    /// Decodes the object into `T` (one `serde_json::from_slice`).
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.bytes)
    }

    /// Parses the object into a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.bytes).unwrap_or(Value::Null)
    }

    /// The storage key: `namespace/name`, or `name` for cluster-scoped objects. Lists are
    /// ordered by it, like etcd's keys.
    pub fn key(&self) -> &str {
        &self.meta.key
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// `metadata.namespace` (`None` for cluster-scoped objects).
    pub fn namespace(&self) -> Option<&str> {
        self.meta.namespace.as_deref()
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.meta.uid
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.meta.labels
    }

    /// `metadata.resourceVersion`, as the number the fake server assigned.
    pub fn resource_version(&self) -> u64 {
        self.meta.resource_version
    }

    /// Whether `metadata.deletionTimestamp` is set (a delete waits for finalizers).
    pub fn is_deleting(&self) -> bool {
        self.meta.deleting
    }

    pub(crate) fn has_finalizers(&self) -> bool {
        self.meta.has_finalizers
    }

    /// `metadata.ownerReferences` (those with the fields the garbage collector needs).
    pub(crate) fn owners(&self) -> &[OwnerRef] {
        &self.meta.owners
    }

    /// The value of a field for field selectors (`None`: not a selectable field of this
    /// resource).
    pub(crate) fn field(&self, field: &str) -> Option<&str> {
        match field {
            "metadata.name" => Some(&self.meta.name),
            "metadata.namespace" => Some(self.meta.namespace.as_deref().unwrap_or("")),
            _ => self
                .meta
                .fields
                .iter()
                .find(|(label, _)| label == field)
                .map(|(_, v)| v.as_str()),
        }
    }

    /// A copy of this object with the values of `def`'s selectable fields (its CRD's
    /// selectable fields changed).
    pub(crate) fn with_fields_of(&self, def: &ResourceDef) -> Self {
        let mut meta = self.meta.clone();
        meta.fields = super::fields::extract(def, &self.to_value());
        Self {
            bytes: self.bytes.clone(),
            meta,
        }
    }

    /// A copy of this object with another resourceVersion (re-serialized).
    pub(crate) fn with_resource_version(&self, rv: u64) -> Result<Self, Status> {
        let mut value = self.to_value();
        set_meta(&mut value, "resourceVersion", Value::String(rv.to_string()));
        Self::build(&value, rv, self.meta.fields.clone())
    }
}

impl fmt::Debug for StoredObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoredObject")
            .field("key", &self.meta.key)
            .field("resource_version", &self.meta.resource_version)
            .field("bytes", &self.bytes.len())
            .finish()
    }
}

/// Sets `metadata.<field>`, creating `metadata` when absent.
pub(crate) fn set_meta(value: &mut Value, field: &str, v: Value) {
    if let Some(obj) = value.as_object_mut() {
        let meta = obj
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Some(m) = meta.as_object_mut() {
            m.insert(field.to_owned(), v);
        }
    }
}

/// Reads `metadata.<field>` as a string.
pub(crate) fn meta_str<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// Wall-clock time for timestamps, driven by tokio's clock so that paused tests are
/// deterministic: `start + (tokio now - tokio start)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    wall_start: SystemTime,
    start: tokio::time::Instant,
}

impl Clock {
    pub(crate) fn new(wall_start: Option<SystemTime>) -> Self {
        Self {
            wall_start: wall_start.unwrap_or_else(SystemTime::now),
            start: tokio::time::Instant::now(),
        }
    }

    /// Now, in whole seconds since the epoch.
    pub(crate) fn now_unix(&self) -> u64 {
        (self.wall_start + self.start.elapsed())
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO)
            .as_secs()
    }

    /// Now.
    pub(crate) fn now(&self) -> SystemTime {
        self.wall_start + self.start.elapsed()
    }

    /// Now, as RFC 3339 with second precision (`2026-01-02T03:04:05Z`).
    pub(crate) fn now_rfc3339(&self) -> String {
        let now = self.wall_start + self.start.elapsed();
        rfc3339(now)
    }
}

/// Formats a time as RFC 3339 in UTC with second precision.
pub(crate) fn rfc3339(t: SystemTime) -> String {
    format!("{}Z", rfc3339_seconds(t))
}

/// Formats a time as RFC 3339 in UTC with nine fractional digits (Go's
/// `RFC3339NanoFixed`, as the kubelet times log lines).
pub(crate) fn rfc3339_nanos(t: SystemTime) -> String {
    let nanos = t
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .subsec_nanos();
    format!("{}.{nanos:09}Z", rfc3339_seconds(t))
}

/// `YYYY-MM-DDTHH:MM:SS` of a time in UTC.
fn rfc3339_seconds(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Parses an RFC 3339 time (`Z` or a numeric offset, optional fraction) into seconds and
/// nanoseconds since the epoch.
pub(crate) fn parse_time(text: &str) -> Option<(i64, i32)> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { text.get(r)?.parse().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if b[13] != b':' || b[16] != b':' || !(1..=12).contains(&mo) || !(1..=31).contains(&d) {
        return None;
    }
    let mut rest = &text[19..];
    let mut nanos: i64 = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let padded = format!("{:0<9}", &frac[..digits.min(9)]);
        nanos = padded.parse().ok()?;
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            if rest.len() != 6 || rest.as_bytes()[3] != b':' {
                return None;
            }
            sign * (oh * 3600 + om * 60)
        }
    };
    let days = days_from_civil(y, mo, d);
    let seconds = days * 86_400 + h * 3600 + mi * 60 + s - offset;
    Some((seconds, i32::try_from(nanos).ok()?))
}

/// Days from 1970-01-01 to a date (year, month 1-12, day) of the proleptic Gregorian
/// calendar (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

/// The strings of a JSON array (anything else in it skipped; no array: none).
pub(crate) fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A label selector as selector text (`app=web,tier in (a,b)`): a `LabelSelector`
/// (`matchLabels`, `matchExpressions`) or a plain map (a replication controller's). Empty
/// for an empty or invalid selector.
pub(crate) fn label_selector_text(sel: &Value) -> String {
    label_selector_string(Some(sel)).unwrap_or_default()
}

/// A label selector as `metav1.LabelSelectorAsSelector(...).String()` writes it: its labels
/// and expressions as requirements sorted by key (`a=b`, `k in (x,y)` with the values sorted,
/// `k notin (...)`, `k`, `!k`); empty for no selector or an empty one; `None` for an unknown
/// operator or values the operator does not take. A plain map (a replication controller's
/// selector) is its labels.
pub(crate) fn label_selector_string(selector: Option<&Value>) -> Option<String> {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return Some(String::new());
    };
    let labels = selector.get("matchLabels").or_else(|| {
        selector
            .as_object()
            .filter(|m| !m.contains_key("matchExpressions"))
            .map(|_| selector)
    });
    let mut requirements: Vec<(&str, String)> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), format!("{k}={}", v.as_str().unwrap_or(""))))
        .collect();
    let expressions = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    for expression in expressions {
        let key = expression
            .get("key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut values: Vec<&str> = expression
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        values.sort_unstable();
        let listed = format!("({})", values.join(","));
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        requirements.push((
            key,
            match (operator, values.is_empty()) {
                ("In", false) => format!("{key} in {listed}"),
                ("NotIn", false) => format!("{key} notin {listed}"),
                ("Exists", true) => key.to_owned(),
                ("DoesNotExist", true) => format!("!{key}"),
                _ => return None,
            },
        ));
    }
    requirements.sort_by_key(|(key, _)| *key);
    let texts: Vec<String> = requirements.into_iter().map(|(_, text)| text).collect();
    Some(texts.join(","))
}

/// `bits` laid out as a version-4 UUID (8-4-4-4-12 hexadecimal digits, the version nibble
/// and the variant set), as upstream's uids are written.
pub(crate) fn uuid_v4(bits: u128) -> String {
    let hex: String = bits
        .to_be_bytes()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    format!(
        "{}-{}-4{}-a{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_timestamps() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_767_323_045);
        assert_eq!(rfc3339(t), "2026-01-02T03:04:05Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn extracts_metadata() {
        let v = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n",
            "uid":"u","resourceVersion":"5","labels":{"x":"y"},"finalizers":["f"]}});
        let pods = ResourceDef::namespaced("", "v1", "pods", "Pod");
        let o = StoredObject::from_value(&v, 5, &pods).unwrap();
        assert_eq!(o.key(), "n/a");
        assert_eq!(o.labels().get("x").map(String::as_str), Some("y"));
        assert!(o.has_finalizers() && !o.is_deleting());
        assert_eq!(o.field("metadata.namespace"), Some("n"));
        let o2 = o.with_resource_version(9).unwrap();
        assert_eq!(o2.resource_version(), 9);
        assert_eq!(o2.to_value()["metadata"]["resourceVersion"], "9");
    }
}

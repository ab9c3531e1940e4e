//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) for the built-in kinds:
//! request bodies in, objects, lists and watch streams out.
//!
//! The wire form is upstream's: a body is the four bytes `k8s\0` followed by a
//! `runtime.Unknown` message (`typeMeta` with apiVersion and kind, `raw` with the object's own
//! message, empty `contentEncoding` and `contentType`). A watch stream
//! (`application/vnd.kubernetes.protobuf;stream=watch`) is a sequence of frames, each a 4-byte
//! big-endian length and a `meta/v1.WatchEvent` message (no prefix) whose `object.raw` holds
//! the object in the same `k8s\0` + `Unknown` form.
//!
//! The conversion between messages and the JSON objects the engine stores is driven by a
//! schema generated from k8s-pb and k8s-openapi (`schema.rs`); the types whose JSON is not
//! their fields (Time, MicroTime, Duration, Quantity, IntOrString, RawExtension, FieldsV1,
//! apiextensions JSON and its schema unions, named slices such as `ExtraValue`) are mapped
//! explicitly (`codec.rs`). Kinds without a message (custom resources, and the few 1.37 kinds
//! newer than k8s-pb) are served as JSON only.

mod codec;
mod schema;
mod wire;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use informer_core::{INITIAL_EVENTS_END_ANNOTATION, Status};
use serde_json::{Value, json};

use crate::{ListResponse, ResourceDef, WatchFrame, status};
use schema::Schema;

/// The protobuf media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// The prefix of every protobuf body.
pub(crate) const MAGIC: &[u8] = b"k8s\0";

/// `(apiVersion, kind)` → message, for every built-in kind and list kind, plus the meta kinds
/// clients send or receive (`Status`, `DeleteOptions`, autoscaling/v1 `Scale`).
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
        ] {
            if let Some(index) = schema.find(&name) {
                map.insert((api_version.to_owned(), kind.to_owned()), index);
            }
        }
        map
    })
}

fn message_for(api_version: &str, kind: &str) -> Option<usize> {
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

/// Whether objects of `def` can be served in protobuf.
pub(crate) fn supports(def: &ResourceDef) -> bool {
    message_for(&def.api_version(), &def.kind).is_some()
        && message_for(&def.api_version(), &def.list_kind).is_some()
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
    let mut object = codec::decode(Schema::get(), index, raw).map_err(bad)?;
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
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
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

/// Encodes a JSON object (with `apiVersion` and `kind`) as a protobuf body; `None` when the
/// kind has no message.
pub(crate) fn encode_object(object: &Value) -> Option<Bytes> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let index = message_for(api_version, kind)?;
    let raw = codec::encode(Schema::get(), index, object);
    Some(Bytes::from(envelope(api_version, kind, &raw)))
}

/// Encodes a list response (`PodList`...) as a protobuf body; `None` when the kind has no
/// message.
pub(crate) fn encode_list(list: &ListResponse) -> Option<Bytes> {
    let def = &list.resource;
    let api_version = def.api_version();
    let index = message_for(&api_version, &def.list_kind)?;
    let item_index = message_for(&api_version, &def.kind)?;
    let schema = Schema::get();
    let mut meta = json!({ "resourceVersion": list.resource_version.to_string() });
    if let Some(c) = &list.continue_token {
        meta["continue"] = Value::String(c.clone());
    }
    if let Some(n) = list.remaining_item_count {
        meta["remainingItemCount"] = Value::from(n);
    }
    // The list's own fields (metadata), then every item encoded on its own: the items are
    // field 2 of every `...List` message.
    let mut raw = codec::encode(schema, index, &json!({ "metadata": meta }));
    for item in &list.items {
        let encoded = codec::encode(schema, item_index, &item.to_value());
        wire::put_bytes(2, &encoded, &mut raw);
    }
    Some(Bytes::from(envelope(&api_version, &def.list_kind, &raw)))
}

/// One frame of a protobuf watch stream (length prefix included); `None` for a broken
/// connection (the stream must be aborted) or a kind without a message.
pub(crate) fn watch_frame(def: &Arc<ResourceDef>, frame: &WatchFrame) -> Option<Bytes> {
    let (ty, object): (&str, Vec<u8>) = match frame {
        WatchFrame::Added(o) | WatchFrame::Modified(o) | WatchFrame::Deleted(o) => (
            frame.type_name().unwrap_or("ADDED"),
            encode_object(&o.to_value())?.to_vec(),
        ),
        WatchFrame::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            let mut meta = json!({ "resourceVersion": resource_version.to_string() });
            if *initial_events_end {
                meta["annotations"] = json!({ INITIAL_EVENTS_END_ANNOTATION: "true" });
            }
            let object = json!({
                "apiVersion": def.api_version(),
                "kind": def.kind,
                "metadata": meta,
            });
            ("BOOKMARK", encode_object(&object)?.to_vec())
        }
        WatchFrame::Error(s) => {
            let value: Value = serde_json::from_slice(&status::to_json(s)).ok()?;
            ("ERROR", encode_object(&value)?.to_vec())
        }
        WatchFrame::Raw(b) => return Some(frame_bytes(b)),
        WatchFrame::Broken => return None,
    };
    let mut raw_extension = Vec::new();
    wire::put_bytes(1, &object, &mut raw_extension);
    let mut event = Vec::new();
    wire::put_bytes(1, ty.as_bytes(), &mut event);
    wire::put_bytes(2, &raw_extension, &mut event);
    Some(frame_bytes(&event))
}

fn frame_bytes(message: &[u8]) -> Bytes {
    let len = u32::try_from(message.len()).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(message.len() + 4);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(message);
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_round_trip_through_protobuf() {
        let pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web", "namespace": "a", "labels": {"app": "web"},
                "creationTimestamp": "2026-01-02T03:04:05Z", "resourceVersion": "7",
                "managedFields": [{"manager": "m", "operation": "Apply", "time": "2026-01-02T03:04:05Z",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}]},
            "spec": {"nodeName": "n1", "hostNetwork": false,
                "containers": [{"name": "app", "image": "app:1",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}],
                    "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                    "livenessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10}}],
                "volumes": [{"name": "data", "emptyDir": {}}],
                "terminationGracePeriodSeconds": 0},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}],
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": null}]},
        });
        let body = encode_object(&pod).unwrap();
        assert!(body.starts_with(MAGIC));
        let back = decode_envelope(&body).unwrap();
        let mut expected = pod.clone();
        // A null time is not written; the rest comes back as it was.
        expected["status"]["conditions"][0]
            .as_object_mut()
            .unwrap()
            .remove("lastTransitionTime");
        assert_eq!(back, expected);
    }

    #[test]
    fn special_types() {
        let crd_props = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "default": {"a": 1},
                        "additionalProperties": false,
                        "properties": {"size": {"type": "integer", "x-kubernetes-int-or-string": true}},
                        "required": ["size"]}}}]},
        });
        let back = decode_envelope(&encode_object(&crd_props).unwrap()).unwrap();
        assert_eq!(back, crd_props);
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": []}}, "backoffLimit": 0,
                "podFailurePolicy": null},
            "status": {"startTime": "2026-01-02T03:04:05Z"}});
        let back = decode_envelope(&encode_object(&job).unwrap()).unwrap();
        assert_eq!(back["spec"]["backoffLimit"], 0, "a zero pointer survives");
        assert_eq!(back["status"]["startTime"], "2026-01-02T03:04:05Z");
        let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"selector": {}, "template": {}, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}});
        let back = decode_envelope(&encode_object(&deploy).unwrap()).unwrap();
        assert_eq!(
            back["spec"]["strategy"]["rollingUpdate"],
            json!({"maxSurge": "25%", "maxUnavailable": 1})
        );
        let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "eventTime": "2026-01-02T03:04:05.123456Z", "reason": "r"});
        let back = decode_envelope(&encode_object(&event).unwrap()).unwrap();
        assert_eq!(back["eventTime"], "2026-01-02T03:04:05.123456Z");
        let csr = json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": "c"}, "spec": {"request": "aGVsbG8=", "signerName": "s",
                "extra": {"groups": ["a", "b"]}, "expirationSeconds": 600}});
        let back = decode_envelope(&encode_object(&csr).unwrap()).unwrap();
        assert_eq!(back, csr, "bytes as base64, named slices as arrays");
    }

    #[test]
    fn bad_bodies_are_refused() {
        assert_eq!(decode_envelope(b"{}").unwrap_err().code, 400);
        assert_eq!(decode_envelope(b"k8s\0\x0a\x03").unwrap_err().code, 400);
        let widget = envelope("example.com/v1", "Widget", b"");
        assert_eq!(decode_envelope(&widget).unwrap_err().code, 415);
        let mut options = Vec::new();
        wire::put_varint(1, 30, &mut options); // gracePeriodSeconds
        let delete = decode_envelope(&envelope("apps/v1", "DeleteOptions", &options)).unwrap();
        assert_eq!(delete["gracePeriodSeconds"], 30);
    }
}

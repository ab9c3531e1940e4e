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
pub(crate) mod openapi_v2;
mod schema;
mod wire;

use std::sync::Arc;

use bytes::Bytes;
use informer_core::INITIAL_EVENTS_END_ANNOTATION;
use serde_json::{Value, json};

use crate::{ListResponse, ResourceDef, WatchFrame, status};
use codec::{envelope, message_for};
use schema::Schema;

pub(crate) use codec::decode_envelope;

/// The protobuf media type.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The media type of a protobuf watch stream.
pub(crate) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Whether objects of `def` can be served in protobuf.
pub(crate) fn supports(def: &ResourceDef) -> bool {
    message_for(&def.api_version(), &def.kind).is_some()
        && message_for(&def.api_version(), &def.list_kind).is_some()
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
        assert!(body.starts_with(codec::MAGIC));
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

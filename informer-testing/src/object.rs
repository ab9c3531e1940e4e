//! `JsonObject`: a schemaless Kubernetes object (typed metadata, everything else as JSON).

use std::collections::BTreeMap;

use informer_core::{Object, OwnerRef, non_empty};
use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// A Kubernetes object of any kind: typed `metadata`, every other field kept as JSON.
///
/// It serializes to and from the API server's JSON unchanged (unknown metadata fields are kept
/// in [`JsonMeta::other`]). The fake API server stores objects in this form, the conformance
/// suites use it, and tests can use it as the informer's object type without pulling in
/// k8s-openapi. Decoding is a single pass (no `serde(flatten)` buffering).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct JsonObject {
    /// `metadata`.
    pub metadata: JsonMeta,
    /// Every other top-level field (`apiVersion`, `kind`, `spec`, `status`, `data`, ...).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

/// The metadata fields informers read, plus the rest as JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsonMeta {
    /// `metadata.name`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `metadata.namespace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.uid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `metadata.resourceVersion`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// `metadata.labels`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other metadata field (`generateName`, `creationTimestamp`, `managedFields`, ...).
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

impl<'de> Deserialize<'de> for JsonObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = JsonObject;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonObject, A::Error> {
                let mut obj = JsonObject::default();
                while let Some(key) = map.next_key::<String>()? {
                    if key == "metadata" {
                        obj.metadata = map.next_value::<Option<JsonMeta>>()?.unwrap_or_default();
                    } else {
                        let value = map.next_value::<Value>()?;
                        obj.fields.insert(key, value);
                    }
                }
                Ok(obj)
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

impl<'de> Deserialize<'de> for JsonMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetaVisitor;
        impl<'de> Visitor<'de> for MetaVisitor {
            type Value = JsonMeta;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("object metadata")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsonMeta, A::Error> {
                let mut meta = JsonMeta::default();
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "name" => meta.name = map.next_value()?,
                        "namespace" => meta.namespace = map.next_value()?,
                        "uid" => meta.uid = map.next_value()?,
                        "resourceVersion" => meta.resource_version = map.next_value()?,
                        "labels" => {
                            meta.labels = map
                                .next_value::<Option<BTreeMap<String, String>>>()?
                                .unwrap_or_default();
                        }
                        "annotations" => {
                            meta.annotations = map
                                .next_value::<Option<BTreeMap<String, String>>>()?
                                .unwrap_or_default();
                        }
                        _ => {
                            let value = map.next_value::<Value>()?;
                            meta.other.insert(key, value);
                        }
                    }
                }
                Ok(meta)
            }
        }
        deserializer.deserialize_map(MetaVisitor)
    }
}

impl JsonObject {
    /// An object with the given namespace (`None`: cluster-scoped) and name, and nothing else.
    pub fn new(namespace: Option<&str>, name: &str) -> Self {
        Self {
            metadata: JsonMeta {
                name: Some(name.to_owned()),
                namespace: namespace.map(str::to_owned),
                ..JsonMeta::default()
            },
            fields: Map::new(),
        }
    }

    /// Sets `metadata.resourceVersion`.
    pub fn with_resource_version(mut self, rv: impl Into<String>) -> Self {
        self.metadata.resource_version = Some(rv.into());
        self
    }

    /// Sets `metadata.uid`.
    pub fn with_uid(mut self, uid: impl Into<String>) -> Self {
        self.metadata.uid = Some(uid.into());
        self
    }

    /// Adds a label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.labels.insert(key.into(), value.into());
        self
    }

    /// Appends an entry to `metadata.ownerReferences`.
    pub fn with_owner(mut self, owner: OwnerRef<'_>) -> Self {
        let mut entry = serde_json::json!({
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
            "uid": owner.uid,
        });
        if owner.controller {
            entry["controller"] = Value::Bool(true);
        }
        match self.metadata.other.get_mut("ownerReferences") {
            Some(Value::Array(owners)) => owners.push(entry),
            _ => {
                self.metadata
                    .other
                    .insert("ownerReferences".to_owned(), Value::Array(vec![entry]));
            }
        }
        self
    }

    /// Sets a top-level field (for example `data` or `spec`).
    pub fn with_field(mut self, name: impl Into<String>, value: Value) -> Self {
        self.fields.insert(name.into(), value);
        self
    }
}

impl Object for JsonObject {
    fn object_name(&self) -> Option<&str> {
        non_empty(self.metadata.name.as_deref())
    }
    fn object_namespace(&self) -> Option<&str> {
        non_empty(self.metadata.namespace.as_deref())
    }
    fn object_uid(&self) -> Option<&str> {
        non_empty(self.metadata.uid.as_deref())
    }
    fn object_resource_version(&self) -> Option<&str> {
        non_empty(self.metadata.resource_version.as_deref())
    }
    fn object_labels(&self) -> &BTreeMap<String, String> {
        &self.metadata.labels
    }
    fn object_annotations(&self) -> &BTreeMap<String, String> {
        &self.metadata.annotations
    }
    /// `metadata.ownerReferences` as the JSON holds them; an entry that is not an object is
    /// skipped, a missing string field reads as empty.
    fn object_owners(&self) -> Vec<OwnerRef<'_>> {
        let Some(Value::Array(owners)) = self.metadata.other.get("ownerReferences") else {
            return Vec::new();
        };
        owners
            .iter()
            .filter_map(Value::as_object)
            .map(|owner| {
                let text = |field: &str| owner.get(field).and_then(Value::as_str).unwrap_or("");
                OwnerRef::new(text("apiVersion"), text("kind"), text("name"), text("uid"))
                    .with_controller(owner.get("controller") == Some(&Value::Bool(true)))
            })
            .collect()
    }
    /// `metadata.generation` when the JSON holds an integer there.
    fn object_generation(&self) -> Option<i64> {
        self.metadata
            .other
            .get("generation")
            .and_then(Value::as_i64)
    }
}

/// Implements `informer_core::Object` for a newtype around [`JsonObject`] (`struct W(JsonObject)`),
/// every method answered by the wrapped object: for a test whose wrapper changes only how the
/// object decodes, encodes or is dropped (counting decodes, recording the decoding thread).
///
/// ```
/// use informer_core::Object;
/// use informer_testing::{JsonObject, delegate_object};
///
/// struct Wrapped(JsonObject);
/// delegate_object!(Wrapped);
///
/// let wrapped = Wrapped(JsonObject::new(Some("ns"), "a").with_label("app", "web"));
/// assert_eq!(wrapped.object_name(), Some("a"));
/// assert_eq!(wrapped.object_labels()["app"], "web");
/// ```
#[macro_export]
macro_rules! delegate_object {
    ($wrapper:ty) => {
        impl $crate::__core::Object for $wrapper {
            fn object_name(&self) -> ::std::option::Option<&str> {
                $crate::__core::Object::object_name(&self.0)
            }
            fn object_namespace(&self) -> ::std::option::Option<&str> {
                $crate::__core::Object::object_namespace(&self.0)
            }
            fn object_uid(&self) -> ::std::option::Option<&str> {
                $crate::__core::Object::object_uid(&self.0)
            }
            fn object_resource_version(&self) -> ::std::option::Option<&str> {
                $crate::__core::Object::object_resource_version(&self.0)
            }
            fn object_labels(
                &self,
            ) -> &::std::collections::BTreeMap<::std::string::String, ::std::string::String> {
                $crate::__core::Object::object_labels(&self.0)
            }
            fn object_annotations(
                &self,
            ) -> &::std::collections::BTreeMap<::std::string::String, ::std::string::String> {
                $crate::__core::Object::object_annotations(&self.0)
            }
            fn object_owners(&self) -> ::std::vec::Vec<$crate::__core::OwnerRef<'_>> {
                $crate::__core::Object::object_owners(&self.0)
            }
            fn object_generation(&self) -> ::std::option::Option<i64> {
                $crate::__core::Object::object_generation(&self.0)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_api_json_unchanged() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","resourceVersion":"7","labels":{"x":"y"},"creationTimestamp":"2026-01-01T00:00:00Z"},"data":{"k":"v"}}"#;
        let obj: JsonObject = serde_json::from_str(text).unwrap();
        assert_eq!(obj.object_name(), Some("a"));
        assert_eq!(obj.object_resource_version(), Some("7"));
        assert_eq!(obj.object_labels().get("x").map(String::as_str), Some("y"));
        let back: Value = serde_json::to_value(&obj).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(text).unwrap());
    }

    #[test]
    fn owner_references_read_from_the_json_and_written_by_with_owner() {
        let text = r#"{"metadata":{"name":"web-0","ownerReferences":[
            {"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-5d4f","uid":"u1","controller":true},
            {"apiVersion":"v1","kind":"Node","name":"n1"},
            "not an object"]}}"#;
        let obj: JsonObject = serde_json::from_str(text).unwrap();
        let owners = obj.object_owners();
        assert_eq!(
            owners,
            [
                OwnerRef::new("apps/v1", "ReplicaSet", "web-5d4f", "u1").with_controller(true),
                OwnerRef::new("v1", "Node", "n1", ""),
            ]
        );
        assert_eq!(obj.object_controller().map(|o| o.uid), Some("u1"));
        let built = JsonObject::new(Some("ns"), "web-0")
            .with_owner(
                OwnerRef::new("apps/v1", "ReplicaSet", "web-5d4f", "u1").with_controller(true),
            )
            .with_owner(OwnerRef::new("v1", "Node", "n1", ""));
        assert_eq!(built.object_owners(), owners);
        assert!(JsonObject::new(None, "x").object_owners().is_empty());
    }

    #[test]
    fn null_and_missing_metadata_decode_as_empty() {
        let obj: JsonObject = serde_json::from_str(r#"{"kind":"X","metadata":null}"#).unwrap();
        assert_eq!(obj.object_name(), None);
        let obj: JsonObject =
            serde_json::from_str(r#"{"metadata":{"name":"a","labels":null}}"#).unwrap();
        assert_eq!(obj.object_name(), Some("a"));
        assert!(obj.object_labels().is_empty());
        assert!(serde_json::from_str::<JsonObject>(r#"{"metadata":{"name":5}}"#).is_err());
        assert!(serde_json::from_str::<JsonObject>("[1]").is_err());
    }
}

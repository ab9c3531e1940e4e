//! A custom resource served in several versions at once (a CRD's `spec.versions` with more
//! than one `served: true`), with the `None` conversion strategy.
//!
//! Upstream (`apiextensions-apiserver`'s `customresource_handler.go`) keeps each object once,
//! in etcd, in the storage version, and serves every version through a storage of its own
//! over the same keys: a write through version *v* is pruned, defaulted and validated with
//! *v*'s schema, converted to the storage version and pruned with the storage version's
//! schema on the way into etcd; a read decodes the stored object, prunes and defaults it with
//! the storage version's schema, converts it to the version asked for and prunes it with that
//! version's schema. The `None` converter changes `apiVersion` only, so a field that the
//! storage version's schema does not know is lost on the way in, and a default of the storage
//! version shows in every version.
//!
//! The engine keeps one state per served version (a *view*) and mirrors every change to the
//! others at the same resourceVersion, as it does for Events ([`crate::twins`]); this module
//! computes the forms: [`stored`] (what etcd would hold) and [`viewed`] (what a version's
//! storage answers).

#[cfg(feature = "http")]
use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::Value;

use crate::{ResourceDef, schema};

/// The version a custom resource is stored in, and its schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StorageVersion {
    /// `group/version` of the stored objects.
    pub api_version: String,
    /// Its structural schema (`None`: stored as sent).
    pub schema: Option<Arc<Value>>,
}

/// `object` as etcd would hold it: in the storage version, pruned with its schema, and with
/// its defaults (upstream applies them when it decodes the stored object, before any read;
/// applying them here answers every read the same).
pub(crate) fn stored(storage: &StorageVersion, object: &Value) -> Value {
    let mut out = object.clone();
    set_api_version(&mut out, &storage.api_version);
    if let Some(schema) = &storage.schema {
        schema::prune(schema, &mut out);
        schema::apply_defaults(schema, &mut out);
    }
    out
}

/// A stored object as version `to` serves it: `apiVersion` changed (the `None` conversion),
/// then pruned with `to`'s schema. No defaults of `to` are applied: upstream defaults a read
/// with the storage version's schema only.
pub(crate) fn viewed(to: &ResourceDef, stored: &Value) -> Value {
    let mut out = stored.clone();
    set_api_version(&mut out, &to.api_version());
    if let Some(schema) = &to.schema {
        schema::prune(schema, &mut out);
    }
    out
}

fn set_api_version(object: &mut Value, api_version: &str) {
    if let Some(fields) = object.as_object_mut() {
        fields.insert("apiVersion".into(), Value::String(api_version.to_owned()));
    }
}

/// A CRD's `status.storedVersions` gains its storage version if new, as upstream's CRD
/// strategy records it on every create and update (the list only grows: a storage
/// version migration trims it, through `/status`).
pub(crate) fn record_stored_version(crd: &mut Value) {
    let storage = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
        .cloned();
    let (Some(storage), Some(fields)) = (storage, crd.as_object_mut()) else {
        return;
    };
    let status = fields
        .entry("status")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let stored = status
        .entry("storedVersions")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(list) = stored.as_array_mut()
        && !list.contains(&storage)
    {
        list.push(storage);
    }
}

/// A version name's parts as Kubernetes ranks them: `v2` (GA), `v1beta1`, `v1alpha2`.
#[cfg(feature = "http")]
fn kube_version(name: &str) -> Option<(u64, u8, u64)> {
    let rest = name.strip_prefix('v')?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let major: u64 = rest[..digits].parse().ok()?;
    let tail = &rest[digits..];
    if tail.is_empty() {
        return Some((major, 2, 0));
    }
    let (stage, minor) = if let Some(m) = tail.strip_prefix("beta") {
        (1, m)
    } else if let Some(m) = tail.strip_prefix("alpha") {
        (0, m)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, stage, minor.parse().ok()?))
}

/// Upstream's `CompareKubeAwareVersionStrings` as a sort order, highest priority first:
/// GA versions by major version, then betas, then alphas (each by major, then minor
/// version, descending), then names that are not Kubernetes versions, alphabetically.
#[cfg(feature = "http")]
pub(crate) fn by_priority(a: &str, b: &str) -> Ordering {
    match (kube_version(a), kube_version(b)) {
        (Some((ma, sa, na)), Some((mb, sb, nb))) => sb.cmp(&sa).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[cfg(feature = "http")]
    #[test]
    fn versions_sort_as_upstream_ranks_them() {
        // The order of the CRD versioning docs' example, plus names upstream's regular
        // expression (`^v(\d+)(?:(alpha|beta)(\d+))?$`) does not take, and leading zeros,
        // which it takes (`v01` ranks as `v1`; a stable sort keeps them as given).
        let mut names = vec![
            "foo1",
            "v1alpha1",
            "v11alpha2",
            "v1",
            "v3beta1",
            "v10beta3",
            "v12alpha1",
            "v10",
            "v11beta2",
            "v2",
            "foo10",
            "v1beta1",
            "v01",
            "v1beta",
            "v2gamma1",
        ];
        names.sort_by(|a, b| by_priority(a, b));
        assert_eq!(
            names,
            [
                "v10",
                "v2",
                "v1",
                "v01",
                "v11beta2",
                "v10beta3",
                "v3beta1",
                "v1beta1",
                "v12alpha1",
                "v11alpha2",
                "v1alpha1",
                "foo1",
                "foo10",
                "v1beta",
                "v2gamma1"
            ]
        );
    }

    #[test]
    fn a_write_in_one_version_is_stored_and_read_in_another() {
        let v1 = ResourceDef::namespaced("example.com", "v1", "widgets", "Widget").with_schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string", "default": "blue"},
            }}}}),
        );
        let v2 = ResourceDef::namespaced("example.com", "v2", "widgets", "Widget").with_schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "shape": {"type": "string"},
            }}}}),
        );
        let storage = StorageVersion {
            api_version: v1.api_version(),
            schema: v1.schema.clone(),
        };
        let written = json!({"apiVersion": "example.com/v2", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": {"size": 3, "shape": "round"}});
        let at_rest = stored(&storage, &written);
        // `shape` is unknown to the storage version: lost; `color` is its default.
        assert_eq!(
            at_rest,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3, "color": "blue"}})
        );
        assert_eq!(
            viewed(&v2, &at_rest),
            json!({"apiVersion": "example.com/v2", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 3}})
        );
        assert_eq!(viewed(&v1, &at_rest), at_rest);
    }
}

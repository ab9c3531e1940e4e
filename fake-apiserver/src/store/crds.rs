//! The CRD finalizer: a deleted `CustomResourceDefinition` takes its custom resources with it,
//! as `apiextensions-apiserver` deletes them (read in `pkg/registry/customresourcedefinition/
//! etcd.go`'s `Delete`, `pkg/controller/finalizer/crd_finalizer.go`, and the CRD handler's
//! refusal of creates while terminating).
//!
//! The first delete of a CRD marks it (`deletionTimestamp`, the finalizer
//! `customresourcecleanup.apiextensions.k8s.io`, a `Terminating` condition, reason
//! `InstanceDeletionPending`); creates of its resource are refused from then on (405). The
//! finalizer controller, run here within the write as the other collectors are, reports
//! `InstanceDeletionInProgress`, deletes every instance, and once none is left (instances
//! with finalizers of their own wait for them) reports `InstanceDeletionCompleted` and
//! removes its finalizer in one status write, which deletes the CRD; its versions stop
//! being served (their watches end).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Chore, Part, Store};
use crate::ResourceDef;
use crate::object::StoredObject;
use crate::propagation::PropagationPolicy;

/// The finalizer a CRD's deletion waits behind while its instances are deleted.
pub(super) const CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// `group` and `plural` of the resource `crd` defines.
fn defined(crd: &Value) -> Option<(String, String)> {
    let text = |ptr: &str| crd.pointer(ptr).and_then(Value::as_str).map(str::to_owned);
    Some((text("/spec/group")?, text("/spec/names/plural")?))
}

/// Upstream's `SetCRDCondition` for the `Terminating` condition: the transition time moves
/// only when the status does.
fn set_terminating(crd: &mut Value, status: &str, reason: &str, message: &str, now: &str) {
    let Some(fields) = crd.as_object_mut() else {
        return;
    };
    let status_field = fields
        .entry("status")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(status_map) = status_field.as_object_mut() else {
        return;
    };
    let conditions = status_map
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let fresh = json!({"type": "Terminating", "status": status, "reason": reason,
                       "message": message, "lastTransitionTime": now});
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Terminating"))
    {
        Some(existing) => {
            let moved = existing.get("status").and_then(Value::as_str) != Some(status);
            let since = existing.get("lastTransitionTime").cloned();
            *existing = fresh;
            if let (false, Some(since)) = (moved, since) {
                existing["lastTransitionTime"] = since;
            }
        }
        None => list.push(fresh),
    }
}

impl Store {
    /// Whether deleting `existing` marks it for the CRD finalizer first (a CRD not being
    /// deleted yet, while the server's controllers run).
    pub(super) fn crd_cleanup_due(&self, def: &ResourceDef, existing: &StoredObject) -> bool {
        self.garbage_collection && def.is_crds() && !existing.is_deleting()
    }

    /// The first delete of a CRD: its finalizer and the pending `Terminating` condition on
    /// `crd` (being marked deleted), and its resource refusing creates from now on.
    pub(super) fn mark_crd_deleted(&mut self, crd: &mut Value) {
        if let Some(list) = crd
            .pointer_mut("/metadata/finalizers")
            .and_then(Value::as_array_mut)
        {
            if !list.iter().any(|f| f == CLEANUP) {
                list.push(Value::String(CLEANUP.into()));
            }
        } else if let Some(meta) = crd.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("finalizers".into(), json!([CLEANUP]));
        }
        set_terminating(
            crd,
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            &self.clock.now_rfc3339(),
        );
        if self.dry_run {
            return;
        }
        let name: Option<Arc<str>> = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .map(Arc::from);
        if let (Some((group, plural)), Some(name)) = (defined(crd), name) {
            for state in &mut self.resources {
                if state.def.group == group && state.def.plural == plural {
                    state.deleting_crd = Some(Arc::clone(&name));
                }
            }
            self.chores.push_back(Chore::CleanCrd(name.to_string()));
        }
    }

    /// The CRD finalizer's work on the CRD `name`, just marked deleted: every instance
    /// deleted, then the CRD itself if none is left.
    pub(super) fn clean_crd(&mut self, name: &str) {
        let Some(crds) = self.resources.iter().position(|r| r.def.is_crds()) else {
            return;
        };
        let Some(crd) = self.resources[crds].objects.get(name).cloned() else {
            return;
        };
        let mut value = crd.to_value();
        set_terminating(
            &mut value,
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &self.clock.now_rfc3339(),
        );
        // A failure (the resourceVersions ran out) leaves the CRD terminating, as a
        // controller that cannot write would.
        let _ = self.update_with(crds, None, name, value, Part::Whole);
        let Some(res) = self
            .resources
            .iter()
            .position(|r| r.served && r.deleting_crd.as_deref() == Some(name))
        else {
            self.finish_crd(name);
            return;
        };
        let instances: Vec<Arc<StoredObject>> =
            self.resources[res].objects.values().cloned().collect();
        for instance in instances {
            if instance.is_deleting() {
                continue;
            }
            self.delete_as_controller(res, &instance, PropagationPolicy::Background);
        }
        self.finish_crd(name);
    }

    /// After an object left the store: every CRD being deleted whose instances are all gone
    /// is finished.
    pub(super) fn finish_crds(&mut self) {
        let waiting: std::collections::BTreeSet<Arc<str>> = self
            .resources
            .iter()
            .filter_map(|r| r.deleting_crd.clone())
            .collect();
        for name in waiting {
            self.finish_crd(&name);
        }
    }

    /// The CRD `name`, being deleted: if none of its instances is left, the completed
    /// condition and its finalizer removed in one write (which deletes it unless other
    /// finalizers hold it); once it is gone, its versions are no longer served.
    fn finish_crd(&mut self, name: &str) {
        let views: Vec<usize> = (0..self.resources.len())
            .filter(|&i| self.resources[i].deleting_crd.as_deref() == Some(name))
            .collect();
        let Some(crds) = self.resources.iter().position(|r| r.def.is_crds()) else {
            return;
        };
        if let Some(crd) = self.resources[crds].objects.get(name).cloned() {
            if views.iter().any(|&i| !self.resources[i].objects.is_empty()) {
                return;
            }
            let mut value = crd.to_value();
            let held = value
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|f| f == CLEANUP));
            if !held {
                return;
            }
            set_terminating(
                &mut value,
                "False",
                "InstanceDeletionCompleted",
                "removed all instances",
                &self.clock.now_rfc3339(),
            );
            if let Some(list) = value
                .pointer_mut("/metadata/finalizers")
                .and_then(Value::as_array_mut)
            {
                list.retain(|f| f != CLEANUP);
            }
            // Upstream removes it through a status write, which the CRD's status strategy
            // lets change finalizers; here the server's own write. A failure leaves the CRD
            // terminating.
            if self
                .update_with(crds, None, name, value, Part::Whole)
                .is_err()
                || self.resources[crds].objects.contains_key(name)
            {
                return;
            }
        }
        for i in views {
            self.resources[i].deleting_crd = None;
            if self.resources[i].served {
                self.unserve(i);
            }
        }
    }

    /// Whether the resource `res` refuses creates: its CRD is being deleted.
    pub(super) fn crd_terminating(&self, res: usize) -> bool {
        self.resources[res].deleting_crd.is_some()
    }
}

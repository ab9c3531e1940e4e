//! The namespace lifecycle: the namespace strategy's defaults, and what the namespace
//! controller does when a namespace is deleted.
//!
//! Upstream (`pkg/registry/core/namespace`, `pkg/controller/namespace`, read there): a created
//! namespace gets the finalizer `kubernetes` in `spec.finalizers` (which updates keep as
//! stored; only `/finalize` changes them, with the status kept and each name a standard
//! finalizer or qualified), the label `kubernetes.io/metadata.name` with its name (kept on
//! every update) and `status.phase: Active`. Deleting a namespace with `spec.finalizers`
//! sets `deletionTimestamp` and `status.phase: Terminating` and keeps it; the
//! NamespaceLifecycle admission refuses new content in it (403); the namespace controller,
//! while `kubernetes` is among them, deletes everything in it and removes `kubernetes` once
//! nothing is left; the namespace store deletes a terminating namespace during the update
//! that leaves it without finalizers of either kind (or it waits for its
//! `metadata.finalizers` and the other `spec.finalizers`, which their owners release
//! through `/finalize`).
//!
//! The fake server runs the controller's part inside the delete, as it runs the garbage
//! collector ([`super::gc`]): the namespace's content is deleted (each object once, in the
//! `Background` policy, so dependents elsewhere cascade), and the namespace is removed as
//! soon as the last object in it is: at once, or when a test or controller releases the
//! last finalizer that held something. The namespace's status conditions are not kept.

use std::ops::Bound;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::{Part, Store};
use crate::ResourceDef;
use crate::object::StoredObject;
use crate::propagation::PropagationPolicy;

/// The finalizer the namespace controller owns, in `spec.finalizers`.
const KUBERNETES: &str = "kubernetes";

/// The label every namespace carries with its own name.
const NAME_LABEL: &str = "kubernetes.io/metadata.name";

fn is_namespaces(def: &ResourceDef) -> bool {
    def.is_namespaces()
}

/// The strategy's defaults on a namespace about to be created or updated (`body` carries its
/// name): the name label always; on create the `kubernetes` finalizer, and `status.phase:
/// Active` when the request layer reset the status.
fn prepare(body: &mut Value, creating: bool, reset_status: bool) {
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(object) = body.as_object_mut() else {
        return;
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), Value::String(name));
        }
    }
    if !creating {
        return;
    }
    let spec = object
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(spec) = spec.as_object_mut() {
        let finalizers = spec
            .entry("finalizers")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == KUBERNETES)
        {
            list.push(Value::String(KUBERNETES.into()));
        }
    }
    if reset_status {
        object.insert("status".into(), json!({"phase": "Active"}));
    }
}

/// Whether a finalizer in `spec.finalizers` still holds this namespace (upstream's namespace
/// store keeps a deleted one while any is there).
fn held(value: &Value) -> bool {
    value
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|l| !l.is_empty())
}

/// Whether the namespace controller has work on this namespace (`spec.finalizers` has
/// `kubernetes`; without it the controller leaves the namespace's content alone).
fn controlled(value: &Value) -> bool {
    value
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|l| l.iter().any(|f| f == KUBERNETES))
}

/// The names `/finalize` refuses in `spec.finalizers` (`validateFinalizerName`): a name
/// without a `/` must be a standard finalizer; a qualified one must be a valid qualified
/// name.
fn finalizer_violations(body: &Value) -> Vec<(String, &'static str, String)> {
    let listed = body
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let mut violations = Vec::new();
    for (i, name) in listed.iter().enumerate() {
        let name = name.as_str().unwrap_or_default();
        let at = format!("spec.finalizers[{i}]");
        if let Some(problem) = super::qualified_name_problem(name) {
            violations.push((
                at.clone(),
                "FieldValueInvalid",
                format!("{name:?}: {problem}"),
            ));
        }
        if !name.contains('/') && !matches!(name, KUBERNETES | "orphan" | "foregroundDeletion") {
            violations.push((
                at,
                "FieldValueInvalid",
                format!(
                    "{name:?}: name is neither a standard finalizer name nor is it fully \
                     qualified"
                ),
            ));
        }
    }
    violations
}

/// The namespace marked for deletion: `status.phase: Terminating`.
fn mark_terminating(value: &mut Value) {
    if let Some(object) = value.as_object_mut() {
        let status = object
            .entry("status")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), Value::String("Terminating".into()));
        }
    }
}

impl Store {
    /// [`prepare`] for namespaces, nothing for other kinds.
    pub(super) fn prepare_namespace(
        &self,
        def: &ResourceDef,
        body: &mut Value,
        creating: bool,
        reset_status: bool,
    ) {
        if is_namespaces(def) {
            prepare(body, creating, reset_status);
        }
    }

    /// The namespace strategy's rule for updates: `spec.finalizers` stays as stored.
    pub(super) fn keep_namespace_finalizers(
        &self,
        def: &ResourceDef,
        old: &Value,
        body: &mut Value,
    ) {
        if !is_namespaces(def) {
            return;
        }
        let stored = old.pointer("/spec/finalizers").cloned();
        let Some(object) = body.as_object_mut() else {
            return;
        };
        let spec = object
            .entry("spec")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(spec) = spec.as_object_mut() {
            match stored {
                Some(f) => spec.insert("finalizers".into(), f),
                None => spec.remove("finalizers"),
            };
        }
    }

    /// Whether `value`, of `def`, is a namespace the namespace controller holds (so that a
    /// delete marks it instead of removing it), with the collectors on.
    pub(super) fn namespace_held(&self, def: &ResourceDef, value: &Value) -> bool {
        self.garbage_collection && is_namespaces(def) && held(value)
    }

    /// [`Store::namespace_held`] for a stored object (parsed only if it is a namespace).
    pub(super) fn stored_namespace_held(&self, def: &ResourceDef, object: &StoredObject) -> bool {
        self.garbage_collection && is_namespaces(def) && held(&object.to_value())
    }

    /// Whether deleting the stored namespace `object` gives the namespace controller work.
    pub(super) fn stored_namespace_controlled(&self, object: &StoredObject) -> bool {
        controlled(&object.to_value())
    }

    /// `PUT namespaces/<name>/finalize`: the namespace's `spec.finalizers` (and metadata)
    /// as `body` has them, its status as stored (upstream's finalize strategy); a
    /// terminating namespace left without finalizers goes in this write.
    pub(crate) fn finalize_namespace(
        &mut self,
        res: usize,
        name: &str,
        mut body: Value,
    ) -> Result<Arc<StoredObject>, informer_core::Status> {
        let def = Arc::clone(&self.resources[res].def);
        if !is_namespaces(&def) {
            return Err(crate::status::resource_not_found());
        }
        let existing = self.get(res, None, name)?;
        let violations = finalizer_violations(&body);
        if !violations.is_empty() {
            return Err(crate::status::invalid(
                &def.kind,
                &def.group,
                name,
                &violations,
            ));
        }
        if let Some(object) = body.as_object_mut() {
            match existing.to_value().get("status") {
                Some(s) => object.insert("status".into(), s.clone()),
                None => object.remove("status"),
            };
        }
        self.update_with(res, None, name, body, Part::Finalize)
    }

    /// [`mark_terminating`] for namespaces, nothing for other kinds.
    pub(super) fn mark_namespace_terminating(&self, def: &ResourceDef, value: &mut Value) {
        if is_namespaces(def) {
            mark_terminating(value);
        }
    }

    fn namespaces_index(&self) -> Option<usize> {
        self.resources.iter().position(|r| is_namespaces(&r.def))
    }

    /// The namespace `ns`, if it exists and is being deleted.
    pub(super) fn terminating_namespace(&self, ns: &str) -> Option<Arc<StoredObject>> {
        let res = self.namespaces_index()?;
        self.resources[res]
            .objects
            .get(ns)
            .filter(|n| n.is_deleting())
            .cloned()
    }

    /// The namespace controller's work on `ns`, just marked for deletion: every object in it
    /// is deleted, then the namespace itself once nothing is left.
    pub(super) fn empty_namespace(&mut self, ns: &str) {
        let prefix = format!("{ns}/");
        for res in 0..self.resources.len() {
            if !self.resources[res].def.namespaced {
                continue;
            }
            let inside: Vec<Arc<StoredObject>> = self.resources[res]
                .objects
                .range::<str, _>((Bound::Included(prefix.as_str()), Bound::Unbounded))
                .take_while(|(key, _)| key.starts_with(&prefix))
                .map(|(_, o)| Arc::clone(o))
                .collect();
            for object in inside {
                let still = self.resources[res]
                    .objects
                    .get(object.key())
                    .is_some_and(|o| o.uid() == object.uid());
                if still && !object.is_deleting() {
                    // A failure leaves the namespace terminating.
                    self.delete_as_controller(res, &object, PropagationPolicy::Background);
                }
            }
        }
        self.finish_namespace(ns);
    }

    /// Removes the terminating namespace `ns` if nothing is left in it: the update that takes
    /// its `kubernetes` finalizer away removes it (or it waits for its own
    /// `metadata.finalizers`).
    pub(super) fn finish_namespace(&mut self, ns: &str) {
        let Some(namespace) = self.terminating_namespace(ns) else {
            return;
        };
        let occupied = self
            .resources
            .iter()
            .any(|r| r.def.namespaced && r.count(Some(ns)) > 0);
        if occupied {
            return;
        }
        let Some(res) = self.namespaces_index() else {
            return;
        };
        let mut value = namespace.to_value();
        if let Some(list) = value
            .pointer_mut("/spec/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f != KUBERNETES);
        }
        // Upstream's namespace store deletes during this update a namespace left with no
        // finalizer of either kind (one write, `DELETED`); the controller's delete after it
        // finds it gone. A failure leaves it terminating.
        let _ = self.update_with(res, None, ns, value, Part::Whole);
    }
}

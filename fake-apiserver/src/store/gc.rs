//! The garbage collector: what happens to an object's dependents (the objects whose
//! `metadata.ownerReferences` name it) when it is deleted.
//!
//! Upstream this is the kube-controller-manager's garbage collector working on the API
//! server's `DeleteOptions.propagationPolicy` (read in `pkg/controller/garbagecollector` and
//! the generic registry's deletion):
//!
//! - `Background` (the default): the owner is removed at once; afterwards each dependent
//!   that has no other live owner is deleted (in the background), and one that has another
//!   loses the reference to the removed owner.
//! - `Foreground`: the owner is kept with `deletionTimestamp` and the finalizer
//!   `foregroundDeletion`; its dependents are deleted (in the foreground themselves), and the
//!   finalizer is removed once no dependent with `blockOwnerDeletion: true` is left.
//! - `Orphan`: the owner is kept with the finalizer `orphan` until its dependents no longer
//!   name it (the references are removed), then removed; the dependents stay.
//!
//! The fake server runs the collector synchronously, inside the write that removes (or
//! marks) the owner: every step is a write of its own, with its own resourceVersion and
//! watch event, taken in order from a queue (so an owner chain of any length never deepens
//! the stack), and all of them have happened when the request answers (the real collector
//! takes a moment). References are
//! resolved as upstream resolves them: by group, kind and name in the dependent's namespace,
//! and the uid must match. An object written after its owners were removed (a controller
//! acting on a stale cache recreates what the collector just deleted) is collected too, as
//! upstream's collector collects it once it has checked that its owners are absent: the
//! fake remembers the uids of the last 10,000 objects removed (`Store::removed`), and an
//! object naming one of them, with no other live owner, is deleted right after its write.
//! What the fake does not do: collect dependents whose owner never existed (seeded pods name
//! ReplicaSets that are not there, and tests stage such objects on purpose).

use std::sync::Arc;

use serde_json::Value;

use super::{Chore, EventKind, Part, Preconditions, Store};
use crate::object::{OwnerRef, StoredObject};
use crate::propagation::{FOREGROUND, ORPHAN, PropagationPolicy};

fn has_finalizer(object: &StoredObject, finalizer: &str) -> bool {
    object.has_finalizers()
        && object
            .to_value()
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|f| f == finalizer))
}

impl Store {
    /// Works through the collectors' chores, unless an outer write already does: every
    /// write they make adds its own chores to the queue instead of recursing.
    pub(super) fn run_collectors(&mut self) {
        if self.collecting {
            return;
        }
        self.collecting = true;
        while let Some(chore) = self.chores.pop_front() {
            match chore {
                Chore::Removed(object) => {
                    self.collect_after_removal(&object);
                    if let Some(ns) = object.namespace() {
                        self.finish_namespace(ns);
                    }
                    self.finish_crds();
                }
                Chore::Marked { res, owner, policy } => {
                    self.collect_for_marked_owner(res, &owner, policy);
                }
                Chore::EmptyNamespace(ns) => self.empty_namespace(&ns),
                Chore::CleanCrd(name) => self.clean_crd(&name),
                Chore::Dangling { res, key } => self.collect_dependent(res, &key),
            }
        }
        self.collecting = false;
    }

    /// Keeps the owner → dependents index in step with one change of one resource.
    pub(super) fn index_owners(
        &mut self,
        res: usize,
        kind: EventKind,
        object: &StoredObject,
        prev: Option<&StoredObject>,
    ) {
        if object.owners().is_empty() && prev.is_none_or(|p| p.owners().is_empty()) {
            return;
        }
        let key: Arc<str> = object.key().into();
        let entry = (res, Arc::clone(&key));
        let gone = prev
            .map(StoredObject::owners)
            .into_iter()
            .chain((kind == EventKind::Deleted).then(|| object.owners()))
            .flatten();
        for owner in gone {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(&entry);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
        if kind != EventKind::Deleted {
            for owner in object.owners() {
                self.dependents
                    .entry(owner.uid.clone())
                    .or_default()
                    .insert(entry.clone());
            }
        }
    }

    fn dependents_of(&self, uid: &str) -> Vec<(usize, Arc<str>)> {
        self.dependents
            .get(uid)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The live object `reference` (one of `dependent`'s) names: its resource and the object,
    /// if one with that group, kind and name exists in the dependent's namespace (or cluster
    /// wide) and has the reference's uid.
    fn owner_of(
        &self,
        dependent: &StoredObject,
        reference: &OwnerRef,
    ) -> Option<(usize, Arc<StoredObject>)> {
        let group = reference
            .api_version
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        let res = self
            .resources
            .iter()
            .position(|r| r.served && r.def.group == group && r.def.kind == reference.kind)?;
        let ns = if self.resources[res].def.namespaced {
            dependent.namespace()
        } else {
            None
        };
        let key = match ns {
            Some(ns) => format!("{ns}/{}", reference.name),
            None => reference.name.clone(),
        };
        let owner = self.resources[res].objects.get(key.as_str())?;
        (owner.uid() == reference.uid).then(|| (res, Arc::clone(owner)))
    }

    fn current(&self, res: usize, key: &str) -> Option<Arc<StoredObject>> {
        self.resources[res].objects.get(key).cloned()
    }

    /// After `removed` left the store: its dependents are collected, and owners waiting in
    /// a foreground deletion for it are released if it was the last to block them.
    fn collect_after_removal(&mut self, removed: &StoredObject) {
        for (res, key) in self.dependents_of(removed.uid()) {
            self.collect_dependent(res, &key);
        }
        for reference in removed.owners() {
            if let Some((res, owner)) = self.owner_of(removed, reference) {
                self.release_if_unblocked(res, &owner);
            }
        }
    }

    /// After `owner` was marked deleted with the finalizer of `policy`.
    fn collect_for_marked_owner(
        &mut self,
        res: usize,
        owner: &StoredObject,
        policy: PropagationPolicy,
    ) {
        let key = owner.key().to_owned();
        match policy {
            PropagationPolicy::Background => {}
            PropagationPolicy::Orphan => {
                for (dep_res, dep_key) in self.dependents_of(owner.uid()) {
                    if let Some(dependent) = self.current(dep_res, &dep_key) {
                        self.drop_references(dep_res, &dependent, &[owner.uid()]);
                    }
                }
                if let Some(latest) = self.current(res, &key) {
                    self.remove_finalizer(res, &latest, ORPHAN);
                }
            }
            PropagationPolicy::Foreground => {
                for (dep_res, dep_key) in self.dependents_of(owner.uid()) {
                    self.collect_dependent(dep_res, &dep_key);
                }
                if let Some(latest) = self.current(res, &key) {
                    self.release_if_unblocked(res, &latest);
                }
            }
        }
    }

    /// One dependent whose owner went away or waits for its dependents: kept if another
    /// owner is live (minus the references to the others), deleted otherwise (in the
    /// foreground if an owner waits for it). A dependent being deleted already is left to
    /// its own deletion.
    fn collect_dependent(&mut self, res: usize, key: &str) {
        let Some(dependent) = self.current(res, key) else {
            return;
        };
        if dependent.is_deleting() {
            return;
        }
        let mut live = false;
        let mut waiting = false;
        let mut dropped = Vec::new();
        for reference in dependent.owners() {
            match self.owner_of(&dependent, reference) {
                Some((_, owner)) if owner.is_deleting() && has_finalizer(&owner, FOREGROUND) => {
                    waiting = true;
                    dropped.push(reference.uid.as_str());
                }
                Some(_) => live = true,
                None => dropped.push(reference.uid.as_str()),
            }
        }
        if live {
            if !dropped.is_empty() {
                self.drop_references(res, &dependent, &dropped);
            }
            return;
        }
        let policy = if waiting || has_finalizer(&dependent, FOREGROUND) {
            PropagationPolicy::Foreground
        } else if has_finalizer(&dependent, ORPHAN) {
            PropagationPolicy::Orphan
        } else {
            PropagationPolicy::Background
        };
        self.delete_as_controller(res, &dependent, policy);
    }

    /// A controller's delete of exactly `object` (its uid a precondition) in resource `res`.
    /// A failure (the resourceVersions ran out) leaves it, as a controller that cannot write
    /// would.
    pub(super) fn delete_as_controller(
        &mut self,
        res: usize,
        object: &StoredObject,
        policy: PropagationPolicy,
    ) {
        let only_this_one = Preconditions {
            uid: Some(object.uid().to_owned()),
            resource_version: None,
        };
        let _ = self.delete(
            res,
            object.namespace(),
            object.name(),
            &only_this_one,
            policy,
        );
    }

    /// Releases `owner` (waiting in a foreground deletion) once none of its dependents with
    /// `blockOwnerDeletion` is left.
    fn release_if_unblocked(&mut self, res: usize, owner: &StoredObject) {
        if !owner.is_deleting() || !has_finalizer(owner, FOREGROUND) {
            return;
        }
        let blocked = self.dependents_of(owner.uid()).iter().any(|(r, k)| {
            self.current(*r, k)
                .is_some_and(|d| d.owners().iter().any(|o| o.uid == owner.uid() && o.blocks))
        });
        if !blocked {
            self.remove_finalizer(res, owner, FOREGROUND);
        }
    }

    /// Removes the references to `uids` from `dependent`'s `ownerReferences` (one update).
    fn drop_references(&mut self, res: usize, dependent: &StoredObject, uids: &[&str]) {
        let mut value = dependent.to_value();
        if let Some(refs) = value
            .pointer_mut("/metadata/ownerReferences")
            .and_then(Value::as_array_mut)
        {
            refs.retain(|r| {
                !r.get("uid")
                    .and_then(Value::as_str)
                    .is_some_and(|u| uids.contains(&u))
            });
        }
        let _ = self.update_with(
            res,
            dependent.namespace(),
            dependent.name(),
            value,
            Part::Whole,
        );
    }

    /// Removes `finalizer` from `object` (one update; the removal of the last finalizer of an
    /// object being deleted removes it, which collects further).
    fn remove_finalizer(&mut self, res: usize, object: &StoredObject, finalizer: &str) {
        let mut value = object.to_value();
        if let Some(list) = value
            .pointer_mut("/metadata/finalizers")
            .and_then(Value::as_array_mut)
        {
            list.retain(|f| f != finalizer);
        }
        let _ = self.update_with(res, object.namespace(), object.name(), value, Part::Whole);
    }
}

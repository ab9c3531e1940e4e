//! A custom resource served in several versions: one state per served version (a view),
//! every change mirrored to the others at the same resourceVersion, each view holding the
//! objects as its version reads them from storage ([`crate::versions`]).

use std::sync::Arc;

use informer_core::Status;
use tokio::sync::watch;

use super::{EventKind, ResourceState, Store};
use crate::object::StoredObject;
use crate::versions::{self, StorageVersion};
use crate::{ResourceDef, status, twins};

impl Store {
    /// Serves a CRD's versions: each of `served` (one group, plural, kind and scope) is
    /// registered, or its definition replaced in place, and stored in `storage`; a version of
    /// the resource served before and not in `served` is no longer served (its watches end,
    /// as upstream ends them when it drops a version's storage). A version served for the
    /// first time starts with the objects of the others, converted, and a history from now.
    pub(crate) fn define_versions(
        &mut self,
        group: &str,
        plural: &str,
        served: Vec<ResourceDef>,
        storage: StorageVersion,
    ) -> Result<(), Status> {
        for def in &served {
            def.validate()?;
        }
        let members: Vec<usize> = (0..self.resources.len())
            .filter(|&i| {
                let def = &self.resources[i].def;
                def.group == group && def.plural == plural
            })
            .collect();
        for &m in members.iter().filter(|&&m| self.resources[m].served) {
            let current = &self.resources[m].def;
            if served
                .iter()
                .any(|d| d.kind != current.kind || d.namespaced != current.namespaced)
            {
                return Err(Status::failure(
                    409,
                    "AlreadyExists",
                    format!(
                        "resource {} is already registered with another kind or scope",
                        current.qualified_name()
                    ),
                ));
            }
        }
        // Where the current objects are: preferably the storage version's view, which lost
        // nothing to another version's schema.
        let source = members
            .iter()
            .copied()
            .filter(|&m| self.resources[m].served)
            .max_by_key(|&m| self.resources[m].def.api_version() == storage.api_version);
        let storage = Arc::new(storage);
        let dropped: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&m| {
                let version = &self.resources[m].def.version;
                self.resources[m].served && !served.iter().any(|d| d.version == *version)
            })
            .collect();
        for def in served {
            let existing = members
                .iter()
                .copied()
                .find(|&m| self.resources[m].def.version == def.version);
            match existing {
                Some(m) if self.resources[m].served => {
                    self.redefine_at(m, def);
                    self.resources[m].storage = Some(Arc::clone(&storage));
                }
                Some(m) => {
                    // Served again: the old history goes; a watch still reading it (its
                    // cursor below the new start) gets a 410.
                    let mut state = self.view_of(source, def, &storage);
                    let old = &self.resources[m];
                    state.log_start = old.log_end();
                    let freed: usize = old.log.iter().map(|e| e.bytes).sum();
                    self.history_bytes = self.history_bytes.saturating_sub(freed);
                    self.resources[m] = state;
                }
                None => {
                    let state = self.view_of(source, def, &storage);
                    self.resources.push(state);
                }
            }
        }
        // Last: the new versions start from the objects of one that may go.
        for m in dropped {
            self.unserve(m);
        }
        Ok(())
    }

    /// A new view `def` of the objects of `source` (none: empty), its history starting now.
    fn view_of(
        &self,
        source: Option<usize>,
        def: ResourceDef,
        storage: &Arc<StorageVersion>,
    ) -> ResourceState {
        let mut state = ResourceState::new(def, self.rv);
        state.storage = Some(Arc::clone(storage));
        if let Some(source) = source {
            for (key, object) in &self.resources[source].objects {
                let stored = versions::stored(storage, &object.to_value());
                let value = versions::viewed(&state.def, &stored);
                // Built from an object of the same metadata, so it builds; were it not to,
                // the view would only miss that object.
                if let Ok(converted) =
                    StoredObject::from_value(&value, object.resource_version(), &state.def)
                {
                    if let Some(ns) = converted.namespace() {
                        *state.ns_counts.entry(ns.to_owned()).or_insert(0) += 1;
                    }
                    state.objects.insert(Arc::clone(key), Arc::new(converted));
                }
            }
        }
        state
    }

    /// Stops serving resource `m`: its objects go, its watches end once they have read the
    /// history they are behind on (their sender is dropped; the history stays until it is
    /// trimmed or the version is served again), its slot stays (indices into `resources`
    /// are kept everywhere).
    pub(super) fn unserve(&mut self, m: usize) {
        let state = &mut self.resources[m];
        state.served = false;
        state.objects.clear();
        state.ns_counts.clear();
        state.changed = watch::channel(state.log_end()).0;
        for set in self.dependents.values_mut() {
            set.retain(|(r, _)| *r != m);
        }
        self.dependents.retain(|_, set| !set.is_empty());
    }

    /// The other served versions of resource `res`, if it is a custom resource served in
    /// several.
    fn sibling_versions(&self, res: usize) -> Vec<usize> {
        if self.resources[res].storage.is_none() {
            return Vec::new();
        }
        let def = &self.resources[res].def;
        (0..self.resources.len())
            .filter(|&j| {
                let other = &self.resources[j];
                j != res
                    && other.served
                    && other.storage.is_some()
                    && other.def.group == def.group
                    && other.def.plural == def.plural
            })
            .collect()
    }

    /// A write's result through resource `res` as that version reads it back from storage
    /// (upstream answers a write with the object decoded from what it stored): fields the
    /// storage version's schema does not know are gone, its defaults are set; a built-in
    /// kind served in two forms is converted there and back ([`twins::settle`]). Unchanged
    /// for a resource stored in its own version. Answers the storage form the body was
    /// settled from when that is not the body's own form, for the commit to mirror. A 400 if
    /// the body does not convert (as upstream's decoding of the request fails).
    pub(super) fn settle(
        &self,
        res: usize,
        body: &mut serde_json::Value,
    ) -> Result<Option<serde_json::Value>, Status> {
        let state = &self.resources[res];
        if let Some(storage) = &state.storage
            && storage.api_version != state.def.api_version()
        {
            *body = versions::viewed(&state.def, &versions::stored(storage, body));
        }
        if state.twin.is_none() {
            return Ok(None);
        }
        let def = &state.def;
        twins::settle(def, body).map_err(|error| {
            status::bad_request(format!(
                "{kind} in version {version:?} cannot be handled as a {kind}: {error}",
                kind = def.kind,
                version = def.version,
            ))
        })
    }

    /// The change `object` (of `kind`, committed to `res`) as each other served version of
    /// the resource sees it: converted through the storage version, or, for a deletion, the
    /// version's own last state at the deletion's resourceVersion (as each version's watch
    /// cache decodes the stored object). With each, the version's current object.
    #[allow(clippy::type_complexity)]
    pub(super) fn version_mirrors(
        &self,
        res: usize,
        kind: EventKind,
        object: &StoredObject,
    ) -> Vec<(usize, Arc<StoredObject>, Option<Arc<StoredObject>>)> {
        let siblings = self.sibling_versions(res);
        let Some(storage) = self.resources[res].storage.as_deref() else {
            return Vec::new();
        };
        if siblings.is_empty() {
            return Vec::new();
        }
        let rv = object.resource_version();
        let stored =
            (kind != EventKind::Deleted).then(|| versions::stored(storage, &object.to_value()));
        siblings
            .into_iter()
            .filter_map(|t| {
                let to = &self.resources[t];
                let prev = to.objects.get(object.key()).cloned();
                let converted = match &stored {
                    Some(stored) => {
                        StoredObject::from_value(&versions::viewed(&to.def, stored), rv, &to.def)
                    }
                    None => prev.as_ref()?.with_resource_version(rv),
                };
                // Built from an object of the same metadata, so it builds; were it not to,
                // the version would only miss this change.
                Some((t, Arc::new(converted.ok()?), prev))
            })
            .collect()
    }
}

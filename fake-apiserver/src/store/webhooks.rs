//! The store's side of admission webhooks ([`crate::webhooks`]): what a write to a resource
//! needs to know to call them, read under the lock and carried out of it.

use std::sync::Arc;

use serde_json::Value;

use super::Store;
use crate::ResourceDef;
use crate::webhooks::{self, Hook};

/// What the webhooks of a write to one resource are decided with.
pub(crate) struct Scene {
    /// The mutating webhooks, in the order they are called.
    pub mutating: Vec<Hook>,
    /// The validating webhooks.
    pub validating: Vec<Hook>,
    /// The namespace the write is in, as stored (its labels meet `namespaceSelector`).
    pub namespace_object: Option<Value>,
    /// The other form of the resource, if it is served in two.
    pub twin: Option<Arc<ResourceDef>>,
}

const GROUP: &str = "admissionregistration.k8s.io";

impl Store {
    /// The webhooks a write to resource `res` in `namespace` through `subresource` may
    /// call (those with a rule naming it), or none when there are none (or the resource is
    /// one webhooks are not called for).
    pub(crate) fn webhook_scene(
        &self,
        res: usize,
        namespace: Option<&str>,
        subresource: &str,
    ) -> Option<Scene> {
        let def = &self.resources[res].def;
        if webhooks::exempt(&def.group, &def.plural) {
            return None;
        }
        let twin = self.resources[res]
            .twin
            .map(|t| Arc::clone(&self.resources[t].def));
        let relevant = |plural: &str| {
            let mut hooks = webhooks::hooks(&self.stored(GROUP, plural));
            hooks.retain(|h| webhooks::may_match(h, def, twin.as_deref(), subresource));
            hooks
        };
        let mutating = relevant("mutatingwebhookconfigurations");
        let validating = relevant("validatingwebhookconfigurations");
        if mutating.is_empty() && validating.is_empty() {
            return None;
        }
        Some(Scene {
            mutating,
            validating,
            namespace_object: namespace
                .filter(|_| def.namespaced)
                .and_then(|ns| self.namespace_value(ns)),
            twin,
        })
    }
}

//! The store's side of validating admission policies ([`crate::admission`]): the policies
//! and bindings stored, the namespace of a write, and the parameter objects a binding names.

use std::ops::Bound;

use informer_core::Status;
use serde_json::Value;

use super::{ResourceState, Store, object_key};
use crate::admission::{self, Attributes, Equivalent, ParamQuery, ParamSource};
use crate::{ResourceDef, twins};

const GROUP: &str = "admissionregistration.k8s.io";

impl Store {
    /// The state of the served resource `group`/`plural`.
    fn served_state(&self, group: &str, plural: &str) -> Option<&ResourceState> {
        self.resources
            .iter()
            .find(|r| r.served && r.def.group == group && r.def.plural == plural)
    }

    /// The stored objects of the served resource `group`/`plural`, in name order.
    pub(super) fn stored(&self, group: &str, plural: &str) -> Vec<Value> {
        self.served_state(group, plural)
            .map(|r| r.objects.values().map(|o| o.to_value()).collect())
            .unwrap_or_default()
    }

    /// The stored object `name` of the served resource `group`/`plural` (in `namespace`).
    pub(super) fn stored_object(
        &self,
        group: &str,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Value> {
        let r = self.served_state(group, plural)?;
        let key = object_key(&r.def, namespace, name);
        r.objects.get(key.as_str()).map(|o| o.to_value())
    }

    /// The stored Namespace `name`, if there is one.
    pub(super) fn namespace_value(&self, name: &str) -> Option<Value> {
        self.stored_object("", "namespaces", None, name)
    }

    /// Whether any policy binding is stored (else admission has nothing to run).
    pub(crate) fn policies_bound(&self) -> bool {
        self.resources.iter().any(|r| {
            r.served
                && r.def.group == GROUP
                && r.def.plural == "validatingadmissionpolicybindings"
                && !r.objects.is_empty()
        })
    }

    /// Runs the validating admission policies on a write to resource `res` (`operation`
    /// through `subresource`, `object` as it would be stored, `old` as stored); their
    /// warnings join the request's, their refusal is the write's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn admit(
        &self,
        res: usize,
        operation: &'static str,
        subresource: &str,
        name: &str,
        namespace: Option<&str>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), Status> {
        let def = &self.resources[res].def;
        // Upstream's policy plugin skips the policies' own resources (no circular checks).
        let own = def.group == GROUP
            && [
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
            ]
            .contains(&def.plural.as_str());
        if own || self.skip_policies || !self.policies_bound() {
            return Ok(());
        }
        let bindings = self.stored(GROUP, "validatingadmissionpolicybindings");
        let policies = self.stored(GROUP, "validatingadmissionpolicies");
        let namespace = namespace.filter(|_| def.namespaced);
        let namespace_object = namespace.and_then(|ns| self.namespace_value(ns));
        // The other form of a resource served in two, with the objects converted to it.
        let twin = self.resources[res].twin.map(|t| &self.resources[t].def);
        let converted =
            |o: Option<&Value>| twin.zip(o).and_then(|(to, o)| twins::converted(def, to, o));
        let (twin_object, twin_old) = (converted(object), converted(old));
        let attributes = Attributes {
            operation,
            def,
            subresource,
            name,
            namespace,
            object,
            old,
            dry_run: self.dry_run,
            namespace_object: namespace_object.as_ref(),
            requested: def,
            equivalent: twin.map(|def| Equivalent {
                def,
                object: twin_object.as_ref(),
                old: twin_old.as_ref(),
            }),
            object_kind: None,
        };
        let warnings = admission::admit(&policies, &bindings, &attributes, self)?;
        if let Some(sink) = self.warnings.as_ref().filter(|_| !warnings.is_empty()) {
            sink.lock().extend(warnings);
        }
        Ok(())
    }
}

impl Store {
    /// A write of a policy or a binding checked as upstream's validation checks it (a 422
    /// with each violation); other kinds pass.
    pub(super) fn check_policy_object(
        &self,
        def: &ResourceDef,
        name: &str,
        body: &Value,
    ) -> Result<(), Status> {
        let (kind, violations) = match (def.group.as_str(), def.plural.as_str()) {
            (GROUP, "validatingadmissionpolicies") => (
                "ValidatingAdmissionPolicy",
                admission::policy_violations(body),
            ),
            (GROUP, "validatingadmissionpolicybindings") => (
                "ValidatingAdmissionPolicyBinding",
                admission::binding_violations(body),
            ),
            _ => return Ok(()),
        };
        if violations.is_empty() {
            Ok(())
        } else {
            Err(crate::status::invalid(kind, GROUP, name, &violations))
        }
    }
}

impl ParamSource for Store {
    fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool> {
        self.resources
            .iter()
            .find(|r| r.served && r.def.api_version() == api_version && r.def.kind == kind)
            .map(|r| r.def.namespaced)
    }

    fn find(&self, query: &ParamQuery<'_>) -> Vec<Value> {
        let Some(state) = self.resources.iter().find(|r| {
            r.served && r.def.api_version() == query.api_version && r.def.kind == query.kind
        }) else {
            return Vec::new();
        };
        if let Some(name) = query.name {
            let key = match query.namespace {
                Some(ns) => format!("{ns}/{name}"),
                None => name.to_owned(),
            };
            return state
                .objects
                .get(key.as_str())
                .map(|o| vec![o.to_value()])
                .unwrap_or_default();
        }
        let prefix = query.namespace.map(|ns| format!("{ns}/"));
        let start = prefix.as_deref().unwrap_or("");
        state
            .objects
            .range::<str, _>((Bound::Included(start), Bound::Unbounded))
            .take_while(|(key, _)| prefix.as_deref().is_none_or(|p| key.starts_with(p)))
            .map(|(_, o)| o)
            .filter(|o| query.selector.is_none_or(|s| s.matches(o.labels())))
            .map(|o| o.to_value())
            .collect()
    }
}

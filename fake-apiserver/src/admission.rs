//! Validating admission policies (`admissionregistration.k8s.io/v1`
//! `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding`), run on every write as
//! upstream's `ValidatingAdmissionPolicy` admission plugin runs them (read in
//! `k8s.io/apiserver/pkg/admission/plugin/policy`: `validating/dispatcher.go`,
//! `validating/validator.go`, `matching/matching.go`, `generic/policy_dispatcher.go`'s
//! `CollectParams`, the webhook rule matcher and `cel/activation.go`).
//!
//! A policy applies through each of its bindings: when the request matches the policy's
//! `matchConstraints` and the binding's `matchResources` (operations, API groups, versions,
//! resources with their subresources, scope, resource names, excluded rules, namespace and
//! object selectors), for each parameter object the binding's `paramRef` finds (or none), its
//! `matchConditions` all hold; then each of its `validations` that is not true is a failure,
//! worded by its `messageExpression`, `message` or `failed expression: <expression>`, of
//! its `reason`; an expression's error follows the policy's `failurePolicy` (`Fail`, the
//! default: a failure; `Ignore`: none). A failure is acted on as the binding's
//! `validationActions` say: `Deny` refuses the request, `Warn` answers a warning, `Audit`
//! does nothing here (there is no audit log). Expressions see `object`, `oldObject`,
//! `request`, `params`, `namespaceObject` and `variables`, untyped, with the CEL libraries of
//! [`crate::rules`]; `authorizer` is not bound (there is no authorizer).
//!
//! Under `matchPolicy: Equivalent` (the default) a request through one form of a resource
//! served in two ([`crate::twins`]: core and `events.k8s.io` Events, `autoscaling/v1` and
//! `v2` HorizontalPodAutoscalers; upstream's equivalent resources, which share a storage)
//! that no rule matches as it is, but one matches through the other form, is matched so, and
//! its objects are converted to that form (`request.kind` and `request.resource` name it,
//! `requestKind` and `requestResource` the request's own), as upstream's matcher does.

use informer_core::Status;
use informer_core::selector::LabelSelector;
use serde_json::{Value, json};

use crate::caller;
use crate::object::label_selector_string;
use crate::rules::Activation;
use crate::schema::Violation;
use crate::{ResourceDef, status};

/// A write, as admission sees it.
pub(crate) struct Attributes<'a> {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    /// The resource written.
    pub def: &'a ResourceDef,
    /// The subresource written through (`status`), or empty.
    pub subresource: &'a str,
    /// The object's name.
    pub name: &'a str,
    /// Its namespace, for a namespaced resource.
    pub namespace: Option<&'a str>,
    /// The object as it would be stored (none for a delete).
    pub object: Option<&'a Value>,
    /// The stored object (none for a create).
    pub old: Option<&'a Value>,
    /// Whether the write is a dry run.
    pub dry_run: bool,
    /// The namespace the object is in, as stored.
    pub namespace_object: Option<&'a Value>,
    /// The resource the request went through: `def`, unless these are the attributes of
    /// an equivalent resource ([`Attributes::equivalent`]).
    pub requested: &'a ResourceDef,
    /// The same write through the other form of the resource, if it is served in two.
    pub equivalent: Option<Equivalent<'a>>,
    /// The group, version and kind of the object when it is not the resource's own (a
    /// `Scale`, an `Eviction`, `PodExecOptions`: what a subresource's write sends).
    pub object_kind: Option<(&'a str, &'a str, &'a str)>,
}

/// The other form of a resource served in two, and the write's objects converted to it.
pub(crate) struct Equivalent<'a> {
    pub def: &'a ResourceDef,
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
}

impl<'a> Attributes<'a> {
    /// The write as the equivalent resource sees it, if there is one.
    pub(crate) fn equivalent(&self) -> Option<Attributes<'a>> {
        let e = self.equivalent.as_ref()?;
        Some(Attributes {
            operation: self.operation,
            def: e.def,
            subresource: self.subresource,
            name: self.name,
            namespace: self.namespace,
            object: e.object,
            old: e.old,
            dry_run: self.dry_run,
            namespace_object: self.namespace_object,
            requested: self.requested,
            equivalent: None,
            object_kind: self.object_kind,
        })
    }
}

/// Where a binding's `paramRef` looks: the `paramKind` (`apiVersion`, `kind`), the
/// namespace (none: cluster-scoped or unset), and a name or a label selector.
pub(crate) struct ParamQuery<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: Option<&'a str>,
    pub selector: Option<&'a LabelSelector>,
}

/// How the store answers a [`ParamQuery`]: whether the kind is namespaced (none: not
/// served), and the objects it finds.
pub(crate) trait ParamSource {
    fn namespaced(&self, api_version: &str, kind: &str) -> Option<bool>;
    fn find(&self, query: &ParamQuery<'_>) -> Vec<Value>;
}

/// One failure to act on: the policy, the binding (none: the policy's own configuration),
/// the message and the `reason`.
struct Failure {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

pub(crate) fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn strings(value: Option<&Value>) -> Vec<&str> {
    value
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A label selector (`matchLabels`, `matchExpressions`); absent: everything. An invalid one
/// matches nothing.
fn selector(value: Option<&Value>) -> Option<LabelSelector> {
    label_selector_string(value).and_then(|s| LabelSelector::parse(&s).ok())
}

fn labels_of(object: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `field` of `rule` lists `value` or `*`.
fn lists(rule: &Value, field: &str, value: &str) -> bool {
    strings(rule.get(field))
        .iter()
        .any(|v| *v == "*" || *v == value)
}

/// Whether `rule` names resource `def` through `subresource`: groups, versions, resources
/// (`*`, `res`, `res/sub`, `*/sub`, `res/*`, `*/*`), whatever the operation and scope.
pub(crate) fn rule_names(rule: &Value, def: &ResourceDef, subresource: &str) -> bool {
    let resource_ok = strings(rule.get("resources")).iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        let res_ok = res == "*" || res == def.plural;
        let sub_ok = if r.contains('/') {
            sub == "*" || sub == subresource
        } else {
            subresource.is_empty()
        };
        res_ok && sub_ok
    });
    lists(rule, "apiGroups", &def.group) && lists(rule, "apiVersions", &def.version) && resource_ok
}

/// The webhook rule matcher: operations, the resource ([`rule_names`]) and scope.
fn rule_matches(rule: &Value, a: &Attributes<'_>) -> bool {
    let scope_ok = match rule.get("scope").and_then(Value::as_str).unwrap_or("*") {
        "Cluster" => a.namespace.is_none(),
        "Namespaced" => a.namespace.is_some(),
        _ => true,
    };
    lists(rule, "operations", a.operation) && rule_names(rule, a.def, a.subresource) && scope_ok
}

fn rules_match(rules: Option<&Value>, a: &Attributes<'_>) -> bool {
    rules.and_then(Value::as_array).is_some_and(|rules| {
        rules.iter().any(|rule| {
            let names = strings(rule.get("resourceNames"));
            rule_matches(rule, a) && (names.is_empty() || names.contains(&a.name))
        })
    })
}

/// `matching.Matcher.Matches` on a policy's `matchConstraints` or a binding's
/// `matchResources`: namespace and object selectors, excluded rules, then the rules (none:
/// everything), each rule on the request as it is, then, unless `matchPolicy` is `Exact`, on
/// `equivalent` (the request through the other form of the resource). Answers the
/// attributes that matched.
pub(crate) fn matching<'x, 'a>(
    criteria: &Value,
    a: &'x Attributes<'a>,
    equivalent: Option<&'x Attributes<'a>>,
) -> Option<&'x Attributes<'a>> {
    let fuzzy = criteria.get("matchPolicy").and_then(Value::as_str) != Some("Exact");
    let candidates = || std::iter::once(a).chain(equivalent.filter(|_| fuzzy));
    if !selected(criteria, a)
        || candidates().any(|c| rules_match(criteria.get("excludeResourceRules"), c))
    {
        return None;
    }
    let rules = criteria.get("resourceRules");
    if rules.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        return Some(a);
    }
    candidates().find(|c| rules_match(rules, c))
}

/// Whether `a` passes the namespace and object selectors of `criteria`.
fn selected(criteria: &Value, a: &Attributes<'_>) -> bool {
    // The namespace selector applies to namespaced objects (by their namespace's labels)
    // and to Namespaces (by their own); other cluster-scoped objects pass it.
    let namespace_labels = if a.def.group.is_empty() && a.def.plural == "namespaces" {
        Some(labels_of(a.object.or(a.old)))
    } else if a.namespace.is_some() {
        Some(labels_of(a.namespace_object))
    } else {
        None
    };
    if let Some(labels) = namespace_labels {
        match selector(criteria.get("namespaceSelector")) {
            Some(s) if s.matches(&labels) => {}
            _ => return false,
        }
    }
    // Upstream's object matcher: an empty selector takes everything; another takes an
    // object (new or old) whose labels it matches, and never an absent one.
    match (
        criteria.get("objectSelector"),
        selector(criteria.get("objectSelector")),
    ) {
        (_, None) => return false,
        (raw, Some(s)) => {
            let empty = label_selector_string(raw).is_some_and(|t| t.is_empty());
            let takes = |o: Option<&Value>| o.is_some() && s.matches(&labels_of(o));
            if !empty && !takes(a.object) && !takes(a.old) {
                return false;
            }
        }
    }
    true
}

/// The `request` variable: upstream's `AdmissionRequest` for the write (`kind` and
/// `resource` the matched resource's, `requestKind` and `requestResource` the request's).
pub(crate) fn request(a: &Attributes<'_>) -> Value {
    let gvk = |d: &ResourceDef| match a.object_kind {
        Some((group, version, kind)) => json!({"group": group, "version": version, "kind": kind}),
        None => json!({"group": d.group, "version": d.version, "kind": d.kind}),
    };
    let gvr =
        |d: &ResourceDef| json!({"group": d.group, "version": d.version, "resource": d.plural});
    let mut request = json!({
        "kind": gvk(a.def), "resource": gvr(a.def),
        "requestKind": gvk(a.requested), "requestResource": gvr(a.requested),
        "name": a.name, "operation": a.operation, "dryRun": a.dry_run,
        "userInfo": {"username": caller::USER, "groups": caller::GROUPS},
    });
    if !a.subresource.is_empty() {
        request["subResource"] = json!(a.subresource);
        request["requestSubResource"] = json!(a.subresource);
    }
    if let Some(ns) = a.namespace {
        request["namespace"] = json!(ns);
    }
    request
}

/// The parameter objects a binding's `paramRef` names, or why there are none to use (upstream's
/// `CollectParams` messages). `[None]`: the policy takes no parameters.
fn params(
    policy: &Value,
    binding: &Value,
    a: &Attributes<'_>,
    source: &dyn ParamSource,
) -> Result<Vec<Option<Value>>, String> {
    let (Some(kind), Some(reference)) = (
        policy.pointer("/spec/paramKind"),
        binding.pointer("/spec/paramRef"),
    ) else {
        return Ok(vec![None]);
    };
    let (api_version, kind_name) = (text(kind, "/apiVersion"), text(kind, "/kind"));
    let Some(namespaced) = source.namespaced(api_version, kind_name) else {
        return Err(format!(
            "paramKind kind `{}` not known",
            json!({"apiVersion": api_version, "kind": kind_name})
        ));
    };
    let given_namespace = text(reference, "/namespace");
    let namespace = if !namespaced {
        if !given_namespace.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        }
        None
    } else if !given_namespace.is_empty() {
        Some(given_namespace)
    } else {
        Some(a.namespace.ok_or(
            "cannot use namespaced paramRef in policy binding that matches cluster-scoped \
             resources",
        )?)
    };
    let name = Some(text(reference, "/name")).filter(|n| !n.is_empty());
    let label_selector = reference.get("selector").filter(|s| !s.is_null());
    let chosen = match (name, label_selector) {
        (Some(_), Some(_)) => {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        (None, None) => return Err("one of name or selector must be provided".into()),
        (_, Some(s)) => Some(selector(Some(s)).ok_or("invalid paramRef.selector")?),
        (Some(_), None) => None,
    };
    let found = source.find(&ParamQuery {
        api_version,
        kind: kind_name,
        namespace,
        name,
        selector: chosen.as_ref(),
    });
    if found.is_empty() && text(reference, "/parameterNotFoundAction") == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found.into_iter().map(Some).collect())
}

/// What one binding's evaluation for one parameter decides: each failure's message and
/// reason.
fn evaluate(policy: &Value, activation: &Activation, fail: bool) -> Vec<(String, String)> {
    let invalid = "Invalid".to_owned();
    let mut errors = Vec::new();
    for condition in policy
        .pointer("/spec/matchConditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // Only `false` excludes (upstream compares with `celtypes.False`).
        match activation.is_false(text(condition, "/expression")) {
            Ok(false) => {}
            Ok(true) => return Vec::new(),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return if fail {
            vec![(errors.join(", "), invalid)]
        } else {
            Vec::new()
        };
    }
    let mut failures = Vec::new();
    for validation in policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let expression = text(validation, "/expression");
        match activation.holds(expression) {
            Ok(true) => {}
            Ok(false) => {
                let message = validation
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .and_then(|m| activation.message(m))
                    .or_else(|| {
                        Some(text(validation, "/message").trim().to_owned())
                            .filter(|m| !m.is_empty())
                    })
                    .unwrap_or_else(|| format!("failed expression: {}", expression.trim()));
                let reason = Some(text(validation, "/reason"))
                    .filter(|r| !r.is_empty())
                    .map_or_else(|| invalid.clone(), str::to_owned);
                failures.push((message, reason));
            }
            Err(e) if fail => failures.push((e, invalid.clone())),
            Err(_) => {}
        }
    }
    failures
}

/// Upstream's `reasonToCode`.
fn code(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// Runs every bound policy on the write `a`: the warnings to answer, or the refusal of the
/// first failure to deny (upstream's forbidden error, its code and reason the failure's).
pub(crate) fn admit(
    policies: &[Value],
    bindings: &[Value],
    a: &Attributes<'_>,
    source: &dyn ParamSource,
) -> Result<Vec<String>, Status> {
    let mut denied: Vec<Failure> = Vec::new();
    let mut warnings = Vec::new();
    let equivalent = a.equivalent();
    for policy in policies {
        let policy_name = text(policy, "/metadata/name");
        let bound: Vec<&Value> = bindings
            .iter()
            .filter(|b| text(b, "/spec/policyName") == policy_name)
            .collect();
        let constraints = policy
            .pointer("/spec/matchConstraints")
            .unwrap_or(&Value::Null);
        if bound.is_empty() {
            continue;
        }
        // What the policy sees: the request in the form its constraints matched.
        let Some(seen) = matching(constraints, a, equivalent.as_ref()) else {
            continue;
        };
        let fail = text(policy, "/spec/failurePolicy") != "Ignore";
        let variables: Vec<(String, String)> = policy
            .pointer("/spec/variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                (
                    text(v, "/name").to_owned(),
                    text(v, "/expression").to_owned(),
                )
            })
            .collect();
        for binding in bound {
            let binding_name = text(binding, "/metadata/name");
            if let Some(resources) = binding.pointer("/spec/matchResources")
                && !resources.is_null()
                && matching(resources, a, equivalent.as_ref()).is_none()
            {
                continue;
            }
            let found = match params(policy, binding, seen, source) {
                Ok(found) => found,
                Err(e) => {
                    if fail {
                        denied.push(Failure {
                            policy: policy_name.to_owned(),
                            binding: Some(binding_name.to_owned()),
                            message: format!("failed to configure binding: {e}"),
                            reason: "Invalid".into(),
                        });
                    }
                    continue;
                }
            };
            let actions = strings(binding.pointer("/spec/validationActions"));
            for param in found {
                let mut activation = Activation::default();
                activation.bind("object", seen.object);
                activation.bind("oldObject", seen.old);
                activation.bind("request", Some(&request(seen)));
                activation.bind("params", param.as_ref());
                activation.bind("namespaceObject", a.namespace_object);
                activation.define_variables(&variables);
                for (message, reason) in evaluate(policy, &activation, fail) {
                    if actions.contains(&"Deny") {
                        denied.push(Failure {
                            policy: policy_name.to_owned(),
                            binding: Some(binding_name.to_owned()),
                            message: message.clone(),
                            reason: reason.clone(),
                        });
                    }
                    if actions.contains(&"Warn") {
                        warnings.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{policy_name}' \
                             with binding '{binding_name}': {message}"
                        ));
                    }
                }
            }
        }
    }
    let Some(first) = denied.into_iter().next() else {
        return Ok(warnings);
    };
    let detail = match &first.binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{binding}' denied request: {}",
            first.policy, first.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            first.policy, first.message
        ),
    };
    Err(status::policy_denied(
        a.def,
        a.name,
        &detail,
        &first.reason,
        code(&first.reason),
    ))
}

fn required(field: String, detail: &str) -> Violation {
    (field, "FieldValueRequired", detail.to_owned())
}

/// An expression that does not compile, as upstream's policy validation words it.
fn uncompiled(field: String, expression: &str) -> Option<Violation> {
    crate::rules::compile_error(expression)
        .map(|e| (field, "FieldValueInvalid", format!("{expression:?}: {e}")))
}

/// An expression that must be given and compile.
fn expression_violations(field: String, expression: &str, detail: &str) -> Option<Violation> {
    if expression.trim().is_empty() {
        Some(required(field, detail))
    } else {
        uncompiled(field, expression)
    }
}

fn items(value: &Value, field: &str) -> Vec<Value> {
    value
        .get(field)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// What upstream's `ValidateValidatingAdmissionPolicy` refuses in a policy, of what does not
/// depend on its defaults: no `matchConstraints` or no resource rule in them, an unknown
/// `failurePolicy`, a `paramKind` without `apiVersion` or `kind`, match conditions without a
/// name (or with a repeated one) or an expression that compiles, variables without a CEL
/// identifier for a name or an expression that compiles, neither validations nor audit
/// annotations, a validation without an expression that compiles, a message expression that
/// does not compile, a blank or multi-line message, an unknown reason.
pub(crate) fn policy_violations(policy: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    match spec.get("failurePolicy").and_then(Value::as_str) {
        None | Some("Fail" | "Ignore") => {}
        Some(other) => out.push((
            "spec.failurePolicy".into(),
            "FieldValueNotSupported",
            format!("{other:?}: supported values: \"Fail\", \"Ignore\""),
        )),
    }
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        for field in ["apiVersion", "kind"] {
            if text(kind, &format!("/{field}")).is_empty() {
                out.push(required(format!("spec.paramKind.{field}"), ""));
            }
        }
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => out.push(required("spec.matchConstraints".into(), "")),
        Some(m) if items(m, "resourceRules").is_empty() => {
            out.push(required("spec.matchConstraints.resourceRules".into(), ""));
        }
        Some(_) => {}
    }
    let mut names = std::collections::HashSet::new();
    for (i, condition) in items(spec, "matchConditions").iter().enumerate() {
        let at = format!("spec.matchConditions[{i}]");
        let expression = text(condition, "/expression").trim();
        out.extend(expression_violations(
            format!("{at}.expression"),
            expression,
            "",
        ));
        let name = text(condition, "/name");
        if name.is_empty() {
            out.push(required(format!("{at}.name"), ""));
        } else if !names.insert(name.to_owned()) {
            out.push((
                format!("{at}.name"),
                "FieldValueDuplicate",
                format!("{name:?}"),
            ));
        }
    }
    for (i, variable) in items(spec, "variables").iter().enumerate() {
        let at = format!("spec.variables[{i}]");
        let name = text(variable, "/name").trim();
        let identifier = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !crate::rules::RESERVED.contains(&name);
        if name.is_empty() {
            out.push(required(format!("{at}.name"), "name is not specified"));
        } else if !identifier {
            out.push((
                format!("{at}.name"),
                "FieldValueInvalid",
                format!("{name:?}: name is not a valid CEL identifier"),
            ));
        }
        let expression = text(variable, "/expression");
        out.extend(expression_violations(
            format!("{at}.expression"),
            expression,
            "expression is not specified",
        ));
    }
    let validations = items(spec, "validations");
    if validations.is_empty() && items(spec, "auditAnnotations").is_empty() {
        let detail = "validations or auditAnnotations must contain at least one item";
        out.push(required("spec.validations".into(), detail));
        out.push(required("spec.auditAnnotations".into(), detail));
    }
    for (i, validation) in validations.iter().enumerate() {
        out.extend(validation_violations(
            validation,
            &format!("spec.validations[{i}]"),
        ));
    }
    out
}

/// One of a policy's validations (upstream's `validateValidation`).
fn validation_violations(validation: &Value, at: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    out.extend(expression_violations(
        format!("{at}.expression"),
        text(validation, "/expression"),
        "expression is not specified",
    ));
    let message_expression = text(validation, "/messageExpression");
    if !message_expression.is_empty() && message_expression.trim().is_empty() {
        out.push((
            format!("{at}.messageExpression"),
            "FieldValueInvalid",
            format!("{message_expression:?}: must be non-empty if specified"),
        ));
    } else if !message_expression.is_empty() {
        out.extend(uncompiled(
            format!("{at}.messageExpression"),
            message_expression,
        ));
    }
    let message = text(validation, "/message");
    if !message.is_empty() && message.trim().is_empty() {
        out.push((
            format!("{at}.message"),
            "FieldValueInvalid",
            format!("{message:?}: message must be non-empty if specified"),
        ));
    } else if message.trim().contains(['\n', '\r']) {
        out.push((
            format!("{at}.message"),
            "FieldValueInvalid",
            format!("{message:?}: message must not contain line breaks"),
        ));
    }
    let reason = text(validation, "/reason");
    let reasons = [
        "Forbidden",
        "Invalid",
        "RequestEntityTooLarge",
        "Unauthorized",
    ];
    if !reason.is_empty() && !reasons.contains(&reason) {
        out.push((
            format!("{at}.reason"),
            "FieldValueNotSupported",
            format!(
                "{reason:?}: supported values: \"Forbidden\", \"Invalid\", \
                 \"RequestEntityTooLarge\", \"Unauthorized\""
            ),
        ));
    }
    out
}

/// What upstream's `ValidateValidatingAdmissionPolicyBinding` refuses in a binding: no
/// `policyName`; a `paramRef` with both or neither of a name and a selector, or without a
/// known `parameterNotFoundAction`; validation actions unknown, repeated, both `Deny` and
/// `Warn`, or none.
pub(crate) fn binding_violations(binding: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    if text(binding, "/spec/policyName").is_empty() {
        out.push(required("spec.policyName".into(), ""));
    }
    if let Some(reference) = binding.pointer("/spec/paramRef").filter(|r| !r.is_null()) {
        out.extend(param_ref_violations(reference));
    }
    let actions = strings(binding.pointer("/spec/validationActions"));
    let mut seen: Vec<&str> = Vec::new();
    for (i, action) in actions.iter().enumerate() {
        let at = format!("spec.validationActions[{i}]");
        if !["Audit", "Deny", "Warn"].contains(action) {
            out.push((
                at.clone(),
                "FieldValueNotSupported",
                format!("{action:?}: supported values: \"Audit\", \"Deny\", \"Warn\""),
            ));
        }
        if seen.contains(action) {
            out.push((at, "FieldValueDuplicate", format!("{action:?}")));
        }
        seen.push(action);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        out.push((
            "spec.validationActions".into(),
            "FieldValueInvalid",
            "must not contain both Deny and Warn (repeating the same validation failure \
             information in the API response and headers serves no purpose)"
                .into(),
        ));
    }
    if seen.is_empty() {
        out.push(required(
            "spec.validationActions".into(),
            "at least one validation action is required",
        ));
    }
    out
}

/// A binding's `paramRef` (upstream's `validateParamRef`).
fn param_ref_violations(reference: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    let named = !text(reference, "/name").is_empty();
    let selected = reference.get("selector").is_some_and(|s| !s.is_null());
    if named && selected {
        for field in ["name", "selector"] {
            out.push((
                format!("spec.paramRef.{field}"),
                "FieldValueForbidden",
                "name and selector are mutually exclusive".to_owned(),
            ));
        }
    }
    if !named && !selected {
        out.push(required(
            "spec.paramRef".into(),
            "one of name or selector must be specified",
        ));
    }
    match text(reference, "/parameterNotFoundAction") {
        "" => out.push(required("spec.paramRef.parameterNotFoundAction".into(), "")),
        "Deny" | "Allow" => {}
        other => out.push((
            "spec.paramRef.parameterNotFoundAction".into(),
            "FieldValueNotSupported",
            format!("{other:?}: supported values: \"Deny\", \"Allow\""),
        )),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attributes<'a>(
        def: &'a ResourceDef,
        subresource: &'a str,
        namespace: Option<&'a str>,
    ) -> Attributes<'a> {
        Attributes {
            operation: "UPDATE",
            def,
            subresource,
            name: "web",
            namespace,
            object: None,
            old: None,
            dry_run: false,
            namespace_object: None,
            requested: def,
            equivalent: None,
            object_kind: None,
        }
    }

    fn resources_match(criteria: &Value, a: &Attributes<'_>) -> bool {
        matching(criteria, a, None).is_some()
    }

    #[test]
    fn rules_match_resources_subresources_and_scopes_as_upstream() {
        let deployments = ResourceDef::namespaced("apps", "v1", "deployments", "Deployment");
        let rule = |resources: Value, scope: &str| {
            json!({"apiGroups": ["apps"], "apiVersions": ["*"], "operations": ["UPDATE"],
                   "resources": resources, "scope": scope})
        };
        let main = attributes(&deployments, "", Some("a"));
        let scale = attributes(&deployments, "scale", Some("a"));
        let cases = [
            (json!(["deployments"]), "*", true, false),
            (json!(["deployments/scale"]), "*", false, true),
            // `res/*` takes the resource itself too (upstream's `splitResource`: an empty
            // subresource matches `*`).
            (json!(["deployments/*"]), "*", true, true),
            (json!(["*"]), "*", true, false),
            (json!(["*/*"]), "*", true, true),
            (json!(["*/scale"]), "*", false, true),
            (json!(["deployments"]), "Cluster", false, false),
            (
                json!(["deployments", "deployments/scale"]),
                "Namespaced",
                true,
                true,
            ),
            (json!(["replicasets"]), "*", false, false),
        ];
        for (resources, scope, on_main, on_scale) in cases {
            let r = rule(resources.clone(), scope);
            assert_eq!(rule_matches(&r, &main), on_main, "{resources} {scope}");
            assert_eq!(rule_matches(&r, &scale), on_scale, "{resources} {scope}");
        }
        let create_only = json!({"apiGroups": ["*"], "apiVersions": ["*"],
                                 "operations": ["CREATE"], "resources": ["*"]});
        assert!(!rule_matches(&create_only, &main));
    }

    #[test]
    fn policies_and_bindings_are_checked_as_upstream_validates_them() {
        let fields = |violations: Vec<Violation>| -> Vec<String> {
            violations
                .into_iter()
                .map(|(f, t, m)| format!("{f} {t} {m}"))
                .collect()
        };
        let policy = json!({"spec": {
            "failurePolicy": "Sometimes",
            "matchConstraints": {"resourceRules": []},
            "matchConditions": [{"name": "a", "expression": "true"},
                                {"name": "a", "expression": "object.x >"}],
            "variables": [{"name": "in", "expression": "1"}],
            "validations": [{"expression": "", "message": "two\nlines", "reason": "Teapot"}],
        }});
        let got = fields(policy_violations(&policy));
        assert_eq!(
            got[0],
            "spec.failurePolicy FieldValueNotSupported \"Sometimes\": supported values: \"Fail\", \"Ignore\""
        );
        assert_eq!(
            got[1],
            "spec.matchConstraints.resourceRules FieldValueRequired "
        );
        assert!(
            got[2].starts_with(
                "spec.matchConditions[1].expression FieldValueInvalid \"object.x >\": compilation failed: "
            ),
            "{got:?}"
        );
        assert_eq!(
            got[3..],
            [
                "spec.matchConditions[1].name FieldValueDuplicate \"a\"",
                "spec.variables[0].name FieldValueInvalid \"in\": name is not a valid CEL identifier",
                "spec.validations[0].expression FieldValueRequired expression is not specified",
                "spec.validations[0].message FieldValueInvalid \"two\\nlines\": message must not contain line breaks",
                "spec.validations[0].reason FieldValueNotSupported \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
            ]
        );
        assert_eq!(
            fields(policy_violations(&json!({"spec": {}}))),
            [
                "spec.matchConstraints FieldValueRequired ",
                "spec.validations FieldValueRequired validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations FieldValueRequired validations or auditAnnotations must contain at least one item",
            ]
        );
        let binding = json!({"spec": {
            "paramRef": {"name": "p", "selector": {}},
            "validationActions": ["Deny", "Warn", "Deny"],
        }});
        assert_eq!(
            fields(binding_violations(&binding)),
            [
                "spec.policyName FieldValueRequired ",
                "spec.paramRef.name FieldValueForbidden name and selector are mutually exclusive",
                "spec.paramRef.selector FieldValueForbidden name and selector are mutually exclusive",
                "spec.paramRef.parameterNotFoundAction FieldValueRequired ",
                "spec.validationActions[2] FieldValueDuplicate \"Deny\"",
                "spec.validationActions FieldValueInvalid must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
            ]
        );
    }

    #[test]
    fn constraints_select_by_namespace_and_object_labels_and_exclude_rules() {
        let pods = ResourceDef::namespaced("", "v1", "pods", "Pod");
        let object = json!({"metadata": {"labels": {"app": "web"}}});
        let namespace = json!({"metadata": {"labels": {"env": "prod"}}});
        let mut a = attributes(&pods, "", Some("a"));
        a.object = Some(&object);
        a.namespace_object = Some(&namespace);
        let all = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
                          "resources": ["pods"]}]);
        assert!(resources_match(&json!({"resourceRules": all}), &a));
        assert!(resources_match(
            &json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            &a
        ));
        assert!(!resources_match(
            &json!({"namespaceSelector": {"matchExpressions": [
                {"key": "env", "operator": "NotIn", "values": ["prod"]}]}}),
            &a
        ));
        assert!(!resources_match(
            &json!({"objectSelector": {"matchLabels": {"app": "db"}}}),
            &a
        ));
        // A selector that absent labels would satisfy still needs an object.
        let not_db = json!({"objectSelector": {"matchExpressions": [
            {"key": "app", "operator": "NotIn", "values": ["db"]}]}});
        assert!(resources_match(&not_db, &a));
        a.object = None;
        assert!(!resources_match(&not_db, &a));
        assert!(resources_match(&json!({"objectSelector": {}}), &a));
        assert!(!resources_match(
            &json!({"resourceRules": all, "excludeResourceRules": all}),
            &a
        ));
    }
}

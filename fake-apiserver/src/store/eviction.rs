//! The eviction subresource (`POST pods/<name>/eviction`): a pod deleted only if its
//! disruption budget allows it.
//!
//! Upstream (read in `pkg/registry/core/pod/storage/eviction.go`): a pod that is pending,
//! finished (`Succeeded`, `Failed`) or already being deleted is deleted without looking at
//! budgets. Otherwise the pod's `PodDisruptionBudget`s are those of its namespace whose
//! non-empty selector matches its labels: more than one is a 500; with one, the budget's
//! status (kept by the disruption controller) decides: a status older than the budget
//! (`observedGeneration` below `generation`) is a 429 ("still being processed"), a negative
//! `disruptionsAllowed` or more than 2,000 `disruptedPods` a 403, none allowed a 429 naming
//! the healthy pods needed and present; else the allowance is decremented, the pod recorded
//! in `disruptedPods` (a status write of the budget) and the pod deleted. A pod that is not
//! ready while the budget has its healthy pods is deleted without touching the budget. The
//! fake runs no disruption controller: a test sets budgets' status as that controller would.

use std::collections::BTreeMap;

use informer_core::selector::LabelSelector;
use informer_core::{Status, StatusCause, StatusDetails};
use serde_json::{Value, json};

use super::{DeleteOutcome, Eviction, Part, Store};
use crate::object::{StoredObject, label_selector_text};

/// Upstream's bound on `disruptedPods` (evictions approved and not yet seen by the
/// disruption controller).
const MAX_DISRUPTED_PODS: usize = 2000;

impl Store {
    /// Evicts pod `name` of `namespace` (`res` is the pods resource): deleted if no
    /// disruption budget forbids it, as upstream's eviction subresource decides.
    pub(crate) fn evict(
        &mut self,
        res: usize,
        namespace: &str,
        name: &str,
        eviction: &Eviction,
    ) -> Result<DeleteOutcome, Status> {
        self.managing = None;
        let pod = self.get(res, Some(namespace), name)?;
        let pod_value = pod.to_value();
        let phase = pod_value
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        if matches!(phase, "Succeeded" | "Failed" | "Pending") || pod.is_deleting() {
            // Disrupts nothing a budget counts: deleted at once (a pending pod at the version
            // read, so it cannot have become ready meanwhile).
            let mut preconditions = eviction.preconditions.clone();
            if phase == "Pending" && !pod.is_deleting() {
                preconditions
                    .resource_version
                    .get_or_insert_with(|| pod.resource_version().to_string());
            }
            return self.delete(
                res,
                Some(namespace),
                name,
                &preconditions,
                eviction.propagation,
            );
        }
        let budgets = self.budgets_of(namespace, &pod);
        let budget = match budgets.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            _ => {
                return Err(Status::failure(
                    500,
                    "InternalError",
                    "This pod has more than one PodDisruptionBudget, which the eviction \
                     subresource does not support.",
                ));
            }
        };
        let mut preconditions = eviction.preconditions.clone();
        if let Some((pdb_res, budget)) = budget {
            let value = budget.to_value();
            let count = |field: &str| {
                value
                    .pointer(&format!("/status/{field}"))
                    .and_then(Value::as_i64)
                    .unwrap_or(0)
            };
            let (current, desired) = (count("currentHealthy"), count("desiredHealthy"));
            if !is_ready(&pod_value) && current >= desired && desired > 0 {
                // Not counted as healthy: its deletion leaves the budget's count as it is.
                preconditions
                    .resource_version
                    .get_or_insert_with(|| pod.resource_version().to_string());
            } else {
                self.take_disruption(pdb_res, &budget, &value, name)?;
            }
        }
        self.delete(
            res,
            Some(namespace),
            name,
            &preconditions,
            eviction.propagation,
        )
    }

    /// The disruption budgets of `namespace` whose selector selects `pod` (an empty or
    /// unparsable selector selects nothing), with the budgets' resource.
    fn budgets_of(
        &self,
        namespace: &str,
        pod: &StoredObject,
    ) -> Vec<(usize, std::sync::Arc<StoredObject>)> {
        let Some(pdb_res) = self.find_gvr("policy", "v1", "poddisruptionbudgets") else {
            return Vec::new();
        };
        let labels: &BTreeMap<String, String> = pod.labels();
        self.resources[pdb_res]
            .objects
            .values()
            .filter(|b| b.namespace() == Some(namespace))
            .filter(|b| {
                let text = b
                    .to_value()
                    .pointer("/spec/selector")
                    .map(label_selector_text)
                    .unwrap_or_default();
                !text.is_empty() && LabelSelector::parse(&text).is_ok_and(|s| s.matches(labels))
            })
            .map(|b| (pdb_res, std::sync::Arc::clone(b)))
            .collect()
    }

    /// Checks that `budget` allows one more disruption and takes it: the allowance less one
    /// and the pod in `disruptedPods` (one status write of the budget, unless a dry run).
    fn take_disruption(
        &mut self,
        pdb_res: usize,
        budget: &StoredObject,
        value: &Value,
        pod: &str,
    ) -> Result<(), Status> {
        let budget_name = budget.name().to_owned();
        let status_of = |field: &str| value.pointer(&format!("/status/{field}"));
        let count = |field: &str| status_of(field).and_then(Value::as_i64).unwrap_or(0);
        let generation = value
            .pointer("/metadata/generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if count("observedGeneration") < generation {
            return Err(budget_refusal(
                10,
                format!(
                    "The disruption budget {budget_name} is still being processed by the server."
                ),
            ));
        }
        let allowed = count("disruptionsAllowed");
        let forbidden = |why: &str| {
            let mut s = Status::failure(
                403,
                "Forbidden",
                format!("poddisruptionbudgets.policy {budget_name:?} is forbidden: {why}"),
            );
            s.details = Some(StatusDetails {
                name: budget_name.clone(),
                group: "policy".into(),
                kind: "poddisruptionbudgets".into(),
                ..StatusDetails::default()
            });
            s
        };
        if allowed < 0 {
            return Err(forbidden("pdb disruptions allowed is negative"));
        }
        let disrupted = status_of("disruptedPods")
            .and_then(Value::as_object)
            .map_or(0, |m| m.len());
        if disrupted > MAX_DISRUPTED_PODS {
            return Err(forbidden(
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
            ));
        }
        if allowed == 0 {
            return Err(budget_refusal(
                0,
                format!(
                    "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
                    count("desiredHealthy"),
                    count("currentHealthy")
                ),
            ));
        }
        if self.dry_run {
            return Ok(());
        }
        let now = self.clock.now_rfc3339();
        let mut updated = value.clone();
        let status = updated
            .as_object_mut()
            .map(|o| o.entry("status").or_insert_with(|| json!({})));
        if let Some(Value::Object(status)) = status {
            status.insert("disruptionsAllowed".into(), Value::from(allowed - 1));
            if allowed == 1 {
                set_condition(status, &now);
            }
            let pods = status.entry("disruptedPods").or_insert_with(|| json!({}));
            if let Value::Object(pods) = pods {
                pods.insert(pod.to_owned(), Value::from(now.as_str()));
            }
        }
        self.update_with(
            pdb_res,
            budget.namespace(),
            &budget_name,
            updated,
            Part::Whole,
        )
        .map(|_| ())
    }
}

/// The budget's `DisruptionAllowed` condition once no disruption is left (upstream's
/// `UpdateDisruptionAllowedCondition`).
fn set_condition(status: &mut serde_json::Map<String, Value>, now: &str) {
    let observed = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(Value::from(0));
    let conditions = status
        .entry("conditions")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(conditions) = conditions else {
        return;
    };
    let condition = json!({"type": "DisruptionAllowed", "status": "False",
        "reason": "InsufficientPods", "message": "", "observedGeneration": observed,
        "lastTransitionTime": now});
    match conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("DisruptionAllowed"))
    {
        Some(existing) => {
            if existing.get("status").and_then(Value::as_str) != Some("False") {
                *existing = condition;
            }
        }
        None => conditions.push(condition),
    }
}

/// Upstream's refusal of an eviction a budget forbids: 429 with a `DisruptionBudget` cause.
fn budget_refusal(retry_after_seconds: u32, cause: String) -> Status {
    let mut s = Status::failure(
        429,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    );
    s.details = Some(StatusDetails {
        retry_after_seconds: (retry_after_seconds > 0).then_some(retry_after_seconds),
        causes: vec![StatusCause {
            reason: "DisruptionBudget".into(),
            message: cause,
            field: String::new(),
        }],
        ..StatusDetails::default()
    });
    s
}

/// Whether the pod's `Ready` condition is true.
fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Ready")
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
}

//! [`finalizer`]: a reconcile step with the object's finalizer kept in step.

use std::future::Future;
use std::sync::Arc;

use kube_client::Api;
use kube_client::api::{Patch, PatchParams};
use kube_client::core::Resource;
use serde::de::DeserializeOwned;
use serde_json::json;

use crate::error::map_kube_error;

/// What the reconcile step of [`finalizer`] is asked to do.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object is live and carries the finalizer: bring the world in line with it.
    Apply(Arc<K>),
    /// The object is being deleted and still carries the finalizer: clean up what it owns
    /// outside Kubernetes. Must be idempotent: a failure after part of the work is retried.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalizerError<E: std::error::Error + 'static> {
    /// The apply or cleanup step failed; for a cleanup the finalizer stays, so the object is
    /// not deleted until a later attempt succeeds.
    #[error("the {step} step of {object} failed")]
    Reconcile {
        /// `"apply"` or `"cleanup"`.
        step: &'static str,
        /// The object, `namespace/name`.
        object: String,
        /// The step's error.
        #[source]
        source: E,
    },
    /// Adding or removing the finalizer failed: a conflict (the object changed since the
    /// version the decision was made on: retry), or any other API or transport error.
    #[error("cannot {action} finalizer {finalizer} on {object}")]
    Patch {
        /// `"add"` or `"remove"`.
        action: &'static str,
        /// The finalizer.
        finalizer: String,
        /// The object, `namespace/name`.
        object: String,
        /// Why, classified ([`informer_core::Error::status`] gives the API status, 409 for a
        /// conflict).
        #[source]
        source: Box<informer_core::Error>,
    },
    /// The object has no name, so it cannot be patched (it did not come from the API server).
    #[error("the object has no name: its finalizers cannot be changed")]
    UnnamedObject,
    /// The finalizer's name is not a qualified name (`example.com/cleanup`, as the API server
    /// requires of finalizers other than its own).
    #[error("invalid finalizer name {name:?}: {reason}")]
    InvalidFinalizer {
        /// The name given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Runs `reconcile` for `obj` with its finalizer `finalizer_name` kept in step, so that a
/// cleanup is never missed, even for a deletion made while no controller ran. `api` must
/// address `obj`: `Api::namespaced` in the object's namespace for a namespaced kind,
/// `Api::all` for a cluster-scoped one.
///
/// The rules (kube-runtime's `finalizer`, same names, one difference below):
///
/// | the object                                   | what `finalizer` does                                      | returns |
/// |----------------------------------------------|------------------------------------------------------------|---------|
/// | live, without the finalizer                  | adds it, then runs `reconcile(Apply(obj))` with the object as patched | its answer |
/// | live, with the finalizer                     | runs `reconcile(Apply(obj))`                               | its answer |
/// | being deleted, with the finalizer            | runs `reconcile(Cleanup(obj))`; if it succeeds, removes the finalizer (the API server then deletes the object) | its answer |
/// | being deleted, without the finalizer         | nothing (someone else's finalizers hold it)                | `Ok(None)` |
///
/// The finalizer is added and removed with a JSON merge patch of `metadata.finalizers` that
/// carries the object's `resourceVersion`: the API server applies it only to the version the
/// decision was made on, and answers 409 Conflict otherwise ([`FinalizerError::Patch`], whose
/// [`informer_core::Error`] says so): retry, the object's newer version is on its way to the
/// cache. Other finalizers on the object are kept as they are.
///
/// Returns `Ok(Some(answer))` with `reconcile`'s answer, or `Ok(None)` when there was
/// nothing to do. Unlike kube-runtime's, which returns after adding the finalizer and waits
/// for the object's next event, the apply runs in the same call: the finalizer's update does
/// not change `metadata.generation`, so a controller filtering updates by generation
/// (`informer_controller::generation_changed`) would never hear of it.
///
/// ```no_run
/// # async fn reconcile(obj: std::sync::Arc<k8s_openapi::api::core::v1::ConfigMap>, client: kube_client::Client)
/// #     -> Result<(), Box<dyn std::error::Error>> {
/// use informer_kube::{FinalizerEvent, finalizer};
/// use kube_client::Api;
///
/// let namespace = obj.metadata.namespace.clone().unwrap_or_default();
/// let api = Api::namespaced(client, &namespace);
/// let outcome = finalizer(&api, "example.com/cleanup", obj, |event| async move {
///     match event {
///         FinalizerEvent::Apply(cm) => { /* create what the object asks for */ }
///         FinalizerEvent::Cleanup(cm) => { /* delete it again */ }
///     }
///     Ok::<_, std::io::Error>(())
/// })
/// .await?;
/// # let _ = outcome; Ok(()) }
/// ```
pub async fn finalizer<K, F, Fut, T, E>(
    api: &Api<K>,
    finalizer_name: &str,
    obj: Arc<K>,
    reconcile: F,
) -> Result<Option<T>, FinalizerError<E>>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    E: std::error::Error + 'static,
{
    check_name(finalizer_name)?;
    let meta = obj.meta();
    let name = meta
        .name
        .clone()
        .filter(|n| !n.is_empty())
        .ok_or(FinalizerError::UnnamedObject)?;
    let object = match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.clone(),
    };
    let finalizers: Vec<String> = meta.finalizers.clone().unwrap_or_default();
    let ours = finalizers.iter().any(|f| f == finalizer_name);
    let deleting = meta.deletion_timestamp.is_some();
    let resource_version = meta.resource_version.clone();
    let patch = async |action: &'static str, finalizers: Vec<String>| {
        // The resourceVersion makes the patch conditional: it applies to the version seen.
        let body = json!({
            "metadata": {"finalizers": finalizers, "resourceVersion": resource_version},
        });
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|e| FinalizerError::Patch {
                action,
                finalizer: finalizer_name.to_owned(),
                object: object.clone(),
                source: Box::new(map_kube_error(
                    format!("patching the finalizers of {object}"),
                    e,
                )),
            })
    };
    match (deleting, ours) {
        (false, ours) => {
            let obj = if ours {
                obj
            } else {
                let mut with = finalizers;
                with.push(finalizer_name.to_owned());
                // Applied now, to the object as patched: the finalizer's own update may never
                // reconcile it again (a controller filtering updates by generation drops it).
                Arc::new(patch("add", with).await?)
            };
            reconcile(FinalizerEvent::Apply(obj))
                .await
                .map(Some)
                .map_err(|source| FinalizerError::Reconcile {
                    step: "apply",
                    object: object.clone(),
                    source,
                })
        }
        (true, true) => {
            let answer = reconcile(FinalizerEvent::Cleanup(obj))
                .await
                .map_err(|source| FinalizerError::Reconcile {
                    step: "cleanup",
                    object: object.clone(),
                    source,
                })?;
            let without = finalizers
                .into_iter()
                .filter(|f| f != finalizer_name)
                .collect();
            patch("remove", without).await?;
            Ok(Some(answer))
        }
        (true, false) => Ok(None),
    }
}

/// The API server's rule for finalizer names (other than its own `kubernetes` and
/// `foregroundDeletion`/`orphan`): a qualified name with a domain prefix.
fn check_name<E: std::error::Error + 'static>(name: &str) -> Result<(), FinalizerError<E>> {
    let invalid = |reason| FinalizerError::InvalidFinalizer {
        name: name.to_owned(),
        reason,
    };
    let Some((prefix, rest)) = name.split_once('/') else {
        return Err(invalid(
            "it needs a domain prefix, as in example.com/cleanup",
        ));
    };
    if prefix.is_empty() || rest.is_empty() || rest.contains('/') {
        return Err(invalid("it must be <domain>/<name>"));
    }
    if prefix.len() > 253 || rest.len() > 63 {
        return Err(invalid(
            "the domain is at most 253 characters, the name at most 63",
        ));
    }
    let dns = |s: &str| {
        s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
    };
    if !dns(prefix) {
        return Err(invalid("the domain must be a lowercase DNS subdomain"));
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge(rest.chars().next())
        || !edge(rest.chars().last())
        || !rest
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(invalid(
            "the name must be alphanumeric, '-', '_' or '.', starting and ending alphanumeric",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finalizer_names_follow_the_api_servers_rule() {
        for good in ["example.com/cleanup", "a.b/c_d.e-f", "x/Y9"] {
            assert!(check_name::<std::io::Error>(good).is_ok(), "{good}");
        }
        for bad in [
            "cleanup",
            "/cleanup",
            "example.com/",
            "example.com/a/b",
            "Example.com/cleanup",
            "example.com/-x",
            "exa_mple.com/x",
        ] {
            assert!(
                matches!(
                    check_name::<std::io::Error>(bad),
                    Err(FinalizerError::InvalidFinalizer { .. })
                ),
                "{bad}"
            );
        }
    }
}

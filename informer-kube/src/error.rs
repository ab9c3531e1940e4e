//! This crate's errors, and the mapping of kube-client's errors to the core classification.

use std::path::PathBuf;

use informer_core::Status;

/// A `Result` whose error defaults to [`KubeError`].
pub type Result<T, E = KubeError> = std::result::Result<T, E>;

/// What can go wrong setting informers up over kube-client. (Failures of lists and watches
/// are `informer_core::Error`s, handled by the reflector.)
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KubeError {
    /// No Kubernetes configuration was found (neither a kubeconfig nor the in-cluster
    /// environment), or it could not be read.
    #[error("cannot find a Kubernetes configuration (kubeconfig or in-cluster)")]
    Config {
        /// Why.
        #[source]
        source: kube_client::config::InferConfigError,
    },
    /// A kubeconfig file could not be read or used.
    #[error("cannot use the kubeconfig {}", path.display())]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: kube_client::config::KubeconfigError,
    },
    /// The client could not be built from the configuration (for example TLS settings).
    #[error("cannot build a Kubernetes client")]
    Client {
        /// Why.
        #[source]
        source: kube_client::Error,
    },
    /// Discovery could not find the resource serving a kind.
    #[error("cannot discover the resource of {gvk}")]
    Discovery {
        /// The group/version/kind asked for.
        gvk: String,
        /// Why (an API error, a transport error, or a kind the group version does not serve).
        #[source]
        source: informer_core::Error,
    },
    /// A namespace was given for a cluster-scoped resource.
    #[error("{resource} is cluster-scoped: it cannot be listed in namespace {namespace:?}")]
    ClusterScoped {
        /// The resource.
        resource: String,
        /// The namespace given.
        namespace: String,
    },
    /// The informer factory refused (it was shut down, or the informer's configuration is
    /// invalid).
    #[error("cannot create the informer")]
    Factory {
        /// Why.
        #[source]
        source: informer::FactoryError,
    },
}

/// Maps a kube-client error to the core classification, with `context` saying what was being
/// done: an API answer keeps its `Status` ([`Error::Api`](informer_core::Error::Api)), a body
/// that does not decode is a decode error, anything else a transport error.
pub fn map_kube_error(
    context: impl Into<String>,
    error: kube_client::Error,
) -> informer_core::Error {
    match error {
        kube_client::Error::Api(status) => informer_core::Error::api(context, core_status(&status)),
        kube_client::Error::SerdeError(e) => informer_core::Error::decode(context, b"", e),
        other => informer_core::Error::transport(context, other),
    }
}

/// kube's `Status` as the core's (same wire format).
fn core_status(status: &kube_client::core::Status) -> Status {
    serde_json::to_vec(status)
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .unwrap_or_else(|| {
            Status::failure(status.code, status.reason.clone(), status.message.clone())
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_core::ErrorClass;

    #[test]
    fn kube_api_errors_keep_their_status() {
        let status: kube_client::core::Status = serde_json::from_str(
            r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down",
                "reason":"TooManyRequests","code":429,"details":{"retryAfterSeconds":4,
                "causes":[{"reason":"X","message":"y"}]}}"#,
        )
        .unwrap();
        let err = map_kube_error("listing pods", kube_client::Error::Api(Box::new(status)));
        assert_eq!(err.class(), ErrorClass::Throttled);
        assert_eq!(err.retry_after(), Some(std::time::Duration::from_secs(4)));
        let details = err.status().and_then(|s| s.details.clone()).unwrap();
        assert_eq!(details.causes[0].reason, "X");
        assert!(err.to_string().contains("listing pods"));

        let serde = serde_json::from_str::<u8>("x").unwrap_err();
        let err = map_kube_error("decoding", kube_client::Error::SerdeError(serde));
        assert_eq!(err.class(), ErrorClass::Decode);
        let err = map_kube_error("connecting", kube_client::Error::TlsRequired);
        assert_eq!(err.class(), ErrorClass::Transport);
    }
}

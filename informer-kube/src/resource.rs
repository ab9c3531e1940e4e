//! Naming and finding resources: the name a factory files a resource under, and kube's
//! discovery. A leaf module: the factory and the lister-watcher both use it.

use kube_client::Client;
use kube_client::core::{ApiResource, GroupVersionKind};

use crate::KubeError;

/// The name a factory files a resource under: `pods` for the core group,
/// `<plural>.<version>.<group>` otherwise (`deployments.v1.apps`).
pub fn resource_name(resource: &ApiResource) -> String {
    if resource.group.is_empty() {
        resource.plural.clone()
    } else {
        format!(
            "{}.{}.{}",
            resource.plural, resource.version, resource.group
        )
    }
}

/// Finds the resource serving `gvk` with kube's discovery (one request for its group version).
pub(crate) async fn discover(
    client: &Client,
    gvk: &GroupVersionKind,
) -> crate::Result<(ApiResource, kube_client::discovery::ApiCapabilities)> {
    kube_client::discovery::pinned_kind(client, gvk)
        .await
        .map_err(|e| {
            let name = format!("{}/{}/{}", gvk.group, gvk.version, gvk.kind);
            KubeError::Discovery {
                source: crate::map_kube_error(format!("discovering {name}"), e),
                gvk: name,
            }
        })
}

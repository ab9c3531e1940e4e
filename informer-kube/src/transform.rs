//! Ready-made transforms for [`InformerConfig::transform`](informer::InformerConfig::transform).

use std::sync::Arc;

use informer::reflector::Transform;
use kube_client::core::Resource;

/// A transform that drops `metadata.managedFields` before objects are cached: the
/// server-side-apply bookkeeping that nothing but `kubectl apply` reads, and a large share of
/// a typical object's size (about 40% of a pod's JSON). Everything an informer relies on
/// (name, namespace, UID, resourceVersion, labels, annotations) is kept.
///
/// ```
/// use informer::InformerConfig;
/// use informer_kube::drop_managed_fields;
/// use k8s_openapi::api::core::v1::Pod;
///
/// let config = InformerConfig::<Pod> {
///     transform: Some(drop_managed_fields()),
///     ..InformerConfig::default()
/// };
/// # let _ = config;
/// ```
pub fn drop_managed_fields<K: Resource>() -> Transform<K> {
    Arc::new(|mut object: K| {
        object.meta_mut().managed_fields = None;
        object
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};

    #[test]
    fn managed_fields_go_and_identity_stays() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("n".into()),
                uid: Some("u".into()),
                resource_version: Some("5".into()),
                managed_fields: Some(vec![ManagedFieldsEntry::default()]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let out = drop_managed_fields::<Pod>()(pod);
        assert_eq!(out.metadata.managed_fields, None);
        assert_eq!(out.metadata.name.as_deref(), Some("a"));
        assert_eq!(out.metadata.uid.as_deref(), Some("u"));
        assert_eq!(out.metadata.resource_version.as_deref(), Some("5"));
    }
}

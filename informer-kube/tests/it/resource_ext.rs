//! `informer::Object` and `kube::ResourceExt` in scope together: their accessors have
//! distinct names (`object_namespace` beside `namespace`, ...), so kube-rs code that imports
//! `ResourceExt` everywhere can name `Object` in its bounds without E0034 ("multiple
//! applicable items"). This module compiling is most of the test.

use std::collections::BTreeMap;

use informer::Object;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::ResourceExt;

/// Generic code bound by `Object`, calling kube's accessors on the same value.
fn described<K: Object + kube_client::Resource>(obj: &K) -> (Option<String>, Option<String>) {
    (
        obj.object_namespace().map(str::to_owned),
        obj.namespace(), // ResourceExt's
    )
}

#[test]
fn object_and_resource_ext_import_together() {
    let pod = Pod {
        metadata: ObjectMeta {
            name: Some("web-0".into()),
            namespace: Some("prod".into()),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
            labels: Some(BTreeMap::from([("app".to_owned(), "web".to_owned())])),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    };
    // kube's accessors.
    assert_eq!(pod.name_any(), "web-0");
    assert_eq!(pod.namespace().as_deref(), Some("prod"));
    assert_eq!(pod.uid().as_deref(), Some("u1"));
    assert_eq!(pod.resource_version().as_deref(), Some("7"));
    assert_eq!(pod.labels()["app"], "web");
    // informer's, on the same value, in the same scope.
    assert_eq!(pod.object_name(), Some("web-0"));
    assert_eq!(pod.object_namespace(), Some("prod"));
    assert_eq!(pod.object_uid(), Some("u1"));
    assert_eq!(pod.object_resource_version(), Some("7"));
    assert_eq!(pod.object_labels()["app"], "web");
    assert!(pod.object_annotations().is_empty());
    assert_eq!(
        described(&pod),
        (Some("prod".to_owned()), Some("prod".to_owned()))
    );
}

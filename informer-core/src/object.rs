//! The object abstraction: what every cached Kubernetes object must tell us about itself.

use std::collections::BTreeMap;

/// An empty map, returned by the accessors of objects that have no labels or annotations.
static EMPTY_MAP: BTreeMap<String, String> = BTreeMap::new();

/// A Kubernetes object as the informer machinery sees it: only its metadata matters.
///
/// Every accessor borrows from the object; nothing is copied. With the `kube` feature this trait is
/// implemented for every `kube_core::Resource` (all k8s-openapi types, kube-derive custom
/// resources, `DynamicObject`, `PartialObjectMeta`), so most users never implement it by hand.
///
/// # Contract
///
/// Implementers guarantee that:
/// - the accessors are cheap (a field read) and consistent: calling one twice on the same object
///   returns the same answer;
/// - `resource_version` changes whenever the object's content changes (the API server guarantees
///   this for objects it returns, and the informer relies on it to skip unchanged objects);
/// - an empty string is reported as `None` by [`Object::object_name`], [`Object::object_namespace`],
///   [`Object::object_uid`] and [`Object::object_resource_version`]. An empty namespace means cluster-scoped.
///
/// Callers may assume the object is never mutated once it is shared as `Arc<K>`.
///
/// # Names
///
/// The accessors are `object_name`, `object_namespace`, ...: kube-rs code imports
/// `kube::ResourceExt` nearly everywhere, whose `namespace()`, `uid()`, `labels()` ... would
/// otherwise be ambiguous (E0034) on every kube type in any module that names `Object`.
pub trait Object: Send + Sync + 'static {
    /// `metadata.name`, or `None` when absent or empty (for example a `generateName`-only object
    /// that was never created).
    fn object_name(&self) -> Option<&str>;
    /// `metadata.namespace`, or `None` for cluster-scoped objects.
    fn object_namespace(&self) -> Option<&str>;
    /// `metadata.uid`, which distinguishes two objects that had the same name at different times.
    fn object_uid(&self) -> Option<&str>;
    /// `metadata.resourceVersion`, an opaque string: compare it only for equality.
    fn object_resource_version(&self) -> Option<&str>;
    /// `metadata.labels` (empty when absent).
    fn object_labels(&self) -> &BTreeMap<String, String>;
    /// `metadata.annotations` (empty when absent).
    fn object_annotations(&self) -> &BTreeMap<String, String>;
    /// `metadata.ownerReferences`, borrowed from the object, in their order.
    ///
    /// Provided (answers none) so that object types written before it keep compiling;
    /// implemented for every `kube_core::Resource` (with the `kube` feature) and for
    /// `informer_testing::JsonObject`. A type of your own should implement it if controllers
    /// map its objects to their owners (`owns`) or index them by owner
    /// ([`owner_uid_index_func`](crate::owner_uid_index_func)).
    fn object_owners(&self) -> Vec<OwnerRef<'_>> {
        Vec::new()
    }
    /// The owner reference with `controller: true`, if any (the API server allows at most
    /// one): the object's managing controller, as Kubernetes' garbage collector and
    /// controllers read it.
    fn object_controller(&self) -> Option<OwnerRef<'_>> {
        self.object_owners()
            .into_iter()
            .find(|owner| owner.controller)
    }
    /// `metadata.generation`: the sequence number of the object's desired state, which the API
    /// server starts at 1 and increments when that state changes (for custom resources and
    /// the built-in kinds that track it: a spec change, not a status or label change); `None`
    /// when absent.
    ///
    /// Provided (answers `None`) so that object types written before it keep compiling;
    /// implemented for every `kube_core::Resource` (with the `kube` feature) and for
    /// `informer_testing::JsonObject`.
    fn object_generation(&self) -> Option<i64> {
        None
    }
}

/// One entry of an object's `metadata.ownerReferences`, borrowed from the object: which object
/// owns it. An owner is in the dependent's namespace, or cluster-scoped; the reference does
/// not say which (the owner's kind does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct OwnerRef<'a> {
    /// `apiVersion` of the owner (`apps/v1`).
    pub api_version: &'a str,
    /// `kind` of the owner (`ReplicaSet`).
    pub kind: &'a str,
    /// `name` of the owner.
    pub name: &'a str,
    /// `uid` of the owner: tells it from an earlier owner of the same name.
    pub uid: &'a str,
    /// `controller`: whether the owner is the object's managing controller (absent: false).
    pub controller: bool,
}

impl<'a> OwnerRef<'a> {
    /// A reference that is not the controller's (add [`controller`](Self::controller) with
    /// [`with_controller`](Self::with_controller)).
    pub fn new(api_version: &'a str, kind: &'a str, name: &'a str, uid: &'a str) -> Self {
        Self {
            api_version,
            kind,
            name,
            uid,
            controller: false,
        }
    }

    /// The same reference, with `controller` set.
    pub fn with_controller(mut self, controller: bool) -> Self {
        self.controller = controller;
        self
    }

    /// The API group of the owner: the part of `apiVersion` before `/`, empty for the core
    /// group (`v1`).
    pub fn group(&self) -> &'a str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }
}

/// Turns `Some("")` into `None`, as the [`Object`] contract asks.
pub fn non_empty(value: Option<&str>) -> Option<&str> {
    value.filter(|v| !v.is_empty())
}

/// Returns `map`, or a shared empty map when it is `None`.
pub fn map_or_empty(map: Option<&BTreeMap<String, String>>) -> &BTreeMap<String, String> {
    map.unwrap_or(&EMPTY_MAP)
}

#[cfg(feature = "kube")]
impl<K> Object for K
where
    K: kube_core::Resource + Send + Sync + 'static,
{
    fn object_name(&self) -> Option<&str> {
        non_empty(self.meta().name.as_deref())
    }

    fn object_namespace(&self) -> Option<&str> {
        non_empty(self.meta().namespace.as_deref())
    }

    fn object_uid(&self) -> Option<&str> {
        non_empty(self.meta().uid.as_deref())
    }

    fn object_resource_version(&self) -> Option<&str> {
        non_empty(self.meta().resource_version.as_deref())
    }

    fn object_labels(&self) -> &BTreeMap<String, String> {
        map_or_empty(self.meta().labels.as_ref())
    }

    fn object_annotations(&self) -> &BTreeMap<String, String> {
        map_or_empty(self.meta().annotations.as_ref())
    }

    fn object_owners(&self) -> Vec<OwnerRef<'_>> {
        self.meta()
            .owner_references
            .iter()
            .flatten()
            .map(|owner| {
                OwnerRef::new(&owner.api_version, &owner.kind, &owner.name, &owner.uid)
                    .with_controller(owner.controller == Some(true))
            })
            .collect()
    }

    fn object_generation(&self) -> Option<i64> {
        self.meta().generation
    }
}

#[cfg(all(test, feature = "kube"))]
mod kube_tests {
    use super::{Object, OwnerRef};
    use k8s_openapi::api::core::v1::{ConfigMap, Pod};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use kube_core::{ApiResource, DynamicObject, GroupVersionKind};

    #[test]
    fn k8s_openapi_types_are_objects() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web-0".into()),
                namespace: Some("prod".into()),
                uid: Some("u1".into()),
                resource_version: Some("42".into()),
                generation: Some(3),
                labels: Some([("app".to_string(), "web".to_string())].into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        assert_eq!(Object::object_generation(&pod), Some(3));
        assert_eq!(Object::object_generation(&ConfigMap::default()), None);
        assert_eq!(pod.object_name(), Some("web-0"));
        assert_eq!(Object::object_namespace(&pod), Some("prod"));
        assert_eq!(Object::object_uid(&pod), Some("u1"));
        assert_eq!(Object::object_resource_version(&pod), Some("42"));
        assert_eq!(
            Object::object_labels(&pod).get("app").map(String::as_str),
            Some("web")
        );
        assert!(Object::object_annotations(&pod).is_empty());
    }

    #[test]
    fn empty_strings_read_as_absent() {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(String::new()),
                namespace: Some(String::new()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        };
        assert_eq!(Object::object_name(&cm), None);
        assert_eq!(Object::object_namespace(&cm), None);
    }

    #[test]
    fn owner_references_are_borrowed_in_order_with_the_controller_flag() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let owner = |kind: &str, name: &str, controller: Option<bool>| OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            controller,
            block_owner_deletion: None,
        };
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web-0".into()),
                owner_references: Some(vec![
                    owner("StatefulSet", "other", Some(false)),
                    owner("ReplicaSet", "web-5d4f", Some(true)),
                ]),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let owners = pod.object_owners();
        assert_eq!(
            owners,
            [
                OwnerRef::new("apps/v1", "StatefulSet", "other", "uid-other"),
                OwnerRef::new("apps/v1", "ReplicaSet", "web-5d4f", "uid-web-5d4f")
                    .with_controller(true),
            ]
        );
        assert_eq!(owners[1].group(), "apps");
        assert_eq!(pod.object_controller().map(|o| o.name), Some("web-5d4f"));
        assert!(Pod::default().object_owners().is_empty());
        assert_eq!(Pod::default().object_controller(), None);
    }

    #[test]
    fn dynamic_objects_are_objects() {
        let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Widget"));
        let obj = DynamicObject::new("w", &ar).within("ns");
        assert_eq!(Object::object_name(&obj), Some("w"));
        assert_eq!(Object::object_namespace(&obj), Some("ns"));
    }
}

//! Building index functions and index maps without casts: [`index_fn`], [`indexers`], and the
//! owner indices ([`owner_uid_index_func`], [`controller_uid_index_func`]).
//!
//! An [`IndexFunc`] is an `Arc<dyn Fn(&K) -> Vec<String>>`; a closure wrapped in `Arc::new` has
//! its own type, which a map of index functions only takes after `as IndexFunc<K>` (or
//! `as _`). [`index_fn`] makes the trait object, and accepts any closure returning owned
//! values (`Vec<String>`, `Option<String>`, an array...).

use std::sync::Arc;

use crate::object::Object;
use crate::store::{IndexFunc, Indexers};

/// An [`IndexFunc`] from a closure returning the object's index values: anything that
/// iterates over owned strings (`Vec<String>`, `Option<String>`, `[String; 2]`...). The values
/// must not borrow from the object (collect them, or `to_owned` them).
///
/// ```
/// use informer_core::{IndexFunc, Object, index_fn};
/// # use informer_core::OwnerRef;
/// # use std::collections::BTreeMap;
/// # struct Pod { labels: BTreeMap<String, String> }
/// # impl Object for Pod {
/// #     fn object_name(&self) -> Option<&str> { Some("web-0") }
/// #     fn object_namespace(&self) -> Option<&str> { Some("prod") }
/// #     fn object_uid(&self) -> Option<&str> { None }
/// #     fn object_resource_version(&self) -> Option<&str> { None }
/// #     fn object_labels(&self) -> &BTreeMap<String, String> { &self.labels }
/// #     fn object_annotations(&self) -> &BTreeMap<String, String> { &self.labels }
/// # }
///
/// // One value or none.
/// let by_app: IndexFunc<Pod> = index_fn(|pod: &Pod| pod.object_labels().get("app").cloned());
/// // Several values.
/// let by_label_key = index_fn(|pod: &Pod| pod.object_labels().keys().cloned().collect::<Vec<_>>());
/// let pod = Pod { labels: [("app".to_owned(), "web".to_owned())].into() };
/// assert_eq!(by_app(&pod), ["web"]);
/// assert_eq!(by_label_key(&pod), ["app"]);
/// ```
pub fn index_fn<K, I>(f: impl Fn(&K) -> I + Send + Sync + 'static) -> IndexFunc<K>
where
    I: IntoIterator,
    I::Item: Into<String>,
{
    Arc::new(move |obj: &K| f(obj).into_iter().map(Into::into).collect())
}

/// Named index functions from `(name, function)` pairs, names as `&str` or `String`:
/// `indexers([("app", label_index_func("app")), ("owner", owner_uid_index_func())])`.
///
/// ```
/// use informer_core::{Indexers, label_index_func, indexers, owner_uid_index_func};
/// # use informer_core::Object;
/// # use std::collections::BTreeMap;
/// # struct Pod { labels: BTreeMap<String, String> }
/// # impl Object for Pod {
/// #     fn object_name(&self) -> Option<&str> { Some("web-0") }
/// #     fn object_namespace(&self) -> Option<&str> { Some("prod") }
/// #     fn object_uid(&self) -> Option<&str> { None }
/// #     fn object_resource_version(&self) -> Option<&str> { None }
/// #     fn object_labels(&self) -> &BTreeMap<String, String> { &self.labels }
/// #     fn object_annotations(&self) -> &BTreeMap<String, String> { &self.labels }
/// # }
///
/// let map: Indexers<Pod> = indexers([
///     ("app", label_index_func("app")),
///     ("owner", owner_uid_index_func()),
/// ]);
/// assert_eq!(map.len(), 2);
/// ```
pub fn indexers<K, N: Into<String>>(
    pairs: impl IntoIterator<Item = (N, IndexFunc<K>)>,
) -> Indexers<K> {
    pairs
        .into_iter()
        .map(|(name, f)| (name.into(), f))
        .collect()
}

/// An index function over the UIDs of every owner of an object
/// ([`Object::object_owners`]): `by_index(name, owner_uid)` answers "the objects this owner
/// owns". UIDs, not names: an owner deleted and re-created under the same name is another
/// owner, and a UID needs no namespace (owners may be cluster-scoped).
pub fn owner_uid_index_func<K: Object>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        obj.object_owners()
            .iter()
            .filter(|owner| !owner.uid.is_empty())
            .map(|owner| owner.uid.to_owned())
            .collect()
    })
}

/// An index function over the UID of an object's controller, the owner reference with
/// `controller: true` ([`Object::object_controller`]): `by_index(name, uid)` answers "the
/// objects this owner manages" (the pods of a ReplicaSet, the ReplicaSets of a Deployment).
pub fn controller_uid_index_func<K: Object>() -> IndexFunc<K> {
    Arc::new(|obj: &K| {
        obj.object_controller()
            .filter(|owner| !owner.uid.is_empty())
            .map(|owner| owner.uid.to_owned())
            .into_iter()
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::object::OwnerRef;

    /// An object whose owners are (kind, uid, controller) triples.
    struct Owned(
        Vec<(&'static str, &'static str, bool)>,
        BTreeMap<String, String>,
    );

    impl Object for Owned {
        fn object_name(&self) -> Option<&str> {
            Some("x")
        }
        fn object_namespace(&self) -> Option<&str> {
            None
        }
        fn object_uid(&self) -> Option<&str> {
            None
        }
        fn object_resource_version(&self) -> Option<&str> {
            None
        }
        fn object_labels(&self) -> &BTreeMap<String, String> {
            &self.1
        }
        fn object_annotations(&self) -> &BTreeMap<String, String> {
            &self.1
        }
        fn object_owners(&self) -> Vec<OwnerRef<'_>> {
            self.0
                .iter()
                .map(|(kind, uid, controller)| {
                    OwnerRef::new("v1", kind, "owner", uid).with_controller(*controller)
                })
                .collect()
        }
    }

    #[test]
    fn owner_indices_file_objects_under_owner_uids() {
        let obj = Owned(
            vec![("A", "u1", false), ("B", "u2", true), ("C", "", false)],
            BTreeMap::new(),
        );
        assert_eq!(owner_uid_index_func::<Owned>()(&obj), ["u1", "u2"]);
        assert_eq!(controller_uid_index_func::<Owned>()(&obj), ["u2"]);
        let orphan = Owned(vec![("A", "u1", false)], BTreeMap::new());
        assert!(controller_uid_index_func::<Owned>()(&orphan).is_empty());
    }

    #[test]
    fn index_fn_takes_options_vectors_and_arrays() {
        let obj = Owned(Vec::new(), [("k".to_owned(), "v".to_owned())].into());
        let none: IndexFunc<Owned> = index_fn(|_: &Owned| None::<String>);
        let one = index_fn(|o: &Owned| o.object_labels().get("k").cloned());
        let two = index_fn(|_: &Owned| ["a", "b"]);
        assert!(none(&obj).is_empty());
        assert_eq!(one(&obj), ["v"]);
        assert_eq!(two(&obj), ["a", "b"]);
        let map = indexers([("one", one), ("two", two)]);
        assert_eq!(map.len(), 2);
        assert_eq!(map["two"](&obj), ["a", "b"]);
    }
}

//! Ready-made filters for [`Controller::reconcile_updates_if`](crate::Controller::reconcile_updates_if).

use informer::Object;

/// Whether an update changed the object's desired state: its `metadata.generation` moved,
/// which the API server does for a spec change but not for a status, label or annotation
/// change (deployments count annotations too; see [`Object::object_generation`]). With it a
/// controller that writes its objects' status is not woken by its own writes.
///
/// An update where either state has no generation (a kind that does not track one, such as a
/// `ConfigMap`) passes: nothing says it is unchanged. (controller-runtime's
/// `GenerationChangedPredicate` drops such updates, since both read as 0.)
///
/// ```
/// use informer_controller::generation_changed;
/// use informer_testing::JsonObject;
///
/// let at = |generation: i64| {
///     let mut object = JsonObject::new(Some("prod"), "web");
///     object.metadata.other.insert("generation".into(), generation.into());
///     object
/// };
/// assert!(generation_changed(&at(1), &at(2)));
/// assert!(!generation_changed(&at(2), &at(2)));
/// let untracked = JsonObject::new(Some("prod"), "web");
/// assert!(generation_changed(&untracked, &untracked));
/// ```
pub fn generation_changed<K: Object>(old: &K, new: &K) -> bool {
    match (old.object_generation(), new.object_generation()) {
        (Some(before), Some(after)) => before != after,
        _ => true,
    }
}

//! Handlers from closures: `handler().on_add(..).on_update(..).on_delete(..)`.

use std::fmt;
use std::sync::Arc;

use informer_core::{Object, ObjectOrTombstone, ResourceEventHandler};

type OnAdd<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;
type OnUpdate<K> = Box<dyn FnMut(&Arc<K>, &Arc<K>) + Send>;
type OnDelete<K> = Box<dyn FnMut(&ObjectOrTombstone<K>) + Send>;
type OnChange<K> = Box<dyn FnMut(&Arc<K>) + Send>;

/// A [`ResourceEventHandler`] made of closures; methods without a closure do nothing.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use informer::handler;
/// use informer_testing::JsonObject;
///
/// let adds = Arc::new(AtomicUsize::new(0));
/// let counter = Arc::clone(&adds);
/// let h = handler::<JsonObject>()
///     .on_add(move |_obj, _initial| {
///         counter.fetch_add(1, Ordering::Relaxed);
///     })
///     .on_update(|old, new| println!("{:?} -> {:?}", old.metadata.resource_version, new.metadata.resource_version))
///     .on_delete(|obj| println!("deleted {:?} (tombstone: {})", obj.key(), obj.is_tombstone()));
/// # drop(h);
/// ```
///
/// A controller that only needs to know *which* object changed (to enqueue its key, say)
/// gives one closure for every kind of event with [`on_change`](ClosureHandler::on_change).
pub struct ClosureHandler<K> {
    on_add: Option<OnAdd<K>>,
    on_update: Option<OnUpdate<K>>,
    on_delete: Option<OnDelete<K>>,
    on_change: Option<OnChange<K>>,
}

/// Starts a [`ClosureHandler`] with no closures.
pub fn handler<K: Object>() -> ClosureHandler<K> {
    ClosureHandler {
        on_add: None,
        on_update: None,
        on_delete: None,
        on_change: None,
    }
}

impl<K: Object> ClosureHandler<K> {
    /// Called for each new object, with whether it belongs to the initial list.
    pub fn on_add(mut self, f: impl FnMut(&Arc<K>, bool) + Send + 'static) -> Self {
        self.on_add = Some(Box::new(f));
        self
    }

    /// Called with the old and new state of each changed (or resynced) object.
    pub fn on_update(mut self, f: impl FnMut(&Arc<K>, &Arc<K>) + Send + 'static) -> Self {
        self.on_update = Some(Box::new(f));
        self
    }

    /// Called with the final state, or a tombstone, of each deleted object.
    pub fn on_delete(mut self, f: impl FnMut(&ObjectOrTombstone<K>) + Send + 'static) -> Self {
        self.on_delete = Some(Box::new(f));
        self
    }

    /// Called for every event with the object it is about: the new object of an add, the new
    /// state of an update, the final state (or the tombstone's last known state) of a delete.
    /// Runs after the closure for that kind of event, if there is one.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use informer::handler;
    /// use informer_testing::JsonObject;
    /// use parking_lot::Mutex;
    ///
    /// let changed = Arc::new(Mutex::new(Vec::new()));
    /// let keys = Arc::clone(&changed);
    /// let h = handler::<JsonObject>().on_change(move |obj| keys.lock().push(obj.metadata.name.clone()));
    /// # drop(h);
    /// ```
    pub fn on_change(mut self, f: impl FnMut(&Arc<K>) + Send + 'static) -> Self {
        self.on_change = Some(Box::new(f));
        self
    }
}

impl<K: Object> ResourceEventHandler<K> for ClosureHandler<K> {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &mut self.on_add {
            f(obj, is_in_initial_list);
        }
        if let Some(f) = &mut self.on_change {
            f(obj);
        }
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &mut self.on_update {
            f(old, new);
        }
        if let Some(f) = &mut self.on_change {
            f(new);
        }
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<K>) {
        if let Some(f) = &mut self.on_delete {
            f(obj);
        }
        if let Some(f) = &mut self.on_change {
            f(obj.object());
        }
    }
}

impl<K> fmt::Debug for ClosureHandler<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClosureHandler")
            .field("on_add", &self.on_add.is_some())
            .field("on_update", &self.on_update.is_some())
            .field("on_delete", &self.on_delete.is_some())
            .field("on_change", &self.on_change.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use informer_core::{ObjectKey, Tombstone};
    use informer_testing::JsonObject;
    use parking_lot::Mutex;

    use super::*;

    #[test]
    fn on_change_sees_every_event_after_the_specific_closure() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (specific, any) = (Arc::clone(&seen), Arc::clone(&seen));
        let mut h = handler::<JsonObject>()
            .on_add(move |o, _| {
                specific
                    .lock()
                    .push(format!("add {}", o.object_name().unwrap_or_default()))
            })
            .on_change(move |o| {
                any.lock()
                    .push(format!("change {}", o.object_name().unwrap_or_default()))
            });
        let a = Arc::new(JsonObject::new(Some("ns"), "a"));
        let b = Arc::new(JsonObject::new(Some("ns"), "b"));
        let c = Arc::new(JsonObject::new(Some("ns"), "c"));
        ResourceEventHandler::on_add(&mut h, &a, true);
        ResourceEventHandler::on_update(&mut h, &a, &b);
        ResourceEventHandler::on_delete(&mut h, &ObjectOrTombstone::Object(Arc::clone(&b)));
        ResourceEventHandler::on_delete(
            &mut h,
            &ObjectOrTombstone::Tombstone(Tombstone {
                key: ObjectKey::new(Some("ns"), "c").unwrap(),
                last_known: c,
            }),
        );
        assert_eq!(
            *seen.lock(),
            ["add a", "change a", "change b", "change b", "change c"]
        );
    }
}

//! Handlers from closures: `handler().on_add(..).on_update(..).on_delete(..)`.

use std::fmt;
use std::sync::Arc;

use informer_core::{Object, ObjectOrTombstone, ResourceEventHandler};

type OnAdd<K> = Box<dyn FnMut(&Arc<K>, bool) + Send>;
type OnUpdate<K> = Box<dyn FnMut(&Arc<K>, &Arc<K>) + Send>;
type OnDelete<K> = Box<dyn FnMut(&ObjectOrTombstone<K>) + Send>;

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
pub struct ClosureHandler<K> {
    on_add: Option<OnAdd<K>>,
    on_update: Option<OnUpdate<K>>,
    on_delete: Option<OnDelete<K>>,
}

/// Starts a [`ClosureHandler`] with no closures.
pub fn handler<K: Object>() -> ClosureHandler<K> {
    ClosureHandler {
        on_add: None,
        on_update: None,
        on_delete: None,
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
}

impl<K: Object> ResourceEventHandler<K> for ClosureHandler<K> {
    fn on_add(&mut self, obj: &Arc<K>, is_in_initial_list: bool) {
        if let Some(f) = &mut self.on_add {
            f(obj, is_in_initial_list);
        }
    }

    fn on_update(&mut self, old: &Arc<K>, new: &Arc<K>) {
        if let Some(f) = &mut self.on_update {
            f(old, new);
        }
    }

    fn on_delete(&mut self, obj: &ObjectOrTombstone<K>) {
        if let Some(f) = &mut self.on_delete {
            f(obj);
        }
    }
}

impl<K> fmt::Debug for ClosureHandler<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClosureHandler")
            .field("on_add", &self.on_add.is_some())
            .field("on_update", &self.on_update.is_some())
            .field("on_delete", &self.on_delete.is_some())
            .finish()
    }
}

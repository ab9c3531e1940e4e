//! Object keys: `namespace/name`, or `name` for cluster-scoped objects.

use std::borrow::Borrow;
use std::fmt;
use std::sync::Arc;

use crate::Object;

/// The cache key of an object: `namespace/name`, or just `name` for cluster-scoped objects.
///
/// Cloning is a reference-count increment; hashing and comparison use the string form, so a
/// `HashMap<ObjectKey, _>` can be queried with a plain `&str` (`ObjectKey: Borrow<str>`).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey(Arc<str>);

impl ObjectKey {
    /// Builds the key of an object in `namespace` (or cluster-scoped when `None` or empty).
    ///
    /// Returns an error if `name` is empty or either part contains a `/`, which no valid
    /// Kubernetes name does and which would make the key ambiguous.
    pub fn new(namespace: Option<&str>, name: &str) -> Result<Self, KeyError> {
        // One allocation: the key is joined on the stack (or in a String when very long) and
        // copied once into the shared string.
        Self::with_str(namespace, name, |key| Self(Arc::from(key)))
    }

    /// Calls `f` with the key string of `name` in `namespace` (as [`ObjectKey::new`] would
    /// build it) without allocating: the key is joined in a stack buffer. For lookups by
    /// parts, such as `store.get_by_key`, where a key is needed only for a moment.
    ///
    /// Errors as [`ObjectKey::new`] does.
    ///
    /// ```
    /// use informer_core::ObjectKey;
    ///
    /// let len = ObjectKey::with_str(Some("prod"), "web-0", |key| {
    ///     assert_eq!(key, "prod/web-0");
    ///     key.len()
    /// });
    /// assert_eq!(len.unwrap(), 10);
    /// assert!(ObjectKey::with_str(None, "", |_| ()).is_err());
    /// ```
    pub fn with_str<R>(
        namespace: Option<&str>,
        name: &str,
        f: impl FnOnce(&str) -> R,
    ) -> Result<R, KeyError> {
        if name.is_empty() {
            return Err(KeyError::MissingName {
                namespace: namespace.map(str::to_owned),
            });
        }
        if name.contains('/') {
            return Err(KeyError::InvalidName {
                name: name.to_owned(),
            });
        }
        let Some(ns) = namespace.filter(|ns| !ns.is_empty()) else {
            return Ok(f(name));
        };
        if ns.contains('/') {
            return Err(KeyError::InvalidNamespace {
                namespace: ns.to_owned(),
            });
        }
        // Kubernetes names are at most 253 bytes and namespaces 63, so real keys fit.
        const STACK: usize = 320;
        let len = ns.len() + 1 + name.len();
        if len > STACK {
            return Ok(f(&[ns, "/", name].concat()));
        }
        let mut buf = [0u8; STACK];
        buf[..ns.len()].copy_from_slice(ns.as_bytes());
        buf[ns.len()] = b'/';
        buf[ns.len() + 1..len].copy_from_slice(name.as_bytes());
        // Two strings joined by an ASCII byte are UTF-8; the check only proves it without
        // `unsafe` (and is cheap for a key).
        match std::str::from_utf8(&buf[..len]) {
            Ok(key) => Ok(f(key)),
            Err(_) => Ok(f(&[ns, "/", name].concat())),
        }
    }

    /// Wraps an existing key string (`namespace/name` or `name`) without validating it.
    ///
    /// Use this for keys that came out of a store or a queue; use [`ObjectKey::new`] or
    /// [`key_of`] to build keys from parts.
    pub fn from_raw(key: impl Into<Arc<str>>) -> Self {
        Self(key.into())
    }

    /// The key as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The namespace part, or `None` for a cluster-scoped key.
    pub fn namespace(&self) -> Option<&str> {
        self.0.split_once('/').map(|(ns, _)| ns)
    }

    /// The name part.
    pub fn name(&self) -> &str {
        self.0.split_once('/').map_or(&self.0, |(_, name)| name)
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Why an object has no key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The object has no `metadata.name`.
    #[error("object has no metadata.name (namespace {namespace:?})")]
    MissingName {
        /// The object's namespace, if it had one, to help find it.
        namespace: Option<String>,
    },
    /// The name contains a `/`.
    #[error("object name {name:?} contains '/'")]
    InvalidName {
        /// The offending name.
        name: String,
    },
    /// The namespace contains a `/`.
    #[error("object namespace {namespace:?} contains '/'")]
    InvalidNamespace {
        /// The offending namespace.
        namespace: String,
    },
}

/// The default key function: `namespace/name`, or `name` for cluster-scoped objects.
pub fn key_of<K: Object + ?Sized>(obj: &K) -> Result<ObjectKey, KeyError> {
    match obj.object_name() {
        Some(name) => ObjectKey::new(obj.object_namespace(), name),
        None => Err(KeyError::MissingName {
            namespace: obj.object_namespace().map(str::to_owned),
        }),
    }
}

/// A function computing an object's key. [`key_of`] is the default everywhere.
pub type KeyFunc<K> = Arc<dyn Fn(&K) -> Result<ObjectKey, KeyError> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn namespaced_and_cluster_keys() {
        let k = ObjectKey::new(Some("ns"), "a").unwrap();
        assert_eq!(k.as_str(), "ns/a");
        assert_eq!(k.namespace(), Some("ns"));
        assert_eq!(k.name(), "a");
        let c = ObjectKey::new(None, "node-1").unwrap();
        assert_eq!(c.as_str(), "node-1");
        assert_eq!(c.namespace(), None);
        assert_eq!(c.name(), "node-1");
        assert_eq!(ObjectKey::new(Some(""), "x").unwrap().as_str(), "x");
        let long = "n".repeat(400);
        assert_eq!(
            ObjectKey::new(Some("ns"), &long).unwrap().as_str(),
            format!("ns/{long}")
        );
        assert_eq!(
            ObjectKey::with_str(Some("é"), "ü", str::to_owned).unwrap(),
            "é/ü"
        );
    }

    #[test]
    fn bad_names_are_typed_errors() {
        assert!(matches!(
            ObjectKey::new(Some("ns"), ""),
            Err(KeyError::MissingName { .. })
        ));
        assert!(matches!(
            ObjectKey::new(None, "a/b"),
            Err(KeyError::InvalidName { .. })
        ));
        assert!(matches!(
            ObjectKey::new(Some("a/b"), "c"),
            Err(KeyError::InvalidNamespace { .. })
        ));
    }

    #[test]
    fn map_lookup_by_str() {
        let mut m = HashMap::new();
        m.insert(ObjectKey::new(Some("ns"), "a").unwrap(), 1);
        assert_eq!(m.get("ns/a"), Some(&1));
    }
}

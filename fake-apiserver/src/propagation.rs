//! `DeleteOptions.propagationPolicy`: how a delete treats the object's dependents, and the
//! finalizers an owner waits behind (the collector itself is `store/gc.rs`).

use serde_json::Value;

/// How a delete treats the object's dependents (`DeleteOptions.propagationPolicy`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum PropagationPolicy {
    /// The object is removed at once and its dependents deleted after it (the default).
    #[default]
    Background,
    /// The object waits (finalizer `foregroundDeletion`) until its dependents with
    /// `blockOwnerDeletion` are gone; all its dependents are deleted.
    Foreground,
    /// The object waits (finalizer `orphan`) until its dependents no longer name it; they
    /// stay.
    Orphan,
}

impl PropagationPolicy {
    /// The policy a `propagationPolicy` value names (`Background`, `Foreground`, `Orphan`).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "Background" => Some(Self::Background),
            "Foreground" => Some(Self::Foreground),
            "Orphan" => Some(Self::Orphan),
            _ => None,
        }
    }

    /// The finalizer an owner waits behind under this policy.
    pub(crate) fn finalizer(self) -> Option<&'static str> {
        match self {
            Self::Background => None,
            Self::Foreground => Some(FOREGROUND),
            Self::Orphan => Some(ORPHAN),
        }
    }
}

pub(crate) const FOREGROUND: &str = "foregroundDeletion";
pub(crate) const ORPHAN: &str = "orphan";

/// Puts `finalizer` in `value`'s finalizers in place of the other policy's, as the API
/// server does when a delete asks for `Orphan` or `Foreground`.
pub(crate) fn set_gc_finalizer(value: &mut Value, finalizer: &str) {
    let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = meta
        .entry("finalizers")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    if let Some(list) = list.as_array_mut() {
        list.retain(|f| f != FOREGROUND && f != ORPHAN);
        list.push(Value::String(finalizer.to_owned()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn policies_parse_and_name_their_finalizers() {
        assert_eq!(
            PropagationPolicy::parse("Foreground").and_then(PropagationPolicy::finalizer),
            Some("foregroundDeletion")
        );
        assert_eq!(
            PropagationPolicy::parse("Orphan").and_then(PropagationPolicy::finalizer),
            Some("orphan")
        );
        assert_eq!(PropagationPolicy::Background.finalizer(), None);
        assert_eq!(PropagationPolicy::parse("background"), None);
        let mut value = json!({"metadata": {"finalizers": ["a.io/x", "orphan"]}});
        set_gc_finalizer(&mut value, FOREGROUND);
        assert_eq!(
            value["metadata"]["finalizers"],
            json!(["a.io/x", "foregroundDeletion"])
        );
        let mut bare = json!({"metadata": {}});
        set_gc_finalizer(&mut bare, ORPHAN);
        assert_eq!(bare["metadata"]["finalizers"], json!(["orphan"]));
    }
}

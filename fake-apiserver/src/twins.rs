//! Resources the real server keeps in one storage and serves under two API groups.
//!
//! Kubernetes stores Events once (as core Events) and serves them both as `v1` `Event` and
//! as `events.k8s.io/v1` `Event`, converting field names on the way in and out
//! (`pkg/apis/events/v1/conversion.go` upstream): an Event written through one group is read,
//! listed and watched through the other, with the same name, uid and resourceVersion.
//!
//! The engine keeps one state per resource, so it mirrors instead: every change committed to
//! one view is committed to its twin too, converted, at the same resourceVersion. Both views
//! then hold the same objects at every version, and each answers lists, watches, field
//! selectors and history in its own form.

use serde_json::{Map, Value};

use crate::ResourceDef;

/// Field names of a core `v1` Event and, in the same order, of an `events.k8s.io/v1` Event.
/// Every other field has the same name in both.
const EVENT_FIELDS: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("source", "deprecatedSource"),
    ("message", "note"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

/// Which side of a twin pair a resource is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    CoreEvent,
    EventsEvent,
}

fn side(def: &ResourceDef) -> Option<Side> {
    match (
        def.group.as_str(),
        def.version.as_str(),
        def.plural.as_str(),
    ) {
        ("", "v1", "events") => Some(Side::CoreEvent),
        ("events.k8s.io", "v1", "events") => Some(Side::EventsEvent),
        _ => None,
    }
}

/// Whether `a` and `b` are two views of one storage.
pub(crate) fn are_twins(a: &ResourceDef, b: &ResourceDef) -> bool {
    matches!(
        (side(a), side(b)),
        (Some(x), Some(y)) if x != y
    )
}

/// `object` (stored in `from`'s form, metadata final) as `to` serves it. Fields only the
/// other form knows are dropped, as the real server's typed conversion drops them.
pub(crate) fn convert(from: &ResourceDef, to: &ResourceDef, object: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(to.api_version()));
    out.insert("kind".into(), Value::String(to.kind.clone()));
    let Some(fields) = object.as_object() else {
        return Value::Object(out);
    };
    let to_events = side(from) == Some(Side::CoreEvent);
    for (name, value) in fields {
        if name == "apiVersion" || name == "kind" {
            continue;
        }
        let renamed = EVENT_FIELDS.iter().find_map(|&(core, events)| {
            let (source, target) = if to_events {
                (core, events)
            } else {
                (events, core)
            };
            if name == source {
                Some(Some(target))
            } else if name == target {
                // A field of the other form, unknown to this one: not stored upstream.
                Some(None)
            } else {
                None
            }
        });
        match renamed {
            Some(Some(target)) => {
                out.insert(target.into(), value.clone());
            }
            Some(None) => {}
            None => {
                out.insert(name.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// A field of an Event by its core `v1` name, whichever form `event` is in (Tables print
/// both forms with the core printer, as upstream, whose printers see the one internal type).
#[cfg(feature = "http")]
pub(crate) fn event_field<'v>(event: &'v Value, core: &str) -> Option<&'v Value> {
    let name = if event.get("apiVersion").and_then(Value::as_str) == Some("events.k8s.io/v1") {
        EVENT_FIELDS
            .iter()
            .find(|(c, _)| *c == core)
            .map_or(core, |(_, events)| events)
    } else {
        core
    };
    event.get(name).filter(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defs() -> (ResourceDef, ResourceDef) {
        (
            ResourceDef::namespaced("", "v1", "events", "Event"),
            ResourceDef::namespaced("events.k8s.io", "v1", "events", "Event"),
        )
    }

    #[test]
    fn core_and_events_forms_convert_both_ways() {
        let (core, events) = defs();
        assert!(are_twins(&core, &events) && are_twins(&events, &core));
        assert!(!are_twins(&core, &core));
        let stored = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "a", "resourceVersion": "7"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "source": {"component": "kubelet"},
            "message": "pulled", "reason": "Pulled", "type": "Normal",
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:01Z",
            "count": 2, "reportingComponent": "kubelet", "reportingInstance": "node-1",
            "eventTime": null, "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
            "note": "not a core field",
        });
        let seen = convert(&core, &events, &stored);
        assert_eq!(
            seen,
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "e", "namespace": "a", "resourceVersion": "7"},
                "regarding": {"kind": "Pod", "name": "p"},
                "deprecatedSource": {"component": "kubelet"},
                "note": "pulled", "reason": "Pulled", "type": "Normal",
                "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
                "deprecatedLastTimestamp": "2026-01-01T00:00:01Z",
                "deprecatedCount": 2, "reportingController": "kubelet",
                "reportingInstance": "node-1", "eventTime": null,
                "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
            })
        );
        #[cfg(feature = "http")]
        {
            assert_eq!(event_field(&seen, "message"), Some(&json!("pulled")));
            assert_eq!(event_field(&stored, "message"), Some(&json!("pulled")));
            assert_eq!(event_field(&seen, "reason"), Some(&json!("Pulled")));
            assert_eq!(event_field(&seen, "eventTime"), None);
        }
        let mut back = stored.clone();
        back.as_object_mut().unwrap().remove("note");
        assert_eq!(convert(&events, &core, &seen), back);
    }
}

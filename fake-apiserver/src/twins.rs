//! Built-in resources the real server keeps in one storage and serves in two forms.
//!
//! Kubernetes stores Events once (as core Events) and serves them both as `v1` `Event` and
//! as `events.k8s.io/v1` `Event`, converting field names on the way in and out
//! (`pkg/apis/events/v1/conversion.go` upstream): an Event written through one group is read,
//! listed and watched through the other, with the same name, uid and resourceVersion. It
//! serves HorizontalPodAutoscalers in `autoscaling/v2` (their storage form) and
//! `autoscaling/v1`, converted as [`crate::autoscaling`] describes.
//!
//! The engine keeps one state per resource, so it mirrors instead: every change committed to
//! one view is committed to its twin too, converted, at the same resourceVersion. Both views
//! then hold the same objects at every version, and each answers lists, watches, field
//! selectors and history in its own form. A write through a view that is not the storage
//! form is first settled into what reading it back from storage gives ([`settle`]).

use serde_json::{Map, Value};

use crate::{ResourceDef, autoscaling, defaults, typed};

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
    /// `autoscaling/v2` HorizontalPodAutoscalers: the storage form.
    AutoscalerV2,
    /// `autoscaling/v1` HorizontalPodAutoscalers: a view converted from v2.
    AutoscalerV1,
}

fn side(def: &ResourceDef) -> Option<Side> {
    match (
        def.group.as_str(),
        def.version.as_str(),
        def.plural.as_str(),
    ) {
        ("", "v1", "events") => Some(Side::CoreEvent),
        ("events.k8s.io", "v1", "events") => Some(Side::EventsEvent),
        ("autoscaling", "v2", "horizontalpodautoscalers") => Some(Side::AutoscalerV2),
        ("autoscaling", "v1", "horizontalpodautoscalers") => Some(Side::AutoscalerV1),
        _ => None,
    }
}

/// Whether `a` and `b` are two views of one storage.
pub(crate) fn are_twins(a: &ResourceDef, b: &ResourceDef) -> bool {
    matches!(
        (side(a), side(b)),
        (Some(Side::CoreEvent), Some(Side::EventsEvent))
            | (Some(Side::EventsEvent), Some(Side::CoreEvent))
            | (Some(Side::AutoscalerV2), Some(Side::AutoscalerV1))
            | (Some(Side::AutoscalerV1), Some(Side::AutoscalerV2))
    )
}

/// A write's body through `def` (decoded, before it is stored) as reading it back through
/// `def` gives it: for an `autoscaling/v1` HorizontalPodAutoscaler, converted to v2,
/// defaulted as v2 and converted back; for a v2 one, without the round-trip annotations
/// (upstream never stores them). Answers the storage form the body was settled from, if it
/// is not the body's own (the v1 autoscaler's v2 form), for [`mirror`]. An error is a
/// round-trip annotation that does not decode (or holds a value of the wrong type), worded
/// as Go's decoder words it.
pub(crate) fn settle(def: &ResourceDef, body: &mut Value) -> Result<Option<Value>, String> {
    match side(def) {
        Some(Side::AutoscalerV2) => autoscaling::drop_round_trip(body),
        Some(Side::AutoscalerV1) => {
            let stored = autoscaler_v2(body)?;
            *body = autoscaling::to_v1(&stored);
            return Ok(Some(stored));
        }
        _ => {}
    }
    Ok(None)
}

/// The change `object` (committed to `from`, metadata final) as `to`, its twin, holds it.
/// A change to a v1 autoscaler reaches its v2 twin from the form [`settle`] stored
/// (`settled`), or, for a change of metadata only (a deletion), from the twin's own
/// current object (`twin_prev`): converting the v1 form back would read its round-trip
/// annotations, which say less than v2 (a missing quantity reads as `"0"` there).
pub(crate) fn mirror(
    from: &ResourceDef,
    to: &ResourceDef,
    object: &Value,
    settled: Option<Value>,
    twin_prev: Option<&Value>,
) -> Result<Value, String> {
    if side(from) != Some(Side::AutoscalerV1) {
        return convert(from, to, object);
    }
    let mut stored = match (settled, twin_prev) {
        (Some(stored), _) => stored,
        (None, Some(prev)) => prev.clone(),
        (None, None) => return convert(from, to, object),
    };
    if let (Some(stored), Some(meta)) = (stored.as_object_mut(), object.get("metadata")) {
        stored.insert("metadata".into(), meta.clone());
    }
    autoscaling::drop_round_trip(&mut stored);
    Ok(stored)
}

/// An `autoscaling/v1` HorizontalPodAutoscaler as it is stored: converted to v2, decoded as
/// v2 (so that a value of the wrong type in an annotation fails) and defaulted as v2.
fn autoscaler_v2(v1: &Value) -> Result<Value, String> {
    let mut v2 = autoscaling::to_v2(v1)?;
    typed::decode(autoscaling::V2_DEFINITION, &mut v2)?;
    defaults::apply(autoscaling::V2_DEFINITION, &mut v2);
    Ok(v2)
}

/// `object` in the form the table printers read (upstream's print the internal type, which
/// both forms of a twin pair convert to): an `autoscaling/v1` HorizontalPodAutoscaler as v2.
#[cfg(feature = "http")]
pub(crate) fn printed<'v>(def: &ResourceDef, object: &'v Value) -> std::borrow::Cow<'v, Value> {
    match side(def) {
        Some(Side::AutoscalerV1) => autoscaler_v2(object)
            .map_or(std::borrow::Cow::Borrowed(object), std::borrow::Cow::Owned),
        _ => std::borrow::Cow::Borrowed(object),
    }
}

/// `object` (a write's object through `from`) converted to `to`, its twin, as admission
/// sees a request matched through an equivalent resource; none if it does not convert.
pub(crate) fn converted(from: &ResourceDef, to: &ResourceDef, object: &Value) -> Option<Value> {
    convert(from, to, object).ok()
}

/// `object` (stored in `from`'s form, metadata final) as `to` serves it. Fields only the
/// other form knows are dropped, as the real server's typed conversion drops them. An
/// error: `object` cannot be converted (a v1 autoscaler with a broken round-trip annotation,
/// which [`settle`] keeps from being stored).
fn convert(from: &ResourceDef, to: &ResourceDef, object: &Value) -> Result<Value, String> {
    match side(from) {
        Some(Side::AutoscalerV2) => return Ok(autoscaling::to_v1(object)),
        Some(Side::AutoscalerV1) => return autoscaler_v2(object),
        _ => {}
    }
    Ok(convert_event(from, to, object))
}

/// An Event in the other group's form.
fn convert_event(from: &ResourceDef, to: &ResourceDef, object: &Value) -> Value {
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
        let seen = convert(&core, &events, &stored).unwrap();
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
        assert_eq!(convert(&events, &core, &seen).unwrap(), back);
    }
}

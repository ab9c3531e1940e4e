//! Property tests of the decoders of untrusted input: watch lines, list bodies (streamed in
//! any chunking, against the whole-body decoder) and the exact-capacity decoder (hinted decode
//! equals plain decode for arbitrary JSON of the target type). Inputs are generated in the
//! shape of pods, with the strings, escapes, unknown fields and nested arrays a server may
//! send, and then broken (truncated, bytes flipped) to reach the error paths.

use std::collections::BTreeMap;

use informer_core::WatchEvent;
use k8s_openapi::api::core::v1::Pod;
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use crate::fuzzing;

/// Strings with quotes, backslashes, control characters and non-ASCII text.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9-]{0,12}",
        1 => "\\PC{0,8}",
        1 => proptest::collection::vec(prop_oneof![
            Just('"'), Just('\\'), Just('\n'), Just('\u{0}'), Just('é'), Just('✓'), Just('['),
            Just(']'), Just('{'), Just('}'), Just(','), Just('a'),
        ], 0..8).prop_map(|c| c.into_iter().collect()),
    ]
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(text(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

fn string_map() -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(text(), text(), 0..4).prop_map(|m| json!(m))
}

fn container() -> impl Strategy<Value = Value> {
    (
        text(),
        text(),
        proptest::collection::vec((1i32..65535, "[A-Z]{3}"), 0..3),
        proptest::collection::vec((text(), text()), 0..3),
        proptest::collection::vec(text(), 0..3),
    )
        .prop_map(|(name, image, ports, env, args)| {
            json!({
                "name": name,
                "image": image,
                "ports": ports.iter().map(|(p, proto)| json!({"containerPort": p, "protocol": proto})).collect::<Vec<_>>(),
                "env": env.iter().map(|(n, v)| json!({"name": n, "value": v})).collect::<Vec<_>>(),
                "args": args,
            })
        })
}

/// A pod as an API server would send it, plus unknown fields holding arbitrary JSON (arrays
/// included), and sometimes a field of the wrong type.
fn pod_json() -> impl Strategy<Value = Value> {
    (
        (text(), text(), "[0-9]{1,6}", string_map(), string_map()),
        proptest::collection::vec(container(), 0..3),
        proptest::collection::vec((text(), any_json()), 0..3),
        proptest::collection::vec((text(), text(), text()), 0..3),
        proptest::option::of(any_json()),
        proptest::collection::btree_map("x[a-z]{1,5}", any_json(), 0..3),
        0u8..20,
    )
        .prop_map(
            |((name, ns, rv, labels, annotations), containers, managed, conditions, extra_spec, unknown, wrong)| {
                let mut pod = json!({
                    "kind": "Pod",
                    "apiVersion": "v1",
                    "metadata": {
                        "name": name,
                        "namespace": ns,
                        "resourceVersion": rv,
                        "labels": labels,
                        "annotations": annotations,
                        "managedFields": managed.iter().map(|(m, f)| json!({
                            "manager": m, "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": f
                        })).collect::<Vec<_>>(),
                    },
                    "spec": {
                        "containers": containers,
                        "volumes": [{"name": "v", "emptyDir": {}}],
                        "nodeName": "node-1",
                    },
                    "status": {
                        "phase": "Running",
                        "conditions": conditions.iter().map(|(t, s, r)| json!({"type": t, "status": s, "reason": r})).collect::<Vec<_>>(),
                    },
                });
                if let Some(extra) = extra_spec {
                    pod["spec"]["xUnknown"] = extra;
                }
                for (k, v) in unknown {
                    pod[k] = v;
                }
                match wrong {
                    0 => pod["metadata"]["name"] = json!(5),
                    1 => pod["spec"]["containers"] = json!({"not": "a list"}),
                    2 => pod["metadata"]["labels"] = json!(["a"]),
                    _ => {}
                }
                pod
            },
        )
}

/// JSON text of `value`, compact or with extra whitespace.
fn render(value: &Value, pretty: bool) -> String {
    if pretty {
        serde_json::to_string_pretty(value).expect("JSON values serialize")
    } else {
        value.to_string()
    }
}

/// Damage to apply to a valid input.
#[derive(Debug, Clone)]
enum Damage {
    None,
    Truncate(usize),
    Flip(usize, u8),
    Insert(usize, u8),
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        3 => Just(Damage::None),
        1 => any::<usize>().prop_map(Damage::Truncate),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Damage::Flip(i, b)),
        1 => (any::<usize>(), prop_oneof![Just(b'"'), Just(b'\\'), Just(b','), Just(b']'), Just(b'}'), Just(b'\n'), any::<u8>()])
            .prop_map(|(i, b)| Damage::Insert(i, b)),
    ]
}

fn apply(damage: &Damage, mut bytes: Vec<u8>) -> Vec<u8> {
    let at = |i: usize, len: usize| if len == 0 { 0 } else { i % len };
    match *damage {
        Damage::None => {}
        Damage::Truncate(i) => {
            let n = at(i, bytes.len());
            bytes.truncate(n);
        }
        Damage::Flip(i, b) => {
            if !bytes.is_empty() {
                let n = at(i, bytes.len());
                bytes[n] = b;
            }
        }
        Damage::Insert(i, b) => {
            let n = at(i, bytes.len() + 1);
            bytes.insert(n, b);
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Hinted decoding (exact `Vec` capacities) gives exactly the plain decode: the same pod,
    /// or the same error.
    #[test]
    fn exact_decode_equals_plain_decode_for_pods(pod in pod_json(), pretty in any::<bool>()) {
        let text = render(&pod, pretty);
        fuzzing::exact_matches_plain::<Pod>(&text);
    }

    /// The same for arbitrary JSON into types with nested vectors, maps and raw values.
    #[test]
    fn exact_decode_equals_plain_decode_for_any_json(value in any_json(), damage in damage()) {
        let text = value.to_string();
        fuzzing::exact_matches_plain::<Value>(&text);
        fuzzing::exact_matches_plain::<Vec<Vec<Value>>>(&text);
        fuzzing::exact_matches_plain::<BTreeMap<String, Vec<String>>>(&text);
        fuzzing::exact_matches_plain::<Pod>(&text);
        let damaged = apply(&damage, text.into_bytes());
        let _ = fuzzing::array_lengths(&damaged);
        if let Ok(damaged) = std::str::from_utf8(&damaged) {
            fuzzing::exact_matches_plain::<Value>(damaged);
            fuzzing::exact_matches_plain::<Pod>(damaged);
        }
    }

    /// A watch line in any shape decodes to its type and its object, exactly as a plain
    /// decode of the object; broken lines are typed errors, never panics.
    #[test]
    fn watch_lines_decode_like_their_objects(
        pod in pod_json(),
        kind in prop_oneof![Just("ADDED"), Just("MODIFIED"), Just("DELETED"), Just("BOOKMARK"), Just("ERROR"), Just("SURPRISE")],
        shape in 0u8..4,
        damage in damage(),
    ) {
        let object = pod.to_string();
        let line = match shape {
            0 => format!(r#"{{"type":"{kind}","object":{object}}}"#),
            1 => format!(r#"{{ "type" : "{kind}" , "object" : {object} }}"#),
            2 => format!(r#"{{"object":{object},"type":"{kind}"}}"#),
            _ => format!(r#"{{"type":"{kind}","object":{object},"extra":[1,[2]]}}"#),
        };
        let line = apply(&damage, line.into_bytes());
        let decoded = fuzzing::watch_line(&line);
        if matches!(damage, Damage::None) {
            let plain = serde_json::from_str::<Pod>(&object);
            match (kind, &decoded, plain) {
                ("ADDED", Ok(WatchEvent::Added(p)), Ok(q))
                | ("MODIFIED", Ok(WatchEvent::Modified(p)), Ok(q))
                | ("DELETED", Ok(WatchEvent::Deleted(p)), Ok(q)) => prop_assert_eq!(p, &q),
                ("ADDED" | "MODIFIED" | "DELETED", Err(_), Err(_)) => {}
                ("BOOKMARK" | "ERROR", _, _) => {}
                ("SURPRISE", Err(e), _) => prop_assert_eq!(e.class(), informer_core::ErrorClass::Decode),
                (kind, decoded, plain) => {
                    return Err(TestCaseError::fail(format!("{kind}: {decoded:?} vs plain {:?}", plain.is_ok())));
                }
            }
        }
    }

    /// Arbitrary bytes as a watch line: a result, never a panic.
    #[test]
    fn arbitrary_watch_lines_never_panic(line in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = fuzzing::watch_line(&line);
    }

    /// A list body fed in any chunking decodes exactly as the whole-body decoder does (the
    /// same items and metadata, or an error from both), with the decoder's buffers within
    /// their cap; members in any order, `items` null or empty, damage anywhere.
    #[test]
    fn list_bodies_stream_like_the_whole_body_decoder(
        pods in proptest::collection::vec(pod_json(), 0..4),
        null_items in any::<bool>(),
        order in 0u8..3,
        pretty in any::<bool>(),
        token in proptest::option::of(text()),
        chunks in proptest::collection::vec(1usize..64, 1..6),
        damage in damage(),
    ) {
        let items = if null_items && pods.is_empty() { Value::Null } else { Value::Array(pods) };
        let metadata = json!({"resourceVersion": "12", "continue": token, "remainingItemCount": 3});
        let members: Vec<(&str, Value)> = match order {
            0 => vec![("kind", json!("PodList")), ("apiVersion", json!("v1")), ("metadata", metadata), ("items", items)],
            1 => vec![("items", items), ("metadata", metadata), ("kind", json!("PodList"))],
            _ => vec![("metadata", metadata), ("unknown", json!([[1], {"a": [2]}])), ("items", items)],
        };
        let body = format!(
            "{{{}}}",
            members
                .iter()
                .map(|(k, v)| format!("{}:{}", json!(k), render(v, pretty)))
                .collect::<Vec<_>>()
                .join(",")
        );
        let body = apply(&damage, body.into_bytes());
        let _ = fuzzing::list_body(&body, &chunks, 1 << 20);
        // A small cap on the same body: refused with a limit error, or agreed on.
        let _ = fuzzing::list_body(&body, &chunks, 200);
    }

    /// Arbitrary bytes as a list body, in any chunking: agreement with the whole-body
    /// decoder, never a panic.
    #[test]
    fn arbitrary_list_bodies_never_panic(
        body in proptest::collection::vec(prop_oneof![
            Just(b'{'), Just(b'}'), Just(b'['), Just(b']'), Just(b'"'), Just(b':'), Just(b','),
            Just(b'\\'), Just(b' '), Just(b'n'), Just(b'u'), Just(b'l'), Just(b'1'),
            any::<u8>(),
        ], 0..120),
        prefix in prop_oneof![Just(&b""[..]), Just(&br#"{"items":["#[..]), Just(&br#"{"metadata":"#[..])],
        chunks in proptest::collection::vec(1usize..16, 1..4),
    ) {
        let body = [prefix, &body].concat();
        let _ = fuzzing::list_body(&body, &chunks, 64);
        let _ = fuzzing::list_body(&body, &chunks, 1 << 20);
    }
}

//! Patch formats beyond the engine's JSON merge patch: an approximation of strategic merge
//! patch (what kubectl sends for built-in kinds) and JSON patch (RFC 6902).

use informer_core::Status;
use serde_json::{Map, Value};

use crate::status;

/// Applies a strategic merge patch, approximately: like a JSON merge patch, except that
///
/// - lists of objects merge element by element on a merge key: the key the real type declares
///   for well-known fields (`containers`, `env`, `volumes`... by `name`; `ports` by
///   `containerPort`; `volumeMounts` by `mountPath`; `conditions` by `type`;
///   `ownerReferences` by `uid`), or `name` when every element has one; other lists are
///   replaced;
/// - `finalizers` merge as a set;
/// - the directives `$patch` (`replace`, `delete`, `merge`), `$setElementOrder/<field>`,
///   `$retainKeys` and `$deleteFromPrimitiveList/<field>` are applied and never stored.
///
/// Without the real types' schemas this cannot match the server in every case (a list whose
/// type has a merge key other than the ones above is replaced), which kubectl's patches of
/// common objects do not run into.
pub(crate) fn strategic_merge(target: &mut Value, patch: &Value) -> Result<(), Status> {
    let Value::Object(p) = patch else {
        return Err(status::bad_request(
            "a strategic merge patch must be a JSON object",
        ));
    };
    merge_map(target, p);
    Ok(())
}

fn merge_map(target: &mut Value, patch: &Map<String, Value>) {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            let mut m = patch.clone();
            m.remove("$patch");
            *target = Value::Object(strip_directives(m));
            return;
        }
        Some("delete") => {
            *target = Value::Null;
            return;
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    let mut orders = Vec::new();
    for (key, value) in patch {
        if key == "$patch" || key == "$retainKeys" {
            continue;
        }
        if let Some(list_field) = key.strip_prefix("$setElementOrder/") {
            orders.push((list_field.to_owned(), value.clone()));
            continue;
        }
        if let Some(list_field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let (Some(Value::Array(items)), Value::Array(del)) = (t.get_mut(list_field), value) {
                items.retain(|i| !del.contains(i));
            }
            continue;
        }
        match value {
            Value::Null => {
                t.remove(key);
            }
            Value::Object(pm) => {
                let entry = t.entry(key.clone()).or_insert(Value::Null);
                merge_map(entry, pm);
                if entry.is_null() {
                    t.remove(key);
                }
            }
            Value::Array(pl) => {
                let entry = t.entry(key.clone()).or_insert(Value::Null);
                merge_list(entry, pl, key);
            }
            other => {
                t.insert(key.clone(), other.clone());
            }
        }
    }
    for (list_field, order) in orders {
        if let (Some(Value::Array(items)), Value::Array(order)) = (t.get_mut(&list_field), order) {
            reorder(items, &order, &list_field);
        }
    }
    if let Some(Value::Array(keep)) = patch.get("$retainKeys") {
        t.retain(|k, _| keep.iter().any(|x| x.as_str() == Some(k.as_str())));
    }
}

/// The merge key of a list field, when its elements are objects merged one by one.
fn merge_key(field: &str, patch: &[Value], current: &[Value]) -> Option<&'static str> {
    let known = match field {
        "readinessGates" => Some("name"),
        "ports" => {
            if patch
                .iter()
                .chain(current)
                .all(|e| e.get("containerPort").is_some())
            {
                Some("containerPort")
            } else {
                Some("port")
            }
        }
        // The first of the key fields (strategic merge keys on one).
        other => crate::managed::builtin_list_keys(other).and_then(|keys| keys.first().copied()),
    };
    if known.is_some() {
        return known;
    }
    let objects_named = |l: &[Value]| {
        l.iter()
            .all(|e| e.get("name").is_some_and(Value::is_string))
    };
    (!patch.is_empty() && objects_named(patch) && objects_named(current)).then_some("name")
}

fn merge_list(target: &mut Value, patch: &[Value], field: &str) {
    if patch
        .iter()
        .any(|e| e.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        let items = patch
            .iter()
            .filter(|e| e.get("$patch").is_none())
            .map(|e| strip(e.clone()))
            .collect();
        *target = Value::Array(items);
        return;
    }
    let current: Vec<Value> = match target {
        Value::Array(a) => std::mem::take(a),
        _ => Vec::new(),
    };
    if field == "finalizers" && patch.iter().all(Value::is_string) {
        let mut out = current;
        for p in patch {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        *target = Value::Array(out);
        return;
    }
    let Some(key) = merge_key(field, patch, &current) else {
        *target = Value::Array(patch.iter().map(|e| strip(e.clone())).collect());
        return;
    };
    let mut out = current;
    for p in patch {
        let Some(id) = p.get(key) else {
            out.push(strip(p.clone()));
            continue;
        };
        let pos = out.iter().position(|e| e.get(key) == Some(id));
        let delete = p.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, p) {
            (Some(i), _) if delete => {
                out.remove(i);
            }
            (None, _) if delete => {}
            (Some(i), Value::Object(pm)) => merge_map(&mut out[i], pm),
            (None, Value::Object(_)) => out.push(strip(p.clone())),
            (Some(i), _) => out[i] = p.clone(),
            (None, _) => out.push(p.clone()),
        }
    }
    *target = Value::Array(out);
}

/// Orders `items` as `order` lists them (by merge key for objects, by value otherwise);
/// elements `order` does not name keep their relative order after the named ones.
fn reorder(items: &mut [Value], order: &[Value], field: &str) {
    let key = merge_key(field, order, items);
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let rank = |v: &Value| {
        let i = id(v);
        order.iter().position(|o| id(o) == i).unwrap_or(order.len())
    };
    items.sort_by_key(|v| rank(v));
}

fn strip(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip_directives(m)),
        other => other,
    }
}

fn strip_directives(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k, strip(v)))
        .collect()
}

/// Applies a JSON patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy`, `test`.
pub(crate) fn json_patch(target: &mut Value, patch: &Value) -> Result<(), Status> {
    let ops = patch
        .as_array()
        .ok_or_else(|| status::bad_request("a JSON patch must be an array of operations"))?;
    for (i, op) in ops.iter().enumerate() {
        apply_op(target, op).map_err(|e| {
            let mut s = status::bad_request(format!("JSON patch operation {i} failed: {e}"));
            if e.starts_with("test") {
                s = Status::failure(422, "Invalid", format!("JSON patch operation {i}: {e}"));
            }
            s
        })?;
    }
    Ok(())
}

fn apply_op(target: &mut Value, op: &Value) -> Result<(), String> {
    let name = op
        .get("op")
        .and_then(Value::as_str)
        .ok_or("missing \"op\"")?;
    let path = op
        .get("path")
        .and_then(Value::as_str)
        .ok_or("missing \"path\"")?;
    let value = || op.get("value").cloned().ok_or("missing \"value\"");
    let from = || {
        op.get("from")
            .and_then(Value::as_str)
            .ok_or("missing \"from\"")
    };
    match name {
        "add" => add(target, path, value()?),
        "remove" => remove(target, path).map(|_| ()),
        "replace" => {
            let v = value()?;
            let slot = target
                .pointer_mut(path)
                .ok_or_else(|| format!("replace: no value at {path:?}"))?;
            *slot = v;
            Ok(())
        }
        "move" => {
            let v = remove(target, from()?)?;
            add(target, path, v)
        }
        "copy" => {
            let from = from()?;
            let v = target
                .pointer(from)
                .cloned()
                .ok_or_else(|| format!("copy: no value at {from:?}"))?;
            add(target, path, v)
        }
        "test" => {
            let want = value()?;
            match target.pointer(path) {
                Some(v) if *v == want => Ok(()),
                _ => Err(format!("test: the value at {path:?} differs")),
            }
        }
        other => Err(format!("unknown operation {other:?}")),
    }
}

fn split_pointer(path: &str) -> Result<(&str, String), String> {
    let (parent, last) = path
        .rsplit_once('/')
        .ok_or_else(|| format!("invalid JSON pointer {path:?}"))?;
    Ok((parent, last.replace("~1", "/").replace("~0", "~")))
}

fn add(target: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *target = value;
        return Ok(());
    }
    let (parent, last) = split_pointer(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            if last == "-" {
                a.push(value);
                return Ok(());
            }
            let i: usize = last
                .parse()
                .map_err(|_| format!("add: invalid array index {last:?}"))?;
            if i > a.len() {
                return Err(format!("add: index {i} out of bounds"));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("add: no container at {parent:?}")),
    }
}

fn remove(target: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split_pointer(path)?;
    match target.pointer_mut(parent) {
        Some(Value::Object(m)) => m
            .remove(&last)
            .ok_or_else(|| format!("remove: no value at {path:?}")),
        Some(Value::Array(a)) => {
            let i: usize = last
                .parse()
                .map_err(|_| format!("remove: invalid array index {last:?}"))?;
            if i >= a.len() {
                return Err(format!("remove: index {i} out of bounds"));
            }
            Ok(a.remove(i))
        }
        _ => Err(format!("remove: no container at {parent:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merge_merges_containers_by_name_and_applies_directives() {
        let mut pod = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"]},
            "spec": {"containers": [
                {"name": "app", "image": "app:1", "ports": [{"containerPort": 80}]},
                {"name": "side", "image": "side:1"},
            ]},
        });
        let patch = json!({
            "metadata": {"labels": {"b": null, "c": "3"}, "finalizers": ["y"]},
            "spec": {
                "$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                "containers": [{"name": "app", "image": "app:2"}],
            },
        });
        strategic_merge(&mut pod, &patch).unwrap();
        assert_eq!(pod["metadata"]["labels"], json!({"a": "1", "c": "3"}));
        assert_eq!(pod["metadata"]["finalizers"], json!(["x", "y"]));
        let containers = pod["spec"]["containers"].as_array().unwrap();
        assert_eq!(containers[0]["name"], "side");
        assert_eq!(containers[1]["image"], "app:2");
        assert_eq!(containers[1]["ports"][0]["containerPort"], 80);
        assert!(pod["spec"].get("$setElementOrder/containers").is_none());
    }

    #[test]
    fn strategic_merge_deletes_and_replaces() {
        let mut obj = json!({"spec": {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
            "args": ["x", "y"], "selector": {"a": "b"}}});
        let patch = json!({"spec": {
            "env": [{"name": "A", "$patch": "delete"}],
            "args": ["z"],
            "selector": {"$patch": "replace", "c": "d"},
        }});
        strategic_merge(&mut obj, &patch).unwrap();
        assert_eq!(obj["spec"]["env"], json!([{"name": "B", "value": "2"}]));
        assert_eq!(obj["spec"]["args"], json!(["z"]));
        assert_eq!(obj["spec"]["selector"], json!({"c": "d"}));
        let mut obj =
            json!({"metadata": {"finalizers": ["a", "b"]}, "data": {"k": "v", "drop": "x"}});
        strategic_merge(
            &mut obj,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
                    "data": {"$retainKeys": ["k"], "k": "w"}}),
        )
        .unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["b"]));
        assert_eq!(obj["data"], json!({"k": "w"}));
        assert!(strategic_merge(&mut obj, &json!([1])).is_err());
    }

    #[test]
    fn json_patch_operations() {
        let mut obj = json!({"metadata": {"labels": {"a": "1"}}, "list": [1, 2]});
        json_patch(
            &mut obj,
            &json!([
                {"op": "add", "path": "/metadata/labels/b", "value": "2"},
                {"op": "replace", "path": "/metadata/labels/a", "value": "x"},
                {"op": "add", "path": "/list/-", "value": 3},
                {"op": "remove", "path": "/list/0"},
                {"op": "copy", "from": "/metadata/labels/b", "path": "/copied"},
                {"op": "move", "from": "/copied", "path": "/moved"},
                {"op": "test", "path": "/moved", "value": "2"},
            ]),
        )
        .unwrap();
        assert_eq!(
            obj,
            json!({"metadata": {"labels": {"a": "x", "b": "2"}}, "list": [2, 3], "moved": "2"})
        );
        let err = json_patch(
            &mut obj,
            &json!([{"op": "test", "path": "/moved", "value": "3"}]),
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
        let err = json_patch(&mut obj, &json!([{"op": "remove", "path": "/nope"}])).unwrap_err();
        assert_eq!(err.code, 400);
        assert!(json_patch(&mut obj, &json!({"op": "add"})).is_err());
    }
}

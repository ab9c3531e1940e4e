//! A custom resource's structural schema (its CRD's `openAPIV3Schema`), applied as the real
//! server applies it to every write: unknown fields pruned, defaults filled in, then the
//! value validated.
//!
//! Upstream (`apiextensions-apiserver`, read there): pruning drops every field the schema
//! does not specify (except under `x-kubernetes-preserve-unknown-fields: true`, and
//! `apiVersion`/`kind`/`metadata` at the root and in `x-kubernetes-embedded-resource`
//! objects), and nulls of fields that are not `nullable`; defaulting fills in `default`
//! for absent fields of present objects; validation reports every violation at once as a
//! 422 with one cause each. What is checked here: `type` (with `x-kubernetes-int-or-string`
//! and `nullable`), `required`, `enum`, `minimum`/`maximum` (and their exclusive forms),
//! `multipleOf`, `minLength`/`maxLength`, `pattern` (Rust's `regex`, RE2 syntax like Go's),
//! `minItems`/`maxItems`, `uniqueItems`, `minProperties`/`maxProperties`, `allOf`/`anyOf`/
//! `oneOf`/`not` (kube-openapi's messages; of a failed `anyOf`/`oneOf` the alternative with
//! the fewest violations is reported, where upstream counts the checks that passed),
//! `properties`, `additionalProperties` and `items`, and the string formats upstream supports
//! (the `formats` module). Not checked: list types.
//! CEL rules (`x-kubernetes-validations`) are the `rules` module's.

use serde_json::{Map, Value};

use crate::formats;

/// One validation failure: the field path, the cause type and the detail.
pub(crate) type Violation = (String, &'static str, String);

const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Whether a schema's boolean keyword `name` is `true`.
pub(crate) fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

/// Drops what `schema` does not specify from `value` (the whole object: the root keeps
/// `apiVersion`, `kind` and `metadata`); answers the paths of the unknown fields it dropped
/// (`spec.colour`, `spec.items[0].x`), sorted (nulls of fields that are not `nullable` go
/// too, without being unknown).
pub(crate) fn prune(schema: &Value, value: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    prune_at(schema, value, true, "", &mut unknown);
    unknown.sort();
    unknown
}

fn prune_at(
    schema: &Value,
    value: &mut Value,
    embedded: bool,
    path: &str,
    unknown: &mut Vec<String>,
) {
    match value {
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            let keep_unknown = flag(schema, "x-kubernetes-preserve-unknown-fields");
            fields.retain(|name, field| {
                if embedded && ROOT_FIELDS.contains(&name.as_str()) {
                    return true;
                }
                let sub = properties.and_then(|p| p.get(name)).or(additional);
                match sub {
                    Some(sub) => !field.is_null() || flag(sub, "nullable"),
                    None if keep_unknown => true,
                    None => {
                        unknown.push(join(path, name));
                        false
                    }
                }
            });
            for (name, field) in fields.iter_mut() {
                if embedded && name == "metadata" {
                    continue;
                }
                if let Some(sub) = properties.and_then(|p| p.get(name)).or(additional) {
                    let embeds = flag(sub, "x-kubernetes-embedded-resource");
                    prune_at(sub, field, embeds, &join(path, name), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|i| i.is_object()) {
                let embeds = flag(sub, "x-kubernetes-embedded-resource");
                for (i, item) in items.iter_mut().enumerate() {
                    prune_at(sub, item, embeds, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills in the `default` of every absent property of every object present in `value`
/// (defaults are pruned and defaulted themselves, as upstream requires of them).
pub(crate) fn apply_defaults(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(fields) => {
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, sub) in properties {
                    if let Some(default) = sub.get("default")
                        && !fields.contains_key(name)
                    {
                        fields.insert(name.clone(), default.clone());
                    }
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties").filter(|a| a.is_object());
            for (name, field) in fields.iter_mut() {
                if let Some(sub) = properties.and_then(|p| p.get(name)).or(additional) {
                    apply_defaults(sub, field);
                }
            }
        }
        Value::Array(items) => {
            if let Some(sub) = schema.get("items").filter(|i| i.is_object()) {
                for item in items {
                    apply_defaults(sub, item);
                }
            }
        }
        _ => {}
    }
}

/// Every violation of `schema` in `value` (the whole object; `metadata` is ObjectMeta's
/// business, checked elsewhere).
pub(crate) fn validate(schema: &Value, value: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    validate_at(schema, value, "", true, &mut out);
    out
}

pub(crate) fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    }
}

/// Go's rendering of a JSON value in field errors: strings quoted, numbers and booleans
/// bare, anything else as its JSON.
pub(crate) fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_ok(schema: &Value, value: &Value) -> bool {
    if flag(schema, "x-kubernetes-int-or-string") {
        return matches!(type_name(value), "integer" | "string");
    }
    match schema.get("type").and_then(Value::as_str) {
        None => true,
        Some("number") => matches!(type_name(value), "integer" | "number"),
        Some(want) => type_name(value) == want,
    }
}

fn validate_at(schema: &Value, value: &Value, path: &str, root: bool, out: &mut Vec<Violation>) {
    let label = if path.is_empty() { "<root>" } else { path };
    if value.is_null() {
        if !flag(schema, "nullable") && schema.get("type").is_some() && !root {
            let want = schema.get("type").and_then(Value::as_str).unwrap_or("");
            out.push((
                path.to_owned(),
                "FieldValueTypeInvalid",
                format!("\"null\": {label} in body must be of type {want}: \"null\""),
            ));
        }
        return;
    }
    if !type_ok(schema, value) {
        let want = if flag(schema, "x-kubernetes-int-or-string") {
            "integer,string"
        } else {
            schema.get("type").and_then(Value::as_str).unwrap_or("")
        };
        let got = type_name(value);
        out.push((
            path.to_owned(),
            "FieldValueTypeInvalid",
            format!("\"{got}\": {label} in body must be of type {want}: \"{got}\""),
        ));
        return;
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(shown).collect();
        out.push((
            path.to_owned(),
            "FieldValueNotSupported",
            format!("{}: supported values: {}", shown(value), listed.join(", ")),
        ));
    }
    check_combinators(schema, value, path, root, out);
    match value {
        Value::Number(n) => check_number(schema, n.as_f64().unwrap_or(0.0), value, path, out),
        Value::String(s) => {
            if let Some(format) = schema.get("format").and_then(Value::as_str)
                && formats::check(format, s) == Some(false)
            {
                out.push((
                    path.to_owned(),
                    "FieldValueTypeInvalid",
                    format!(
                        "{}: {label} in body must be of type {format}: {}",
                        shown(value),
                        shown(value)
                    ),
                ));
            }
            if let Some(pattern) = schema.get("pattern").and_then(Value::as_str)
                && let Ok(re) = regex::Regex::new(pattern)
                && !re.is_match(s)
            {
                out.push((
                    path.to_owned(),
                    "FieldValueInvalid",
                    format!("{}: {label} in body should match '{pattern}'", shown(value)),
                ));
            }
            let chars = s.chars().count();
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && chars as u64 > max
            {
                out.push((
                    path.to_owned(),
                    "FieldValueTooLong",
                    format!("may not be more than {max} bytes"),
                ));
            }
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && (chars as u64) < min
            {
                out.push((
                    path.to_owned(),
                    "FieldValueInvalid",
                    format!(
                        "{}: {label} in body should be at least {min} chars long",
                        shown(value)
                    ),
                ));
            }
        }
        Value::Array(items) => {
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && items.len() as u64 > max
            {
                out.push((
                    path.to_owned(),
                    "FieldValueTooMany",
                    format!("{}: must have at most {max} items", items.len()),
                ));
            }
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && (items.len() as u64) < min
            {
                out.push((
                    path.to_owned(),
                    "FieldValueInvalid",
                    format!(
                        "{}: {label} in body should have at least {min} items",
                        items.len()
                    ),
                ));
            }
            if flag(schema, "uniqueItems") && has_duplicates(items) {
                out.push((
                    path.to_owned(),
                    "FieldValueInvalid",
                    format!("\"\": {label} in body shouldn't contain duplicates"),
                ));
            }
            if let Some(sub) = schema.get("items").filter(|i| i.is_object()) {
                for (i, item) in items.iter().enumerate() {
                    validate_at(sub, item, &format!("{path}[{i}]"), false, out);
                }
            }
        }
        Value::Object(fields) => {
            let count = fields.len() as u64;
            if let Some(max) = schema.get("maxProperties").and_then(Value::as_u64)
                && count > max
            {
                out.push((
                    path.to_owned(),
                    "FieldValueTooMany",
                    format!("{count}: must have at most {max} items"),
                ));
            }
            if let Some(min) = schema.get("minProperties").and_then(Value::as_u64)
                && count < min
            {
                out.push((
                    path.to_owned(),
                    "FieldValueInvalid",
                    format!("{count}: {label} in body should have at least {min} properties"),
                ));
            }
            validate_object(schema, fields, path, root, out)
        }
        _ => {}
    }
}

/// `allOf`, `anyOf`, `oneOf` and `not`, with kube-openapi's messages (reported, as upstream
/// reports these, against no field: `<nil>`).
fn check_combinators(
    schema: &Value,
    value: &Value,
    path: &str,
    root: bool,
    out: &mut Vec<Violation>,
) {
    let subs = |k: &str| -> Vec<&Value> {
        schema
            .get(k)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter(|s| s.is_object()).collect())
            .unwrap_or_default()
    };
    let run = |sub: &Value| {
        let mut found = Vec::new();
        validate_at(sub, value, path, root, &mut found);
        found
    };
    let composite = |message: String| ("<nil>".to_owned(), "FieldValueInvalid", message);
    let any_of = subs("anyOf");
    if !any_of.is_empty() {
        let results: Vec<Vec<Violation>> = any_of.iter().map(|s| run(s)).collect();
        if !results.iter().any(Vec::is_empty) {
            out.push(composite(format!(
                "\"\": {path:?} must validate at least one schema (anyOf)"
            )));
            out.extend(fewest(results));
        }
    }
    let one_of = subs("oneOf");
    if !one_of.is_empty() {
        let results: Vec<Vec<Violation>> = one_of.iter().map(|s| run(s)).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let found = if valid == 0 {
                "Found none valid".to_owned()
            } else {
                format!("Found {valid} valid alternatives")
            };
            out.push(composite(format!(
                "\"\": {path:?} must validate one and only one schema (oneOf). {found}"
            )));
            if valid == 0 {
                out.extend(fewest(results));
            }
        }
    }
    let all_of = subs("allOf");
    if !all_of.is_empty() {
        let results: Vec<Vec<Violation>> = all_of.iter().map(|s| run(s)).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        out.extend(results.into_iter().flatten());
        if valid != all_of.len() {
            let none = if valid == 0 { ". None validated" } else { "" };
            out.push(composite(format!(
                "\"\": {path:?} must validate all the schemas (allOf){none}"
            )));
        }
    }
    if let Some(not) = schema.get("not").filter(|n| n.is_object())
        && run(not).is_empty()
    {
        out.push(composite(format!(
            "\"\": {path:?} must not validate the schema (not)"
        )));
    }
}

/// Whether two items are equal (in linear time: a hostile list of a hundred thousand
/// items must not hold the store for minutes). Equal JSON values print alike: object keys
/// are kept sorted.
fn has_duplicates(items: &[Value]) -> bool {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    items.iter().any(|item| !seen.insert(item.to_string()))
}

/// The violations of the alternative that came closest.
fn fewest(results: Vec<Vec<Violation>>) -> Vec<Violation> {
    results.into_iter().min_by_key(Vec::len).unwrap_or_default()
}

/// A number as Go's `%v` prints it (`5`, not `5.0`).
fn go_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

fn check_number(schema: &Value, n: f64, value: &Value, path: &str, out: &mut Vec<Violation>) {
    let label = if path.is_empty() { "<root>" } else { path };
    if let Some(factor) = schema.get("multipleOf").and_then(Value::as_f64)
        && factor > 0.0
    {
        let quotient = n / factor;
        if (quotient - quotient.round()).abs() > 1e-9 {
            out.push((
                path.to_owned(),
                "FieldValueInvalid",
                format!(
                    "{value}: {label} in body should be a multiple of {}",
                    go_number(factor)
                ),
            ));
        }
    }
    let bound = |k: &str| schema.get(k).and_then(Value::as_f64);
    let shown_bound = |k: &str| schema.get(k).map(Value::to_string).unwrap_or_default();
    if let Some(min) = bound("minimum") {
        let exclusive = flag(schema, "exclusiveMinimum");
        if n < min || (exclusive && n <= min) {
            let relation = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push((
                path.to_owned(),
                "FieldValueInvalid",
                format!(
                    "{value}: {label} in body should be {relation} {}",
                    shown_bound("minimum")
                ),
            ));
        }
    }
    if let Some(max) = bound("maximum") {
        let exclusive = flag(schema, "exclusiveMaximum");
        if n > max || (exclusive && n >= max) {
            let relation = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push((
                path.to_owned(),
                "FieldValueInvalid",
                format!(
                    "{value}: {label} in body should be {relation} {}",
                    shown_bound("maximum")
                ),
            ));
        }
    }
}

fn validate_object(
    schema: &Value,
    fields: &Map<String, Value>,
    path: &str,
    root: bool,
    out: &mut Vec<Violation>,
) {
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                out.push((join(path, name), "FieldValueRequired", String::new()));
            }
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    for (name, field) in fields {
        if root && ROOT_FIELDS.contains(&name.as_str()) {
            continue;
        }
        if let Some(sub) = properties.and_then(|p| p.get(name)).or(additional) {
            validate_at(sub, field, &join(path, name), false, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "string", "enum": ["small", "large"]},
                        "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                        "port": {"x-kubernetes-int-or-string": true},
                        "name": {"type": "string", "maxLength": 5, "minLength": 1},
                        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "note": {"type": "string", "nullable": true},
                        "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0},
                        "nested": {"type": "object", "default": {},
                                   "properties": {"mode": {"type": "string", "default": "auto"}}},
                    },
                },
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
        })
    }

    #[test]
    fn pruning_keeps_what_the_schema_specifies() {
        let mut v = json!({
            "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "x": 1},
            "spec": {"size": "small", "unknown": 1, "labels": {"a": "b"},
                     "free": {"anything": {"goes": true}}, "note": null, "name": null},
            "extra": true, "status": {"phase": "x"},
        });
        assert_eq!(prune(&schema(), &mut v), ["extra", "spec.unknown"]);
        assert_eq!(
            v,
            json!({
                "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "x": 1},
                "spec": {"size": "small", "labels": {"a": "b"},
                         "free": {"anything": {"goes": true}}, "note": null},
                "status": {"phase": "x"},
            })
        );
    }

    #[test]
    fn defaults_fill_absent_fields_of_present_objects() {
        let mut v = json!({"spec": {"size": "small", "nested": {}}});
        apply_defaults(&schema(), &mut v);
        assert_eq!(v["spec"]["replicas"], 1);
        assert_eq!(v["spec"]["nested"], json!({"mode": "auto"}));
        let mut absent_nested = json!({"spec": {"size": "small"}});
        apply_defaults(&schema(), &mut absent_nested);
        assert_eq!(absent_nested["spec"]["nested"], json!({"mode": "auto"}));
        let mut kept = json!({"spec": {"replicas": 3}});
        apply_defaults(&schema(), &mut kept);
        assert_eq!(kept["spec"]["replicas"], 3);
    }

    #[test]
    fn violations_are_worded_like_upstream() {
        let v = json!({"spec": {"size": "medium", "replicas": "two", "name": "toolong",
                                "tags": ["a", "b", "c"], "port": 80, "ratio": 0,
                                "labels": {"a": 1}}});
        let found = validate(&schema(), &v);
        let text: Vec<String> = found
            .iter()
            .map(|(f, t, m)| format!("{f} {t} {m}"))
            .collect();
        assert_eq!(
            text,
            [
                "spec.labels.a FieldValueTypeInvalid \"integer\": spec.labels.a in body must be of type string: \"integer\"",
                "spec.name FieldValueTooLong may not be more than 5 bytes",
                "spec.ratio FieldValueInvalid 0: spec.ratio in body should be greater than 0",
                "spec.replicas FieldValueTypeInvalid \"string\": spec.replicas in body must be of type integer: \"string\"",
                "spec.size FieldValueNotSupported \"medium\": supported values: \"small\", \"large\"",
                "spec.tags FieldValueTooMany 3: must have at most 2 items",
            ]
        );
        let missing = validate(
            &schema(),
            &json!({"spec": {"replicas": 11, "port": "http"}}),
        );
        let text: Vec<String> = missing
            .iter()
            .map(|(f, t, m)| format!("{f} {t} {m}"))
            .collect();
        assert_eq!(
            text,
            [
                "spec.size FieldValueRequired ",
                "spec.replicas FieldValueInvalid 11: spec.replicas in body should be less than or equal to 10",
            ]
        );
        assert!(validate(&schema(), &json!({"spec": {"size": "large", "note": null}})).is_empty());
    }

    #[test]
    fn patterns_multiples_uniqueness_property_counts_and_combinators() {
        let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "maxProperties": 5,
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "properties": {
            "a": {"type": "string", "pattern": "^[a-z]+$"},
            "b": {"type": "string"},
            "step": {"type": "number", "multipleOf": 0.5},
            "tags": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "labels": {"type": "object", "minProperties": 1,
                       "additionalProperties": {"type": "string"}},
            "mode": {"type": "string", "not": {"enum": ["off"]},
                     "anyOf": [{"enum": ["fast"]}, {"enum": ["slow", "off"]}]},
        }}}});
        let text = |v: Value| -> Vec<String> {
            validate(&schema, &v)
                .iter()
                .map(|(f, t, m)| format!("{f} {t} {m}"))
                .collect()
        };
        assert_eq!(
            text(json!({"spec": {"a": "ok", "step": 1.5, "tags": ["x", "y"],
                                     "labels": {"k": "v"}, "mode": "slow"}})),
            Vec::<String>::new()
        );
        assert_eq!(
            text(
                json!({"spec": {"a": "Not", "b": "x", "step": 0.7, "tags": ["x", "x"],
                                 "labels": {}}})
            ),
            [
                "<nil> FieldValueInvalid \"\": \"spec\" must validate one and only one schema \
                 (oneOf). Found 2 valid alternatives",
                "spec.a FieldValueInvalid \"Not\": spec.a in body should match '^[a-z]+$'",
                "spec.labels FieldValueInvalid 0: spec.labels in body should have at least 1 \
                 properties",
                "spec.step FieldValueInvalid 0.7: spec.step in body should be a multiple of 0.5",
                "spec.tags FieldValueInvalid \"\": spec.tags in body shouldn't contain duplicates",
            ]
        );
        assert_eq!(
            text(json!({"spec": {"mode": "off", "x1": 1, "x2": 2, "x3": 3, "x4": 4, "x5": 5}})),
            [
                "<nil> FieldValueInvalid \"\": \"spec\" must validate one and only one schema \
                 (oneOf). Found none valid",
                "spec.a FieldValueRequired ",
                "spec FieldValueTooMany 6: must have at most 5 items",
                "<nil> FieldValueInvalid \"\": \"spec.mode\" must not validate the schema (not)",
            ]
        );
        assert_eq!(
            text(json!({"spec": {"b": "x", "mode": "medium"}})),
            [
                "<nil> FieldValueInvalid \"\": \"spec.mode\" must validate at least one schema \
                 (anyOf)",
                "spec.mode FieldValueNotSupported \"medium\": supported values: \"fast\"",
            ]
        );
    }

    #[test]
    fn string_formats_are_checked_as_upstream_checks_them() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "mine": {"type": "string", "format": "my-own"}
        }}}});
        let value = json!({"spec": {"at": "yesterday", "mine": "x",
                                    "id": "123e4567-e89b-12d3-a456-426614174000"}});
        assert_eq!(
            validate(&schema, &value),
            [(
                "spec.at".to_owned(),
                "FieldValueTypeInvalid",
                "\"yesterday\": spec.at in body must be of type date-time: \"yesterday\""
                    .to_owned()
            )]
        );
    }

    #[test]
    fn uniqueness_is_checked_in_linear_time() {
        // A hundred thousand distinct items, then one repeated at the end: a quadratic check
        // would take minutes here (debug build); this one takes a moment.
        let schema = json!({"type": "array", "uniqueItems": true, "items": {"type": "object"}});
        let mut items: Vec<Value> = (0..100_000).map(|i| json!({"i": i, "k": "v"})).collect();
        assert!(validate_uniqueness(&schema, &items).is_empty());
        items.push(json!({"k": "v", "i": 7}));
        assert_eq!(validate_uniqueness(&schema, &items).len(), 1);
    }

    fn validate_uniqueness(schema: &Value, items: &[Value]) -> Vec<Violation> {
        let mut out = Vec::new();
        validate_at(
            schema,
            &Value::Array(items.to_vec()),
            "spec.list",
            false,
            &mut out,
        );
        out
    }
}

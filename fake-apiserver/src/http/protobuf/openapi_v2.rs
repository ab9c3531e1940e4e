//! `/openapi/v2` as protobuf: the Swagger 2.0 document encoded as gnostic's `openapi_v2.Document`
//! (`github.com/google/gnostic-models/openapiv2/OpenAPIv2.proto`), which is how client-go's
//! discovery asks for it (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`) and
//! the only form it reads: kubectl's client-side validation of a `kind: List` file takes
//! its schemas from there. Vendor extensions, defaults, enums and examples are gnostic's
//! `Any` values, whose `yaml` text is written as JSON (YAML's subset, read back the same).

use serde_json::{Map, Value};

use super::wire::{put_bytes, put_fixed64, put_varint};

/// The media type the protobuf document is answered as (kube-openapi's handler answers this
/// one also to the older `...spec.v2@v1.0+protobuf`, which Go's `mime` cannot parse).
pub(crate) const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The forms `/openapi/v2` is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    Json,
    Protobuf,
}

/// The form an `Accept` header gets, as kube-openapi's handler chooses it: the first range
/// (by quality, then order) that names JSON, either protobuf type or a wildcard of them,
/// JSON first for a wildcard; none: 406.
pub(crate) fn negotiate(accept: Option<&str>) -> Option<Form> {
    let accept = accept.filter(|a| !a.trim().is_empty()).unwrap_or("*/*");
    let mut ranges: Vec<(f32, usize, &str)> = accept
        .split(',')
        .enumerate()
        .map(|(i, range)| {
            let mut parts = range.split(';');
            let media = parts.next().unwrap_or("").trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (q, i, media)
        })
        .filter(|(q, _, _)| *q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let offered = [
        ("json", Form::Json),
        (
            "com.github.proto-openapi.spec.v2@v1.0+protobuf",
            Form::Protobuf,
        ),
        (
            "com.github.proto-openapi.spec.v2.v1.0+protobuf",
            Form::Protobuf,
        ),
    ];
    ranges.into_iter().find_map(|(_, _, media)| {
        let (kind, sub) = media.split_once('/').unwrap_or((media, ""));
        if kind != "application" && kind != "*" {
            return None;
        }
        offered
            .iter()
            .find(|(s, _)| sub == "*" || sub == *s)
            .map(|(_, form)| *form)
    })
}

/// The document `doc` (the JSON Swagger 2.0 document) as a gnostic `Document`.
pub(crate) fn encode(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(1, doc.get("swagger"), &mut out);
    if let Some(info) = doc.get("info") {
        let mut m = Vec::new();
        string(1, info.get("title"), &mut m);
        string(2, info.get("version"), &mut m);
        string(3, info.get("description"), &mut m);
        extensions(7, info, &mut m);
        put_bytes(2, &m, &mut out);
    }
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        let mut m = Vec::new();
        for (name, item) in paths {
            let mut named = Vec::new();
            put_bytes(1, name.as_bytes(), &mut named);
            put_bytes(2, &path_item(item), &mut named);
            put_bytes(2, &named, &mut m);
        }
        put_bytes(8, &m, &mut out);
    }
    if let Some(definitions) = doc.get("definitions").and_then(Value::as_object) {
        put_bytes(9, &named_schemas(definitions), &mut out);
    }
    extensions(16, doc, &mut out);
    out
}

fn string(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    if let Some(s) = value.and_then(Value::as_str).filter(|s| !s.is_empty()) {
        put_bytes(number, s.as_bytes(), out);
    }
}

fn strings(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    for s in value.and_then(Value::as_array).into_iter().flatten() {
        if let Some(s) = s.as_str() {
            put_bytes(number, s.as_bytes(), out);
        }
    }
}

fn boolean(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    if value.and_then(Value::as_bool) == Some(true) {
        put_varint(number, 1, out);
    }
}

fn int64(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    if let Some(n) = value.and_then(Value::as_i64).filter(|n| *n != 0) {
        // Two's complement, as an int64 field carries a negative number.
        put_varint(number, n.cast_unsigned(), out);
    }
}

fn double(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    if let Some(n) = value.and_then(Value::as_f64).filter(|n| *n != 0.0) {
        put_fixed64(number, n.to_bits(), out);
    }
}

/// gnostic's `Any`: the value's text in its `yaml` field.
fn any(value: &Value) -> Vec<u8> {
    let mut m = Vec::new();
    put_bytes(2, value.to_string().as_bytes(), &mut m);
    m
}

fn any_field(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    if let Some(v) = value {
        put_bytes(number, &any(v), out);
    }
}

/// The `x-` keys of `object` as `NamedAny` entries of field `number`.
fn extensions(number: u32, object: &Value, out: &mut Vec<u8>) {
    for (name, value) in object.as_object().into_iter().flatten() {
        if name.starts_with("x-") {
            let mut named = Vec::new();
            put_bytes(1, name.as_bytes(), &mut named);
            put_bytes(2, &any(value), &mut named);
            put_bytes(number, &named, out);
        }
    }
}

fn named_schemas(schemas: &Map<String, Value>) -> Vec<u8> {
    let mut m = Vec::new();
    for (name, schema) in schemas {
        let mut named = Vec::new();
        put_bytes(1, name.as_bytes(), &mut named);
        put_bytes(2, &schema_message(schema), &mut named);
        put_bytes(1, &named, &mut m);
    }
    m
}

/// A JSON schema as gnostic's `Schema`.
fn schema_message(s: &Value) -> Vec<u8> {
    let mut m = Vec::new();
    string(1, s.get("$ref"), &mut m);
    string(2, s.get("format"), &mut m);
    string(3, s.get("title"), &mut m);
    string(4, s.get("description"), &mut m);
    any_field(5, s.get("default"), &mut m);
    double(6, s.get("multipleOf"), &mut m);
    double(7, s.get("maximum"), &mut m);
    boolean(8, s.get("exclusiveMaximum"), &mut m);
    double(9, s.get("minimum"), &mut m);
    boolean(10, s.get("exclusiveMinimum"), &mut m);
    int64(11, s.get("maxLength"), &mut m);
    int64(12, s.get("minLength"), &mut m);
    string(13, s.get("pattern"), &mut m);
    int64(14, s.get("maxItems"), &mut m);
    int64(15, s.get("minItems"), &mut m);
    boolean(16, s.get("uniqueItems"), &mut m);
    int64(17, s.get("maxProperties"), &mut m);
    int64(18, s.get("minProperties"), &mut m);
    strings(19, s.get("required"), &mut m);
    for value in s
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(20, &any(value), &mut m);
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut item = Vec::new();
            put_varint(2, u64::from(*b), &mut item);
            put_bytes(21, &item, &mut m);
        }
        Some(schema @ Value::Object(_)) => {
            let mut item = Vec::new();
            put_bytes(1, &schema_message(schema), &mut item);
            put_bytes(21, &item, &mut m);
        }
        _ => {}
    }
    let types: Vec<&str> = match s.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() {
        let mut item = Vec::new();
        for t in types {
            put_bytes(1, t.as_bytes(), &mut item);
        }
        put_bytes(22, &item, &mut m);
    }
    let items: Vec<&Value> = match s.get("items") {
        Some(one @ Value::Object(_)) => vec![one],
        Some(Value::Array(many)) => many.iter().collect(),
        _ => Vec::new(),
    };
    if !items.is_empty() {
        let mut item = Vec::new();
        for schema in items {
            put_bytes(1, &schema_message(schema), &mut item);
        }
        put_bytes(23, &item, &mut m);
    }
    for schema in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        put_bytes(24, &schema_message(schema), &mut m);
    }
    if let Some(properties) = s.get("properties").and_then(Value::as_object) {
        put_bytes(25, &named_schemas(properties), &mut m);
    }
    string(26, s.get("discriminator"), &mut m);
    boolean(27, s.get("readOnly"), &mut m);
    any_field(30, s.get("example"), &mut m);
    extensions(31, s, &mut m);
    m
}

fn path_item(item: &Value) -> Vec<u8> {
    let mut m = Vec::new();
    string(1, item.get("$ref"), &mut m);
    for (number, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = item.get(method) {
            put_bytes(number, &operation(op), &mut m);
        }
    }
    parameters(9, item.get("parameters"), &mut m);
    extensions(10, item, &mut m);
    m
}

fn operation(op: &Value) -> Vec<u8> {
    let mut m = Vec::new();
    strings(1, op.get("tags"), &mut m);
    string(2, op.get("summary"), &mut m);
    string(3, op.get("description"), &mut m);
    string(5, op.get("operationId"), &mut m);
    strings(6, op.get("produces"), &mut m);
    strings(7, op.get("consumes"), &mut m);
    parameters(8, op.get("parameters"), &mut m);
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        let mut r = Vec::new();
        for (code, response) in responses {
            let mut body = Vec::new();
            string(1, response.get("description"), &mut body);
            if let Some(schema) = response.get("schema") {
                let mut item = Vec::new();
                put_bytes(1, &schema_message(schema), &mut item);
                put_bytes(2, &item, &mut body);
            }
            extensions(5, response, &mut body);
            let mut value = Vec::new();
            put_bytes(1, &body, &mut value);
            let mut named = Vec::new();
            put_bytes(1, code.as_bytes(), &mut named);
            put_bytes(2, &value, &mut named);
            put_bytes(1, &named, &mut r);
        }
        put_bytes(9, &r, &mut m);
    }
    strings(10, op.get("schemes"), &mut m);
    boolean(11, op.get("deprecated"), &mut m);
    extensions(13, op, &mut m);
    m
}

/// Parameters as `ParametersItem`s of field `number`: a body parameter, or a query, path,
/// header or form parameter (each its own gnostic message, with its own field numbers).
fn parameters(number: u32, value: Option<&Value>, out: &mut Vec<u8>) {
    for p in value.and_then(Value::as_array).into_iter().flatten() {
        let location = p.get("in").and_then(Value::as_str).unwrap_or("");
        let parameter = if location == "body" {
            let mut body = Vec::new();
            string(1, p.get("description"), &mut body);
            string(2, p.get("name"), &mut body);
            string(3, p.get("in"), &mut body);
            boolean(4, p.get("required"), &mut body);
            if let Some(schema) = p.get("schema") {
                put_bytes(5, &schema_message(schema), &mut body);
            }
            extensions(6, p, &mut body);
            let mut parameter = Vec::new();
            put_bytes(1, &body, &mut parameter);
            parameter
        } else {
            // Query and form parameters have `allowEmptyValue` (field 5) before the rest,
            // which then sits one field further on.
            let (variant, shift) = match location {
                "header" => (1, 0),
                "formData" => (2, 1),
                "query" => (3, 1),
                _ => (4, 0),
            };
            let mut sub = Vec::new();
            boolean(1, p.get("required"), &mut sub);
            string(2, p.get("in"), &mut sub);
            string(3, p.get("description"), &mut sub);
            string(4, p.get("name"), &mut sub);
            if shift == 1 {
                boolean(5, p.get("allowEmptyValue"), &mut sub);
            }
            string(5 + shift, p.get("type"), &mut sub);
            string(6 + shift, p.get("format"), &mut sub);
            string(8 + shift, p.get("collectionFormat"), &mut sub);
            any_field(9 + shift, p.get("default"), &mut sub);
            string(16 + shift, p.get("pattern"), &mut sub);
            boolean(19 + shift, p.get("uniqueItems"), &mut sub);
            for value in p
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                put_bytes(20 + shift, &any(value), &mut sub);
            }
            extensions(22 + shift, p, &mut sub);
            let mut non_body = Vec::new();
            put_bytes(variant, &sub, &mut non_body);
            let mut parameter = Vec::new();
            put_bytes(2, &non_body, &mut parameter);
            parameter
        };
        let mut item = Vec::new();
        put_bytes(1, &parameter, &mut item);
        put_bytes(number, &item, out);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::wire::{Raw, Reader};
    use super::*;

    /// The length-delimited fields `number` of `message`.
    fn fields(message: &[u8], number: u32) -> Vec<&[u8]> {
        let mut reader = Reader::new(message);
        let mut out = Vec::new();
        while let Some((n, raw)) = reader.next_field().unwrap() {
            if let (true, Raw::Bytes(b)) = (n == number, raw) {
                out.push(b);
            }
        }
        out
    }

    fn text(message: &[u8], number: u32) -> Vec<String> {
        fields(message, number)
            .into_iter()
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn the_document_is_encoded_with_gnostic_s_field_numbers() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "t", "version": "v1.37.0"},
            "paths": {"/api/v1/pods": {"get": {
                "operationId": "listPods",
                "parameters": [
                    {"name": "limit", "in": "query", "type": "integer", "uniqueItems": true},
                    {"name": "body", "in": "body", "required": true, "schema": {"type": "object"}},
                ],
                "responses": {"200": {"description": "OK",
                    "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.PodList"}}},
                "x-kubernetes-action": "list",
            }}},
            "definitions": {"io.k8s.api.core.v1.Pod": {
                "description": "Pod",
                "required": ["spec"],
                "properties": {"spec": {"type": "object", "additionalProperties": false}},
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}],
            }},
        });
        let encoded = encode(&doc);
        assert_eq!(text(&encoded, 1), ["2.0"]);
        let info = fields(&encoded, 2)[0];
        assert_eq!(
            (text(info, 1), text(info, 2)),
            (vec!["t".into()], vec!["v1.37.0".into()])
        );
        // paths (8) → NamedPathItem (2) → PathItem (2: get) → Operation.
        let path = fields(fields(&encoded, 8)[0], 2)[0];
        assert_eq!(text(path, 1), ["/api/v1/pods"]);
        let get = fields(fields(path, 2)[0], 2)[0];
        assert_eq!(text(get, 5), ["listPods"]);
        let params = fields(get, 8);
        // ParametersItem (1: parameter) → Parameter (2: non-body) → (3: query) → name (4).
        let query = fields(fields(fields(params[0], 1)[0], 2)[0], 3)[0];
        assert_eq!(
            (text(query, 4), text(query, 6)),
            (vec!["limit".into()], vec!["integer".into()])
        );
        // (1: body) → BodyParameter: name (2), schema (5) with type (22).
        let body = fields(fields(params[1], 1)[0], 1)[0];
        assert_eq!(text(body, 2), ["body"]);
        assert_eq!(text(fields(fields(body, 5)[0], 22)[0], 1), ["object"]);
        // responses (9) → NamedResponseValue → ResponseValue (1) → Response: schema $ref.
        let response = fields(fields(fields(get, 9)[0], 1)[0], 2)[0];
        let response = fields(response, 1)[0];
        assert_eq!(text(response, 1), ["OK"]);
        let schema = fields(fields(response, 2)[0], 1)[0];
        assert_eq!(
            text(schema, 1),
            ["#/definitions/io.k8s.api.core.v1.PodList"]
        );
        let extension = fields(get, 13)[0];
        assert_eq!(text(extension, 1), ["x-kubernetes-action"]);
        assert_eq!(text(fields(extension, 2)[0], 2), ["\"list\""]);
        // definitions (9) → NamedSchema (1) → Schema.
        let named = fields(fields(&encoded, 9)[0], 1)[0];
        assert_eq!(text(named, 1), ["io.k8s.api.core.v1.Pod"]);
        let pod = fields(named, 2)[0];
        assert_eq!(text(pod, 4), ["Pod"]);
        assert_eq!(text(pod, 19), ["spec"]);
        let spec = fields(fields(fields(pod, 25)[0], 1)[0], 2)[0];
        // additionalProperties: false (AdditionalPropertiesItem's boolean, field 2, absent
        // as proto3 writes a false).
        assert_eq!(fields(spec, 21).len(), 1);
        let gvk = fields(pod, 31)[0];
        assert_eq!(text(gvk, 1), ["x-kubernetes-group-version-kind"]);
        let yaml: Value = serde_json::from_str(&text(fields(gvk, 2)[0], 2)[0]).unwrap();
        assert_eq!(yaml[0]["kind"], "Pod");
    }

    #[test]
    fn accept_headers_choose_the_form_as_kube_openapi_s_handler_does() {
        assert_eq!(negotiate(None), Some(Form::Json));
        assert_eq!(negotiate(Some("application/json")), Some(Form::Json));
        assert_eq!(
            negotiate(Some(
                "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
            )),
            Some(Form::Protobuf)
        );
        assert_eq!(
            negotiate(Some(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )),
            Some(Form::Protobuf)
        );
        assert_eq!(negotiate(Some("*/*")), Some(Form::Json));
        assert_eq!(negotiate(Some("application/xml")), None);
    }
}

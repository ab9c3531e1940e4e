//! Just enough OpenAPI for kubectl: `/openapi/v3` (the index) and one document per group
//! version with every resource's paths and operations (a review's `POST` alone), and
//! `/openapi/v2` with the same paths. The reviews are in them so that `kubectl create -f` of
//! a review finds its kind.
//!
//! kubectl 1.32 reads these to learn whether the server validates fields itself: when the
//! `PATCH` operation of a kind lists the `fieldValidation` query parameter, `kubectl create`
//! and `kubectl apply` send `fieldValidation=Strict` and skip client-side schema validation.
//! The schemas of built-in kinds are deliberately open (`x-kubernetes-preserve-unknown-fields`):
//! the server checks their fields itself (`typed`), and a closed schema without upstream's
//! patch strategies would change how kubectl computes its patches; a custom resource with a schema publishes its
//! CRD's schema (what it validates against), so `kubectl explain` shows its fields. Patch operations do not offer strategic merge
//! patches in the document, so client-side `kubectl apply` computes its patch from kubectl's
//! built-in types (built-in kinds) or as a JSON merge patch (custom resources).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::discovery::{GroupVersions, KUBERNETES_VERSION};
use crate::ResourceDef;

/// The document path of a group version: `api/v1`, `apis/apps/v1`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// `GET /openapi/v3`: the index of group-version documents, each with a content hash.
pub(crate) fn v3_index(gvs: &GroupVersions) -> Value {
    let mut paths = Map::new();
    for (group, versions) in &gvs.groups {
        for (version, defs) in versions {
            let path = gv_path(group, version);
            let hash = content_hash(&v3_document(gvs, defs));
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={hash}")}),
            );
        }
    }
    json!({"paths": paths})
}

/// `GET /openapi/v3/<gv path>`: the group version's document, `None` if not served.
pub(crate) fn v3_for_path(gvs: &GroupVersions, path: &str) -> Option<Value> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version) = match segments.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return None,
    };
    let defs = gvs.resources(group, version)?;
    Some(v3_document(gvs, defs))
}

/// `GET /openapi/v2`: every resource's paths in one Swagger 2.0 document.
pub(crate) fn v2_document(gvs: &GroupVersions) -> Value {
    let mut paths = Map::new();
    let mut definitions = Map::new();
    for (_, versions) in &gvs.groups {
        for (_, defs) in versions {
            for def in defs {
                add_paths(&mut paths, def, gvs.is_create_only(def), Dialect::V2);
                // Open schemas only: Swagger 2.0 has no `nullable` and friends, and kubectl
                // reads the v3 documents for `explain`.
                for list in [false, true] {
                    let mut schema = open_schema(def, list);
                    to_v2(&mut schema);
                    definitions.insert(schema_name(def, list), schema);
                }
            }
        }
    }
    json!({
        "swagger": "2.0",
        "info": info(),
        "paths": paths,
        "definitions": definitions,
    })
}

/// A schema as upstream publishes it in OpenAPI v2 (apiextensions-apiserver's
/// `ToStructuralOpenAPIV2`, which exists because kubectl's client-side validation cannot cope
/// otherwise): no `allOf`, `oneOf`, `anyOf` or `not`; a `nullable` schema untyped and without
/// items or properties; one that preserves unknown fields without items, properties or the
/// `object` type (kubectl would refuse the fields it does not list); an array without items
/// untyped.
fn to_v2(schema: &mut Value) {
    let Value::Object(s) = schema else {
        return;
    };
    for junctor in ["allOf", "oneOf", "anyOf", "not"] {
        s.remove(junctor);
    }
    if s.remove("nullable") == Some(Value::Bool(true)) {
        s.remove("type");
        s.remove("items");
        s.remove("properties");
    }
    let preserves = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
    if preserves {
        s.remove("items");
        s.remove("properties");
    }
    let kind = s.get("type").and_then(Value::as_str);
    if (kind == Some("array") && !s.contains_key("items")) || (preserves && kind == Some("object"))
    {
        s.remove("type");
    }
    if let Some(Value::Object(properties)) = s.get_mut("properties") {
        properties.values_mut().for_each(to_v2);
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(v) = s.get_mut(nested) {
            to_v2(v);
        }
    }
}

fn info() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({"title": "Kubernetes (fake API server)", "version": format!("v{major}.{minor}.0")})
}

fn v3_document(gvs: &GroupVersions, defs: &[Arc<ResourceDef>]) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for def in defs {
        add_paths(&mut paths, def, gvs.is_create_only(def), Dialect::V3);
        schemas.insert(schema_name(def, false), object_schema(def, false));
        schemas.insert(schema_name(def, true), object_schema(def, true));
    }
    json!({
        "openapi": "3.0.0",
        "info": info(),
        "paths": paths,
        "components": {"schemas": schemas},
    })
}

fn content_hash(doc: &Value) -> String {
    let mut h = DefaultHasher::new();
    doc.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

/// The definition name: `io.k8s.api.core.v1.Pod` for built-in kinds (as the real server
/// names them), the reversed group otherwise (`com.example.v1.Widget`).
fn schema_name(def: &ResourceDef, list: bool) -> String {
    if let Some(d) = &def.definition {
        return if list {
            format!("{}{}", d.trim_end_matches(def.kind.as_str()), def.list_kind)
        } else {
            d.clone()
        };
    }
    let kind = if list { &def.list_kind } else { &def.kind };
    let prefix = def.group.split('.').rev().collect::<Vec<_>>().join(".");
    format!("{prefix}.{}.{kind}", def.version)
}

fn gvk(def: &ResourceDef, list: bool) -> Value {
    json!({
        "group": def.group,
        "version": def.version,
        "kind": if list { &def.list_kind } else { &def.kind },
    })
}

fn object_schema(def: &ResourceDef, list: bool) -> Value {
    match (&def.schema, list) {
        (Some(schema), false) => custom_resource_schema(def, schema),
        _ => open_schema(def, list),
    }
}

fn open_schema(def: &ResourceDef, list: bool) -> Value {
    let mut props = json!({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
    });
    if list {
        props["items"] = json!({"type": "array", "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}});
    }
    json!({
        "description": format!("{} (schemaless in the fake API server)", if list { &def.list_kind } else { &def.kind }),
        "type": "object",
        "properties": props,
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-group-version-kind": [gvk(def, list)],
    })
}

/// A custom resource's published schema: its CRD's structural schema, with `apiVersion`,
/// `kind` and an open `metadata` added where the schema leaves them out (as the real server
/// publishes a CRD's schema), so `kubectl explain` walks its fields and descriptions.
fn custom_resource_schema(def: &ResourceDef, schema: &Value) -> Value {
    let mut published = schema.clone();
    if let Value::Object(root) = &mut published {
        root.entry("type").or_insert_with(|| json!("object"));
        if let Value::Object(props) = root.entry("properties").or_insert_with(|| json!({})) {
            props
                .entry("apiVersion")
                .or_insert_with(|| json!({"type": "string"}));
            props
                .entry("kind")
                .or_insert_with(|| json!({"type": "string"}));
            props.insert(
                "metadata".into(),
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            );
        }
        root.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([gvk(def, false)]),
        );
    }
    published
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V2,
    V3,
}

fn query_param(name: &str, kind: &str, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V3 => {
            json!({"name": name, "in": "query", "schema": {"type": kind, "uniqueItems": true}})
        }
        Dialect::V2 => json!({"name": name, "in": "query", "type": kind, "uniqueItems": true}),
    }
}

fn path_param(name: &str, dialect: Dialect) -> Value {
    match dialect {
        Dialect::V3 => {
            json!({"name": name, "in": "path", "required": true, "schema": {"type": "string", "uniqueItems": true}})
        }
        Dialect::V2 => {
            json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true})
        }
    }
}

fn schema_ref(def: &ResourceDef, list: bool, dialect: Dialect) -> Value {
    let name = schema_name(def, list);
    match dialect {
        Dialect::V3 => json!({"$ref": format!("#/components/schemas/{name}")}),
        Dialect::V2 => json!({"$ref": format!("#/definitions/{name}")}),
    }
}

fn responses(def: &ResourceDef, list: bool, codes: &[&str], dialect: Dialect) -> Value {
    let mut out = Map::new();
    for code in codes {
        let r = match dialect {
            Dialect::V3 => json!({
                "description": "OK",
                "content": {"application/json": {"schema": schema_ref(def, list, dialect)}},
            }),
            Dialect::V2 => json!({"description": "OK", "schema": schema_ref(def, list, dialect)}),
        };
        out.insert((*code).to_owned(), r);
    }
    Value::Object(out)
}

/// One operation of a path.
struct Op<'a> {
    id: String,
    action: &'a str,
    params: Vec<Value>,
    body_types: &'a [&'a str],
    list: bool,
    codes: &'a [&'a str],
}

fn operation(def: &ResourceDef, op: Op<'_>, dialect: Dialect) -> Value {
    let mut out = json!({
        "operationId": op.id,
        "parameters": op.params,
        "responses": responses(def, op.list, op.codes, dialect),
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": gvk(def, false),
    });
    if !op.body_types.is_empty() {
        match dialect {
            Dialect::V3 => {
                let content: Map<String, Value> = op
                    .body_types
                    .iter()
                    .map(|t| ((*t).to_owned(), json!({"schema": {"type": "object"}})))
                    .collect();
                out["requestBody"] = json!({"content": content, "required": true});
            }
            Dialect::V2 => {
                out["consumes"] = json!(op.body_types);
                if let Some(p) = out["parameters"].as_array_mut() {
                    p.push(json!({"name": "body", "in": "body", "required": true, "schema": {"type": "object"}}));
                }
            }
        }
    }
    out
}

const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The paths of one resource: every operation, or (`create_only`, a review) its `POST`.
fn add_paths(paths: &mut Map<String, Value>, def: &ResourceDef, create_only: bool, d: Dialect) {
    let write_params = |force: bool| {
        let mut p = vec![
            query_param("dryRun", "string", d),
            query_param("fieldManager", "string", d),
            query_param("fieldValidation", "string", d),
        ];
        if force {
            p.push(query_param("force", "boolean", d));
        }
        p
    };
    let list_params = || {
        [
            ("allowWatchBookmarks", "boolean"),
            ("continue", "string"),
            ("fieldSelector", "string"),
            ("labelSelector", "string"),
            ("limit", "integer"),
            ("resourceVersion", "string"),
            ("resourceVersionMatch", "string"),
            ("sendInitialEvents", "boolean"),
            ("timeoutSeconds", "integer"),
            ("watch", "boolean"),
        ]
        .iter()
        .map(|(n, t)| query_param(n, t, d))
        .collect::<Vec<_>>()
    };
    let scope = if def.namespaced { "Namespaced" } else { "" };
    let id = |verb: &str| {
        let group: String = def
            .group
            .split('.')
            .next()
            .filter(|g| !g.is_empty())
            .map_or_else(|| "Core".to_owned(), capitalize);
        format!(
            "{verb}{group}{}{scope}{}",
            capitalize(&def.version),
            def.kind
        )
    };
    let base = if def.namespaced {
        format!(
            "{}/namespaces/{{namespace}}/{}",
            def.group_version_path(),
            def.plural
        )
    } else {
        format!("{}/{}", def.group_version_path(), def.plural)
    };
    let mut scope_params = Vec::new();
    if def.namespaced {
        scope_params.push(path_param("namespace", d));
    }
    let with = |mut a: Vec<Value>, b: Vec<Value>| {
        a.extend(b);
        a
    };
    if create_only {
        paths.insert(
            base,
            json!({
                "post": operation(def, Op { id: id("create"), action: "post", params: with(scope_params, write_params(false)), body_types: &["application/json"], list: false, codes: &["200", "201", "202"] }, d),
            }),
        );
        return;
    }
    paths.insert(
        base.clone(),
        json!({
            "get": operation(def, Op { id: id("list"), action: "list", params: with(scope_params.clone(), list_params()), body_types: &[], list: true, codes: &["200"] }, d),
            "post": operation(def, Op { id: id("create"), action: "post", params: with(scope_params.clone(), write_params(false)), body_types: &["application/json"], list: false, codes: &["200", "201", "202"] }, d),
            "delete": operation(def, Op { id: id("deleteCollection"), action: "deletecollection", params: with(scope_params.clone(), list_params()), body_types: &[], list: false, codes: &["200"] }, d),
        }),
    );
    let mut item_params = scope_params.clone();
    item_params.push(path_param("name", d));
    paths.insert(
        format!("{base}/{{name}}"),
        json!({
            "get": operation(def, Op { id: id("read"), action: "get", params: item_params.clone(), body_types: &[], list: false, codes: &["200"] }, d),
            "put": operation(def, Op { id: id("replace"), action: "put", params: with(item_params.clone(), write_params(false)), body_types: &["application/json"], list: false, codes: &["200", "201"] }, d),
            "patch": operation(def, Op { id: id("patch"), action: "patch", params: with(item_params.clone(), write_params(true)), body_types: PATCH_TYPES, list: false, codes: &["200", "201"] }, d),
            "delete": operation(def, Op { id: id("delete"), action: "delete", params: item_params, body_types: &[], list: false, codes: &["200", "202"] }, d),
        }),
    );
    if def.namespaced {
        paths.insert(
            format!("{}/{}", def.group_version_path(), def.plural),
            json!({
                "get": operation(def, Op { id: format!("{}ForAllNamespaces", id("list").replace("Namespaced", "")), action: "list", params: list_params(), body_types: &[], list: true, codes: &["200"] }, d),
            }),
        );
    }
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gvs() -> GroupVersions {
        let defs: Vec<Arc<ResourceDef>> =
            ResourceDef::builtins().into_iter().map(Arc::new).collect();
        GroupVersions::new(&defs)
    }

    /// What kubectl's field-validation check looks for: a PATCH operation tagged with the
    /// kind that lists `fieldValidation`.
    fn patch_supports_field_validation(doc: &Value, kind: &str) -> bool {
        doc["paths"].as_object().unwrap().values().any(|p| {
            let op = &p["patch"];
            op["x-kubernetes-group-version-kind"]["kind"] == kind
                && op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|q| q["name"] == "fieldValidation")
        })
    }

    #[test]
    fn index_points_at_documents_with_field_validation() {
        let gvs = gvs();
        let index = v3_index(&gvs);
        let url = index["paths"]["api/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        assert!(url.starts_with("/openapi/v3/api/v1?hash="), "{url}");
        assert!(index["paths"]["apis/apps/v1"].is_object());
        let core = v3_for_path(&gvs, "api/v1").unwrap();
        assert!(patch_supports_field_validation(&core, "Pod"));
        assert!(core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["get"].is_object());
        assert!(core["paths"]["/api/v1/nodes/{name}"]["get"].is_object());
        assert_eq!(
            core["components"]["schemas"]["io.k8s.api.core.v1.Pod"]["x-kubernetes-group-version-kind"]
                [0]["kind"],
            "Pod"
        );
        assert!(v3_for_path(&gvs, "apis/batch/v1").is_some());
        assert!(v3_for_path(&gvs, "apis/example.com/v1").is_none());
        let v2 = v2_document(&gvs);
        assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
    }

    #[test]
    fn operation_ids_follow_the_server_naming() {
        let gvs = gvs();
        let core = v3_for_path(&gvs, "api/v1").unwrap();
        let ops = &core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"];
        assert_eq!(ops["patch"]["operationId"], "patchCoreV1NamespacedPod");
        let apps = v3_for_path(&gvs, "apis/apps/v1").unwrap();
        assert_eq!(
            apps["paths"]["/apis/apps/v1/deployments"]["get"]["operationId"],
            "listAppsV1DeploymentForAllNamespaces"
        );
    }
}

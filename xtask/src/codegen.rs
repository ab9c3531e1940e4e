//! `cargo xtask codegen [--check]`: the fake API server's data tables, generated from the
//! sources of the crates that describe the Kubernetes API, so that nothing about the built-in
//! resources is typed by hand.
//!
//! - `fake-apiserver/src/builtin_resources.txt`: every built-in resource of the
//!   Kubernetes version we target, read from k8s-openapi's `Resource` and `ListableResource`
//!   impls (group, version, kind, list kind, plural, scope) plus whether the type has a
//!   `status` field (then the real server has a `status` subresource) and its OpenAPI
//!   definition name. Only stable versions (`v1`, `v2`, ...), every stable version of a
//!   resource, newest first (HPAs: autoscaling/v2, then v1, which the fake server serves as
//!   a view of the same objects, converted as upstream converts them).
//! - `fake-apiserver/src/http/protobuf/schema.txt`: the protobuf schema of those resources
//!   (and of their lists, `Status`, `DeleteOptions`, autoscaling/v1 `Scale` and the review
//!   kinds the server answers without storing them): every
//!   message reachable from them with each field's number, wire type and JSON name. Field
//!   numbers and types come from k8s-pb's prost attributes, JSON names from k8s-openapi's
//!   serde field tables, matched by module path and name.
//!
//! Both crates are read from cargo's registry (`$CARGO_HOME/registry/src/*/<crate>-<version>`)
//! at the versions `Cargo.lock` pins. `--check` compares instead of writing (CI runs it), so a
//! dependency update that changes the API fails CI until the tables are regenerated.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The k8s-openapi version module we target (its `latest` feature).
const OPENAPI_VERSION_DIR: &str = "v1_37";

/// Messages that are encoded as something other than their fields in JSON: the codec maps
/// them by name, so their fields are not needed, but they are listed so a reader sees them.
const SPECIAL: &[&str] = &[
    "apimachinery.pkg.apis.meta.v1.Time",
    "apimachinery.pkg.apis.meta.v1.MicroTime",
    "apimachinery.pkg.apis.meta.v1.Duration",
    "apimachinery.pkg.apis.meta.v1.FieldsV1",
    "apimachinery.pkg.api.resource.Quantity",
    "apimachinery.pkg.util.intstr.IntOrString",
    "apimachinery.pkg.runtime.RawExtension",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.Json",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool",
    "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray",
];

/// Extra protobuf roots besides the served resources and their lists.
const EXTRA_ROOTS: &[&str] = &[
    "apimachinery.pkg.apis.meta.v1.Status",
    "apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "api.autoscaling.v1.Scale",
    // The review APIs (create-only, answered without storage): kubectl sends them in protobuf.
    "api.authorization.v1.SelfSubjectAccessReview",
    "api.authorization.v1.SelfSubjectRulesReview",
    "api.authorization.v1.SubjectAccessReview",
    "api.authorization.v1.LocalSubjectAccessReview",
    "api.authentication.v1.SelfSubjectReview",
    "api.authentication.v1.TokenReview",
    // `pods/<name>/eviction`: client-go clients configured for protobuf post it so.
    "api.policy.v1.Eviction",
    // `serviceaccounts/<name>/token`: `kubectl create token` posts it in protobuf.
    "api.authentication.v1.TokenRequest",
];

/// Kinds besides the served resources whose Go types the fake server decodes requests into
/// (k8s-openapi paths): what a subresource is posted.
const EXTRA_TYPE_ROOTS: &[&str] = &["api.authentication.v1.TokenRequest"];

/// Rust field names k8s-pb and k8s-openapi spell differently (k8s-pb's first).
const FIELD_ALIASES: &[(&str, &str)] = &[("ref", "ref_path")];

pub(crate) fn run(args: &[String]) -> Result<(), String> {
    let check = match args {
        [] => false,
        [flag] if flag == "--check" => true,
        other => return Err(format!("codegen: unexpected arguments {other:?}")),
    };
    let root = workspace_root();
    let openapi = crate_source(&root, "k8s-openapi")?;
    let pb = crate_source(&root, "k8s-pb")?;
    let api = read_openapi(&openapi.join("src").join(OPENAPI_VERSION_DIR))?;
    let messages = read_pb(&pb.join("src"))?;
    let resources = served_resources(&api);
    let resources_txt = render_resources(&resources, &api, &messages, &openapi);
    let schema_txt = render_schema(&resources, &api, &messages, &openapi, &pb)?;
    let types_txt = render_types(&resources, &api, &openapi)?;
    let outputs = [
        (
            root.join("fake-apiserver/src/builtin_resources.txt"),
            resources_txt,
        ),
        (
            root.join("fake-apiserver/src/http/protobuf/schema.txt"),
            schema_txt,
        ),
        (root.join("fake-apiserver/src/builtin_types.txt"), types_txt),
    ];
    let mut stale = Vec::new();
    for (path, text) in &outputs {
        let current = fs::read_to_string(path).unwrap_or_default();
        if current == *text {
            continue;
        }
        if check {
            stale.push(path.display().to_string());
        } else {
            fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            println!("codegen: wrote {}", path.display());
        }
    }
    if !stale.is_empty() {
        return Err(format!(
            "generated files are stale (run `cargo xtask codegen`): {}",
            stale.join(", ")
        ));
    }
    println!(
        "codegen: {} resources, {} protobuf messages: {}",
        resources.len(),
        outputs[1].1.lines().filter(|l| l.starts_with("M ")).count(),
        if check { "up to date" } else { "done" }
    );
    Ok(())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_owned)
}

/// The unpacked source of `name` at the version `Cargo.lock` pins. The source of a crate
/// that only tests use (k8s-pb) is not unpacked until those tests are built: on a fresh
/// machine, `codegen --check` runs before any test is built, so a source that is not there is
/// fetched (`cargo fetch --locked`, which downloads and unpacks every locked package) and
/// looked for again.
fn crate_source(root: &Path, name: &str) -> Result<PathBuf, String> {
    let lock = fs::read_to_string(root.join("Cargo.lock"))
        .map_err(|e| format!("cannot read Cargo.lock: {e}"))?;
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    match find_crate_source(&lock, &home, name)? {
        Source::Found(found) => Ok(found),
        Source::NotUnpacked(missing) => {
            fetch_locked(root).map_err(|e| format!("{missing}; {e}"))?;
            match find_crate_source(&lock, &home, name)? {
                Source::Found(found) => Ok(found),
                Source::NotUnpacked(missing) => Err(format!("{missing}, even after a fetch")),
            }
        }
    }
}

/// Where a crate's source is, if it is unpacked.
#[derive(Debug, PartialEq)]
enum Source {
    Found(PathBuf),
    /// Not (yet) in the registry: what was looked for, and where.
    NotUnpacked(String),
}

/// `cargo fetch --locked` in the workspace, with the cargo that runs xtask.
fn fetch_locked(root: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!("codegen: fetching the locked dependencies' sources (cargo fetch --locked)");
    let status = std::process::Command::new(&cargo)
        .args(["fetch", "--locked"])
        .current_dir(root)
        .status()
        .map_err(|e| format!("cannot run `cargo fetch --locked`: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`cargo fetch --locked` failed ({status})"))
    }
}

/// [`crate_source`] without fetching: the version `lock` (a `Cargo.lock`) pins, looked for
/// in the registry of the cargo home `home`.
fn find_crate_source(lock: &str, home: &Path, name: &str) -> Result<Source, String> {
    let needle = format!("name = \"{name}\"\nversion = \"");
    let start = lock
        .find(&needle)
        .ok_or_else(|| format!("{name} is not in Cargo.lock"))?
        + needle.len();
    let version = &lock[start..start + lock[start..].find('"').unwrap_or(0)];
    let registry = home.join("registry").join("src");
    let missing = || {
        Source::NotUnpacked(format!(
            "the source of {name} {version} is not unpacked under {}",
            registry.display()
        ))
    };
    let dirs = match fs::read_dir(&registry) {
        Ok(dirs) => dirs,
        // No registry yet (a fresh `CARGO_HOME`): a fetch makes it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(missing()),
        Err(e) => return Err(format!("cannot read {}: {e}", registry.display())),
    };
    for dir in dirs.flatten() {
        let candidate = dir.path().join(format!("{name}-{version}"));
        if candidate.join("Cargo.toml").is_file() {
            return Ok(Source::Found(candidate));
        }
    }
    Ok(missing())
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            rs_files(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

fn module_of(base: &Path, dir: &Path) -> String {
    dir.strip_prefix(base)
        .unwrap_or(dir)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(".")
}

// ----- k8s-openapi ----------------------------------------------------------------------

/// One k8s-openapi type: its JSON field names and, for resources, the `Resource` constants.
#[derive(Default, Debug)]
struct ApiType {
    /// `io.k8s.api.core.v1.Pod`.
    definition: String,
    /// Normalized Rust field name → JSON name.
    json: HashMap<String, String>,
    has_status: bool,
    resource: Option<ResourceConsts>,
    /// What the type holds, for the Go-types table.
    shape: TypeShape,
}

/// The shape of a k8s-openapi type.
#[derive(Default, Debug)]
enum TypeShape {
    /// A struct: its fields, each as (Rust name, Rust type).
    Struct(Vec<(String, String)>),
    /// `pub struct Name(pub T);`: the inner type.
    Newtype(String),
    /// An enum (`IntOrString`, the `JSONSchemaPropsOr...` unions).
    #[default]
    Enum,
}

#[derive(Default, Debug, Clone)]
struct ResourceConsts {
    group: String,
    version: String,
    kind: String,
    plural: String,
    list_kind: String,
    namespaced: bool,
}

/// Types by `module.Name` (`api.core.v1.Pod`), with a case-insensitive index.
struct Api {
    types: BTreeMap<String, ApiType>,
    by_lower: HashMap<String, String>,
}

fn read_openapi(dir: &Path) -> Result<Api, String> {
    let mut files = Vec::new();
    rs_files(dir, &mut files)?;
    let mut types = BTreeMap::new();
    for file in files {
        let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
        if matches!(name.as_deref(), Some("mod.rs" | "list.rs")) {
            continue;
        }
        let text = fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let Some(ty_name) = first_type_name(&text) else {
            continue;
        };
        let module = module_of(dir, file.parent().unwrap_or(dir));
        let mut ty = ApiType {
            definition: text
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("// Generated from definition "))
                .unwrap_or_default()
                .trim()
                .to_owned(),
            ..ApiType::default()
        };
        for line in text.lines() {
            let line = line.trim();
            if let Some((json, rest)) = line
                .strip_prefix('"')
                .and_then(|l| l.split_once("\" => Field::Key_"))
            {
                let rust = rest.trim_end_matches(',');
                ty.json.insert(normalize(rust), json.to_owned());
            }
            if line.starts_with("pub status: ") {
                ty.has_status = true;
            }
        }
        ty.resource = resource_consts(&text, &ty_name);
        ty.shape = type_shape(&text, &ty_name);
        types.insert(format!("{module}.{ty_name}"), ty);
    }
    let by_lower = types
        .keys()
        .map(|k| (k.to_lowercase(), k.clone()))
        .collect();
    Ok(Api { types, by_lower })
}

/// The fields of `pub struct <ty> { ... }` (one `pub name: Type,` per line, as k8s-openapi
/// writes them), or the inner type of a newtype.
fn type_shape(text: &str, ty: &str) -> TypeShape {
    let newtype = format!("pub struct {ty}(pub ");
    if let Some(rest) = text.lines().find_map(|l| l.strip_prefix(newtype.as_str())) {
        return TypeShape::Newtype(rest.trim_end_matches(");").to_owned());
    }
    let open = format!("pub struct {ty} {{");
    let Some(start) = text.find(&open) else {
        return TypeShape::Enum;
    };
    let fields = text[start + open.len()..]
        .lines()
        .take_while(|l| *l != "}")
        .filter_map(|l| l.strip_prefix("    pub "))
        .filter_map(|l| l.split_once(": "))
        .map(|(name, ty)| (name.to_owned(), ty.trim_end_matches(',').to_owned()))
        .collect();
    TypeShape::Struct(fields)
}

fn first_type_name(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let rest = l
            .strip_prefix("pub struct ")
            .or_else(|| l.strip_prefix("pub enum "))?;
        Some(
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect(),
        )
    })
}

fn const_str(text: &str, after: &str, name: &str) -> Option<String> {
    let block = &text[text.find(after)?..];
    let needle = format!("const {name}: &'static str = \"");
    let start = block.find(&needle)? + needle.len();
    Some(block[start..start + block[start..].find('"')?].to_owned())
}

fn resource_consts(text: &str, ty: &str) -> Option<ResourceConsts> {
    let res = format!("impl crate::Resource for {ty} {{");
    let listable = format!("impl crate::ListableResource for {ty} {{");
    let block_start = text.find(&res)?;
    let block = &text[block_start..];
    let namespaced = block
        .lines()
        .find(|l| l.contains("type Scope ="))?
        .contains("NamespaceResourceScope");
    Some(ResourceConsts {
        group: const_str(text, &res, "GROUP")?,
        version: const_str(text, &res, "VERSION")?,
        kind: const_str(text, &res, "KIND")?,
        plural: const_str(text, &res, "URL_PATH_SEGMENT")?,
        list_kind: const_str(text, &listable, "LIST_KIND")?,
        namespaced,
    })
}

/// Field names compared without case, underscores or raw-identifier prefixes.
fn normalize(rust: &str) -> String {
    rust.trim_start_matches("r#")
        .trim_end_matches('_')
        .replace('_', "")
        .to_lowercase()
}

fn is_stable(version: &str) -> bool {
    version
        .strip_prefix('v')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// `(module.Name, consts)` of every served resource: stable versions only, the newest of a
/// resource served in several.
fn served_resources(api: &Api) -> Vec<(String, ResourceConsts)> {
    let mut versions: BTreeMap<(String, String), Vec<(String, ResourceConsts)>> = BTreeMap::new();
    for (path, ty) in &api.types {
        let Some(r) = &ty.resource else { continue };
        if !is_stable(&r.version) {
            continue;
        }
        versions
            .entry((r.group.clone(), r.plural.clone()))
            .or_default()
            .push((path.clone(), r.clone()));
    }
    versions
        .into_values()
        .flat_map(|mut of_one| {
            // Newest first: the fake server's lookups by plural find the preferred version.
            of_one.sort_by_key(|(_, r)| std::cmp::Reverse(version_number(&r.version)));
            of_one
        })
        .collect()
}

fn version_number(v: &str) -> u32 {
    v.trim_start_matches('v').parse().unwrap_or(0)
}

fn render_resources(
    resources: &[(String, ResourceConsts)],
    api: &Api,
    messages: &BTreeMap<String, Message>,
    openapi: &Path,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Generated by `cargo xtask codegen` from {} ({OPENAPI_VERSION_DIR}); do not edit.\n\
         # group version plural Kind ListKind scope(N|C) status(1|0) openapi-definition protobuf(1|0)",
        crate_label(openapi)
    );
    for (path, r) in resources {
        let ty = &api.types[path];
        let group = if r.group.is_empty() { "-" } else { &r.group };
        let proto = u8::from(messages.contains_key(&pb_name_for(path, messages)));
        let _ = writeln!(
            out,
            "{group} {} {} {} {} {} {} {} {proto}",
            r.version,
            r.plural,
            r.kind,
            r.list_kind,
            if r.namespaced { "N" } else { "C" },
            u8::from(ty.has_status),
            ty.definition,
        );
    }
    out
}

// ----- the Go types (unknown fields, type errors) ---------------------------------------

/// `fake-apiserver/src/builtin_types.txt`: every type reachable from the served resources,
/// with each JSON field and what Go's decoder accepts there.
fn render_types(
    resources: &[(String, ResourceConsts)],
    api: &Api,
    openapi: &Path,
) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Generated by `cargo xtask codegen` from {} ({OPENAPI_VERSION_DIR}); do not edit.\n\
         # The Go types the API server decodes the built-in kinds into (unknown fields, type errors).\n\
         # T <OpenAPI definition> <Go type as its errors print it>\n\
         # F <JSON name> <type>: s (string), b (bool), i32, i64, f64, bytes (base64 string), time,\n\
         #   mtime (MicroTime), qty (Quantity), ios (IntOrString), any (any JSON), @<definition>,\n\
         #   []<type> (array), {{}}<type> (object with string keys)",
        crate_label(openapi)
    );
    let mut done: BTreeSet<String> = BTreeSet::new();
    let roots: BTreeSet<String> = resources
        .iter()
        .map(|(p, _)| p.clone())
        .chain(EXTRA_TYPE_ROOTS.iter().map(|p| (*p).to_owned()))
        .collect();
    let mut todo: Vec<String> = roots.iter().cloned().collect();
    let mut blocks: BTreeMap<String, String> = BTreeMap::new();
    while let Some(path) = todo.pop() {
        if !done.insert(path.clone()) {
            continue;
        }
        let ty = api
            .types
            .get(&path)
            .ok_or_else(|| format!("k8s-openapi has no type {path}"))?;
        let TypeShape::Struct(fields) = &ty.shape else {
            return Err(format!("{path} is not a struct"));
        };
        let (module, name) = path.rsplit_once('.').unwrap_or(("", &path));
        let package = module.rsplit('.').next().unwrap_or(module);
        let mut block = format!("T {} {package}.{name}\n", ty.definition);
        if ty.resource.is_some() || roots.contains(&path) {
            block.push_str("F apiVersion s\nF kind s\n");
        }
        for (rust, rust_ty) in fields {
            let json = ty
                .json
                .get(&normalize(rust))
                .ok_or_else(|| format!("{path}.{rust} has no JSON name"))?;
            let go = go_type(rust_ty, api, &mut todo)?;
            let _ = writeln!(block, "F {json} {go}");
        }
        blocks.insert(ty.definition.clone(), block);
    }
    for block in blocks.values() {
        out.push_str(block);
    }
    Ok(out)
}

/// The table's type for Rust type `rust` of a k8s-openapi field; struct types reached are
/// pushed on `todo`.
fn go_type(rust: &str, api: &Api, todo: &mut Vec<String>) -> Result<String, String> {
    let rust = rust.trim();
    for wrapper in ["Option<", "std::boxed::Box<"] {
        if let Some(inner) = rust.strip_prefix(wrapper).and_then(|r| r.strip_suffix('>')) {
            return go_type(inner, api, todo);
        }
    }
    if let Some(inner) = rust
        .strip_prefix("std::vec::Vec<")
        .and_then(|r| r.strip_suffix('>'))
    {
        return Ok(format!("[]{}", go_type(inner, api, todo)?));
    }
    if let Some(inner) = rust
        .strip_prefix("std::collections::BTreeMap<std::string::String, ")
        .and_then(|r| r.strip_suffix('>'))
    {
        return Ok(format!("{{}}{}", go_type(inner, api, todo)?));
    }
    let simple = match rust {
        "std::string::String" => Some("s"),
        "bool" => Some("b"),
        "i32" => Some("i32"),
        "i64" => Some("i64"),
        "f64" => Some("f64"),
        "crate::ByteString" => Some("bytes"),
        "crate::serde_json::Value" | "serde_json::Value" => Some("any"),
        _ => None,
    };
    if let Some(s) = simple {
        return Ok(s.to_owned());
    }
    let path = rust
        .strip_prefix("crate::")
        .ok_or_else(|| format!("unexpected field type {rust}"))?
        .replace("::", ".");
    let special = match path.as_str() {
        "apimachinery.pkg.apis.meta.v1.Time" => Some("time"),
        "apimachinery.pkg.apis.meta.v1.MicroTime" => Some("mtime"),
        "apimachinery.pkg.api.resource.Quantity" => Some("qty"),
        "apimachinery.pkg.util.intstr.IntOrString" => Some("ios"),
        _ => None,
    };
    if let Some(s) = special {
        return Ok(s.to_owned());
    }
    let ty = api
        .types
        .get(&path)
        .ok_or_else(|| format!("k8s-openapi has no type {path}"))?;
    match &ty.shape {
        // The unions of JSON schemas: any JSON (their own decoders check the shape).
        TypeShape::Enum => Ok("any".to_owned()),
        TypeShape::Newtype(inner) => go_type(inner, api, todo),
        TypeShape::Struct(_) => {
            todo.push(path);
            Ok(format!("@{}", ty.definition))
        }
    }
}

fn crate_label(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

// ----- k8s-pb ----------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct PbField {
    tag: u32,
    rust: String,
    /// `string`, `bool`, `int32`, `int64`, `double`, `bytes`, `message`, or
    /// `map:<key>,<value>`.
    kind: String,
    repeated: bool,
    /// The message type (for `message` and maps with message values), full name.
    type_name: Option<String>,
}

#[derive(Debug, Clone, Default)]
struct Message {
    fields: Vec<PbField>,
}

fn read_pb(dir: &Path) -> Result<BTreeMap<String, Message>, String> {
    let mut files = Vec::new();
    rs_files(dir, &mut files)?;
    let mut messages = BTreeMap::new();
    for file in files {
        if file.file_name().is_some_and(|n| n != "mod.rs") {
            continue;
        }
        let module = module_of(dir, file.parent().unwrap_or(dir));
        let text = fs::read_to_string(&file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let mut current: Option<(String, Message)> = None;
        let mut pending_attr: Option<String> = None;
        let mut decl_buf: Option<String> = None;
        for line in text.lines() {
            let t = line.trim();
            if let Some(buf) = decl_buf.as_mut() {
                buf.push_str(t);
                if balanced(buf) {
                    let decl = decl_buf.take().unwrap_or_default();
                    if let (Some(attr), Some((_, msg))) = (pending_attr.take(), current.as_mut()) {
                        let (rust, ty) = decl
                            .trim_start_matches("pub ")
                            .split_once(':')
                            .ok_or_else(|| format!("unexpected field {decl:?} in {module}"))?;
                        msg.fields
                            .push(parse_field(&module, rust.trim(), ty.trim(), &attr)?);
                    }
                }
                continue;
            }
            if let Some(rest) = line.strip_prefix("pub struct ") {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if rest.trim_end().ends_with("{}") {
                    messages.insert(format!("{module}.{name}"), Message::default());
                } else {
                    current = Some((format!("{module}.{name}"), Message::default()));
                }
                continue;
            }
            if line == "}" {
                if let Some((name, msg)) = current.take() {
                    messages.insert(name, msg);
                }
                continue;
            }
            let Some((_, msg)) = current.as_mut() else {
                continue;
            };
            if let Some(attr) = t.strip_prefix("#[prost(") {
                pending_attr = Some(attr.trim_end_matches(")]").to_owned());
                continue;
            }
            if pending_attr.is_some() && t.starts_with("pub ") {
                if balanced(t) {
                    let (rust, ty) = t
                        .trim_start_matches("pub ")
                        .split_once(':')
                        .ok_or_else(|| format!("unexpected field {t:?} in {module}"))?;
                    let attr = pending_attr.take().unwrap_or_default();
                    msg.fields
                        .push(parse_field(&module, rust.trim(), ty.trim(), &attr)?);
                } else {
                    decl_buf = Some(t.to_owned());
                }
            }
        }
    }
    Ok(messages)
}

fn parse_field(module: &str, rust: &str, ty: &str, attr: &str) -> Result<PbField, String> {
    let tag = attr
        .split("tag = \"")
        .nth(1)
        .and_then(|s| s.split('"').next())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no tag in {attr:?}"))?;
    let repeated = attr.contains("repeated");
    let head = attr.split(',').next().unwrap_or("").trim();
    let (kind, type_name) = if let Some(map) = attr
        .strip_prefix("btree_map = \"")
        .or_else(|| attr.strip_prefix("map = \""))
    {
        let spec = map.split('"').next().unwrap_or("");
        let (k, v) = spec
            .split_once(", ")
            .ok_or_else(|| format!("bad map {attr:?}"))?;
        let value_type = (v == "message").then(|| resolve_type(module, &map_value_type(ty)));
        (format!("map:{k},{v}"), value_type)
    } else {
        let kind = match head {
            "bytes = \"vec\"" => "bytes",
            other => other,
        };
        let type_name = (kind == "message").then(|| resolve_type(module, &message_type(ty)));
        (kind.to_owned(), type_name)
    };
    Ok(PbField {
        tag,
        rust: rust.to_owned(),
        kind,
        repeated,
        type_name,
    })
}

/// A field declaration is complete: it ends with a comma outside angle brackets.
fn balanced(decl: &str) -> bool {
    decl.ends_with(',') && decl.matches('<').count() == decl.matches('>').count()
}

/// The message path inside `Option<...>`, `Vec<...>`, `Box<...>`.
fn message_type(ty: &str) -> String {
    let mut t: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    loop {
        let trimmed = t.trim_end_matches(',').to_owned();
        let mut peeled = None;
        for wrapper in [
            "::core::option::Option<",
            "::prost::alloc::vec::Vec<",
            "::prost::alloc::boxed::Box<",
        ] {
            if let Some(inner) = trimmed.strip_prefix(wrapper) {
                let inner = inner.strip_suffix('>').unwrap_or(inner);
                peeled = Some(inner.trim_end_matches(',').to_owned());
            }
        }
        match peeled {
            Some(p) => t = p,
            None => return trimmed,
        }
    }
}

/// The value type of a `BTreeMap<String, V>`.
fn map_value_type(ty: &str) -> String {
    let t: String = ty.chars().filter(|c| !c.is_whitespace()).collect();
    let t = t.trim_end_matches(',');
    let t = t.strip_suffix('>').unwrap_or(t).trim_end_matches(',');
    let value = t.split_once(',').map_or(t, |(_, v)| v);
    message_type(value)
}

/// `super::super::runtime::RawExtension` seen from `apimachinery.pkg.apis.meta.v1`.
fn resolve_type(module: &str, path: &str) -> String {
    let mut base: Vec<&str> = module.split('.').collect();
    let mut rest = path;
    while let Some(r) = rest.strip_prefix("super::") {
        base.pop();
        rest = r;
    }
    let mut parts: Vec<String> = base.iter().map(|s| (*s).to_owned()).collect();
    parts.extend(rest.split("::").map(str::to_owned));
    parts.join(".")
}

/// The k8s-pb message for a k8s-openapi type path (names compared without case).
fn pb_name_for(api_path: &str, messages: &BTreeMap<String, Message>) -> String {
    let lower = api_path.to_lowercase();
    messages
        .keys()
        .find(|k| k.to_lowercase() == lower)
        .cloned()
        .unwrap_or_else(|| api_path.to_owned())
}

fn render_schema(
    resources: &[(String, ResourceConsts)],
    api: &Api,
    messages: &BTreeMap<String, Message>,
    openapi: &Path,
    pb: &Path,
) -> Result<String, String> {
    let mut roots: Vec<String> = Vec::new();
    for (path, r) in resources {
        let list_path = format!(
            "{}.{}",
            path.rsplit_once('.').map_or("", |(m, _)| m),
            r.list_kind
        );
        for p in [path, &list_path] {
            let name = pb_name_for(p, messages);
            if messages.contains_key(&name) {
                roots.push(name);
            }
        }
    }
    roots.extend(EXTRA_ROOTS.iter().map(|s| (*s).to_owned()));
    // Every reachable message with the k8s-openapi type its JSON names come from: its own,
    // or, for a Go struct embedded inline (`VolumeSource` in `Volume`, `ProbeHandler` in
    // `Probe`), the type of the message that embeds it.
    let own_type = |name: &str| api.by_lower.get(&name.to_lowercase()).cloned();
    let mut source: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut inline: BTreeSet<(String, u32)> = BTreeSet::new();
    let mut todo: Vec<(String, Option<String>)> =
        roots.iter().map(|r| (r.clone(), own_type(r))).collect();
    while let Some((name, src)) = todo.pop() {
        if source.contains_key(&name) {
            continue;
        }
        source.insert(name.clone(), src.clone());
        if SPECIAL.contains(&name.as_str()) {
            continue;
        }
        let msg = messages
            .get(&name)
            .ok_or_else(|| format!("k8s-pb has no message {name}"))?;
        let api_ty = src.as_ref().and_then(|p| api.types.get(p));
        for f in &msg.fields {
            let Some(child) = &f.type_name else { continue };
            let embedded = f.kind == "message"
                && !f.repeated
                && !SPECIAL.contains(&child.as_str())
                && api_ty.is_some_and(|t| {
                    json_name(t, &f.rust).is_none() && shares_fields(child, t, messages, 3)
                });
            if embedded {
                inline.insert((name.clone(), f.tag));
            }
            let child_src = own_type(child).or_else(|| if embedded { src.clone() } else { None });
            todo.push((child.clone(), child_src));
        }
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Generated by `cargo xtask codegen` from {} and {} ({OPENAPI_VERSION_DIR}); do not edit.\n\
         # M <message> [S: encoded specially | W: a JSON array of its `items`]\n\
         # F <number> <JSON name, - for a struct embedded inline> <type> [*: repeated] where type\n\
         #   is string, bool, int32, int64, double, bytes, message:<message>,\n\
         #   map:<key>,<value kind>[:<message>]",
        crate_label(pb),
        crate_label(openapi)
    );
    let mut guessed = Vec::new();
    for (name, src) in &source {
        let msg = &messages[name];
        let api_ty = src.as_ref().and_then(|p| api.types.get(p));
        let marker = if SPECIAL.contains(&name.as_str()) {
            " S"
        } else if api_ty.is_none()
            && msg.fields.len() == 1
            && msg.fields[0].repeated
            && msg.fields[0].rust == "items"
        {
            " W"
        } else {
            ""
        };
        let _ = writeln!(out, "M {name}{marker}");
        if marker == " S" {
            continue;
        }
        let is_list = name.ends_with("List");
        for f in &msg.fields {
            let json = if inline.contains(&(name.clone(), f.tag)) {
                "-".to_owned()
            } else {
                match api_ty.and_then(|t| json_name(t, &f.rust)) {
                    Some(j) => j,
                    None => {
                        if marker.is_empty()
                            && !(is_list && matches!(&f.rust[..], "metadata" | "items"))
                        {
                            guessed.push(format!("{name}.{}", f.rust));
                        }
                        camel(&f.rust)
                    }
                }
            };
            let ty = match (&f.kind[..], &f.type_name) {
                ("message", Some(t)) => format!("message:{t}"),
                (k, Some(t)) if k.starts_with("map:") => format!("{k}:{t}"),
                (k, _) => k.to_owned(),
            };
            let rep = if f.repeated { " *" } else { "" };
            let _ = writeln!(out, "F {} {json} {ty}{rep}", f.tag);
        }
    }
    if !guessed.is_empty() {
        let _ = writeln!(
            out,
            "# JSON names guessed from k8s-pb's field names (k8s-openapi has no such field): {}",
            guessed.join(" ")
        );
    }
    Ok(out)
}

/// The JSON name of k8s-pb field `rust` in k8s-openapi type `t`.
fn json_name(t: &ApiType, rust: &str) -> Option<String> {
    let key = normalize(rust);
    if let Some(j) = t.json.get(&key) {
        return Some(j.clone());
    }
    FIELD_ALIASES
        .iter()
        .find(|(pb, _)| normalize(pb) == key)
        .and_then(|(_, alias)| t.json.get(&normalize(alias)))
        .cloned()
}

/// Whether message `name` (or a struct embedded in it) has a field that `t` has: then a
/// field of that message type unknown to `t` is a Go struct embedded inline.
fn shares_fields(
    name: &str,
    t: &ApiType,
    messages: &BTreeMap<String, Message>,
    depth: u32,
) -> bool {
    let Some(msg) = messages.get(name) else {
        return false;
    };
    msg.fields.iter().any(|f| {
        json_name(t, &f.rust).is_some()
            || (depth > 0
                && f.kind == "message"
                && f.type_name
                    .as_ref()
                    .is_some_and(|c| shares_fields(c, t, messages, depth - 1)))
    })
}

fn camel(rust: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in rust.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = "[[package]]\nname = \"k8s-pb\"\nversion = \"0.9.0\"\n";

    /// A scratch cargo home, removed when dropped.
    struct Home(PathBuf);

    impl Home {
        fn new(test: &str) -> Self {
            let dir =
                std::env::temp_dir().join(format!("xtask-codegen-{test}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        /// Unpacks an empty crate `dir` under the registry index `index`.
        fn unpack(&self, index: &str, dir: &str) -> PathBuf {
            let path = self.0.join("registry/src").join(index).join(dir);
            fs::create_dir_all(&path).unwrap();
            fs::write(path.join("Cargo.toml"), "[package]\n").unwrap();
            path
        }
    }

    impl Drop for Home {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn finds_the_locked_version_in_any_registry_index() {
        let home = Home::new("found");
        home.unpack("index.crates.io-1", "k8s-pb-0.8.0");
        let wanted = home.unpack("index.crates.io-2", "k8s-pb-0.9.0");
        assert_eq!(
            find_crate_source(LOCK, &home.0, "k8s-pb"),
            Ok(Source::Found(wanted))
        );
    }

    /// What a fetch would fix is `NotUnpacked` (a fresh cargo home has no registry at all);
    /// what it would not is an error.
    #[test]
    fn a_missing_source_or_registry_asks_for_a_fetch_and_nothing_else_does() {
        let home = Home::new("missing");
        assert!(matches!(
            find_crate_source(LOCK, &home.0, "k8s-pb"),
            Ok(Source::NotUnpacked(message)) if message.contains("k8s-pb 0.9.0")
        ));
        home.unpack("index.crates.io-1", "k8s-pb-0.8.0");
        home.unpack("index.crates.io-1", "k8s-openapi-0.9.0");
        assert!(matches!(
            find_crate_source(LOCK, &home.0, "k8s-pb"),
            Ok(Source::NotUnpacked(_))
        ));
        assert_eq!(
            find_crate_source(LOCK, &home.0, "k8s-openapi"),
            Err("k8s-openapi is not in Cargo.lock".to_owned())
        );
    }

    /// k8s-openapi's field types map to the Go-types table: wrappers unwrapped, containers,
    /// scalars, the special types, unions and raw JSON as `any`, structs by definition (and
    /// queued); a type it does not know fails the generation.
    #[test]
    fn field_types_map_to_the_go_types_table() {
        let ty = |definition: &str, shape: TypeShape| ApiType {
            definition: definition.to_owned(),
            shape,
            ..ApiType::default()
        };
        let types = BTreeMap::from([
            (
                "api.x.v1.Spec".to_owned(),
                ty("io.k8s.api.x.v1.Spec", TypeShape::Struct(Vec::new())),
            ),
            (
                "api.x.v1.Union".to_owned(),
                ty("io.k8s.api.x.v1.Union", TypeShape::Enum),
            ),
            (
                "api.x.v1.Raw".to_owned(),
                ty(
                    "io.k8s.api.x.v1.Raw",
                    TypeShape::Newtype("crate::serde_json::Value".into()),
                ),
            ),
        ]);
        let api = Api {
            types,
            by_lower: HashMap::new(),
        };
        let mut todo = Vec::new();
        let mut go = |rust: &str| go_type(rust, &api, &mut todo);
        for (rust, want) in [
            (
                "Option<std::vec::Vec<crate::api::x::v1::Spec>>",
                "[]@io.k8s.api.x.v1.Spec",
            ),
            (
                "Option<std::collections::BTreeMap<std::string::String, crate::apimachinery::pkg::api::resource::Quantity>>",
                "{}qty",
            ),
            (
                "Option<std::boxed::Box<crate::api::x::v1::Spec>>",
                "@io.k8s.api.x.v1.Spec",
            ),
            ("crate::apimachinery::pkg::util::intstr::IntOrString", "ios"),
            (
                "Option<crate::apimachinery::pkg::apis::meta::v1::Time>",
                "time",
            ),
            ("Option<crate::ByteString>", "bytes"),
            ("Option<i32>", "i32"),
            ("std::string::String", "s"),
            ("crate::api::x::v1::Union", "any"),
            ("Option<crate::api::x::v1::Raw>", "any"),
        ] {
            assert_eq!(go(rust), Ok(want.to_owned()), "{rust}");
        }
        assert!(go("crate::api::x::v1::Missing").is_err());
        assert!(go("u128").is_err());
        assert_eq!(todo, ["api.x.v1.Spec", "api.x.v1.Spec"]);

        let text = "pub struct Spec {\n    /// Docs.\n    pub replicas: Option<i32>,\n\n    pub r#type: std::string::String,\n}\n\nimpl X for Spec {\n    pub fn not_a_field: u8,\n}\n";
        let TypeShape::Struct(fields) = type_shape(text, "Spec") else {
            panic!("a struct");
        };
        assert_eq!(
            fields,
            [
                ("replicas".to_owned(), "Option<i32>".to_owned()),
                ("r#type".to_owned(), "std::string::String".to_owned())
            ]
        );
        assert!(matches!(
            type_shape("pub struct Time(pub crate::jiff::Timestamp);\n", "Time"),
            TypeShape::Newtype(inner) if inner == "crate::jiff::Timestamp"
        ));
        assert!(matches!(
            type_shape("pub enum U {}\n", "U"),
            TypeShape::Enum
        ));
    }
}

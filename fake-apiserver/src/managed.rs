//! Field management: which manager owns which fields of an object (`metadata.managedFields`),
//! kept on every write, and server-side apply on top of it.
//!
//! Upstream (read in `k8s.io/apimachinery/pkg/util/managedfields` and
//! `sigs.k8s.io/structured-merge-diff`): a write that is not an apply (create, update, patch)
//! gives its manager (`fieldManager`, else the user agent up to its first `/`) the fields it
//! changed, and takes them from every other manager; an apply merges the applied
//! configuration into the object, removes the fields its manager applied last time and no
//! longer applies (unless another manager owns them), and fails with a 409 listing the
//! conflicts when it would change a field another manager owns, unless forced (then it takes
//! them). Field sets are kept as `fieldsV1` encodes them: `f:<field>`, `k:<key fields>` for
//! an item of a keyed list, `v:<value>` for an item of a set, `.` for a node that is a member
//! itself.
//!
//! What a list or a map is comes from the custom resource's schema
//! (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`), from the
//! merge keys of well-known fields of built-in kinds (containers, env and volumes by name,
//! ports by port and protocol, conditions by type, owner references by uid, finalizers as a
//! set, label selectors atomic), and is otherwise atomic for lists and granular for maps, as
//! upstream deduces for objects without a schema. Beyond ten update managers the oldest fold
//! into `ancient-changes`, as upstream's do. Not modelled: the upgrade of kubectl's
//! client-side `last-applied-configuration` to server-side ownership, the version conversion of field
//! sets, and the Go zero values of built-in kinds beyond their structs (a `.` on a pointer
//! struct the real server lists may be missing here).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

use informer_core::{Status, StatusCause, StatusDetails};
use serde_json::{Map, Value};

use crate::resource::ResourceDef;
use crate::status;
use crate::typed;

/// The managed-field paths no manager keeps (upstream's `stripMeta`).
const STRIPPED: [&[&str]; 12] = [
    &["f:apiVersion"],
    &["f:kind"],
    &["f:metadata"],
    &["f:metadata", "f:name"],
    &["f:metadata", "f:namespace"],
    &["f:metadata", "f:creationTimestamp"],
    &["f:metadata", "f:selfLink"],
    &["f:metadata", "f:uid"],
    &["f:metadata", "f:clusterName"],
    &["f:metadata", "f:generation"],
    &["f:metadata", "f:managedFields"],
    &["f:metadata", "f:resourceVersion"],
];

/// A set of field paths as `fieldsV1` encodes it: a tree whose edges are path elements
/// (`f:name`, `k:{"name":"a"}`, `v:"x"`, `i:0`) and whose nodes may be members themselves.
/// A node without members below it is never kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct FieldSet {
    member: bool,
    children: BTreeMap<String, FieldSet>,
}

impl FieldSet {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }

    fn insert(&mut self, path: &[String]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }

    fn remove_member(&mut self, path: &[&str]) {
        match path.split_first() {
            None => self.member = false,
            Some((first, rest)) => {
                if let Some(child) = self.children.get_mut(*first) {
                    child.remove_member(rest);
                    if child.is_empty() {
                        self.children.remove(*first);
                    }
                }
            }
        }
    }

    fn union(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, child) in &other.children {
            self.children.entry(pe.clone()).or_default().union(child);
        }
    }

    /// Removes the members of `other`.
    fn subtract(&mut self, other: &FieldSet) {
        if other.member {
            self.member = false;
        }
        for (pe, theirs) in &other.children {
            if let Some(mine) = self.children.get_mut(pe) {
                mine.subtract(theirs);
                if mine.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
    }

    /// The members in both.
    fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (pe, mine) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let both = mine.intersection(theirs);
                if !both.is_empty() {
                    out.children.insert(pe.clone(), both);
                }
            }
        }
        out
    }

    /// The member paths, in order, as upstream prints them (`.spec.containers[name="a"].image`).
    fn printed_paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_printed(&mut String::new(), &mut out);
        out
    }

    fn collect_printed(&self, prefix: &mut String, out: &mut Vec<String>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (pe, child) in &self.children {
            let len = prefix.len();
            prefix.push_str(&print_element(pe));
            child.collect_printed(prefix, out);
            prefix.truncate(len);
        }
    }

    /// The set as `fieldsV1`.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut out = Map::new();
        if self.member && !self.children.is_empty() {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        for (pe, child) in &self.children {
            out.insert(pe.clone(), child.to_fields_v1());
        }
        Value::Object(out)
    }

    /// A set from `fieldsV1` (a leaf `{}` is a member; `.` marks a node with children as one).
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Value::Object(fields) = value else {
            return Err("fieldsV1 must be an object".into());
        };
        let mut set = FieldSet::default();
        for (pe, child) in fields {
            if pe == "." {
                set.member = true;
                continue;
            }
            if !["f:", "k:", "v:", "i:"].iter().any(|p| pe.starts_with(p)) {
                return Err(format!("unknown path element {pe:?}"));
            }
            let mut child = FieldSet::from_fields_v1(child)?;
            if child.children.is_empty() {
                child.member = true;
            }
            set.children.insert(pe.clone(), child);
        }
        Ok(set)
    }

    /// The nodes of `self` that `keep` does not have, top-most only (each taking its subtree):
    /// what an apply removes of what its manager applied last time.
    fn not_in(&self, keep: &FieldSet) -> FieldSet {
        let mut out = FieldSet::default();
        for (pe, mine) in &self.children {
            match keep.children.get(pe) {
                None => {
                    out.children.insert(
                        pe.clone(),
                        FieldSet {
                            member: true,
                            children: BTreeMap::new(),
                        },
                    );
                }
                Some(kept) => {
                    let below = mine.not_in(kept);
                    if !below.is_empty() {
                        out.children.insert(pe.clone(), below);
                    }
                }
            }
        }
        out
    }
}

/// One path element as upstream prints it in messages: `.name`, `[name="a"]`, `[="x"]`, `[0]`.
fn print_element(pe: &str) -> String {
    if let Some(field) = pe.strip_prefix("f:") {
        return format!(".{field}");
    }
    if let Some(key) = pe.strip_prefix("k:") {
        let printed = match serde_json::from_str::<Map<String, Value>>(key) {
            Ok(fields) => fields
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(","),
            Err(_) => key.to_owned(),
        };
        return format!("[{printed}]");
    }
    if let Some(value) = pe.strip_prefix("v:") {
        return format!("[={value}]");
    }
    format!("[{}]", pe.strip_prefix("i:").unwrap_or(pe))
}

/// What a list is: replaced whole, merged item by item on key fields (with their defaults),
/// or a set of values.
#[derive(Clone, Debug, PartialEq)]
enum ListKind {
    Atomic,
    Keyed(Vec<(String, Option<Value>)>),
    Set,
}

/// How an object node is managed: fields declared by its type, entries of a map (each a
/// member), or one atomic value.
#[derive(Clone, Copy, Debug, PartialEq)]
enum ObjectKind {
    Struct,
    Map,
    Atomic,
}

/// What a built-in kind's field is, from its name (the merge keys and list types of the real
/// types' well-known fields).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Builtin {
    Struct,
    Map,
    Atomic,
    Keyed(&'static [&'static str]),
    Ports,
    Set,
}

/// The key fields of a built-in kind's well-known keyed list, by the list's field name (the
/// real types' merge keys; `ports`, keyed on `containerPort` or `port` with `protocol`, is
/// its own case).
pub(crate) fn builtin_list_keys(field: &str) -> Option<&'static [&'static str]> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "env"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims" => Some(&["name"]),
        "volumeMounts" => Some(&["mountPath"]),
        "volumeDevices" => Some(&["devicePath"]),
        "conditions" => Some(&["type"]),
        "ownerReferences" => Some(&["uid"]),
        "hostAliases" => Some(&["ip"]),
        "topologySpreadConstraints" => Some(&["topologyKey", "whenUnsatisfiable"]),
        _ => None,
    }
}

fn builtin_field(name: &str) -> Builtin {
    if let Some(keys) = builtin_list_keys(name) {
        return Builtin::Keyed(keys);
    }
    match name {
        "labels" | "annotations" | "data" | "binaryData" | "stringData" | "nodeSelector"
        | "limits" | "requests" | "capacity" | "allocatable" | "hard" | "used" => Builtin::Map,
        "selector" => Builtin::Atomic,
        "ports" => Builtin::Ports,
        "finalizers" => Builtin::Set,
        _ => Builtin::Struct,
    }
}

/// The type of a node, as far as field management needs it.
#[derive(Clone, Copy, Debug)]
enum Ty<'s> {
    Builtin(Builtin),
    Schema(&'s Value),
    /// No schema: maps are granular (every key a member), lists atomic.
    Deduced,
}

impl<'s> Ty<'s> {
    fn root(def: &'s ResourceDef) -> Self {
        match &def.schema {
            Some(schema) => Ty::Schema(schema),
            None if def.definition.is_some() => Ty::Builtin(Builtin::Struct),
            None => Ty::Deduced,
        }
    }

    fn object_kind(self) -> ObjectKind {
        match self {
            Ty::Builtin(Builtin::Map) => ObjectKind::Map,
            Ty::Builtin(Builtin::Atomic) => ObjectKind::Atomic,
            Ty::Builtin(_) => ObjectKind::Struct,
            Ty::Schema(s) => {
                if s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic") {
                    ObjectKind::Atomic
                } else if s.get("properties").is_some_and(Value::is_object) {
                    ObjectKind::Struct
                } else {
                    ObjectKind::Map
                }
            }
            Ty::Deduced => ObjectKind::Map,
        }
    }

    /// The type of field `key` and whether the type declares it.
    fn child(self, key: &str, root: bool) -> (Ty<'s>, bool) {
        if root && key == "metadata" {
            return (Ty::Builtin(Builtin::Struct), true);
        }
        if root && (key == "apiVersion" || key == "kind") {
            return (Ty::Deduced, true);
        }
        match self {
            Ty::Builtin(Builtin::Map) => (Ty::Builtin(Builtin::Struct), false),
            Ty::Builtin(_) => (Ty::Builtin(builtin_field(key)), true),
            Ty::Schema(s) => {
                if let Some(sub) = s.get("properties").and_then(|p| p.get(key)) {
                    (Ty::Schema(sub), true)
                } else if let Some(sub) = s.get("additionalProperties").filter(|a| a.is_object()) {
                    (Ty::Schema(sub), false)
                } else {
                    (Ty::Deduced, false)
                }
            }
            Ty::Deduced => (Ty::Deduced, false),
        }
    }

    fn list(self, items: &[Value]) -> (ListKind, Ty<'s>) {
        match self {
            Ty::Builtin(b) => {
                let kind = match b {
                    Builtin::Keyed(keys) => {
                        ListKind::Keyed(keys.iter().map(|k| ((*k).to_owned(), None)).collect())
                    }
                    Builtin::Ports => {
                        let port = if items.iter().any(|i| i.get("containerPort").is_some()) {
                            "containerPort"
                        } else {
                            "port"
                        };
                        ListKind::Keyed(vec![
                            (port.to_owned(), None),
                            ("protocol".to_owned(), Some(Value::from("TCP"))),
                        ])
                    }
                    Builtin::Set => ListKind::Set,
                    _ => ListKind::Atomic,
                };
                (kind, Ty::Builtin(Builtin::Struct))
            }
            Ty::Schema(s) => {
                let element = s
                    .get("items")
                    .filter(|i| i.is_object())
                    .map_or(Ty::Deduced, Ty::Schema);
                let kind = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("map") => ListKind::Keyed(
                        s.get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(|k| {
                                let default = s
                                    .get("items")
                                    .and_then(|i| i.get("properties"))
                                    .and_then(|p| p.get(k))
                                    .and_then(|p| p.get("default"))
                                    .cloned();
                                (k.to_owned(), default)
                            })
                            .collect(),
                    ),
                    Some("set") => ListKind::Set,
                    _ => ListKind::Atomic,
                };
                (kind, element)
            }
            Ty::Deduced => (ListKind::Atomic, Ty::Deduced),
        }
    }

    /// Whether an object node of this type exists whenever its parent does (a built-in
    /// kind's struct field, a Go value): its own addition or removal is no change.
    fn always_present(self) -> bool {
        matches!(self, Ty::Builtin(Builtin::Struct))
    }
}

/// The path element of a list item, or why it has none (a keyed item without its key).
fn item_element(kind: &ListKind, item: &Value) -> Result<String, String> {
    match kind {
        ListKind::Set => Ok(format!("v:{item}")),
        ListKind::Keyed(keys) => {
            let mut fields = Map::new();
            for (key, default) in keys {
                match item.get(key).or(default.as_ref()) {
                    Some(v) => {
                        fields.insert(key.clone(), v.clone());
                    }
                    None => {
                        return Err(format!(
                            "associative list with keys has an element that omits key field \
                             {key:?} (and doesn't have default value)"
                        ));
                    }
                }
            }
            Ok(format!("k:{}", Value::Object(fields)))
        }
        ListKind::Atomic => Err("an atomic list has no item paths".into()),
    }
}

/// Which top-level fields a write's field management looks at: a write to the main
/// resource of a kind with a status subresource leaves `.status` alone; a write to
/// `/status` touches `.status` only.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scope {
    Whole,
    NoStatus,
    StatusOnly,
}

impl Scope {
    fn skips(self, path: &[String], key: &str) -> bool {
        match path {
            [] => match self {
                Scope::Whole => false,
                Scope::NoStatus => key == "status",
                Scope::StatusOnly => key != "status",
            },
            [meta] => meta == "f:metadata" && key == "managedFields",
            _ => false,
        }
    }
}

/// The fields a value sets (upstream's `ToFieldSet`): every scalar, every item of a keyed
/// list or set, every null or empty map, every entry of a map, every atomic value.
fn field_set(
    value: &Value,
    ty: Ty<'_>,
    scope: Scope,
    path: &mut Vec<String>,
    out: &mut FieldSet,
) -> Result<(), String> {
    match value {
        Value::Object(fields) => {
            if ty.object_kind() == ObjectKind::Atomic {
                out.insert(path);
                return Ok(());
            }
            for (key, child) in fields {
                if scope.skips(path, key) {
                    continue;
                }
                let (child_ty, declared) = ty.child(key, path.is_empty());
                path.push(format!("f:{key}"));
                field_set(child, child_ty, scope, path, out)?;
                if child.is_null() || child.as_object().is_some_and(Map::is_empty) || !declared {
                    out.insert(path);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let (kind, element) = ty.list(items);
            if kind == ListKind::Atomic {
                out.insert(path);
                return Ok(());
            }
            let mut seen = BTreeSet::new();
            for item in items {
                let pe = item_element(&kind, item)?;
                if !seen.insert(pe.clone()) {
                    return Err(format!("duplicate entries for key {}", print_element(&pe)));
                }
                path.push(pe);
                field_set(item, element, scope, path, out)?;
                out.insert(path);
                path.pop();
            }
        }
        _ => out.insert(path),
    }
    Ok(())
}

/// How two versions of an object differ (upstream's `Compare`): fields added, removed, and
/// modified (scalars and atomic values that differ).
#[derive(Debug, Default)]
struct Comparison {
    added: FieldSet,
    removed: FieldSet,
    modified: FieldSet,
}

impl Comparison {
    fn of(old: Option<&Value>, new: &Value, ty: Ty<'_>, scope: Scope) -> Self {
        let mut cmp = Comparison::default();
        compare(old, Some(new), ty, scope, &mut Vec::new(), &mut cmp);
        cmp
    }

    fn changed(&self) -> FieldSet {
        let mut changed = self.added.clone();
        changed.union(&self.modified);
        changed
    }

    fn leaf(&mut self, old: Option<&Value>, new: Option<&Value>, path: &[String]) {
        match (old, new) {
            (None, Some(_)) => self.added.insert(path),
            (Some(_), None) => self.removed.insert(path),
            (Some(a), Some(b)) if a != b => self.modified.insert(path),
            _ => {}
        }
    }
}

fn compare(
    old: Option<&Value>,
    new: Option<&Value>,
    ty: Ty<'_>,
    scope: Scope,
    path: &mut Vec<String>,
    cmp: &mut Comparison,
) {
    if let (Some(a), Some(b)) = (old, new)
        && a == b
    {
        // Equal values differ nowhere below (the walk would find nothing).
        return;
    }
    let empty = Map::new();
    let objects = match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => Some((a, b)),
        (None, Some(Value::Object(b))) => Some((&empty, b)),
        (Some(Value::Object(a)), None) => Some((a, &empty)),
        _ => None,
    };
    if let Some((a, b)) = objects {
        if ty.object_kind() == ObjectKind::Atomic || (a.is_empty() && b.is_empty()) {
            cmp.leaf(old, new, path);
            return;
        }
        let root = path.is_empty();
        for key in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
            if scope.skips(path, key) {
                continue;
            }
            let (child_ty, _) = ty.child(key, root);
            path.push(format!("f:{key}"));
            compare(a.get(key), b.get(key), child_ty, scope, path, cmp);
            path.pop();
        }
        if !root && !ty.always_present() {
            cmp.leaf_presence(old, new, path);
        }
        return;
    }
    let none: Vec<Value> = Vec::new();
    let lists = match (old, new) {
        (Some(Value::Array(a)), Some(Value::Array(b))) => Some((a, b)),
        (None, Some(Value::Array(b))) => Some((&none, b)),
        (Some(Value::Array(a)), None) => Some((a, &none)),
        _ => None,
    };
    if let Some((a, b)) = lists {
        let (kind, element) = ty.list(if b.is_empty() { a } else { b });
        let keyed = |items: &Vec<Value>| -> Option<Vec<(String, usize)>> {
            items
                .iter()
                .enumerate()
                .map(|(i, item)| item_element(&kind, item).ok().map(|pe| (pe, i)))
                .collect()
        };
        let (Some(ka), Some(kb)) = (
            (kind != ListKind::Atomic).then(|| keyed(a)).flatten(),
            (kind != ListKind::Atomic).then(|| keyed(b)).flatten(),
        ) else {
            cmp.leaf(old, new, path);
            return;
        };
        if a.is_empty() && b.is_empty() {
            cmp.leaf(old, new, path);
            return;
        }
        // The first item of each key (duplicates in stored objects are compared by it).
        let first = |k: &[(String, usize)]| {
            let mut m = BTreeMap::new();
            for (pe, i) in k {
                m.entry(pe.clone()).or_insert(*i);
            }
            m
        };
        let (fa, fb) = (first(&ka), first(&kb));
        let order = ka
            .iter()
            .chain(kb.iter().filter(|(pe, _)| !fa.contains_key(pe)))
            .map(|(pe, _)| pe.clone())
            .collect::<BTreeSet<_>>();
        for pe in order {
            let (x, y) = (fa.get(&pe).map(|&i| &a[i]), fb.get(&pe).map(|&i| &b[i]));
            path.push(pe);
            compare(x, y, element, scope, path, cmp);
            // An item is a member itself, whatever its type.
            cmp.leaf_presence(x, y, path);
            path.pop();
        }
        cmp.leaf_presence(old, new, path);
        return;
    }
    cmp.leaf(old, new, path);
}

impl Comparison {
    fn leaf_presence(&mut self, old: Option<&Value>, new: Option<&Value>, path: &[String]) {
        match (old, new) {
            (None, Some(_)) => self.added.insert(path),
            (Some(_), None) => self.removed.insert(path),
            _ => {}
        }
    }
}

/// Merges an applied configuration into an object (upstream's `Merge`): maps field by field,
/// keyed lists item by item (new items after the object's), sets as unions, everything else
/// replaced. A null in the configuration removes the field.
fn merge(target: &mut Value, config: &Value, ty: Ty<'_>, root: bool) -> Result<(), String> {
    match (target.is_object(), config) {
        (true, Value::Object(fields)) if ty.object_kind() != ObjectKind::Atomic => {
            let Value::Object(into) = target else {
                return Ok(());
            };
            for (key, value) in fields {
                let (child_ty, _) = ty.child(key, root);
                if value.is_null() {
                    into.remove(key);
                    continue;
                }
                match into.get_mut(key) {
                    Some(existing) => merge(existing, value, child_ty, false)?,
                    None => {
                        into.insert(key.clone(), value.clone());
                    }
                }
            }
            return Ok(());
        }
        _ => {}
    }
    if let (Value::Array(items), Value::Array(applied)) = (&mut *target, config) {
        let (kind, element) = ty.list(applied);
        if kind != ListKind::Atomic {
            *items = merge_items(items, applied, &kind, element)?;
            return Ok(());
        }
    }
    *target = config.clone();
    Ok(())
}

/// Merges the items of a keyed list or set (upstream's order: the object's items stay where
/// they are, the configuration's shared items follow the configuration's order, and its
/// new items come where the configuration puts them).
fn merge_items(
    live: &[Value],
    applied: &[Value],
    kind: &ListKind,
    element: Ty<'_>,
) -> Result<Vec<Value>, String> {
    let keys = |items: &[Value]| -> Result<Vec<String>, String> {
        items.iter().map(|i| item_element(kind, i)).collect()
    };
    let applied_keys = keys(applied)?;
    let Ok(live_keys) = keys(live) else {
        // Stored items without their keys: the list is taken as applied.
        return Ok(applied.to_vec());
    };
    let first = |keys: &[String]| {
        let mut at: HashMap<String, usize> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            at.entry(k.clone()).or_insert(i);
        }
        at
    };
    let (in_live, in_applied) = (first(&live_keys), first(&applied_keys));
    let mut shared = applied_keys
        .iter()
        .filter(|k| in_live.contains_key(*k))
        .collect::<VecDeque<_>>();
    let mut next = shared.pop_front();
    let mut merged: HashSet<&String> = HashSet::new();
    let merge_one = |l: Option<&Value>, r: &Value| -> Result<Value, String> {
        match l {
            Some(l) => {
                let mut out = l.clone();
                merge(&mut out, r, element, false)?;
                Ok(out)
            }
            None => Ok(r.clone()),
        }
    };
    let mut out = Vec::with_capacity(live.len().max(applied.len()));
    let (mut l, mut r) = (0, 0);
    while l < live.len() || r < applied.len() {
        if l < live.len() && r < applied.len() {
            if live_keys[l] == applied_keys[r] {
                merged.insert(&applied_keys[r]);
                out.push(merge_one(Some(&live[l]), &applied[r])?);
                l += 1;
                r += 1;
                next = shared.pop_front();
                continue;
            }
            if in_applied.contains_key(&live_keys[l]) && next.is_some_and(|n| *n != live_keys[l]) {
                // A shared item, but not the one the configuration places next.
                l += 1;
                continue;
            }
        }
        if l < live.len() {
            if !in_applied.contains_key(&live_keys[l]) {
                out.push(live[l].clone());
                l += 1;
                continue;
            }
            if merged.contains(&live_keys[l]) {
                l += 1;
            }
        }
        if r < applied.len() {
            let key = &applied_keys[r];
            merged.insert(key);
            out.push(merge_one(in_live.get(key).map(|&i| &live[i]), &applied[r])?);
            r += 1;
            if next == Some(key) {
                next = shared.pop_front();
            }
        }
    }
    Ok(out)
}

/// Removes the members of `set` from `value` (a member's subtree goes with it).
fn remove(value: &mut Value, set: &FieldSet, ty: Ty<'_>, root: bool) {
    match value {
        Value::Object(fields) => {
            for (pe, sub) in &set.children {
                let Some(key) = pe.strip_prefix("f:") else {
                    continue;
                };
                if sub.member {
                    fields.remove(key);
                } else if let Some(child) = fields.get_mut(key) {
                    let (child_ty, _) = ty.child(key, root);
                    remove(child, sub, child_ty, false);
                }
            }
        }
        Value::Array(items) => {
            let (kind, element) = ty.list(items);
            if kind == ListKind::Atomic {
                return;
            }
            let sub_of = |item: &Value| {
                item_element(&kind, item)
                    .ok()
                    .and_then(|pe| set.children.get(&pe))
            };
            items.retain(|item| !sub_of(item).is_some_and(|s| s.member));
            for item in items.iter_mut() {
                if let Some(sub) = sub_of(item) {
                    let sub = sub.clone();
                    remove(item, &sub, element, false);
                }
            }
        }
        _ => {}
    }
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: String,
    set: FieldSet,
}

impl Entry {
    /// Whether `self` is the manager `other` names (upstream's manager identifier: an
    /// applier's is its name, operation and subresource; an updater's adds the version).
    fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == APPLY || self.api_version == other.api_version)
    }

    /// How upstream names the manager in a conflict.
    fn printed(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == UPDATE {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn parse(value: &Value) -> Result<Entry, String> {
        let text = |k: &str| {
            value
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        if !value.is_object() {
            return Err("a managedFields entry must be an object".into());
        }
        let fields_type = text("fieldsType");
        if fields_type != "FieldsV1" {
            return Err(format!("unsupported fieldsType {fields_type:?}"));
        }
        Ok(Entry {
            manager: text("manager"),
            operation: text("operation"),
            api_version: text("apiVersion"),
            time: value.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: text("subresource"),
            set: FieldSet::from_fields_v1(value.get("fieldsV1").unwrap_or(&Value::Null))?,
        })
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::from(self.manager.as_str()));
        m.insert("operation".into(), Value::from(self.operation.as_str()));
        m.insert("apiVersion".into(), Value::from(self.api_version.as_str()));
        if let Some(time) = &self.time {
            m.insert("time".into(), Value::from(time.as_str()));
        }
        m.insert("fieldsType".into(), Value::from("FieldsV1"));
        m.insert("fieldsV1".into(), self.set.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::from(self.subresource.as_str()));
        }
        Value::Object(m)
    }
}

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";

fn parse_entries(value: &Value) -> Result<Vec<Entry>, String> {
    match value {
        Value::Array(entries) => entries.iter().map(Entry::parse).collect(),
        Value::Null => Ok(Vec::new()),
        _ => Err("managedFields must be a list".into()),
    }
}

fn entries_of(object: Option<&Value>) -> Result<Vec<Entry>, String> {
    match object
        .and_then(|o| o.get("metadata"))
        .and_then(|m| m.get("managedFields"))
    {
        Some(v) => parse_entries(v),
        None => Ok(Vec::new()),
    }
}

/// Writes `entries` (without empty ones, in upstream's order) into `object`.
fn store_entries(object: &mut Value, entries: Vec<Entry>) {
    store_values(
        object,
        entries
            .iter()
            .filter(|e| !e.set.is_empty())
            .map(Entry::to_value)
            .collect(),
    );
}

/// Writes encoded entries (without empty ones, in upstream's order: operation, time,
/// manager, version, subresource) into `object`.
fn store_values(object: &mut Value, mut entries: Vec<Value>) {
    entries.retain(|e| {
        e.get("fieldsV1")
            .is_some_and(|f| f.as_object().is_some_and(|m| !m.is_empty()))
    });
    let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    entries.sort_by_cached_key(|e| {
        (
            text(e, "operation"),
            text(e, "time"),
            text(e, "manager"),
            text(e, "apiVersion"),
            text(e, "subresource"),
        )
    });
    let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    if entries.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

/// Whether an encoded entry decodes (upstream drops managed fields that do not), checked
/// without building it.
fn decodes(entry: &Value) -> bool {
    fn fields_ok(v: &Value) -> bool {
        v.as_object().is_some_and(|m| {
            m.iter().all(|(pe, child)| {
                pe == "."
                    || (["f:", "k:", "v:", "i:"].iter().any(|p| pe.starts_with(p))
                        && fields_ok(child))
            })
        })
    }
    entry.is_object()
        && entry.get("fieldsType").and_then(Value::as_str) == Some("FieldsV1")
        && entry.get("fieldsV1").is_some_and(fields_ok)
}

/// Whether an encoded field set (`fieldsV1`) has a member of `set`.
fn shares_member(fields: &Value, set: &FieldSet) -> bool {
    let Some(map) = fields.as_object() else {
        return false;
    };
    set.children.iter().any(|(pe, sub)| {
        map.get(pe).is_some_and(|child| {
            let member = child
                .as_object()
                .is_some_and(|c| c.is_empty() || c.contains_key("."));
            (sub.member && member) || shares_member(child, sub)
        })
    })
}

/// Whether an encoded entry is the manager `me` names (see [`Entry::same_manager`]).
fn is_manager(entry: &Value, me: &Entry) -> bool {
    let text = |k: &str| entry.get(k).and_then(Value::as_str).unwrap_or("");
    text("manager") == me.manager
        && text("operation") == me.operation
        && text("subresource") == me.subresource
        && (me.operation == APPLY || text("apiVersion") == me.api_version)
}

fn strip(set: &mut FieldSet) {
    for path in STRIPPED {
        set.remove_member(path);
    }
}

/// Who writes: the manager, the group/version written, the subresource (`""`, `status`,
/// `scale`) and the time to stamp.
#[derive(Clone, Debug)]
pub(crate) struct Writer<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: &'a str,
    pub now: &'a str,
    pub scope: Scope,
}

/// What a request body said about `metadata.managedFields`, read before the body is
/// normalised.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Sent {
    Absent,
    /// `[]` or `[{}]`: the request resets the field management.
    Reset,
    /// Entries (read from the body when the write is tracked).
    Given,
}

impl Sent {
    /// Reads (and leaves) `metadata.managedFields` of a request body.
    pub(crate) fn of(body: &Value) -> Sent {
        match body.get("metadata").and_then(|m| m.get("managedFields")) {
            None | Some(Value::Null) => Sent::Absent,
            Some(Value::Array(a))
                if a.is_empty()
                    || (a.len() == 1 && a[0].as_object().is_some_and(Map::is_empty)) =>
            {
                Sent::Reset
            }
            Some(_) => Sent::Given,
        }
    }
}

/// Keeps the field management of a write that is not an apply: `new` (the object about to
/// be stored) gets `old`'s managers (or those the request sent, upstream's rules) less what
/// the write changed, plus the writer's entry with what it changed. Never fails: entries
/// that cannot be read are dropped, as upstream drops them.
pub(crate) fn track_update(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    sent: Sent,
    writer: &Writer<'_>,
) {
    // Entries stay encoded as they are stored unless the write touches them: most writes
    // change a few fields, and an object's managed fields are most of its metadata.
    let live = || match old.and_then(|o| o.pointer("/metadata/managedFields")) {
        Some(Value::Array(entries)) if entries.iter().all(decodes) => entries.clone(),
        _ => Vec::new(),
    };
    let sent_entries = new
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"));
    let mut entries = if !writer.subresource.is_empty() {
        live()
    } else {
        match (sent, sent_entries) {
            (Sent::Reset, _) => Vec::new(),
            (Sent::Given, Some(Value::Array(given)))
                if !given.is_empty() && given.iter().all(decodes) =>
            {
                given
            }
            _ => live(),
        }
    };
    let ty = Ty::root(def);
    let cmp = Comparison::of(old, new, ty, writer.scope);
    let changed = cmp.changed();
    let mut taken = changed.clone();
    taken.union(&cmp.removed);
    for encoded in &mut entries {
        if encoded
            .get("fieldsV1")
            .is_some_and(|f| shares_member(f, &taken))
            && let Ok(mut entry) = Entry::parse(encoded)
        {
            entry.set.subtract(&taken);
            *encoded = entry.to_value();
        }
    }
    let mut mine = changed;
    strip(&mut mine);
    if !mine.is_empty() {
        let me = Entry {
            manager: writer.manager.to_owned(),
            operation: UPDATE.to_owned(),
            api_version: writer.api_version.to_owned(),
            time: Some(writer.now.to_owned()),
            subresource: writer.subresource.to_owned(),
            set: FieldSet::default(),
        };
        match entries.iter_mut().find(|e| is_manager(e, &me)) {
            Some(encoded) => {
                if let Ok(mut entry) = Entry::parse(encoded) {
                    entry.set.union(&mine);
                    entry.time = me.time;
                    *encoded = entry.to_value();
                }
            }
            None => entries.push(Entry { set: mine, ..me }.to_value()),
        }
    }
    let updaters = entries
        .iter()
        .filter(|e| e.get("operation").and_then(Value::as_str) != Some(APPLY))
        .count();
    if updaters > MAX_UPDATE_MANAGERS {
        let mut parsed: Vec<Entry> = entries
            .iter()
            .filter_map(|e| Entry::parse(e).ok())
            .collect();
        cap_updaters(&mut parsed);
        entries = parsed.iter().map(Entry::to_value).collect();
    }
    store_values(new, entries);
}

/// How many update managers an object keeps (upstream's `DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager the oldest update managers beyond [`MAX_UPDATE_MANAGERS`] are folded into,
/// one per version.
const ANCIENT_CHANGES: &str = "ancient-changes";

/// Folds the oldest update managers into `ancient-changes` until at most
/// [`MAX_UPDATE_MANAGERS`] are left (upstream's `capManagersManager`: the first of a version
/// becomes the bucket when the second comes, each folded entry's fields join it, and the
/// bucket takes the time of the last one folded).
fn cap_updaters(entries: &mut Vec<Entry>) {
    let mut order: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].operation != APPLY && !entries[i].set.is_empty())
        .collect();
    if order.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    let rank = |e: &Entry| {
        (
            e.time.clone().unwrap_or_default(),
            e.manager.clone(),
            e.api_version.clone(),
            e.subresource.clone(),
        )
    };
    order.sort_by_key(|&i| rank(&entries[i]));
    let mut slots: Vec<Option<Entry>> = entries.drain(..).map(Some).collect();
    let is_bucket = |e: &Entry, version: &str| {
        e.manager == ANCIENT_CHANGES
            && e.operation == UPDATE
            && e.api_version == version
            && e.subresource.is_empty()
    };
    let mut first_of_version: HashMap<String, usize> = HashMap::new();
    let mut left = order.len();
    for i in order {
        if left <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(version) = slots[i].as_ref().map(|e| e.api_version.clone()) else {
            continue;
        };
        let Some(&first) = first_of_version.get(&version) else {
            first_of_version.insert(version, i);
            continue;
        };
        let bucket = match slots
            .iter()
            .position(|s| s.as_ref().is_some_and(|e| is_bucket(e, &version)))
        {
            Some(b) if b == i => continue,
            Some(b) => b,
            None => {
                if let Some(e) = slots[first].as_mut() {
                    e.manager = ANCIENT_CHANGES.to_owned();
                    e.subresource.clear();
                }
                first
            }
        };
        let Some(folded) = slots[i].take() else {
            continue;
        };
        if let Some(b) = slots[bucket].as_mut() {
            b.set.union(&folded.set);
            b.time = folded.time;
        }
        left -= 1;
    }
    *entries = slots.into_iter().flatten().collect();
}

/// Server-side apply: `config` merged into `live` (`None`: the object is created), what
/// the manager applied last time and no longer applies removed unless another manager owns
/// it, and the managed fields updated. A change to a field another manager owns is a 409
/// listing every conflict, unless `force` (then the applier takes the fields).
pub(crate) fn apply(
    def: &ResourceDef,
    live: Option<&Value>,
    config: &Value,
    force: bool,
    writer: &Writer<'_>,
) -> Result<Value, Status> {
    if !config.is_object() {
        return Err(status::bad_request("an apply patch must be an object"));
    }
    let version = config
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if version != writer.api_version {
        return Err(status::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, \
             expected: {}",
            writer.api_version
        )));
    }
    if config
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|m| !m.is_null())
    {
        return Err(status::bad_request("metadata.managedFields must be nil"));
    }
    let ty = Ty::root(def);
    if def.schema.is_none()
        && let Some(definition) = &def.definition
    {
        // A built-in kind's configuration is typed against its Go type: a field the type
        // does not declare is upstream's error, whatever `fieldValidation` says.
        let undeclared = typed::undeclared(definition, config);
        if !undeclared.is_empty() {
            let errors: Vec<String> = undeclared
                .iter()
                .map(|(steps, field)| {
                    format!(
                        "{}.{field}: field not declared in schema",
                        printed_path(config, ty, steps)
                    )
                })
                .collect();
            let problem = if errors.len() == 1 {
                errors.concat()
            } else {
                format!("errors:\n  {}", errors.join("\n  "))
            };
            return Err(untyped_config(def, config, problem));
        }
    }
    let mut entries = entries_of(live).map_err(|e| {
        Status::failure(
            500,
            "InternalError",
            format!("failed to decode managed fields: {e}"),
        )
    })?;
    let mut applied = FieldSet::default();
    field_set(config, ty, writer.scope, &mut Vec::new(), &mut applied)
        .map_err(|e| untyped_config(def, config, e))?;
    strip(&mut applied);
    let me = Entry {
        manager: writer.manager.to_owned(),
        operation: APPLY.to_owned(),
        api_version: writer.api_version.to_owned(),
        time: None,
        subresource: writer.subresource.to_owned(),
        set: applied,
    };
    let last = entries
        .iter()
        .position(|e| e.same_manager(&me))
        .map(|i| entries.remove(i));

    let mut bare_live = live.cloned();
    if let Some(meta) = bare_live
        .as_mut()
        .and_then(|l| l.get_mut("metadata"))
        .and_then(Value::as_object_mut)
    {
        meta.remove("managedFields");
    }
    let mut merged = bare_live
        .clone()
        .unwrap_or_else(|| Value::Object(Map::new()));
    merge(&mut merged, config, ty, true).map_err(|e| untyped_config(def, config, e))?;
    if let Some(last) = &last {
        let mut keep = me.set.clone();
        for other in &entries {
            keep.union(&other.set);
        }
        let gone = last.set.not_in(&keep);
        remove(&mut merged, &gone, ty, true);
    }

    let cmp = Comparison::of(bare_live.as_ref(), &merged, ty, writer.scope);
    let changed = cmp.changed();
    let conflicts: Vec<(String, FieldSet)> = entries
        .iter()
        .map(|e| (e.printed(), e.set.intersection(&changed)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    if !force && !conflicts.is_empty() {
        return Err(conflict_error(&conflicts));
    }
    for entry in &mut entries {
        entry.set.subtract(&changed);
        entry.set.subtract(&cmp.removed);
    }
    let unchanged = bare_live.as_ref() == Some(&merged);
    let time = if unchanged {
        last.and_then(|l| l.time)
    } else {
        Some(writer.now.to_owned())
    };
    entries.push(Entry { time, ..me });
    store_entries(&mut merged, entries);
    Ok(merged)
}

/// Upstream's `IgnoreManagedFieldsTimestampsTransformer`, which its registry runs on every
/// update: when the new object equals the stored one but for the times of its managed fields
/// (same entries, pairwise equal without `time`), it takes the stored times back, so the
/// write is a no-op (no new resourceVersion, no event). The field manager cannot see that
/// the server's decoding, defaults and normalization undo a change (an apply of `1000m`
/// where `1` is stored).
pub(crate) fn keep_times_of_a_no_op(body: &mut Value, old: &Value) {
    fn entries(v: &Value) -> Option<&Vec<Value>> {
        v.get("metadata")
            .and_then(|m| m.get("managedFields"))
            .and_then(Value::as_array)
    }
    let (Some(new), Some(stored)) = (entries(body), entries(old)) else {
        return;
    };
    if new.len() != stored.len()
        || new
            .iter()
            .zip(stored)
            .any(|(a, b)| !equal_but(a, b, |k| k == "time"))
        // Metadata first: most updates differ there, and the rest is the larger part.
        || !equal_but(&body["metadata"], &old["metadata"], |k| {
            k == "managedFields"
        })
        || !equal_but(body, old, |k| k == "metadata")
    {
        return;
    }
    let times: Vec<Option<Value>> = stored.iter().map(|e| e.get("time").cloned()).collect();
    let Some(new) = body
        .get_mut("metadata")
        .and_then(|m| m.get_mut("managedFields"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for (entry, time) in new.iter_mut().zip(times) {
        if let Some(entry) = entry.as_object_mut() {
            match time {
                Some(time) => entry.insert("time".into(), time),
                None => entry.remove("time"),
            };
        }
    }
}

/// Whether objects `a` and `b` have the same keys and equal values but at the keys `skip`
/// names; any other values, whether equal.
fn equal_but(a: &Value, b: &Value, skip: impl Fn(&str) -> bool) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.len() == b.len()
        && a.iter()
            .all(|(key, value)| b.get(key).is_some_and(|other| skip(key) || value == other))
}

/// What upstream answers when the applied configuration cannot be typed (a keyed list item
/// without its key, duplicate keys, a field its type does not declare): its field manager's
/// error, a 500, naming the configuration as `namespace/name; group/version, Kind=Kind`.
fn untyped_config(def: &ResourceDef, config: &Value, problem: String) -> Status {
    let meta = |field: &str| {
        config
            .get("metadata")
            .and_then(|m| m.get(field))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    Status::failure(
        500,
        "InternalError",
        format!(
            "failed to create typed patch object ({}/{}; {}/{}, Kind={}): {problem}",
            meta("namespace"),
            meta("name"),
            def.group,
            def.version,
            def.kind
        ),
    )
}

/// Upstream's printed path (`.spec.containers[name="a"]`) of the value `steps` lead to in
/// `config`: fields by name, list items by their keys as the list's type keys them.
fn printed_path(config: &Value, ty: Ty<'_>, steps: &[typed::Step]) -> String {
    let mut out = String::new();
    let (mut value, mut ty) = (config, ty);
    for (i, step) in steps.iter().enumerate() {
        match step {
            typed::Step::Field(key) => {
                out.push_str(&print_element(&format!("f:{key}")));
                ty = ty.child(key, i == 0).0;
                value = value.get(key).unwrap_or(&Value::Null);
            }
            typed::Step::Index(index) => {
                let items = value.as_array().map_or(&[][..], Vec::as_slice);
                let (kind, element) = ty.list(items);
                let item = items.get(*index).unwrap_or(&Value::Null);
                let pe = item_element(&kind, item).unwrap_or_else(|_| format!("i:{index}"));
                out.push_str(&print_element(&pe));
                ty = element;
                value = item;
            }
        }
    }
    out
}

/// Upstream's apply conflict: 409 `Conflict`, one `FieldManagerConflict` cause per field.
fn conflict_error(conflicts: &[(String, FieldSet)]) -> Status {
    let mut by_manager: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (manager, set) in conflicts {
        by_manager
            .entry(manager.as_str())
            .or_default()
            .extend(set.printed_paths());
    }
    let count: usize = by_manager.values().map(Vec::len).sum();
    let message = if count == 1 {
        let (manager, path) = by_manager.iter().next().map_or(("", ""), |(m, p)| {
            (*m, p.first().map_or("", String::as_str))
        });
        format!("Apply failed with 1 conflict: conflict with {manager}: {path}")
    } else {
        let mut lines = Vec::new();
        for (manager, paths) in &by_manager {
            lines.push(format!("conflicts with {manager}:"));
            lines.extend(paths.iter().map(|p| format!("- {p}")));
        }
        format!("Apply failed with {count} conflicts: {}", lines.join("\n"))
    };
    let mut s = Status::failure(409, "Conflict", message);
    s.details = Some(StatusDetails {
        causes: by_manager
            .iter()
            .flat_map(|(manager, paths)| {
                paths.iter().map(move |p| StatusCause {
                    reason: "FieldManagerConflict".into(),
                    message: format!("conflict with {manager}"),
                    field: p.clone(),
                })
            })
            .collect(),
        ..StatusDetails::default()
    });
    s
}

/// The manager of a write that names none: the user agent up to its first `/`, printable
/// characters only, at most 128 bytes (upstream's `prefixFromUserAgent`); `unknown` when
/// that leaves nothing.
#[cfg(feature = "http")]
pub(crate) fn manager_from_user_agent(user_agent: &str) -> String {
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        out.push(c);
    }
    if out.is_empty() {
        "unknown".to_owned()
    } else {
        out
    }
}

/// The longest `fieldManager` upstream accepts.
#[cfg(feature = "http")]
pub(crate) const MAX_MANAGER_LEN: usize = 128;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployments() -> ResourceDef {
        ResourceDef::builtins()
            .into_iter()
            .find(|d| d.kind == "Deployment")
            .unwrap()
    }

    fn writer<'a>(manager: &'a str) -> Writer<'a> {
        Writer {
            manager,
            api_version: "apps/v1",
            subresource: "",
            now: "2026-11-27T10:00:00Z",
            scope: Scope::NoStatus,
        }
    }

    fn managers(object: &Value) -> Vec<(String, String, Value)> {
        object["metadata"]["managedFields"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| {
                        (
                            e["manager"].as_str().unwrap().to_owned(),
                            e["operation"].as_str().unwrap().to_owned(),
                            e["fieldsV1"].clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}}
        })
    }

    #[test]
    fn fields_v1_round_trips_and_prints_paths() {
        let v = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}}},
                       "f:finalizers": {"v:\"a\"": {}}}});
        let set = FieldSet::from_fields_v1(&v).unwrap();
        assert_eq!(set.to_fields_v1(), v);
        assert_eq!(
            set.printed_paths(),
            [
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.containers[name=\"web\"]",
                ".spec.containers[name=\"web\"].image",
                ".spec.finalizers[=\"a\"]",
            ]
        );
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
    }

    #[test]
    fn apply_owns_what_it_applies_and_an_update_takes_what_it_changes() {
        let def = deployments();
        let created = apply(&def, None, &deployment(3, "a"), false, &writer("ctl")).unwrap();
        let owned = &managers(&created)[0];
        assert_eq!((owned.0.as_str(), owned.1.as_str()), ("ctl", "Apply"));
        assert_eq!(
            owned.2,
            json!({"f:metadata": {"f:labels": {"f:app": {}}},
                   "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                       "k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {},
                           "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":
                               {".": {}, "f:containerPort": {}}}}}}}}})
        );
        // Another manager scales it: it takes .spec.replicas from the applier.
        let mut scaled = created.clone();
        scaled["spec"]["replicas"] = json!(5);
        track_update(
            &def,
            Some(&created),
            &mut scaled,
            Sent::Absent,
            &writer("hpa"),
        );
        let m = managers(&scaled);
        assert_eq!(m.len(), 2);
        assert_eq!(m[1].0, "hpa");
        assert_eq!(m[1].2, json!({"f:spec": {"f:replicas": {}}}));
        assert!(m[0].2["f:spec"].get("f:replicas").is_none());
        // Applying replicas again conflicts with it; forced, it takes them back.
        let err = apply(
            &def,
            Some(&scaled),
            &deployment(3, "a"),
            false,
            &writer("ctl"),
        )
        .unwrap_err();
        assert_eq!(err.code, 409);
        assert_eq!(
            err.message,
            "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
        );
        let forced = apply(
            &def,
            Some(&scaled),
            &deployment(3, "a"),
            true,
            &writer("ctl"),
        )
        .unwrap();
        assert_eq!(forced["spec"]["replicas"], 3);
        assert_eq!(managers(&forced).len(), 1);
    }

    #[test]
    fn apply_removes_what_its_manager_no_longer_applies_unless_another_owns_it() {
        let def = deployments();
        let mut config = deployment(3, "a");
        config["metadata"]["labels"]["tier"] = json!("front");
        let created = apply(&def, None, &config, false, &writer("ctl")).unwrap();
        let mut annotated = created.clone();
        annotated["metadata"]["annotations"] = json!({"note": "x"});
        track_update(
            &def,
            Some(&created),
            &mut annotated,
            Sent::Absent,
            &writer("kubectl"),
        );
        // The same manager applies without the tier label and without replicas.
        let mut config = deployment(3, "a");
        config["spec"].as_object_mut().unwrap().remove("replicas");
        let next = apply(&def, Some(&annotated), &config, false, &writer("ctl")).unwrap();
        assert_eq!(next["metadata"]["labels"], json!({"app": "web"}));
        assert!(next["spec"].get("replicas").is_none());
        assert_eq!(next["metadata"]["annotations"], json!({"note": "x"}));
        // Another applier sharing a value co-owns it: no conflict, and it stays when the
        // first stops applying it.
        let other = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}}});
        let shared = apply(&def, Some(&next), &other, false, &writer("other")).unwrap();
        let mut config = deployment(3, "a");
        config["metadata"].as_object_mut().unwrap().remove("labels");
        let after = apply(&def, Some(&shared), &config, false, &writer("ctl")).unwrap();
        assert_eq!(after["metadata"]["labels"], json!({"app": "web"}));
    }

    #[test]
    fn apply_checks_the_version_and_the_keys_and_names_every_conflict() {
        let def = deployments();
        let mut wrong = deployment(1, "a");
        wrong["apiVersion"] = json!("apps/v1beta1");
        let err = apply(&def, None, &wrong, false, &writer("ctl")).unwrap_err();
        assert_eq!(
            err.message,
            "Incorrect version specified in apply patch. Specified patch version: \
             apps/v1beta1, expected: apps/v1"
        );
        let mut keyless = deployment(1, "a");
        keyless["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("name");
        assert_eq!(
            apply(&def, None, &keyless, false, &writer("ctl"))
                .unwrap_err()
                .code,
            500
        );
        let created = apply(&def, None, &deployment(1, "a"), false, &writer("a")).unwrap();
        let err = apply(
            &def,
            Some(&created),
            &deployment(2, "b"),
            false,
            &writer("b"),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.replicas\n- \
             .spec.template.spec.containers[name=\"web\"].image"
        );
        let causes = err.details.unwrap().causes;
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].reason, "FieldManagerConflict");
        assert_eq!(causes[0].field, ".spec.replicas");
    }

    #[test]
    fn an_update_keeps_sent_or_reset_managed_fields_as_upstream_does() {
        let def = deployments();
        let created = apply(&def, None, &deployment(1, "a"), false, &writer("ctl")).unwrap();
        let mut reset = created.clone();
        reset["spec"]["replicas"] = json!(2);
        track_update(
            &def,
            Some(&created),
            &mut reset,
            Sent::Reset,
            &writer("kubectl"),
        );
        let m = managers(&reset);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, "kubectl");
        // A write that changes nothing leaves the managers as they were.
        let mut same = created.clone();
        track_update(
            &def,
            Some(&created),
            &mut same,
            Sent::Absent,
            &writer("kubectl"),
        );
        assert_eq!(same, created);
    }

    #[test]
    fn the_oldest_update_managers_fold_into_ancient_changes() {
        let def = deployments();
        let mut object = apply(&def, None, &deployment(1, "a"), false, &writer("ctl")).unwrap();
        let times: Vec<String> = (0..12)
            .map(|i| format!("2026-11-27T10:00:{i:02}Z"))
            .collect();
        for (i, now) in times.iter().enumerate() {
            let mut next = object.clone();
            next["metadata"]["labels"][format!("l{i}")] = json!("x");
            let manager = format!("m{i:02}");
            let w = Writer {
                now,
                ..writer(&manager)
            };
            track_update(&def, Some(&object), &mut next, Sent::Absent, &w);
            object = next;
        }
        let m = managers(&object);
        let updaters: Vec<&str> = m
            .iter()
            .filter(|e| e.1 == "Update")
            .map(|e| e.0.as_str())
            .collect();
        assert_eq!(updaters.len(), 10, "{updaters:?}");
        assert_eq!(updaters[0], "ancient-changes");
        let bucket = &m.iter().find(|e| e.0 == "ancient-changes").unwrap().2;
        assert_eq!(
            bucket,
            &json!({"f:metadata": {"f:labels": {"f:l0": {}, "f:l1": {}, "f:l2": {}}}})
        );
        assert_eq!(m[0].0, "ctl", "appliers are never folded");
    }

    #[test]
    fn keyed_items_merge_in_the_configuration_s_order() {
        let kind = ListKind::Keyed(vec![("name".to_owned(), None)]);
        let item = |n: &str, v: i64| json!({"name": n, "v": v});
        let live = [item("a", 1), item("b", 1), item("c", 1)];
        // Shared items follow the configuration; the object's own stay where they are; a
        // new item comes where the configuration puts it.
        let merged = merge_items(
            &live,
            &[item("c", 2), item("x", 2), item("a", 2)],
            &kind,
            Ty::Deduced,
        )
        .unwrap();
        let names: Vec<&str> = merged.iter().map(|i| i["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["b", "c", "x", "a"]);
        assert_eq!(merged[1]["v"], 2);
        let set = merge_items(
            &[json!("p"), json!("q")],
            &[json!("r"), json!("p")],
            &ListKind::Set,
            Ty::Deduced,
        )
        .unwrap();
        // `r` comes before `p`, the shared value it precedes in the configuration.
        assert_eq!(set, [json!("r"), json!("p"), json!("q")]);
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_manager_is_named_by_the_user_agent_up_to_its_first_slash() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.32.0 (linux/amd64)"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent("kube\u{7}rs/1"), "kubers");
        assert_eq!(manager_from_user_agent(&"m".repeat(200)).len(), 128);
        assert_eq!(manager_from_user_agent(""), "unknown");
    }
}

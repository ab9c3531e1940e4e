//! The built-in kinds read as the API server reads them: a JSON body is decoded into the
//! kind's Go type, so a field the type does not have is dropped (and reported: a strict
//! decoding error under `fieldValidation=Strict`, a warning under `Warn`), and a value of the
//! wrong JSON type is a 400 with Go's own words (`json: cannot unmarshal string into Go
//! struct field DeploymentSpec.spec.replicas of type int32`).
//!
//! The types come from `builtin_types.txt`, which `cargo xtask codegen` generates from
//! k8s-openapi's structs (the same Go types, field for field). The walk follows
//! `sigs.k8s.io/json`, the decoder the API server uses: field names match exactly (case
//! sensitive); unknown fields are reported by their path (`spec.containers[0].foo`, map keys
//! as `.key`), each once, at most 100; a type error reports the first value that cannot be
//! decoded, in the context Go gives it (the struct holding the field and the field names from
//! the root, without indices); once a type error is found, the unknown fields are not
//! reported. `null` decodes into anything. The special types decode as their Go
//! `UnmarshalJSON` does: `Time` and `MicroTime` as RFC 3339 strings, `Quantity` from a
//! string or a number, `IntOrString` from a string or an `int32`, `[]byte` from base64.
//! Quantities and times are written back as upstream's `MarshalJSON`s write them
//! (`quantity.rs`: `1000m` becomes `"1"`, a number a string, a `ResourceList`'s rounded up to
//! milli-units first as the defaults round them; a time in UTC, to the second, a `MicroTime`
//! to the microsecond). Strings, numbers and booleans are checked, not converted: the stored
//! JSON keeps them as sent.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use serde_json::Value;

use crate::continue_token::base64_encode;
use crate::object::{civil_from_days, days_from_civil};
use crate::quantity;

/// The generated table; see its header for the format.
const TABLE: &str = include_str!("builtin_types.txt");

/// The most unknown fields one decoding reports (upstream's cap).
const MAX_UNKNOWN: usize = 100;

/// What a JSON value decodes into.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ty {
    Str,
    Bool,
    I32,
    I64,
    F64,
    Bytes,
    Time,
    MicroTime,
    Quantity,
    IntOrString,
    Any,
    Struct(usize),
    Array(Box<Ty>),
    Map(Box<Ty>),
}

/// One Go struct.
#[derive(Debug)]
struct GoStruct {
    /// Its OpenAPI definition (`io.k8s.api.apps.v1.DeploymentSpec`).
    definition: String,
    /// As `reflect.Type.String()` prints it: `v1.DeploymentSpec`.
    go_name: String,
    /// Its fields by JSON name, sorted (looked up by binary search: cheaper than hashing
    /// for the few short names a struct has).
    fields: Vec<(String, Ty)>,
}

impl GoStruct {
    fn field(&self, name: &str) -> Option<&Ty> {
        self.fields
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .ok()
            .map(|i| &self.fields[i].1)
    }

    /// As `reflect.Type.Name()` prints it: `DeploymentSpec`.
    fn name(&self) -> &str {
        self.go_name
            .rsplit_once('.')
            .map_or(self.go_name.as_str(), |(_, n)| n)
    }
}

/// The whole table.
#[derive(Debug)]
struct Types {
    structs: Vec<GoStruct>,
    by_definition: HashMap<String, usize>,
}

impl Types {
    fn get() -> &'static Types {
        static TYPES: OnceLock<Types> = OnceLock::new();
        TYPES.get_or_init(|| parse(TABLE))
    }

    fn go_type(&self, ty: &Ty) -> String {
        match ty {
            Ty::Str | Ty::Time | Ty::MicroTime => "string".into(),
            Ty::Bool => "bool".into(),
            Ty::I32 | Ty::IntOrString => "int32".into(),
            Ty::I64 => "int64".into(),
            Ty::F64 => "float64".into(),
            Ty::Bytes => "[]uint8".into(),
            Ty::Quantity => "resource.Quantity".into(),
            Ty::Any => "interface {}".into(),
            Ty::Struct(i) => self.structs[*i].go_name.clone(),
            Ty::Array(t) => format!("[]{}", self.go_type(t)),
            Ty::Map(t) => format!("map[string]{}", self.go_type(t)),
        }
    }
}

fn parse(text: &str) -> Types {
    // First pass: struct indices, so fields can refer to later structs.
    let by_definition: HashMap<String, usize> = text
        .lines()
        .filter_map(|l| l.strip_prefix("T "))
        .filter_map(|l| l.split_whitespace().next())
        .enumerate()
        .map(|(i, d)| (d.to_owned(), i))
        .collect();
    let mut structs: Vec<GoStruct> = Vec::with_capacity(by_definition.len());
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("T ") {
            let mut parts = rest.split_whitespace();
            let definition = parts.next().unwrap_or("").to_owned();
            let go_name = parts.next().unwrap_or("").to_owned();
            structs.push(GoStruct {
                definition,
                go_name,
                fields: Vec::new(),
            });
        } else if let Some(rest) = line.strip_prefix("F ")
            && let Some((name, ty)) = rest.split_once(' ')
            && let Some(ty) = parse_ty(ty, &by_definition)
            && let Some(s) = structs.last_mut()
        {
            s.fields.push((name.to_owned(), ty));
        }
    }
    for s in &mut structs {
        s.fields.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Types {
        structs,
        by_definition,
    }
}

fn parse_ty(text: &str, by_definition: &HashMap<String, usize>) -> Option<Ty> {
    if let Some(inner) = text.strip_prefix("[]") {
        return Some(Ty::Array(Box::new(parse_ty(inner, by_definition)?)));
    }
    if let Some(inner) = text.strip_prefix("{}") {
        return Some(Ty::Map(Box::new(parse_ty(inner, by_definition)?)));
    }
    if let Some(definition) = text.strip_prefix('@') {
        return by_definition.get(definition).map(|i| Ty::Struct(*i));
    }
    Some(match text {
        "s" => Ty::Str,
        "b" => Ty::Bool,
        "i32" => Ty::I32,
        "i64" => Ty::I64,
        "f64" => Ty::F64,
        "bytes" => Ty::Bytes,
        "time" => Ty::Time,
        "mtime" => Ty::MicroTime,
        "qty" => Ty::Quantity,
        "ios" => Ty::IntOrString,
        "any" => Ty::Any,
        _ => return None,
    })
}

/// Decodes `body` as the Go type of OpenAPI definition `definition`: drops the fields that
/// type does not have and answers their paths, and writes its quantities back as upstream
/// does (`ResourceList`s of core, apps and batch kinds rounded up to milli-units, as their
/// defaults round them); or answers the first decoding error as Go words it (without the
/// API server's `<Kind> in version ... cannot be handled` prefix), leaving `body` as it was.
/// A definition without a Go type here decodes as is (`Ok`, nothing unknown).
pub(crate) fn decode(definition: &str, body: &mut Value) -> Result<Vec<String>, String> {
    let types = Types::get();
    let Some(&root) = types.by_definition.get(definition) else {
        return Ok(Vec::new());
    };
    let root = Ty::Struct(root);
    let mut walk = Walk {
        types,
        unknown: Vec::new(),
        seen: HashSet::new(),
        path: Vec::new(),
        fields: Vec::new(),
        holder: None,
        // `SetDefaults_ResourceList`, which the generated defaulters of these groups call
        // on every `ResourceList` (the only maps of quantities they have).
        round_lists: [
            "io.k8s.api.core.v1.",
            "io.k8s.api.apps.v1.",
            "io.k8s.api.batch.v1.",
        ]
        .iter()
        .any(|group| definition.starts_with(group)),
        rewrites: Vec::new(),
    };
    walk.value(&root, body)?;
    let Walk {
        unknown, rewrites, ..
    } = walk;
    if !unknown.is_empty() {
        drop_unknown(types, &root, body);
    }
    for (path, text) in rewrites {
        if let Some(slot) = at_path(body, &path) {
            *slot = Value::String(text);
        }
    }
    Ok(unknown)
}

/// The value at `path` in `value`.
fn at_path<'a>(value: &'a mut Value, path: &[Step]) -> Option<&'a mut Value> {
    path.iter().try_fold(value, |value, step| match step {
        Step::Field(key) => value.get_mut(key.as_str()),
        Step::Index(i) => value.get_mut(*i),
    })
}

/// How Go's JSON decoder names the kind of `value` in its errors (`cannot unmarshal <kind>
/// into ...`).
pub(crate) fn go_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Calls `visit` with every object in `body` that decodes as a Go struct, with its OpenAPI
/// definition, parents before their fields (what upstream's generated defaulters walk); an
/// object `visit` adds fields to is walked with them.
pub(crate) fn walk_structs(
    definition: &str,
    body: &mut Value,
    visit: &mut dyn FnMut(&str, &mut serde_json::Map<String, Value>),
) {
    let types = Types::get();
    if let Some(&root) = types.by_definition.get(definition) {
        walk_at(types, &Ty::Struct(root), body, visit);
    }
}

fn walk_at(
    types: &Types,
    ty: &Ty,
    value: &mut Value,
    visit: &mut dyn FnMut(&str, &mut serde_json::Map<String, Value>),
) {
    match (ty, value) {
        (Ty::Struct(i), Value::Object(map)) => {
            let s = &types.structs[*i];
            visit(&s.definition, map);
            for (key, child) in map.iter_mut() {
                if let Some(child_ty) = s.field(key) {
                    walk_at(types, child_ty, child, visit);
                }
            }
        }
        (Ty::Map(t), Value::Object(map)) => {
            for child in map.values_mut() {
                walk_at(types, t, child, visit);
            }
        }
        (Ty::Array(t), Value::Array(items)) => {
            for item in items {
                walk_at(types, t, item, visit);
            }
        }
        _ => {}
    }
}

/// What the conversion to the API server's internal version does to a decoded body of
/// `definition`: a Secret's `stringData` is write-only, each entry overwriting `data`'s
/// (base64-encoded), and is not kept.
pub(crate) fn convert(definition: &str, body: &mut Value) {
    if definition != "io.k8s.api.core.v1.Secret" {
        return;
    }
    let Some(object) = body.as_object_mut() else {
        return;
    };
    let Some(Value::Object(string_data)) = object.remove("stringData") else {
        return;
    };
    if string_data.is_empty() {
        return;
    }
    let data = object
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if !data.is_object() {
        *data = Value::Object(serde_json::Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (key, value) in string_data {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, Value::String(base64_encode(text.as_bytes())));
        }
    }
}

/// The fields an apply configuration sets that the Go type of `definition` does not have,
/// each as the path to the object holding it and its name (upstream's server-side apply
/// refuses them: `field not declared in schema`): an object's first (by name; upstream's
/// walk stops there too, in map order), after what its fields before it hold. Values are
/// not checked.
pub(crate) fn undeclared(definition: &str, config: &Value) -> Vec<(Vec<Step>, String)> {
    let types = Types::get();
    let mut out = Vec::new();
    if let Some(&root) = types.by_definition.get(definition) {
        undeclared_at(types, &Ty::Struct(root), config, &mut Vec::new(), &mut out);
    }
    out
}

/// One step of a path into a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Field(String),
    Index(usize),
}

fn undeclared_at(
    types: &Types,
    ty: &Ty,
    value: &Value,
    path: &mut Vec<Step>,
    out: &mut Vec<(Vec<Step>, String)>,
) {
    match (ty, value) {
        (Ty::Struct(i), Value::Object(map)) => {
            let s = &types.structs[*i];
            for (key, child) in map {
                match s.field(key) {
                    Some(child_ty) => {
                        path.push(Step::Field(key.clone()));
                        undeclared_at(types, child_ty, child, path, out);
                        path.pop();
                    }
                    None => {
                        // Upstream's walk stops at an object's first undeclared field.
                        out.push((path.clone(), key.clone()));
                        break;
                    }
                }
            }
        }
        (Ty::Map(t), Value::Object(map)) => {
            for (key, child) in map {
                path.push(Step::Field(key.clone()));
                undeclared_at(types, t, child, path, out);
                path.pop();
            }
        }
        (Ty::Array(t), Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                path.push(Step::Index(i));
                undeclared_at(types, t, item, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

/// One step of a strict-decoding path.
enum Seg<'v> {
    Key(&'v str),
    Index(usize),
}

struct Walk<'t, 'v> {
    types: &'t Types,
    unknown: Vec<String>,
    seen: HashSet<String>,
    /// The keys and indices from the root to the value being decoded (paths are only
    /// spelled out for the unknown fields).
    path: Vec<Seg<'v>>,
    /// The struct fields from the root to the value being decoded (Go's error context).
    fields: Vec<&'v str>,
    /// The struct whose field is being decoded.
    holder: Option<usize>,
    /// Whether maps of quantities (`ResourceList`s) are rounded up to milli-units.
    round_lists: bool,
    /// The quantities whose text changes, by path, with their new text.
    rewrites: Vec<(Vec<Step>, String)>,
}

impl<'v> Walk<'_, 'v> {
    /// Decodes `value` as `ty`, reading only.
    fn value(&mut self, ty: &Ty, value: &'v Value) -> Result<(), String> {
        if value.is_null() {
            return Ok(());
        }
        match ty {
            Ty::Any => Ok(()),
            Ty::Struct(i) => {
                let Value::Object(map) = value else {
                    return Err(self.type_error(value, ty));
                };
                let s = &self.types.structs[*i];
                for (key, child) in map {
                    let Some(child_ty) = s.field(key) else {
                        if self.unknown.len() < MAX_UNKNOWN {
                            let path = self.spell(key);
                            if self.seen.insert(path.clone()) {
                                self.unknown.push(path);
                            }
                        }
                        continue;
                    };
                    let holder = self.holder;
                    self.path.push(Seg::Key(key));
                    self.fields.push(key);
                    self.holder = Some(*i);
                    let decoded = self.value(child_ty, child);
                    self.path.pop();
                    self.fields.pop();
                    self.holder = holder;
                    decoded?;
                }
                Ok(())
            }
            Ty::Map(t) => {
                let Value::Object(map) = value else {
                    return Err(self.type_error(value, ty));
                };
                let quantities = **t == Ty::Quantity;
                for (key, child) in map {
                    self.path.push(Seg::Key(key));
                    let decoded = if quantities {
                        // A `null` in a map of quantities is Go's zero `Quantity`: "0".
                        self.quantity(child, self.round_lists)
                    } else {
                        self.value(t, child)
                    };
                    self.path.pop();
                    decoded?;
                }
                Ok(())
            }
            Ty::Array(t) => {
                let Value::Array(items) = value else {
                    return Err(self.type_error(value, ty));
                };
                for (i, item) in items.iter().enumerate() {
                    self.path.push(Seg::Index(i));
                    let decoded = self.value(t, item);
                    self.path.pop();
                    decoded?;
                }
                Ok(())
            }
            Ty::Str => match value {
                Value::String(_) => Ok(()),
                other => Err(self.type_error(other, ty)),
            },
            Ty::Bool => match value {
                Value::Bool(_) => Ok(()),
                other => Err(self.type_error(other, ty)),
            },
            Ty::I32 | Ty::I64 | Ty::IntOrString => match value {
                Value::String(_) if *ty == Ty::IntOrString => Ok(()),
                Value::Number(n) => {
                    let fits = match n.as_i64() {
                        Some(_) if *ty == Ty::I64 => true,
                        Some(v) => i32::try_from(v).is_ok(),
                        None => false,
                    };
                    if fits {
                        Ok(())
                    } else {
                        Err(self.error(&format!("number {n}"), ty))
                    }
                }
                other => Err(self.type_error(other, ty)),
            },
            Ty::F64 => match value {
                Value::Number(_) => Ok(()),
                other => Err(self.type_error(other, ty)),
            },
            Ty::Bytes => match value {
                Value::String(s) => match base64_error(s) {
                    None => Ok(()),
                    Some(at) => Err(format!("illegal base64 data at input byte {at}")),
                },
                other => Err(self.type_error(other, ty)),
            },
            Ty::Time | Ty::MicroTime => match value {
                Value::String(s) => {
                    if let Some(text) = time_text(s, *ty == Ty::MicroTime)? {
                        self.rewrite(text);
                    }
                    Ok(())
                }
                other => Err(self.type_error(other, ty)),
            },
            Ty::Quantity => self.quantity(value, false),
        }
    }

    /// Decodes `value` as a `Quantity` (rounded up to milli-units if `round`), noting its
    /// new text if upstream would write it differently.
    fn quantity(&mut self, value: &'v Value, round: bool) -> Result<(), String> {
        let mut parsed = match value {
            Value::Null => quantity::parse("0"),
            // `UnmarshalJSON` trims the text between the quotes.
            Value::String(s) => quantity::parse(s.trim()),
            other => quantity::parse(&other.to_string()),
        }?;
        if round {
            parsed.round_up(quantity::MILLI);
        }
        let text = parsed.text();
        if value.as_str() != Some(&*text) {
            self.rewrite(text.into_owned());
        }
        Ok(())
    }

    /// Notes that the value being decoded is written back as `text`.
    fn rewrite(&mut self, text: String) {
        let path = self
            .path
            .iter()
            .map(|seg| match seg {
                Seg::Key(k) => Step::Field((*k).to_owned()),
                Seg::Index(i) => Step::Index(*i),
            })
            .collect();
        self.rewrites.push((path, text));
    }

    /// The strict-decoding path of field `key` of the object being decoded
    /// (`spec.containers[0].key`).
    fn spell(&self, key: &str) -> String {
        let mut out = String::new();
        for seg in &self.path {
            match seg {
                Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => out.push_str(&format!("[{i}]")),
            }
        }
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(key);
        out
    }

    /// Go's `UnmarshalTypeError` for `value` (not null) decoded as `ty`.
    fn type_error(&self, value: &Value, ty: &Ty) -> String {
        self.error(go_kind(value), ty)
    }

    fn error(&self, what: &str, ty: &Ty) -> String {
        let go = self.types.go_type(ty);
        match self.holder {
            Some(i) => format!(
                "json: cannot unmarshal {what} into Go struct field {}.{} of type {go}",
                self.types.structs[i].name(),
                self.fields.join(".")
            ),
            None => format!("json: cannot unmarshal {what} into Go value of type {go}"),
        }
    }
}

/// Removes from `value` (decoded as `ty`) the fields its structs do not have.
fn drop_unknown(types: &Types, ty: &Ty, value: &mut Value) {
    match (ty, value) {
        (Ty::Struct(i), Value::Object(map)) => {
            let s = &types.structs[*i];
            map.retain(|key, _| s.field(key).is_some());
            for (key, child) in map.iter_mut() {
                if let Some(child_ty) = s.field(key) {
                    drop_unknown(types, child_ty, child);
                }
            }
        }
        (Ty::Map(t), Value::Object(map)) => {
            for child in map.values_mut() {
                drop_unknown(types, t, child);
            }
        }
        (Ty::Array(t), Value::Array(items)) => {
            for item in items {
                drop_unknown(types, t, item);
            }
        }
        _ => {}
    }
}

/// Where Go's standard base64 decoding of `s` fails, if it does (`base64.StdEncoding`:
/// padding required, `\r` and `\n` skipped), with the offset Go reports.
fn base64_error(s: &str) -> Option<usize> {
    let src = s.as_bytes();
    let alphabet = |b: u8| b.is_ascii_alphanumeric() || b == b'+' || b == b'/';
    let skip_newlines = |mut si: usize| {
        while si < src.len() && matches!(src[si], b'\r' | b'\n') {
            si += 1;
        }
        si
    };
    let mut si = 0;
    loop {
        // One quantum of four characters.
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                return (j != 0).then(|| si - j);
            }
            let c = src[si];
            si += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                // A second `=` must follow.
                si = skip_newlines(si);
                if si == src.len() {
                    return Some(src.len());
                }
                if src[si] != b'=' {
                    return Some(si - 1);
                }
                si += 1;
            }
            // Padding ends the data: anything but newlines after it is garbage.
            si = skip_newlines(si);
            return (si < src.len()).then_some(si);
        }
    }
}

/// Go's `time.Parse` with `time.RFC3339` (`micro`: `RFC3339Micro`, six fractional digits)
/// on `s`, as `metav1.Time`'s (`MicroTime`'s) `UnmarshalJSON` calls it: the error as Go words
/// it, or the text its `MarshalJSON` writes back if it is not `s` (`None`: `s` is written
/// back as it is): in UTC, to the second (the microsecond), truncated. A time whose year in
/// UTC leaves 0-9999, which Go cannot write, is kept as sent.
fn time_text(s: &str, micro: bool) -> Result<Option<String>, String> {
    let layout = if micro {
        "2006-01-02T15:04:05.000000Z07:00"
    } else {
        "2006-01-02T15:04:05Z07:00"
    };
    let fail = |rest: &str, elem: &str| {
        Err(format!(
            "parsing time {s:?} as {layout:?}: cannot parse {rest:?} as {elem:?}"
        ))
    };
    let range = |what: &str| Err(format!("parsing time {s:?}: {what} out of range"));
    let mut rest = s;
    let mut numbers = [0u32; 6];
    let elems: [(&str, usize, &str); 6] = [
        ("2006", 4, "-"),
        ("01", 2, "-"),
        ("02", 2, "T"),
        ("15", 2, ":"),
        ("04", 2, ":"),
        ("05", 2, ""),
    ];
    for (k, (elem, digits, sep)) in elems.iter().enumerate() {
        let head = rest
            .get(..*digits)
            .filter(|h| h.bytes().all(|b| b.is_ascii_digit()));
        let Some(head) = head else {
            return fail(rest, elem);
        };
        numbers[k] = head.parse().unwrap_or(0);
        rest = &rest[*digits..];
        if !sep.is_empty() {
            match rest.strip_prefix(sep) {
                Some(r) => rest = r,
                None => return fail(rest, sep),
            }
        }
    }
    let [year, month, day, hour, minute, second] = numbers;
    if !(1..=12).contains(&month) {
        return range("month");
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days {
        return range("day");
    }
    if hour > 23 {
        return range("hour");
    }
    if minute > 59 {
        return range("minute");
    }
    if second > 59 {
        return range("second");
    }
    // Fractional seconds: optional in RFC 3339 (Go accepts them after the seconds), exactly
    // six digits in RFC3339Micro.
    // Already in the form written back: UTC (`Z`), and a time without a fraction.
    let mut canonical = true;
    let mut micros = "";
    if micro {
        let frac = rest
            .strip_prefix('.')
            .and_then(|r| r.get(..6))
            .filter(|d| d.bytes().all(|b| b.is_ascii_digit()));
        match frac {
            Some(digits) => {
                micros = digits;
                rest = &rest[7..];
            }
            None => return fail(rest, ".000000"),
        }
    } else if let Some(r) = rest.strip_prefix(['.', ',']) {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n > 0 {
            rest = &r[n..];
            canonical = false;
        }
    }
    let mut east = 0i64;
    if let Some(r) = rest.strip_prefix('Z') {
        rest = r;
    } else {
        canonical = false;
        let offset = rest
            .get(..6)
            .filter(|o| {
                let b = o.as_bytes();
                (b[0] == b'+' || b[0] == b'-')
                    && b[1].is_ascii_digit()
                    && b[2].is_ascii_digit()
                    && b[3] == b':'
                    && b[4].is_ascii_digit()
                    && b[5].is_ascii_digit()
            })
            .map(|o| {
                (
                    o[1..3].parse::<u32>().unwrap_or(0),
                    o[4..6].parse::<u32>().unwrap_or(0),
                )
            });
        match offset {
            Some((h, m)) => {
                if h > 23 || m > 59 {
                    return Err(format!("parsing time {s:?}: time zone offset out of range"));
                }
                let sign = if rest.starts_with('-') { -1 } else { 1 };
                east = sign * i64::from(h * 3600 + m * 60);
                rest = &rest[6..];
            }
            None => return fail(rest, "Z07:00"),
        }
    }
    if !rest.is_empty() {
        return Err(format!("parsing time {s:?}: extra text: {rest:?}"));
    }
    if canonical {
        return Ok(None);
    }
    let local = days_from_civil(i64::from(year), i64::from(month), i64::from(day)) * 86_400
        + i64::from(hour * 3600 + minute * 60 + second);
    let utc = local - east;
    let (y, mo, d) = civil_from_days(utc.div_euclid(86_400));
    if !(0..=9999).contains(&y) {
        return Ok(None);
    }
    let of_day = utc.rem_euclid(86_400);
    let (h, mi, sec) = (of_day / 3600, of_day / 60 % 60, of_day % 60);
    let fraction = if micro {
        format!(".{micros}")
    } else {
        String::new()
    };
    Ok(Some(format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{sec:02}{fraction}Z"
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const DEPLOYMENT: &str = "io.k8s.api.apps.v1.Deployment";
    const POD: &str = "io.k8s.api.core.v1.Pod";

    #[test]
    fn every_line_of_the_table_is_understood() {
        let types = Types::get();
        let fields = TABLE.lines().filter(|l| l.starts_with("F ")).count();
        let parsed: usize = types.structs.iter().map(|s| s.fields.len()).sum();
        assert_eq!(parsed, fields, "a field line was not understood");
        let knows = |d: &str| types.by_definition.contains_key(d);
        assert!(knows(POD) && knows(DEPLOYMENT));
        assert!(knows(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        ));
        assert!(!knows("io.example.v1.Widget"));
    }

    #[test]
    fn unknown_fields_are_dropped_and_reported_by_their_path() {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "colour": "red"},
            "spec": {
                "containers": [
                    {"name": "a", "image": "x", "imagePullPolicy": "Always"},
                    {"name": "b", "image": "y", "ports": [{"containerPort": 80, "portz": 1}], "Image": "z"}
                ],
                "nodeSelector": {"disk": "ssd"},
                "spec": {"nested": true}
            },
            "status": {"phase": "Running", "podIP": "10.0.0.1"}
        });
        let unknown = decode(POD, &mut pod).unwrap();
        assert_eq!(
            unknown,
            [
                "metadata.colour",
                "spec.containers[1].Image",
                "spec.containers[1].ports[0].portz",
                "spec.spec"
            ]
        );
        assert_eq!(pod["metadata"], json!({"name": "p", "labels": {"a": "b"}}));
        assert_eq!(
            pod["spec"]["containers"][1],
            json!({"name": "b", "image": "y", "ports": [{"containerPort": 80}]})
        );
        assert!(pod["spec"].get("spec").is_none());
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"disk": "ssd"}),
            "map keys are not fields"
        );
        assert_eq!(pod["status"]["podIP"], "10.0.0.1");

        // Embedded JSON (`fieldsV1`, a CRD's `default`) keeps whatever it holds.
        let mut managed = json!({"metadata": {"managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {"anything": {}}}}]}});
        assert_eq!(decode(POD, &mut managed).unwrap(), Vec::<String>::new());
        assert_eq!(
            managed["metadata"]["managedFields"][0]["fieldsV1"],
            json!({"f:spec": {"anything": {}}})
        );
    }

    #[test]
    fn wrong_types_are_go_s_unmarshal_errors() {
        let cases = [
            (
                json!({"spec": {"replicas": "3"}}),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                json!({"spec": {"replicas": 1.5}}),
                "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                json!({"spec": {"replicas": 3_000_000_000u64}}),
                "json: cannot unmarshal number 3000000000 into Go struct field DeploymentSpec.spec.replicas of type int32",
            ),
            (
                json!({"spec": "big"}),
                "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "80"}]}]}}}}),
                "json: cannot unmarshal string into Go struct field ContainerPort.spec.template.spec.containers.ports.containerPort of type int32",
            ),
            (
                json!({"spec": {"template": {"spec": {"containers": {"name": "a"}}}}}),
                "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container",
            ),
            (
                json!({"metadata": {"labels": {"a": 1}}}),
                "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string",
            ),
            (
                json!({"spec": {"paused": "yes"}}),
                "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool",
            ),
            (
                json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": true}}}}),
                "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32",
            ),
            (
                json!({"status": {"conditions": [{"type": "Available", "lastTransitionTime": "yesterday"}]}}),
                "parsing time \"yesterday\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"yesterday\" as \"2006\"",
            ),
        ];
        for (mut body, want) in cases {
            // Unknown fields found before the type error are not what is reported.
            body["unknownField"] = json!(1);
            assert_eq!(
                decode(DEPLOYMENT, &mut body),
                Err(want.to_owned()),
                "{body}"
            );
        }
        // What does decode: null anywhere, int-or-string as either, numbers for quantities.
        let mut fine = json!({
            "spec": {"replicas": null, "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
                     "template": {"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1.5, "memory": "1Gi"}}}]}}},
            "status": {"conditions": [{"type": "Available", "lastTransitionTime": "2026-11-27T10:00:00.5+01:00"}]}
        });
        assert_eq!(decode(DEPLOYMENT, &mut fine), Ok(Vec::new()));
    }

    #[test]
    fn special_types_decode_as_their_go_unmarshalers() {
        let quantity = |q: Value| {
            let mut pod = json!({"spec": {"containers": [{"name": "a", "resources": {"requests": {"cpu": q}}}]}});
            decode(POD, &mut pod).err()
        };
        for ok in [
            json!("100m"),
            json!("1.5Gi"),
            json!("1e3"),
            json!(" 2 "),
            json!(3),
            json!("0"),
            json!("+.5k"),
        ] {
            assert_eq!(quantity(ok.clone()), None, "{ok}");
        }
        let format = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
        assert_eq!(quantity(json!("")).as_deref(), Some(format));
        assert_eq!(quantity(json!("1 Gi")).as_deref(), Some(format));
        assert_eq!(quantity(json!(true)).as_deref(), Some(format));
        assert_eq!(quantity(json!("1Gb")).as_deref(), Some(format));
        assert_eq!(
            quantity(json!("5Mm")).as_deref(),
            Some("unable to parse quantity's suffix")
        );
        assert_eq!(
            quantity(json!("1mi")).as_deref(),
            Some("unable to parse quantity's suffix")
        );

        for (bad, at) in [
            ("aGVsbG8", 4),
            ("aGVs*G8=", 4),
            ("aGVsbA=x", 6),
            ("a===", 1),
            ("aGk=x", 4),
            ("aG=", 3),
        ] {
            let mut secret = json!({"data": {"k": bad}});
            assert_eq!(
                decode("io.k8s.api.core.v1.Secret", &mut secret),
                Err(format!("illegal base64 data at input byte {at}")),
                "{bad}"
            );
        }
        let mut secret = json!({"data": {"k": "aGVsbG8=", "l": "aGk=", "m": ""}});
        assert_eq!(
            decode("io.k8s.api.core.v1.Secret", &mut secret),
            Ok(Vec::new())
        );

        for (bad, want) in [
            (
                "2026-13-01T00:00:00Z",
                "parsing time \"2026-13-01T00:00:00Z\": month out of range",
            ),
            (
                "2026-02-30T00:00:00Z",
                "parsing time \"2026-02-30T00:00:00Z\": day out of range",
            ),
            (
                "2026-01-01 00:00:00Z",
                "parsing time \"2026-01-01 00:00:00Z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \" 00:00:00Z\" as \"T\"",
            ),
            (
                "2026-01-01T00:00:00",
                "parsing time \"2026-01-01T00:00:00\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"\" as \"Z07:00\"",
            ),
            (
                "2026-01-01T00:00:00Zoo",
                "parsing time \"2026-01-01T00:00:00Zoo\": extra text: \"oo\"",
            ),
        ] {
            assert_eq!(time_text(bad, false).err().as_deref(), Some(want), "{bad}");
        }
        assert!(time_text("2026-01-01T00:00:00.123456Z", true).is_ok());
        assert!(
            time_text("2026-01-01T00:00:00Z", true).is_err(),
            "MicroTime wants six digits"
        );
    }

    #[test]
    fn quantities_are_written_back_as_upstream_writes_them() {
        let mut pod = json!({"spec": {
            "containers": [{"name": "a", "resources": {
                "limits": {"cpu": "1000m", "memory": "1024Mi", "nvidia.com/gpu": 2},
                "requests": {"cpu": "100u", "memory": " 100Mi ", "ephemeral-storage": null},
            }}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "100u"}}],
            "overhead": {"cpu": "250m"},
        }});
        assert_eq!(decode(POD, &mut pod), Ok(Vec::new()));
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({
                "limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "2"},
                "requests": {"cpu": "1m", "memory": "100Mi", "ephemeral-storage": "0"},
            })
        );
        // Not a `ResourceList`: not rounded, and kept as received (it looked canonical).
        assert_eq!(
            pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"],
            json!("100u")
        );
        assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m"}));
        // A decoding error leaves the body as it was, quantities included.
        let mut bad = json!({"spec": {"containers": [{"name": "a", "resources": {
            "limits": {"cpu": "1000m"}}, "ports": "x"}]}});
        let before = bad.clone();
        assert!(decode(POD, &mut bad).is_err());
        assert_eq!(bad, before);
    }

    #[test]
    fn times_are_written_back_in_utc_to_the_second() {
        // A time already in the form written back needs no new text.
        assert_eq!(time_text("2026-01-01T00:00:00Z", false), Ok(None));
        assert_eq!(time_text("2026-01-01T00:00:00.123456Z", true), Ok(None));
        for (sent, micro, written) in [
            ("2026-01-01T00:00:00Z", false, "2026-01-01T00:00:00Z"),
            ("2024-03-01T00:30:00+01:00", false, "2024-02-29T23:30:00Z"),
            ("2026-12-31T23:00:00-01:00", false, "2027-01-01T00:00:00Z"),
            (
                "2026-01-01T00:00:00.999999999Z",
                false,
                "2026-01-01T00:00:00Z",
            ),
            ("2026-01-01T00:00:00,5+00:00", false, "2026-01-01T00:00:00Z"),
            (
                "2026-01-01T00:00:00.123456-02:30",
                true,
                "2026-01-01T02:30:00.123456Z",
            ),
            ("1969-12-31T23:59:59Z", false, "1969-12-31T23:59:59Z"),
            // Go cannot write a year before 0: the text is kept.
            (
                "0000-01-01T00:00:00+01:00",
                false,
                "0000-01-01T00:00:00+01:00",
            ),
        ] {
            let text = time_text(sent, micro).map(|t| t.unwrap_or_else(|| sent.to_owned()));
            assert_eq!(text.as_deref(), Ok(written), "{sent}");
        }
        let mut pod = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-05-01T12:00:00.5+02:00"}
        ]}});
        assert_eq!(decode(POD, &mut pod), Ok(Vec::new()));
        assert_eq!(
            pod["status"]["conditions"][0]["lastTransitionTime"],
            "2026-05-01T10:00:00Z"
        );
    }

    #[test]
    fn a_secret_s_string_data_overwrites_its_data_and_is_not_kept() {
        let secret = "io.k8s.api.core.v1.Secret";
        let mut body =
            json!({"data": {"a": "eA==", "b": "eQ=="}, "stringData": {"b": "bee", "c": "see!"}});
        convert(secret, &mut body);
        assert_eq!(
            body,
            json!({"data": {"a": "eA==", "b": "YmVl", "c": "c2VlIQ=="}})
        );
        let mut body = json!({"stringData": {"k": ""}});
        convert(secret, &mut body);
        assert_eq!(body, json!({"data": {"k": ""}}));
        let mut config_map = json!({"stringData": {"k": "v"}});
        convert("io.k8s.api.core.v1.ConfigMap", &mut config_map);
        assert_eq!(config_map, json!({"stringData": {"k": "v"}}));
    }

    #[test]
    fn an_apply_configuration_s_undeclared_fields_are_found_with_their_place() {
        let config = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"any": "key"}},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "imagee": "x", "zz": 1}]}}, "zreplicas": 3}
        });
        let found = undeclared(DEPLOYMENT, &config);
        assert_eq!(
            found,
            [
                (
                    vec![
                        Step::Field("spec".into()),
                        Step::Field("template".into()),
                        Step::Field("spec".into()),
                        Step::Field("containers".into()),
                        Step::Index(0)
                    ],
                    "imagee".to_owned()
                ),
                (vec![Step::Field("spec".into())], "zreplicas".to_owned()),
            ]
        );
    }
}

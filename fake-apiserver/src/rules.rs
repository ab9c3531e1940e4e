//! A custom resource's validation rules (`x-kubernetes-validations`, CEL), evaluated as
//! upstream's `apiextensions-apiserver` evaluates them (`pkg/apiserver/schema/cel`, read
//! there), with the `cel` crate as the interpreter.
//!
//! - Each rule runs with `self` bound to the value at its schema node, once per value there
//!   (a rule under `items` once per item); absent and null values are not visited. A rule
//!   that names `oldSelf` (a transition rule) runs only on an update whose old object has a
//!   value at the same place (object properties and map keys correlate, and items of
//!   `x-kubernetes-list-type: map` lists by their keys), unless it sets `optionalOldSelf`,
//!   which binds `oldSelf` to an optional.
//! - Values are typed by the schema: `integer` as int, `number` as double, declared
//!   properties under their escaped names (`__dash__`, `__dot__`, `__slash__`,
//!   `__underscores__`, reserved words as `__word__` and as themselves), maps under their
//!   keys; unknown fields are invisible; at the root and in embedded resources only
//!   `apiVersion`, `kind` and `metadata.name`/`generateName` besides the declared fields.
//! - A rule that is false gives upstream's field error: at the rule's node (its `fieldPath`
//!   appended), of the type its `reason` names, the detail from `messageExpression` (when it
//!   evaluates to a usable string), else `message`, else `failed rule: <rule>`; a scalar's
//!   value is shown, an object's or list's is not (1.35 on). On an update, such an error of a
//!   rule without `oldSelf` on a value equal to the old one is a warning instead (ratcheting).
//!   An evaluation error is `Invalid value: "<type>": <error> evaluating rule: <rule>`.
//! - Cost: upstream meters every step against a budget of ten million per request; here
//!   each evaluation is charged ahead by an estimate (the number of JSON values it can see,
//!   raised to the number of walks over them its comprehensions nest: [`nesting`]), so a
//!   rule that would walk a large value many times, or build a list per item, is refused
//!   with upstream's "running out of cost budget" error instead of holding the store.
//! - Libraries: CEL's standard library, cel-go's strings and lists extensions, and
//!   Kubernetes' list functions (`isSorted`, `sum`, `min`, `max`, `indexOf`,
//!   `lastIndexOf`). A rule calling a function the fake does not implement (`quantity`,
//!   `url`, `ip`, `cidr`, `semver`, `format`, regex `find`, timestamps and durations) is
//!   not checked: the write answers a warning saying so.
//!
//! At CRD admission ([`crd_violations`]) rules and message expressions must parse, `reason`
//! must be one upstream knows, `optionalOldSelf` needs `oldSelf`, and `oldSelf` may not be
//! used inside the items of a list that does not correlate.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use cel::common::ast::{EntryExpr, Expr, IdedExpr};
use cel::common::types::{CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::CowVal;
use cel::extractors::This;
use cel::objects::{Key, Map as CelMap, OptionalValue};
use cel::{Context, Env, ExecutionError, Program, Value as Cel};
use parking_lot::Mutex;
use serde_json::Value;

use crate::schema::{Violation, flag, join, shown};

/// Upstream's `RuntimeCELCostBudget`: what one request's rules may cost together.
const BUDGET: u64 = 10_000_000;

/// Upstream's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE: usize = 5 * 1024;

/// Compiled rules kept (by text); the cache is emptied when it holds this many.
const CACHE_CAP: usize = 4096;

/// CEL's reserved words, which upstream escapes as `__word__` (and which no admission
/// policy variable may be named).
pub(crate) const RESERVED: [&str; 21] = [
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

#[cfg(feature = "http")]
/// The reasons a rule may name.
const REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The fields of a resource's root (and of an embedded resource) rules see.
const ROOT_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// What one request's rules found: errors, and warnings (ratcheted errors, rules not
/// checked).
#[derive(Default)]
pub(crate) struct Outcome {
    pub(crate) violations: Vec<Violation>,
    pub(crate) warnings: Vec<String>,
}

/// One expression, compiled.
struct Compiled {
    program: Program,
    uses_old_self: bool,
    /// The functions it calls.
    functions: HashSet<String>,
}

fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // Registering an extension fails only on a name clash between these two, which
        // cel's own tests rule out ("registers alongside the strings extension").
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::lists);
        // Kubernetes' `indexOf`/`lastIndexOf` on lists (the strings extension declares
        // them on strings, so they are overloads here, not context functions); declaring
        // fails only on a clash, which `kubernetes_list_functions_are_registered` rules out.
        let _ = env.add_member_overload(
            "indexOf",
            "list.indexOf(dyn)",
            LIST_TYPE,
            vec![DYN_TYPE],
            |args| list_position(args, false),
        );
        let _ = env.add_member_overload(
            "lastIndexOf",
            "list.lastIndexOf(dyn)",
            LIST_TYPE,
            vec![DYN_TYPE],
            |args| list_position(args, true),
        );
        Arc::new(env)
    })
}

/// Where `item` first (or last) is in a list: its index, else -1.
fn list_position<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [list, item]: [CowVal<'b, 'v>; 2] = args
        .try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(2, args.len()))?;
    let Cel::List(items) = Cel::try_from(list.as_ref())? else {
        return Err(ExecutionError::function_error("indexOf", "not a list"));
    };
    let item = Cel::try_from(item.as_ref())?;
    let found = if last {
        items.iter().rposition(|i| *i == item)
    } else {
        items.iter().position(|i| *i == item)
    };
    let index = found.and_then(|i| i64::try_from(i).ok()).unwrap_or(-1);
    Ok(CowVal::owned(CelInt::from(index)))
}

fn compile(text: &str) -> Result<Arc<Compiled>, String> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Compiled>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(hit) = cache.lock().get(text) {
        return Ok(hit.clone());
    }
    let program = env().compile(text).map_err(|e| e.to_string())?;
    let references = program.references();
    let uses_old_self = references.has_variable("oldSelf");
    let functions = FUNCTION_NAMES
        .iter()
        .chain(UNSUPPORTED.iter())
        .filter(|f| references.has_function(f))
        .map(|f| (*f).to_owned())
        .collect();
    let compiled = Arc::new(Compiled {
        program,
        uses_old_self,
        functions,
    });
    let mut cache = cache.lock();
    if cache.len() >= CACHE_CAP {
        cache.clear();
    }
    cache.insert(text.to_owned(), compiled.clone());
    Ok(compiled)
}

/// Functions this module adds to CEL's.
const FUNCTION_NAMES: [&str; 4] = ["isSorted", "sum", "min", "max"];

/// Functions of Kubernetes' CEL libraries the fake does not implement.
const UNSUPPORTED: [&str; 42] = [
    "url",
    "isURL",
    "getScheme",
    "getHost",
    "getHostname",
    "getPort",
    "getEscapedPath",
    "getQuery",
    "quantity",
    "isQuantity",
    "sign",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "asApproximateFloat",
    "asInteger",
    "isInteger",
    "ip",
    "isIP",
    "isCanonical",
    "family",
    "isUnspecified",
    "isLoopback",
    "isLinkLocalMulticast",
    "isLinkLocalUnicast",
    "isGlobalUnicast",
    "cidr",
    "isCIDR",
    "containsIP",
    "containsCIDR",
    "prefixLength",
    "masked",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "find",
    "findAll",
    "timestamp",
    "duration",
    "validate",
];

/// How many walks of the value an expression may nest: each comprehension (`all`,
/// `exists`, `map`, `filter`...) is one, and inside a comprehension's body a reference to
/// the whole value, or to a list or object in it (`self`, `self.items`: `schema` tells),
/// is one more (`self.items.map(i, self.items)` builds a list per item). `size()` of a
/// field is not a walk.
fn nesting(e: &IdedExpr, in_body: bool, schema: &Value) -> u32 {
    match &e.expr {
        Expr::Comprehension(c) => {
            let body = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .map(|b| nesting(b, true, schema))
                .max()
                .unwrap_or(0);
            (1 + body)
                .max(nesting(&c.iter_range, in_body, schema))
                .max(nesting(&c.accu_init, in_body, schema))
        }
        Expr::Call(call) if call.func_name == "size" => {
            let arg = call.target.as_deref().or(call.args.first());
            match arg {
                Some(a) if self_path(a).is_some() => 0,
                _ => children_nesting(call, in_body, schema),
            }
        }
        Expr::Call(call) => children_nesting(call, in_body, schema),
        Expr::Ident(name) if in_body && (name == "self" || name == "oldSelf") => 1,
        Expr::Select(_) if in_body && self_path(e).is_some() => {
            let fields = self_path(e).unwrap_or_default();
            u32::from(is_collection(resolve(schema, &fields)))
        }
        Expr::Select(select) => nesting(&select.operand, in_body, schema),
        Expr::List(list) => list
            .elements
            .iter()
            .map(|e| nesting(e, in_body, schema))
            .max()
            .unwrap_or(0),
        Expr::Map(map) => map
            .entries
            .iter()
            .map(|entry| entry_nesting(&entry.expr, in_body, schema))
            .max()
            .unwrap_or(0),
        Expr::Struct(s) => s
            .entries
            .iter()
            .map(|entry| entry_nesting(&entry.expr, in_body, schema))
            .max()
            .unwrap_or(0),
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => 0,
    }
}

fn children_nesting(call: &cel::common::ast::CallExpr, in_body: bool, schema: &Value) -> u32 {
    call.target
        .iter()
        .map(|t| nesting(t, in_body, schema))
        .chain(call.args.iter().map(|a| nesting(a, in_body, schema)))
        .max()
        .unwrap_or(0)
}

fn entry_nesting(entry: &EntryExpr, in_body: bool, schema: &Value) -> u32 {
    match entry {
        EntryExpr::StructField(f) => nesting(&f.value, in_body, schema),
        EntryExpr::MapEntry(m) => {
            nesting(&m.key, in_body, schema).max(nesting(&m.value, in_body, schema))
        }
    }
}

/// The fields a selection follows from `self` or `oldSelf` (`self.a.b`: `[a, b]`).
fn self_path(e: &IdedExpr) -> Option<Vec<&str>> {
    match &e.expr {
        Expr::Ident(name) if name == "self" || name == "oldSelf" => Some(Vec::new()),
        Expr::Select(select) => {
            let mut path = self_path(&select.operand)?;
            path.push(&select.field);
            Some(path)
        }
        _ => None,
    }
}

/// The schema of the value `fields` select (by their escaped names), if the schema says.
fn resolve<'s>(schema: &'s Value, fields: &[&str]) -> Option<&'s Value> {
    let mut node = schema;
    for field in fields {
        let properties = node.get("properties").and_then(Value::as_object);
        let declared = properties.and_then(|p| {
            p.iter()
                .find(|(name, _)| {
                    name.as_str() == *field || escaped(name).as_deref() == Some(field)
                })
                .map(|(_, sub)| sub)
        });
        node = declared.or_else(|| node.get("additionalProperties").filter(|a| a.is_object()))?;
    }
    Some(node)
}

/// Whether a value of this schema may be large (a list or an object, or not known).
fn is_collection(schema: Option<&Value>) -> bool {
    schema.is_none_or(|s| !matches!(schema_type(s), "string" | "integer" | "number" | "boolean"))
}

fn has_rules(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
}

/// Whether any node of `schema` has rules.
pub(crate) fn any_rules(schema: &Value) -> bool {
    has_rules(schema) || children(schema).any(|(_, sub)| any_rules(sub))
}

/// A schema node's sub-schemas, with the segment upstream's CRD paths name them by.
fn children(schema: &Value) -> impl Iterator<Item = (String, &Value)> {
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(name, sub)| (format!("properties[{name}]"), sub));
    let items = schema
        .get("items")
        .filter(|i| i.is_object())
        .map(|i| ("items".to_owned(), i));
    let additional = schema
        .get("additionalProperties")
        .filter(|a| a.is_object())
        .map(|a| ("additionalProperties".to_owned(), a));
    properties.chain(items).chain(additional)
}

/// A property's name as rules spell it, or `None` if rules cannot name it.
fn escaped(name: &str) -> Option<String> {
    let mut chars = name.chars();
    let first = chars.next()?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-' | '/');
    if !(first.is_ascii_alphabetic() || matches!(first, '_' | '.' | '-' | '/'))
        || !chars.all(allowed)
    {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("__") {
            out.push_str("__underscores__");
            rest = after;
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

fn string(s: &str) -> Cel {
    Cel::String(Arc::new(s.to_owned()))
}

fn cel_map(entries: Vec<(String, Cel)>) -> Cel {
    let map: HashMap<Key, Cel> = entries
        .into_iter()
        .map(|(k, v)| (Key::String(Arc::new(k)), v))
        .collect();
    Cel::Map(CelMap { map: Arc::new(map) })
}

/// `value` as rules see it at a node of `schema` (`resource`: the root or an embedded
/// resource, whose `apiVersion`, `kind` and `metadata.name`/`generateName` show).
fn to_cel(schema: &Value, value: &Value, resource: bool) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let double = schema.get("type").and_then(Value::as_str) == Some("number");
            match n.as_i64() {
                Some(i) if !double => Cel::Int(i),
                _ => Cel::Float(n.as_f64().unwrap_or(f64::NAN)),
            }
        }
        Value::String(s) => string(s),
        Value::Array(items) => {
            let sub = schema.get("items").unwrap_or(&Value::Null);
            let embedded = flag(sub, "x-kubernetes-embedded-resource");
            Cel::List(Arc::new(
                items.iter().map(|i| to_cel(sub, i, embedded)).collect(),
            ))
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            let mut entries = Vec::new();
            if resource {
                for name in ["apiVersion", "kind"] {
                    if let Some(Value::String(s)) = fields.get(name) {
                        entries.push((name.to_owned(), string(s)));
                    }
                }
                let meta = fields.get("metadata").and_then(Value::as_object);
                let shown: Vec<(String, Cel)> = ["name", "generateName"]
                    .into_iter()
                    .filter_map(|f| match meta?.get(f) {
                        Some(Value::String(s)) => Some((f.to_owned(), string(s))),
                        _ => None,
                    })
                    .collect();
                if meta.is_some() {
                    entries.push(("metadata".to_owned(), cel_map(shown)));
                }
            }
            if let Some(properties) = properties {
                for (name, sub) in properties {
                    if resource && ROOT_FIELDS.contains(&name.as_str()) {
                        continue;
                    }
                    let Some(field) = fields.get(name).filter(|v| !v.is_null()) else {
                        continue;
                    };
                    let Some(key) = escaped(name) else { continue };
                    let embedded = flag(sub, "x-kubernetes-embedded-resource");
                    let converted = to_cel(sub, field, embedded);
                    if RESERVED.contains(&name.as_str()) {
                        // Recognised unescaped too since 1.31.
                        entries.push((name.clone(), converted.clone()));
                    }
                    entries.push((key, converted));
                }
            } else if let Some(sub) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                let embedded = flag(sub, "x-kubernetes-embedded-resource");
                for (key, field) in fields {
                    entries.push((key.clone(), to_cel(sub, field, embedded)));
                }
            } else if schema.get("type").is_none() && !resource {
                // No declared structure (an untyped node that keeps unknown fields): the
                // value as it is.
                for (key, field) in fields {
                    entries.push((key.clone(), to_cel(&Value::Null, field, false)));
                }
            }
            cel_map(entries)
        }
    }
}

/// How many JSON values `value` holds (what a rule over it can walk).
fn size(value: &Value) -> u64 {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<u64>(),
        Value::Object(fields) => 1 + fields.values().map(size).sum::<u64>(),
        _ => 1,
    }
}

fn schema_type(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("")
}

fn kubernetes_functions(ctx: &mut Context<'_, '_>) {
    // Adding fails only for a name the environment declares as an overload; none of
    // these four is one of CEL's or the two extensions' (pinned by
    // `kubernetes_list_functions_are_registered`).
    let _ = ctx.add_function("isSorted", |This(list): This<Arc<Vec<Cel>>>| {
        list.windows(2)
            .all(|w| w[0].partial_cmp(&w[1]).is_some_and(|o| o.is_le()))
    });
    let _ = ctx.add_function(
        "sum",
        |This(list): This<Arc<Vec<Cel>>>| -> Result<Cel, ExecutionError> {
            let mut ints: i64 = 0;
            let mut floats: Option<f64> = None;
            for item in list.iter() {
                match item {
                    Cel::Int(i) => {
                        ints = ints.checked_add(*i).ok_or_else(|| {
                            ExecutionError::function_error("sum", "integer overflow")
                        })?;
                    }
                    Cel::Float(f) => *floats.get_or_insert(0.0) += f,
                    other => {
                        return Err(ExecutionError::function_error(
                            "sum",
                            format!("no such overload for {:?}", other.type_of()),
                        ));
                    }
                }
            }
            Ok(match floats {
                Some(f) => Cel::Float(f + ints as f64),
                None => Cel::Int(ints),
            })
        },
    );
    for (name, want) in [
        ("min", std::cmp::Ordering::Less),
        ("max", std::cmp::Ordering::Greater),
    ] {
        let _ = ctx.add_function(
            name,
            move |This(list): This<Arc<Vec<Cel>>>| -> Result<Cel, ExecutionError> {
                let mut best: Option<&Cel> = None;
                for item in list.iter() {
                    best = match best {
                        None => Some(item),
                        Some(b) => match item.partial_cmp(b) {
                            Some(o) if o == want => Some(item),
                            Some(_) => Some(b),
                            None => {
                                return Err(ExecutionError::ValuesNotComparable(
                                    b.clone(),
                                    item.clone(),
                                ));
                            }
                        },
                    };
                }
                best.cloned().ok_or_else(|| {
                    ExecutionError::function_error(name, format!("{name} of an empty list"))
                })
            },
        );
    }
}

/// Runs the rules of `schema` over `value` (a whole object; `old`: the stored object, on an
/// update).
pub(crate) fn check(schema: &Value, value: &Value, old: Option<&Value>) -> Outcome {
    let mut walk = Walk {
        budget: BUDGET,
        outcome: Outcome::default(),
        stopped: false,
    };
    walk.node(schema, value, old, "", true);
    walk.outcome
}

struct Walk {
    budget: u64,
    outcome: Outcome,
    /// Set once the budget ran out: no further rule runs.
    stopped: bool,
}

impl Walk {
    fn node(&mut self, schema: &Value, value: &Value, old: Option<&Value>, path: &str, root: bool) {
        if self.stopped || value.is_null() {
            return;
        }
        let resource = root || flag(schema, "x-kubernetes-embedded-resource");
        if let Some(rules) = schema
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
        {
            for rule in rules {
                self.rule(schema, rule, value, old, path, resource);
                if self.stopped {
                    return;
                }
            }
        }
        match value {
            Value::Object(fields) => {
                let properties = schema.get("properties").and_then(Value::as_object);
                let additional = schema.get("additionalProperties").filter(|a| a.is_object());
                for (name, field) in fields {
                    if resource && ROOT_FIELDS.contains(&name.as_str()) {
                        continue;
                    }
                    let (sub, child) = match properties.and_then(|p| p.get(name)) {
                        Some(sub) => (sub, join(path, name)),
                        None => match additional {
                            Some(sub) => (sub, format!("{path}[{name}]")),
                            None => continue,
                        },
                    };
                    let old_field = old.and_then(|o| o.get(name));
                    self.node(sub, field, old_field, &child, false);
                }
            }
            Value::Array(items) => {
                let Some(sub) = schema.get("items").filter(|i| i.is_object()) else {
                    return;
                };
                let keys: Vec<&str> = if schema
                    .get("x-kubernetes-list-type")
                    .and_then(Value::as_str)
                    == Some("map")
                {
                    schema
                        .get("x-kubernetes-list-map-keys")
                        .and_then(Value::as_array)
                        .map(|k| k.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default()
                } else {
                    Vec::new()
                };
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = match old_items {
                        Some(olds) if !keys.is_empty() => olds
                            .iter()
                            .find(|o| keys.iter().all(|k| o.get(k) == item.get(k))),
                        _ => None,
                    };
                    self.node(sub, item, old_item, &format!("{path}[{i}]"), false);
                }
            }
            _ => {}
        }
    }

    fn rule(
        &mut self,
        schema: &Value,
        rule: &Value,
        value: &Value,
        old: Option<&Value>,
        path: &str,
        resource: bool,
    ) {
        let Some(text) = rule.get("rule").and_then(Value::as_str) else {
            return;
        };
        let ty = schema_type(schema);
        let shown_path = if path.is_empty() { "<nil>" } else { path };
        let message = rule
            .get("message")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|m| !m.is_empty());
        let rule_string = message.unwrap_or(text.trim());
        let compiled = match compile(text) {
            Ok(c) => c,
            Err(e) => {
                self.invalid(shown_path, ty, format!("rule compile error: {e}"));
                return;
            }
        };
        let optional_old = flag(rule, "optionalOldSelf");
        if compiled.uses_old_self && old.is_none() && !optional_old {
            return;
        }
        let seen = size(value) + old.map_or(0, size);
        let depth = nesting(compiled.program.expression(), false, schema);
        let cost = seen.saturating_pow(depth.max(1));
        if cost > self.budget {
            self.invalid(
                shown_path,
                ty,
                "validation failed due to running out of cost budget, no further validation \
                 rules will be run"
                    .to_owned(),
            );
            self.stopped = true;
            return;
        }
        self.budget -= cost;
        let mut ctx = Context::with_env(env().clone());
        kubernetes_functions(&mut ctx);
        ctx.add_variable_from_value("self", to_cel(schema, value, resource));
        if compiled.uses_old_self {
            let old_value = old.map(|o| to_cel(schema, o, resource));
            let bound = if optional_old {
                Cel::Opaque(Arc::new(match old_value {
                    Some(v) => OptionalValue::of(v),
                    None => OptionalValue::none(),
                }))
            } else {
                old_value.unwrap_or(Cel::Null)
            };
            ctx.add_variable_from_value("oldSelf", bound);
        }
        match compiled.program.execute(&ctx) {
            Ok(Cel::Bool(true)) => {}
            Ok(Cel::Bool(false)) => {
                let detail = rule
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .and_then(|expr| message_expression(expr, &ctx))
                    .or_else(|| message.map(str::to_owned))
                    .unwrap_or_else(|| format!("failed rule: {}", text.trim()));
                let field = match rule.get("fieldPath").and_then(Value::as_str) {
                    Some(f) if !f.trim().is_empty() => join(path, &normalized_field_path(f)),
                    _ => shown_path.to_owned(),
                };
                let scalar = !matches!(value, Value::Object(_) | Value::Array(_));
                let reason = rule
                    .get("reason")
                    .and_then(Value::as_str)
                    .unwrap_or("FieldValueInvalid");
                let violation: Violation = match reason {
                    "FieldValueForbidden" => (field, "FieldValueForbidden", detail),
                    "FieldValueRequired" => (field, "FieldValueRequired", detail),
                    "FieldValueDuplicate" => (
                        field,
                        "FieldValueDuplicate",
                        if scalar { shown(value) } else { String::new() },
                    ),
                    _ if scalar => (
                        field,
                        "FieldValueInvalid",
                        format!("{}: {detail}", shown(value)),
                    ),
                    _ => (field, "FieldValueInvalid", detail),
                };
                let ratchet = !compiled.uses_old_self && old.is_some_and(|o| o == value);
                if ratchet {
                    self.outcome.warnings.push(crate::status::field_error(
                        &violation.0,
                        violation.1,
                        &violation.2,
                    ));
                } else {
                    self.outcome.violations.push(violation);
                }
            }
            Ok(other) => self.invalid(
                shown_path,
                ty,
                format!(
                    "rule evaluated to {} where a bool was expected evaluating rule: {rule_string}",
                    other.type_of()
                ),
            ),
            Err(ExecutionError::UndeclaredReference(name))
                if compiled.functions.contains(&*name) =>
            {
                self.outcome.warnings.push(format!(
                    "{shown_path}: rule {text:?} was not checked: the fake API server does not \
                     implement the CEL function {name}()"
                ));
            }
            Err(ExecutionError::NoSuchOverload(e)) => self.invalid(
                shown_path,
                ty,
                format!(
                    "'no such overload: {e}': call arguments did not match a supported \
                     operator, function or macro signature for rule: {rule_string}"
                ),
            ),
            Err(e) => self.invalid(
                shown_path,
                ty,
                format!(
                    "{} evaluating rule: {rule_string}",
                    lowercase_first(&e.to_string())
                ),
            ),
        }
    }

    fn invalid(&mut self, path: &str, ty: &str, detail: String) {
        self.outcome.violations.push((
            path.to_owned(),
            "FieldValueInvalid",
            format!("{ty:?}: {detail}"),
        ));
    }
}

/// Why `expression` does not compile (`compilation failed: ...`, worded by cel-rust), if
/// it does not: an admission policy's expressions are refused so when it is written.
pub(crate) fn compile_error(expression: &str) -> Option<String> {
    compile(expression)
        .err()
        .map(|e| format!("compilation failed: {e}"))
}

/// Variables bound for an admission policy's expressions ([`crate::admission`]): JSON
/// values seen untyped (integers as int, other numbers as double, every field), and the
/// policy's own `variables`, each evaluated once in order.
#[derive(Default)]
pub(crate) struct Activation {
    bound: Vec<(String, Cel)>,
    variables: Vec<(String, Cel)>,
    /// The variables whose evaluation failed, with the error.
    failed: Vec<(String, String)>,
    /// What the bound JSON values hold (the cost estimate's base).
    size: u64,
}

impl Activation {
    /// Binds `name` to `value` (`null` when absent).
    pub(crate) fn bind(&mut self, name: &str, value: Option<&Value>) {
        let value = value.unwrap_or(&Value::Null);
        self.size = self.size.saturating_add(size(value));
        self.bound
            .push((name.to_owned(), to_cel(&Value::Null, value, false)));
    }

    /// Evaluates the policy's `variables` (`name`, `expression`) in order, each seeing the
    /// ones before it as `variables.<name>`.
    pub(crate) fn define_variables(&mut self, variables: &[(String, String)]) {
        for (name, expression) in variables {
            match self.evaluate(expression) {
                Ok(value) => self.variables.push((name.clone(), value)),
                Err(e) => self.failed.push((name.clone(), e)),
            }
        }
    }

    fn context(&self) -> Context<'_, '_> {
        let mut ctx = Context::with_env(env().clone());
        kubernetes_functions(&mut ctx);
        for (name, value) in &self.bound {
            ctx.add_variable_from_value(name.clone(), value.clone());
        }
        ctx.add_variable_from_value("variables", cel_map(self.variables.clone()));
        ctx
    }

    /// `expression`'s value, or upstream's error (`compilation error: ...`, `expression
    /// '...' resulted in error: ...`, the cost budget's); errors are worded by cel-rust.
    fn evaluate(&self, expression: &str) -> Result<Cel, String> {
        let compiled = compile(expression).map_err(|e| format!("compilation error: {e}"))?;
        if let Some((name, error)) = self
            .failed
            .iter()
            .find(|(name, _)| expression.contains(&format!("variables.{name}")))
        {
            return Err(format!(
                "expression '{expression}' resulted in error: composited variable {name:?} \
                 fails to evaluate: {error}"
            ));
        }
        let depth = nesting(compiled.program.expression(), false, &Value::Null);
        if self.size.max(1).saturating_pow(depth.max(1)) > BUDGET {
            return Err(
                "validation failed due to running out of cost budget, no further \
                        validation rules will be run"
                    .to_owned(),
            );
        }
        compiled
            .program
            .execute(&self.context())
            .map_err(|e| format!("expression '{expression}' resulted in error: {e}"))
    }

    /// Whether `expression` is true (anything else but an error is not).
    pub(crate) fn holds(&self, expression: &str) -> Result<bool, String> {
        Ok(matches!(self.evaluate(expression)?, Cel::Bool(true)))
    }

    /// Whether `expression` is false (a match condition excludes only then).
    pub(crate) fn is_false(&self, expression: &str) -> Result<bool, String> {
        Ok(matches!(self.evaluate(expression)?, Cel::Bool(false)))
    }

    /// A `messageExpression`'s string, if it gives one upstream would use.
    pub(crate) fn message(&self, expression: &str) -> Option<String> {
        match self.evaluate(expression).ok()? {
            Cel::String(s) => {
                let s = s.trim();
                (!s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE).then(|| s.to_owned())
            }
            _ => None,
        }
    }
}

fn lowercase_first(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A `messageExpression`'s string, if it gives one upstream would use.
fn message_expression(expr: &str, ctx: &Context<'_, '_>) -> Option<String> {
    let compiled = compile(expr).ok()?;
    match compiled.program.execute(ctx) {
        Ok(Cel::String(s)) => {
            let s = s.trim();
            (!s.is_empty() && !s.contains('\n') && s.len() <= MAX_MESSAGE).then(|| s.to_owned())
        }
        _ => None,
    }
}

/// A rule's `fieldPath` as upstream's field errors name it: no leading dot, map keys bare.
fn normalized_field_path(path: &str) -> String {
    path.trim()
        .trim_start_matches('.')
        .replace("['", "[")
        .replace("']", "]")
}

#[cfg(feature = "http")]
/// Why a CRD's rules are refused (upstream's admission of `x-kubernetes-validations`):
/// every violation, at its path under `spec.validation.openAPIV3Schema`.
pub(crate) fn crd_violations(schema: &Value) -> Vec<Violation> {
    let mut out = Vec::new();
    crd_node(schema, "spec.validation.openAPIV3Schema", None, &mut out);
    out
}

#[cfg(feature = "http")]
/// `uncorrelated`: the path of the nearest list above whose items do not correlate.
fn crd_node(schema: &Value, path: &str, uncorrelated: Option<&str>, out: &mut Vec<Violation>) {
    if let Some(rules) = schema
        .get("x-kubernetes-validations")
        .and_then(Value::as_array)
    {
        for (i, rule) in rules.iter().enumerate() {
            crd_rule(
                rule,
                &format!("{path}.x-kubernetes-validations[{i}]"),
                uncorrelated,
                out,
            );
        }
    }
    let correlates = schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
    for (segment, sub) in children(schema) {
        let child = format!("{path}.{segment}");
        let below = if segment == "items" && !correlates {
            Some(path)
        } else {
            uncorrelated
        };
        crd_node(sub, &child, below, out);
    }
}

#[cfg(feature = "http")]
/// The rule as upstream's field errors show an internal `ValidationRule` (Go's JSON of it).
fn go_rule(rule: &Value) -> String {
    let quoted = |k: &str| {
        Value::String(rule.get(k).and_then(Value::as_str).unwrap_or("").to_owned()).to_string()
    };
    let raw = |k: &str| {
        rule.get(k)
            .map_or_else(|| "null".to_owned(), Value::to_string)
    };
    // Go's encoder keeps the struct's field order and escapes these three for HTML.
    format!(
        "{{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\
         \"FieldPath\":{},\"OptionalOldSelf\":{}}}",
        quoted("rule"),
        quoted("message"),
        quoted("messageExpression"),
        raw("reason"),
        quoted("fieldPath"),
        raw("optionalOldSelf"),
    )
    .replace('<', "\\u003c")
    .replace('>', "\\u003e")
    .replace('&', "\\u0026")
}

#[cfg(feature = "http")]
fn crd_rule(rule: &Value, path: &str, uncorrelated: Option<&str>, out: &mut Vec<Violation>) {
    let text = rule.get("rule").and_then(Value::as_str).unwrap_or("");
    if text.trim().is_empty() {
        out.push((
            format!("{path}.rule"),
            "FieldValueRequired",
            "rule is not specified".to_owned(),
        ));
        return;
    }
    if let Some(reason) = rule.get("reason").and_then(Value::as_str)
        && !REASONS.contains(&reason)
    {
        let listed: Vec<String> = REASONS.iter().map(|r| format!("{r:?}")).collect();
        out.push((
            format!("{path}.reason"),
            "FieldValueNotSupported",
            format!("{reason:?}: supported values: {}", listed.join(", ")),
        ));
    }
    match compile(text) {
        Err(e) => out.push((
            format!("{path}.rule"),
            "FieldValueInvalid",
            format!("{}: compilation failed: {e}", go_rule(rule)),
        )),
        Ok(compiled) => {
            if compiled.uses_old_self
                && let Some(list) = uncorrelated
            {
                out.push((
                    format!("{path}.rule"),
                    "FieldValueInvalid",
                    format!(
                        "{text:?}: oldSelf cannot be used on the uncorrelatable portion of the \
                         schema within {list}"
                    ),
                ));
            }
            if !compiled.uses_old_self && flag(rule, "optionalOldSelf") {
                out.push((
                    format!("{path}.optionalOldSelf"),
                    "FieldValueInvalid",
                    "true: may not be set if oldSelf is not used in rule".to_owned(),
                ));
            }
        }
    }
    if let Some(expr) = rule.get("messageExpression").and_then(Value::as_str) {
        if expr.trim().is_empty() {
            out.push((
                format!("{path}.messageExpression"),
                "FieldValueRequired",
                "messageExpression must be non-empty if specified".to_owned(),
            ));
        } else if let Err(e) = compile(expr) {
            out.push((
                format!("{path}.messageExpression"),
                "FieldValueInvalid",
                format!(
                    "{}: messageExpression compilation failed: {e}",
                    go_rule(rule)
                ),
            ));
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
                    "x-kubernetes-validations": [
                        {"rule": "self.minReplicas <= self.maxReplicas",
                         "message": "minReplicas must not exceed maxReplicas"},
                        {"rule": "self.name.startsWith('web-')", "fieldPath": ".name",
                         "reason": "FieldValueForbidden"},
                        {"rule": "!has(self.mode) || self.mode == oldSelf.mode",
                         "messageExpression": "'mode is immutable, was ' + oldSelf.mode"},
                    ],
                    "properties": {
                        "minReplicas": {"type": "integer"},
                        "maxReplicas": {"type": "integer"},
                        "name": {"type": "string"},
                        "mode": {"type": "string"},
                        "dashed-name": {"type": "string",
                            "x-kubernetes-validations": [{"rule": "self.size() < 5"}]},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {
                                "type": "object",
                                "properties": {"name": {"type": "string"},
                                               "port": {"type": "integer"}},
                                "x-kubernetes-validations": [
                                    {"rule": "self.port >= oldSelf.port",
                                     "message": "ports may only grow"}
                                ]
                            },
                            "x-kubernetes-validations": [
                                {"rule": "self.map(p, p.port).isSorted()"},
                                {"rule": "self.map(p, p.port).sum() < 70000"}
                            ]
                        }
                    }
                }
            },
            "x-kubernetes-validations": [
                {"rule": "self.metadata.name.size() <= 10 && self.kind == 'Widget'"}
            ]
        })
    }

    fn object(spec: Value) -> Value {
        json!({"apiVersion": "example.com/v1", "kind": "Widget",
               "metadata": {"name": "w", "namespace": "default"}, "spec": spec})
    }

    fn errors(outcome: &Outcome) -> Vec<String> {
        outcome
            .violations
            .iter()
            .map(|(f, t, m)| crate::status::field_error(f, t, m))
            .collect()
    }

    #[test]
    fn false_rules_give_upstream_s_field_errors() {
        let good = object(json!({"minReplicas": 1, "maxReplicas": 3, "name": "web-1",
                                 "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 443}]}));
        let outcome = check(&schema(), &good, None);
        assert_eq!(errors(&outcome), Vec::<String>::new());
        assert!(outcome.warnings.is_empty());

        let bad = object(json!({"minReplicas": 5, "maxReplicas": 3, "name": "db",
                                "dashed-name": "too-long",
                                "ports": [{"name": "a", "port": 443}, {"name": "b", "port": 80}]}));
        assert_eq!(
            errors(&check(&schema(), &bad, None)),
            [
                "spec: Invalid value: minReplicas must not exceed maxReplicas",
                "spec.name: Forbidden: failed rule: self.name.startsWith('web-')",
                "spec.dashed-name: Invalid value: \"too-long\": failed rule: self.size() < 5",
                "spec.ports: Invalid value: failed rule: self.map(p, p.port).isSorted()",
            ]
        );
        let root = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                          "metadata": {"name": "a-very-long-name"}});
        assert_eq!(
            errors(&check(&schema(), &root, None)),
            [
                "<nil>: Invalid value: failed rule: self.metadata.name.size() <= 10 && self.kind == 'Widget'"
            ]
        );
    }

    #[test]
    fn transition_rules_run_on_updates_against_the_correlated_old_value() {
        let old = object(json!({"minReplicas": 1, "maxReplicas": 3, "name": "web-1",
                                "mode": "fast", "ports": [{"name": "a", "port": 80}]}));
        let new = object(json!({"minReplicas": 1, "maxReplicas": 3, "name": "web-1",
                                "mode": "slow",
                                "ports": [{"name": "b", "port": 10}, {"name": "a", "port": 79}]}));
        // On create the transition rules do not run.
        assert_eq!(errors(&check(&schema(), &new, None)), Vec::<String>::new());
        assert_eq!(
            errors(&check(&schema(), &new, Some(&old))),
            [
                "spec: Invalid value: mode is immutable, was fast",
                "spec.ports[1]: Invalid value: ports may only grow",
            ]
        );
    }

    #[test]
    fn optional_old_self_runs_on_create_too() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"mode": {"type": "string"}},
        "x-kubernetes-validations": [{
            "rule": "oldSelf.hasValue() ? self.mode == oldSelf.value().mode : self.mode == 'new'",
            "optionalOldSelf": true,
            "message": "a new object starts in mode new, and keeps its mode"
        }]}}});
        let create = |mode: &str| errors(&check(&schema, &object(json!({"mode": mode})), None));
        assert_eq!(create("new"), Vec::<String>::new());
        assert_eq!(
            create("old"),
            ["spec: Invalid value: a new object starts in mode new, and keeps its mode"]
        );
        let stored = object(json!({"mode": "new"}));
        let update = |mode: &str| {
            errors(&check(
                &schema,
                &object(json!({"mode": mode})),
                Some(&stored),
            ))
        };
        assert_eq!(update("new"), Vec::<String>::new());
        assert_eq!(update("other").len(), 1);
    }

    #[test]
    fn unchanged_values_ratchet_to_warnings() {
        let stored = object(json!({"minReplicas": 5, "maxReplicas": 3, "name": "web-1"}));
        let outcome = check(&schema(), &stored, Some(&stored));
        assert!(outcome.violations.is_empty());
        assert_eq!(
            outcome.warnings,
            ["spec: Invalid value: minReplicas must not exceed maxReplicas"]
        );
    }

    #[test]
    fn evaluation_errors_unsupported_functions_and_the_budget() {
        let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "integer"}}},
        "x-kubernetes-validations": [
            {"rule": "self.missing == 1"},
            {"rule": "quantity('1Gi').isGreaterThan(quantity('1Mi'))"},
            {"rule": "self.items.all(a, self.items.all(b, a != b || true))"}
        ]}}});
        let small = object(json!({"items": [1, 2, 3]}));
        let outcome = check(&schema, &small, None);
        assert_eq!(
            errors(&outcome),
            [
                "spec: Invalid value: \"object\": no such key: missing evaluating rule: self.missing == 1"
            ]
        );
        assert_eq!(
            outcome.warnings,
            [
                "spec: rule \"quantity('1Gi').isGreaterThan(quantity('1Mi'))\" was not checked: \
              the fake API server does not implement the CEL function quantity()"
            ]
        );
        // A comparison with a scalar field or a size in a loop is one walk; a list built
        // per item is two.
        let walks = |rule: &str| {
            let compiled = compile(rule).unwrap();
            nesting(
                compiled.program.expression(),
                false,
                &schema["properties"]["spec"],
            )
        };
        assert_eq!(walks("self.items.all(i, i > 0)"), 1);
        assert_eq!(walks("self.items.all(i, i < self.items.size())"), 1);
        assert_eq!(walks("self.items.map(i, self.items)"), 2);
        assert_eq!(walks("self.items.all(a, self.items.exists(b, a == b))"), 2);
        assert_eq!(
            walks("self.items.all(a, self.items.all(b, self.items.all(c, true)))"),
            3
        );
        // Two nested walks over 10,000 items would take 10^8 steps.
        let large = object(json!({"items": (0..10_000).collect::<Vec<i32>>()}));
        assert_eq!(
            errors(&check(&schema, &large, None))[1],
            "spec: Invalid value: \"object\": validation failed due to running out of cost \
             budget, no further validation rules will be run"
        );
    }

    #[test]
    fn kubernetes_list_functions_are_registered() {
        let mut ctx = Context::with_env(env().clone());
        kubernetes_functions(&mut ctx);
        let run = |text: &str| compile(text).unwrap().program.execute(&ctx);
        for text in [
            "[3, 1, 2].max() == 3 && [3, 1, 2].min() == 1",
            "[1, 2, 2].isSorted() && ![2, 1].isSorted() && ['a', 'b'].isSorted()",
            "[1, 2, 3].sum() == 6 && [0.5, 1.5].sum() == 2.0 && [].sum() == 0",
            "'abc'.indexOf('c') == 2 && ['a', 'b'].join('-') == 'a-b' && [1, [2]].flatten() == [1, 2]",
            "[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && ['a'].indexOf('b') == -1",
        ] {
            assert_eq!(run(text), Ok(Cel::Bool(true)), "{text}");
        }
        assert!(run("[].max() == 1").is_err());
    }

    #[test]
    fn property_names_are_escaped_as_upstream_escapes_them() {
        assert_eq!(escaped("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escaped("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escaped("__x").as_deref(), Some("__underscores__x"));
        assert_eq!(escaped("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escaped("1st"), None);
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"x-y": {"type": "integer"}, "namespace": {"type": "string"}},
            "x-kubernetes-validations": [
                {"rule": "self.x__dash__y == 1 && self.__namespace__ == 'n'"}]}}});
        let value = object(json!({"x-y": 1, "namespace": "n"}));
        assert_eq!(errors(&check(&schema, &value, None)), Vec::<String>::new());
        let value = object(json!({"x-y": 2, "namespace": "n"}));
        assert_eq!(errors(&check(&schema, &value, None)).len(), 1);
    }

    #[cfg(feature = "http")]
    #[test]
    fn crds_with_bad_rules_are_refused() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}},
        "x-kubernetes-validations": [
            {"rule": "self.a >"},
            {"rule": "true", "reason": "Bogus", "optionalOldSelf": true},
            {"rule": ""},
            {"rule": "true", "messageExpression": "'a' +"}
        ]}}});
        let found: Vec<String> = crd_violations(&schema)
            .iter()
            .map(|(f, t, m)| crate::status::field_error(f, t, m))
            .collect();
        let base = "spec.validation.openAPIV3Schema.properties[spec]";
        assert_eq!(found.len(), 6, "{found:#?}");
        assert!(found[0].starts_with(&format!(
            "{base}.x-kubernetes-validations[0].rule: Invalid value: {{\"Rule\":\"self.a \\u003e\""
        )));
        assert!(found[0].contains("compilation failed: ERROR: <input>:1:9: Syntax error"));
        assert_eq!(
            found[1],
            format!(
                "{base}.x-kubernetes-validations[1].reason: Unsupported value: \"Bogus\": \
                 supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \
                 \"FieldValueInvalid\", \"FieldValueRequired\""
            )
        );
        assert_eq!(
            found[2],
            format!(
                "{base}.x-kubernetes-validations[1].optionalOldSelf: Invalid value: true: may \
                 not be set if oldSelf is not used in rule"
            )
        );
        assert_eq!(
            found[3],
            format!(
                "{base}.x-kubernetes-validations[2].rule: Required value: rule is not specified"
            )
        );
        assert!(found[4].contains("messageExpression compilation failed"));
        assert_eq!(
            found[5],
            format!(
                "{base}.properties[tags].items.x-kubernetes-validations[0].rule: Invalid value: \
                 \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of \
                 the schema within {base}.properties[tags]"
            )
        );
    }
}

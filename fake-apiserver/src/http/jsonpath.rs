//! The part of client-go's JSONPath (`k8s.io/client-go/util/jsonpath`) a CRD's
//! `additionalPrinterColumns` use: `.field`, `['field']`, `[index]` (negative from the end),
//! `[start:end]`, `[*]` and `.*`, and filters `[?(@.path)]` and
//! `[?(@.path <op> literal)]` (`==`, `!=`, `<`, `<=`, `>`, `>=`; string, number, boolean or
//! `nil` literals). Missing keys give no result, as with `AllowMissingKeys(true)`.

use serde_json::Value;

/// A parsed path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonPath {
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    All,
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    Filter {
        path: Vec<Step>,
        test: Option<(String, Value)>,
    },
}

/// How deep a path may nest filters (a hostile column definition must not recurse deeply).
const MAX_DEPTH: usize = 8;

impl JsonPath {
    /// Parses a path as a column's `jsonPath` spells it (`.status.conditions[0].type`),
    /// with or without the braces client-go wraps it in.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let inner = text
            .strip_prefix('{')
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or(text);
        let steps = parse_steps(inner.trim(), 0)?;
        Ok(Self { steps })
    }

    /// The values the path selects in `root`, in order.
    pub(crate) fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        walk(&self.steps, vec![root])
    }
}

fn parse_steps(mut text: &str, depth: usize) -> Result<Vec<Step>, String> {
    if depth > MAX_DEPTH {
        return Err("filters nest too deeply".into());
    }
    let mut steps = Vec::new();
    if text == "." {
        return Ok(steps);
    }
    while !text.is_empty() {
        if let Some(rest) = text.strip_prefix('.') {
            if let Some(after) = rest.strip_prefix('*') {
                steps.push(Step::All);
                text = after;
                continue;
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let name = &rest[..end];
            if name.is_empty() {
                return Err(format!("unrecognized identifier in {text:?}"));
            }
            steps.push(Step::Field(name.to_owned()));
            text = &rest[end..];
        } else if let Some(rest) = text.strip_prefix('[') {
            let (inside, after) = bracket(rest)?;
            steps.push(parse_bracket(inside.trim(), depth)?);
            text = after;
        } else {
            return Err(format!("unexpected {text:?}"));
        }
    }
    Ok(steps)
}

/// The text inside a `[...]` (quotes and nested brackets respected) and what follows it.
fn bracket(text: &str) -> Result<(&str, &str), String> {
    let mut depth = 1usize;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&text[..i], &text[i + 1..]));
                }
            }
            _ => {}
        }
    }
    Err("unterminated [".into())
}

fn parse_bracket(inside: &str, depth: usize) -> Result<Step, String> {
    if inside == "*" {
        return Ok(Step::All);
    }
    if let Some(quoted) = unquote(inside) {
        return Ok(Step::Field(quoted.to_owned()));
    }
    if let Some(filter) = inside.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return parse_filter(filter.trim(), depth);
    }
    if let Some((start, end)) = inside.split_once(':') {
        let bound = |s: &str| -> Result<Option<i64>, String> {
            let s = s.trim();
            if s.is_empty() {
                Ok(None)
            } else {
                s.parse()
                    .map(Some)
                    .map_err(|_| format!("bad slice bound {s:?}"))
            }
        };
        return Ok(Step::Slice(bound(start)?, bound(end)?));
    }
    inside
        .parse()
        .map(Step::Index)
        .map_err(|_| format!("unrecognized [{inside}]"))
}

fn unquote(text: &str) -> Option<&str> {
    ['\'', '"'].into_iter().find_map(|q| {
        text.strip_prefix(q)
            .and_then(|t| t.strip_suffix(q))
            .filter(|t| !t.contains(q))
    })
}

fn parse_filter(filter: &str, depth: usize) -> Result<Step, String> {
    const OPS: [&str; 6] = ["==", "!=", "<=", ">=", "<", ">"];
    let split = OPS
        .iter()
        .filter_map(|op| filter.find(op).map(|at| (at, *op)))
        .min_by_key(|(at, op)| (*at, usize::MAX - op.len()));
    let (left, test) = match split {
        Some((at, op)) => {
            let right = filter[at + op.len()..].trim();
            let literal = match unquote(right) {
                Some(s) => Value::String(s.to_owned()),
                None if right == "nil" => Value::Null,
                None => serde_json::from_str(right)
                    .map_err(|_| format!("unrecognized filter literal {right:?}"))?,
            };
            (filter[..at].trim(), Some((op.to_owned(), literal)))
        }
        None => (filter, None),
    };
    let path = left
        .strip_prefix('@')
        .ok_or_else(|| format!("a filter starts with @: {filter:?}"))?;
    Ok(Step::Filter {
        path: parse_steps(if path.is_empty() { "." } else { path }, depth + 1)?,
        test,
    })
}

fn walk<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => next.extend(value.get(name.as_str())),
                Step::All => match value {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(fields) => next.extend(fields.values()),
                    _ => {}
                },
                Step::Index(i) => {
                    if let Some(items) = value.as_array() {
                        let len = items.len() as i64;
                        let at = if *i < 0 { len + i } else { *i };
                        if (0..len).contains(&at) {
                            next.extend(items.get(at as usize));
                        }
                    }
                }
                Step::Slice(start, end) => {
                    if let Some(items) = value.as_array() {
                        let len = items.len() as i64;
                        let clamp = |b: i64| (if b < 0 { len + b } else { b }).clamp(0, len);
                        let from = clamp(start.unwrap_or(0));
                        let to = clamp(end.unwrap_or(len));
                        if from < to {
                            next.extend(&items[from as usize..to as usize]);
                        }
                    }
                }
                Step::Filter { path, test } => {
                    let candidates: Vec<&Value> = match value {
                        Value::Array(items) => items.iter().collect(),
                        other => vec![other],
                    };
                    for candidate in candidates {
                        let found = walk(path, vec![candidate]);
                        let keep = match test {
                            None => !found.is_empty(),
                            Some((op, literal)) => found.iter().any(|v| compare(v, op, literal)),
                        };
                        if keep {
                            next.push(candidate);
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

fn compare(value: &Value, op: &str, literal: &Value) -> bool {
    let ordering = match (value, literal) {
        (Value::Number(a), Value::Number(b)) => a
            .as_f64()
            .zip(b.as_f64())
            .and_then(|(a, b)| a.partial_cmp(&b)),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (a, b) => (a == b).then_some(std::cmp::Ordering::Equal),
    };
    match op {
        "==" => ordering == Some(std::cmp::Ordering::Equal),
        "!=" => ordering != Some(std::cmp::Ordering::Equal),
        "<" => ordering.is_some_and(|o| o.is_lt()),
        "<=" => ordering.is_some_and(|o| o.is_le()),
        ">" => ordering.is_some_and(|o| o.is_gt()),
        ">=" => ordering.is_some_and(|o| o.is_ge()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn found(path: &str, value: &Value) -> Vec<Value> {
        JsonPath::parse(path)
            .unwrap()
            .find(value)
            .into_iter()
            .cloned()
            .collect()
    }

    #[test]
    fn paths_select_as_client_go_s_jsonpath() {
        let v = json!({
            "spec": {"replicas": 3, "labels": {"app.kubernetes.io/name": "web"}},
            "status": {"conditions": [
                {"type": "Ready", "status": "True", "age": 5},
                {"type": "Synced", "status": "False", "age": 9}
            ]}
        });
        assert_eq!(found(".spec.replicas", &v), [json!(3)]);
        assert_eq!(found("{.spec.replicas}", &v), [json!(3)]);
        assert_eq!(found(".spec.missing", &v), Vec::<Value>::new());
        assert_eq!(
            found(".spec.labels['app.kubernetes.io/name']", &v),
            [json!("web")]
        );
        assert_eq!(
            found(".status.conditions[?(@.type==\"Ready\")].status", &v),
            [json!("True")]
        );
        assert_eq!(
            found(".status.conditions[?(@.age > 6)].type", &v),
            [json!("Synced")]
        );
        assert_eq!(found(".status.conditions[-1].type", &v), [json!("Synced")]);
        assert_eq!(
            found(".status.conditions[*].type", &v),
            [json!("Ready"), json!("Synced")]
        );
        assert_eq!(found(".status.conditions[0:1].type", &v), [json!("Ready")]);
        assert_eq!(found(".status.conditions[?(@.age)].age", &v).len(), 2);
        for bad in ["spec", ".a[", ".a[x]", ".a[?(b)]", ".."] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }
}

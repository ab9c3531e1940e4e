//! Label and field selectors: parsing the API server's syntax and matching objects.
//!
//! Label selectors support the full syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`,
//! `a notin (x,y)`, `a` (exists), `!a` (does not exist), and `a>1` / `a<1` (integer comparison).
//! Field selectors support `=`, `==` and `!=` with backslash escapes in values; which fields exist
//! is up to the caller (the generic ones are `metadata.name` and `metadata.namespace`).

use std::collections::BTreeMap;
use std::fmt;

use crate::Object;

/// A parsed label selector: all requirements must hold. The empty selector matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<LabelRequirement>,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelRequirement {
    /// The label key.
    pub key: String,
    /// The operator and its values.
    pub op: LabelOp,
}

/// A label selector operator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LabelOp {
    /// `key=value` or `key==value`.
    Equals(String),
    /// `key!=value` (also true when the label is absent).
    NotEquals(String),
    /// `key in (v1,v2)`.
    In(Vec<String>),
    /// `key notin (v1,v2)` (also true when the label is absent).
    NotIn(Vec<String>),
    /// `key`.
    Exists,
    /// `!key`.
    DoesNotExist,
    /// `key>N`: the label parses as an integer greater than N.
    GreaterThan(i64),
    /// `key<N`: the label parses as an integer less than N.
    LessThan(i64),
}

/// A selector that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} selector {selector:?}: {reason}")]
pub struct SelectorError {
    /// `label` or `field`.
    pub kind: &'static str,
    /// The selector as given.
    pub selector: String,
    /// What is wrong with it.
    pub reason: String,
}

impl LabelSelector {
    /// The selector that matches everything.
    pub fn everything() -> Self {
        Self::default()
    }

    /// Parses the API server's label selector syntax.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let err = |reason: String| SelectorError {
            kind: "label",
            selector: selector.to_owned(),
            reason,
        };
        let mut requirements = Vec::new();
        for part in split_top_level(selector) {
            let part = part.trim();
            if part.is_empty() {
                if selector.trim().is_empty() {
                    continue;
                }
                return Err(err("empty requirement".into()));
            }
            requirements.push(parse_label_requirement(part).map_err(err)?);
        }
        Ok(Self { requirements })
    }

    /// Builds a selector from `key=value` pairs (a map's `matchLabels`).
    pub fn from_equalities<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            requirements: pairs
                .into_iter()
                .map(|(k, v)| LabelRequirement {
                    key: k.to_owned(),
                    op: LabelOp::Equals(v.to_owned()),
                })
                .collect(),
        }
    }

    /// The requirements.
    pub fn requirements(&self) -> &[LabelRequirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether the object's labels satisfy every requirement.
    pub fn matches_object<K: Object + ?Sized>(&self, obj: &K) -> bool {
        self.matches(obj.object_labels())
    }
}

impl LabelRequirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key).map(String::as_str);
        match &self.op {
            LabelOp::Equals(v) => value == Some(v.as_str()),
            LabelOp::NotEquals(v) => value != Some(v.as_str()),
            LabelOp::In(vs) => value.is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelOp::NotIn(vs) => value.is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::GreaterThan(n) => value
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x > *n),
            LabelOp::LessThan(n) => value
                .and_then(|x| x.parse::<i64>().ok())
                .is_some_and(|x| x < *n),
        }
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let k = &r.key;
            match &r.op {
                LabelOp::Equals(v) => write!(f, "{k}={v}")?,
                LabelOp::NotEquals(v) => write!(f, "{k}!={v}")?,
                LabelOp::In(vs) => write!(f, "{k} in ({})", vs.join(","))?,
                LabelOp::NotIn(vs) => write!(f, "{k} notin ({})", vs.join(","))?,
                LabelOp::Exists => write!(f, "{k}")?,
                LabelOp::DoesNotExist => write!(f, "!{k}")?,
                LabelOp::GreaterThan(n) => write!(f, "{k}>{n}")?,
                LabelOp::LessThan(n) => write!(f, "{k}<{n}")?,
            }
        }
        Ok(())
    }
}

/// Splits on commas that are not inside parentheses.
fn split_top_level(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

fn parse_label_requirement(part: &str) -> Result<LabelRequirement, String> {
    if let Some(rest) = part.strip_prefix('!') {
        let key = rest.trim();
        validate_key(key)?;
        return Ok(LabelRequirement {
            key: key.to_owned(),
            op: LabelOp::DoesNotExist,
        });
    }
    // Operators made of symbols.
    for (sym, make) in [
        ("==", LabelOp::Equals as fn(String) -> LabelOp),
        ("!=", LabelOp::NotEquals),
        ("=", LabelOp::Equals),
    ] {
        if let Some((k, v)) = part.split_once(sym) {
            let (key, value) = (k.trim(), v.trim());
            validate_key(key)?;
            validate_value(value)?;
            return Ok(LabelRequirement {
                key: key.to_owned(),
                op: make(value.to_owned()),
            });
        }
    }
    for (sym, greater) in [('>', true), ('<', false)] {
        if let Some((k, v)) = part.split_once(sym) {
            let key = k.trim();
            validate_key(key)?;
            let n = v
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("{:?} needs an integer after {sym:?}", key))?;
            let op = if greater {
                LabelOp::GreaterThan(n)
            } else {
                LabelOp::LessThan(n)
            };
            return Ok(LabelRequirement {
                key: key.to_owned(),
                op,
            });
        }
    }
    // Word operators: `key in (..)`, `key notin (..)`, or a bare key.
    let mut words = part.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default().trim();
    let rest = words.next().unwrap_or_default().trim();
    if rest.is_empty() {
        if key.contains('(') || key.contains(')') {
            return Err(format!("unexpected parenthesis in {part:?}"));
        }
        validate_key(key)?;
        return Ok(LabelRequirement {
            key: key.to_owned(),
            op: LabelOp::Exists,
        });
    }
    validate_key(key)?;
    let (word, set) = rest
        .split_once('(')
        .ok_or_else(|| format!("expected '(' after the operator in {part:?}"))?;
    let set = set
        .trim_end()
        .strip_suffix(')')
        .ok_or_else(|| format!("missing ')' in {part:?}"))?;
    let values = set
        .split(',')
        .map(|v| {
            let v = v.trim();
            validate_value(v).map(|()| v.to_owned())
        })
        .collect::<Result<Vec<_>, _>>()?;
    if values.iter().all(String::is_empty) && values.len() == 1 {
        return Err(format!(
            "for 'in' and 'notin' the set of values can't be empty in {part:?}"
        ));
    }
    let op = match word.trim() {
        "in" => LabelOp::In(values),
        "notin" => LabelOp::NotIn(values),
        other => return Err(format!("unknown operator {other:?}")),
    };
    Ok(LabelRequirement {
        key: key.to_owned(),
        op,
    })
}

/// A label key: an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters.
fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        let ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            });
        if !ok {
            return Err(format!("invalid label key prefix {p:?}"));
        }
    }
    if name.is_empty() || !is_label_token(name) {
        return Err(format!("invalid label key {key:?}"));
    }
    Ok(())
}

/// A label value: empty, or at most 63 alphanumerics, `-`, `_`, `.`, starting and ending
/// alphanumeric.
fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_token(value) {
        Ok(())
    } else {
        Err(format!("invalid label value {value:?}"))
    }
}

fn is_label_token(s: &str) -> bool {
    let bytes = s.as_bytes();
    s.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A parsed field selector: all requirements must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// One requirement of a field selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path, for example `metadata.name`.
    pub field: String,
    /// `true` for `!=`.
    pub negated: bool,
    /// The value (escapes resolved).
    pub value: String,
}

/// The fields every resource supports in a field selector.
pub const GENERIC_FIELDS: &[&str] = &["metadata.name", "metadata.namespace"];

impl FieldSelector {
    /// Parses `field=value`, `field==value` and `field!=value` terms separated by commas; a
    /// backslash escapes `,`, `=`, `!` and `\` in values.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let err = |reason: String| SelectorError {
            kind: "field",
            selector: selector.to_owned(),
            reason,
        };
        let mut requirements = Vec::new();
        if selector.trim().is_empty() {
            return Ok(Self { requirements });
        }
        for term in split_unescaped(selector, ',') {
            let term = term.trim();
            let (field, negated, raw_value) = if let Some(i) = find_unescaped(term, "!=") {
                (&term[..i], true, &term[i + 2..])
            } else if let Some(i) = find_unescaped(term, "==") {
                (&term[..i], false, &term[i + 2..])
            } else if let Some(i) = find_unescaped(term, "=") {
                (&term[..i], false, &term[i + 1..])
            } else {
                return Err(err(format!("{term:?} is not of the form field=value")));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(err(format!("{term:?} has no field name")));
            }
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                negated,
                value: unescape(raw_value.trim()).map_err(err)?,
            });
        }
        Ok(Self { requirements })
    }

    /// The requirements.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// Whether the selector matches everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Checks that every field is one of `supported`; the error names the first that is not, in
    /// the API server's words (`field label not supported: X`).
    pub fn check_fields(&self, supported: &[&str]) -> Result<(), String> {
        match self
            .requirements
            .iter()
            .find(|r| !supported.contains(&r.field.as_str()))
        {
            Some(r) => Err(format!("field label not supported: {}", r.field)),
            None => Ok(()),
        }
    }

    /// Whether every requirement holds, reading field values through `field_value` (a missing
    /// field reads as the empty string, as on the API server).
    pub fn matches_with<'a>(&self, field_value: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| {
            let actual = field_value(&r.field).unwrap_or("");
            (actual == r.value) != r.negated
        })
    }

    /// Whether every requirement holds for the generic fields of `obj`; any other field reads as
    /// empty (use [`FieldSelector::check_fields`] first to reject them).
    pub fn matches_object<K: Object + ?Sized>(&self, obj: &K) -> bool {
        self.matches_with(|field| match field {
            "metadata.name" => obj.object_name(),
            "metadata.namespace" => obj.object_namespace(),
            _ => None,
        })
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if s[i..].starts_with(pat) {
            return Some(i);
        }
    }
    None
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=' | '!')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence \\{e}")),
                None => return Err("trailing backslash".into()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let s = LabelSelector::parse(
            "app=web, tier==front,env!=prod,zone in (a, b),team notin (x),canary,!legacy,gen>2,rank<10",
        )
        .unwrap();
        assert_eq!(s.requirements().len(), 9);
        let l = labels(&[
            ("app", "web"),
            ("tier", "front"),
            ("zone", "b"),
            ("canary", ""),
            ("gen", "3"),
            ("rank", "9"),
        ]);
        assert!(s.matches(&l));
        let mut bad = l.clone();
        bad.insert("legacy".into(), "1".into());
        assert!(!s.matches(&bad));
        let mut bad = l.clone();
        bad.insert("zone".into(), "c".into());
        assert!(!s.matches(&bad));
        let mut bad = l;
        bad.insert("gen".into(), "two".into());
        assert!(!s.matches(&bad));
    }

    #[test]
    fn negative_operators_match_absent_labels() {
        assert!(LabelSelector::parse("a!=b").unwrap().matches(&labels(&[])));
        assert!(
            LabelSelector::parse("a notin (b)")
                .unwrap()
                .matches(&labels(&[]))
        );
        assert!(
            !LabelSelector::parse("a in (b)")
                .unwrap()
                .matches(&labels(&[]))
        );
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse("").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&labels(&[("x", "y")])));
    }

    #[test]
    fn prefixed_keys_and_empty_values() {
        let s = LabelSelector::parse("app.kubernetes.io/name=web,empty=").unwrap();
        assert!(s.matches(&labels(&[("app.kubernetes.io/name", "web"), ("empty", "")])));
    }

    #[test]
    fn rejects_malformed_selectors() {
        for bad in [
            "a in b",
            "a in (",
            "a in ()",
            "a=b,",
            "-a=b",
            "a=b c",
            "a>x",
            "a foo (b)",
            "Bad_Prefix/x=y",
            "a=b)",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn display_round_trips() {
        let text = "a=b,c!=d,e in (f,g),h notin (i),j,!k,l>1,m<2";
        let s = LabelSelector::parse(text).unwrap();
        assert_eq!(LabelSelector::parse(&s.to_string()).unwrap(), s);
    }

    #[test]
    fn field_selectors() {
        let s =
            FieldSelector::parse("metadata.name=a\\,b,metadata.namespace!=kube-system").unwrap();
        assert_eq!(s.requirements()[0].value, "a,b");
        assert!(s.check_fields(GENERIC_FIELDS).is_ok());
        assert!(s.matches_with(|f| match f {
            "metadata.name" => Some("a,b"),
            "metadata.namespace" => Some("default"),
            _ => None,
        }));
        let unsupported = FieldSelector::parse("spec.nodeName==n1").unwrap();
        assert_eq!(
            unsupported.check_fields(GENERIC_FIELDS).unwrap_err(),
            "field label not supported: spec.nodeName"
        );
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(FieldSelector::parse("").unwrap().is_empty());
    }
}

//! Property tests of the label and field selector parsers (untrusted input: selectors come
//! from users, from configuration and, on the fake server, from any client): no input makes
//! them panic; every valid selector survives printing and parsing again; and matching agrees
//! with a model written here from the API server's rules.

use std::collections::BTreeMap;

use informer_core::selector::{FieldSelector, LabelOp, LabelSelector};
use proptest::prelude::*;

/// A label name part: alphanumeric ends, `-_.` inside, at most 63 characters.
fn token() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9]", "[a-zA-Z0-9][a-zA-Z0-9._-]{0,20}[a-zA-Z0-9]",]
}

/// A label key: an optional DNS-subdomain prefix, then a name.
fn key() -> impl Strategy<Value = String> {
    (
        proptest::option::of(proptest::collection::vec(
            "[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?",
            1..3,
        )),
        token(),
    )
        .prop_map(|(prefix, name)| match prefix {
            Some(labels) => format!("{}/{name}", labels.join(".")),
            None => name,
        })
}

/// A label value: empty or a token.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![Just(String::new()), token()]
}

/// One requirement, as the model sees it.
#[derive(Debug, Clone)]
enum Req {
    Eq(String, String),
    Ne(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
    Gt(String, i64),
    Lt(String, i64),
}

fn requirement() -> impl Strategy<Value = Req> {
    let values = || proptest::collection::vec(token(), 1..4);
    prop_oneof![
        (key(), value()).prop_map(|(k, v)| Req::Eq(k, v)),
        (key(), value()).prop_map(|(k, v)| Req::Ne(k, v)),
        (key(), values()).prop_map(|(k, v)| Req::In(k, v)),
        (key(), values()).prop_map(|(k, v)| Req::NotIn(k, v)),
        key().prop_map(Req::Exists),
        key().prop_map(Req::DoesNotExist),
        (key(), -1000i64..1000).prop_map(|(k, n)| Req::Gt(k, n)),
        (key(), -1000i64..1000).prop_map(|(k, n)| Req::Lt(k, n)),
    ]
}

/// The requirement in selector syntax, with some optional spacing.
fn render(req: &Req, spaced: bool) -> String {
    let s = if spaced { " " } else { "" };
    match req {
        Req::Eq(k, v) => format!("{k}{s}={s}{v}"),
        Req::Ne(k, v) => format!("{k}{s}!={s}{v}"),
        Req::In(k, vs) => format!("{k} in{s}({})", vs.join(&format!(",{s}"))),
        Req::NotIn(k, vs) => format!("{k} notin{s}({})", vs.join(&format!(",{s}"))),
        Req::Exists(k) => k.clone(),
        Req::DoesNotExist(k) => format!("!{k}"),
        Req::Gt(k, n) => format!("{k}>{n}"),
        Req::Lt(k, n) => format!("{k}<{n}"),
    }
}

/// The API server's label semantics, written independently of the parser's.
fn model_matches(req: &Req, labels: &BTreeMap<String, String>) -> bool {
    let get = |k: &String| labels.get(k);
    let int = |k: &String| get(k).and_then(|v| v.parse::<i64>().ok());
    match req {
        Req::Eq(k, v) => get(k) == Some(v),
        Req::Ne(k, v) => get(k) != Some(v),
        Req::In(k, vs) => get(k).is_some_and(|x| vs.contains(x)),
        Req::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(x)),
        Req::Exists(k) => get(k).is_some(),
        Req::DoesNotExist(k) => get(k).is_none(),
        Req::Gt(k, n) => int(k).is_some_and(|x| x > *n),
        Req::Lt(k, n) => int(k).is_some_and(|x| x < *n),
    }
}

fn key_of(req: &Req) -> &String {
    match req {
        Req::Eq(k, _)
        | Req::Ne(k, _)
        | Req::In(k, _)
        | Req::NotIn(k, _)
        | Req::Exists(k)
        | Req::DoesNotExist(k)
        | Req::Gt(k, _)
        | Req::Lt(k, _) => k,
    }
}

/// Labels drawn from the selector's own keys and values, so that matches happen.
fn labels_for(reqs: &[Req]) -> impl Strategy<Value = BTreeMap<String, String>> + use<> {
    let keys: Vec<String> = reqs.iter().map(|r| key_of(r).clone()).collect();
    let mut values: Vec<String> = reqs
        .iter()
        .flat_map(|r| match r {
            Req::Eq(_, v) | Req::Ne(_, v) => vec![v.clone()],
            Req::In(_, vs) | Req::NotIn(_, vs) => vs.clone(),
            Req::Gt(_, n) | Req::Lt(_, n) => vec![n.to_string(), (n + 1).to_string()],
            _ => vec![],
        })
        .collect();
    values.push("other".into());
    values.push(String::new());
    proptest::collection::vec(
        (
            proptest::sample::select(keys),
            proptest::sample::select(values),
        ),
        0..6,
    )
    .prop_map(|pairs| pairs.into_iter().collect())
}

fn selector_and_labels() -> impl Strategy<Value = (Vec<Req>, bool, BTreeMap<String, String>)> {
    (
        proptest::collection::vec(requirement(), 1..5),
        any::<bool>(),
    )
        .prop_flat_map(|(reqs, spaced)| {
            let labels = labels_for(&reqs);
            (Just(reqs), Just(spaced), labels)
        })
}

/// A field value with every character the escaping has to handle.
fn field_value() -> impl Strategy<Value = String> {
    "[a-z0-9,=!\\\\. é-]{0,12}".prop_map(|v| v.trim().to_owned())
}

fn escape(value: &str) -> String {
    let mut out = String::new();
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn field() -> impl Strategy<Value = String> {
    "[a-z]{1,8}(\\.[a-z]{1,8}){0,2}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// No input makes either parser panic; what the label parser accepts prints to something
    /// it parses back to the same selector.
    #[test]
    fn arbitrary_text_never_panics(text in "\\PC{0,60}") {
        if let Ok(selector) = LabelSelector::parse(&text) {
            let again = LabelSelector::parse(&selector.to_string()).unwrap();
            prop_assert_eq!(again, selector);
        }
        let _ = FieldSelector::parse(&text);
    }

    /// Text made of selector punctuation, where parsers break first.
    #[test]
    fn punctuation_soup_never_panics(text in "[a-z!=,()<>\\\\ /.-]{0,40}") {
        if let Ok(selector) = LabelSelector::parse(&text) {
            let again = LabelSelector::parse(&selector.to_string()).unwrap();
            prop_assert_eq!(again, selector);
        }
        let _ = FieldSelector::parse(&text);
    }

    /// Every valid label selector parses, prints and parses again to the same requirements,
    /// and matches exactly the label sets the model says it does.
    #[test]
    fn label_selectors_round_trip_and_match_the_model(
        (reqs, spaced, labels) in selector_and_labels()
    ) {
        let text: Vec<String> = reqs.iter().map(|r| render(r, spaced)).collect();
        let text = text.join(if spaced { ", " } else { "," });
        let selector = LabelSelector::parse(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(selector.requirements().len(), reqs.len());
        let again = LabelSelector::parse(&selector.to_string()).unwrap();
        prop_assert_eq!(&again, &selector);
        let expected = reqs.iter().all(|r| model_matches(r, &labels));
        prop_assert_eq!(selector.matches(&labels), expected, "{} on {:?}", text, labels);
        for (parsed, req) in selector.requirements().iter().zip(&reqs) {
            prop_assert_eq!(&parsed.key, key_of(req));
            let kind_ok = matches!(
                (&parsed.op, req),
                (LabelOp::Equals(_), Req::Eq(..))
                    | (LabelOp::NotEquals(_), Req::Ne(..))
                    | (LabelOp::In(_), Req::In(..))
                    | (LabelOp::NotIn(_), Req::NotIn(..))
                    | (LabelOp::Exists, Req::Exists(_))
                    | (LabelOp::DoesNotExist, Req::DoesNotExist(_))
                    | (LabelOp::GreaterThan(_), Req::Gt(..))
                    | (LabelOp::LessThan(_), Req::Lt(..))
            );
            prop_assert!(kind_ok, "{:?} parsed as {:?}", req, parsed);
        }
    }

    /// Field selectors with escaped values parse to the unescaped values and match by
    /// equality (a missing field reads as empty).
    #[test]
    fn field_selectors_unescape_and_match(
        terms in proptest::collection::vec((field(), any::<bool>(), field_value()), 1..4),
        present in proptest::collection::btree_map(field(), field_value(), 0..4),
    ) {
        let text: Vec<String> = terms
            .iter()
            .map(|(f, negated, v)| {
                format!("{f}{}{}", if *negated { "!=" } else { "=" }, escape(v))
            })
            .collect();
        let text = text.join(",");
        let selector = FieldSelector::parse(&text)
            .map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        prop_assert_eq!(selector.requirements().len(), terms.len());
        for (parsed, (field, negated, value)) in selector.requirements().iter().zip(&terms) {
            prop_assert_eq!(&parsed.field, field);
            prop_assert_eq!(parsed.negated, *negated);
            prop_assert_eq!(&parsed.value, value);
        }
        let expected = terms.iter().all(|(f, negated, v)| {
            let actual = present.get(f).map_or("", String::as_str);
            (actual == v) != *negated
        });
        let got = selector.matches_with(|f| present.get(f).map(String::as_str));
        prop_assert_eq!(got, expected);
    }
}

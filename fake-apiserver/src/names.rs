//! The name grammars a real API server enforces on resources it serves (as on a
//! CustomResourceDefinition's names): every registration is checked against them, so that a
//! name never escapes its place in a URL path.

use informer_core::Status;

use super::{ResourceDef, status};

impl ResourceDef {
    /// Checks the names against the grammars the real server enforces on a
    /// CustomResourceDefinition: the group empty (the core group) or a DNS-1123 subdomain
    /// (`example.com`), the version, plural, singular and short names DNS-1035 labels (`v1`,
    /// `widgets`), the kind and list kind DNS-1035 labels once lowercased (`Widget`). A 422
    /// `Invalid` Status (as for a CRD, field names from its spec) with one cause per problem
    /// otherwise: names end up in URL paths, so `../x` or `a/b` must never be served.
    pub fn validate(&self) -> Result<(), Status> {
        let mut causes: Vec<(String, &str, String)> = Vec::new();
        let mut check = |field: &str, value: &str, problem: Option<&'static str>| {
            if let Some(p) = problem {
                causes.push((
                    field.to_owned(),
                    "FieldValueInvalid",
                    format!("{value:?}: {p}"),
                ));
            }
        };
        if !self.group.is_empty() {
            check(
                "spec.group",
                &self.group,
                dns1123_subdomain_problem(&self.group),
            );
        }
        check(
            "spec.version",
            &self.version,
            dns1035_label_problem(&self.version),
        );
        check(
            "spec.names.plural",
            &self.plural,
            dns1035_label_problem(&self.plural),
        );
        check(
            "spec.names.singular",
            &self.singular,
            dns1035_label_problem(&self.singular),
        );
        let kind = self.kind.to_ascii_lowercase();
        check("spec.names.kind", &self.kind, dns1035_label_problem(&kind));
        let list_kind = self.list_kind.to_ascii_lowercase();
        check(
            "spec.names.listKind",
            &self.list_kind,
            dns1035_label_problem(&list_kind),
        );
        for short in &self.short_names {
            check("spec.names.shortNames", short, dns1035_label_problem(short));
        }
        if causes.is_empty() {
            return Ok(());
        }
        Err(status::invalid(
            "CustomResourceDefinition",
            "apiextensions.k8s.io",
            &self.qualified_name(),
            &causes,
        ))
    }
}

/// Why `s` is not a DNS-1123 subdomain (at most 253 characters of dot-separated labels of
/// lowercase alphanumerics and `-`, each starting and ending alphanumeric).
fn dns1123_subdomain_problem(s: &str) -> Option<&'static str> {
    let labels_ok = s.split('.').all(|label| {
        let b = label.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
    });
    if s.len() > 253 {
        Some("must be no more than 253 characters")
    } else if !labels_ok {
        Some(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
             characters, '-' or '.', and must start and end with an alphanumeric character",
        )
    } else {
        None
    }
}

/// Why `s` is not a DNS-1035 label (at most 63 lowercase alphanumerics and `-`, starting
/// with a letter and ending alphanumeric).
pub(crate) fn dns1035_label_problem(s: &str) -> Option<&'static str> {
    let b = s.as_bytes();
    let ok = !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric();
    if b.len() > 63 {
        Some("must be no more than 63 characters")
    } else if !ok {
        Some(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
             start with an alphabetic character, and end with an alphanumeric character",
        )
    } else {
        None
    }
}

//! The mirror's decision for one namespace, from what the listers hold: pure, no IO.

use std::collections::BTreeMap;

use informer::{LabelSelector, Object};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// What the mirror controller wants, with the values it decides from.
pub(crate) struct Wanted<'a> {
    /// Namespaces that should hold a mirror.
    pub(crate) selector: &'a LabelSelector,
    /// The mirror's name.
    pub(crate) mirror_name: &'a str,
    /// `metadata.managedBy`-style label put on every mirror: (key, value).
    pub(crate) managed_by: (&'a str, &'a str),
    /// The annotation naming the source on every mirror: (key, `namespace/name`).
    pub(crate) source_annotation: (&'a str, &'a str),
}

/// What one namespace needs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Nothing: the namespace is as it should be.
    Nothing,
    /// Create this mirror.
    Create(ConfigMap),
    /// Replace the mirror with this one (it carries the cached resourceVersion).
    Replace(ConfigMap),
    /// Delete the mirror, if it still has this UID and resourceVersion.
    Delete {
        /// The mirror's UID.
        uid: Option<String>,
        /// The mirror's resourceVersion.
        resource_version: Option<String>,
    },
}

impl Wanted<'_> {
    /// The action for `namespace`, given the cached namespace (if any), the cached source (if
    /// any) and the cached mirror of this namespace (if any; only managed ones are cached).
    pub(crate) fn decide(
        &self,
        namespace: &str,
        cached_namespace: Option<&Namespace>,
        source: Option<&ConfigMap>,
        mirror: Option<&ConfigMap>,
    ) -> Action {
        let wants_mirror = cached_namespace.is_some_and(|ns| {
            ns.metadata.deletion_timestamp.is_none() && self.selector.matches_object(ns)
        });
        let source = source.filter(|s| s.metadata.deletion_timestamp.is_none());
        match (wants_mirror.then_some(()).and(source), mirror) {
            (Some(source), None) => Action::Create(self.mirror_of(namespace, source, None)),
            (Some(source), Some(current)) => {
                if self.is_current(current, source) {
                    Action::Nothing
                } else {
                    let rv = current.metadata.resource_version.clone();
                    Action::Replace(self.mirror_of(namespace, source, rv))
                }
            }
            (None, Some(current)) if self.is_managed(current) => Action::Delete {
                uid: current.metadata.uid.clone(),
                resource_version: current.metadata.resource_version.clone(),
            },
            (None, _) => Action::Nothing,
        }
    }

    /// Whether `cm` is one of ours.
    pub(crate) fn is_managed(&self, cm: &ConfigMap) -> bool {
        let (key, value) = self.managed_by;
        cm.object_labels().get(key).is_some_and(|v| v == value)
    }

    /// Whether the mirror carries the source's data and our marks.
    fn is_current(&self, mirror: &ConfigMap, source: &ConfigMap) -> bool {
        let (annotation, source_ref) = self.source_annotation;
        self.is_managed(mirror)
            && mirror.data == source.data
            && mirror.binary_data == source.binary_data
            && mirror.immutable == source.immutable
            && mirror
                .object_annotations()
                .get(annotation)
                .is_some_and(|v| v == source_ref)
    }

    /// The mirror `namespace` should hold.
    fn mirror_of(
        &self,
        namespace: &str,
        source: &ConfigMap,
        resource_version: Option<String>,
    ) -> ConfigMap {
        let (label, manager) = self.managed_by;
        let (annotation, source_ref) = self.source_annotation;
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(self.mirror_name.to_owned()),
                namespace: Some(namespace.to_owned()),
                labels: Some(BTreeMap::from([(label.to_owned(), manager.to_owned())])),
                annotations: Some(BTreeMap::from([(
                    annotation.to_owned(),
                    source_ref.to_owned(),
                )])),
                resource_version,
                ..ObjectMeta::default()
            },
            data: source.data.clone(),
            binary_data: source.binary_data.clone(),
            immutable: source.immutable,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn wanted(selector: &LabelSelector) -> Wanted<'_> {
        Wanted {
            selector,
            mirror_name: "mirror",
            managed_by: ("app.kubernetes.io/managed-by", "mirror-controller"),
            source_annotation: ("informer-rs/mirror-source", "default/src"),
        }
    }

    fn namespace(name: &str, labels: &[(&str, &str)]) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        }
    }

    fn source(data: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("src".into()),
                namespace: Some("default".into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("k".to_owned(), data.to_owned())])),
            ..ConfigMap::default()
        }
    }

    fn existing(w: &Wanted<'_>, ns: &str, data: &str, rv: &str) -> ConfigMap {
        let mut cm = w.mirror_of(ns, &source(data), Some(rv.to_owned()));
        cm.metadata.uid = Some(format!("uid-{ns}"));
        cm
    }

    #[test]
    fn a_matching_namespace_gets_a_marked_copy_of_the_source() {
        let selector = LabelSelector::parse("mirror=true").unwrap();
        let w = wanted(&selector);
        let ns = namespace("a", &[("mirror", "true")]);
        let Action::Create(cm) = w.decide("a", Some(&ns), Some(&source("v1")), None) else {
            panic!("expected a create");
        };
        assert_eq!(cm.metadata.name.as_deref(), Some("mirror"));
        assert_eq!(cm.metadata.namespace.as_deref(), Some("a"));
        assert_eq!(cm.data, source("v1").data);
        assert!(w.is_managed(&cm));
        assert_eq!(
            cm.object_annotations()
                .get("informer-rs/mirror-source")
                .unwrap(),
            "default/src"
        );
        assert!(cm.metadata.resource_version.is_none());
    }

    #[test]
    fn an_identical_mirror_needs_nothing_and_a_stale_one_is_replaced_at_its_version() {
        let selector = LabelSelector::parse("mirror=true").unwrap();
        let w = wanted(&selector);
        let ns = namespace("a", &[("mirror", "true")]);
        let same = existing(&w, "a", "v1", "7");
        assert_eq!(
            w.decide("a", Some(&ns), Some(&source("v1")), Some(&same)),
            Action::Nothing
        );
        let Action::Replace(cm) = w.decide("a", Some(&ns), Some(&source("v2")), Some(&same)) else {
            panic!("expected a replace");
        };
        assert_eq!(cm.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(cm.data, source("v2").data);
        // A mirror whose marks were edited away is restored too.
        let mut unmarked = same.clone();
        unmarked.metadata.annotations = None;
        assert!(matches!(
            w.decide("a", Some(&ns), Some(&source("v1")), Some(&unmarked)),
            Action::Replace(_)
        ));
    }

    #[test]
    fn mirrors_leave_namespaces_that_stop_matching_are_terminating_or_gone() {
        let selector = LabelSelector::parse("mirror=true").unwrap();
        let w = wanted(&selector);
        let mirror = existing(&w, "a", "v1", "7");
        let delete = Action::Delete {
            uid: Some("uid-a".into()),
            resource_version: Some("7".into()),
        };
        let unlabelled = namespace("a", &[("mirror", "false")]);
        assert_eq!(
            w.decide("a", Some(&unlabelled), Some(&source("v1")), Some(&mirror)),
            delete
        );
        let mut terminating = namespace("a", &[("mirror", "true")]);
        terminating.metadata.deletion_timestamp = Some(
            serde_json::from_value::<Time>(serde_json::json!("2026-01-01T00:00:00Z")).unwrap(),
        );
        assert_eq!(
            w.decide("a", Some(&terminating), Some(&source("v1")), Some(&mirror)),
            delete
        );
        assert_eq!(
            w.decide("a", None, Some(&source("v1")), Some(&mirror)),
            delete
        );
        // Without a source no namespace keeps a mirror.
        let labelled = namespace("a", &[("mirror", "true")]);
        assert_eq!(w.decide("a", Some(&labelled), None, Some(&mirror)), delete);
        assert_eq!(w.decide("a", Some(&labelled), None, None), Action::Nothing);
        assert_eq!(
            w.decide("a", Some(&unlabelled), Some(&source("v1")), None),
            Action::Nothing
        );
    }

    #[test]
    fn foreign_config_maps_are_never_deleted() {
        let selector = LabelSelector::parse("mirror=true").unwrap();
        let w = wanted(&selector);
        let mut foreign = existing(&w, "a", "v1", "7");
        foreign.metadata.labels = None;
        let unlabelled = namespace("a", &[]);
        assert_eq!(
            w.decide("a", Some(&unlabelled), Some(&source("v1")), Some(&foreign)),
            Action::Nothing
        );
    }
}

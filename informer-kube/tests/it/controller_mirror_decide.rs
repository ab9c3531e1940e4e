//! The configmap-mirror example's decision for one namespace (`decide`, pure: no IO), from
//! what the listers hold: what it creates, replaces (at which resourceVersion) and deletes
//! (with which preconditions), and what it leaves alone. These were the unit tests of the
//! library's `sample::reconcile` module before the example moved onto `Controller`.

use std::collections::BTreeMap;

use crate::configmap_mirror::{
    Change, MANAGED_BY_LABEL, MANAGER, MirrorConfig, SOURCE_ANNOTATION, decide, is_managed,
};
use informer::{LabelSelector, Object};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube_client::api::Preconditions;

/// Source `default/src`, mirrors named `mirror`, namespaces selected by `selector`.
fn config(selector: &str) -> MirrorConfig {
    MirrorConfig {
        source: ("default".into(), "src".into()),
        mirror_name: "mirror".into(),
        selector: LabelSelector::parse(selector).unwrap(),
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

/// The mirror of `source(data)` the controller would create in `ns`, as the server stored it
/// (a UID, resourceVersion `rv`).
fn existing(cfg: &MirrorConfig, ns: &str, data: &str, rv: &str) -> ConfigMap {
    let labelled = namespace(ns, &[("mirror", "true")]);
    let Change::Create(mut cm) = decide(cfg, ns, Some(&labelled), Some(&source(data)), None) else {
        panic!("expected a create");
    };
    cm.metadata.uid = Some(format!("uid-{ns}"));
    cm.metadata.resource_version = Some(rv.to_owned());
    cm
}

#[test]
fn a_matching_namespace_gets_a_marked_copy_of_the_source() {
    let cfg = config("mirror=true");
    let ns = namespace("a", &[("mirror", "true")]);
    let Change::Create(cm) = decide(&cfg, "a", Some(&ns), Some(&source("v1")), None) else {
        panic!("expected a create");
    };
    assert_eq!(cm.metadata.name.as_deref(), Some("mirror"));
    assert_eq!(cm.metadata.namespace.as_deref(), Some("a"));
    assert_eq!(cm.data, source("v1").data);
    assert!(is_managed(&cm));
    assert_eq!(cm.object_labels().get(MANAGED_BY_LABEL).unwrap(), MANAGER);
    assert_eq!(
        cm.object_annotations().get(SOURCE_ANNOTATION).unwrap(),
        "default/src"
    );
    assert!(cm.metadata.resource_version.is_none());
}

#[test]
fn an_identical_mirror_needs_nothing_and_a_stale_one_is_replaced_at_its_version() {
    let cfg = config("mirror=true");
    let ns = namespace("a", &[("mirror", "true")]);
    let same = existing(&cfg, "a", "v1", "7");
    assert_eq!(
        decide(&cfg, "a", Some(&ns), Some(&source("v1")), Some(&same)),
        Change::Nothing
    );
    let Change::Replace(cm) = decide(&cfg, "a", Some(&ns), Some(&source("v2")), Some(&same)) else {
        panic!("expected a replace");
    };
    assert_eq!(cm.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(cm.data, source("v2").data);
    // A mirror whose marks were edited away is restored too.
    let mut unmarked = same.clone();
    unmarked.metadata.annotations = None;
    assert!(matches!(
        decide(&cfg, "a", Some(&ns), Some(&source("v1")), Some(&unmarked)),
        Change::Replace(_)
    ));
}

#[test]
fn mirrors_leave_namespaces_that_stop_matching_are_terminating_or_gone() {
    let cfg = config("mirror=true");
    let mirror = existing(&cfg, "a", "v1", "7");
    let delete = Change::Delete(Preconditions {
        uid: Some("uid-a".into()),
        resource_version: Some("7".into()),
    });
    let unlabelled = namespace("a", &[("mirror", "false")]);
    let v1 = source("v1");
    assert_eq!(
        decide(&cfg, "a", Some(&unlabelled), Some(&v1), Some(&mirror)),
        delete
    );
    let mut terminating = namespace("a", &[("mirror", "true")]);
    terminating.metadata.deletion_timestamp =
        Some(serde_json::from_value::<Time>(serde_json::json!("2026-01-01T00:00:00Z")).unwrap());
    assert_eq!(
        decide(&cfg, "a", Some(&terminating), Some(&v1), Some(&mirror)),
        delete
    );
    // Deleted (or never seen): the controller passes no namespace.
    assert_eq!(decide(&cfg, "a", None, Some(&v1), Some(&mirror)), delete);
    // Without a source no namespace keeps a mirror.
    let labelled = namespace("a", &[("mirror", "true")]);
    assert_eq!(
        decide(&cfg, "a", Some(&labelled), None, Some(&mirror)),
        delete
    );
    assert_eq!(
        decide(&cfg, "a", Some(&labelled), None, None),
        Change::Nothing
    );
    assert_eq!(
        decide(&cfg, "a", Some(&unlabelled), Some(&v1), None),
        Change::Nothing
    );
}

#[test]
fn foreign_config_maps_are_never_deleted() {
    let cfg = config("mirror=true");
    let mut foreign = existing(&cfg, "a", "v1", "7");
    foreign.metadata.labels = None;
    assert!(!is_managed(&foreign));
    let unlabelled = namespace("a", &[]);
    assert_eq!(
        decide(
            &cfg,
            "a",
            Some(&unlabelled),
            Some(&source("v1")),
            Some(&foreign)
        ),
        Change::Nothing
    );
}

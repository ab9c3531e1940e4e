#![allow(clippy::unwrap_used, clippy::expect_used, reason = "tests")]

use std::sync::Arc;

use informer_core::{Notification, ObjectKey, ObjectOrTombstone, Tombstone};

use super::*;
use crate::JsonObject;

fn obj(name: &str, uid: &str, rv: &str) -> Arc<JsonObject> {
    Arc::new(
        JsonObject::new(Some("ns"), name)
            .with_uid(uid)
            .with_resource_version(rv),
    )
}

fn add(o: &Arc<JsonObject>) -> Notification<JsonObject> {
    Notification::Add {
        object: Arc::clone(o),
        is_in_initial_list: false,
    }
}

fn update(old: &Arc<JsonObject>, new: &Arc<JsonObject>) -> Notification<JsonObject> {
    Notification::Update {
        old: Arc::clone(old),
        new: Arc::clone(new),
    }
}

fn delete(o: &Arc<JsonObject>) -> Notification<JsonObject> {
    Notification::Delete(ObjectOrTombstone::Object(Arc::clone(o)))
}

fn tombstone(o: &Arc<JsonObject>) -> Notification<JsonObject> {
    Notification::Delete(ObjectOrTombstone::Tombstone(Tombstone {
        key: informer_core::key_of(o.as_ref()).unwrap(),
        last_known: Arc::clone(o),
    }))
}

fn recording(name: &str, ns: Vec<Notification<JsonObject>>) -> Recording<JsonObject> {
    let r = Recording::new(name);
    for n in ns {
        r.record(n);
    }
    r
}

/// The server's end state of the reference story: `a` updated to rv 3, `b` deleted at rv 4,
/// `c` (uid c1) deleted and re-created as uid c2 at rv 6.
fn story_expected() -> Expected {
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("3"));
    e.insert("ns/c", Some("c2"), Some("6"));
    e.record_deletion("b1", "ns/b", Some("4"));
    e.record_deletion("c1", "ns/c", Some("5"));
    e
}

/// A handler that heard the story right: watch deletes for b, a tombstone then add for c.
fn story_ok() -> Vec<Notification<JsonObject>> {
    let a1 = obj("a", "a1", "1");
    let a3 = obj("a", "a1", "3");
    let b2 = obj("b", "b1", "2");
    let b4 = obj("b", "b1", "4");
    let c1 = obj("c", "c1", "1");
    let c6 = obj("c", "c2", "6");
    vec![
        Notification::Add {
            object: a1.clone(),
            is_in_initial_list: true,
        },
        add(&b2),
        add(&c1),
        update(&a1, &a3),
        update(&a3, &a3),
        delete(&b4),
        tombstone(&c1),
        add(&c6),
    ]
}

fn story_store() -> Vec<Arc<JsonObject>> {
    vec![obj("a", "a1", "3"), obj("c", "c2", "6")]
}

fn check_one(
    expected: &Expected,
    store: &[Arc<JsonObject>],
    ns: Vec<Notification<JsonObject>>,
) -> Result<CheckSummary, ConvergenceReport> {
    let r = recording("h", ns);
    check_convergence(expected, store, &[&r], &CheckOptions::default())
}

/// The violations' kinds, for matching.
fn kinds(report: &ConvergenceReport) -> Vec<ViolationKind> {
    report.violations().iter().map(|v| v.kind.clone()).collect()
}

#[test]
fn a_correct_history_passes_and_is_summarised() {
    let summary = check_one(&story_expected(), &story_store(), story_ok()).unwrap();
    assert_eq!(summary.objects, 2);
    assert_eq!(summary.recorded_deletions, Some(2));
    let h = &summary.handlers[0];
    assert_eq!(
        (
            h.initial_adds,
            h.adds,
            h.updates,
            h.resyncs,
            h.deletes,
            h.tombstones,
            h.replacements
        ),
        (1, 3, 1, 1, 1, 1, 1)
    );
}

#[test]
fn the_recording_handler_records_every_call() {
    let r = Recording::new("h");
    let mut h = r.handler();
    let a = obj("a", "a1", "1");
    let a2 = obj("a", "a1", "2");
    h.on_add(&a, true);
    h.on_update(&a, &a2);
    h.on_delete(&ObjectOrTombstone::Object(Arc::clone(&a2)));
    assert_eq!(r.len(), 3);
    let mut e = Expected::new();
    e.track_deletions();
    e.record_deletion("a1", "ns/a", Some("2"));
    check_convergence(&e, &[], &[&r], &CheckOptions::default()).unwrap();
}

#[test]
fn objects_never_seen_need_not_be_reported() {
    // d was created and deleted between two relists: the handler never heard of it.
    let mut e = story_expected();
    e.record_deletion("d1", "ns/d", Some("9"));
    check_one(&e, &story_store(), story_ok()).unwrap();
}

#[test]
fn cache_differences_are_caught() {
    let report = check_one(
        &story_expected(),
        &[obj("a", "a1", "2"), obj("x", "x1", "1")],
        story_ok(),
    )
    .unwrap_err();
    let cache: Vec<&Violation> = report
        .violations()
        .iter()
        .filter(|v| v.subject == Subject::Cache)
        .collect();
    assert_eq!(cache.len(), 3, "{report}");
    assert!(matches!(cache[0].kind, ViolationKind::WrongVersion { .. }));
    assert_eq!(cache[0].key.as_deref(), Some("ns/a"));
    assert!(matches!(cache[1].kind, ViolationKind::MissingObject { .. }));
    assert!(matches!(
        cache[2].kind,
        ViolationKind::UnexpectedObject { .. }
    ));
}

#[test]
fn duplicate_cache_keys_are_caught() {
    let mut store = story_store();
    store.push(obj("a", "a1", "3"));
    let report = check_one(&story_expected(), &store, story_ok()).unwrap_err();
    assert!(matches!(
        kinds(&report)[..],
        [ViolationKind::DuplicateCacheKey { .. }]
    ));
}

#[test]
fn a_missed_update_is_a_wrong_version() {
    let mut ns = story_ok();
    ns.remove(4); // the resync: harmless
    ns.remove(3); // the update to rv 3
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        matches!(&kinds(&report)[..], [ViolationKind::WrongVersion { expected, got }]
            if expected.resource_version.as_deref() == Some("3")
            && got.resource_version.as_deref() == Some("1")),
        "{report}"
    );
}

#[test]
fn a_missed_delete_is_caught() {
    let mut ns = story_ok();
    ns.remove(5); // the delete of b
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    let k = kinds(&report);
    assert!(k.contains(&ViolationKind::UnexpectedObject {
        got: Version::new(Some("b1"), Some("2"))
    }));
    assert!(k.contains(&ViolationKind::DeleteCount {
        uid: "b1".into(),
        deletes: 0,
        expected: 1
    }));
}

#[test]
fn an_extra_add_is_caught() {
    let mut ns = story_ok();
    ns.push(add(&obj("z", "z1", "7")));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    let k = kinds(&report);
    assert!(k.contains(&ViolationKind::UnexpectedObject {
        got: Version::new(Some("z1"), Some("7"))
    }));
    assert!(k.contains(&ViolationKind::NeverExisted { uid: "z1".into() }));
}

#[test]
fn an_add_of_a_present_key_is_caught() {
    let mut ns = story_ok();
    // c2 added twice in a row.
    ns.push(add(&obj("c", "c2", "6")));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    let k = kinds(&report);
    assert!(
        matches!(k[0], ViolationKind::AddOfPresentKey { index: 8, .. }),
        "{report}"
    );
    assert!(matches!(
        k[1],
        ViolationKind::DuplicateAdd {
            index: 8,
            deleted_in_between: false,
            ..
        }
    ));
}

#[test]
fn a_deleted_object_coming_back_is_caught() {
    let b4 = obj("b", "b1", "4");
    let mut e = story_expected();
    // Suppose b were live after all: a delete then re-add of the same UID.
    e.insert("ns/b", Some("b1"), Some("4"));
    e.deletions.as_mut().unwrap().remove("b1");
    let mut ns = story_ok();
    ns.push(add(&b4));
    let mut store = story_store();
    store.push(b4);
    let report = check_one(&e, &store, ns).unwrap_err();
    let k = kinds(&report);
    assert!(
        k.iter().any(|k| matches!(
            k,
            ViolationKind::DuplicateAdd {
                deleted_in_between: true,
                ..
            }
        )),
        "{report}"
    );
    assert!(k.contains(&ViolationKind::DeleteOfLiveObject {
        uid: "b1".into(),
        deletes: 1
    }));
}

#[test]
fn a_duplicate_delete_is_caught() {
    let mut ns = story_ok();
    ns.insert(6, delete(&obj("b", "b1", "4")));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    let k = kinds(&report);
    assert!(
        matches!(
            k[0],
            ViolationKind::DeleteOfAbsentKey {
                index: 6,
                tombstone: false,
                ..
            }
        ),
        "{report}"
    );
    assert!(k.contains(&ViolationKind::DeleteCount {
        uid: "b1".into(),
        deletes: 2,
        expected: 1
    }));
}

#[test]
fn a_delete_of_something_never_added_is_caught() {
    let mut ns = story_ok();
    ns.push(tombstone(&obj("q", "q1", "2")));
    let mut e = story_expected();
    e.record_deletion("q1", "ns/q", Some("3"));
    let report = check_one(&e, &story_store(), ns).unwrap_err();
    assert!(
        matches!(
            kinds(&report)[..],
            [ViolationKind::DeleteOfAbsentKey {
                tombstone: true,
                ..
            }]
        ),
        "{report}"
    );
}

#[test]
fn an_update_of_an_absent_key_is_caught() {
    let mut ns = story_ok();
    ns.insert(0, update(&obj("a", "a1", "0"), &obj("a", "a1", "1")));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(matches!(
        kinds(&report)[0],
        ViolationKind::UpdateOfAbsentKey { index: 0, .. }
    ));
}

#[test]
fn an_update_from_a_stale_state_is_caught() {
    let mut ns = story_ok();
    // The update to rv 3 claims to start from rv 2, which the handler never saw.
    ns[3] = update(&obj("a", "a1", "2"), &obj("a", "a1", "3"));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(matches!(
        &kinds(&report)[..],
        [ViolationKind::UpdateFromStaleState { index: 3, current, old }]
            if current.resource_version.as_deref() == Some("1")
            && old.resource_version.as_deref() == Some("2")
    ));
}

#[test]
fn an_update_across_keys_is_caught() {
    let mut ns = story_ok();
    ns[3] = update(&obj("b", "a1", "1"), &obj("a", "a1", "3"));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        kinds(&report)
            .iter()
            .any(|k| matches!(k, ViolationKind::UpdateKeyMismatch { index: 3, .. })),
        "{report}"
    );
}

#[test]
fn a_resource_version_going_backwards_is_caught() {
    let mut ns = story_ok();
    let a3 = obj("a", "a1", "3");
    let a2 = obj("a", "a1", "2");
    ns.push(update(&a3, &a2));
    ns.push(update(&a2, &a3));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        matches!(
            kinds(&report)[..],
            [ViolationKind::ResourceVersionRegressed { index: 8, .. }]
        ),
        "{report}"
    );
}

#[test]
fn a_uid_change_as_update_is_caught_in_uid_aware_mode() {
    let mut ns = story_ok();
    // c re-created, heard as an update (client-go's behaviour).
    ns.splice(6..8, [update(&obj("c", "c1", "1"), &obj("c", "c2", "6"))]);
    let report = check_one(&story_expected(), &story_store(), ns.clone()).unwrap_err();
    let k = kinds(&report);
    assert!(
        matches!(k[0], ViolationKind::UidChangedInUpdate { index: 6, .. }),
        "{report}"
    );
    // ... and counts as the deletion and the addition in client-go mode.
    let r = recording("h", ns);
    let options = CheckOptions {
        uid_changes: UidChange::Update,
        ..CheckOptions::default()
    };
    let summary = check_convergence(&story_expected(), &story_store(), &[&r], &options).unwrap();
    assert_eq!(summary.handlers[0].replacements, 0);
}

#[test]
fn a_delete_of_another_uid_is_caught() {
    let mut ns = story_ok();
    // The tombstone for c names the new UID instead of the old one.
    ns[6] = tombstone(&obj("c", "c2", "6"));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        matches!(
            kinds(&report)[0],
            ViolationKind::DeleteOfOtherObject {
                index: 6,
                tombstone: true,
                ..
            }
        ),
        "{report}"
    );
}

#[test]
fn a_stale_tombstone_is_caught() {
    let mut ns = story_ok();
    let c1 = obj("c", "c1", "1");
    let c2 = obj("c", "c1", "2");
    ns.insert(6, update(&c1, &c2));
    // The tombstone still carries rv 1 though the handler saw rv 2.
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        matches!(
            kinds(&report)[..],
            [ViolationKind::StaleTombstone { index: 7, .. }]
        ),
        "{report}"
    );
}

#[test]
fn a_tombstone_under_the_wrong_key_is_caught() {
    let mut ns = story_ok();
    ns[6] = Notification::Delete(ObjectOrTombstone::Tombstone(Tombstone {
        key: ObjectKey::from_raw("ns/c"),
        last_known: obj("other", "c1", "1"),
    }));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        kinds(&report)
            .iter()
            .any(|k| matches!(k, ViolationKind::TombstoneKeyMismatch { index: 6, .. })),
        "{report}"
    );
}

#[test]
fn a_delete_without_the_final_state_is_caught() {
    let mut ns = story_ok();
    ns[5] = delete(&obj("b", "b1", "2"));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(
        matches!(
            &kinds(&report)[..],
            [ViolationKind::WrongFinalState { index: 5, expected, got }]
                if expected.resource_version.as_deref() == Some("4")
                && got.resource_version.as_deref() == Some("2")
        ),
        "{report}"
    );
}

#[test]
fn unkeyed_notifications_are_caught() {
    let mut ns = story_ok();
    ns.push(add(&Arc::new(JsonObject::default())));
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    assert!(matches!(
        kinds(&report)[..],
        [ViolationKind::Unkeyed { index: 8, .. }]
    ));
}

#[test]
fn every_handler_is_checked_and_named() {
    let good = recording("good", story_ok());
    let mut ns = story_ok();
    ns.remove(7); // the add of c2
    let bad = recording("bad", ns);
    let report = check_convergence(
        &story_expected(),
        &story_store(),
        &[&good, &bad],
        &CheckOptions::default(),
    )
    .unwrap_err();
    assert!(
        report
            .violations()
            .iter()
            .all(|v| v.subject == Subject::Handler("bad".into()))
    );
    assert_eq!(report.summary().handlers.len(), 2);
}

#[test]
fn the_report_prints_who_what_and_the_trace() {
    let mut ns = story_ok();
    ns.remove(7);
    let report = check_one(&story_expected(), &story_store(), ns).unwrap_err();
    let text = report.to_string();
    assert!(
        text.contains("handler \"h\", key ns/c: missing; the server has uid=c2 rv=6"),
        "{text}"
    );
    let trace = report.trace(&Subject::Handler("h".into()), "ns/c").unwrap();
    assert_eq!(
        trace,
        [
            "#2 Add(ns/c@1 uid=c1)",
            "#6 Delete(tombstone ns/c, last known ns/c@1 uid=c1)"
        ]
    );
    assert!(text.contains("#6 Delete(tombstone ns/c"), "{text}");
}

#[test]
fn long_traces_are_cut_to_the_last_ones() {
    let mut ns = vec![add(&obj("a", "a1", "1"))];
    for rv in 1..30 {
        ns.push(update(
            &obj("a", "a1", &rv.to_string()),
            &obj("a", "a1", &(rv + 1).to_string()),
        ));
    }
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("99"));
    let report = check_one(&e, &[obj("a", "a1", "99")], ns).unwrap_err();
    let trace = report.trace(&Subject::Handler("h".into()), "ns/a").unwrap();
    assert_eq!(trace.len(), 13);
    assert_eq!(trace[0], "(18 earlier omitted)");
    assert_eq!(trace[12], "#29 Update(ns/a@29 uid=a1 -> ns/a@30 uid=a1)");
}

#[test]
fn expected_state_comes_from_objects_and_recorded_deletions() {
    let e = Expected::from_objects(story_store().iter().map(AsRef::as_ref)).unwrap();
    assert_eq!(e.objects().len(), 2);
    assert!(Expected::from_objects([&JsonObject::default()]).is_err());

    let a = JsonObject::new(Some("ns"), "a")
        .with_uid("u-a")
        .with_resource_version("1");
    let b = JsonObject::new(Some("ns"), "b")
        .with_uid("u-b")
        .with_resource_version("3");
    let mut e = Expected::from_objects([&a]).unwrap();
    e.record_deleted(&b).unwrap();
    assert!(e.record_deleted(&JsonObject::default()).is_err());
    assert_eq!(
        e.objects().get("ns/a"),
        Some(&Version::new(Some("u-a"), Some("1")))
    );
    let deletions = e.deletions().unwrap();
    assert_eq!(deletions.len(), 1);
    let deletion = deletions.get("u-b").unwrap();
    assert_eq!(deletion.key, "ns/b");
    assert_eq!(deletion.final_resource_version.as_deref(), Some("3"));
}

/// With a selector, `a` leaves the selection (a delete carrying its new state), comes back, and
/// `b` leaves for good.
fn selection_story() -> Vec<Notification<JsonObject>> {
    let a1 = obj("a", "a1", "1");
    let a2 = obj("a", "a1", "2");
    let a3 = obj("a", "a1", "3");
    let b1 = obj("b", "b1", "1");
    let b4 = obj("b", "b1", "4");
    vec![add(&a1), add(&b1), delete(&a2), add(&a3), delete(&b4)]
}

fn returning() -> CheckOptions {
    CheckOptions {
        objects_may_return: true,
        ..CheckOptions::default()
    }
}

#[test]
fn objects_may_return_to_a_selection() {
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("3"));
    let r = recording("h", selection_story());
    let store = [obj("a", "a1", "3")];
    check_convergence(&e, &store, &[&r], &returning()).unwrap();
    // Without the option, the return is a violation.
    let report = check_convergence(&e, &store, &[&r], &CheckOptions::default()).unwrap_err();
    assert!(
        kinds(&report)
            .iter()
            .any(|k| matches!(k, ViolationKind::DuplicateAdd { index: 3, .. })),
        "{report}"
    );
}

#[test]
fn returning_objects_still_need_one_delete_per_add() {
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("3"));
    let store = [obj("a", "a1", "3")];
    // An add while present is still caught.
    let mut ns = selection_story();
    ns.insert(1, add(&obj("a", "a1", "1")));
    let report = check_convergence(&e, &store, &[&recording("h", ns)], &returning()).unwrap_err();
    assert!(
        kinds(&report)
            .iter()
            .any(|k| matches!(k, ViolationKind::DuplicateAdd { index: 1, .. })),
        "{report}"
    );
    // A missing final delete of an object no longer selected is caught.
    let mut ns = selection_story();
    ns.pop();
    let report = check_convergence(&e, &store, &[&recording("h", ns)], &returning()).unwrap_err();
    assert!(
        kinds(&report).contains(&ViolationKind::DeleteCount {
            uid: "b1".into(),
            deletes: 0,
            expected: 1
        }),
        "{report}"
    );
}

#[test]
fn traces_center_on_the_first_offending_notification() {
    let a = |rv: u32| obj("a", "a1", &rv.to_string());
    let mut ns = vec![add(&a(1))];
    for rv in 1..40 {
        ns.push(update(&a(rv), &a(rv + 1)));
    }
    // #20: an update from a state the handler never saw.
    ns[20] = update(&a(100), &a(20));
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("40"));
    let options = CheckOptions {
        trace_len: 5,
        ..CheckOptions::default()
    };
    let r = recording("h", ns);
    let report = check_convergence(&e, &[a(40)], &[&r], &options).unwrap_err();
    let trace = report.trace(&Subject::Handler("h".into()), "ns/a").unwrap();
    assert_eq!(
        trace,
        [
            "(18 earlier omitted)",
            "#18 Update(ns/a@18 uid=a1 -> ns/a@19 uid=a1)",
            "#19 Update(ns/a@19 uid=a1 -> ns/a@20 uid=a1)",
            "#20 Update(ns/a@100 uid=a1 -> ns/a@20 uid=a1)",
            "#21 Update(ns/a@21 uid=a1 -> ns/a@22 uid=a1)",
            "#22 Update(ns/a@22 uid=a1 -> ns/a@23 uid=a1)",
            "(17 later omitted)",
        ]
    );
}

/// What the transform of the content tests keeps: everything but the `v` label.
fn transformed(o: &JsonObject) -> JsonObject {
    let mut o = o.clone();
    o.metadata.labels.remove("v");
    o
}

fn labelled(name: &str, uid: &str, rv: &str) -> Arc<JsonObject> {
    Arc::new(
        JsonObject::new(Some("ns"), name)
            .with_uid(uid)
            .with_resource_version(rv)
            .with_label("v", rv),
    )
}

fn check_contents_of(
    expected: &Expected,
    store: &[Arc<JsonObject>],
    ns: Vec<Notification<JsonObject>>,
) -> Result<CheckSummary, ConvergenceReport> {
    let r = recording("h", ns);
    check_convergence_with_content(expected, store, &[&r], &CheckOptions::default(), &|o| {
        digest(o)
    })
}

#[test]
fn transformed_contents_pass_and_are_counted() {
    let a = labelled("a", "a1", "1");
    let b = labelled("b", "b1", "2");
    let (ta, tb) = (Arc::new(transformed(&a)), Arc::new(transformed(&b)));
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("1"));
    e.set_content("ns/a", digest(ta.as_ref()));
    e.record_deletion("b1", "ns/b", Some("2"));
    assert!(e.set_final_content("b1", digest(tb.as_ref())));
    assert!(!e.set_final_content("nobody", 0));
    let summary = check_contents_of(
        &e,
        &[Arc::clone(&ta)],
        vec![add(&ta), add(&tb), delete(&tb)],
    )
    .unwrap();
    // The cached a, the handler's a, the handler's delete of b.
    assert_eq!(summary.contents_checked, 3);
    // Untransformed objects have the same UIDs and resourceVersions: only rule (e) sees them.
    let raw = || vec![add(&a), add(&b), delete(&b)];
    let summary = check_one(&e, &[Arc::clone(&a)], raw()).unwrap();
    assert_eq!(summary.contents_checked, 0);
    assert_eq!(
        check_contents_of(&e, &[Arc::clone(&a)], raw())
            .unwrap_err()
            .violations()
            .len(),
        3
    );
}

#[test]
fn an_untransformed_object_is_caught_in_the_cache_in_handlers_and_in_deletes() {
    let a = labelled("a", "a1", "1");
    let b = labelled("b", "b1", "2");
    let ta = Arc::new(transformed(&a));
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("1"));
    e.set_content("ns/a", digest(ta.as_ref()));
    e.record_deletion("b1", "ns/b", Some("2"));
    e.set_final_content("b1", digest(&transformed(&b)));
    // The cache holds the transformed a, the handler was told the raw one; b's delete is raw.
    let report =
        check_contents_of(&e, &[Arc::clone(&ta)], vec![add(&a), add(&b), delete(&b)]).unwrap_err();
    let k = kinds(&report);
    assert!(
        matches!(
            &k[..],
            [
                ViolationKind::WrongContent { .. },
                ViolationKind::WrongFinalContent { index: 2, .. }
            ]
        ),
        "{report}"
    );
    assert!(report.to_string().contains("wrong content"), "{report}");
    // The same in the cache.
    let report = check_contents_of(&e, std::slice::from_ref(&a), vec![add(&ta)]).unwrap_err();
    assert!(
        matches!(
            &report.violations()[0],
            Violation {
                subject: Subject::Cache,
                kind: ViolationKind::WrongContent { .. },
                ..
            }
        ),
        "{report}"
    );
}

#[test]
fn contents_are_only_compared_at_the_servers_version() {
    // A wrong version is reported once, as such, not also as wrong content.
    let a1 = labelled("a", "a1", "1");
    let a2 = labelled("a", "a1", "2");
    let mut e = Expected::new();
    e.insert("ns/a", Some("a1"), Some("2"));
    e.set_content("ns/a", digest(&transformed(&a2)));
    let report = check_contents_of(&e, &[Arc::clone(&a1)], vec![add(&a1)]).unwrap_err();
    assert!(
        kinds(&report)
            .iter()
            .all(|k| matches!(k, ViolationKind::WrongVersion { .. })),
        "{report}"
    );
    // Declaring the object again forgets its digest.
    e.insert("ns/a", Some("a1"), Some("1"));
    assert!(e.contents().is_empty());
}

#[tokio::test(start_paused = true)]
async fn recordings_keep_the_time_of_each_notification() {
    let r = Recording::new("h");
    let a = obj("a", "a1", "1");
    let start = tokio::time::Instant::now();
    r.record(add(&a));
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    r.record(update(&a, &a));
    let timed = r.timed(0);
    assert_eq!(timed.len(), 2);
    assert_eq!(timed[1].0 - timed[0].0, std::time::Duration::from_secs(3));
    assert_eq!(timed[0].0, start);
    assert_eq!(r.timed(1).len(), 1);
    assert!(r.timed(5).is_empty());
}

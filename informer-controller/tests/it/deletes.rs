//! Deletes reach reconcile with the last known object: from a watch event, from a relist's
//! tombstone, before the new object when a key is deleted and re-created; retried like any
//! reconcile; bounded; and keys without any object (a stand-in, or skipped).

use std::sync::Arc;

use fake_apiserver::status;
use informer::ObjectKey;
use informer_controller::{Action, Context, Controller, ControllerConfig, ObjectState};
use informer_testing::JsonObject;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::support::{Calls, Env, Failed, wait_for, wait_until};

/// A reconcile recording its calls and succeeding.
fn recorder(
    calls: &Arc<Calls>,
) -> impl Fn(Arc<JsonObject>, Context<()>) -> futures::future::Ready<Result<Action, Failed>>
+ Send
+ Sync
+ 'static {
    let calls = Arc::clone(calls);
    move |obj, ctx| {
        calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
        futures::future::ready(Ok(Action::Done))
    }
}

#[tokio::test(start_paused = true)]
async fn a_watched_delete_is_reconciled_with_the_final_state() {
    let env = Env::new();
    let uid = env.create("deployments", "web");
    let calls = Arc::new(Calls::default());
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(recorder(&calls), (), stop.clone()));
    wait_for(&handle, |s| s.successes == 1).await;
    env.touch("deployments", "web", "final");
    wait_for(&handle, |s| s.successes == 2).await;
    let final_rv = calls.of("prod/web")[1].resource_version.clone();
    env.server
        .delete("deployments", Some("prod"), "web")
        .unwrap();
    let stats = wait_for(&handle, |s| s.deletions == 1).await;
    let last = calls.of("prod/web").pop().unwrap();
    assert_eq!(last.state, ObjectState::Deleted { tombstone: false });
    assert_eq!(last.uid.as_deref(), Some(uid.as_str()));
    // The delete event carries the object as it was deleted (the fake server gives it a new
    // resourceVersion, as etcd does): at least the final state we saw.
    assert!(last.resource_version >= final_rv);
    assert_eq!((stats.successes, stats.skipped), (3, 0));
    // Once reconciled, the deletion is forgotten: a manual trigger finds nothing.
    handle.enqueue(ObjectKey::new(Some("prod"), "web").unwrap());
    wait_for(&handle, |s| s.skipped == 1).await;
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_delete_seen_only_by_a_relist_is_reconciled_from_its_tombstone() {
    let env = Env::new();
    env.create("deployments", "web");
    env.create("deployments", "api");
    let calls = Arc::new(Calls::default());
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(recorder(&calls), (), stop.clone()));
    wait_for(&handle, |s| s.successes == 2).await;
    // Watch outage: every watch breaks and cannot come back; web is deleted meanwhile and
    // the history compacted past it, so the informer must relist to notice.
    let faults = env.server.faults();
    tokio::time::timeout(
        crate::support::GUARD,
        env.server.wait_for_open_watches("*", 1),
    )
    .await
    .unwrap();
    faults.fail_watches("*", 1_000, status::internal_error("watch cache not ready"));
    assert_eq!(faults.break_watches("*"), 1);
    env.server
        .delete("deployments", Some("prod"), "web")
        .unwrap();
    env.server.compact_all();
    faults.clear();
    let stats = wait_for(&handle, |s| s.deletions == 1).await;
    let last = calls.of("prod/web").pop().unwrap();
    assert_eq!(last.state, ObjectState::Deleted { tombstone: true });
    assert_eq!(stats.successes, 3);
    assert_eq!(calls.of("prod/api").len(), 1, "api did not change");
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_recreated_key_reconciles_the_deletion_first_then_the_new_object() {
    let env = Env::new();
    let old = env.create("deployments", "web");
    let calls = Arc::new(Calls::default());
    let gate = Arc::new(Semaphore::new(0));
    let recorded = Arc::clone(&calls);
    let held = Arc::clone(&gate);
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    // The first reconcile waits for the gate, so the delete and the re-creation both happen
    // while the key is being processed.
    let run = tokio::spawn(controller.run(
        move |obj: Arc<JsonObject>, ctx: Context<()>| {
            let calls = Arc::clone(&recorded);
            let gate = Arc::clone(&held);
            async move {
                if calls.all().is_empty() {
                    gate.acquire().await.unwrap().forget();
                }
                calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
                Ok::<_, Failed>(Action::Done)
            }
        },
        (),
        stop.clone(),
    ));
    wait_until(&handle, "the first reconcile started", || {
        !handle.in_flight().is_empty()
    })
    .await;
    env.server
        .delete("deployments", Some("prod"), "web")
        .unwrap();
    let new = env.create("deployments", "web");
    // Let the deployments informer deliver both events before the gate opens.
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    gate.add_permits(1);
    wait_for(&handle, |s| s.successes == 3).await;
    let seen: Vec<(ObjectState, String)> = calls
        .of("prod/web")
        .into_iter()
        .map(|c| (c.state, c.uid.unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            (ObjectState::Live, old.clone()),
            (ObjectState::Deleted { tombstone: false }, old),
            (ObjectState::Live, new),
        ]
    );
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_failing_cleanup_is_retried_with_the_last_known_object() {
    let env = Env::new();
    let uid = env.create("deployments", "web");
    let calls = Arc::new(Calls::default());
    let recorded = Arc::clone(&calls);
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        move |obj: Arc<JsonObject>, ctx: Context<()>| {
            let calls = Arc::clone(&recorded);
            async move {
                calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
                if ctx.deleted() && ctx.retries() < 2 {
                    return Err(Failed("the external resource is busy".into()));
                }
                Ok(Action::Done)
            }
        },
        (),
        stop.clone(),
    ));
    wait_for(&handle, |s| s.successes == 1).await;
    env.server
        .delete("deployments", Some("prod"), "web")
        .unwrap();
    let stats = wait_for(&handle, |s| s.successes == 2).await;
    assert_eq!((stats.failures, stats.retries, stats.deletions), (2, 2, 3));
    let cleanups: Vec<(ObjectState, u32, String)> = calls
        .of("prod/web")
        .into_iter()
        .skip(1)
        .map(|c| (c.state, c.retries, c.uid.unwrap()))
        .collect();
    let deleted = ObjectState::Deleted { tombstone: false };
    assert_eq!(
        cleanups,
        [
            (deleted, 0, uid.clone()),
            (deleted, 1, uid.clone()),
            (deleted, 2, uid)
        ]
    );
    assert_eq!(
        handle.retries(&ObjectKey::new(Some("prod"), "web").unwrap()),
        0
    );
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn keys_without_objects_get_a_stand_in_and_the_deleted_record_is_bounded() {
    let env = Env::new();
    for name in ["a", "b", "c", "d"] {
        env.create("deployments", name);
    }
    let calls = Arc::new(Calls::default());
    let gate = Arc::new(Semaphore::new(0));
    let recorded = Arc::clone(&calls);
    let held = Arc::clone(&gate);
    let config = ControllerConfig {
        max_deleted_objects: 2,
        ..ControllerConfig::default()
    };
    let controller = Controller::new(env.informer("deployments"), config)
        .reconcile_missing_as(|key: &ObjectKey| JsonObject::new(key.namespace(), key.name()))
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    // The one worker: d's second reconcile waits for the gate.
    let run = tokio::spawn(controller.run(
        move |obj: Arc<JsonObject>, ctx: Context<()>| {
            let calls = Arc::clone(&recorded);
            let gate = Arc::clone(&held);
            async move {
                if ctx.key().name() == "d" && !calls.of("prod/d").is_empty() {
                    gate.acquire().await.unwrap().forget();
                }
                calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
                Ok::<_, Failed>(Action::Done)
            }
        },
        (),
        stop.clone(),
    ));
    wait_for(&handle, |s| s.successes == 4).await;
    // The worker is busy with d; three deletions while the record holds two: the oldest
    // (a) loses its last known state and is reconciled from the stand-in.
    env.touch("deployments", "d", "1");
    wait_until(&handle, "d in flight", || !handle.in_flight().is_empty()).await;
    for name in ["a", "b", "c"] {
        env.server
            .delete("deployments", Some("prod"), name)
            .unwrap();
    }
    wait_for(&handle, |s| s.deleted_evicted == 1).await;
    gate.add_permits(1);
    wait_for(&handle, |s| s.deletions == 3).await;
    let state_of = |key: &str| calls.of(key).pop().unwrap().state;
    assert_eq!(state_of("prod/a"), ObjectState::Missing);
    assert_eq!(
        state_of("prod/b"),
        ObjectState::Deleted { tombstone: false }
    );
    assert_eq!(
        state_of("prod/c"),
        ObjectState::Deleted { tombstone: false }
    );
    // The stand-in has the key's name and nothing the server gave (no UID).
    assert_eq!(calls.of("prod/a").pop().unwrap().uid, None);
    // A manual trigger of a key never seen: the stand-in again.
    handle.enqueue(ObjectKey::new(Some("prod"), "never").unwrap());
    wait_for(&handle, |s| s.deletions == 4).await;
    assert_eq!(state_of("prod/never"), ObjectState::Missing);
    assert_eq!(handle.stats().skipped, 0);
    stop.cancel();
    run.await.unwrap().unwrap();
}

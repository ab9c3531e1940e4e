//! What queues a key: the primary informer's events, owner references (`owns`), a mapper
//! (`watches`), manual triggers; and the initial lists before the first reconcile.

use std::sync::Arc;

use informer::{ObjectKey, OwnerRef};
use informer_controller::{Action, Context, Controller, ControllerConfig, ObjectState};
use informer_testing::JsonObject;
use tokio_util::sync::CancellationToken;

use crate::support::{Calls, Env, Failed, wait_for, wait_until};

async fn record(obj: Arc<JsonObject>, ctx: Context<Calls>) -> Result<Action, Failed> {
    ctx.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
    Ok(Action::Done)
}

#[tokio::test(start_paused = true)]
async fn initial_objects_are_reconciled_after_the_sync_then_every_change() {
    let env = Env::new();
    for name in ["a", "b", "c"] {
        env.create("deployments", name);
    }
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let calls = Arc::new(Calls::default());
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(
        {
            let calls = Arc::clone(&calls);
            move |obj: Arc<JsonObject>, ctx: Context<()>| {
                let calls = Arc::clone(&calls);
                async move {
                    calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
                    Ok::<_, Failed>(Action::Done)
                }
            }
        },
        (),
        stop.clone(),
    ));
    wait_for(&handle, |s| s.successes == 3).await;
    let mut keys: Vec<String> = calls.all().into_iter().map(|c| c.key).collect();
    keys.sort();
    assert_eq!(keys, ["prod/a", "prod/b", "prod/c"]);
    assert!(calls.all().iter().all(|c| c.state == ObjectState::Live));

    env.touch("deployments", "b", "1");
    env.create("deployments", "d");
    wait_for(&handle, |s| s.successes == 5).await;
    assert_eq!(calls.of("prod/b").len(), 2);
    assert_eq!(calls.of("prod/d").len(), 1);
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.stats.successes, 5);
    assert_eq!(report.informer_stats.len(), 1);
    assert!(report.informers.unwrap().failures.is_empty());
}

#[tokio::test(start_paused = true)]
async fn owned_objects_reconcile_their_owner_by_name_and_uid() {
    let env = Env::new();
    let web = env.create("deployments", "web");
    env.create("deployments", "api");
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .owns(env.informer("replicasets"))
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(record, Calls::default(), stop.clone()));
    wait_for(&handle, |s| s.successes == 2).await;

    // A ReplicaSet owned by web (right UID) reconciles web.
    let owner = OwnerRef::new("apps/v1", "Deployment", "web", &web).with_controller(true);
    env.server
        .create(
            "replicasets",
            &JsonObject::new(Some("prod"), "web-1").with_owner(owner),
        )
        .unwrap();
    wait_for(&handle, |s| s.successes == 3).await;
    // One naming web with another UID (a predecessor's child), or naming nothing cached,
    // reconciles nothing; an update of the first one reconciles web again.
    let stale = OwnerRef::new("apps/v1", "Deployment", "web", "old-uid");
    env.server
        .create(
            "replicasets",
            &JsonObject::new(Some("prod"), "web-0").with_owner(stale),
        )
        .unwrap();
    let ghost = OwnerRef::new("apps/v1", "Deployment", "ghost", "g");
    env.server
        .create(
            "replicasets",
            &JsonObject::new(Some("prod"), "ghost-1").with_owner(ghost),
        )
        .unwrap();
    env.touch("replicasets", "web-1", "x");
    wait_for(&handle, |s| s.successes == 4).await;
    // Deleting the owned object reconciles its owner too.
    env.server
        .delete("replicasets", Some("prod"), "web-1")
        .unwrap();
    let stats = wait_for(&handle, |s| s.successes == 5).await;
    assert_eq!(stats.skipped, 0);
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    assert_eq!(report.stats.successes, 5, "{:?}", report.stats);
    assert_eq!(report.informer_stats.len(), 2);
}

#[tokio::test(start_paused = true)]
async fn watched_objects_reconcile_what_the_mapper_says_for_old_and_new_states() {
    let env = Env::new();
    env.create("deployments", "web");
    env.create("deployments", "api");
    // Pods name their Deployment in the `app` label.
    let pod = |name: &str, app: &str| JsonObject::new(Some("prod"), name).with_label("app", app);
    let calls = Arc::new(Calls::default());
    let controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .watches(env.informer("pods"), |pod: &JsonObject| {
            let app = pod.metadata.labels.get("app")?;
            ObjectKey::new(pod.metadata.namespace.as_deref(), app).ok()
        })
        .manage_factory(env.factory.clone());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let recorded = Arc::clone(&calls);
    let run = tokio::spawn(controller.run(
        move |obj: Arc<JsonObject>, ctx: Context<()>| {
            let calls = Arc::clone(&recorded);
            async move {
                calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
                Ok::<_, Failed>(Action::Done)
            }
        },
        (),
        stop.clone(),
    ));
    wait_for(&handle, |s| s.successes == 2).await;
    env.server.create("pods", &pod("p", "web")).unwrap();
    wait_until(&handle, "web reconciled for its pod", || {
        calls.of("prod/web").len() == 2
    })
    .await;
    // The pod moves from web to api: both hear.
    env.server.update("pods", &pod("p", "api")).unwrap();
    wait_until(&handle, "both reconciled for the move", || {
        calls.of("prod/web").len() == 3 && calls.of("prod/api").len() == 2
    })
    .await;
    // A pod naming a Deployment that does not exist: its key has no object, skipped.
    env.server.create("pods", &pod("q", "nothing")).unwrap();
    let stats = wait_for(&handle, |s| s.skipped == 1).await;
    assert_eq!(stats.successes, 5);
    stop.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn manual_triggers_and_no_handlers_left_behind() {
    let env = Env::new();
    env.create("deployments", "a");
    env.create("deployments", "b");
    let deployments = env.informer("deployments");
    env.factory.start();
    let controller = Controller::new(deployments.clone(), ControllerConfig::default());
    // Nothing is registered before the run.
    assert!(deployments.registrations().is_empty());
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let run = tokio::spawn(controller.run(record, Calls::default(), stop.clone()));
    wait_for(&handle, |s| s.successes == 2).await;
    assert_eq!(deployments.registrations().len(), 1);
    assert_eq!(deployments.registrations()[0].name(), "controller");
    handle.enqueue(ObjectKey::new(Some("prod"), "a").unwrap());
    wait_for(&handle, |s| s.successes == 3).await;
    handle.enqueue_all();
    wait_for(&handle, |s| s.successes == 5).await;
    stop.cancel();
    let report = run.await.unwrap().unwrap();
    // The caller owns this factory: the controller removed its handler and left the
    // informers running.
    assert!(report.informers.is_none());
    assert!(deployments.registrations().is_empty());
    assert!(!deployments.is_stopped());
    env.factory.shutdown().await;
}

//! `reconcile_updates_if(generation_changed)` against the fake server, which keeps
//! `metadata.generation` as the real one does: a controller that writes its objects' status is
//! not woken by its own writes, nor by label changes; spec changes (and a deployment's
//! annotations) reconcile; resyncs always do.

use std::sync::Arc;
use std::time::Duration;

use informer::{FactoryConfig, Object};
use informer_controller::{
    Action, Context, Controller, ControllerConfig, ControllerStats, generation_changed,
};
use informer_testing::JsonObject;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{Calls, Env, wait_for};

/// A reconcile that records its call, then writes the object's status as a controller does
/// (`observedGeneration`), directly to the server.
fn status_writer(
    env: &Env,
    calls: &Arc<Calls>,
) -> impl Fn(Arc<JsonObject>, Context<()>) -> futures::future::Ready<Result<Action, std::io::Error>>
+ Send
+ Sync
+ 'static {
    let (server, calls) = (env.server.clone(), Arc::clone(calls));
    move |obj, ctx| {
        calls.record(&obj, ctx.key().as_str(), ctx.state(), ctx.retries());
        let status = json!({"status": {"observedGeneration": obj.object_generation()}});
        server
            .patch("deployments", Some("prod"), "web", &status)
            .unwrap();
        futures::future::ready(Ok(Action::Done))
    }
}

/// Runs a controller of `deployments` (filtered or not) while `steps` write, and returns its
/// final counts and the generations it reconciled.
async fn run(
    env: &Env,
    filtered: bool,
    steps: impl AsyncFnOnce(&informer_controller::ControllerHandle),
) -> (ControllerStats, Vec<Option<String>>) {
    env.create("deployments", "web");
    let calls = Arc::new(Calls::default());
    let mut controller = Controller::new(env.informer("deployments"), ControllerConfig::default())
        .manage_factory(env.factory.clone());
    if filtered {
        controller = controller.reconcile_updates_if(generation_changed);
    }
    let handle = controller.handle();
    let stop = CancellationToken::new();
    let task = tokio::spawn(controller.run(status_writer(env, &calls), (), stop.clone()));
    steps(&handle).await;
    stop.cancel();
    let report = task.await.unwrap().unwrap();
    let versions = calls
        .of("prod/web")
        .into_iter()
        .map(|c| c.resource_version)
        .collect();
    (report.stats, versions)
}

#[tokio::test(start_paused = true)]
async fn a_generation_filter_skips_status_and_label_writes_and_reconciles_spec_changes() {
    let env = Env::new();
    let generation = |env: &Env| {
        env.server
            .get("deployments", Some("prod"), "web")
            .unwrap()
            .to_value()["metadata"]["generation"]
            .clone()
    };
    let (stats, _) = run(&env, true, async |handle| {
        // The add, then its own status write, turned away.
        wait_for(handle, |s| s.successes == 1 && s.filtered == 1).await;
        env.touch("deployments", "web", "a");
        wait_for(handle, |s| s.filtered == 2).await;
        assert_eq!(generation(&env), 1);
        env.server
            .patch(
                "deployments",
                Some("prod"),
                "web",
                &json!({"spec": {"replicas": 2}}),
            )
            .unwrap();
        wait_for(handle, |s| s.successes == 2 && s.filtered == 3).await;
        assert_eq!(generation(&env), 2);
        // Deployments count annotations as desired state.
        env.server
            .patch(
                "deployments",
                Some("prod"),
                "web",
                &json!({"metadata": {"annotations": {"note": "x"}}}),
            )
            .unwrap();
        wait_for(handle, |s| s.successes == 3 && s.filtered == 4).await;
        // Let anything left over arrive.
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    assert_eq!((stats.successes, stats.filtered), (3, 4), "{stats:?}");

    // Without the filter the same steps reconcile after every write, the controller's own
    // status writes included (its second write of the same status changes nothing, so the
    // loop ends).
    let env = Env::new();
    let (stats, _) = run(&env, false, async |handle| {
        wait_for(handle, |s| s.successes == 2).await;
        env.touch("deployments", "web", "a");
        wait_for(handle, |s| s.successes == 3).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
    })
    .await;
    assert_eq!((stats.successes, stats.filtered), (3, 0), "{stats:?}");
}

#[tokio::test(start_paused = true)]
async fn resyncs_pass_the_filter() {
    let mut config = FactoryConfig::default();
    config.resync_period = Some(Duration::from_secs(10));
    let env = Env::with_config(config);
    let (stats, versions) = run(&env, true, async |handle| {
        wait_for(handle, |s| s.successes == 1 && s.filtered == 1).await;
        // Two resync periods: the unchanged object is reconciled each time.
        wait_for(handle, |s| s.successes >= 3).await;
    })
    .await;
    assert_eq!(stats.filtered, 1, "{stats:?}");
    assert!(
        versions[1..].iter().all(|v| *v == versions[1]),
        "resyncs replay the stored version: {versions:?}"
    );
}

//! `replica-summary`: a sample controller. Every Deployment gets a ConfigMap
//! `<deployment>-replicas` holding how many pods it has and how many are ready; the summary
//! follows the pods and leaves with the Deployment. The controller is `controller.rs` (on
//! `informer_controller::Controller`, two workers by default); this program gives it a
//! cluster or a demo.
//!
//! ```text
//! # The fake API server in process (no socket), with a scripted demo:
//! cargo run -p informer-kube --example replica-summary
//! # A real cluster (kubeconfig file, or KUBECONFIG / in-cluster with --cluster):
//! cargo run -p informer-kube --example replica-summary -- --kubeconfig ~/.kube/config
//! ```

mod controller;

#[path = "../common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use controller::{NAME, reconcile, summary_name};
use fake_apiserver::FakeApiServer;
use informer_controller::{ControllerConfig, ControllerHandle};
use informer_kube::{KubeInformerFactory, client_for_informers};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Summarise every Deployment's ready pods into a ConfigMap.
///
/// Without --kubeconfig or --cluster (and without KUBECONFIG set), runs against the fake API
/// server in process (kube-client over its HTTP front end, no socket) and plays a demo: two
/// Deployments with their ReplicaSets and pods, then pods become ready, one is deleted, and a
/// Deployment is deleted, printing the summaries after each step.
#[derive(Debug, Parser)]
#[command(name = "replica-summary", version)]
struct Args {
    /// Use the cluster of this kubeconfig file's current context.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Use the cluster kube-client finds (KUBECONFIG, ~/.kube/config, or in-cluster). Implied
    /// when KUBECONFIG is set.
    #[arg(long)]
    cluster: bool,
    /// Concurrent workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Against a cluster: stop after this many seconds (default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<u64>,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    common::init_logging("info");
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => common::failed("replica-summary", &*error),
    }
}

async fn run(args: Args) -> Result<(), BoxError> {
    let settings = ControllerConfig {
        name: NAME.into(),
        workers: args.workers,
        reconcile_timeout: Some(Duration::from_secs(30)),
        ..ControllerConfig::default()
    };
    let stop = CancellationToken::new();
    let use_cluster =
        args.kubeconfig.is_some() || args.cluster || std::env::var_os("KUBECONFIG").is_some();
    if !use_cluster {
        return demo(settings, stop).await;
    }
    let config = match &args.kubeconfig {
        Some(path) => {
            let kubeconfig = Kubeconfig::read_from(path)?;
            let options = KubeConfigOptions::default();
            kube_client::Config::from_custom_kubeconfig(kubeconfig, &options).await?
        }
        None => kube_client::Config::infer().await?,
    };
    let factory = KubeInformerFactory::new(client_for_informers(config)?);
    factory.set_drop_managed_fields(true);
    let (controller, summaries) = controller::controller(&factory, settings)?;
    let run = tokio::spawn(controller.run(reconcile, summaries, stop.clone()));
    match args.duration {
        Some(seconds) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = tokio::time::sleep(Duration::from_secs(seconds)) => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    stop.cancel();
    let report = run.await??;
    println!("stopped: {:?}", report.stats);
    Ok(())
}

/// The demo on the fake API server in process.
async fn demo(settings: ControllerConfig, stop: CancellationToken) -> Result<(), BoxError> {
    let server = FakeApiServer::new();
    let create = |resource: &str, object: serde_json::Value| {
        engine(server.create(resource, &object)).map(|o| o.uid().to_owned())
    };
    create("namespaces", json!({"metadata": {"name": "shop"}}))?;
    for (deployment, hash, pods) in [("web", "5d4f", 3), ("api", "9f8e", 2)] {
        let uid = create("deployments", object(deployment, None, hash))?;
        let rs = format!("{deployment}-{hash}");
        let rs_uid = create(
            "replicasets",
            object(&rs, Some(("Deployment", deployment, &uid)), hash),
        )?;
        for i in 0..pods {
            let pod = object(
                &format!("{rs}-{i}"),
                Some(("ReplicaSet", &rs, &rs_uid)),
                hash,
            );
            create("pods", pod)?;
        }
    }
    let factory = KubeInformerFactory::new(fake_apiserver::http::kube_client(&server));
    let (controller, summaries) = controller::controller(&factory, settings)?;
    let handle = controller.handle();
    let run = tokio::spawn(controller.run(reconcile, summaries, stop.clone()));
    let ready = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});

    settle(&server, &handle, &[("web", 3, 0), ("api", 2, 0)]).await?;
    show(
        &server,
        "1. initial sync: every Deployment has a summary, no pod ready yet",
    )?;
    for pod in ["web-5d4f-0", "web-5d4f-1", "api-9f8e-0"] {
        engine(server.patch("pods", Some("shop"), pod, &ready))?;
    }
    settle(&server, &handle, &[("web", 3, 2), ("api", 2, 1)]).await?;
    show(&server, "2. three pods became ready")?;
    engine(server.delete("pods", Some("shop"), "web-5d4f-0"))?;
    engine(server.delete("deployments", Some("shop"), "api"))?;
    settle(&server, &handle, &[("web", 2, 1)]).await?;
    show(
        &server,
        "3. a ready pod of web deleted, Deployment api deleted",
    )?;

    stop.cancel();
    let report = run.await??;
    println!(
        "\nstopped cleanly: {} reconciles ({} of deleted Deployments), {} failed",
        report.stats.reconciles, report.stats.deletions, report.stats.failures
    );
    Ok(())
}

/// A fake API server's answer, its refusal as an error.
fn engine<T>(result: Result<T, informer::Status>) -> Result<T, BoxError> {
    result.map_err(|status| format!("fake API server: {status}").into())
}

/// An object of the demo in namespace `shop`, controlled by `owner` (kind, name, uid), with
/// the `pod-template-hash` label.
fn object(name: &str, owner: Option<(&str, &str, &str)>, hash: &str) -> serde_json::Value {
    let owners: Vec<_> = owner
        .into_iter()
        .map(|(kind, name, uid)| {
            json!({"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": uid, "controller": true})
        })
        .collect();
    json!({"metadata": {
        "namespace": "shop",
        "name": name,
        "labels": {"pod-template-hash": hash},
        "ownerReferences": owners,
    }})
}

/// Waits (at most a minute) until the summaries are exactly `expected` (deployment, pods,
/// ready), checking after every reconcile.
async fn settle(
    server: &FakeApiServer,
    handle: &ControllerHandle,
    expected: &[(&str, usize, usize)],
) -> Result<(), BoxError> {
    let mut stats = handle.subscribe();
    let wait = async {
        loop {
            let summaries = summaries(server)?;
            let want: Vec<_> = expected
                .iter()
                .map(|(d, pods, ready)| (summary_name(d), pods.to_string(), ready.to_string()))
                .collect();
            if summaries.len() == want.len() && want.iter().all(|w| summaries.contains(w)) {
                return Ok::<(), BoxError>(());
            }
            stats.changed().await?;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .map_err(|_| "the controller did not settle within a minute")?
}

/// The summaries on the server: (name, pods, ready).
fn summaries(server: &FakeApiServer) -> Result<Vec<(String, String, String)>, BoxError> {
    let objects = server
        .objects("configmaps", Some("shop"))
        .map_err(|status| format!("fake API server: {status}"))?;
    Ok(objects
        .iter()
        .map(|o| {
            let v = o.to_value();
            let field = |f: &str| v["data"][f].as_str().unwrap_or_default().to_owned();
            (o.name().to_owned(), field("pods"), field("ready"))
        })
        .collect())
}

fn show(server: &FakeApiServer, title: &str) -> Result<(), BoxError> {
    println!("\n{title}");
    for (name, pods, ready) in summaries(server)? {
        println!("  {name:<14} {ready}/{pods} ready");
    }
    Ok(())
}

//! `configmap-mirror`: a sample controller. It keeps a copy of one source ConfigMap in every
//! namespace carrying a label, deletes copies from namespaces that lose it, and follows the
//! source's changes. The controller itself is `controller.rs` (on
//! `informer_controller::Controller`); this program gives it a cluster, metrics and a demo.
//!
//! ```text
//! # The embedded fake API server over HTTP, with a scripted demo (faults included):
//! cargo run -p informer-kube --example configmap-mirror
//! cargo run -p informer-kube --example configmap-mirror -- --print-metrics
//! # ...then keep serving: poke it with kubectl (the kubeconfig path is printed):
//! cargo run -p informer-kube --example configmap-mirror -- --hold --metrics-addr 127.0.0.1:9090
//! # A real cluster (kubeconfig file, or KUBECONFIG / in-cluster with --cluster):
//! cargo run -p informer-kube --example configmap-mirror -- --kubeconfig ~/.kube/config
//! ```
//!
//! On a cluster, create the source and label namespaces:
//!
//! ```text
//! kubectl create configmap mirror-source -n default --from-literal=greeting=hello
//! kubectl label namespace team-a informer-rs/mirror=true
//! ```

mod controller;

#[path = "../common/mod.rs"]
mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::{FakeApiServer, status};
use informer::{FactoryConfig, InformerMetrics};
use informer_controller::{ControllerConfig, ControllerHandle, ControllerMetrics};
use informer_kube::{KubeInformerFactory, client_for_informers, kube_config};
use informer_workqueue::WorkQueueMetrics;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use controller::{MANAGED_BY_LABEL, MANAGER, MirrorConfig, NAME, SOURCE_ANNOTATION, reconcile};

/// Mirror a ConfigMap into every namespace carrying a label.
///
/// Without --kubeconfig or --cluster (and without KUBECONFIG set), runs against an embedded
/// fake API server over HTTP and plays a demo: seed namespaces and the source, then change
/// the source, relabel namespaces and inject faults (failed writes, broken watches,
/// compaction), printing the state after each step.
#[derive(Debug, Parser)]
#[command(name = "configmap-mirror", version)]
struct Args {
    /// Use the cluster of this kubeconfig file's current context.
    #[arg(long, value_name = "PATH")]
    kubeconfig: Option<PathBuf>,
    /// Use the cluster kube-client finds (KUBECONFIG, ~/.kube/config, or in-cluster). Implied
    /// when KUBECONFIG is set.
    #[arg(long)]
    cluster: bool,
    /// What to mirror where.
    #[command(flatten)]
    mirror: MirrorConfig,
    /// Concurrent workers.
    #[arg(long, default_value_t = 2)]
    workers: usize,
    /// Serve the metrics registry as Prometheus text at http://ADDR/metrics.
    #[arg(long, value_name = "ADDR")]
    metrics_addr: Option<SocketAddr>,
    /// Print the metrics registry's text at exit.
    #[arg(long)]
    print_metrics: bool,
    /// Stop after this many seconds (default: until Ctrl-C; the fake demo stops when done).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<u64>,
    /// Fake server: after the demo, keep running until Ctrl-C (or --duration).
    #[arg(long)]
    hold: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> ExitCode {
    common::init_logging("info");
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => common::failed("configmap-mirror", &*error),
    }
}

async fn run(args: Args) -> Result<(), BoxError> {
    // One registry for everything: reflector_*, informer_*, workqueue_* and
    // controller_runtime_* series.
    let mut registry = Registry::default();
    let mut factory_config = FactoryConfig::default();
    factory_config.metrics = Some(InformerMetrics::register(&mut registry));
    let settings = ControllerConfig {
        name: NAME.into(),
        workers: args.workers,
        reconcile_timeout: Some(Duration::from_secs(30)),
        metrics: Some(ControllerMetrics::register(&mut registry)),
        workqueue_metrics: Some(WorkQueueMetrics::register(&mut registry)),
        ..ControllerConfig::default()
    };
    let registry = Arc::new(registry);
    let stop = CancellationToken::new();
    if let Some(addr) = args.metrics_addr {
        serve_metrics(addr, Arc::clone(&registry), stop.clone()).await?;
    }

    let use_cluster =
        args.kubeconfig.is_some() || args.cluster || std::env::var_os("KUBECONFIG").is_some();
    if use_cluster {
        let client = client_for_informers(kube_config(args.kubeconfig.as_deref()).await?)?;
        println!(
            "configmap-mirror: against a cluster (default namespace {:?})",
            client.default_namespace()
        );
        let factory = KubeInformerFactory::with_config(client, factory_config);
        // The mirror reads no field ownership: less memory per cached object.
        factory.set_drop_managed_fields(true);
        let (controller, mirror) = controller::controller(&factory, args.mirror.clone(), settings)?;
        let run = tokio::spawn(controller.run(reconcile, mirror, stop.clone()));
        wait_for_stop(args.duration).await;
        stop.cancel();
        let report = run.await??;
        println!("stopped: {:?}", report.stats);
    } else {
        fake_demo(&args, factory_config, settings, stop.clone()).await?;
    }
    stop.cancel();
    if args.print_metrics {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry)?;
        println!("\n{text}");
    }
    Ok(())
}

/// A fake API server's refusal, as an error.
fn engine_error(status: informer::Status) -> BoxError {
    format!("fake API server: {status}").into()
}

/// Until Ctrl-C, or for `seconds`.
async fn wait_for_stop(seconds: Option<u64>) {
    match seconds {
        Some(s) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = tokio::time::sleep(Duration::from_secs(s)) => {}
            }
        }
        None => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// A tiny HTTP endpoint: `GET /metrics` answers the registry's text encoding.
async fn serve_metrics(
    addr: SocketAddr,
    registry: Arc<Registry>,
    stop: CancellationToken,
) -> Result<(), BoxError> {
    use axum::http::{StatusCode, header};
    use axum::routing::get;

    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let registry = Arc::clone(&registry);
            async move {
                let mut text = String::new();
                match prometheus_client::encoding::text::encode(&mut text, &registry) {
                    Ok(()) => (
                        StatusCode::OK,
                        [(
                            header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        text,
                    ),
                    Err(e) => (
                        StatusCode::INTERNAL_SERVER_ERROR,
                        [(header::CONTENT_TYPE, "text/plain")],
                        e.to_string(),
                    ),
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("metrics at http://{}/metrics", listener.local_addr()?);
    tokio::spawn(async move {
        let serve = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
        if let Err(error) = serve.await {
            tracing::error!(%error, "the metrics endpoint failed");
        }
    });
    Ok(())
}

/// The fake API server demo: seeds, then three steps, printing the state after each.
async fn fake_demo(
    args: &Args,
    factory_config: FactoryConfig,
    settings: ControllerConfig,
    stop: CancellationToken,
) -> Result<(), BoxError> {
    let config = &args.mirror;
    let (source_namespace, source_name) = (&config.source.0, &config.source.1);
    let engine = FakeApiServer::new();
    // The label the demo puts on namespaces: the selector must be `key=value`.
    let (key, value) = match config.selector.requirements() {
        [
            informer_core::selector::LabelRequirement {
                key,
                op: informer_core::selector::LabelOp::Equals(value),
            },
        ] => (key.clone(), value.clone()),
        _ => return Err("the demo needs a --selector of the form key=value".into()),
    };
    let set_label = |on: bool| {
        let mut labels = serde_json::Map::new();
        labels.insert(key.clone(), if on { json!(value) } else { json!(null) });
        json!({ "metadata": { "labels": labels } })
    };
    for (ns, labelled) in [
        (source_namespace.as_str(), false),
        ("team-a", true),
        ("team-b", true),
        ("team-c", false),
    ] {
        let labels = if labelled {
            set_label(true)["metadata"]["labels"].clone()
        } else {
            json!({})
        };
        engine
            .create(
                "namespaces",
                &json!({"metadata": {"name": ns, "labels": labels}}),
            )
            .map_err(engine_error)?;
    }
    engine
        .create(
            "configmaps",
            &json!({
                "metadata": {"namespace": source_namespace, "name": source_name},
                "data": {"greeting": "hello", "color": "blue"},
            }),
        )
        .map_err(engine_error)?;
    let http = FakeHttpServer::start(engine.clone(), HttpConfig::default()).await?;
    println!("fake API server at {}", http.url());
    let client = client_for_informers(kube_client::Config::new(http.url().parse()?))?;

    let factory = KubeInformerFactory::with_config(client, factory_config);
    factory.set_drop_managed_fields(true);
    let (controller, mirror) = controller::controller(&factory, config.clone(), settings)?;
    let handle = controller.handle();
    let run = tokio::spawn(controller.run(reconcile, mirror, stop.clone()));

    converge(&engine, config, &handle).await?;
    show(
        &engine,
        config,
        "1. initial sync: the labelled namespaces get a mirror",
    )?;

    engine
        .patch(
            "configmaps",
            Some(source_namespace),
            source_name,
            &json!({"data": {"color": "green"}}),
        )
        .map_err(engine_error)?;
    engine
        .patch("namespaces", None, "team-c", &set_label(true))
        .map_err(engine_error)?;
    engine
        .patch("namespaces", None, "team-b", &set_label(false))
        .map_err(engine_error)?;
    converge(&engine, config, &handle).await?;
    show(
        &engine,
        config,
        "2. source changed, team-c labelled, team-b unlabelled",
    )?;

    // Faults: the next 3 writes fail with 500, every watch breaks, and history is compacted
    // while they are down, so the informers must relist; meanwhile the source changes.
    let faults = engine.faults();
    faults.fail_writes(
        "configmaps",
        3,
        status::internal_error("etcd is having a bad day"),
    );
    faults.fail_watches("*", 2, status::internal_error("watch cache not ready"));
    faults.break_watches("*");
    engine
        .patch(
            "configmaps",
            Some(source_namespace),
            source_name,
            &json!({"data": {"color": "red", "size": "large"}}),
        )
        .map_err(engine_error)?;
    engine.compact_all();
    converge(&engine, config, &handle).await?;
    show(
        &engine,
        config,
        "3. after failed writes, broken watches and a compaction (relist)",
    )?;

    if args.hold {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("kubeconfig");
        http.write_kubeconfig(&path, Some("default"))?;
        println!(
            "\nholding: try\n  kubectl --kubeconfig {0} label namespace team-a {1}-\n  \
             kubectl --kubeconfig {0} get configmaps -A\n(Ctrl-C to stop)",
            path.display(),
            key
        );
        wait_for_stop(args.duration).await;
    }
    stop.cancel();
    let report = run.await??;
    let stats = report.stats;
    println!(
        "\nstopped cleanly: {} reconciles, {} failed and retried, {} given up",
        stats.reconciles, stats.retries, stats.given_up
    );
    for (informer, stats) in &report.informer_stats {
        if let Some(reflector) = &stats.reflector {
            println!(
                "  informer {informer:?}: {} objects, {} lists ({} relists), {} watches",
                stats.cached,
                reflector.counters.lists,
                reflector.counters.relists,
                reflector.counters.watch_starts
            );
        }
    }
    http.shutdown()
        .await
        .map_err(|e| -> BoxError { Box::new(e) })?;
    Ok(())
}

/// Waits (at most a minute) until the fake server's state is what the controller wants,
/// checking after every reconcile.
async fn converge(
    engine: &FakeApiServer,
    config: &MirrorConfig,
    handle: &ControllerHandle,
) -> Result<(), BoxError> {
    let mut stats = handle.subscribe();
    let wait = async {
        loop {
            let left = divergences(engine, config)?;
            if left.is_empty() {
                return Ok::<(), BoxError>(());
            }
            if stats.changed().await.is_err() {
                return Err(format!("the controller stopped with {left:?}").into());
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), wait)
        .await
        .map_err(|_| "the controller did not converge within a minute")?
}

/// What the controller would still change, from the server's objects as JSON: one line per
/// namespace that is not as it should be, empty once converged.
fn divergences(engine: &FakeApiServer, config: &MirrorConfig) -> Result<Vec<String>, BoxError> {
    let (namespaces, config_maps) = state(engine)?;
    let (source_ns, source_name) = &config.source;
    let name_of = |v: &Value, field: &str| v["metadata"][field].as_str().map(str::to_owned);
    let source = config_maps.iter().find(|cm| {
        name_of(cm, "namespace").as_ref() == Some(source_ns)
            && name_of(cm, "name").as_ref() == Some(source_name)
    });
    let managed = |cm: &Value| cm["metadata"]["labels"][MANAGED_BY_LABEL] == MANAGER;
    let mut left = Vec::new();
    for ns in &namespaces {
        let name = name_of(ns, "name").unwrap_or_default();
        let labels = ns["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let labels: std::collections::BTreeMap<String, String> = labels
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
            .collect();
        let selected = config.selector.matches(&labels);
        let mirror = config_maps.iter().find(|cm| {
            name_of(cm, "namespace").as_deref() == Some(name.as_str())
                && name_of(cm, "name").as_ref() == Some(&config.mirror_name)
        });
        let problem = match (selected, source, mirror) {
            (true, Some(_), None) => Some("has no mirror"),
            (true, Some(source), Some(mirror))
                if mirror["data"] != source["data"]
                    || mirror["metadata"]["annotations"][SOURCE_ANNOTATION]
                        != format!("{source_ns}/{source_name}").as_str() =>
            {
                Some("has a stale mirror")
            }
            (false, _, Some(mirror)) | (_, None, Some(mirror)) if managed(mirror) => {
                Some("has a mirror it should not have")
            }
            _ => None,
        };
        if let Some(problem) = problem {
            left.push(format!("namespace {name:?} {problem}"));
        }
    }
    Ok(left)
}

fn state(engine: &FakeApiServer) -> Result<(Vec<Value>, Vec<Value>), BoxError> {
    let values = |resource| -> Result<Vec<Value>, BoxError> {
        let objects = engine.objects(resource, None).map_err(engine_error)?;
        Ok(objects.iter().map(|o| o.to_value()).collect())
    };
    Ok((values("namespaces")?, values("configmaps")?))
}

/// Prints each namespace: whether it is selected, and its mirror's data.
fn show(engine: &FakeApiServer, config: &MirrorConfig, title: &str) -> Result<(), BoxError> {
    let (namespaces, config_maps) = state(engine)?;
    println!("\n{title}");
    println!("  {:<10} {:<9} mirror", "namespace", "selected");
    for ns in &namespaces {
        let name = ns["metadata"]["name"].as_str().unwrap_or_default();
        let mirror = config_maps.iter().find(|cm| {
            cm["metadata"]["namespace"] == name && cm["metadata"]["name"] == *config.mirror_name
        });
        let data = mirror.map_or_else(
            || "-".to_owned(),
            |cm| {
                cm["data"]
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        let labels = ns["metadata"]["labels"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        let labels: std::collections::BTreeMap<String, String> = labels
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
            .collect();
        let selected = if config.selector.matches(&labels) {
            "yes"
        } else {
            "no"
        };
        println!("  {name:<10} {selected:<9} {data}");
    }
    Ok(())
}

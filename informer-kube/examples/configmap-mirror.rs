//! `configmap-mirror`: a sample controller. It keeps a copy of one source ConfigMap in every
//! namespace carrying a label, deletes copies from namespaces that lose it, and follows the
//! source's changes. The controller itself is `informer_kube::sample::ConfigMapMirror`; this
//! program gives it a cluster, metrics and a demo.
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

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::{FakeApiServer, status};
use informer::InformerMetrics;
use informer_kube::client_for_informers;
use informer_kube::sample::{ConfigMapMirror, MirrorConfig, MirrorStats, divergences};
use informer_workqueue::WorkQueueMetrics;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio_util::sync::CancellationToken;

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
    /// The source ConfigMap, as namespace/name.
    #[arg(long, default_value = "default/mirror-source")]
    source: String,
    /// The mirror's name in every selected namespace.
    #[arg(long, default_value = "mirror")]
    mirror_name: String,
    /// Label selector of the namespaces that get a mirror.
    #[arg(long, default_value = "informer-rs/mirror=true")]
    selector: String,
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
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("configmap-mirror: {error}");
            let mut source = error.source();
            while let Some(cause) = source {
                eprintln!("  caused by: {cause}");
                source = cause.source();
            }
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), BoxError> {
    let (source_namespace, source_name) = args
        .source
        .split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
        .ok_or_else(|| format!("--source {:?} is not namespace/name", args.source))?;

    // One registry for everything: reflector_*, informer_* and workqueue_* series.
    let mut registry = Registry::default();
    let config = MirrorConfig {
        source_namespace: source_namespace.to_owned(),
        source_name: source_name.to_owned(),
        mirror_name: args.mirror_name.clone(),
        namespace_selector: args.selector.clone(),
        workers: args.workers,
        informer_metrics: Some(InformerMetrics::register(&mut registry)),
        workqueue_metrics: Some(WorkQueueMetrics::register(&mut registry)),
        ..MirrorConfig::default()
    };
    let registry = Arc::new(registry);
    let stop = CancellationToken::new();
    if let Some(addr) = args.metrics_addr {
        serve_metrics(addr, Arc::clone(&registry), stop.clone()).await?;
    }

    let use_cluster =
        args.kubeconfig.is_some() || args.cluster || std::env::var_os("KUBECONFIG").is_some();
    if use_cluster {
        let client = match &args.kubeconfig {
            Some(path) => {
                let kubeconfig = Kubeconfig::read_from(path)?;
                let options = KubeConfigOptions::default();
                client_for_informers(
                    kube_client::Config::from_custom_kubeconfig(kubeconfig, &options).await?,
                )?
            }
            None => client_for_informers(kube_client::Config::infer().await?)?,
        };
        println!(
            "configmap-mirror: against a cluster (default namespace {:?})",
            client.default_namespace()
        );
        let controller = ConfigMapMirror::new(client, config)?;
        let run = tokio::spawn(controller.run(stop.clone()));
        wait_for_stop(args.duration).await;
        stop.cancel();
        let report = run.await??;
        println!("stopped: {:?}", report.stats);
    } else {
        fake_demo(&args, config, stop.clone()).await?;
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
    config: MirrorConfig,
    stop: CancellationToken,
) -> Result<(), BoxError> {
    let engine = FakeApiServer::new();
    // The label the demo puts on namespaces: the selector must be `key=value`.
    let (key, value) = config
        .namespace_selector
        .split_once('=')
        .filter(|(k, _)| !k.ends_with('!') && !k.contains(','))
        .map(|(k, v)| {
            (
                k.trim().to_owned(),
                v.trim_start_matches('=').trim().to_owned(),
            )
        })
        .ok_or("the demo needs a --selector of the form key=value")?;
    let set_label = |on: bool| {
        let mut labels = serde_json::Map::new();
        labels.insert(key.clone(), if on { json!(value) } else { json!(null) });
        json!({ "metadata": { "labels": labels } })
    };
    for (ns, labelled) in [
        (config.source_namespace.as_str(), false),
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
                "metadata": {"namespace": config.source_namespace, "name": config.source_name},
                "data": {"greeting": "hello", "color": "blue"},
            }),
        )
        .map_err(engine_error)?;
    let http = FakeHttpServer::start(engine.clone(), HttpConfig::default()).await?;
    println!("fake API server at {}", http.url());
    let client = client_for_informers(kube_client::Config::new(http.url().parse()?))?;

    let controller = ConfigMapMirror::new(client, config.clone())?;
    let mut stats = controller.watch_stats();
    let run = tokio::spawn(controller.run(stop.clone()));

    converge(&engine, &config, &mut stats).await?;
    show(
        &engine,
        &config,
        "1. initial sync: the labelled namespaces get a mirror",
    )?;

    engine
        .patch(
            "configmaps",
            Some(&config.source_namespace),
            &config.source_name,
            &json!({"data": {"color": "green"}}),
        )
        .map_err(engine_error)?;
    engine
        .patch("namespaces", None, "team-c", &set_label(true))
        .map_err(engine_error)?;
    engine
        .patch("namespaces", None, "team-b", &set_label(false))
        .map_err(engine_error)?;
    converge(&engine, &config, &mut stats).await?;
    show(
        &engine,
        &config,
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
            Some(&config.source_namespace),
            &config.source_name,
            &json!({"data": {"color": "red", "size": "large"}}),
        )
        .map_err(engine_error)?;
    engine.compact_all();
    converge(&engine, &config, &mut stats).await?;
    show(
        &engine,
        &config,
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
    println!(
        "\nstopped cleanly: {} reconciles, {} created, {} updated, {} deleted, {} failed and retried",
        report.stats.reconciles,
        report.stats.created,
        report.stats.updated,
        report.stats.deleted,
        report.stats.retries
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
    stats: &mut tokio::sync::watch::Receiver<MirrorStats>,
) -> Result<(), BoxError> {
    let wait = async {
        loop {
            let (namespaces, config_maps) = state(engine)?;
            let left = divergences(config, &namespaces, &config_maps)?;
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

fn state(engine: &FakeApiServer) -> Result<(Vec<Namespace>, Vec<ConfigMap>), BoxError> {
    let namespaces = engine
        .objects("namespaces", None)
        .map_err(engine_error)?
        .iter()
        .map(|o| o.decode())
        .collect::<Result<Vec<Namespace>, _>>()?;
    let config_maps = engine
        .objects("configmaps", None)
        .map_err(engine_error)?
        .iter()
        .map(|o| o.decode())
        .collect::<Result<Vec<ConfigMap>, _>>()?;
    Ok((namespaces, config_maps))
}

/// Prints each namespace: whether it is selected, and its mirror's data.
fn show(engine: &FakeApiServer, config: &MirrorConfig, title: &str) -> Result<(), BoxError> {
    let (namespaces, config_maps) = state(engine)?;
    let selector = informer::LabelSelector::parse(&config.namespace_selector)?;
    println!("\n{title}");
    println!("  {:<10} {:<9} mirror", "namespace", "selected");
    for ns in &namespaces {
        let name = ns.metadata.name.as_deref().unwrap_or_default();
        let mirror = config_maps.iter().find(|cm| {
            cm.metadata.namespace.as_deref() == Some(name)
                && cm.metadata.name.as_deref() == Some(config.mirror_name.as_str())
        });
        let data = mirror.map_or_else(
            || "-".to_owned(),
            |cm| {
                cm.data
                    .iter()
                    .flatten()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        );
        let selected = if selector.matches_object(ns) {
            "yes"
        } else {
            "no"
        };
        println!("  {name:<10} {selected:<9} {data}");
    }
    Ok(())
}

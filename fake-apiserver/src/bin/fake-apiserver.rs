//! `fake-apiserver`: the fake Kubernetes API server of the `fake-apiserver` crate as a program.
//!
//! Serves Kubernetes REST + JSON (for kubectl, kube-client and any other client) and the
//! `/_fake/` admin API on `--listen`, optionally seeded with realistic objects and churning.
//! The first line on stdout is a JSON object telling where it listens:
//! `{"url":"http://127.0.0.1:40123","address":"127.0.0.1:40123","token":null,"kubeconfig":null}`.
//! Ctrl-C or SIGTERM stops it within a second in every state (heavy churn, open watches,
//! clients that stopped reading). Run with `--help` for the options and the admin API.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use fake_apiserver::http::{
    ADMIN_API_TABLE, DEFAULT_EXEC_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, FakeHttpServer, HttpConfig, served_summary,
};
use fake_apiserver::seed::{self, Churn, ChurnConfig, SeedConfig};
use fake_apiserver::{
    DEFAULT_HISTORY_MAX_BYTES, FakeApiServer, HistoryConfig, MAX_RESOURCE_VERSION, ServerConfig,
};

/// A fake Kubernetes API server with real list/watch semantics (resourceVersions, history,
/// compaction, paging, bookmarks, streaming lists) and scriptable faults.
#[derive(Debug, Parser)]
#[command(
    name = "fake-apiserver",
    version,
    after_long_help = format!("{}\n{ADMIN_API_TABLE}", served_summary()),
    after_help = "Run with --help for what is served (resources, subresources, field selectors, \
                  admission, content types) and the admin API (/_fake/) endpoint table."
)]
struct Args {
    /// Address to listen on (port 0: a free port). The first stdout line is a JSON object
    /// with the URL, address, token and kubeconfig path.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Bearer token clients must send. Without one, a loopback listener needs none and any
    /// other gets a generated token (printed on the first line).
    #[arg(long, env = "FAKE_APISERVER_TOKEN")]
    token: Option<String>,
    /// Objects to create at start, e.g. `pods=10000,configmaps=500` (realistic objects with
    /// managedFields), spread over --namespaces namespaces.
    #[arg(long, value_parser = parse_seed, value_name = "pods=N,configmaps=M")]
    seed: Option<(usize, usize)>,
    /// Number of namespaces (ns-0 .. ns-{K-1}) seeded objects and churn are spread over.
    #[arg(long, default_value_t = 1, value_name = "K")]
    namespaces: usize,
    /// Seed of the random generator for seeded objects and churn.
    #[arg(long, default_value_t = 1)]
    rng_seed: u64,
    /// Random creates, updates and deletes of pods and configmaps per second.
    #[arg(long, value_name = "RATE")]
    churn: Option<f64>,
    /// History window: events always kept per resource.
    #[arg(long, default_value_t = HistoryConfig::default().min_events)]
    history_min_events: usize,
    /// History window: at most this many events per resource.
    #[arg(long, default_value_t = HistoryConfig::default().max_events)]
    history_max_events: usize,
    /// History window: events younger than this many seconds are kept.
    #[arg(long, default_value_t = HistoryConfig::default().min_age.as_secs_f64())]
    history_min_age: f64,
    /// History bound over all resources, in bytes of the object versions the events carry:
    /// beyond it the oldest events are dropped (watchers behind them get ERROR 410).
    #[arg(long, default_value_t = DEFAULT_HISTORY_MAX_BYTES, value_name = "BYTES")]
    history_max_bytes: usize,
    /// Seconds between bookmarks to watchers that asked for them.
    #[arg(long, default_value_t = 60.0)]
    bookmark_interval: f64,
    /// The resourceVersion before the first write (at most 9223372036854775806: writes stop
    /// at 9223372036854775807 rather than wrap).
    #[arg(long, default_value_t = 0, value_parser = parse_initial_rv)]
    initial_resource_version: u64,
    /// Let clients create objects in namespaces that do not exist. By default such a create
    /// is a 404, as on a real server (whose namespace lifecycle admission refuses it). The
    /// server starts with the namespaces default, kube-system, kube-public, kube-node-lease
    /// and ns-0 .. ns-{K-1}.
    #[arg(long)]
    allow_missing_namespaces: bool,
    /// Behave like a server without the `ShardedListAndWatch` gate: ignore `shardSelector`
    /// on lists and watches (send every object, no `metadata.shardInfo` echo). By default
    /// the server honours it (KEP-5866); `PUT /_fake/sharded-list-and-watch` switches at run
    /// time.
    #[arg(long)]
    disable_sharded_list_and_watch: bool,
    /// Run no collectors: deleting an object leaves its dependents (the objects whose
    /// ownerReferences name it), `propagationPolicy` is ignored, and a deleted namespace goes
    /// at once with its content left. By default deletes cascade as a cluster's garbage
    /// collector cascades them (Background, Foreground, Orphan), and a deleted namespace
    /// terminates, its content deleted, as the namespace controller does.
    #[arg(long)]
    disable_garbage_collection: bool,
    /// Write a kubeconfig for this server (kubectl, kube-client) to this path.
    #[arg(long, value_name = "PATH")]
    kubeconfig_out: Option<PathBuf>,
    /// Default namespace of the kubeconfig's context.
    #[arg(long, value_name = "NS")]
    kubeconfig_namespace: Option<String>,
    /// Seconds a client may take to send a request head (from the connection's accept or the
    /// first byte of a later request) before its connection is closed.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT.as_secs_f64())]
    header_read_timeout: f64,
    /// Seconds a keep-alive connection may wait between requests before it is closed (never
    /// applies to an open watch).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs_f64())]
    idle_timeout: f64,
    /// Connections open at once; one beyond it is closed as soon as it is accepted.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Seconds an exec session (`kubectl exec`) may last once upgraded before its socket is
    /// closed.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_EXEC_TIMEOUT.as_secs_f64())]
    exec_timeout: f64,
}

/// The namespaces a new cluster has.
const STANDARD_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

fn parse_seed(text: &str) -> Result<(usize, usize), String> {
    let (mut pods, mut configmaps) = (0, 0);
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("expected resource=count, got {part:?}"))?;
        let n: usize = value
            .trim()
            .parse()
            .map_err(|e| format!("invalid count {value:?} for {key}: {e}"))?;
        match key.trim() {
            "pods" | "pod" | "po" => pods = n,
            "configmaps" | "configmap" | "cm" => configmaps = n,
            other => {
                return Err(format!(
                    "cannot seed {other:?} (pods and configmaps can be seeded)"
                ));
            }
        }
    }
    Ok((pods, configmaps))
}

fn parse_initial_rv(text: &str) -> Result<u64, String> {
    let rv: u64 = text.parse().map_err(|e| format!("{e}"))?;
    if rv >= MAX_RESOURCE_VERSION {
        return Err(format!(
            "must be below {MAX_RESOURCE_VERSION}, the largest resourceVersion (leave room for \
             a write)"
        ));
    }
    Ok(rv)
}

fn seconds(name: &str, s: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|e| format!("invalid --{name} {s}: {e}"))
}

/// How long, after the server has stopped, the runtime waits for blocking work (a seeding
/// request in progress) before the process exits anyway.
const RUNTIME_SHUTDOWN: Duration = Duration::from_millis(200);

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("fake-apiserver: cannot start the tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(args));
    // Dropping the runtime would wait for blocking tasks without end; a stop must be prompt.
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let mut message = format!("fake-apiserver: {e}");
            let mut source = e.source();
            while let Some(s) = source {
                message.push_str(&format!(": {s}"));
                source = s.source();
            }
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    // Listen for SIGTERM and SIGINT before anything else: one that arrives while seeding,
    // or between the ready line and the serving loop, is kept and stops the server then,
    // instead of killing the process with the default action.
    let mut signals = Signals::listen()?;
    let config = ServerConfig {
        history: HistoryConfig {
            min_events: args.history_min_events,
            max_events: args.history_max_events,
            min_age: seconds("history-min-age", args.history_min_age)?,
        },
        history_max_bytes: args.history_max_bytes,
        bookmark_interval: seconds("bookmark-interval", args.bookmark_interval)?,
        initial_resource_version: args.initial_resource_version,
        require_namespaces: !args.allow_missing_namespaces,
        sharded_list_and_watch: !args.disable_sharded_list_and_watch,
        garbage_collection: !args.disable_garbage_collection,
        seed: args.rng_seed,
        ..ServerConfig::default()
    };
    let server = FakeApiServer::with_config(config);
    let namespaces = seed::namespace_names(args.namespaces);
    // The namespaces every cluster has, and the ones seeding and churn use.
    for ns in STANDARD_NAMESPACES
        .iter()
        .map(|n| (*n).to_owned())
        .chain(namespaces.iter().cloned())
    {
        match server.create("namespaces", &seed::namespace(&ns)) {
            Ok(_) => {}
            Err(s) if s.code == 409 => {}
            Err(s) => return Err(format!("cannot create namespace {ns}: {s}").into()),
        }
    }
    if let Some((pods, configmaps)) = args.seed {
        let report = seed::seed(
            &server,
            &SeedConfig {
                namespaces: args.namespaces,
                pods,
                configmaps,
                seed: args.rng_seed,
            },
        )
        .map_err(|s| format!("seeding failed: {s}"))?;
        eprintln!(
            "fake-apiserver: seeded {} pods and {} configmaps in {} namespaces (resourceVersion {})",
            report.pods,
            report.configmaps,
            report.namespaces.len(),
            report.resource_version
        );
    }
    let http = FakeHttpServer::start(
        server.clone(),
        HttpConfig {
            listen: args.listen,
            token: args.token.clone(),
            header_read_timeout: seconds("header-read-timeout", args.header_read_timeout)?,
            idle_timeout: seconds("idle-timeout", args.idle_timeout)?,
            max_connections: args.max_connections,
            exec_timeout: seconds("exec-timeout", args.exec_timeout)?,
        },
    )
    .await?;
    if let Some(path) = &args.kubeconfig_out {
        http.write_kubeconfig(path, args.kubeconfig_namespace.as_deref())?;
    }
    let ready = serde_json::json!({
        "url": http.url(),
        "address": http.addr().to_string(),
        "token": http.token(),
        "kubeconfig": args.kubeconfig_out.as_ref().map(|p| p.display().to_string()),
    });
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{ready}")?;
        out.flush()?;
    }
    eprintln!(
        "fake-apiserver: serving {} (admin API under {}/_fake/); Ctrl-C or SIGTERM stops",
        http.url(),
        http.url()
    );
    let churn = match args.churn {
        Some(rate) if rate > 0.0 && rate.is_finite() => Some(Churn::start(
            server.clone(),
            ChurnConfig {
                rate_per_second: rate,
                seed: args.rng_seed,
                namespaces,
                ..ChurnConfig::default()
            },
        )),
        Some(rate) if rate != 0.0 => return Err(format!("invalid --churn {rate}").into()),
        _ => None,
    };
    signals.recv().await?;
    eprintln!("fake-apiserver: stopping");
    let stop = async {
        if let Some(c) = churn {
            let stats = c.stop().await;
            eprintln!(
                "fake-apiserver: churn made {} creates, {} updates, {} deletes ({} skipped)",
                stats.creates, stats.updates, stats.deletes, stats.skipped
            );
        }
        http.shutdown().await
    };
    match tokio::time::timeout(STOP_DEADLINE, stop).await {
        Ok(result) => result?,
        Err(_) => eprintln!("fake-apiserver: the server did not stop in time; exiting anyway"),
    }
    Ok(())
}

/// How long stopping (churn, then the HTTP server, whose own grace is half a second) may
/// take after a signal before the process exits anyway.
const STOP_DEADLINE: Duration = Duration::from_millis(800);

/// SIGTERM and SIGINT (Ctrl-C), listened for from the start of the process.
struct Signals {
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers: from now on the signals are caught (and kept until
    /// [`recv`](Self::recv)) instead of ending the process.
    fn listen() -> std::io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                terminate: signal(SignalKind::terminate())?,
                interrupt: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Waits for the first signal (one caught since [`listen`](Self::listen) counts).
    async fn recv(&mut self) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.terminate.recv() => {}
                _ = self.interrupt.recv() => {}
            }
            Ok(())
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_counts() {
        assert_eq!(parse_seed("pods=10,configmaps=3"), Ok((10, 3)));
        assert_eq!(parse_seed("cm=2"), Ok((0, 2)));
        assert!(parse_seed("secrets=1").is_err());
        assert!(parse_seed("pods").is_err());
        assert!(parse_seed("pods=x").is_err());
    }

    #[test]
    fn the_initial_resource_version_leaves_room_for_a_write() {
        assert_eq!(parse_initial_rv("0"), Ok(0));
        assert_eq!(
            parse_initial_rv("9223372036854775806"),
            Ok(MAX_RESOURCE_VERSION - 1)
        );
        assert!(parse_initial_rv("9223372036854775807").is_err());
        assert!(parse_initial_rv("18446744073709551615").is_err());
        assert!(parse_initial_rv("-1").is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}

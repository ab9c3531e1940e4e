//! The informer demo's program logic, shared by the example's `main` and by the integration test
//! that runs it in process (`tests/it/demo.rs`).
//!
//! A shared informer on pods with a namespace index and a `node` index, two handlers (an event
//! counter by type and a per-namespace tracker), a progress bar during the initial sync, a
//! live summary every second, and a final summary with the process's memory. `--store
//! compact` keeps the cache encoded. Pods come from the embedded fake API server
//! over HTTP (seeded, with steady churn) or from a real cluster.

#[path = "../common/mod.rs"]
pub mod common;

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use clap::Parser;
use common::parse_duration;
use fake_apiserver::FakeApiServer;
use fake_apiserver::http::{FakeHttpServer, HttpConfig};
use fake_apiserver::seed::{Churn, ChurnConfig, ChurnStats, SeedConfig, seed};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use informer::reflector::WatchListMode;
use informer::{
    CompactOptions, Error as ApiError, InformerConfig, ListOptions, ListPage, ListPageInfo,
    ListSink, ListerWatcher, NAMESPACE_INDEX, Object, ObjectOrTombstone, ResourceEventHandler,
    SharedIndexInformer, StoreChoice, WatchOptions, WatchStream,
};
use informer_kube::{
    KubeError, KubeListerWatcher, client_for_informers, drop_managed_fields, kube_config,
};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// Watch pods with a shared informer: a live view of the cache, its handlers and its
/// reflector.
///
/// Source precedence: `--fake` uses the embedded fake API server; `--cluster` or
/// `--kubeconfig PATH` use a real cluster; with neither, a real cluster is used when
/// `KUBECONFIG` is set or the in-cluster environment is present (`KUBERNETES_SERVICE_HOST`),
/// the embedded fake server otherwise.
#[derive(Debug, Clone, Parser)]
#[command(name = "informer-demo", version, about, long_about = None)]
pub struct Args {
    /// Use the embedded fake API server (seeded pods, steady churn), even if a cluster is
    /// configured.
    #[arg(long, conflicts_with_all = ["cluster", "kubeconfig"])]
    pub fake: bool,
    /// Use the cluster of the current kubeconfig context (KUBECONFIG or ~/.kube/config), or
    /// the in-cluster service account.
    #[arg(long)]
    pub cluster: bool,
    /// Use the cluster of this kubeconfig file's current context.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Watch one namespace only (default: all).
    #[arg(long, short = 'n')]
    pub namespace: Option<String>,
    /// Watch only pods matching this label selector.
    #[arg(long, short = 'l')]
    pub selector: Option<String>,
    /// Exit by itself after this long (for example 20s, 2m, 500ms), initial sync included: a
    /// server that never lets the informer sync ends the run with an error at this time;
    /// default: until Ctrl-C.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// How often the live summary is printed.
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    pub interval: Duration,
    /// Fake server: pods to seed.
    #[arg(long, default_value_t = 5_000)]
    pub pods: usize,
    /// Fake server: namespaces to spread them over.
    #[arg(long, default_value_t = 20)]
    pub namespaces: usize,
    /// Fake server: pod creates, updates and deletes per second (1:2:1).
    #[arg(long, default_value_t = 50.0)]
    pub churn: f64,
    /// How the informer lists: `auto` streams (a watch with sendInitialEvents), except that a
    /// compact cache with managedFields kept lists first (it reads listed pods from their
    /// text, which a streaming list cannot hand it); `stream` or `paginate` to choose.
    #[arg(long, value_enum, default_value_t = ListArg::Auto)]
    pub initial_list: ListArg,
    /// Keep metadata.managedFields in the cache (dropped by default).
    #[arg(long)]
    pub keep_managed_fields: bool,
    /// The cache: `indexed` keeps every pod decoded (fastest lookups); `compact` keeps each
    /// pod as compressed JSON and decodes it on access (a fraction of the memory).
    #[arg(long, value_enum, default_value_t = StoreArg::Indexed)]
    pub store: StoreArg,
    /// Print plain lines instead of a redrawing progress bar (automatic when stdout is not a
    /// terminal).
    #[arg(long)]
    pub plain: bool,
}

/// The `--initial-list` choices (`WatchListMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListArg {
    /// `WatchListMode::Auto`.
    Auto,
    /// `WatchListMode::On`.
    Stream,
    /// `WatchListMode::Off`.
    Paginate,
}

impl ListArg {
    fn mode(self) -> WatchListMode {
        match self {
            Self::Auto => WatchListMode::Auto,
            Self::Stream => WatchListMode::On,
            Self::Paginate => WatchListMode::Off,
        }
    }
}

/// The `--store` choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StoreArg {
    /// Every pod decoded, held as `Arc<Pod>` (informer-store's `IndexedStore`).
    Indexed,
    /// Every pod as compressed JSON, decoded on access (informer-store's `CompactStore`).
    Compact,
}

impl StoreArg {
    fn choice(self) -> StoreChoice<Pod> {
        match self {
            Self::Indexed => StoreChoice::Indexed,
            Self::Compact => StoreChoice::compact(CompactOptions::default()),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Indexed => "indexed",
            Self::Compact => "compact",
        }
    }
}

/// The process's resident memory, from `/proc/self/status` (Linux).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rss {
    /// `VmRSS`: resident now, in bytes.
    pub current: u64,
    /// `VmHWM`: the most resident so far, in bytes.
    pub peak: u64,
}

impl Rss {
    /// Now; `None` where `/proc/self/status` is not there or says neither.
    pub fn now() -> Option<Self> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let kib = |field: &str| -> Option<u64> {
            let line = status.lines().find(|l| l.starts_with(field))?;
            let value = line[field.len()..].trim().strip_suffix("kB")?.trim();
            value.parse::<u64>().ok().map(|k| k * 1024)
        };
        Some(Self {
            current: kib("VmRSS:")?,
            peak: kib("VmHWM:")?,
        })
    }
}

/// Bytes as MiB, for people.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// What can stop the demo.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The cluster configuration or client.
    #[error(transparent)]
    Kube(Box<KubeError>),
    /// The fake server.
    #[error("the embedded fake API server failed: {0}")]
    Fake(String),
    /// The informer.
    #[error(transparent)]
    Informer(#[from] informer::InformerError),
    /// The initial sync did not finish.
    #[error("the informer did not sync: it stopped first")]
    NotSynced,
    /// `--duration` elapsed before the initial sync finished.
    #[error(
        "the informer did not sync within --duration {after:?} ({cached} pods cached; last error: {last_error})"
    )]
    SyncTimedOut {
        /// The duration given.
        after: Duration,
        /// Pods in the cache when it gave up.
        cached: usize,
        /// The reflector's last error, or "none".
        last_error: String,
    },
}

impl From<KubeError> for DemoError {
    fn from(error: KubeError) -> Self {
        Self::Kube(Box::new(error))
    }
}

/// Counts of notifications by type.
#[derive(Debug, Default)]
pub struct EventCounts {
    pub initial_adds: AtomicU64,
    pub adds: AtomicU64,
    pub updates: AtomicU64,
    pub deletes: AtomicU64,
}

/// A snapshot of [`EventCounts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub initial_adds: u64,
    pub adds: u64,
    pub updates: u64,
    pub deletes: u64,
}

impl Counts {
    /// Live events (initial-list adds excluded).
    pub fn live(&self) -> u64 {
        self.adds + self.updates + self.deletes
    }

    fn minus(&self, earlier: &Counts) -> Counts {
        Counts {
            initial_adds: self.initial_adds - earlier.initial_adds,
            adds: self.adds - earlier.adds,
            updates: self.updates - earlier.updates,
            deletes: self.deletes - earlier.deletes,
        }
    }
}

impl EventCounts {
    fn snapshot(&self) -> Counts {
        Counts {
            initial_adds: self.initial_adds.load(Ordering::Relaxed),
            adds: self.adds.load(Ordering::Relaxed),
            updates: self.updates.load(Ordering::Relaxed),
            deletes: self.deletes.load(Ordering::Relaxed),
        }
    }
}

/// Handler 1: counts notifications by type.
struct EventCounter(Arc<EventCounts>);

impl ResourceEventHandler<Pod> for EventCounter {
    fn on_add(&mut self, _pod: &Arc<Pod>, is_in_initial_list: bool) {
        let counter = if is_in_initial_list {
            &self.0.initial_adds
        } else {
            &self.0.adds
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn on_update(&mut self, _old: &Arc<Pod>, _new: &Arc<Pod>) {
        self.0.updates.fetch_add(1, Ordering::Relaxed);
    }

    fn on_delete(&mut self, _pod: &ObjectOrTombstone<Pod>) {
        self.0.deletes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Handler 2: pods per namespace, kept from notifications alone.
struct NamespaceTracker(Arc<Mutex<HashMap<String, i64>>>);

impl NamespaceTracker {
    fn bump(&self, pod: &Pod, by: i64) {
        let ns = Object::object_namespace(pod).unwrap_or_default().to_owned();
        let mut counts = self.0.lock();
        let count = counts.entry(ns).or_default();
        *count += by;
        if *count == 0 {
            let ns = Object::object_namespace(pod).unwrap_or_default();
            counts.remove(ns);
        }
    }
}

impl ResourceEventHandler<Pod> for NamespaceTracker {
    fn on_add(&mut self, pod: &Arc<Pod>, _initial: bool) {
        self.bump(pod, 1);
    }

    fn on_update(&mut self, old: &Arc<Pod>, new: &Arc<Pod>) {
        if Object::object_namespace(old.as_ref()) != Object::object_namespace(new.as_ref()) {
            self.bump(old, -1);
            self.bump(new, 1);
        }
    }

    fn on_delete(&mut self, pod: &ObjectOrTombstone<Pod>) {
        self.bump(pod.object(), -1);
    }
}

/// Remembers how many objects the first list announced (items on its first page plus
/// `remainingItemCount`), for the progress bar; passes everything through.
struct Announcing<L> {
    inner: L,
    announced: Arc<AtomicU64>,
}

#[async_trait]
impl<L: ListerWatcher<Pod>> ListerWatcher<Pod> for Announcing<L> {
    async fn list(&self, options: &ListOptions) -> Result<ListPage<Pod>, ApiError> {
        let page = self.inner.list(options).await?;
        if options.continue_token.is_none() {
            let remaining = page.remaining_item_count.unwrap_or(0).max(0) as u64;
            self.announced
                .fetch_max(page.items.len() as u64 + remaining, Ordering::Relaxed);
        }
        Ok(page)
    }

    // Passed through so that pages are still decoded as they arrive.
    async fn list_into(
        &self,
        options: &ListOptions,
        sink: &mut dyn ListSink<Pod>,
    ) -> Result<ListPageInfo, ApiError> {
        let info = self.inner.list_into(options, sink).await?;
        if options.continue_token.is_none() {
            let remaining = info.remaining_item_count.unwrap_or(0).max(0) as u64;
            self.announced
                .fetch_max(info.items as u64 + remaining, Ordering::Relaxed);
        }
        Ok(info)
    }

    async fn watch(&self, options: &WatchOptions) -> Result<WatchStream<Pod>, ApiError> {
        self.inner.watch(options).await
    }
}

/// The embedded fake API server and its churn.
struct Fake {
    engine: FakeApiServer,
    http: FakeHttpServer,
    namespaces: Vec<String>,
    churn: Option<Churn>,
    seeded: usize,
}

impl Fake {
    /// Starts the steady churn (after the initial sync, so that the synced count is the
    /// seeded count).
    fn start_churn(&mut self, rate_per_second: f64) {
        if rate_per_second > 0.0 {
            self.churn = Some(Churn::start(
                self.engine.clone(),
                ChurnConfig {
                    rate_per_second,
                    namespaces: self.namespaces.clone(),
                    resources: vec!["pods".into()],
                    ..ChurnConfig::default()
                },
            ));
        }
    }
}

/// What a run saw, returned by [`run`] (and printed as the final summary).
#[derive(Debug, Clone)]
pub struct Summary {
    /// Where the pods came from.
    pub source: String,
    /// Pods in the cache when it synced (the initial list).
    pub synced: usize,
    /// How long the initial sync took.
    pub sync_time: Duration,
    /// Pods seeded (fake server only).
    pub seeded: Option<usize>,
    /// Pods cached at the end.
    pub cached: usize,
    /// Notifications by type over the whole run.
    pub events: Counts,
    /// How long the run lasted after the sync.
    pub watched_for: Duration,
    /// Lists, relists, watch starts, watch restarts, errors.
    pub lists: u64,
    pub relists: u64,
    pub watch_starts: u64,
    pub watch_restarts: u64,
    pub errors: u64,
    /// Whether the per-namespace tracker (handler 2) agrees with the namespace index.
    pub tracker_agrees: bool,
    /// The five namespaces with most pods (from the namespace index).
    pub top_namespaces: Vec<(String, usize)>,
    /// The churn's writes (fake server only).
    pub churn: Option<ChurnStats>,
    /// Handlers still busy at shutdown.
    pub stuck_handlers: usize,
    /// The cache (`--store`).
    pub store: StoreArg,
    /// The process's memory right after the initial sync (the embedded fake server, when
    /// used, runs in the same process and is counted too).
    pub rss_after_sync: Option<Rss>,
    /// The process's memory at the end.
    pub rss_at_exit: Option<Rss>,
}

impl Summary {
    fn rate(&self, count: u64) -> f64 {
        let secs = self.watched_for.as_secs_f64();
        if secs > 0.0 { count as f64 / secs } else { 0.0 }
    }
}

/// Runs the demo: `args` as on the command line (the program name first), until `--duration`
/// elapses or `stop` fires (the program's `main` cancels it on Ctrl-C; the demo itself never
/// listens for signals, so that running it in a test process leaves that process's SIGINT
/// alone).
pub async fn run<I, T>(args: I, stop: CancellationToken) -> Result<Summary, DemoError>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let args = match Args::try_parse_from(args) {
        Ok(args) => args,
        Err(e) => {
            // --help, --version, or a usage error: clap prints and exits as usual.
            e.exit()
        }
    };
    run_with(args, stop).await
}

/// Runs the demo with parsed arguments until `--duration` elapses or `stop` fires.
pub async fn run_with(args: Args, stop: CancellationToken) -> Result<Summary, DemoError> {
    let plain = args.plain || !std::io::stdout().is_terminal();
    let use_cluster = !args.fake
        && (args.cluster
            || args.kubeconfig.is_some()
            || std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
            || std::env::var_os("KUBERNETES_SERVICE_HOST").is_some());

    // The source of pods: a client for a cluster, or for the embedded fake server.
    let (client, mut fake, source) = if use_cluster {
        let config = kube_config(args.kubeconfig.as_deref()).await?;
        let source = format!("cluster at {}", config.cluster_url);
        (client_for_informers(config)?, None, source)
    } else {
        let fake = start_fake(&args).await?;
        let config = kube_client::Config::new(
            fake.http
                .url()
                .parse()
                .map_err(|e| DemoError::Fake(format!("bad server URL: {e}")))?,
        );
        let source = format!(
            "embedded fake API server at {} ({} pods in {} namespaces, churn {}/s)",
            fake.http.url(),
            fake.seeded,
            args.namespaces.max(1),
            args.churn
        );
        (client_for_informers(config)?, Some(fake), source)
    };
    println!("informer-demo: watching pods from the {source}");

    // The informer: pods (one namespace or all), namespace and node indices, two handlers.
    let announced = Arc::new(AtomicU64::new(0));
    let lister_watcher = match &args.namespace {
        Some(ns) => KubeListerWatcher::<Pod>::namespaced(client.clone(), ns),
        None => KubeListerWatcher::<Pod>::all(client.clone()),
    };
    let lister_watcher = Announcing {
        inner: lister_watcher,
        announced: Arc::clone(&announced),
    };
    let mut config = InformerConfig::<Pod> {
        name: "pods".into(),
        indexers: [(
            "node".to_owned(),
            Arc::new(|pod: &Pod| {
                pod.spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .into_iter()
                    .collect()
            }) as informer::IndexFunc<Pod>,
        )]
        .into(),
        store: args.store.choice(),
        ..InformerConfig::default()
    };
    // Drop managedFields right after each object is decoded, before it is shared (the
    // informer's one transform point).
    if !args.keep_managed_fields {
        config.transform = Some(drop_managed_fields());
    }
    config.list_watch.label_selector = args.selector.clone();
    config.list_watch.watch_list = args.initial_list.mode();
    let informer = SharedIndexInformer::new(Arc::new(lister_watcher), config)?;
    let counts = Arc::new(EventCounts::default());
    let per_namespace = Arc::new(Mutex::new(HashMap::new()));
    let counter = informer.add_handler_with(
        EventCounter(Arc::clone(&counts)),
        informer::HandlerOptions::named("event-counter"),
    )?;
    let tracker = informer.add_handler_with(
        NamespaceTracker(Arc::clone(&per_namespace)),
        informer::HandlerOptions::named("namespace-tracker"),
    )?;

    let cancel = CancellationToken::new();
    let task = informer.spawn(cancel.clone());
    let started = Instant::now();

    // Initial sync, with progress, bounded by --duration like the rest of the run.
    let expected = fake.as_ref().map(|f| f.seeded as u64);
    let run_deadline = args.duration.map(|d| tokio::time::Instant::now() + d);
    let synced = sync_with_progress(
        &informer,
        &[&counter, &tracker],
        expected,
        &announced,
        plain,
        &stop,
        run_deadline,
    )
    .await;
    let sync_time = started.elapsed();
    if synced != Synced::Yes {
        let stats = informer.stats();
        cancel.cancel();
        let _ = task.await;
        return Err(match (synced, args.duration) {
            (Synced::OutOfTime, Some(after)) => DemoError::SyncTimedOut {
                after,
                cached: stats.cached,
                last_error: stats
                    .reflector
                    .and_then(|r| r.last_error)
                    .map_or_else(|| "none".to_owned(), |e| e.message),
            },
            _ => DemoError::NotSynced,
        });
    }
    // Every initial-list notification has reached the handlers (the tracker's registration
    // has synced): the count of initial adds is the synced count.
    let synced_count = counts.snapshot().initial_adds as usize;
    let rss_after_sync = Rss::now();
    if let Some(fake) = fake.as_mut() {
        fake.start_churn(args.churn);
    }
    println!(
        "synced {synced_count} pods in {:.2}s (initial list, {} store{})",
        sync_time.as_secs_f64(),
        args.store.name(),
        rss_after_sync.map_or_else(String::new, |r| format!(
            ", process RSS {:.0} MiB",
            mib(r.current)
        ))
    );

    // Live summary until the duration elapses, Ctrl-C, or stop.
    let watch_start = Instant::now();
    let deadline = args
        .duration
        .map(|d| tokio::time::Instant::now() + d.saturating_sub(sync_time));
    let live = (!plain).then(|| {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar
    });
    let mut ticker = tokio::time::interval(args.interval.max(Duration::from_millis(10)));
    ticker.tick().await;
    let mut last = counts.snapshot();
    let mut last_at = Instant::now();
    loop {
        let until_deadline = async {
            match deadline {
                Some(d) => tokio::time::sleep_until(d).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = until_deadline => break,
            () = stop.cancelled() => break,
            _ = ticker.tick() => {}
        }
        let now_counts = counts.snapshot();
        let secs = last_at.elapsed().as_secs_f64().max(1e-3);
        let delta = now_counts.minus(&last);
        last = now_counts;
        last_at = Instant::now();
        let line = live_line(&informer, watch_start.elapsed(), &delta, secs);
        match &live {
            Some(bar) => {
                bar.set_message(line);
                bar.tick();
            }
            None => println!("{line}"),
        }
    }
    if let Some(bar) = live {
        bar.finish_and_clear();
    }

    // Shut down: stop churn, stop the informer (handlers drain), summarise.
    let watched_for = watch_start.elapsed();
    let churn = match fake.as_mut().and_then(|f| f.churn.take()) {
        Some(churn) => Some(churn.stop().await),
        None => None,
    };
    cancel.cancel();
    let report = match task.await {
        Ok(Ok(report)) => report,
        Ok(Err(e)) => return Err(e.into()),
        Err(e) => return Err(DemoError::Fake(format!("the informer task failed: {e}"))),
    };
    // The fake server goes only now: the informer never saw it vanish.
    drop(fake);
    // Read only now, with the informer stopped: every popped batch has reached both the
    // cache and the handlers (a batch in flight at the stop would otherwise be in one and not
    // yet in the other).
    let stats = informer.stats();
    let lister = informer.lister();
    let mut by_namespace: Vec<(String, usize)> = lister
        .list_index_func_values(NAMESPACE_INDEX)
        .unwrap_or_default()
        .into_iter()
        .map(|ns| {
            let n = lister
                .index_keys(NAMESPACE_INDEX, &ns)
                .map_or(0, |k| k.len());
            (ns, n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    // After shutdown every handler has drained: the tracker's view is final.
    let tracked: BTreeMap<String, usize> = per_namespace
        .lock()
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(ns, n)| (ns.clone(), usize::try_from(*n).unwrap_or_default()))
        .collect();
    let indexed: BTreeMap<String, usize> = by_namespace.iter().cloned().collect();
    by_namespace.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    by_namespace.truncate(5);
    let reflector = stats.reflector.clone();
    let summary = Summary {
        source,
        synced: synced_count,
        sync_time,
        seeded: expected.map(|n| n as usize),
        cached: stats.cached,
        events: counts.snapshot(),
        watched_for,
        lists: reflector.as_ref().map_or(0, |r| r.counters.lists),
        relists: reflector.as_ref().map_or(0, |r| r.counters.relists),
        watch_starts: reflector.as_ref().map_or(0, |r| r.counters.watch_starts),
        watch_restarts: reflector
            .as_ref()
            .map_or(0, |r| r.counters.watch_restarts.total()),
        errors: reflector.as_ref().map_or(0, |r| r.errors),
        tracker_agrees: tracked == indexed,
        top_namespaces: by_namespace,
        churn,
        stuck_handlers: report.stuck.len(),
        store: args.store,
        rss_after_sync,
        rss_at_exit: Rss::now(),
    };
    print_summary(&summary);
    Ok(summary)
}

async fn start_fake(args: &Args) -> Result<Fake, DemoError> {
    let engine = FakeApiServer::new();
    let report = seed(
        &engine,
        &SeedConfig {
            namespaces: args.namespaces.max(1),
            pods: args.pods,
            ..SeedConfig::default()
        },
    )
    .map_err(|s| DemoError::Fake(format!("seeding failed: {s}")))?;
    let http = FakeHttpServer::start(engine.clone(), HttpConfig::default())
        .await
        .map_err(|e| DemoError::Fake(e.to_string()))?;
    Ok(Fake {
        engine,
        http,
        namespaces: report.namespaces,
        churn: None,
        seeded: report.pods,
    })
}

/// How the wait for the initial sync ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Synced {
    Yes,
    /// Stopped (the stop token, fired by Ctrl-C in the program, or the informer stopped).
    Stopped,
    /// The run's deadline (`--duration`) came first.
    OutOfTime,
}

/// Waits for the informer and the handlers to sync, showing progress, until `deadline` at
/// the latest.
async fn sync_with_progress(
    informer: &SharedIndexInformer<Pod>,
    registrations: &[&informer::Registration],
    expected: Option<u64>,
    announced: &AtomicU64,
    plain: bool,
    stop: &CancellationToken,
    deadline: Option<tokio::time::Instant>,
) -> Synced {
    let total = || expected.or_else(|| Some(announced.load(Ordering::Relaxed)).filter(|n| *n > 0));
    let bar = (!plain).then(|| {
        let bar = ProgressBar::with_draw_target(total(), ProgressDrawTarget::stdout());
        let style = ProgressStyle::with_template(
            "initial sync {bar:40.cyan/blue} {pos}/{len} pods cached ({per_sec}) {elapsed}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar
    });
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut plain_tick = tokio::time::interval(Duration::from_secs(1));
    plain_tick.tick().await;
    let out_of_time = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(out_of_time);
    let synced = loop {
        tokio::select! {
            () = stop.cancelled() => break Synced::Stopped,
            () = &mut out_of_time => break Synced::OutOfTime,
            _ = tick.tick() => {}
            _ = plain_tick.tick(), if plain => {
                let cached = informer.stats().cached;
                match total() {
                    Some(t) => println!("initial sync: {cached}/{t} pods cached"),
                    None => println!("initial sync: {cached} pods cached"),
                }
            }
        }
        let cached = informer.stats().cached as u64;
        if let Some(bar) = &bar {
            if bar.length().is_none()
                && let Some(t) = total()
            {
                bar.set_length(t);
            }
            bar.set_position(cached);
        }
        if informer.has_synced() && registrations.iter().all(|r| r.has_synced()) {
            break Synced::Yes;
        }
        if informer.is_stopped() {
            break Synced::Stopped;
        }
    };
    if let Some(bar) = bar {
        bar.set_position(informer.stats().cached as u64);
        bar.finish();
    }
    synced
}

/// One live summary line.
fn live_line(
    informer: &SharedIndexInformer<Pod>,
    at: Duration,
    delta: &Counts,
    secs: f64,
) -> String {
    let stats = informer.stats();
    let reader = informer.lister();
    let mut top: Vec<(String, usize)> = reader
        .list_index_func_values(NAMESPACE_INDEX)
        .unwrap_or_default()
        .into_iter()
        .map(|ns| {
            let n = reader
                .index_keys(NAMESPACE_INDEX, &ns)
                .map_or(0, |k| k.len());
            (ns, n)
        })
        .collect();
    top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let top: Vec<String> = top
        .iter()
        .take(3)
        .map(|(ns, n)| format!("{ns} {n}"))
        .collect();
    let (relists, restarts) = stats.reflector.as_ref().map_or((0, 0), |r| {
        (r.counters.relists, r.counters.watch_restarts.total())
    });
    format!(
        "[{:>6.1}s] cached {} | events/s add {:.1} update {:.1} delete {:.1} | relists {} | watch restarts {} | top namespaces: {}",
        at.as_secs_f64(),
        stats.cached,
        delta.adds as f64 / secs,
        delta.updates as f64 / secs,
        delta.deletes as f64 / secs,
        relists,
        restarts,
        top.join(", ")
    )
}

fn print_summary(s: &Summary) {
    let e = &s.events;
    println!("final summary ({}):", s.source);
    match s.seeded {
        Some(seeded) => println!(
            "  synced: {} pods in {:.2}s (seeded {seeded})",
            s.synced,
            s.sync_time.as_secs_f64()
        ),
        None => println!(
            "  synced: {} pods in {:.2}s",
            s.synced,
            s.sync_time.as_secs_f64()
        ),
    }
    println!("  cached at exit: {} pods", s.cached);
    println!(
        "  event rates over {:.1}s: add {:.1}/s, update {:.1}/s, delete {:.1}/s, total {:.1}/s ({} live events, {} initial adds)",
        s.watched_for.as_secs_f64(),
        s.rate(e.adds),
        s.rate(e.updates),
        s.rate(e.deletes),
        s.rate(e.live()),
        e.live(),
        e.initial_adds
    );
    let top: Vec<String> = s
        .top_namespaces
        .iter()
        .map(|(ns, n)| format!("{ns} {n}"))
        .collect();
    println!("  top namespaces (namespace index): {}", top.join(", "));
    println!(
        "  namespace tracker handler agrees with the index: {}",
        if s.tracker_agrees { "yes" } else { "no" }
    );
    println!(
        "  reflector: {} lists, {} relists, {} watch starts, {} watch restarts, {} errors",
        s.lists, s.relists, s.watch_starts, s.watch_restarts, s.errors
    );
    if let Some(c) = &s.churn {
        println!(
            "  fake server churn: {} creates, {} updates, {} deletes",
            c.creates, c.updates, c.deletes
        );
    }
    println!("  handlers stuck at shutdown: {}", s.stuck_handlers);
    let rss = |r: Option<Rss>| match r {
        Some(r) => format!("{:.0} MiB (peak {:.0} MiB)", mib(r.current), mib(r.peak)),
        None => "unknown".to_owned(),
    };
    println!(
        "  cache: {} store; process RSS after sync {}, at exit {}{}",
        s.store.name(),
        rss(s.rss_after_sync),
        rss(s.rss_at_exit),
        if s.seeded.is_some() {
            " (the embedded fake server runs in this process and is counted too)"
        } else {
            ""
        }
    );
}

//! The orchestrator: for each size, a seeded fake API server, then for each contender two
//! fresh processes: a **memory run** (cold sync, resident memory after sync, forced relist
//! with its peak) and a **watch run** (cold sync again, steady stamped writes with their
//! latencies, a backlog drained at full speed, lookups).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::contender::ContenderKind;
use crate::error::HarnessError;
use crate::process::ContenderProcess;
use crate::procfs::{self, RssSampler};
use crate::protocol::{ColdLookups, Command, LookupTiming, Report};
use crate::server::{Admin, ServerProcess};
use crate::stats::{Summary, median};
use crate::writer::Writer;

/// The page size every contender lists with.
pub const PAGE_SIZE: u32 = 500;

/// Where the fake API server comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerSource {
    /// A fresh `fake-apiserver` process per size, from this executable.
    Spawn(PathBuf),
    /// An empty server already running at this URL (one size only: seeding adds to it).
    External(String),
}

/// What to run.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteConfig {
    /// Pod counts, one server each.
    pub sizes: Vec<usize>,
    /// Namespaces the pods are spread over.
    pub namespaces: usize,
    /// Who is measured, in this order.
    pub contenders: Vec<ContenderKind>,
    /// Writes per second of the steady phase.
    pub steady_rate: f64,
    /// Length of the steady phase.
    pub steady_seconds: f64,
    /// Writes queued while a contender is held (SIGSTOP), then drained.
    pub burst: u64,
    /// Minimum duration of each lookup timing loop.
    pub lookup_seconds: f64,
    /// `namespace/name` keys looked up (evenly spaced over the sorted pods).
    pub lookup_keys: usize,
    /// Pause between sync and the memory read (and after the relist).
    pub settle: Duration,
    /// Longest wait for a sync, a relist or a backlog.
    pub phase_timeout: Duration,
    /// The `bench-contender` executable.
    pub contender_exe: PathBuf,
    /// The server.
    pub server: ServerSource,
}

impl SuiteConfig {
    /// The full benchmark: 10k and 100k pods over 100 namespaces.
    pub fn full(contender_exe: PathBuf, server: ServerSource) -> Self {
        Self {
            sizes: vec![10_000, 100_000],
            namespaces: 100,
            contenders: ContenderKind::ALL.to_vec(),
            steady_rate: 1_000.0,
            steady_seconds: 10.0,
            burst: 20_000,
            lookup_seconds: 1.0,
            lookup_keys: 1_000,
            settle: Duration::from_secs(2),
            phase_timeout: Duration::from_secs(900),
            contender_exe,
            server,
        }
    }

    /// A small version (2k pods, short phases) that runs in about a minute.
    pub fn quick(contender_exe: PathBuf, server: ServerSource) -> Self {
        Self {
            sizes: vec![2_000],
            steady_rate: 500.0,
            steady_seconds: 2.0,
            burst: 2_000,
            lookup_seconds: 0.2,
            settle: Duration::from_millis(500),
            phase_timeout: Duration::from_secs(120),
            ..Self::full(contender_exe, server)
        }
    }

    /// Writes in the steady phase.
    pub fn steady_writes(&self) -> u64 {
        (self.steady_rate * self.steady_seconds).round() as u64
    }
}

/// Everything measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResults {
    /// The settings measured with.
    pub settings: Settings,
    /// One entry per size.
    pub sizes: Vec<SizeResults>,
}

/// The settings of a run, for the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Namespaces.
    pub namespaces: usize,
    /// Page size.
    pub page_size: u32,
    /// Steady writes per second.
    pub steady_rate: f64,
    /// Steady phase length.
    pub steady_seconds: f64,
    /// Backlog size.
    pub burst: u64,
    /// Lookup loop length.
    pub lookup_seconds: f64,
    /// Keys looked up.
    pub lookup_keys: usize,
    /// Settle pause, seconds.
    pub settle_seconds: f64,
}

/// The results at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeResults {
    /// Pods on the server.
    pub pods: usize,
    /// Seconds the server took to seed them.
    pub seed_seconds: f64,
    /// The server's resident memory after seeding (when it is our child).
    pub server_rss: Option<u64>,
    /// One entry per contender.
    pub contenders: Vec<ContenderResult>,
}

impl SizeResults {
    /// The result of `kind`, if it ran.
    pub fn of(&self, kind: ContenderKind) -> Option<&ContenderResult> {
        self.contenders.iter().find(|c| c.kind == kind)
    }
}

/// The results of one contender at one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContenderResult {
    /// Who.
    pub kind: ContenderKind,
    /// Resident memory before it started (runtime and client built).
    pub rss_idle: u64,
    /// Cold sync times, one per process.
    pub sync_seconds: Vec<f64>,
    /// Peak resident memory at sync, one per process.
    pub sync_peak: Vec<u64>,
    /// Resident memory after sync and a settle pause, one per process.
    pub rss_after_sync: Vec<u64>,
    /// The forced relist.
    pub relist: RelistResult,
    /// The steady phase.
    pub steady: WatchResult,
    /// The backlog drain.
    pub burst: WatchResult,
    /// Lookups (contenders with a cache).
    pub lookups: Option<LookupsResult>,
}

impl ContenderResult {
    /// The median cold sync time.
    pub fn sync(&self) -> f64 {
        median(&self.sync_seconds).unwrap_or(f64::NAN)
    }

    /// The median resident memory after sync.
    pub fn rss(&self) -> f64 {
        let v: Vec<f64> = self.rss_after_sync.iter().map(|b| *b as f64).collect();
        median(&v).unwrap_or(f64::NAN)
    }

    /// The median peak during sync.
    pub fn sync_peak(&self) -> f64 {
        let v: Vec<f64> = self.sync_peak.iter().map(|b| *b as f64).collect();
        median(&v).unwrap_or(f64::NAN)
    }
}

/// A forced relist.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelistResult {
    /// Resident memory after sync in the same process, just before the relist.
    pub rss_before: u64,
    /// Peak resident memory from the trigger to the relist applied.
    pub peak: u64,
    /// Whether `VmHWM` could be reset before the trigger (else the peak is sampled only).
    pub peak_from_hwm: bool,
    /// From the trigger (write, compaction, dropped watches) to the relist applied.
    pub seconds: f64,
    /// Resident memory after the relist and a settle pause.
    pub rss_after: u64,
    /// List requests of pods the server logged.
    pub list_requests: usize,
    /// Streaming-list watch requests the server logged.
    pub streaming_requests: usize,
}

/// A phase of stamped writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchResult {
    /// Writes per second asked for (`None`: as fast as possible, contender held).
    pub offered_rate: Option<f64>,
    /// Writes the server accepted.
    pub written: u64,
    /// Accepted writes per second.
    pub write_rate: f64,
    /// Stamped events the contender's handler saw.
    pub received: u64,
    /// From the first to the last of them, seconds.
    pub span_seconds: f64,
    /// Write-to-handler latencies, microseconds.
    pub latency_micros: Summary,
    /// CPU time the contender used in the phase, seconds.
    pub cpu_seconds: f64,
}

impl WatchResult {
    /// Events applied per second: received over the span from first to last.
    pub fn applied_rate(&self) -> f64 {
        if self.span_seconds > 0.0 {
            self.received.saturating_sub(1) as f64 / self.span_seconds
        } else {
            0.0
        }
    }

    /// CPU microseconds per event received.
    pub fn cpu_micros_per_event(&self) -> f64 {
        if self.received > 0 {
            self.cpu_seconds * 1e6 / self.received as f64
        } else {
            f64::NAN
        }
    }
}

/// Lookup timings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LookupsResult {
    /// The pods of one namespace.
    pub namespace: LookupTiming,
    /// One pod by key.
    pub get: LookupTiming,
    /// Cold lookups, one by one (absent in results from before they were measured).
    #[serde(default)]
    pub cold: Option<ColdLookups>,
}

/// Runs the suite; `log` hears progress lines.
pub fn run(config: &SuiteConfig, log: &mut dyn FnMut(&str)) -> Result<SuiteResults, HarnessError> {
    if matches!(config.server, ServerSource::External(_)) && config.sizes.len() > 1 {
        return Err(HarnessError::Check(
            "an external server takes one size only (seeding adds to it)".into(),
        ));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| HarnessError::io("building the orchestrator's runtime", e))?;
    // kube-client spawns its connection task when a client is built.
    let _entered = runtime.enter();
    let mut sizes = Vec::new();
    for &pods in &config.sizes {
        sizes.push(run_size(config, &runtime, pods, log)?);
    }
    Ok(SuiteResults {
        settings: Settings {
            namespaces: config.namespaces,
            page_size: PAGE_SIZE,
            steady_rate: config.steady_rate,
            steady_seconds: config.steady_seconds,
            burst: config.burst,
            lookup_seconds: config.lookup_seconds,
            lookup_keys: config.lookup_keys,
            settle_seconds: config.settle.as_secs_f64(),
        },
        sizes,
    })
}

/// One size: the server and its data, shared by the contenders' runs.
struct Bench<'a> {
    config: &'a SuiteConfig,
    runtime: &'a tokio::runtime::Runtime,
    url: String,
    admin: Admin,
    writer: Writer,
    pods: usize,
    namespaces: Vec<String>,
    lookup_keys: Vec<String>,
    cold_keys: Vec<String>,
    relists: usize,
}

fn run_size(
    config: &SuiteConfig,
    runtime: &tokio::runtime::Runtime,
    pods: usize,
    log: &mut dyn FnMut(&str),
) -> Result<SizeResults, HarnessError> {
    let (server, url) = match &config.server {
        ServerSource::Spawn(exe) => {
            let server = ServerProcess::spawn(exe)?;
            let url = server.url().to_owned();
            (Some(server), url)
        }
        ServerSource::External(url) => (None, url.clone()),
    };
    log(&format!(
        "[{pods} pods] server at {url}: seeding {pods} pods over {} namespaces",
        config.namespaces
    ));
    let admin = Admin::new(&url)?;
    let started = Instant::now();
    runtime.block_on(admin.seed(config.namespaces, pods))?;
    let seed_seconds = started.elapsed().as_secs_f64();
    runtime.block_on(admin.set_bookmark_interval(1_000_000.0))?;
    let keys = runtime.block_on(admin.pod_keys())?;
    if keys.len() != pods {
        return Err(HarnessError::Check(format!(
            "the server holds {} pods after seeding {pods} (an external server must start empty)",
            keys.len()
        )));
    }
    let server_rss = match &server {
        Some(s) => Some(procfs::memory(s.pid())?.rss),
        None => None,
    };
    let mut namespaces: Vec<String> = keys.iter().map(|(ns, _)| ns.clone()).collect();
    namespaces.dedup();
    let step = (keys.len() / config.lookup_keys.max(1)).max(1);
    let lookup_keys: Vec<String> = keys
        .iter()
        .step_by(step)
        .take(config.lookup_keys)
        .map(|(ns, name)| format!("{ns}/{name}"))
        .collect();
    let cold_keys = cold_keys(&keys, config);
    // Stamp every pod the phases will touch once, so that every contender lists the same
    // objects (the first one would otherwise see them without the stamps).
    let mut writer = Writer::new(admin.client().clone(), keys);
    let touched = (config.steady_writes() + config.burst).min(pods as u64);
    let warm = runtime.block_on(writer.write(touched, None))?;
    if warm.failed > 0 {
        return Err(HarnessError::Check(format!(
            "{} of {touched} warm-up writes failed",
            warm.failed
        )));
    }
    runtime.block_on(admin.warm_lists())?;
    log(&format!(
        "[{pods} pods] seeded in {seed_seconds:.1} s; warm-up: {touched} writes at {:.0}/s, \
         a full list in one answer and in pages",
        warm.rate()
    ));
    let mut bench = Bench {
        config,
        runtime,
        url,
        admin,
        writer,
        pods,
        namespaces,
        lookup_keys,
        cold_keys,
        relists: 0,
    };
    let mut contenders = Vec::new();
    for &kind in &config.contenders {
        contenders.push(bench.contender(kind, log)?);
    }
    drop(server);
    Ok(SizeResults {
        pods,
        seed_seconds,
        server_rss,
        contenders,
    })
}

/// Keys looked up cold, each once.
pub const COLD_KEYS: usize = 2_000;

/// Keys written last by the watch run (those a compact store's cache of decoded objects may
/// still hold) that the cold lookups leave out: four times the compact store's default cache.
const RECENTLY_WRITTEN: usize = 4_096;

/// The keys looked up cold: [`COLD_KEYS`] pods spread evenly over those the watch run's
/// stamped writes leave alone (the writer goes through the pods in order from the first,
/// `steady + burst` writes), else over those it did not write last; never a key of the hot
/// loops (which run after).
fn cold_keys(keys: &[(String, String)], config: &SuiteConfig) -> Vec<String> {
    let writes = usize::try_from(config.steady_writes() + config.burst).unwrap_or(usize::MAX);
    let pods = keys.len();
    if pods == 0 {
        return Vec::new();
    }
    let recent: std::collections::HashSet<usize> = (0..writes.min(RECENTLY_WRITTEN))
        .map(|back| (writes - 1 - back) % pods)
        .collect();
    let untouched: Vec<usize> = (writes.min(pods)..pods).collect();
    let candidates: Vec<usize> = if untouched.len() >= COLD_KEYS {
        untouched
    } else {
        (0..pods).filter(|i| !recent.contains(i)).collect()
    };
    let step = (candidates.len() / COLD_KEYS).max(1);
    let hot_step = (pods / config.lookup_keys.max(1)).max(1);
    candidates
        .iter()
        .step_by(step)
        // The hot keys are every `hot_step`th pod from the first.
        .filter(|i| *i % hot_step != 0)
        .take(COLD_KEYS)
        .map(|&i| format!("{}/{}", keys[i].0, keys[i].1))
        .collect()
}

/// Memory warmed per pod before each run: above what the largest contender holds after sync
/// with full pods (about 50 KiB each).
const WARM_BYTES_PER_POD: usize = 64 << 10;

/// Writes every page of a `bytes`-long buffer, then frees it (see `Bench::spawn`). At most
/// half of the memory the kernel says is available is used.
fn warm_memory(bytes: usize) {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| procfs::status_field(&m, "MemAvailable:"))
        .and_then(|b| usize::try_from(b).ok())
        .unwrap_or(0);
    let bytes = bytes.min(available / 2);
    let mut buffer: Vec<u8> = Vec::new();
    if buffer.try_reserve_exact(bytes).is_ok() {
        buffer.resize(bytes, 1);
        std::hint::black_box(&buffer);
    }
}

fn seconds(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

impl Bench<'_> {
    /// Starts a contender process, after warming the memory it is about to use.
    ///
    /// On a virtual machine the first use of guest memory that the guest has not touched
    /// lately (or has handed back to the host) costs a host-side page fault on top of the
    /// guest's own, several times the price of a warm one. Which contender meets such memory
    /// then depends on the order of the runs, not on the contender: a 100k-pod cold sync
    /// measured 20–23 s right after a small process and 10–13 s right after a large one.
    /// Touching and freeing as much memory as a full cache of this size needs, before every
    /// run, gives every contender the same warm start (and costs nothing on real hardware
    /// beyond the touch itself).
    fn spawn(&self, kind: ContenderKind) -> Result<ContenderProcess, HarnessError> {
        warm_memory(self.pods.saturating_mul(WARM_BYTES_PER_POD));
        ContenderProcess::spawn(&self.config.contender_exe, kind, &self.url)
    }

    /// Starts the contender and waits for its sync; (seconds, peak during sync, RSS after
    /// the settle pause).
    fn sync(&self, p: &mut ContenderProcess) -> Result<(f64, u64, u64), HarnessError> {
        let (seconds, objects) = match p.ask(&Command::Start, self.config.phase_timeout)? {
            Report::Synced { seconds, objects } => (seconds, objects),
            other => return Err(p.unexpected("the sync", &other)),
        };
        if objects != self.pods {
            return Err(HarnessError::Check(format!(
                "{} synced {objects} of {} pods",
                p.kind(),
                self.pods
            )));
        }
        let peak = p.memory()?.peak;
        std::thread::sleep(self.config.settle);
        Ok((seconds, peak, p.memory()?.rss))
    }

    fn contender(
        &mut self,
        kind: ContenderKind,
        log: &mut dyn FnMut(&str),
    ) -> Result<ContenderResult, HarnessError> {
        let pods = self.pods;
        // The memory run.
        let mut p = self.spawn(kind)?;
        let rss_idle = p.memory()?.rss;
        let (sync_a, peak_a, rss_a) = self.sync(&mut p)?;
        log(&format!(
            "[{pods} pods] {kind}: synced in {sync_a:.2} s, RSS {} MiB (peak {} MiB)",
            rss_a >> 20,
            peak_a >> 20
        ));
        let relist = self.relist(&mut p, rss_a)?;
        log(&format!(
            "[{pods} pods] {kind}: relist in {:.2} s, peak {} MiB, {} list + {} streaming requests",
            relist.seconds,
            relist.peak >> 20,
            relist.list_requests,
            relist.streaming_requests
        ));
        p.quit(Duration::from_secs(30))?;

        // The watch run.
        let mut p = self.spawn(kind)?;
        let (sync_b, peak_b, rss_b) = self.sync(&mut p)?;
        self.writer.rewind();
        let steady = self.stamped(
            &mut p,
            self.config.steady_writes(),
            Some(self.config.steady_rate),
        )?;
        log(&format!(
            "[{pods} pods] {kind}: synced in {sync_b:.2} s; steady {:.0} writes/s → {} events, p50 {:.0} µs, p99 {:.0} µs",
            steady.write_rate,
            steady.received,
            steady.latency_micros.p50,
            steady.latency_micros.p99
        ));
        let burst = self.stamped(&mut p, self.config.burst, None)?;
        log(&format!(
            "[{pods} pods] {kind}: backlog of {} drained at {:.0} events/s",
            burst.received,
            burst.applied_rate()
        ));
        let lookups = if kind.has_cache() {
            Some(self.lookups(&mut p)?)
        } else {
            None
        };
        p.quit(Duration::from_secs(30))?;
        Ok(ContenderResult {
            kind,
            rss_idle,
            sync_seconds: vec![sync_a, sync_b],
            sync_peak: vec![peak_a, peak_b],
            rss_after_sync: vec![rss_a, rss_b],
            relist,
            steady,
            burst,
            lookups,
        })
    }

    /// Forces a relist: a write elsewhere moves the resourceVersion past the contender's,
    /// a compaction drops the history, and the pod watches are ended, so the re-watch gets
    /// 410 and the contender lists again.
    fn relist(
        &mut self,
        p: &mut ContenderProcess,
        rss_before: u64,
    ) -> Result<RelistResult, HarnessError> {
        let timeout = self.config.phase_timeout;
        self.runtime.block_on(self.admin.take_requests())?;
        match p.ask(
            &Command::ArmRelist {
                timeout_seconds: timeout.as_secs_f64(),
            },
            Duration::from_secs(30),
        )? {
            Report::Armed => {}
            other => return Err(p.unexpected("arming the relist", &other)),
        }
        let peak_from_hwm = procfs::reset_peak(p.pid()).is_ok();
        let sampler = RssSampler::start(p.pid(), Duration::from_millis(5));
        let started = Instant::now();
        self.relists += 1;
        let name = format!("bench-relist-{}", self.relists);
        let namespace = self
            .namespaces
            .first()
            .cloned()
            .unwrap_or_else(|| "default".into());
        let dropped = self.runtime.block_on(async {
            self.admin.create_config_map(&namespace, &name).await?;
            self.admin.compact().await?;
            self.admin.drop_watches("pods").await
        })?;
        if dropped == 0 {
            return Err(HarnessError::Check(format!(
                "{} had no open pod watch to drop",
                p.kind()
            )));
        }
        let (objects, expired_seen) = match p.next(timeout + Duration::from_secs(5))? {
            Report::Relisted {
                objects,
                expired_seen,
                ..
            } => (objects, expired_seen),
            other => return Err(p.unexpected("the relist", &other)),
        };
        let seconds = started.elapsed().as_secs_f64();
        let sampled = sampler.finish();
        let memory = p.memory()?;
        let peak = if peak_from_hwm {
            memory.peak.max(sampled)
        } else {
            sampled
        };
        let requests = self.runtime.block_on(self.admin.take_requests())?;
        let pods_path = "/api/v1/pods";
        let list_requests = requests
            .iter()
            .filter(|r| r.path == pods_path && r.is_list())
            .count();
        let streaming_requests = requests
            .iter()
            .filter(|r| r.path == pods_path && r.is_streaming_list())
            .count();
        if list_requests + streaming_requests == 0 {
            return Err(HarnessError::Check(format!(
                "{} reported a relist the server never saw",
                p.kind()
            )));
        }
        if !expired_seen {
            return Err(HarnessError::Check(format!(
                "{} relisted without a 410",
                p.kind()
            )));
        }
        if objects != self.pods {
            return Err(HarnessError::Check(format!(
                "{} holds {objects} of {} pods after the relist",
                p.kind(),
                self.pods
            )));
        }
        std::thread::sleep(self.config.settle);
        Ok(RelistResult {
            rss_before,
            peak,
            peak_from_hwm,
            seconds,
            rss_after: p.memory()?.rss,
            list_requests,
            streaming_requests,
        })
    }

    /// `count` stamped writes at `rate` (or, with `None`, as fast as possible while the
    /// contender is held with SIGSTOP, then released to drain them).
    fn stamped(
        &mut self,
        p: &mut ContenderProcess,
        count: u64,
        rate: Option<f64>,
    ) -> Result<WatchResult, HarnessError> {
        let write_seconds = rate.map_or(0.0, |r| count as f64 / r);
        let timeout = self.config.phase_timeout + seconds(write_seconds);
        let from_seq = self.writer.next_seq();
        match p.ask(
            &Command::Expect {
                from_seq,
                count,
                timeout_seconds: timeout.as_secs_f64(),
            },
            Duration::from_secs(30),
        )? {
            Report::Expecting => {}
            other => return Err(p.unexpected("arming the recorder", &other)),
        }
        let cpu_before = p.cpu_time()?;
        let writes = if rate.is_none() {
            p.signal("STOP")?;
            let writes = self.runtime.block_on(self.writer.write(count, None));
            p.signal("CONT")?;
            writes?
        } else {
            self.runtime.block_on(self.writer.write(count, rate))?
        };
        let report = p.next(timeout + Duration::from_secs(30))?;
        let cpu_seconds = (p.cpu_time()?.saturating_sub(cpu_before)).as_secs_f64();
        match report {
            Report::Received {
                received,
                first_unix_nanos,
                last_unix_nanos,
                latency_micros,
                ..
            } => Ok(WatchResult {
                offered_rate: rate,
                written: writes.written,
                write_rate: writes.rate(),
                received,
                span_seconds: last_unix_nanos.saturating_sub(first_unix_nanos) as f64 / 1e9,
                latency_micros,
                cpu_seconds,
            }),
            other => Err(p.unexpected("the stamped events", &other)),
        }
    }

    fn lookups(&self, p: &mut ContenderProcess) -> Result<LookupsResult, HarnessError> {
        let command = Command::Lookups {
            namespaces: self.namespaces.clone(),
            keys: self.lookup_keys.clone(),
            cold_keys: self.cold_keys.clone(),
            min_seconds: self.config.lookup_seconds,
        };
        match p.ask(&command, self.config.phase_timeout)? {
            Report::Lookups {
                namespace,
                get,
                cold,
            } => {
                if namespace.found_per_pass != self.pods as u64
                    || get.found_per_pass != self.lookup_keys.len() as u64
                {
                    return Err(HarnessError::Check(format!(
                        "{} found {} pods over all namespaces (of {}) and {} keys (of {})",
                        p.kind(),
                        namespace.found_per_pass,
                        self.pods,
                        get.found_per_pass,
                        self.lookup_keys.len()
                    )));
                }
                Ok(LookupsResult {
                    namespace,
                    get,
                    cold,
                })
            }
            other => Err(p.unexpected("the lookups", &other)),
        }
    }
}

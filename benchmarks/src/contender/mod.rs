//! The contenders, and the loop that serves the orchestrator's [`Command`]s in a contender
//! process (the `bench-contender` binary).
//!
//! Every contender runs under the same conditions: a tokio multi-thread runtime with two
//! workers, the system allocator, and a kube-client [`Client`] built by
//! [`client_for_informers`](informer_kube::client_for_informers) (kube-client's own retry
//! layer off; nothing in the benchmark answers 429/503/504, so the layer would only add its
//! per-request overhead, which is then the same for everyone). Each sees the same pods of
//! the same server with the same page size (500).

mod floor;
mod informer;
mod kube_runtime;

use std::collections::BTreeMap;
use std::fmt;
use std::hint::black_box;
use std::io::Write as _;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use ::informer::{CompactOptions, StoreKind};
use kube_client::Client;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncBufReadExt as _;
use tokio::sync::Notify;

use crate::protocol::{
    ColdLookups, Command, LookupTiming, Report, SEQ_ANNOTATION, WRITTEN_AT_ANNOTATION,
};
use crate::stats::Summary;

/// Who is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum ContenderKind {
    /// informer-rs: a shared informer from `KubeInformerFactory` with its defaults (DeltaFifo,
    /// indexed store with the namespace index, first list at `resourceVersion=0`), one
    /// handler.
    Informer,
    /// The same, with `metadata.managedFields` dropped as each object is decoded
    /// (`KubeInformerFactory::set_drop_managed_fields`).
    InformerDropManagedFields,
    /// The same factory with the compact store (`set_store(StoreKind::Compact(..))`, default
    /// options): full objects, kept as compressed JSON and decoded on access.
    InformerCompact,
    /// kube-runtime 5: `reflector(store, watcher(api, Config::default()).default_backoff())`,
    /// the stream consumed by one task.
    KubeRuntime,
    /// The same with `watcher::Config::default().streaming_lists()`.
    KubeRuntimeStreaming,
    /// No cache: `Api::list` pages (limit 500) and `Api::watch` events decoded into `Pod`s by
    /// kube-client and dropped; relists after a 410. The least any cache can cost.
    Floor,
}

impl ContenderKind {
    /// Every contender, in table order.
    pub const ALL: [Self; 6] = [
        Self::Informer,
        Self::InformerDropManagedFields,
        Self::InformerCompact,
        Self::KubeRuntime,
        Self::KubeRuntimeStreaming,
        Self::Floor,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Informer => "informer",
            Self::InformerDropManagedFields => "informer-drop-managed-fields",
            Self::InformerCompact => "informer-compact",
            Self::KubeRuntime => "kube-runtime",
            Self::KubeRuntimeStreaming => "kube-runtime-streaming",
            Self::Floor => "floor",
        }
    }

    /// The label in tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::Informer => "informer-rs (default)",
            Self::InformerDropManagedFields => {
                "informer-rs, managedFields dropped at decode (extra)"
            }
            Self::InformerCompact => "informer-rs, compact store (full objects)",
            Self::KubeRuntime => "kube-runtime 5 (default)",
            Self::KubeRuntimeStreaming => "kube-runtime 5, streaming lists",
            Self::Floor => "floor: kube-client list/watch, no cache",
        }
    }

    /// Whether it keeps a cache (and so takes part in lookups).
    pub fn has_cache(self) -> bool {
        !matches!(self, Self::Floor)
    }
}

impl fmt::Display for ContenderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ContenderKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|k| k.name()).collect();
                format!("unknown contender {s:?} (one of {})", names.join(", "))
            })
    }
}

/// Now, nanoseconds since the Unix epoch (`CLOCK_REALTIME`).
pub fn unix_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Records the stamped events a contender's handler (or stream consumer) sees: which of the
/// awaited sequence numbers arrived, when, and with which write-to-handler latency.
#[derive(Default)]
pub struct Recorder {
    state: Mutex<Expectation>,
    complete: Notify,
}

#[derive(Default)]
struct Expectation {
    from: u64,
    seen: Vec<bool>,
    received: u64,
    first: u64,
    last: u64,
    latencies_micros: Vec<f64>,
}

impl Recorder {
    /// Awaits `count` stamped events from `from_seq` on (forgetting earlier ones).
    pub fn expect(&self, from_seq: u64, count: u64) {
        let mut s = self.state.lock();
        *s = Expectation {
            from: from_seq,
            seen: vec![false; usize::try_from(count).unwrap_or(0)],
            latencies_micros: Vec::with_capacity(usize::try_from(count).unwrap_or(0)),
            ..Expectation::default()
        };
    }

    /// Called with the annotations of every object a handler sees. Unstamped objects, and
    /// sequence numbers not awaited or already seen, are ignored.
    pub fn record(&self, annotations: Option<&BTreeMap<String, String>>) {
        let Some(annotations) = annotations else {
            return;
        };
        let Some(seq) = annotations
            .get(SEQ_ANNOTATION)
            .and_then(|s| s.parse::<u64>().ok())
        else {
            return;
        };
        let written_at = annotations
            .get(WRITTEN_AT_ANNOTATION)
            .and_then(|s| s.parse::<u64>().ok());
        let now = unix_nanos();
        let mut s = self.state.lock();
        let Some(i) = seq
            .checked_sub(s.from)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|i| *i < s.seen.len())
        else {
            return;
        };
        if std::mem::replace(&mut s.seen[i], true) {
            return;
        }
        if let Some(at) = written_at {
            s.latencies_micros
                .push(now.saturating_sub(at) as f64 / 1_000.0);
        }
        if s.received == 0 {
            s.first = now;
        }
        s.last = now;
        s.received += 1;
        if s.received == s.seen.len() as u64 {
            self.complete.notify_one();
        }
    }

    /// Waits until every awaited event arrived, or `timeout`; reports what arrived.
    pub async fn wait(&self, timeout: Duration) -> Report {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            {
                let s = self.state.lock();
                if s.received == s.seen.len() as u64 {
                    break;
                }
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                break;
            }
            // `notify_one` keeps a permit, so a completion between the check and the wait
            // is not lost; the short poll bounds any other race.
            let step = (deadline - now).min(Duration::from_millis(100));
            let _ = tokio::time::timeout(step, self.complete.notified()).await;
        }
        let mut s = self.state.lock();
        let mut latencies = std::mem::take(&mut s.latencies_micros);
        Report::Received {
            expected: s.seen.len() as u64,
            received: s.received,
            first_unix_nanos: s.first,
            last_unix_nanos: s.last,
            latency_micros: Summary::of(&mut latencies),
        }
    }
}

/// Where a contender is, for relist detection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    /// Full lists applied so far (the first included).
    pub lists: u64,
    /// Whether everything listed has been applied (nothing queued).
    pub idle: bool,
    /// Whether a 410 was seen.
    pub expired_seen: bool,
    /// Objects in the cache (the floor: in its last list).
    pub objects: usize,
}

/// A started contender.
enum Running {
    Informer(informer::Run),
    KubeRuntime(kube_runtime::Run),
    Floor(floor::Run),
}

impl Running {
    fn start(kind: ContenderKind, client: Client, recorder: Arc<Recorder>) -> Result<Self, String> {
        Ok(match kind {
            ContenderKind::Informer => Self::Informer(informer::Run::start(
                client,
                recorder,
                false,
                StoreKind::Indexed,
            )?),
            ContenderKind::InformerDropManagedFields => Self::Informer(informer::Run::start(
                client,
                recorder,
                true,
                StoreKind::Indexed,
            )?),
            ContenderKind::InformerCompact => Self::Informer(informer::Run::start(
                client,
                recorder,
                false,
                StoreKind::Compact(CompactOptions::default()),
            )?),
            ContenderKind::KubeRuntime => {
                Self::KubeRuntime(kube_runtime::Run::start(client, recorder, false))
            }
            ContenderKind::KubeRuntimeStreaming => {
                Self::KubeRuntime(kube_runtime::Run::start(client, recorder, true))
            }
            ContenderKind::Floor => Self::Floor(floor::Run::start(client, recorder)),
        })
    }

    async fn wait_synced(&self) -> Result<usize, String> {
        match self {
            Self::Informer(r) => r.wait_synced().await,
            Self::KubeRuntime(r) => r.wait_synced().await,
            Self::Floor(r) => r.wait_synced().await,
        }
    }

    fn progress(&self) -> Progress {
        match self {
            Self::Informer(r) => r.progress(),
            Self::KubeRuntime(r) => r.progress(),
            Self::Floor(r) => r.progress(),
        }
    }

    fn lookups(
        &self,
        namespaces: &[String],
        keys: &[(String, String)],
        cold_keys: &[(String, String)],
        min: Duration,
    ) -> Report {
        // Each cold key and each namespace once, each timed on its own, before the loops
        // (which warm whatever the cache keeps).
        let (cold, namespace, get) = match self {
            Self::Informer(r) => (
                ColdLookups {
                    get: time_each(cold_keys, |(ns, name)| r.get(ns, name)),
                    namespace: time_each(namespaces, |ns| r.namespace_lookup(ns)),
                },
                time_lookups(namespaces, min, |ns| r.namespace_lookup(ns)),
                time_lookups(keys, min, |(ns, name)| r.get(ns, name)),
            ),
            Self::KubeRuntime(r) => (
                ColdLookups {
                    get: time_each(cold_keys, |(ns, name)| r.get(ns, name)),
                    namespace: time_each(namespaces, |ns| r.namespace_lookup(ns)),
                },
                time_lookups(namespaces, min, |ns| r.namespace_lookup(ns)),
                time_lookups(keys, min, |(ns, name)| r.get(ns, name)),
            ),
            Self::Floor(_) => {
                return Report::Failed {
                    message: "the floor keeps no cache to look up".into(),
                };
            }
        };
        Report::Lookups {
            namespace,
            get,
            cold: Some(cold),
        }
    }

    async fn stop(self) {
        match self {
            Self::Informer(r) => r.stop().await,
            Self::KubeRuntime(r) => r.stop(),
            Self::Floor(r) => r.stop(),
        }
    }
}

/// Runs `lookup` over `inputs` in turn for at least `min`; `lookup` returns how many objects
/// it found.
fn time_lookups<I>(
    inputs: &[I],
    min: Duration,
    mut lookup: impl FnMut(&I) -> usize,
) -> LookupTiming {
    let found_per_pass = inputs.iter().map(&mut lookup).sum::<usize>() as u64;
    let started = Instant::now();
    let mut operations = 0u64;
    if !inputs.is_empty() {
        loop {
            for input in inputs {
                black_box(lookup(black_box(input)));
            }
            operations += inputs.len() as u64;
            if started.elapsed() >= min {
                break;
            }
        }
    }
    let elapsed = started.elapsed();
    LookupTiming {
        operations,
        nanos_per_op: if operations == 0 {
            0.0
        } else {
            elapsed.as_nanos() as f64 / operations as f64
        },
        found_per_pass,
    }
}

/// Runs `lookup` once per input, timing each call: the microseconds per call, summarized.
fn time_each<I>(inputs: &[I], mut lookup: impl FnMut(&I) -> usize) -> Summary {
    let mut micros: Vec<f64> = inputs
        .iter()
        .map(|input| {
            let started = Instant::now();
            black_box(lookup(black_box(input)));
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    Summary::of(&mut micros)
}

/// Writes one report line to stdout.
fn send(report: &Report) {
    let line = match serde_json::to_string(report) {
        Ok(line) => line,
        Err(e) => format!(r#"{{"report":"failed","message":"encoding a report: {e}"}}"#),
    };
    let mut out = std::io::stdout().lock();
    // The orchestrator reading our stdout is gone if this fails: nothing left to tell.
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// The contender process: builds the runtime (two workers) and the client for `url`, says
/// [`Report::Ready`], then serves commands from stdin until [`Command::Quit`] or the end of
/// stdin.
pub fn serve(kind: ContenderKind, url: &str) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(serve_commands(kind, url))
}

async fn serve_commands(kind: ContenderKind, url: &str) -> Result<(), String> {
    let uri = url
        .parse()
        .map_err(|e| format!("invalid server URL {url:?}: {e}"))?;
    let client = informer_kube::client_for_informers(kube_client::Config::new(uri))
        .map_err(|e| format!("building the client: {e}"))?;
    let recorder = Arc::new(Recorder::default());
    let mut running: Option<Running> = None;
    send(&Report::Ready {
        contender: kind.name().to_owned(),
    });
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines
        .next_line()
        .await
        .map_err(|e| format!("reading commands: {e}"))?
    {
        if line.trim().is_empty() {
            continue;
        }
        let command: Command = match serde_json::from_str(&line) {
            Ok(c) => c,
            Err(e) => {
                send(&Report::Failed {
                    message: format!("bad command {line:?}: {e}"),
                });
                continue;
            }
        };
        match command {
            Command::Start => {
                if running.is_some() {
                    send(&Report::Failed {
                        message: "already started".into(),
                    });
                    continue;
                }
                let started = Instant::now();
                let run = match Running::start(kind, client.clone(), Arc::clone(&recorder)) {
                    Ok(run) => run,
                    Err(message) => {
                        send(&Report::Failed { message });
                        continue;
                    }
                };
                let report = match run.wait_synced().await {
                    Ok(objects) => Report::Synced {
                        seconds: started.elapsed().as_secs_f64(),
                        objects,
                    },
                    Err(message) => Report::Failed { message },
                };
                running = Some(run);
                send(&report);
            }
            Command::ArmRelist { timeout_seconds } => {
                let Some(run) = &running else {
                    send(&not_started());
                    continue;
                };
                send(&await_relist(run, timeout_seconds).await);
            }
            Command::Expect {
                from_seq,
                count,
                timeout_seconds,
            } => {
                recorder.expect(from_seq, count);
                send(&Report::Expecting);
                let timeout = Duration::try_from_secs_f64(timeout_seconds).unwrap_or(Duration::MAX);
                send(&recorder.wait(timeout).await);
            }
            Command::Lookups {
                namespaces,
                keys,
                cold_keys,
                min_seconds,
            } => {
                let Some(run) = &running else {
                    send(&not_started());
                    continue;
                };
                let split = |keys: &[String]| -> Vec<(String, String)> {
                    keys.iter()
                        .filter_map(|k| k.split_once('/'))
                        .map(|(ns, name)| (ns.to_owned(), name.to_owned()))
                        .collect()
                };
                let min = Duration::try_from_secs_f64(min_seconds).unwrap_or_default();
                send(&run.lookups(&namespaces, &split(&keys), &split(&cold_keys), min));
            }
            Command::Quit => break,
        }
    }
    if let Some(run) = running {
        run.stop().await;
    }
    Ok(())
}

fn not_started() -> Report {
    Report::Failed {
        message: "not started".into(),
    }
}

/// Answers [`Report::Armed`], then waits for one more full list applied.
async fn await_relist(run: &Running, timeout_seconds: f64) -> Report {
    let before = run.progress();
    send(&Report::Armed);
    let armed = Instant::now();
    let timeout = Duration::try_from_secs_f64(timeout_seconds).unwrap_or(Duration::MAX);
    loop {
        let now = run.progress();
        if now.lists > before.lists && now.idle {
            return Report::Relisted {
                seconds: armed.elapsed().as_secs_f64(),
                objects: now.objects,
                expired_seen: now.expired_seen,
            };
        }
        if armed.elapsed() > timeout {
            return Report::Failed {
                message: format!(
                    "no relist within {timeout_seconds} s (lists {} → {}, idle {})",
                    before.lists, now.lists, now.idle
                ),
            };
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(seq: u64, at: u64) -> BTreeMap<String, String> {
        [
            (SEQ_ANNOTATION.to_owned(), seq.to_string()),
            (WRITTEN_AT_ANNOTATION.to_owned(), at.to_string()),
        ]
        .into()
    }

    #[tokio::test]
    async fn the_recorder_counts_each_awaited_sequence_number_once() {
        let r = Recorder::default();
        r.expect(10, 3);
        let at = unix_nanos();
        r.record(Some(&stamped(9, at))); // before the range
        r.record(Some(&stamped(10, at)));
        r.record(Some(&stamped(10, at))); // a duplicate
        r.record(None);
        r.record(Some(&BTreeMap::new()));
        r.record(Some(&stamped(11, at)));
        r.record(Some(&stamped(13, at))); // after the range
        r.record(Some(&stamped(12, at)));
        match r.wait(Duration::from_secs(5)).await {
            Report::Received {
                expected,
                received,
                first_unix_nanos,
                last_unix_nanos,
                latency_micros,
            } => {
                assert_eq!((expected, received), (3, 3));
                assert!(first_unix_nanos >= at && last_unix_nanos >= first_unix_nanos);
                assert_eq!(latency_micros.count, 3);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_recorder_reports_what_came_by_the_timeout() {
        let r = Recorder::default();
        r.expect(0, 2);
        r.record(Some(&stamped(1, unix_nanos())));
        match r.wait(Duration::from_secs(1)).await {
            Report::Received {
                expected, received, ..
            } => assert_eq!((expected, received), (2, 1)),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn contender_names_parse_back() {
        for k in ContenderKind::ALL {
            assert_eq!(k.name().parse::<ContenderKind>(), Ok(k));
        }
        assert!("nope".parse::<ContenderKind>().is_err());
        assert!(!ContenderKind::Floor.has_cache());
    }

    #[test]
    fn lookups_are_timed_over_every_input() {
        let t = time_lookups(&[1usize, 2, 3], Duration::ZERO, |n| *n);
        assert_eq!(t.found_per_pass, 6);
        assert_eq!(t.operations, 3);
        let none = time_lookups::<usize>(&[], Duration::ZERO, |n| *n);
        assert_eq!((none.operations, none.nanos_per_op), (0, 0.0));
    }
}

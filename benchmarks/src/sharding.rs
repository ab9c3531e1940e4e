//! The sharding benchmark (`cargo xtask bench --sharding`, binary `shard-bench`): N pods
//! split over S replicas of an informer, each in its own process, with the API server
//! filtering (`shardSelector` honoured, KEP-5866), with the replicas filtering after decode
//! (the server's feature off: every replica receives everything), and one unsharded informer
//! holding everything, side by side.
//!
//! For each scenario a fresh `fake-apiserver` is seeded with the pods and switched (admin API
//! `PUT /_fake/sharded-list-and-watch`). The replicas start one after another, each timed
//! from its start to its informer's sync, alone (the ones before it are idle): the *cold
//! sync per replica*. Then the server churns pod updates at a steady rate for a while; each
//! replica's CPU time over that phase divided by the server's writes is the *CPU per write*
//! a replica pays (with client-side filtering each replica decodes every write and drops
//! most); divided by the events its handler got, the *CPU per delivered event*. RSS is
//! `VmRSS` after the steady phase. Replicas are `shard-bench replica` processes: the
//! informer-rs defaults (`SharedIndexInformer` over `KubeListerWatcher<Pod>`, streaming
//! lists, DeltaFifo, indexed store), one counting handler, a tokio runtime with two workers.
//!
//! Results go to a section of BENCHMARKS.md between the markers [`BEGIN`] and [`END`]
//! (replaced, or appended when absent; `informer-bench` keeps the section when it rewrites
//! the file) and optionally to JSON.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use informer::reflector::ListWatchConfig;
use informer::shard::{ShardField, ShardSelector};
use informer::{InformerConfig, SharedIndexInformer, handler};
use informer_kube::KubeListerWatcher;
use k8s_openapi::api::core::v1::Pod;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::HarnessError;
use crate::machine::Machine;
use crate::procfs;
use crate::server::{Admin, ServerProcess};

/// The marker that opens the sharding section of BENCHMARKS.md.
pub const BEGIN: &str =
    "<!-- sharding:begin (cargo xtask bench --sharding writes this section) -->";
/// The marker that closes it.
pub const END: &str = "<!-- sharding:end -->";

/// Who filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Scenario {
    /// S replicas, the server filters.
    ServerSide,
    /// S replicas, each filters after decode (the server's feature off).
    ClientSide,
    /// One informer, every object.
    Unsharded,
}

impl Scenario {
    /// Every scenario, in table order.
    pub const ALL: [Self; 3] = [Self::ServerSide, Self::ClientSide, Self::Unsharded];

    fn label(self, shards: u64) -> String {
        match self {
            Self::ServerSide => format!("{shards} shards, server-side filtering"),
            Self::ClientSide => format!("{shards} shards, client-side filtering"),
            Self::Unsharded => "1 informer, unsharded".to_owned(),
        }
    }
}

/// What a run measures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardBenchConfig {
    /// Pods seeded.
    pub pods: usize,
    /// Replicas of a sharded scenario.
    pub shards: u64,
    /// Namespaces the pods are spread over.
    pub namespaces: usize,
    /// Pod updates per second in the steady phase.
    pub steady_rate: f64,
    /// Length of the steady phase, seconds.
    pub steady_seconds: f64,
}

/// One replica's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplicaResult {
    /// From its start to its informer's sync, seconds.
    pub sync_seconds: f64,
    /// Objects in its cache once synced.
    pub objects: u64,
    /// Objects its filter dropped (client-side filtering), over the run.
    pub dropped: u64,
    /// Who filtered, as its informer says.
    pub filtering: String,
    /// Events its handler got in the steady phase.
    pub events: u64,
    /// CPU time in the steady phase, seconds.
    pub cpu_seconds: f64,
    /// `VmRSS` after the steady phase, bytes.
    pub rss_bytes: u64,
}

/// One scenario's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// Which.
    pub scenario: Scenario,
    /// Per replica.
    pub replicas: Vec<ReplicaResult>,
    /// Writes the server made in the steady phase.
    pub writes: u64,
}

/// A whole run, as written to JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShardBenchRun {
    /// When.
    pub date: String,
    /// Where.
    pub machine: Machine,
    /// The command.
    pub command: String,
    /// `/proc/loadavg` when the run started (the 1-, 5- and 15-minute load averages): a
    /// shared machine's other work shows here.
    #[serde(default)]
    pub load_average: Option<String>,
    /// The parameters.
    pub config: ShardBenchConfig,
    /// The figures.
    pub results: Vec<ScenarioResult>,
}

/// Runs every scenario; `say` is told what happens.
pub fn run(
    config: &ShardBenchConfig,
    server_exe: &Path,
    replica_exe: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<ScenarioResult>, HarnessError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| HarnessError::io("building the runtime", e))?;
    // The admin client spawns its connection task on the runtime (driven in `block_on`).
    let _entered = runtime.enter();
    let mut results = Vec::new();
    for scenario in Scenario::ALL {
        say(&format!("{}: starting", scenario.label(config.shards)));
        let server = ServerProcess::spawn(server_exe)?;
        let admin = Admin::new(server.url())?;
        runtime.block_on(async {
            admin.seed(config.namespaces, config.pods).await?;
            call(
                &admin,
                http::Method::PUT,
                "/_fake/sharded-list-and-watch",
                json!({"enabled": scenario != Scenario::ClientSide}),
            )
            .await
        })?;
        say(&format!("seeded {} pods", config.pods));
        let count = if scenario == Scenario::Unsharded {
            1
        } else {
            config.shards
        };
        let mut replicas = Vec::new();
        let mut synced = Vec::new();
        for rank in 0..count {
            let shard = (scenario != Scenario::Unsharded).then_some((rank, count));
            let mut replica = ReplicaProcess::spawn(replica_exe, server.url(), shard)?;
            let line = replica.ask("start", Duration::from_secs(1800))?;
            say(&format!("replica {rank}: {line}"));
            synced.push(line);
            replicas.push(replica);
        }
        let cpu_before: Vec<Duration> = replicas
            .iter()
            .map(|r| procfs::cpu_time(r.pid()))
            .collect::<Result<_, _>>()?;
        let namespaces: Vec<String> = (0..config.namespaces).map(|i| format!("ns-{i}")).collect();
        let writes = runtime.block_on(async {
            call(
                &admin,
                http::Method::POST,
                "/_fake/churn",
                json!({
                    "ratePerSecond": config.steady_rate,
                    "resources": ["pods"],
                    "namespaces": namespaces,
                    "weights": [0, 1, 0],
                }),
            )
            .await?;
            tokio::time::sleep(Duration::from_secs_f64(config.steady_seconds)).await;
            let stopped = call(&admin, http::Method::DELETE, "/_fake/churn", json!({})).await?;
            Ok::<u64, HarnessError>(
                ["creates", "updates", "deletes"]
                    .iter()
                    .map(|k| stopped[k].as_u64().unwrap_or(0))
                    .sum(),
            )
        })?;
        // Every replica has handled what it will get once its count stops moving.
        let mut counts: Vec<Value> = Vec::new();
        for replica in &mut replicas {
            counts.push(replica.quiet()?);
        }
        let mut out = Vec::new();
        for (i, replica) in replicas.iter().enumerate() {
            let cpu = procfs::cpu_time(replica.pid())?.saturating_sub(cpu_before[i]);
            let memory = procfs::memory(replica.pid())?;
            out.push(ReplicaResult {
                sync_seconds: synced[i]["seconds"].as_f64().unwrap_or(0.0),
                objects: synced[i]["objects"].as_u64().unwrap_or(0),
                dropped: counts[i]["dropped"].as_u64().unwrap_or(0),
                filtering: counts[i]["filtering"].as_str().unwrap_or("").to_owned(),
                events: counts[i]["events"].as_u64().unwrap_or(0),
                cpu_seconds: cpu.as_secs_f64(),
                rss_bytes: memory.rss,
            });
        }
        for mut replica in replicas {
            replica.quit();
        }
        drop(server);
        say(&format!("{}: done", scenario.label(config.shards)));
        results.push(ScenarioResult {
            scenario,
            replicas: out,
            writes,
        });
    }
    Ok(results)
}

async fn call(
    admin: &Admin,
    method: http::Method,
    path: &str,
    body: Value,
) -> Result<Value, HarnessError> {
    let context = format!("{method} {path}");
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body.to_string().into_bytes())
        .map_err(|e| HarnessError::Check(format!("building {context}: {e}")))?;
    let text = admin
        .client()
        .request_text(request)
        .await
        .map_err(|e| HarnessError::server(context.clone(), e))?;
    serde_json::from_str(&text)
        .map_err(|e| HarnessError::Check(format!("{context} answered {text:?}: {e}")))
}

/// A `shard-bench replica` process, killed when dropped.
struct ReplicaProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl ReplicaProcess {
    fn spawn(exe: &Path, url: &str, shard: Option<(u64, u64)>) -> Result<Self, HarnessError> {
        let mut command = Command::new(exe);
        command.args(["replica", "--url", url]);
        if let Some((rank, count)) = shard {
            command.args(["--rank", &rank.to_string(), "--shards", &count.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| HarnessError::io(format!("starting {}", exe.display()), e))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            return Err(HarnessError::Check(
                "the replica's stdio is not piped".into(),
            ));
        };
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("[replica] {line}"),
                }
            }
        });
        let mut process = Self {
            child,
            stdin: Some(stdin),
            lines,
        };
        process.next(Duration::from_secs(60))?;
        Ok(process)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn next(&mut self, timeout: Duration) -> Result<Value, HarnessError> {
        self.lines
            .recv_timeout(timeout)
            .map_err(|_| HarnessError::Contender {
                contender: "replica".into(),
                message: format!("no answer within {timeout:?}"),
            })
    }

    fn ask(&mut self, command: &str, timeout: Duration) -> Result<Value, HarnessError> {
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(HarnessError::Check("the replica's stdin is closed".into()));
        };
        writeln!(stdin, "{command}")
            .and_then(|()| stdin.flush())
            .map_err(|e| HarnessError::io("writing to a replica", e))?;
        let answer = self.next(timeout)?;
        if let Some(message) = answer.get("failed") {
            return Err(HarnessError::Contender {
                contender: "replica".into(),
                message: message.to_string(),
            });
        }
        Ok(answer)
    }

    /// Waits until the replica's event count has not moved for a second; its last count.
    fn quiet(&mut self) -> Result<Value, HarnessError> {
        let deadline = Instant::now() + Duration::from_secs(600);
        let mut last = self.ask("count", Duration::from_secs(60))?;
        let mut still_since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(200));
            let now = self.ask("count", Duration::from_secs(60))?;
            if now["events"] != last["events"] || now["queued"] != 0 {
                still_since = Instant::now();
            } else if still_since.elapsed() >= Duration::from_secs(1) {
                return Ok(now);
            }
            last = now;
            if Instant::now() > deadline {
                return Err(HarnessError::Check("a replica never went quiet".into()));
            }
        }
    }

    fn quit(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
    }
}

impl Drop for ReplicaProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The replica process: an informer on its shard (or on everything), a counting handler,
/// commands on stdin (`start`, `count`), one JSON line per answer on stdout; ends with its
/// stdin.
pub fn replica(url: &str, shard: Option<(u64, u64)>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("building the runtime: {e}"))?;
    runtime.block_on(serve_replica(url, shard))
}

async fn serve_replica(url: &str, shard: Option<(u64, u64)>) -> Result<(), String> {
    use tokio::io::AsyncBufReadExt as _;
    let uri = url
        .parse()
        .map_err(|e| format!("invalid server URL {url:?}: {e}"))?;
    let client = informer_kube::client_for_informers(kube_client::Config::new(uri))
        .map_err(|e| format!("building the client: {e}"))?;
    let selector = match shard {
        Some((rank, count)) => Some(
            ShardSelector::even_split(ShardField::Uid, rank, count)
                .map_err(|e| format!("the shard: {e}"))?,
        ),
        None => None,
    };
    let informer = SharedIndexInformer::new(
        Arc::new(KubeListerWatcher::<Pod>::all(client)),
        InformerConfig {
            name: "pods".into(),
            list_watch: ListWatchConfig {
                shard_selector: selector,
                ..ListWatchConfig::default()
            },
            ..InformerConfig::default()
        },
    )
    .map_err(|e| format!("building the informer: {e}"))?;
    let events = Arc::new(AtomicU64::new(0));
    let (on_add, on_update, on_delete) = (
        Arc::clone(&events),
        Arc::clone(&events),
        Arc::clone(&events),
    );
    informer
        .add_handler(
            handler()
                .on_add(move |_pod: &Arc<Pod>, initial| {
                    if !initial {
                        on_add.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .on_update(move |_, _| {
                    on_update.fetch_add(1, Ordering::Relaxed);
                })
                .on_delete(move |_| {
                    on_delete.fetch_add(1, Ordering::Relaxed);
                }),
        )
        .map_err(|e| format!("adding the handler: {e}"))?;
    say(&json!({"ready": true}));
    let stop = tokio_util::sync::CancellationToken::new();
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines
        .next_line()
        .await
        .map_err(|e| format!("reading commands: {e}"))?
    {
        match line.trim() {
            "start" => {
                let started = Instant::now();
                informer.spawn(stop.clone());
                if !informer.wait_for_sync().await {
                    say(&json!({"failed": "the informer stopped before it synced"}));
                    continue;
                }
                say(&json!({
                    "seconds": started.elapsed().as_secs_f64(),
                    "objects": informer.stats().cached,
                }));
            }
            "count" => {
                let stats = informer.stats();
                let shard = stats
                    .reflector
                    .as_ref()
                    .map(|r| r.shard.clone())
                    .unwrap_or_default();
                say(&json!({
                    "events": events.load(Ordering::Relaxed),
                    "queued": stats.queued,
                    "objects": stats.cached,
                    "dropped": shard.dropped,
                    "filtering": shard.filtering.as_str(),
                }));
            }
            "" => {}
            other => say(&json!({"failed": format!("unknown command {other:?}")})),
        }
    }
    stop.cancel();
    Ok(())
}

fn say(value: &Value) {
    let mut out = std::io::stdout().lock();
    // The orchestrator reading our stdout is gone if this fails: nothing left to tell.
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// The section of BENCHMARKS.md, markers included.
pub fn render(run: &ShardBenchRun) -> String {
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let mut out = String::new();
    out.push_str(BEGIN);
    out.push_str("\n\n## Sharding (issue 16)\n\n");
    out.push_str(&format!(
        "{} pods ({} namespaces) split over {} shards by uid: each replica an informer-rs informer \
         (defaults: streaming lists, DeltaFifo, indexed store) in its own process, against the \
         HTTP fake API server with server-side sharded list and watch on (the server filters) \
         or off (each replica filters after decode), and one unsharded informer. Replicas start \
         one after another; *cold sync* is each one's start-to-synced time, alone. The steady \
         phase is {} pod updates per second for {} s; *CPU per server write* is a replica's CPU \
         time in it divided by every write the server made, *CPU per event* divided by the \
         events its handler got. RSS is `VmRSS` after the steady phase. Mean over the \
         replicas, the largest in parentheses. *Filtering* is what the replicas' informers \
         report: `unconfirmed` with server-side filtering (streaming lists carry no \
         `shardInfo` echo, and no object outside the shard arrived), `client` when objects \
         outside the shard arrived and were dropped after decode.\n\n",
        thousands(run.config.pods as u64),
        run.config.namespaces,
        run.config.shards,
        run.config.steady_rate,
        run.config.steady_seconds,
    ));
    out.push_str(&format!(
        "Measured {} with `{}` on {} ({} cores, {:.0} GiB, {}; {}){}.\n\n",
        run.date,
        run.command,
        run.machine.cpu,
        run.machine.cores,
        run.machine.memory_bytes as f64 / (1u64 << 30) as f64,
        run.machine.kernel,
        run.machine.rustc,
        run.load_average
            .as_deref()
            .map_or_else(String::new, |load| format!(
                ", load average {load} at the start (other work on a shared machine slows every \
             figure, unevenly)"
            )),
    ));
    out.push_str(
        "| scenario | replicas | objects per replica | cold sync per replica | RSS per replica | \
         CPU per server write, per replica | CPU per event | filtering |\n\
         |---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    for result in &run.results {
        let n = result.replicas.len().max(1) as f64;
        let mean =
            |f: &dyn Fn(&ReplicaResult) -> f64| result.replicas.iter().map(f).sum::<f64>() / n;
        let max = |f: &dyn Fn(&ReplicaResult) -> f64| {
            result.replicas.iter().map(f).fold(0.0_f64, f64::max)
        };
        let writes = result.writes.max(1) as f64;
        let events = result.replicas.iter().map(|r| r.events).sum::<u64>().max(1) as f64;
        let cpu = result.replicas.iter().map(|r| r.cpu_seconds).sum::<f64>();
        let filtering: Vec<&str> = result
            .replicas
            .iter()
            .map(|r| r.filtering.as_str())
            .collect();
        let mut filtering = filtering;
        filtering.dedup();
        out.push_str(&format!(
            "| {} | {} | {} | {:.2} s ({:.2} s) | {:.0} MiB ({:.0} MiB) | {:.1} µs ({:.1} µs) | {:.1} µs | {} |\n",
            result.scenario.label(run.config.shards),
            result.replicas.len(),
            thousands(mean(&|r| r.objects as f64) as u64),
            mean(&|r| r.sync_seconds),
            max(&|r| r.sync_seconds),
            mib(mean(&|r| r.rss_bytes as f64)),
            mib(max(&|r| r.rss_bytes as f64)),
            mean(&|r| r.cpu_seconds) / writes * 1e6,
            max(&|r| r.cpu_seconds) / writes * 1e6,
            cpu / events * 1e6,
            filtering.join(", "),
        ));
    }
    out.push('\n');
    out.push_str(END);
    out.push('\n');
    out
}

/// `text` with the sharding section replaced by `section` (appended when there is none).
pub fn splice(text: &str, section: &str) -> String {
    match (text.find(BEGIN), text.find(END)) {
        (Some(start), Some(end)) if end > start => {
            let after = &text[end + END.len()..];
            let after = after.strip_prefix('\n').unwrap_or(after);
            format!("{}{section}{after}", &text[..start])
        }
        _ => {
            let mut out = text.trim_end().to_owned();
            out.push_str("\n\n");
            out.push_str(section);
            out
        }
    }
}

/// The 1-, 5- and 15-minute load averages (`/proc/loadavg`), when readable.
pub fn load_average() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let fields: Vec<&str> = text.split_whitespace().take(3).collect();
    (fields.len() == 3).then(|| fields.join(" "))
}

/// The sharding section of `text`, markers included, if there is one.
pub fn section(text: &str) -> Option<&str> {
    let start = text.find(BEGIN)?;
    let end = text.find(END)?;
    (end > start).then(|| &text[start..end + END.len()])
}

fn thousands(n: u64) -> String {
    crate::report::thousands(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_is_replaced_or_appended() {
        let section = format!("{BEGIN}\nnew\n{END}\n");
        let fresh = splice("# Benchmarks\n\ntable\n", &section);
        assert_eq!(fresh, format!("# Benchmarks\n\ntable\n\n{section}"));
        let old = format!("# B\n\n{BEGIN}\nold\n{END}\n\n## Analysis\n");
        assert_eq!(
            splice(&old, &section),
            format!("# B\n\n{section}\n## Analysis\n")
        );
        assert_eq!(super::section(&old).map(|s| s.contains("old")), Some(true));
        assert_eq!(super::section("nothing"), None);
    }
}

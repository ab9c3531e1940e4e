//! `leader-elected`: a singleton worker behind leader election, with fenced writes.
//!
//! Run several candidates against one cluster (or the `fake-apiserver` of informer-testing);
//! they elect a leader on a Lease. While it leads, the leader performs a *fenced write* every
//! retry period: it updates the ConfigMap `--fence` (recording its identity and a counter)
//! with the resourceVersion it last read or wrote there. A 409 means someone else wrote the
//! fence since: this candidate lost the fence and does not act again until it leads again.
//! Every event is one JSON line on stdout (logs go to stderr):
//!
//! ```text
//! {"event":"acquired","identity":"a","term":1,"unix_ms":…}
//! {"event":"wrote","identity":"a","term":1,"counter":7,"resourceVersion":"42","unix_ms":…}
//! {"event":"write-refused","identity":"a","term":1,"counter":8,"reason":"…","unix_ms":…}
//! {"event":"write-failed","identity":"a","term":1,"counter":8,"reason":"…","unix_ms":…}
//! {"event":"lost","identity":"a","term":1,"reason":"renew deadline exceeded","unix_ms":…}
//! ```
//!
//! (`write-failed`: no answer, or another error; the outcome is unknown and the same write is
//! tried again at the next tick, with the same resourceVersion.)
//!
//! ```text
//! cargo run -p informer-kube --example leader-elected -- --kubeconfig ~/.kube/config --identity a
//! cargo run -p informer-kube --example leader-elected -- --kubeconfig ~/.kube/config --identity b
//! ```
//!
//! Why both the election and the fence: leadership is a belief held against a clock (see
//! `informer_core::leader_election`); a process paused between its check and its write (a GC
//! pause, SIGSTOP, a slow node) can still act after another took over. The resourceVersion
//! guard makes the resource itself refuse such a write. Its view of the fence is taken once
//! per term (when it starts leading) and never refreshed during the term: refreshing it would
//! let a stale leader pass the fence.
//!
//! `tests/it/leader_processes.rs` runs two candidates as processes against the `fake-apiserver`
//! binary, pauses the leader with SIGSTOP and checks that the fence's history never
//! interleaves two leaders.

#[path = "common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::Parser;
use informer_core::leader_election::{ElectionConfig, StepDown};
use informer_kube::leader_election::{LeaderCallbacks, LeaderElector, Leadership, LeaseError};
use informer_kube::{client_for_informers, kube_config};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::PostParams;
use kube_client::{Api, Client};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A candidate for leadership of a singleton worker that writes a fenced ConfigMap.
#[derive(Debug, Clone, Parser)]
#[command(name = "leader-elected", about, long_about = None)]
pub struct Args {
    /// The cluster of this kubeconfig file's current context (default: KUBECONFIG,
    /// ~/.kube/config, or the in-cluster service account).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace of the Lease and the fence ConfigMap.
    #[arg(long, short = 'n', default_value = "default")]
    pub namespace: String,
    /// Name of the Lease.
    #[arg(long, default_value = "leader-elected")]
    pub lease: String,
    /// Name of the fence ConfigMap.
    #[arg(long, default_value = "fence")]
    pub fence: String,
    /// This candidate's identity (default: `$HOSTNAME-<pid>`).
    #[arg(long)]
    pub identity: Option<String>,
    /// How long others wait after the lease last changed (whole seconds).
    #[arg(long, value_parser = common::parse_duration, default_value = "15s")]
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    #[arg(long, value_parser = common::parse_duration, default_value = "10s")]
    pub renew_deadline: Duration,
    /// Between renewals, acquisition attempts (jittered) and fenced writes.
    #[arg(long, value_parser = common::parse_duration, default_value = "2s")]
    pub retry_period: Duration,
    /// Hand the lease back on SIGTERM / Ctrl-C.
    #[arg(long)]
    pub release_on_cancel: bool,
    /// Keep writing after leadership is lost, until the fence refuses: shows that the fence
    /// alone stops a stale leader. For tests and demonstrations only.
    #[arg(long)]
    pub zombie_writes: bool,
}

/// What can stop the program.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The client could not be configured (kubeconfig, environment) or built.
    #[error("cannot set up the Kubernetes client")]
    Client(#[source] Box<informer_kube::KubeError>),
    /// The election config is invalid.
    #[error("cannot elect")]
    Election(#[source] informer_kube::leader_election::LeaderElectionError),
}

#[tokio::main]
async fn main() -> ExitCode {
    common::init_logging("warn");
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => common::failed("leader-elected", &error),
    }
}

/// Campaigns until SIGTERM or Ctrl-C, again after every lost term.
pub async fn run(args: Args) -> Result<(), AppError> {
    let client = client(&args).await?;
    let identity = args.identity.clone().unwrap_or_else(|| {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "candidate".into());
        format!("{host}-{}", std::process::id())
    });
    let config = ElectionConfig {
        lease_duration: args.lease_duration,
        renew_deadline: args.renew_deadline,
        retry_period: args.retry_period,
        release_on_cancel: args.release_on_cancel,
        ..ElectionConfig::new(identity.clone())
    };
    let elector = LeaderElector::new(
        Api::<Lease>::namespaced(client.clone(), &args.namespace),
        &args.lease,
        config,
    )
    .map_err(AppError::Election)?;
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            wait_for_signal().await;
            stop.cancel();
        }
    });
    let mut candidate = Candidate {
        identity,
        term: 0,
        fence: Fence {
            api: Api::namespaced(client, &args.namespace),
            name: args.fence.clone(),
        },
        retry_period: args.retry_period,
        zombie: args.zombie_writes,
    };
    while !stop.is_cancelled() {
        elector.run(&stop, &mut candidate).await;
    }
    Ok(())
}

async fn client(args: &Args) -> Result<Client, AppError> {
    let config = kube_config(args.kubeconfig.as_deref())
        .await
        .map_err(|e| AppError::Client(Box::new(e)))?;
    // No retries inside kube-client: the election decides what a failed request means.
    client_for_informers(config).map_err(|e| AppError::Client(Box::new(e)))
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

/// One JSON line on stdout.
fn emit(event: &str, identity: &str, term: u64, mut fields: Value) {
    let unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    if let Value::Object(map) = &mut fields {
        map.insert("event".into(), json!(event));
        map.insert("identity".into(), json!(identity));
        map.insert("term".into(), json!(term));
        map.insert("unix_ms".into(), json!(unix_ms));
    }
    println!("{fields}");
}

struct Candidate {
    identity: String,
    term: u64,
    fence: Fence,
    retry_period: Duration,
    zombie: bool,
}

impl LeaderCallbacks for Candidate {
    fn started_leading(&mut self, leadership: Leadership) {
        self.term += 1;
        emit("acquired", &self.identity, self.term, json!({}));
        let writer = Writer {
            fence: self.fence.clone(),
            identity: self.identity.clone(),
            term: self.term,
            retry_period: self.retry_period,
            zombie: self.zombie,
        };
        tokio::spawn(writer.run(leadership));
    }

    fn stopped_leading(&mut self, why: &StepDown) {
        let reason = match why {
            StepDown::RenewDeadlineExceeded => "renew deadline exceeded".to_owned(),
            StepDown::LeaseTaken { holder } => format!("lease taken by {holder:?}"),
            StepDown::Stopped => "stopped".to_owned(),
            other => format!("{other:?}"),
        };
        emit(
            "lost",
            &self.identity,
            self.term,
            json!({ "reason": reason }),
        );
    }

    fn request_failed(&mut self, error: &LeaseError) {
        tracing::debug!("{error}: {}", error.kind);
    }
}

#[derive(Clone)]
struct Fence {
    api: Api<ConfigMap>,
    name: String,
}

impl Fence {
    /// The fence's resourceVersion and counter, creating it when missing.
    async fn read(&self) -> Result<(String, u64), kube_client::Error> {
        loop {
            if let Some(cm) = self.api.get_opt(&self.name).await? {
                let counter = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("counter"))
                    .and_then(|c| c.parse().ok())
                    .unwrap_or(0);
                return Ok((cm.metadata.resource_version.unwrap_or_default(), counter));
            }
            let fresh = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([("counter".to_owned(), "0".to_owned())])),
                ..ConfigMap::default()
            };
            match self.api.create(&PostParams::default(), &fresh).await {
                Ok(cm) => return Ok((cm.metadata.resource_version.unwrap_or_default(), 0)),
                // Created by someone else meanwhile: read it.
                Err(kube_client::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The leader's work for one term: a fenced write every retry period, until the term ends
/// (or, with `--zombie-writes`, until the fence refuses a write).
struct Writer {
    fence: Fence,
    identity: String,
    term: u64,
    retry_period: Duration,
    zombie: bool,
}

impl Writer {
    async fn run(self, leadership: Leadership) {
        let (mut resource_version, mut counter) = match self.fence.read().await {
            Ok(seen) => seen,
            Err(e) => {
                eprintln!("leader-elected: reading the fence: {e}");
                return;
            }
        };
        let mut tick = tokio::time::interval(self.retry_period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if self.zombie {
                tick.tick().await;
            } else {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = leadership.lost() => return,
                }
                // The check right before the write: the term may have ended by the clock
                // even if the elector has not run since.
                if !leadership.is_current() {
                    return;
                }
            }
            counter += 1;
            let fence = ConfigMap {
                metadata: ObjectMeta {
                    name: Some(self.fence.name.clone()),
                    resource_version: Some(resource_version.clone()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([
                    ("holder".to_owned(), self.identity.clone()),
                    ("counter".to_owned(), counter.to_string()),
                    ("term".to_owned(), self.term.to_string()),
                ])),
                ..ConfigMap::default()
            };
            // A leader's write may not outlive its term.
            let bound = if self.zombie {
                self.retry_period
            } else {
                let left = leadership
                    .valid_until()
                    .saturating_duration_since(tokio::time::Instant::now());
                self.retry_period.min(left)
            };
            let params = PostParams::default();
            let write = self.fence.api.replace(&self.fence.name, &params, &fence);
            match tokio::time::timeout(bound, write).await {
                Ok(Ok(written)) => {
                    resource_version = written.metadata.resource_version.unwrap_or_default();
                    emit(
                        "wrote",
                        &self.identity,
                        self.term,
                        json!({ "counter": counter, "resourceVersion": resource_version }),
                    );
                }
                Ok(Err(kube_client::Error::Api(s))) if s.code == 409 => {
                    emit(
                        "write-refused",
                        &self.identity,
                        self.term,
                        json!({ "counter": counter, "reason": s.message }),
                    );
                    return;
                }
                // Unknown outcome: the write may or may not have happened. Try the same write
                // again at the next tick, with the same resourceVersion: if it happened, the
                // fence has moved on and refuses the retry (we stop acting, conservatively);
                // never refresh the fence's resourceVersion within a term.
                Ok(Err(e)) => {
                    let reason = e.to_string();
                    emit(
                        "write-failed",
                        &self.identity,
                        self.term,
                        json!({ "counter": counter, "reason": reason }),
                    );
                    counter -= 1;
                }
                Err(_) => {
                    let reason = format!("no answer within {bound:?}");
                    emit(
                        "write-failed",
                        &self.identity,
                        self.term,
                        json!({ "counter": counter, "reason": reason }),
                    );
                    counter -= 1;
                }
            }
        }
    }
}

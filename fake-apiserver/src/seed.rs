//! Realistic objects, seeding and churn: what benchmarks and the fake-apiserver binary load.
//!
//! Objects look like a real cluster's: a [`pod`] has two containers with resources, env,
//! probes and volume mounts, a status with conditions and container statuses, labels, an
//! owner reference and five `managedFields` entries (about 6 KB of JSON); a [`config_map`]
//! carries a few data entries. Everything is generated from a seeded RNG, so a seed always
//! gives the same objects.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use fake_apiserver::FakeApiServer;
//! use fake_apiserver::seed::{seed, SeedConfig};
//!
//! let server = FakeApiServer::new();
//! let report = seed(&server, &SeedConfig { namespaces: 3, pods: 30, configmaps: 6, ..SeedConfig::default() }).unwrap();
//! assert_eq!(report.pods, 30);
//! assert_eq!(server.objects("pods", Some("ns-1")).unwrap().len(), 10);
//! # }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use informer_core::Status;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::FakeApiServer;

const APPS: &[&str] = &[
    "web", "api", "worker", "cache", "auth", "billing", "search", "ingest", "report", "notify",
];
const TEAMS: &[&str] = &["payments", "platform", "growth", "data", "identity"];
const NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn random_suffix<R: Rng + ?Sized>(rng: &mut R, len: usize) -> String {
    (0..len)
        .map(|_| char::from(NAME_CHARS[rng.random_range(0..NAME_CHARS.len())]))
        .collect()
}

fn random_uid<R: Rng + ?Sized>(rng: &mut R) -> String {
    let hex: String = rng
        .random::<u128>()
        .to_be_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

const TIME: &str = "2026-01-15T08:30:00Z";

/// A realistic pod named `name` in `namespace` (about 6 KB of JSON), without the fields the
/// server sets (uid, resourceVersion, creationTimestamp).
pub fn pod<R: Rng + ?Sized>(namespace: &str, name: &str, rng: &mut R) -> Value {
    let app = APPS[rng.random_range(0..APPS.len())];
    let team = TEAMS[rng.random_range(0..TEAMS.len())];
    let hash = random_suffix(rng, 10);
    let node = format!("node-{}", rng.random_range(0..50));
    let pod_ip = format!(
        "10.244.{}.{}",
        rng.random_range(0..50),
        rng.random_range(2..250)
    );
    let host_ip = format!("10.0.1.{}", rng.random_range(2..250));
    let cpu = ["50m", "100m", "250m", "500m"][rng.random_range(0..4)];
    let mem = ["64Mi", "128Mi", "256Mi", "512Mi"][rng.random_range(0..4)];
    let restarts = rng.random_range(0..3);
    let container_id = format!(
        "containerd://{:032x}{:032x}",
        rng.random::<u128>(),
        rng.random::<u128>()
    );
    let sidecar_id = format!(
        "containerd://{:032x}{:032x}",
        rng.random::<u128>(),
        rng.random::<u128>()
    );
    let rs_uid = random_uid(rng);
    let image = format!(
        "registry.example.com/{team}/{app}:1.{}.{}",
        rng.random_range(0..20),
        rng.random_range(0..10)
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "generateName": format!("{app}-{hash}-"),
            "labels": {
                "app": app,
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/part-of": team,
                "pod-template-hash": hash,
                "tier": if rng.random_bool(0.5) { "frontend" } else { "backend" },
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": TIME,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": format!("{app}-{hash}"),
                "uid": rs_uid,
                "controller": true,
                "blockOwnerDeletion": true,
            }],
            "managedFields": managed_fields(),
        },
        "spec": {
            "containers": [
                {
                    "name": app,
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "ports": [
                        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
                    ],
                    "env": [
                        {"name": "APP_NAME", "value": app},
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
                        {"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}},
                        {"name": "DATABASE_URL", "valueFrom": {"secretKeyRef": {"name": format!("{app}-db"), "key": "url"}}},
                    ],
                    "resources": {
                        "requests": {"cpu": cpu, "memory": mem},
                        "limits": {"cpu": "1", "memory": "1Gi"},
                    },
                    "livenessProbe": {
                        "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
                        "initialDelaySeconds": 10, "periodSeconds": 10, "timeoutSeconds": 1,
                        "successThreshold": 1, "failureThreshold": 3,
                    },
                    "readinessProbe": {
                        "httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                        "periodSeconds": 5, "timeoutSeconds": 1, "successThreshold": 1,
                        "failureThreshold": 3,
                    },
                    "volumeMounts": [
                        {"name": "config", "mountPath": "/etc/app", "readOnly": true},
                        {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true},
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                },
                {
                    "name": "log-shipper",
                    "image": "registry.example.com/platform/log-shipper:3.1.0",
                    "imagePullPolicy": "IfNotPresent",
                    "resources": {
                        "requests": {"cpu": "10m", "memory": "32Mi"},
                        "limits": {"cpu": "100m", "memory": "64Mi"},
                    },
                    "volumeMounts": [
                        {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true},
                    ],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                },
            ],
            "volumes": [
                {"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}},
                {"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ]}},
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": node,
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
                {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            ],
            "priority": 0,
            "enableServiceLinks": true,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME},
                {"type": "Ready", "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": TIME},
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": TIME,
            "containerStatuses": [
                {
                    "name": app, "ready": true, "restartCount": restarts, "started": true,
                    "image": image, "imageID": format!("{image}@sha256:{:064x}", 7u8),
                    "containerID": container_id,
                    "state": {"running": {"startedAt": TIME}}, "lastState": {},
                },
                {
                    "name": "log-shipper", "ready": true, "restartCount": 0, "started": true,
                    "image": "registry.example.com/platform/log-shipper:3.1.0",
                    "imageID": "registry.example.com/platform/log-shipper@sha256:3f1c",
                    "containerID": sidecar_id,
                    "state": {"running": {"startedAt": TIME}}, "lastState": {},
                },
            ],
            "qosClass": "Burstable",
        },
    })
}

fn managed_fields() -> Value {
    let entry = |manager: &str, op: &str, sub: Option<&str>, fields: Value| {
        let mut e = json!({
            "manager": manager,
            "operation": op,
            "apiVersion": "v1",
            "time": TIME,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        });
        if let Some(s) = sub {
            e["subresource"] = Value::String(s.to_owned());
        }
        e
    };
    json!([
        entry(
            "kube-controller-manager",
            "Update",
            None,
            json!({
                "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}, "f:tier": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"x\"}": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:env": {}, "f:image": {}, "f:imagePullPolicy": {},
                    "f:name": {}, "f:ports": {}, "f:resources": {"f:limits": {}, "f:requests": {}}, "f:volumeMounts": {}}},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                    "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}, "f:volumes": {}},
            })
        ),
        entry(
            "kubelet",
            "Update",
            Some("status"),
            json!({
                "f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:status": {}, "f:type": {}},
                    "k:{\"type\":\"Initialized\"}": {".": {}, "f:status": {}, "f:type": {}},
                    "k:{\"type\":\"Ready\"}": {".": {}, "f:status": {}, "f:type": {}}},
                    "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {}, "f:phase": {}, "f:podIP": {},
                    "f:podIPs": {".": {}, "k:{\"ip\":\"x\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}},
            })
        ),
        entry(
            "kube-scheduler",
            "Update",
            Some("status"),
            json!({
                "f:status": {"f:conditions": {".": {}, "k:{\"type\":\"PodScheduled\"}": {".": {}, "f:lastProbeTime": {},
                    "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}}},
            })
        ),
        entry(
            "kubectl-rollout",
            "Update",
            None,
            json!({
                "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}}},
            })
        ),
        entry(
            "prometheus-operator",
            "Update",
            None,
            json!({
                "f:metadata": {"f:annotations": {"f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}}},
            })
        ),
    ])
}

/// A config map named `name` in `namespace` with a few data entries.
pub fn config_map<R: Rng + ?Sized>(namespace: &str, name: &str, rng: &mut R) -> Value {
    let app = APPS[rng.random_range(0..APPS.len())];
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": app, "app.kubernetes.io/managed-by": "helm"},
        },
        "data": {
            "LOG_LEVEL": "info",
            "FEATURE_FLAGS": "new-checkout,fast-search",
            "config.yaml": format!(
                "server:\n  port: 8080\n  workers: {}\napp: {app}\ncache:\n  ttl: 30s\n",
                rng.random_range(1..16)
            ),
        },
    })
}

/// A namespace.
pub fn namespace(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    })
}

/// What [`seed`] creates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedConfig {
    /// Namespaces `ns-0` .. `ns-{K-1}`, created as Namespace objects; objects are spread over
    /// them round-robin.
    pub namespaces: usize,
    /// Pods to create.
    pub pods: usize,
    /// Config maps to create.
    pub configmaps: usize,
    /// RNG seed: the same seed gives the same objects.
    pub seed: u64,
}

impl Default for SeedConfig {
    fn default() -> Self {
        Self {
            namespaces: 1,
            pods: 0,
            configmaps: 0,
            seed: 1,
        }
    }
}

/// What [`seed`] created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedReport {
    /// The namespaces' names.
    pub namespaces: Vec<String>,
    /// Pods created.
    pub pods: usize,
    /// Config maps created.
    pub configmaps: usize,
    /// The resourceVersion after seeding.
    pub resource_version: u64,
}

/// The namespace names [`seed`] uses.
pub fn namespace_names(count: usize) -> Vec<String> {
    (0..count.max(1)).map(|i| format!("ns-{i}")).collect()
}

/// Creates namespaces, pods and config maps (one write, one event each). Existing namespaces
/// are kept.
pub fn seed(server: &FakeApiServer, config: &SeedConfig) -> Result<SeedReport, Status> {
    let mut rng = StdRng::seed_from_u64(config.seed);
    let namespaces = namespace_names(config.namespaces);
    for ns in &namespaces {
        match server.create("namespaces", &namespace(ns)) {
            Ok(_) => {}
            Err(s) if s.code == 409 => {}
            Err(s) => return Err(s),
        }
    }
    for i in 0..config.pods {
        let ns = &namespaces[i % namespaces.len()];
        let name = format!(
            "{}-{}-{}",
            APPS[i % APPS.len()],
            i,
            random_suffix(&mut rng, 5)
        );
        server.create("pods", &pod(ns, &name, &mut rng))?;
    }
    for i in 0..config.configmaps {
        let ns = &namespaces[i % namespaces.len()];
        let name = format!("{}-config-{i}", APPS[i % APPS.len()]);
        server.create("configmaps", &config_map(ns, &name, &mut rng))?;
    }
    Ok(SeedReport {
        namespaces,
        pods: config.pods,
        configmaps: config.configmaps,
        resource_version: server.resource_version(),
    })
}

/// Settings of a [`Churn`] driver.
#[derive(Debug, Clone, PartialEq)]
pub struct ChurnConfig {
    /// Writes per second (tokio time), between 0.001 and 10^9; many writes are batched per
    /// tick above 1000/s. A rate the store cannot keep up with is not caught up without end:
    /// at most [`MAX_CHURN_BACKLOG`] worth of writes (and at most 10,000) are made per tick,
    /// the rest is skipped and counted in [`ChurnStats::skipped`].
    pub rate_per_second: f64,
    /// RNG seed: the same seed gives the same sequence of writes.
    pub seed: u64,
    /// Namespaces to create objects in (default: `ns-0`).
    pub namespaces: Vec<String>,
    /// Resources to churn: `pods` and/or `configmaps`.
    pub resources: Vec<String>,
    /// Relative weights of creates, updates and deletes.
    pub weights: (u32, u32, u32),
}

impl Default for ChurnConfig {
    fn default() -> Self {
        Self {
            rate_per_second: 10.0,
            seed: 1,
            namespaces: namespace_names(1),
            resources: vec!["pods".into(), "configmaps".into()],
            weights: (1, 2, 1),
        }
    }
}

/// How far behind its rate a [`Churn`] may fall before it skips writes instead of catching
/// up: writes owed for longer than this are dropped (and counted in [`ChurnStats::skipped`]).
pub const MAX_CHURN_BACKLOG: Duration = Duration::from_millis(100);

/// The most writes one tick of a [`Churn`] makes, whatever the rate and backlog.
const MAX_WRITES_PER_TICK: f64 = 10_000.0;

/// Writes a [`Churn`] makes between two yields to the runtime (and checks of the stop
/// signal): a churn never holds a worker thread for long, so that stopping it, the server's
/// other requests and signal handling go on under any rate.
const WRITES_PER_YIELD: u32 = 32;

/// The accepted range of [`ChurnConfig::rate_per_second`].
const RATE_RANGE: (f64, f64) = (0.001, 1e9);

/// Counts of writes a [`Churn`] made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChurnStats {
    /// Objects created.
    pub creates: u64,
    /// Objects updated.
    pub updates: u64,
    /// Objects deleted.
    pub deletes: u64,
    /// Writes the server refused (for example a conflict with the test's own writes).
    pub errors: u64,
    /// Writes not made because the churn fell more than [`MAX_CHURN_BACKLOG`] behind its
    /// rate (the store could not write that fast).
    pub skipped: u64,
}

#[derive(Default)]
struct Counters {
    creates: AtomicU64,
    updates: AtomicU64,
    deletes: AtomicU64,
    errors: AtomicU64,
    skipped: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> ChurnStats {
        ChurnStats {
            creates: self.creates.load(Ordering::Relaxed),
            updates: self.updates.load(Ordering::Relaxed),
            deletes: self.deletes.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            skipped: self.skipped.load(Ordering::Relaxed),
        }
    }

    fn skip(&self, n: u64) {
        // `fetch_update` with a closure that always answers `Some` cannot fail.
        let _ = self
            .skipped
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_add(n))
            });
    }
}

/// A running churn driver: random creates, updates and deletes at a steady rate, on tokio
/// time. Stop it with [`Churn::stop`], which returns at once whatever the rate (the driver
/// checks for it between writes); dropping it stops it too.
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)] async fn main() {
/// use std::time::Duration;
/// use fake_apiserver::FakeApiServer;
/// use fake_apiserver::seed::{Churn, ChurnConfig};
///
/// let server = FakeApiServer::new();
/// let churn = Churn::start(server.clone(), ChurnConfig { rate_per_second: 100.0, ..ChurnConfig::default() });
/// tokio::time::sleep(Duration::from_secs(1)).await;
/// let stats = churn.stop().await;
/// assert!(stats.creates + stats.updates + stats.deletes >= 90);
/// assert_eq!(stats.skipped, 0);
/// # }
/// ```
pub struct Churn {
    stop: Arc<AtomicBool>,
    wake: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
    counters: Arc<Counters>,
}

impl Churn {
    /// Starts churning on `server` (needs a tokio runtime).
    pub fn start(server: FakeApiServer, config: ChurnConfig) -> Self {
        let (wake_tx, mut wake_rx) = oneshot::channel();
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let c = Arc::clone(&counters);
        let stopping = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut driver = Driver::new(server, config);
            let rate = driver.config.rate_per_second;
            let rate = if rate.is_nan() {
                RATE_RANGE.0
            } else {
                rate.clamp(RATE_RANGE.0, RATE_RANGE.1)
            };
            let tick = Duration::from_secs_f64((1.0 / rate).max(0.001));
            let max_owed = (rate * MAX_CHURN_BACKLOG.as_secs_f64()).clamp(1.0, MAX_WRITES_PER_TICK);
            let mut interval = tokio::time::interval(tick);
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut last = tokio::time::Instant::now();
            let mut owed = 0.0f64;
            'ticks: loop {
                tokio::select! {
                    biased;
                    _ = &mut wake_rx => break,
                    _ = interval.tick() => {}
                }
                let now = tokio::time::Instant::now();
                owed += rate * now.duration_since(last).as_secs_f64();
                last = now;
                if owed > max_owed {
                    let skipped = (owed - max_owed).floor();
                    owed -= skipped;
                    // A finite, non-negative whole number: the cast saturates at u64::MAX.
                    c.skip(skipped as u64);
                }
                let mut since_yield = 0;
                while owed >= 1.0 {
                    if stopping.load(Ordering::Relaxed) {
                        break 'ticks;
                    }
                    owed -= 1.0;
                    driver.step(&c);
                    since_yield += 1;
                    if since_yield == WRITES_PER_YIELD {
                        since_yield = 0;
                        tokio::task::yield_now().await;
                    }
                }
            }
        });
        Self {
            stop,
            wake: Some(wake_tx),
            task,
            counters,
        }
    }

    /// The writes made so far.
    pub fn stats(&self) -> ChurnStats {
        self.counters.snapshot()
    }

    /// Stops churning and waits for the driver to finish (at most the few writes between two
    /// checks of the stop signal); returns what it did.
    pub async fn stop(mut self) -> ChurnStats {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(tx) = self.wake.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
        self.counters.snapshot()
    }
}

impl Drop for Churn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.task.abort();
    }
}

struct Driver {
    server: FakeApiServer,
    config: ChurnConfig,
    rng: StdRng,
    /// (resource, namespace, name) of the objects the driver may touch.
    known: Vec<(String, String, String)>,
    serial: u64,
}

impl Driver {
    fn new(server: FakeApiServer, config: ChurnConfig) -> Self {
        let mut known = Vec::new();
        for resource in &config.resources {
            for ns in &config.namespaces {
                if let Ok(objs) = server.objects(resource, Some(ns)) {
                    known.extend(
                        objs.iter()
                            .map(|o| (resource.clone(), ns.clone(), o.name().to_owned())),
                    );
                }
            }
        }
        Self {
            rng: StdRng::seed_from_u64(config.seed),
            server,
            config,
            known,
            serial: 0,
        }
    }

    fn step(&mut self, counters: &Counters) {
        let (c, u, d) = self.config.weights;
        let total = c + u + d;
        let pick = if total == 0 {
            0
        } else {
            self.rng.random_range(0..total)
        };
        let ok = if self.known.is_empty() || pick < c {
            self.create().map(|()| &counters.creates)
        } else if pick < c + u {
            self.update().map(|()| &counters.updates)
        } else {
            self.delete().map(|()| &counters.deletes)
        };
        match ok {
            Ok(counter) => counter.fetch_add(1, Ordering::Relaxed),
            Err(_) => counters.errors.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn create(&mut self) -> Result<(), Status> {
        let resources = &self.config.resources;
        if resources.is_empty() || self.config.namespaces.is_empty() {
            return Err(super::status::bad_request("nothing to churn"));
        }
        let resource = resources[self.rng.random_range(0..resources.len())].clone();
        let ns =
            self.config.namespaces[self.rng.random_range(0..self.config.namespaces.len())].clone();
        self.serial += 1;
        let name = format!("churn-{}-{}", self.serial, random_suffix(&mut self.rng, 5));
        let body = if resource == "configmaps" {
            config_map(&ns, &name, &mut self.rng)
        } else {
            pod(&ns, &name, &mut self.rng)
        };
        self.server.create(&resource, &body)?;
        self.known.push((resource, ns, name));
        Ok(())
    }

    fn update(&mut self) -> Result<(), Status> {
        let i = self.rng.random_range(0..self.known.len());
        let (resource, ns, name) = self.known[i].clone();
        self.serial += 1;
        let patch = if resource == "pods" {
            json!({
                "metadata": {
                    "labels": {"churn-generation": self.serial.to_string()},
                    "annotations": {"example.com/last-churn": self.serial.to_string()},
                },
                "status": {"message": format!("update {}", self.serial)},
            })
        } else {
            json!({
                "metadata": {"labels": {"churn-generation": self.serial.to_string()}},
                "data": {"GENERATION": self.serial.to_string()},
            })
        };
        match self.server.patch(&resource, Some(&ns), &name, &patch) {
            Ok(_) => Ok(()),
            Err(s) => {
                if s.code == 404 {
                    self.known.swap_remove(i);
                }
                Err(s)
            }
        }
    }

    fn delete(&mut self) -> Result<(), Status> {
        let i = self.rng.random_range(0..self.known.len());
        let (resource, ns, name) = self.known.swap_remove(i);
        self.server.delete(&resource, Some(&ns), &name).map(|_| ())
    }
}

//! The ConfigMap mirror controller, on `informer_controller::Controller`: it keeps a copy of
//! one source ConfigMap (by default `default/mirror-source`) in every namespace whose labels
//! match a selector (by default `informer-rs/mirror=true`), under one name (by default
//! `mirror`):
//!
//! - a matching namespace without the mirror gets one; a mirror whose data differs from the
//!   source's is replaced; when the source changes, every mirror follows;
//! - a namespace that stops matching, is being deleted, or is gone loses its mirror; with no
//!   source, no namespace has one;
//! - only ConfigMaps this controller made are ever replaced or deleted: they carry the label
//!   [`MANAGED_BY_LABEL`]`=`[`MANAGER`] (the mirrors informer selects on it) and the
//!   annotation [`SOURCE_ANNOTATION`]. A foreign ConfigMap using the mirror's name is left
//!   alone (the create fails with 409, is retried, and eventually given up).
//!
//! The primary objects are namespaces (keys: namespace names). The mirrors informer maps a
//! mirror to its namespace, the source informer maps the source to every cached namespace. A
//! mirror in a namespace the cache never held (gone before the controller started) is
//! reconciled with a stand-in namespace, as deleted.
//! Reconcile reads the listers, never the API: [`decide`] (pure) says what the namespace
//! needs, then it writes through `Api<ConfigMap>`: creates, replaces carrying the cached
//! resourceVersion (a stale cache gets 409 and a retry), deletes with UID and
//! resourceVersion preconditions. Retries, the retry cap, the workers, the shutdown, tracing
//! and metrics are the `Controller`'s.
//!
//! This file is the controller: 120 lines of code, not counting comments, blank lines and
//! the command-line parsing section. `main.rs` is the program around it (the factory, the
//! rest of the command line, the fake server demo, the metrics endpoint). informer-kube's tests include this file
//! (`tests/it/main.rs`). Its settings are its command-line flags ([`MirrorConfig`], a clap
//! struct flattened into the program's); workers, retries and time limits are the
//! `ControllerConfig` the caller gives.

use std::sync::Arc;

use informer::{LabelSelector, Lister, Object, ObjectKey};
use informer_controller::{Action, Context, Controller, ControllerConfig};
use informer_kube::{KubeError, KubeInformerFactory};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_client::api::{Api, DeleteParams, PostParams, Preconditions};
use kube_client::{Client, Error};

/// The label every mirror carries, with the value [`MANAGER`].
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// The value of [`MANAGED_BY_LABEL`] on mirrors.
pub const MANAGER: &str = "informer-rs-configmap-mirror";
/// The annotation every mirror carries: the source as `namespace/name`.
pub const SOURCE_ANNOTATION: &str = "informer-rs/mirror-source";
/// The controller's name: its metrics' `controller` label and its queue's `name`.
pub const NAME: &str = "configmap-mirror";

// --- Command-line parsing (not counted as controller code) ---

/// What to mirror where: the controller's command-line flags.
#[derive(Clone, Debug, clap::Parser)]
pub struct MirrorConfig {
    /// The source ConfigMap, as namespace/name.
    #[arg(long, default_value = "default/mirror-source", value_parser = parse_source)]
    pub source: (String, String),
    /// The mirror's name in every selected namespace.
    #[arg(long, default_value = "mirror")]
    pub mirror_name: String,
    /// Label selector of the namespaces that get a mirror.
    #[arg(long, default_value = "informer-rs/mirror=true", value_parser = LabelSelector::parse)]
    pub selector: LabelSelector,
}

/// `namespace/name`, both non-empty.
fn parse_source(text: &str) -> Result<(String, String), String> {
    let (ns, name) = text.split_once('/').ok_or("expected namespace/name")?;
    let valid = !ns.is_empty() && !name.is_empty() && !name.contains('/');
    valid
        .then(|| (ns.to_owned(), name.to_owned()))
        .ok_or_else(|| "expected namespace/name".into())
}

impl Default for MirrorConfig {
    fn default() -> Self {
        clap::Parser::parse_from([NAME])
    }
}

// --- The controller ---

/// Why the mirror could not be built.
#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    /// The mirror would have the source's name (and overwrite it in its namespace).
    #[error("the mirror's name {0:?} is the source's")]
    SameName(String),
    /// An informer could not be created.
    #[error("creating the mirror's informers")]
    Informer(#[from] Box<KubeError>),
}

/// What one namespace needs ([`decide`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Nothing: the namespace is as it should be.
    Nothing,
    /// Create this mirror.
    Create(ConfigMap),
    /// Replace the mirror with this one (it carries the cached resourceVersion).
    Replace(ConfigMap),
    /// Delete the mirror if it still has this UID and resourceVersion.
    Delete(Preconditions),
}

/// What the reconcile reads: the client, the settings, the source's lister and the mirrors'.
pub type Mirror = (Client, MirrorConfig, Lister<ConfigMap>, Lister<ConfigMap>);

/// The controller (with `settings`: workers, retries, time limits, metrics), owning `factory`
/// (build it with the informers' metrics, if any), and what its reconcile reads: run it with
/// `controller.run(reconcile, mirror, stop)`.
pub fn controller(
    factory: &KubeInformerFactory,
    config: MirrorConfig,
    settings: ControllerConfig,
) -> Result<(Controller<Namespace>, Mirror), MirrorError> {
    let (source_ns, source_name) = &config.source;
    if config.mirror_name == *source_name {
        return Err(MirrorError::SameName(source_name.clone()));
    }
    let namespaces = factory.informer::<Namespace>().map_err(Box::new)?;
    let by_name = format!("metadata.name={source_name}");
    let source = factory.namespace(source_ns).field_selector(by_name);
    let sources = source.informer().map_err(Box::new)?;
    let managed = factory.label_selector(format!("{MANAGED_BY_LABEL}={MANAGER}"));
    let mirrors = managed.informer::<ConfigMap>().map_err(Box::new)?;
    // Keys are namespace names: a mirror's namespace; for the source, every cached namespace.
    let namespace_of = |cm: &ConfigMap| ObjectKey::new(None, cm.object_namespace()?).ok();
    let all = namespaces.lister();
    // A mirror's namespace that the cache never held is reconciled as deleted.
    let gone = |key: &ObjectKey| {
        let mut namespace = Namespace::default();
        namespace.metadata.name = Some(key.name().to_owned());
        namespace
    };
    let client = factory.client().clone();
    let mirror = (client, config, sources.lister(), mirrors.lister());
    let controller = Controller::new(namespaces, settings)
        .watches(mirrors, namespace_of)
        .watches(sources, move |_: &ConfigMap| all.list_keys())
        .reconcile_missing_as(gone)
        .manage_factory(factory.clone());
    Ok((controller, mirror))
}

/// Makes one namespace right: decides from the listers, then writes.
pub async fn reconcile(namespace: Arc<Namespace>, ctx: Context<Mirror>) -> Result<Action, Error> {
    let (client, config, sources, mirrors) = &*ctx;
    let (ns, name) = (ctx.key().name(), &config.mirror_name);
    let live = (!ctx.deleted()).then_some(namespace.as_ref());
    let source = sources.get(Some(&config.source.0), &config.source.1);
    let current = mirrors.get(Some(ns), name);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let (pp, dp) = (PostParams::default(), DeleteParams::default());
    let done = match decide(config, ns, live, source.as_deref(), current.as_deref()) {
        Change::Nothing => return Ok(Action::Done),
        Change::Create(cm) => api.create(&pp, &cm).await.map(|_| "created")?,
        Change::Replace(cm) => api.replace(name, &pp, &cm).await.map(|_| "updated")?,
        Change::Delete(only_if) => match api.delete(name, &dp.preconditions(only_if)).await {
            Err(Error::Api(status)) if status.code == 404 => "already deleted",
            deleted => deleted.map(|_| "deleted")?,
        },
    };
    tracing::info!("mirror {done}");
    Ok(Action::Done)
}

/// What namespace `ns` needs, from its cached state (`None`: deleted or never seen), the
/// cached source and the cached mirror (only managed ones are cached): pure, no IO.
pub fn decide(
    cfg: &MirrorConfig,
    ns: &str,
    namespace: Option<&Namespace>,
    source: Option<&ConfigMap>,
    current: Option<&ConfigMap>,
) -> Change {
    let live = namespace.filter(|n| n.metadata.deletion_timestamp.is_none());
    let selected = live.is_some_and(|n| cfg.selector.matches_object(n));
    let source = source.filter(|s| selected && s.metadata.deletion_timestamp.is_none());
    match (source.map(|s| mirror_of(cfg, ns, s, current)), current) {
        (Some(wanted), None) => Change::Create(wanted),
        (Some(wanted), Some(current)) if same(&wanted, current) => Change::Nothing,
        (Some(wanted), Some(_)) => Change::Replace(wanted),
        (None, Some(current)) if is_managed(current) => Change::Delete(Preconditions {
            uid: current.metadata.uid.clone(),
            resource_version: current.metadata.resource_version.clone(),
        }),
        (None, _) => Change::Nothing,
    }
}

/// Whether `cm` is one of ours.
pub fn is_managed(cm: &ConfigMap) -> bool {
    cm.object_labels().get(MANAGED_BY_LABEL) == Some(&MANAGER.to_owned())
}

/// Whether the mirror holds what `wanted` holds (data, binary data, immutability) and our
/// marks (the label and the source annotation).
fn same(wanted: &ConfigMap, current: &ConfigMap) -> bool {
    let mark = |cm: &ConfigMap| cm.object_annotations().get(SOURCE_ANNOTATION).cloned();
    let content = |cm: &ConfigMap| (cm.data.clone(), cm.binary_data.clone(), cm.immutable);
    is_managed(current) && mark(current) == mark(wanted) && content(current) == content(wanted)
}

/// The mirror `ns` should hold, copying `src`, replacing `old` (at its resourceVersion).
fn mirror_of(cfg: &MirrorConfig, ns: &str, src: &ConfigMap, old: Option<&ConfigMap>) -> ConfigMap {
    let source_ref = format!("{}/{}", cfg.source.0, cfg.source.1);
    let mut mirror = src.clone();
    mirror.metadata = ObjectMeta {
        name: Some(cfg.mirror_name.clone()),
        namespace: Some(ns.to_owned()),
        labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned())].into()),
        annotations: Some([(SOURCE_ANNOTATION.to_owned(), source_ref)].into()),
        resource_version: old.and_then(|c| c.metadata.resource_version.clone()),
        ..ObjectMeta::default()
    };
    mirror
}

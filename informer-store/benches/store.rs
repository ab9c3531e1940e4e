//! `IndexedStore` throughput, and a comparison with kube-runtime 5's reflector store on the same
//! k8s-openapi ConfigMaps.
//!
//! Run: `cargo bench -p informer-store --bench store`.
//!
//! The workloads (100k ConfigMaps in 100 namespaces, label `app` with 50 values):
//! - `add_100k`: add every object to an empty store (ours: namespace + `app` label index, and
//!   without index; kube-runtime: `Writer::apply_watcher_event(&Event::Apply(..))`, which has no index);
//! - `update_100k`: overwrite every object with a newer version, half of them moving to another
//!   `app` value (ours: `update`; kube-runtime: `Apply` events);
//! - `replace_100k`: swap a full store for a new list (ours: `replace`; kube-runtime: `Init`,
//!   100k `InitApply`, `InitDone`);
//! - `get_by_key`: 1,000 lookups by namespace/name (ours: `get_by_key`; kube-runtime:
//!   `Store::get` with pre-built `ObjectRef`s);
//! - `namespace_lookup`: all objects of one namespace (ours: `by_index("namespace", ns)`;
//!   kube-runtime has no index: a filtered scan of `Store::state()`).
//!
//! kube-runtime's writer takes events by reference and deep-clones each object into a new `Arc`;
//! ours is handed the `Arc` the rest of the pipeline shares. That is the design difference the
//! apply figures measure, together with our index maintenance.
#![allow(clippy::unwrap_used, clippy::expect_used)] // benches
#![allow(missing_docs)] // criterion's macros generate undocumented items

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{
    BatchSize, BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main,
};
use informer_core::{
    Indexer, Indexers, KnownObjects, NAMESPACE_INDEX, Store, label_index_func, namespace_index_func,
};
use informer_store::IndexedStore;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_runtime::reflector::ObjectRef;
use kube_runtime::reflector::store::Writer;
use kube_runtime::watcher::Event;

const OBJECTS: usize = 100_000;
const NAMESPACES: usize = 100;
const APPS: usize = 50;
const LOOKUPS: usize = 1_000;
const APP_INDEX: &str = "app";

fn config_map(i: usize, version: usize, app: usize) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("cm-{i}")),
            namespace: Some(format!("ns-{}", i % NAMESPACES)),
            resource_version: Some(format!("{}", version * OBJECTS + i)),
            uid: Some(format!("00000000-0000-0000-0000-{i:012}")),
            labels: Some(BTreeMap::from([
                (APP_INDEX.to_owned(), format!("app-{app}")),
                ("team".to_owned(), "platform".to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("config.yaml".to_owned(), "x".repeat(96)),
            ("mode".to_owned(), "production".to_owned()),
        ])),
        ..ConfigMap::default()
    }
}

/// Version 1 of every object.
fn initial() -> Vec<Arc<ConfigMap>> {
    (0..OBJECTS)
        .map(|i| Arc::new(config_map(i, 1, i % APPS)))
        .collect()
}

/// Version 2: even objects move to the next `app` value, odd ones keep theirs.
fn updated() -> Vec<Arc<ConfigMap>> {
    (0..OBJECTS)
        .map(|i| {
            let app = if i % 2 == 0 { (i + 1) % APPS } else { i % APPS };
            Arc::new(config_map(i, 2, app))
        })
        .collect()
}

fn indexers() -> Indexers<ConfigMap> {
    Indexers::from([
        (NAMESPACE_INDEX.to_owned(), namespace_index_func()),
        (APP_INDEX.to_owned(), label_index_func(APP_INDEX)),
    ])
}

fn ours_filled(objects: &[Arc<ConfigMap>]) -> IndexedStore<ConfigMap> {
    let store = IndexedStore::with_indexers(indexers());
    store.replace(objects.to_vec(), "1").unwrap();
    store
}

fn theirs_filled(objects: &[Arc<ConfigMap>]) -> Writer<ConfigMap> {
    let mut writer = Writer::default();
    for o in objects {
        writer.apply_watcher_event(&Event::Apply((**o).clone()));
    }
    writer
}

/// Few samples, short measurement: the whole file runs in a few minutes on two shared cores.
fn configure(group: &mut BenchmarkGroup<'_, WallTime>, elements: usize) {
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    group.throughput(Throughput::Elements(elements as u64));
}

fn add(c: &mut Criterion) {
    let v1 = initial();
    let events: Vec<Event<ConfigMap>> = v1.iter().map(|o| Event::Apply((**o).clone())).collect();
    let mut group = c.benchmark_group("add_100k");
    configure(&mut group, OBJECTS);
    group.bench_function("informer-store (namespace + app indices)", |b| {
        b.iter_batched(
            || IndexedStore::with_indexers(indexers()),
            |store| {
                for o in &v1 {
                    store.add(o.clone()).unwrap();
                }
                store
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("informer-store (no index)", |b| {
        b.iter_batched(
            || IndexedStore::with_indexers(Indexers::new()),
            |store| {
                for o in &v1 {
                    store.add(o.clone()).unwrap();
                }
                store
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("kube-runtime Writer (Apply events)", |b| {
        b.iter_batched(
            Writer::<ConfigMap>::default,
            |mut writer| {
                for e in &events {
                    writer.apply_watcher_event(e);
                }
                writer
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn update(c: &mut Criterion) {
    let v1 = initial();
    let v2 = updated();
    let events: Vec<Event<ConfigMap>> = v2.iter().map(|o| Event::Apply((**o).clone())).collect();
    let mut group = c.benchmark_group("update_100k");
    configure(&mut group, OBJECTS);
    group.bench_function("informer-store (half relabelled)", |b| {
        b.iter_batched(
            || ours_filled(&v1),
            |store| {
                for o in &v2 {
                    store.update(o.clone()).unwrap();
                }
                store
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("kube-runtime Writer (Apply events)", |b| {
        b.iter_batched(
            || theirs_filled(&v1),
            |mut writer| {
                for e in &events {
                    writer.apply_watcher_event(e);
                }
                writer
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

fn replace(c: &mut Criterion) {
    let v1 = initial();
    let v2 = updated();
    let init_events: Vec<Event<ConfigMap>> =
        v2.iter().map(|o| Event::InitApply((**o).clone())).collect();
    let mut group = c.benchmark_group("replace_100k");
    configure(&mut group, OBJECTS);
    group.bench_function("informer-store replace (full store)", |b| {
        b.iter_batched(
            || (ours_filled(&v1), v2.clone()),
            |(store, list)| {
                store.replace(list, "2").unwrap();
                store
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function(
        "kube-runtime Writer (Init, InitApply.., InitDone; full store)",
        |b| {
            b.iter_batched(
                || theirs_filled(&v1),
                |mut writer| {
                    writer.apply_watcher_event(&Event::Init);
                    for e in &init_events {
                        writer.apply_watcher_event(e);
                    }
                    writer.apply_watcher_event(&Event::InitDone);
                    writer
                },
                BatchSize::PerIteration,
            );
        },
    );
    group.finish();
}

fn get_by_key(c: &mut Criterion) {
    let v1 = initial();
    let ours = ours_filled(&v1);
    let writer = theirs_filled(&v1);
    let theirs = writer.as_reader();
    // Spread the probes over the whole key space; a tenth of them miss.
    let probes: Vec<usize> = (0..LOOKUPS)
        .map(|i| (i * 7_919) % (OBJECTS + OBJECTS / 10))
        .collect();
    let keys: Vec<String> = probes
        .iter()
        .map(|&i| format!("ns-{}/cm-{i}", i % NAMESPACES))
        .collect();
    let refs: Vec<ObjectRef<ConfigMap>> = probes
        .iter()
        .map(|&i| ObjectRef::new(&format!("cm-{i}")).within(&format!("ns-{}", i % NAMESPACES)))
        .collect();
    let mut group = c.benchmark_group("get_by_key");
    configure(&mut group, LOOKUPS);
    group.bench_function("informer-store get_by_key", |b| {
        b.iter(|| {
            let mut found = 0;
            for k in &keys {
                found += usize::from(ours.get_by_key(k).is_some());
            }
            black_box(found)
        });
    });
    group.bench_function("kube-runtime Store::get", |b| {
        b.iter(|| {
            let mut found = 0;
            for r in &refs {
                found += usize::from(theirs.get(r).is_some());
            }
            black_box(found)
        });
    });
    group.finish();
}

fn namespace_lookup(c: &mut Criterion) {
    let v1 = initial();
    let ours = ours_filled(&v1);
    let writer = theirs_filled(&v1);
    let theirs = writer.as_reader();
    let namespaces: Vec<String> = (0..NAMESPACES).map(|i| format!("ns-{i}")).collect();
    let mut group = c.benchmark_group("namespace_lookup_100k_100ns");
    configure(&mut group, 1);
    let mut n = 0;
    group.bench_function("informer-store by_index", |b| {
        b.iter(|| {
            n = (n + 1) % NAMESPACES;
            let found = ours.by_index(NAMESPACE_INDEX, &namespaces[n]).unwrap();
            assert_eq!(found.len(), OBJECTS / NAMESPACES);
            found
        });
    });
    let mut n = 0;
    group.bench_function("kube-runtime state() + filter", |b| {
        b.iter(|| {
            n = (n + 1) % NAMESPACES;
            let ns = namespaces[n].as_str();
            let found: Vec<Arc<ConfigMap>> = theirs
                .state()
                .into_iter()
                .filter(|o| o.metadata.namespace.as_deref() == Some(ns))
                .collect();
            assert_eq!(found.len(), OBJECTS / NAMESPACES);
            found
        });
    });
    group.finish();
}

criterion_group!(benches, add, update, replace, get_by_key, namespace_lookup);
criterion_main!(benches);

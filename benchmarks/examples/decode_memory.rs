//! How much resident memory a decoded k8s-openapi `Pod` costs, by the way it is built: the
//! experiment behind the memory part of `ANALYSIS.md`.
//!
//! ```text
//! cargo run --release -p informer-benchmarks --example decode_memory -- <mode> [pods]
//! ```
//!
//! Modes (run each in a fresh process; RSS growth is per pod, the list JSON excluded):
//!
//! - `decoded`: a list body decoded straight into `Vec<Pod>`, each wrapped in an `Arc` (what
//!   informer-rs keeps).
//! - `cloned`: decoded 500 at a time, each page cloned into `Arc`s and dropped (what
//!   kube-runtime's reflector keeps: its writer stores `Arc::new(obj.clone())`).
//! - `decoded-then-cloned`: the whole list decoded, then cloned, then the decoded copies
//!   dropped (the holes they leave stay in the heap).
//!
//! Run it under `heaptrack` to compare the bytes requested from the allocator with the RSS.

#![allow(clippy::unwrap_used, clippy::expect_used, reason = "an experiment")]

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use rand::SeedableRng;

#[derive(serde::Deserialize)]
struct List {
    items: Vec<Pod>,
}

fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    informer_benchmarks::procfs::status_field(&status, "VmRSS:").unwrap()
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "decoded".into());
    let pods: usize = std::env::args()
        .nth(2)
        .map_or(10_000, |n| n.parse().unwrap());
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let items: Vec<String> = (0..pods)
        .map(|i| {
            let ns = format!("ns-{}", i % 100);
            let mut pod = fake_apiserver::seed::pod(&ns, &format!("pod-{i}"), &mut rng);
            pod["metadata"]["resourceVersion"] = i.to_string().into();
            pod["metadata"]["uid"] = format!("uid-{i}").into();
            serde_json::to_string(&pod).unwrap()
        })
        .collect();
    let json_bytes: usize = items.iter().map(String::len).sum();
    let list = format!(
        r#"{{"metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
        items.join(",")
    );
    drop(items);

    let before = rss();
    let kept: Vec<Arc<Pod>> = match mode.as_str() {
        "decoded" => {
            let list: List = serde_json::from_str(&list).unwrap();
            list.items.into_iter().map(Arc::new).collect()
        }
        "cloned" => {
            let list: List = serde_json::from_str(&list).unwrap();
            let mut kept = Vec::with_capacity(pods);
            let mut decoded = list.items.into_iter();
            loop {
                let page: Vec<Pod> = decoded.by_ref().take(500).collect();
                if page.is_empty() {
                    break;
                }
                kept.extend(page.iter().map(|pod| Arc::new(pod.clone())));
            }
            kept
        }
        "decoded-then-cloned" => {
            let list: List = serde_json::from_str(&list).unwrap();
            list.items.iter().map(|pod| Arc::new(pod.clone())).collect()
        }
        other => panic!("unknown mode {other:?} (decoded, cloned, decoded-then-cloned)"),
    };
    let grown = rss().saturating_sub(before);
    println!(
        "{mode}: {pods} pods of {:.1} KB JSON: {:.1} KiB RSS per pod (size_of::<Pod>() = {} B)",
        json_bytes as f64 / pods as f64 / 1000.0,
        grown as f64 / pods as f64 / 1024.0,
        std::mem::size_of::<Pod>()
    );
    std::hint::black_box(kept);
}

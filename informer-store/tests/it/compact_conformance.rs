//! `CompactStore` against the shared `Indexer` conformance suites of `informer-testing`.
//!
//! The suites compare objects by `Arc` identity: the `Store` contract says a store hands out
//! the `Arc` it was given. A compact store keeps bytes, not `Arc`s; it hands out the given
//! `Arc` while that object is in its cache of decoded objects or waits beside it (a written
//! object waits on its shard's probation queue until later writes push it out) and an equal,
//! freshly decoded one after. The suites' stores hold fewer keys than one probation queue of
//! the default cache (16 per shard), so they pass unchanged; `identity_needs_the_cache` shows
//! exactly which checks depend on that.
#![cfg(feature = "compact")]

use informer_core::Indexers;
use informer_store::{Codec, CompactStore, RoundTripCheck, ZstdDictionary};
use informer_testing::JsonObject;
use informer_testing::conformance::indexer;

use crate::support::panic_message;

fn default_store(indexers: Indexers<JsonObject>) -> CompactStore<JsonObject> {
    CompactStore::with_indexers(indexers)
}

/// Trains its dictionary after 12 objects, so the suites that write more (the model check, the
/// concurrency check) run across the switch from JSON to compressed entries; checks every
/// write's round trip.
fn eager_store(indexers: Indexers<JsonObject>) -> CompactStore<JsonObject> {
    CompactStore::builder()
        .indexers(indexers)
        .codec(Codec::ZstdDictionary(
            ZstdDictionary::default()
                .training_objects(12)
                .dictionary_size(2 << 10),
        ))
        .round_trip_check(RoundTripCheck::Always)
        .build()
}

fn json_store(indexers: Indexers<JsonObject>) -> CompactStore<JsonObject> {
    CompactStore::builder()
        .indexers(indexers)
        .codec(Codec::Json)
        .build()
}

/// MessagePack compressed with a dictionary trained after 12 objects.
fn eager_message_pack_store(indexers: Indexers<JsonObject>) -> CompactStore<JsonObject> {
    CompactStore::builder()
        .indexers(indexers)
        .codec(Codec::MessagePackZstd(
            ZstdDictionary::default()
                .training_objects(12)
                .dictionary_size(2 << 10),
        ))
        .round_trip_check(RoundTripCheck::Always)
        .build()
}

#[test]
fn run_all_message_pack_training_early() {
    indexer::run_all(eager_message_pack_store);
}

#[test]
fn run_all_default() {
    indexer::run_all(default_store);
}

#[test]
fn run_all_training_early() {
    indexer::run_all(eager_store);
}

#[test]
fn run_all_json() {
    indexer::run_all(json_store);
}

#[test]
fn concurrent_readers_and_writers_with_a_small_cache() {
    // Readers decode most objects here; the suite checks what they see, not identity.
    indexer::check_concurrency(|indexers| {
        CompactStore::<JsonObject>::builder()
            .indexers(indexers)
            .cache_capacity(4)
            .codec(Codec::ZstdDictionary(
                ZstdDictionary::default()
                    .training_objects(16)
                    .dictionary_size(2 << 10),
            ))
            .build()
    });
}

/// Without a cache every object handed out is decoded: equal to the one stored, never the
/// same `Arc`. Exactly the checks that compare by identity fail, and nothing else.
#[test]
fn identity_needs_the_cache() {
    let message = panic_message(
        || {
            indexer::run(|indexers| {
                CompactStore::<JsonObject>::builder()
                    .indexers(indexers)
                    .cache_capacity(0)
                    .build()
            })
        },
        "without a cache, identity checks fail",
    );
    let failed: Vec<&str> = message
        .lines()
        .filter_map(|l| l.trim().strip_prefix("check `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let identity_checks = [
        "add_then_get_returns_the_same_arc",
        "add_overwrites_and_returns_previous",
        "update_upserts_and_returns_previous",
        "keys_are_namespace_slash_name",
        "delete_returns_what_was_stored",
        "delete_by_key",
        "nameless_object_is_a_key_error",
        "list_and_list_keys_agree",
        "replace_swaps_content_and_indices",
        "resync_keeps_content",
        "by_index_and_index_keys",
    ];
    assert!(!failed.is_empty(), "{message}");
    for check in &failed {
        assert!(
            identity_checks.contains(check),
            "check {check} failed for another reason than identity:\n{message}"
        );
    }
    for line in message
        .lines()
        .filter(|l| l.trim_start().starts_with("check `"))
    {
        assert!(
            line.contains("Arc") || line.contains("copy"),
            "a failure that is not about identity: {line}"
        );
    }
}

//! Which cache an informer keeps: [`StoreChoice`] (per informer, generic) and [`StoreKind`]
//! (the same choice without the object type, for factories that apply one setting to every
//! informer they create).

use std::fmt;

use informer_core::{Indexer, Indexers, KeyFunc, Object};
use informer_store::IndexedStore;
#[cfg(feature = "compact")]
use informer_store::{Codec, CompactStore, DEFAULT_CACHE_CAPACITY, RoundTripCheck};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Builds an informer's indexer from what the informer wires it to.
pub type StoreBuilder<K> = Box<dyn FnOnce(StoreWiring<K>) -> Box<dyn Indexer<K>> + Send>;

/// What a store the informer builds must be built with (see [`StoreChoice::Custom`]).
#[non_exhaustive]
pub struct StoreWiring<K> {
    /// The informer's key function: the store must key objects with it (the queue and the
    /// reflector use the same one).
    pub key_func: KeyFunc<K>,
    /// The indices to register: the built-in namespace index
    /// ([`NAMESPACE_INDEX`](informer_core::NAMESPACE_INDEX)), which listers' namespace
    /// lookups use, and [`InformerConfig::indexers`](crate::InformerConfig::indexers).
    pub indexers: Indexers<K>,
}

impl<K> StoreWiring<K> {
    /// Wiring with these key function and indices (for [`StoreChoice::build`] outside an
    /// informer).
    pub fn new(key_func: KeyFunc<K>, indexers: Indexers<K>) -> Self {
        Self { key_func, indexers }
    }
}

/// Which cache an informer keeps: [`InformerConfig::store`](crate::InformerConfig::store).
///
/// ```
/// # #[cfg(feature = "compact")] {
/// use informer::{CompactOptions, InformerConfig, StoreChoice};
/// use informer_testing::JsonObject;
///
/// let config = InformerConfig::<JsonObject> {
///     // Objects kept as compressed JSON, decoded on access; 4,096 decoded ones cached.
///     store: StoreChoice::compact(CompactOptions::default().cache_capacity(4_096)),
///     ..InformerConfig::default()
/// };
/// assert_eq!(format!("{:?}", config.store), "Compact(CompactOptions { cache_capacity: 4096, .. })");
/// # }
/// ```
#[non_exhaustive]
#[derive(Default)]
pub enum StoreChoice<K> {
    /// `informer_store::IndexedStore` (the default): every object held once as `Arc<K>`;
    /// lookups hand out the very `Arc` handlers were given, in about 100 ns.
    #[default]
    Indexed,
    /// `informer_store::CompactStore` (feature `compact`): every object kept encoded
    /// (JSON compressed with a trained zstd dictionary, by default) and decoded on
    /// access, with a bounded cache of decoded objects for hot keys. Memory follows the size
    /// of the objects on the wire (a few hundred bytes per pod instead of about 45 KB), at the
    /// price of a decode (about 10 to 20 microseconds for a pod) on every lookup that misses
    /// the cache. Built with [`StoreChoice::compact`].
    #[cfg(feature = "compact")]
    Compact(CompactChoice<K>),
    /// A store of your own, built by the informer with its key function and indices (so it
    /// cannot be keyed differently from the queue).
    Custom(StoreBuilder<K>),
}

impl<K> fmt::Debug for StoreChoice<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Indexed => f.write_str("Indexed"),
            #[cfg(feature = "compact")]
            Self::Compact(choice) => f.debug_tuple("Compact").field(&choice.options).finish(),
            Self::Custom(_) => f.write_str("Custom"),
        }
    }
}

impl<K: Object + Serialize + DeserializeOwned> StoreChoice<K> {
    /// The choice `kind` names, for this object type.
    pub fn from_kind(kind: &StoreKind) -> Self {
        match kind {
            StoreKind::Indexed => Self::Indexed,
            #[cfg(feature = "compact")]
            StoreKind::Compact(options) => Self::compact(options.clone()),
        }
    }

    /// A [`CompactStore`](informer_store::CompactStore) with these options (feature
    /// `compact`).
    #[cfg(feature = "compact")]
    pub fn compact(options: CompactOptions) -> Self {
        Self::Compact(CompactChoice {
            options,
            build: build_compact::<K>,
        })
    }
}

impl<K: Object> StoreChoice<K> {
    /// Builds the store, as the informer does (with its key function, the namespace index and
    /// its indexers): for a store used outside an informer, or tested on its own.
    pub fn build(self, wiring: StoreWiring<K>) -> Box<dyn Indexer<K>> {
        match self {
            Self::Indexed => Box::new(
                IndexedStore::builder()
                    .key_func(wiring.key_func)
                    .indexers(wiring.indexers)
                    .build(),
            ),
            #[cfg(feature = "compact")]
            Self::Compact(choice) => (choice.build)(wiring, choice.options),
            Self::Custom(build) => build(wiring),
        }
    }
}

/// A compact store for one object type: what [`StoreChoice::compact`] builds.
#[cfg(feature = "compact")]
pub struct CompactChoice<K> {
    options: CompactOptions,
    build: fn(StoreWiring<K>, CompactOptions) -> Box<dyn Indexer<K>>,
}

#[cfg(feature = "compact")]
impl<K> CompactChoice<K> {
    /// The options the store is built with.
    pub fn options(&self) -> &CompactOptions {
        &self.options
    }
}

#[cfg(feature = "compact")]
fn build_compact<K: Object + Serialize + DeserializeOwned>(
    wiring: StoreWiring<K>,
    options: CompactOptions,
) -> Box<dyn Indexer<K>> {
    let builder = CompactStore::builder()
        .key_func(wiring.key_func)
        .indexers(wiring.indexers)
        .codec(options.codec)
        .cache_capacity(options.cache_capacity)
        .round_trip_check(options.round_trip)
        .lists_as_text(options.lists_as_text);
    Box::new(
        match options.decode_threads {
            Some(threads) => builder.decode_threads(threads),
            None => builder,
        }
        .build(),
    )
}

/// The settings of a compact store chosen with [`StoreChoice::compact`] or
/// [`StoreKind::Compact`] (feature `compact`). Start from `Default`.
#[cfg(feature = "compact")]
#[derive(Clone, PartialEq, Eq)]
pub struct CompactOptions {
    cache_capacity: usize,
    codec: Codec,
    round_trip: RoundTripCheck,
    lists_as_text: bool,
    /// `None`: the store's default.
    decode_threads: Option<usize>,
}

#[cfg(feature = "compact")]
impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            cache_capacity: DEFAULT_CACHE_CAPACITY,
            codec: Codec::default(),
            round_trip: RoundTripCheck::default(),
            lists_as_text: true,
            decode_threads: None,
        }
    }
}

#[cfg(feature = "compact")]
impl CompactOptions {
    /// How many decoded objects the store keeps for hot keys (default
    /// [`DEFAULT_CACHE_CAPACITY`](informer_store::DEFAULT_CACHE_CAPACITY), 0 disables the
    /// cache). It changes what a lookup costs, never what it returns.
    pub fn cache_capacity(mut self, objects: usize) -> Self {
        self.cache_capacity = objects;
        self
    }

    /// How objects are kept (default: JSON, compressed with a zstd dictionary trained on the
    /// first objects).
    pub fn codec(mut self, codec: Codec) -> Self {
        self.codec = codec;
        self
    }

    /// When the store checks that objects survive their encoding (default: a sample).
    pub fn round_trip_check(mut self, check: RoundTripCheck) -> Self {
        self.round_trip = check;
        self
    }

    /// Whether lists wait in the informer's queue as JSON text, decoded when popped (default:
    /// true): a list peaks at about its text instead of its decoded objects. See
    /// `informer_store::CompactStoreBuilder::lists_as_text`.
    pub fn lists_as_text(mut self, yes: bool) -> Self {
        self.lists_as_text = yes;
        self
    }

    /// The most threads a scan of the store (`Lister::list`, `by_index`, ...) decodes on
    /// (default: the machine's parallelism, at most 4; 1 decodes on the caller's thread only).
    /// See `informer_store::CompactStoreBuilder::decode_threads`.
    pub fn decode_threads(mut self, threads: usize) -> Self {
        self.decode_threads = Some(threads.max(1));
        self
    }

    /// The cache's capacity.
    pub fn capacity(&self) -> usize {
        self.cache_capacity
    }

    /// Whether the store built with these options is handed lists as JSON text: asked for
    /// ([`lists_as_text`](Self::lists_as_text), the default) and a JSON codec (a MessagePack
    /// store cannot decode the text it is handed).
    ///
    /// Such a store syncs faster from a paginated first list than from a streaming one: a
    /// paginated list's items reach it undecoded (their key read from the text), while a
    /// streaming list's initial events arrive decoded through the watch path, are dropped to
    /// keep the queue small, and are decoded again when popped. Measured at 100k realistic
    /// pods (BENCHMARKS.md, issue 15): cold sync 11.1 s against 20.1-21.2 s, RSS after sync
    /// 605 against 766 MiB, a relist 1.95 against 8.06 s. An informer with such a store
    /// therefore lists first unless told otherwise: its `list_watch.watch_list` is
    /// [`WatchListMode::Auto`](crate::reflector::WatchListMode::Auto) by default, which the
    /// reflector settles to a paginated list for it (with no transform and `namespace/name`
    /// keys); [`WatchListMode::On`](crate::reflector::WatchListMode::On) streams anyway.
    pub fn takes_lists_as_text(&self) -> bool {
        self.lists_as_text && self.codec.keeps_json()
    }
}

#[cfg(feature = "compact")]
impl fmt::Debug for CompactOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactOptions")
            .field("cache_capacity", &self.cache_capacity)
            .finish_non_exhaustive()
    }
}

/// Which cache informers keep, without naming the object type: for factories that apply one
/// setting to every informer they create (`informer_kube::KubeInformerFactory::set_store`),
/// turned into a [`StoreChoice`] with [`StoreChoice::from_kind`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreKind {
    /// [`StoreChoice::Indexed`] (the default).
    #[default]
    Indexed,
    /// [`StoreChoice::compact`] with these options (feature `compact`).
    #[cfg(feature = "compact")]
    Compact(CompactOptions),
}

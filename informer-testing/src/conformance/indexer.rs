//! Conformance suite for `Indexer` backends (being written).

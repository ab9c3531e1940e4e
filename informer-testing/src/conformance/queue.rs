//! Conformance suite for `Queue` backends (being written).

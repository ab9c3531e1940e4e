//! The fake API server (being written).

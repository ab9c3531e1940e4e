//! HTTP benchmark of the fake API server (written next).
fn main() {}

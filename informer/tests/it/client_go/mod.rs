//! client-go's own tests of `tools/cache` (reflector, streaming list, shared informer,
//! controller, processor listener), ported scenario by scenario against our APIs, plus the
//! real-time timer tests and the regression tests of issue 10's defects.
//!
//! Each ported test is named after the upstream test it ports (snake case; table cases as
//! separate tests or enumerated in one) and says so in a one-line doc comment:
//! `/// client-go tools/cache/<file>: <TestName>[/<case>]`. Scenarios that cannot apply, or
//! where we differ on purpose, are listed with the reason in `docs/parity/reflector-informer.md`.

#![allow(
    clippy::result_large_err,
    reason = "list and watch closures return the API's own Result<_, Error>"
)]

mod support;

mod controller;
mod processor_listener;
mod real_time;
mod reflector;
mod reflector_watchlist;
mod regressions;
mod shared_informer;

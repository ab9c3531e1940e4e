//! Reading a Prometheus registry in tests (feature `metrics`): the text exposition parsed into
//! series and values, for assertions on the metrics informer-rs records.
//!
//! ```
//! use informer_testing::metrics::{scrape, value};
//! use prometheus_client::metrics::counter::Counter;
//! use prometheus_client::registry::Registry;
//!
//! let mut registry = Registry::default();
//! let adds: Counter = Counter::default();
//! registry.register("adds", "Adds", adds.clone());
//! adds.inc_by(3);
//! assert_eq!(value(&scrape(&registry), "adds_total"), 3.0);
//! ```

use std::collections::HashMap;

use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;

/// Every sample of a scrape: the series as the text exposition writes it (`name{labels}`, or
/// `name` without labels) and its value.
pub type Samples = HashMap<String, f64>;

/// Encodes `registry` as the text exposition and parses its samples. Comment lines (`# HELP`,
/// `# TYPE`, `# EOF`) are skipped, and so is any line whose value is not a number.
pub fn scrape(registry: &Registry) -> Samples {
    let mut text = String::new();
    // Invariant: writing to a String cannot fail, and prometheus-client's encoders fail only
    // when their writer does.
    #[allow(clippy::expect_used)]
    encode(&mut text, registry).expect("encoding into a String");
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            Some((series.to_owned(), value.parse::<f64>().ok()?))
        })
        .collect()
}

/// The value of `series` (`name{labels}` exactly as exposed).
///
/// # Panics
///
/// When the scrape has no such series; the message lists the series it has, which is what a
/// failing test wants to see.
pub fn value(samples: &Samples, series: &str) -> f64 {
    match samples.get(series) {
        Some(v) => *v,
        None => {
            let mut known: Vec<&str> = samples.keys().map(String::as_str).collect();
            known.sort_unstable();
            panic!("no series {series} in the scrape; it has {known:#?}")
        }
    }
}

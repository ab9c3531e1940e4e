//! What the orchestrator and a contender process say to each other: one JSON object per
//! line, [`Command`]s on the contender's stdin, [`Report`]s on its stdout. Every command is
//! answered by exactly one report (two for the ones that arm something: an acknowledgement,
//! then the outcome), so the orchestrator always knows which phase the contender is in.

use serde::{Deserialize, Serialize};

use crate::stats::Summary;

/// The annotation in which the writer stamps the time of each write: nanoseconds since the
/// Unix epoch (`CLOCK_REALTIME`, the same clock in every process of the machine).
pub const WRITTEN_AT_ANNOTATION: &str = "bench.informer-rs.io/written-at";
/// The annotation in which the writer numbers its writes (0, 1, 2, …, over the whole run).
pub const SEQ_ANNOTATION: &str = "bench.informer-rs.io/seq";

/// An order from the orchestrator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Command {
    /// List and watch; answer [`Report::Synced`] once the cache holds the first list.
    Start,
    /// Remember how many full lists have been applied so far and answer [`Report::Armed`];
    /// answer [`Report::Relisted`] once one more has been applied (the orchestrator forces
    /// it in between), or [`Report::Failed`] after `timeout_seconds`.
    ArmRelist {
        /// How long to wait for the relist.
        timeout_seconds: f64,
    },
    /// Record the stamped events numbered `from_seq .. from_seq + count` as they reach the
    /// handler (or the cache); answer [`Report::Expecting`] at once and
    /// [`Report::Received`] when all have arrived or `timeout_seconds` passed.
    Expect {
        /// The first sequence number.
        from_seq: u64,
        /// How many.
        count: u64,
        /// How long to wait for them.
        timeout_seconds: f64,
    },
    /// Time lookups in the cache for at least `min_seconds` each; answer
    /// [`Report::Lookups`].
    Lookups {
        /// Namespaces to list the pods of, in turn.
        namespaces: Vec<String>,
        /// `namespace/name` keys to get, in turn.
        keys: Vec<String>,
        /// `namespace/name` keys to get once each, every call timed: cold lookups (none of
        /// them asked for before; the stamped writes touched other pods where the size
        /// allows).
        #[serde(default)]
        cold_keys: Vec<String>,
        /// Minimum duration of each timing loop.
        min_seconds: f64,
    },
    /// Stop and exit.
    Quit,
}

/// An answer from a contender.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "report", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Report {
    /// The process is up (runtime and client built, nothing requested yet).
    Ready {
        /// The contender's name.
        contender: String,
    },
    /// The first list is in the cache.
    Synced {
        /// From [`Command::Start`] to synced.
        seconds: f64,
        /// Objects in the cache (for the floor: objects decoded by the list).
        objects: usize,
    },
    /// A relist is awaited.
    Armed,
    /// A full list after [`Command::ArmRelist`] has been applied.
    Relisted {
        /// From [`Command::ArmRelist`] to the relist applied.
        seconds: f64,
        /// Objects in the cache afterwards.
        objects: usize,
        /// Whether the contender saw a 410 (an `ERROR` event or an HTTP answer) since it
        /// started.
        expired_seen: bool,
    },
    /// Stamped events are awaited.
    Expecting,
    /// The awaited stamped events (or as many as came before the timeout).
    Received {
        /// How many were awaited.
        expected: u64,
        /// How many arrived.
        received: u64,
        /// When the first arrived, nanoseconds since the Unix epoch.
        first_unix_nanos: u64,
        /// When the last arrived.
        last_unix_nanos: u64,
        /// Write-to-handler latencies, microseconds.
        latency_micros: Summary,
    },
    /// Lookup timings.
    Lookups {
        /// Listing the pods of one namespace.
        namespace: LookupTiming,
        /// Getting one pod by namespace and name.
        get: LookupTiming,
        /// Cold lookups, each timed on its own (before the loops).
        #[serde(default)]
        cold: Option<ColdLookups>,
    },
    /// The command could not be carried out.
    Failed {
        /// Why.
        message: String,
    },
}

/// How long one kind of lookup took.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LookupTiming {
    /// Lookups timed.
    pub operations: u64,
    /// Mean time per lookup, nanoseconds.
    pub nanos_per_op: f64,
    /// Objects found by one pass over the inputs (every namespace once, every key once):
    /// the orchestrator checks it against the server.
    pub found_per_pass: u64,
}

/// Lookups timed one by one, each input once, before anything warmed a cache for them:
/// microseconds per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ColdLookups {
    /// Getting one pod by key, each of the cold keys once.
    pub get: Summary,
    /// Listing the pods of one namespace, each namespace once.
    pub namespace: Summary,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_round_trip() {
        let commands = [
            Command::Start,
            Command::ArmRelist {
                timeout_seconds: 5.0,
            },
            Command::Expect {
                from_seq: 3,
                count: 10,
                timeout_seconds: 1.5,
            },
            Command::Quit,
        ];
        for c in commands {
            let line = serde_json::to_string(&c).unwrap();
            assert!(!line.contains('\n'));
            assert_eq!(serde_json::from_str::<Command>(&line).unwrap(), c);
        }
        let line = r#"{"report":"synced","seconds":1.5,"objects":7}"#;
        assert_eq!(
            serde_json::from_str::<Report>(line).unwrap(),
            Report::Synced {
                seconds: 1.5,
                objects: 7
            }
        );
    }
}

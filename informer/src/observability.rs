//! Tracing of what the reflector's state machine decides and of handler lag, shared by the
//! reflector and the informer; each event also feeds the metrics recorders (which do nothing
//! without the `metrics` feature). The events, their levels and fields are listed in the crate
//! documentation's [Observability](crate#observability) section.

use informer_core::reflector::{Machine, RestartCounts, RestartReason};
use tokio::time::Instant;

use crate::metrics::ReflectorRecorder;
use crate::registration::RegistrationShared;

/// A handler's live lag (notifications queued and not yet handled, initial-list replays not
/// counted) is reported with a warning when it reaches this many, and again at every doubling.
pub(crate) const SLOW_HANDLER_LAG: usize = 1024;

/// Whether a handler's lag just reached a level worth a warning.
#[inline]
pub(crate) fn lag_warning_due(lag: usize) -> bool {
    lag >= SLOW_HANDLER_LAG && lag.is_power_of_two()
}

/// Warns that a handler falls behind.
pub(crate) fn warn_slow_handler(shared: &RegistrationShared, lag: usize) {
    tracing::warn!(
        target: "informer::listener",
        informer = %shared.informer,
        handler = %shared.name,
        registration = %shared.id,
        lag,
        "handler falls behind: {lag} notifications wait for it"
    );
}

/// What the state machine had counted before a step.
pub(crate) struct BeforeStep {
    relists: u64,
    restarts: RestartCounts,
}

impl BeforeStep {
    pub(crate) fn of(machine: &Machine) -> Self {
        let counters = machine.counters();
        Self {
            relists: counters.relists,
            restarts: counters.watch_restarts.clone(),
        }
    }

    /// Logs and records what the step decided: watch restarts with their reason, relists with
    /// theirs (the restart reason of the same step, or `restart` when the reflector was run
    /// again after a stop), and the last resourceVersion.
    pub(crate) fn after(self, reflector: &str, recorder: &ReflectorRecorder, machine: &Machine) {
        let counters = machine.counters();
        let mut reason = None;
        if counters.watch_restarts.total() != self.restarts.total() {
            for (r, n) in counters.watch_restarts.iter() {
                if n > self.restarts.get(r) {
                    reason = Some(r);
                    recorder.watch_restarted(r);
                    match r {
                        RestartReason::Ended => tracing::debug!(
                            target: "informer::reflector",
                            reflector,
                            reason = r.as_str(),
                            "watch ended; watching again from the last resourceVersion"
                        ),
                        _ => tracing::debug!(
                            target: "informer::reflector",
                            reflector,
                            reason = r.as_str(),
                            "watch restarts"
                        ),
                    }
                }
            }
        }
        if counters.relists > self.relists {
            let reason = reason.map_or("restart", RestartReason::as_str);
            tracing::info!(target: "informer::reflector", reflector, reason, "relisting");
            recorder.relisted(reason);
        }
        recorder.resource_version(machine.last_synced_resource_version());
    }
}

/// An open watch: logs (and records) its end with its length and event count, however it
/// ends (drop included: a cancelled watch ends too).
pub(crate) struct OpenWatch<'a> {
    reflector: &'a str,
    recorder: &'a ReflectorRecorder,
    pub(crate) started: Instant,
    pub(crate) events: u64,
}

impl<'a> OpenWatch<'a> {
    pub(crate) fn new(
        reflector: &'a str,
        recorder: &'a ReflectorRecorder,
        resource_version: Option<&str>,
        streaming: bool,
    ) -> Self {
        tracing::debug!(
            target: "informer::reflector",
            reflector,
            resource_version,
            streaming,
            "watch started"
        );
        Self {
            reflector,
            recorder,
            started: Instant::now(),
            events: 0,
        }
    }
}

impl Drop for OpenWatch<'_> {
    fn drop(&mut self) {
        let took = self.started.elapsed();
        tracing::debug!(
            target: "informer::reflector",
            reflector = self.reflector,
            events = self.events,
            ?took,
            "watch closed"
        );
        self.recorder.watch_ended(took, self.events);
    }
}

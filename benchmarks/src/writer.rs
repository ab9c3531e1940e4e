//! The writer: merge patches of pods over HTTP, each stamped with its sequence number and
//! the time it was sent ([`SEQ_ANNOTATION`], [`WRITTEN_AT_ANNOTATION`]), paced at a steady
//! rate or sent as fast as the server takes them.

use std::sync::Arc;
use std::time::Duration;

use http::header::CONTENT_TYPE;
use kube_client::Client;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::contender::unix_nanos;
use crate::error::HarnessError;
use crate::protocol::{SEQ_ANNOTATION, WRITTEN_AT_ANNOTATION};

/// Writes in flight at most.
const MAX_IN_FLIGHT: usize = 32;

/// What a batch of writes did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct WriteStats {
    /// Writes the server accepted.
    pub written: u64,
    /// Writes that failed.
    pub failed: u64,
    /// From the first write sent to the last answered.
    pub seconds: f64,
}

impl WriteStats {
    /// Accepted writes per second.
    pub fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.written as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// Patches pods in turn (one pass over `keys`, then again), numbering writes from 0.
pub struct Writer {
    client: Client,
    keys: Arc<Vec<(String, String)>>,
    next_seq: u64,
    next_key: usize,
}

impl Writer {
    /// A writer over the pods `keys` (`(namespace, name)`).
    pub fn new(client: Client, keys: Vec<(String, String)>) -> Self {
        Self {
            client,
            keys: Arc::new(keys),
            next_seq: 0,
            next_key: 0,
        }
    }

    /// The sequence number of the next write.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The next writes start again with the first pod, so that every contender sees the same
    /// objects change.
    pub fn rewind(&mut self) {
        self.next_key = 0;
    }

    /// `count` writes at `rate` per second (each sent when due, at most 32
    /// at once; when the server falls behind, writes are sent late and the achieved rate
    /// shows it). `rate` of `None`: as fast as possible.
    pub async fn write(
        &mut self,
        count: u64,
        rate: Option<f64>,
    ) -> Result<WriteStats, HarnessError> {
        if self.keys.is_empty() {
            return Err(HarnessError::Check("no pods to write to".into()));
        }
        let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let mut tasks = JoinSet::new();
        let mut stats = WriteStats::default();
        let started = tokio::time::Instant::now();
        for i in 0..count {
            if let Some(rate) = rate.filter(|r| *r > 0.0) {
                tokio::time::sleep_until(started + Duration::from_secs_f64(i as f64 / rate)).await;
            }
            let permit = Arc::clone(&in_flight)
                .acquire_owned()
                .await
                .map_err(|_| HarnessError::Check("the writer's semaphore closed".into()))?;
            let (ns, name) = &self.keys[self.next_key % self.keys.len()];
            let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
            let seq = self.next_seq;
            self.next_key += 1;
            self.next_seq += 1;
            let client = self.client.clone();
            tasks.spawn(async move {
                let ok = patch(&client, &path, seq).await;
                drop(permit);
                ok
            });
            while let Some(done) = tasks.try_join_next() {
                count_write(&mut stats, done);
            }
        }
        while let Some(done) = tasks.join_next().await {
            count_write(&mut stats, done);
        }
        stats.seconds = started.elapsed().as_secs_f64();
        Ok(stats)
    }
}

fn count_write(stats: &mut WriteStats, done: Result<bool, tokio::task::JoinError>) {
    if matches!(done, Ok(true)) {
        stats.written += 1;
    } else {
        stats.failed += 1;
    }
}

/// One stamped merge patch; whether the server accepted it.
async fn patch(client: &Client, path: &str, seq: u64) -> bool {
    // The stamp is taken last, right before the request leaves.
    let body = format!(
        r#"{{"metadata":{{"annotations":{{"{SEQ_ANNOTATION}":"{seq}","{WRITTEN_AT_ANNOTATION}":"{}"}}}}}}"#,
        unix_nanos()
    );
    let Ok(request) = http::Request::patch(path)
        .header(CONTENT_TYPE, "application/merge-patch+json")
        .body(body.into_bytes())
    else {
        return false;
    };
    client.request_text(request).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_accepted_writes_per_second() {
        let s = WriteStats {
            written: 500,
            failed: 3,
            seconds: 0.5,
        };
        assert_eq!(s.rate(), 1000.0);
        assert_eq!(WriteStats::default().rate(), 0.0);
    }
}

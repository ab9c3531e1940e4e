//! Deadlines on tokio's clock that never overflow.

use std::time::Duration;

use tokio::time::Instant;

/// `now + d`, saturated at about 30 years from `now` (tokio's own "far future"): no setting,
/// however large, makes the server panic on an `Instant` overflow.
pub(crate) fn later(now: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    now.checked_add(d.min(FAR)).unwrap_or(now)
}

pub(crate) async fn sleep_until_opt(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

//! When and how long to wait before retrying a failed model call.
//!
//! Exponential backoff with jitter (delays from `backon`), bounded by a retry count and a maximum
//! delay; a server's `Retry-After` replaces the computed delay but is capped the same way, so a
//! server asking for an hour cannot stall a run. Waiting stops as soon as the run is cancelled.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use backon::{BackoffBuilder, ExponentialBackoff, ExponentialBuilder};
use tokio_util::sync::CancellationToken;

/// Statuses that say "try again later": rate limits, overload and gateway failures.
const RETRYABLE_STATUSES: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// The delays of one call's retries.
#[derive(Debug)]
pub struct Backoff {
    delays: ExponentialBackoff,
    max_delay: Duration,
}

impl Backoff {
    pub fn new(max_retries: u32, base_delay: Duration, max_delay: Duration) -> Self {
        // Without backon's `std` feature its jitter has a fixed seed; seed it from the clock so
        // that clients retrying together do not retry in step.
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        let delays = ExponentialBuilder::new()
            .with_min_delay(base_delay)
            .with_max_delay(max_delay)
            .with_max_times(max_retries as usize)
            .with_jitter()
            .with_jitter_seed(seed)
            .build();
        Self { delays, max_delay }
    }

    /// The wait before the next attempt, or `None` when the retries are used up. `retry_after`
    /// (the server's wish) wins over the computed delay; both are capped at the maximum delay.
    pub fn next_delay(&mut self, retry_after: Option<Duration>) -> Option<Duration> {
        let computed = self.delays.next()?;
        Some(retry_after.unwrap_or(computed).min(self.max_delay))
    }
}

pub fn is_retryable_status(status: u16) -> bool {
    RETRYABLE_STATUSES.contains(&status)
}

/// A `Retry-After` value in seconds (integer or decimal). The HTTP-date form is ignored: LLM
/// APIs send seconds, and the computed backoff is a fine fallback.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// Sleeps for `delay`; returns `false` if `cancel` fired first.
pub async fn sleep_unless_cancelled(delay: Duration, cancel: &CancellationToken) -> bool {
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = tokio::time::sleep(delay) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delays(backoff: &mut Backoff, retry_after: Option<Duration>) -> Vec<Option<Duration>> {
        (0..4).map(|_| backoff.next_delay(retry_after)).collect()
    }

    #[test]
    fn delays_grow_with_jitter_and_stop_after_max_retries() {
        let mut backoff = Backoff::new(3, Duration::from_millis(100), Duration::from_secs(30));
        let delays = delays(&mut backoff, None);
        assert_eq!(delays[3], None, "three retries, then none: {delays:?}");
        // Jitter adds up to the delay itself: attempt n waits in [base·2ⁿ, 2·base·2ⁿ).
        for (attempt, delay) in delays[..3].iter().enumerate() {
            let floor = Duration::from_millis(100 << attempt);
            let delay = delay.unwrap();
            assert!(delay >= floor && delay < floor * 2, "attempt {attempt}: {delay:?}");
        }
    }

    #[test]
    fn delays_never_exceed_max_delay() {
        let mut backoff = Backoff::new(10, Duration::from_secs(1), Duration::from_secs(2));
        let longest = delays(&mut backoff, None).into_iter().flatten().max().unwrap();
        assert!(longest <= Duration::from_secs(2), "{longest:?}");
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let mut backoff = Backoff::new(2, Duration::from_millis(100), Duration::from_secs(5));
        assert_eq!(backoff.next_delay(Some(Duration::ZERO)), Some(Duration::ZERO));
        assert_eq!(backoff.next_delay(Some(Duration::from_secs(3600))), Some(Duration::from_secs(5)));
        assert_eq!(backoff.next_delay(Some(Duration::ZERO)), None);
    }

    #[test]
    fn zero_retries_means_no_delay() {
        assert_eq!(Backoff::new(0, Duration::from_millis(1), Duration::from_secs(1)).next_delay(None), None);
    }

    #[test]
    fn retry_after_parses_seconds_only() {
        let parsed: Vec<Option<Duration>> = ["0", " 2 ", "1.5", "-1", "Wed, 21 Oct 2015 07:28:00 GMT", "NaN"]
            .iter()
            .map(|v| parse_retry_after(v))
            .collect();
        assert_eq!(
            parsed,
            [Some(Duration::ZERO), Some(Duration::from_secs(2)), Some(Duration::from_millis(1500)), None, None, None]
        );
    }

    #[test]
    fn retryable_statuses() {
        let retryable: Vec<u16> = (400..600).filter(|&status| is_retryable_status(status)).collect();
        assert_eq!(retryable, [429, 500, 502, 503, 504, 529]);
    }
}

//! Waiting for a warm pool to fill: its replacements are provisioned in the background, and
//! tests and benchmarks start a call once the pool holds what they expect.

use std::time::Duration;

use escepine_sandbox::WarmPool;

/// Waits, polling every millisecond for at most `within`, until `pool` holds at least `n`
/// ready sandboxes; whether it does.
pub async fn holds(pool: &WarmPool, n: usize, within: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if pool.ready() >= n {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

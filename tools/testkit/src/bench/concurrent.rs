//! Governed calls driven from many tasks at once, timed for criterion's `iter_custom`.

use std::time::{Duration, Instant};

use escepine_contract::Principal;
use escepine_runtime::Runtime;
use serde_json::Value;

/// The time `iters` calls of `tool` by `principal` with `payload` take when `concurrency` tasks
/// on `rt` make them (each its share, one after another), scaled to exactly `iters` calls.
pub fn time_calls(
    rt: &tokio::runtime::Runtime,
    runtime: &Runtime,
    principal: &Principal,
    tool: &'static str,
    payload: &Value,
    concurrency: usize,
    iters: u64,
) -> Duration {
    let per_task = (iters as usize).div_ceil(concurrency);
    let start = Instant::now();
    rt.block_on(async {
        let tasks: Vec<_> = (0..concurrency)
            .map(|_| {
                let (runtime, principal, payload) =
                    (runtime.clone(), principal.clone(), payload.clone());
                tokio::spawn(async move {
                    for _ in 0..per_task {
                        runtime
                            .dispatch(&principal, tool, payload.clone())
                            .await
                            .expect("ok");
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
    });
    start
        .elapsed()
        .mul_f64(iters as f64 / (per_task * concurrency) as f64)
}

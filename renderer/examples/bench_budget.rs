//! Render budget benchmark (issue 39): how soon a render stops once its deadline passes,
//! beside the same render run to its end in the same run. Run through `scripts/bench-budget`.
//!
//! The tree is the report's: `--nodes` rectangles (default 40), each with a 500 px layer
//! blur and a drop shadow of 500 px blur and spread, at `--width` (default 2160). For each
//! budget it prints the median over `--runs` of the time from the deadline to the moment
//! `render_until` returned (the stop latency), and the whole render's time without a
//! deadline with the ratio whole / budget+latency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adforge_renderer::{
    Deadline, FetchLimits, FontLibrary, HttpFetcher, RenderOptions, Renderer, Tree,
};

#[path = "../tests/render/stress_trees.rs"]
#[allow(dead_code)]
mod stress_trees;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs: usize = arg(&args, "--runs", 5).max(1);
    let nodes: usize = arg(&args, "--nodes", 40);
    let width: u32 = arg(&args, "--width", 2160);
    let renderer = Renderer::new(
        FontLibrary::bundled(),
        Arc::new(HttpFetcher::new(FetchLimits::default())),
    );
    let tree = Tree::from_value(stress_trees::blur_heavy(nodes)).expect("the bench tree parses");
    let options = RenderOptions {
        width: Some(width),
        encode_png: false,
    };
    // The whole render, once (it is the slow side of the ratio).
    let t = Instant::now();
    let whole = renderer.render(&tree, &options).map(|_| ());
    let whole_ms = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{nodes} nodes with 500 px blur + shadow at {width} px; whole render {whole_ms:.0} ms ({})",
        if whole.is_ok() { "drawn" } else { "refused" }
    );
    println!(
        "{:>10} | {:>14} | {:>14} | {:>10}",
        "budget ms", "stop latency", "max latency", "whole/stop"
    );
    for budget_ms in [50u64, 100, 300, 1000] {
        let mut lat = Vec::new();
        for _ in 0..runs {
            let at = Instant::now() + Duration::from_millis(budget_ms);
            let out = renderer.render_until(&tree, &options, &Deadline::at(at));
            let late = Instant::now().saturating_duration_since(at);
            if out.is_ok() {
                // Finished within the budget: no stop to measure.
                continue;
            }
            lat.push(late.as_secs_f64() * 1e3);
        }
        if lat.is_empty() {
            println!("{budget_ms:>10} | finished inside the budget");
            continue;
        }
        let max = lat.iter().copied().fold(0.0, f64::max);
        let med = median(lat);
        println!(
            "{budget_ms:>10} | {med:>11.1} ms | {max:>11.1} ms | {:>9.1}x",
            whole_ms / (budget_ms as f64 + med)
        );
    }
}

//! Prometheus metrics of one API process, in a registry of its own (several servers in
//! one test process do not mix), served by `crate::ops` at `/metrics`.
//!
//! Counted where the thing happens: requests by the `request` middleware here (route
//! template, not the raw path, so ids do not multiply series), jobs and wallet movements by
//! the event applier (`crate::jobs`) once its transaction committed, so a redelivered event
//! is not counted twice. Queue depth and the outbox are read when scraped.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::response::Response;
use prometheus::{
    Encoder, Gauge, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, Opts, Registry,
    TextEncoder,
};

/// The metrics of one API process.
pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    jobs: IntCounterVec,
    job_duration: HistogramVec,
    render_stage: HistogramVec,
    wallet: IntCounterVec,
    wallet_cents: IntCounterVec,
    queue_jobs: IntGauge,
    queue_delayed: IntGauge,
    queue_oldest_age: Gauge,
    outbox_rows: IntGauge,
}

/// What the applier did with one worker event, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    /// `image_ad` or `swipe_file`.
    pub kind: &'static str,
    /// `completed` or `failed`.
    pub outcome: &'static str,
    /// The time the worker reported for the attempt (completed jobs).
    pub duration: Option<Duration>,
    /// A wallet hold that was captured or released: (`capture` | `release`, cents).
    pub wallet: Option<(&'static str, i64)>,
}

impl Metrics {
    /// Creates the metrics and registers them.
    ///
    /// # Errors
    /// Only for a malformed metric definition (a bug).
    pub fn new() -> Result<Self, prometheus::Error> {
        let registry = Registry::new();
        let http_requests = IntCounterVec::new(
            Opts::new(
                "adforge_http_requests_total",
                "HTTP requests answered, by method, route template and status",
            ),
            &["method", "route", "status"],
        )?;
        let http_duration = HistogramVec::new(
            HistogramOpts::new(
                "adforge_http_request_duration_seconds",
                "Time from the request's arrival to its response head, by method, route template and status",
            )
            .buckets(vec![
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["method", "route", "status"],
        )?;
        let jobs = IntCounterVec::new(
            Opts::new(
                "adforge_jobs_total",
                "Jobs finished, by kind (image_ad, swipe_file) and outcome (completed, failed), as applied by this API node",
            ),
            &["kind", "outcome"],
        )?;
        let job_duration = HistogramVec::new(
            HistogramOpts::new(
                "adforge_job_duration_seconds",
                "Time a worker reported for a completed job's successful attempt, by kind",
            )
            .buckets(vec![
                0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0,
            ]),
            &["kind"],
        )?;
        let render_stage = HistogramVec::new(
            HistogramOpts::new(
                "adforge_render_stage_seconds",
                "Time of each stage of a completed ad's 4K render (images, layout, scene, raster, encode; gpu_upload, gpu_draw, gpu_readback on the GPU), by the backend that drew it, as the worker reported",
            )
            .buckets(vec![
                0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ]),
            &["stage", "backend"],
        )?;
        let wallet = IntCounterVec::new(
            Opts::new(
                "adforge_wallet_operations_total",
                "Wallet holds captured (charged) or released (given back), by operation",
            ),
            &["operation"],
        )?;
        let wallet_cents = IntCounterVec::new(
            Opts::new(
                "adforge_wallet_cents_total",
                "Cents of wallet holds captured or released, by operation",
            ),
            &["operation"],
        )?;
        let queue_jobs = IntGauge::new(
            "adforge_queue_jobs",
            "Jobs in the queue, waiting or being worked on (read at scrape time)",
        )?;
        let queue_delayed = IntGauge::new(
            "adforge_queue_delayed_jobs",
            "Jobs waiting out a retry backoff (read at scrape time)",
        )?;
        let queue_oldest_age = Gauge::new(
            "adforge_queue_oldest_job_age_seconds",
            "Age of the oldest job in the queue; 0 when the queue is empty",
        )?;
        let outbox_rows = IntGauge::new(
            "adforge_job_outbox_rows",
            "Committed jobs not yet moved into the queue (the SQL outbox)",
        )?;
        registry.register(Box::new(http_requests.clone()))?;
        registry.register(Box::new(http_duration.clone()))?;
        registry.register(Box::new(jobs.clone()))?;
        registry.register(Box::new(job_duration.clone()))?;
        registry.register(Box::new(render_stage.clone()))?;
        registry.register(Box::new(wallet.clone()))?;
        registry.register(Box::new(wallet_cents.clone()))?;
        registry.register(Box::new(queue_jobs.clone()))?;
        registry.register(Box::new(queue_delayed.clone()))?;
        registry.register(Box::new(queue_oldest_age.clone()))?;
        registry.register(Box::new(outbox_rows.clone()))?;
        Ok(Self {
            registry,
            http_requests,
            http_duration,
            jobs,
            job_duration,
            render_stage,
            wallet,
            wallet_cents,
            queue_jobs,
            queue_delayed,
            queue_oldest_age,
            outbox_rows,
        })
    }

    /// Counts one answered request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let status = status.to_string();
        let labels = [method, route, status.as_str()];
        self.http_requests.with_label_values(&labels).inc();
        self.http_duration
            .with_label_values(&labels)
            .observe(elapsed.as_secs_f64());
    }

    /// Counts what the applier did with one event.
    pub fn observe_applied(&self, applied: &Applied) {
        self.jobs
            .with_label_values(&[applied.kind, applied.outcome])
            .inc();
        if let Some(d) = applied.duration {
            self.job_duration
                .with_label_values(&[applied.kind])
                .observe(d.as_secs_f64());
        }
        if let Some((operation, cents)) = applied.wallet {
            self.wallet.with_label_values(&[operation]).inc();
            self.wallet_cents
                .with_label_values(&[operation])
                .inc_by(u64::try_from(cents).unwrap_or(0));
        }
    }

    /// Records the stage times a worker reported for an applied ad render.
    pub fn observe_render(&self, render: &adforge_worker::RenderTimings) {
        // Known names only, so a worker cannot make series at will.
        let backend = match render.backend.as_str() {
            "gpu" => "gpu",
            _ => "cpu",
        };
        for (stage, ms) in &render.stages_ms {
            let stage = match stage.as_str() {
                s @ ("images" | "layout" | "scene" | "raster" | "encode" | "gpu_upload"
                | "gpu_draw" | "gpu_readback") => s,
                _ => continue,
            };
            self.render_stage
                .with_label_values(&[stage, backend])
                .observe(ms / 1000.0);
        }
    }

    /// Sets the gauges read at scrape time.
    pub fn set_queue(&self, stats: &adforge_worker::QueueStats) {
        self.queue_jobs
            .set(i64::try_from(stats.jobs).unwrap_or(i64::MAX));
        self.queue_delayed
            .set(i64::try_from(stats.delayed).unwrap_or(i64::MAX));
        self.queue_oldest_age
            .set(stats.oldest_job_age.map_or(0.0, |d| d.as_secs_f64()));
    }

    pub fn set_outbox_rows(&self, rows: i64) {
        self.outbox_rows.set(rows);
    }

    /// Everything in the text exposition format (version 0.0.4).
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            tracing::warn!(error = %e, "encoding metrics failed");
        }
        String::from_utf8(out).unwrap_or_default()
    }
}

/// The methods that get their own label value; any other is `other`, so that clients
/// cannot make series at will.
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Middleware: counts every request by method, route template (`/v1/brands/{id}`;
/// `unmatched` for paths no route takes) and status, with its latency.
pub async fn track<N, F>(metrics: &Metrics, req: Request, next: N) -> Response
where
    N: FnOnce(Request) -> F,
    F: Future<Output = Response>,
{
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let method = method_label(req.method());
    let started = Instant::now();
    let res = next(req).await;
    metrics.observe_request(method, &route, res.status().as_u16(), started.elapsed());
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_names_labels_and_counts() {
        let m = Metrics::new().unwrap();
        m.observe_request("GET", "/v1/brands/{id}", 404, Duration::from_millis(3));
        m.observe_applied(&Applied {
            kind: "image_ad",
            outcome: "completed",
            duration: Some(Duration::from_secs(2)),
            wallet: Some(("capture", 150)),
        });
        let text = m.render();
        assert!(text.contains(
            "adforge_http_requests_total{method=\"GET\",route=\"/v1/brands/{id}\",status=\"404\"} 1"
        ));
        assert!(text.contains("adforge_jobs_total{kind=\"image_ad\",outcome=\"completed\"} 1"));
        assert!(text.contains("adforge_wallet_cents_total{operation=\"capture\"} 150"));
        assert!(text.contains("# TYPE adforge_http_request_duration_seconds histogram"));

        // Render stages by backend; unknown stage names make no series.
        m.observe_render(&adforge_worker::RenderTimings {
            backend: "gpu".into(),
            stages_ms: [("raster".to_owned(), 12.0), ("made-up".to_owned(), 1.0)]
                .into_iter()
                .collect(),
        });
        let text = m.render();
        assert!(
            text.contains("adforge_render_stage_seconds_count{backend=\"gpu\",stage=\"raster\"} 1"),
            "{text}"
        );
        assert!(!text.contains("made-up"));
    }
}

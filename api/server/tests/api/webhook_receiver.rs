//! A webhook receiver on loopback for the tests: records every request (path, event id,
//! signature, body) and answers from a plan (default 200; an error status, or never).
//! Used by `webhooks.rs` and `#[path]`-included by the process-level tests of `tests/`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

/// How long [`Receiver::wait_for`] waits for deliveries (renders included) before it gives
/// up: a deadline only a hang reaches.
const RECEIVE_DEADLINE: Duration = Duration::from_secs(180);

#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub event_id: String,
    pub signature: String,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the body is JSON")
    }
}

#[derive(Clone, Copy)]
pub enum Answer {
    Status(u16),
    /// Never answer (the sender times out, or dies).
    Hang,
}

#[derive(Clone, Default)]
pub struct Shared {
    pub hits: Arc<Mutex<Vec<Hit>>>,
    pub plan: Arc<Mutex<VecDeque<Answer>>>,
}

pub struct Receiver {
    pub base: String,
    pub shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(
    axum::extract::State(shared): axum::extract::State<Shared>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(header("content-type"), "application/json");
    shared.hits.lock().unwrap().push(Hit {
        path: uri.path().to_string(),
        event_id: header("adforge-event-id"),
        signature: header("adforge-signature"),
        body: body.to_vec(),
    });
    let next = shared.plan.lock().unwrap().pop_front();
    match next.unwrap_or(Answer::Status(200)) {
        Answer::Status(s) => StatusCode::from_u16(s).unwrap(),
        Answer::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::OK
        }
    }
}

impl Receiver {
    pub async fn start() -> Self {
        Self::start_on(0, Shared::default()).await
    }

    pub async fn start_on(port: u16, shared: Shared) -> Self {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind the receiver");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let app = axum::Router::new()
            .fallback(record)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { base, shared, task }
    }

    pub fn plan(&self, answers: &[Answer]) {
        self.shared
            .plan
            .lock()
            .unwrap()
            .extend(answers.iter().copied());
    }

    pub fn hits(&self, path: &str) -> Vec<Hit> {
        self.shared
            .hits
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.path == path)
            .cloned()
            .collect()
    }

    /// Waits until `path` has at least `n` hits.
    pub async fn wait_for(&self, path: &str, n: usize) -> Vec<Hit> {
        let deadline = tokio::time::Instant::now() + RECEIVE_DEADLINE;
        loop {
            let hits = self.hits(path);
            if hits.len() >= n {
                return hits;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{path}: {} of {n} deliveries arrived",
                hits.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

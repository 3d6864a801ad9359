//! The operator's copy model behind the same checks: a local server that speaks the
//! chat-completions schema proposes the free lines; grounded lines that fit are used, an
//! invented discount or claim is refused and the template writer's words are used instead.

use std::sync::{Arc, Mutex};

use adforge_worker::generate::llm::{ChatCompletions, SlotProposer};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::copy::setup_with;

/// What the server was sent: the Authorization header and the JSON body, per request.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A chat-completions server on loopback answering every request with `content` as the
/// assistant's message; its base URL (`…/v1`) and what it was sent.
async fn chat_server(content: Value) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (log, content) = (log.clone(), content.clone());
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                let (head_end, length) = loop {
                    let n = sock.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..i]).to_lowercase();
                        let length = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (i + 4, length);
                    }
                };
                while buf.len() < head_end + length {
                    let n = sock.read(&mut chunk).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
                assert!(head.starts_with("POST /v1/chat/completions "), "{head}");
                let auth = head
                    .lines()
                    .find_map(|l| {
                        l.to_lowercase()
                            .starts_with("authorization:")
                            .then(|| l["authorization:".len()..].trim().to_owned())
                    })
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap();
                log.lock().unwrap().push((auth, body));
                let answer = json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "model": "test-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content.to_string()}}]
                })
                .to_string();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
                sock.write_all(resp.as_bytes()).await.unwrap();
            });
        }
    });
    (format!("http://{addr}/v1"), seen)
}

fn model(url: &str) -> Option<Arc<dyn SlotProposer>> {
    Some(Arc::new(
        ChatCompletions::new(url, "test-model", Some("sk-test".into())).unwrap(),
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_writes_grounded_lines_and_invented_ones_are_refused() {
    // A model that keeps to the facts: its lines are used, the first that fits the slot at
    // the reference's type size.
    let (url, seen) = chat_server(json!({
        "headline": ["Wake up to calm mornings at home, at work and everywhere", "Calm mornings"],
        "supporting": ["Cold brew that is ready when you are."],
        "cta_label": ["Try it"]
    }))
    .await;
    let s = setup_with(model(&url)).await;
    let (t, report) = s.run(s.job("ia_llm", "benefit_headline")).await;
    assert_eq!(
        t.get("Headline").map(String::as_str),
        Some("Calm mornings"),
        "{t:?} {}",
        report["refused"]
    );
    assert!(
        report["refused"].as_array().unwrap().iter().any(|r| r["writer"] == "llm"
            && r["reason"].as_str().unwrap().contains("does not fit")),
        "{}",
        report["refused"]
    );
    assert_eq!(report["writer"], "llm:test-model");
    let slot = |k: &str| {
        report["slots"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["slot"] == k)
            .cloned()
            .unwrap()
    };
    assert_eq!(slot("headline")["writer"], "llm");
    {
        let seen = seen.lock().unwrap();
        let (auth, body) = &seen[0];
        assert_eq!(auth, "Bearer sk-test");
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["messages"][0]["role"], "system");
        let brief: Value =
            serde_json::from_str(body["messages"][1]["content"].as_str().unwrap()).unwrap();
        assert!(
            brief["slots"]
                .as_array()
                .unwrap()
                .iter()
                .any(|s| s["slot"] == "headline")
        );
    }

    // A model that invents a discount and a claim: refused, the template writer's words used.
    let (url, _) = chat_server(json!({
        "headline": ["50% off everything today"],
        "supporting": ["Free shipping on every order."]
    }))
    .await;
    let s = setup_with(model(&url)).await;
    let (t, report) = s.run(s.job("ia_llm_bad", "benefit_headline")).await;
    let words: Vec<&String> = t.values().collect();
    assert!(
        !words
            .iter()
            .any(|w| w.contains("50%") || w.to_lowercase().contains("free shipping")),
        "{t:?}"
    );
    assert_eq!(report["writer"], "template");
    let refused = report["refused"].as_array().unwrap();
    assert!(
        refused.iter().any(|r| r["writer"] == "llm"
            && r["slot"] == "headline"
            && r["reason"].as_str().unwrap().contains("50%")),
        "{refused:?}"
    );
    assert!(
        refused.iter().any(
            |r| r["writer"] == "llm" && r["reason"].as_str().unwrap().contains("free shipping")
        ),
        "{refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_told_the_voice_and_its_avoided_words_are_refused() {
    // The model writes a word the brand's voice avoids: that line is refused like an
    // invented fact, and the brief told it the voice and the words.
    let (url, seen) = chat_server(json!({
        "headline": ["The revolutionary way to wake up"],
        "supporting": ["Cold brew that is ready when you are."]
    }))
    .await;
    let s = setup_with(model(&url)).await;
    let mut j = s.job("ia_llm_voice", "benefit_headline");
    j.brand.details =
        json!({"voice": {"description": "Playful and warm", "avoid": ["revolutionary"]}});
    let (t, report) = s.run(j).await;
    assert!(
        !t.values()
            .any(|w| w.to_lowercase().contains("revolutionary")),
        "{t:?}"
    );
    assert_eq!(
        t.get("Supporting").map(String::as_str),
        Some("Cold brew that is ready when you are."),
        "the model's other line is used: {t:?}"
    );
    let refused = report["refused"].as_array().unwrap();
    assert!(
        refused.iter().any(|r| r["writer"] == "llm"
            && r["slot"] == "headline"
            && r["reason"].as_str().unwrap().contains("avoids")),
        "{refused:?}"
    );
    let seen = seen.lock().unwrap();
    let brief: Value =
        serde_json::from_str(seen[0].1["messages"][1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(brief["facts"]["words_to_avoid"], json!(["revolutionary"]));
    assert_eq!(brief["facts"]["voice"], "playful");
}

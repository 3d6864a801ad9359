//! A pluggable writer behind the same checks as the template writer: an operator who runs a
//! model server may set an OpenAI-compatible chat-completions endpoint (`--copy-llm-url`,
//! `--copy-llm-model`, the key in `ADFORGE_COPY_LLM_KEY`). Per ad it is asked once for
//! candidates for the free lines (headline, supporting line, eyebrow, call to action) given
//! the slots' roles, the reference's words there and the facts; [`super::slots`] uses a
//! candidate only when it passes the grounding rule and fits its slot at the reference's
//! type size, and the template writer's words otherwise. Fact slots (prices, offers,
//! quotes, ratings, list items, figures) are always the facts themselves.
//!
//! No model ships with adforge (the issue that added this records why: the small instruct
//! models that registry packages carry invented discounts, broke length limits or echoed the
//! brief). A failing or slow endpoint never fails an ad: its words are simply not used.
//! Requests go through the renderer's address policy ([`HttpFetcher::post_json`]); the
//! endpoint is the operator's own configuration, so private addresses are allowed for it.
//! The request asks for temperature 0 and a seed from the ad's inputs and version; a server
//! that honours both gives a retried job the same words.

use std::collections::HashMap;
use std::time::Duration;

use adforge_renderer::{FetchLimits, HttpFetcher};
use serde_json::{Value, json};

/// One slot the model is asked to write.
#[derive(Debug, Clone)]
pub struct BriefSlot {
    /// The slot key (`headline`).
    pub key: String,
    /// Its role.
    pub role: String,
    /// The reference's words there.
    pub reference_words: Option<String>,
    /// About how many characters fit.
    pub max_chars: usize,
}

/// What the model is told.
#[derive(Debug, Clone)]
pub struct Brief {
    pub slots: Vec<BriefSlot>,
    /// The facts, as JSON (product, variant, audience, brand voice).
    pub facts: Value,
    /// The prompt.
    pub prompt: String,
    /// The reference's ad format.
    pub format: Option<String>,
    /// A seed from the ad's inputs and version.
    pub seed: u64,
}

/// Proposes candidate words per slot.
pub trait SlotProposer: Send + Sync {
    /// `llm:<model>`, as reports name the writer.
    fn name(&self) -> String;
    /// Candidates per slot key, best first.
    ///
    /// # Errors
    /// Why there are none (the template writer's words are used).
    fn propose(&self, brief: &Brief) -> Result<HashMap<String, Vec<String>>, String>;
}

/// An OpenAI-compatible chat-completions endpoint.
pub struct ChatCompletions {
    url: String,
    model: String,
    key: Option<String>,
    http: HttpFetcher,
}

/// How long one request may take.
pub const TIMEOUT: Duration = Duration::from_secs(20);

impl ChatCompletions {
    /// The endpoint at `url` (the full `…/chat/completions` URL, or a base URL ending in
    /// `/v1` that it is appended to) serving `model`, with bearer `key`.
    ///
    /// # Errors
    /// When `url` is not an http(s) URL.
    pub fn new(url: &str, model: &str, key: Option<String>) -> Result<ChatCompletions, String> {
        adforge_renderer::address::check_url(url, true)
            .map_err(|e| format!("--copy-llm-url {url}: {e}"))?;
        let url = if url.trim_end_matches('/').ends_with("/chat/completions") {
            url.trim_end_matches('/').to_owned()
        } else {
            format!("{}/chat/completions", url.trim_end_matches('/'))
        };
        Ok(ChatCompletions {
            url,
            model: model.to_owned(),
            key: key.filter(|k| !k.is_empty()),
            http: HttpFetcher::new(FetchLimits {
                max_bytes: 1 << 20,
                timeout: TIMEOUT,
                allow_private: true,
            }),
        })
    }

    /// The request body for `brief`.
    pub fn request(&self, brief: &Brief) -> Value {
        let slots: Vec<Value> = brief
            .slots
            .iter()
            .map(|s| {
                json!({"slot": s.key, "role": s.role, "reference_words": s.reference_words,
                       "max_characters": s.max_chars})
            })
            .collect();
        let system = "You write the words of one image ad. Answer with one JSON object only: each key a slot name from the brief, each value an array of up to 3 candidate lines for it, best first. Follow each slot's role and the reference's words there (a question stays a question, capitals stay capitals) but write about the product in the facts. State no number, price, percentage, date, discount or claim (free shipping, guarantee, sale) that the facts or the prompt do not state. Keep within max_characters.";
        let user = json!({"format": brief.format, "slots": slots, "facts": brief.facts,
                          "prompt": brief.prompt});
        json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user.to_string()}
            ],
            "temperature": 0,
            "seed": brief.seed % (1 << 31),
            "response_format": {"type": "json_object"}
        })
    }
}

impl SlotProposer for ChatCompletions {
    fn name(&self) -> String {
        format!("llm:{}", self.model)
    }

    fn propose(&self, brief: &Brief) -> Result<HashMap<String, Vec<String>>, String> {
        let body = self.request(brief).to_string();
        let answer = self.http.post_json(&self.url, &body, self.key.as_deref())?;
        parse_answer(&answer)
    }
}

/// The candidates in a chat-completions answer: the first choice's message content, a JSON
/// object (possibly in a fenced block) of slot → string or array of strings.
///
/// # Errors
/// When the answer has no such object.
pub fn parse_answer(answer: &str) -> Result<HashMap<String, Vec<String>>, String> {
    let v: Value = serde_json::from_str(answer).map_err(|e| format!("not JSON: {e}"))?;
    let content = v["choices"][0]["message"]["content"]
        .as_str()
        .ok_or("the answer has no choices[0].message.content")?;
    let start = content
        .find('{')
        .ok_or("the content holds no JSON object")?;
    let end = content
        .rfind('}')
        .ok_or("the content holds no JSON object")?;
    let obj: Value = serde_json::from_str(&content[start..=end])
        .map_err(|e| format!("the content's JSON does not parse: {e}"))?;
    let obj = obj.as_object().ok_or("the content is not a JSON object")?;
    Ok(obj
        .iter()
        .map(|(k, v)| {
            let c = match v {
                Value::String(s) => vec![s.clone()],
                Value::Array(a) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .take(5)
                    .map(str::to_owned)
                    .collect(),
                _ => Vec::new(),
            };
            (k.clone(), c)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_the_first_choice() {
        let a = json!({"choices": [{"message": {"role": "assistant",
            "content": "```json\n{\"headline\": [\"Calm mornings\", \"Slow down\"], \"cta\": \"Try it\"}\n```"}}]});
        let got = parse_answer(&a.to_string()).unwrap();
        assert_eq!(got["headline"], vec!["Calm mornings", "Slow down"]);
        assert_eq!(got["cta"], vec!["Try it"]);
        assert!(parse_answer("{\"choices\": []}").is_err());
    }
}

//! The words of ads built on the format references ([`crate::formats`]), read from the
//! editable tree: with facts present, the right fact in the right slot; with facts absent,
//! no offer, price, quote, rating or figure appears and no shown slot is empty; eight
//! references give eight headlines; the prompt steers; the same job writes the same words.
//! And the grounding rule on a tree: an invented "50% off" is refused, a computed one is not.

use std::collections::HashMap;

use adforge_renderer::Renderer;
use adforge_worker::Job;
use adforge_worker::generate::facts::Facts;
use adforge_worker::generate::grounding::check_tree;
use adforge_worker::protocol::{GenerateAdJob, Money, Variant};
use serde_json::{Value, json};

use crate::fixtures::{Harness, job, logo, repo, serve};
use crate::formats;

/// The visible TEXT nodes of a tree: name → characters.
fn texts(tree: &Value) -> HashMap<String, String> {
    tree["nodes"]
        .as_object()
        .unwrap()
        .values()
        .filter(|n| n["type"] == "TEXT" && n["visible"] != false)
        .map(|n| {
            (
                n["name"].as_str().unwrap_or("").to_owned(),
                n["characters"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn variant(price: i64, compare: Option<i64>) -> Variant {
    Variant {
        id: "pv_1".into(),
        name: "500 ml".into(),
        price: Some(Money {
            amount: price,
            currency: "usd".into(),
        }),
        compare_at_price: compare.map(|amount| Money {
            amount,
            currency: "usd".into(),
        }),
    }
}

/// A product with every documented fact, on a variant at $24 instead of $32 (25 % off).
fn with_facts(mut j: GenerateAdJob) -> GenerateAdJob {
    j.product.details = json!({
        "benefits": ["Smooth, never bitter", "Ready in a minute", "Calm mornings at home"],
        "features": ["Low-acid cold brew concentrate", "Steeped for 18 hours"],
        "stats": [{"value": "93%", "label": "of drinkers taste less bitterness"}],
        "reviews": [{"author": "Maria L.", "text": "The only coffee my whole team agrees on. Smooth and never bitter.", "rating": 5}],
        "guarantee": "30-day money-back guarantee"
    });
    j.variant = Some(variant(2400, Some(3200)));
    j
}

/// No stated facts: no details, no variant prices, a description without figures.
fn without_facts(mut j: GenerateAdJob) -> GenerateAdJob {
    j.product.details = json!({});
    j.product.description = Some("Smooth, low-acid cold brew concentrate.".into());
    j.variant = None;
    j
}

pub struct Setup {
    pub harness: Harness,
    base: String,
    /// The references' PNGs by name.
    pngs: HashMap<String, Vec<u8>>,
}

async fn setup() -> Setup {
    setup_with(None).await
}

/// The format references served, and a harness whose handler asks `model` for copy.
pub async fn setup_with(
    model: Option<std::sync::Arc<dyn adforge_worker::generate::llm::SlotProposer>>,
) -> Setup {
    let renderer = Renderer::with_defaults();
    let mut files = HashMap::new();
    for r in formats::all() {
        files.insert(format!("/ref/{}.png", r.name), r.png(&renderer));
    }
    files.insert(
        "/img/coffee.png".into(),
        std::fs::read(repo().join("assets/samples/coffee.png")).unwrap(),
    );
    files.insert("/logo/dark.png".into(), logo([24, 24, 32]));
    files.insert("/logo/light.png".into(), logo([250, 250, 250]));
    let base = serve(files.clone()).await;
    Setup {
        harness: Harness::with_config(|c| c.with_copy_model(model)).await,
        base,
        pngs: formats::all()
            .iter()
            .map(|r| {
                (
                    r.name.to_owned(),
                    files[&format!("/ref/{}.png", r.name)].clone(),
                )
            })
            .collect(),
    }
}

impl Setup {
    pub fn job(&self, id: &str, reference: &str) -> GenerateAdJob {
        let mut j = job(&self.base, id, &format!("/ref/{reference}.png"), true);
        j.brand
            .logos
            .iter_mut()
            .for_each(|l| l.url = l.url.replace(&self.harness.base, &self.base));
        j.variant_image_urls = vec![format!("{}/img/coffee.png", self.base)];
        j
    }

    /// The ad's texts and its copy report's slots (name → role).
    pub async fn run(&self, j: GenerateAdJob) -> (HashMap<String, String>, Value) {
        self.run_png(j).await.0
    }

    /// The ad's editable tree.
    pub async fn tree(&self, j: GenerateAdJob) -> Value {
        let done = crate::fixtures::ad(self.harness.run(Job::GenerateImageAd(j)).await.0.unwrap());
        done.json_tree.unwrap()
    }

    /// [`Setup::run`], and the ad's PNG.
    pub async fn run_png(&self, j: GenerateAdJob) -> ((HashMap<String, String>, Value), Vec<u8>) {
        let (texts, report, png, _) = self.run_all(j).await;
        ((texts, report), png)
    }

    /// The ad's texts, copy report, PNG and editable tree.
    pub async fn run_all(
        &self,
        j: GenerateAdJob,
    ) -> (HashMap<String, String>, Value, Vec<u8>, Value) {
        let (id, version) = (j.ad_id.clone(), j.version);
        let done = self
            .harness
            .run(Job::GenerateImageAd(j))
            .await
            .0
            .unwrap_or_else(|e| panic!("{id}: {e:?}"));
        let done = crate::fixtures::ad(done);
        let report = serde_json::to_value(done.copy.expect("a copy report")).unwrap();
        let png = self
            .harness
            .blob(&adforge_worker::generate::blob_key(&id, version))
            .await;
        let tree = done.json_tree.unwrap();
        (texts(&tree), report, png, tree)
    }
}

/// The lead line of an ad: its headline, else the largest line the reference led with.
fn headline(t: &HashMap<String, String>) -> String {
    ["Headline", "Offer", "Quote", "Stat", "Price"]
        .iter()
        .find_map(|n| t.get(*n).cloned())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn facts_land_in_their_slots_and_nothing_is_invented() {
    let s = setup().await;
    let mut failures = Vec::new();
    let mut headlines = Vec::new();
    let mut sheet = Vec::new();
    let mut free_lines: Vec<(&str, String)> = Vec::new();
    for (i, r) in formats::all().into_iter().enumerate() {
        let (t, report, png, tree) = s
            .run_all(with_facts(s.job(&format!("ia_f_{}", r.name), r.name)))
            .await;
        // Every ad carries the brand, on its reference's own layout: the reference's logo
        // slot, or a free corner.
        let root = &tree["nodes"][tree["root"].as_str().unwrap()];
        let logo = tree["nodes"]
            .as_object()
            .unwrap()
            .values()
            .find(|n| n["name"] == "Logo");
        if root["name"] != adforge_worker::generate::BLUEPRINT_LAYOUT
            || logo.is_none_or(|l| l["visible"] == false)
        {
            failures.push(format!(
                "{}: layout {}, logo {logo:?}",
                r.name, root["name"]
            ));
        }
        // Each ad at 1080 px too, to read its words (the sheet's rows are small).
        let dir = crate::fixtures::repo().join("target/generate-samples");
        std::fs::create_dir_all(&dir).unwrap();
        image::load_from_memory(&png)
            .unwrap()
            .resize(1080, 1080, image::imageops::FilterType::Triangle)
            .save(dir.join(format!("copy-{}.png", r.name)))
            .unwrap();
        sheet.push((s.pngs[r.name].clone(), png));
        if i >= 8 {
            // The story and the content ad are on the contact sheet only (their lines are
            // not checked for repeats either, as their headlines are not).
            continue;
        }
        free_lines.extend(
            ["Headline", "Supporting", "Eyebrow", "Offer"]
                .iter()
                .filter_map(|k| t.get(*k))
                .map(|l| (r.name, l.to_lowercase())),
        );
        let dump = format!("{t:?}\n    slots {}", report["slots"]);
        let has = |name: &str, want: &str| t.get(name).is_some_and(|v| v.contains(want));
        let ok = match r.name {
            "offer" => t.values().any(|v| v.contains("25%")),
            "price_led" => has("Price", "$24") && has("Compare At Price", "$32"),
            "testimonial" => {
                has("Quote", "The only coffee my whole team agrees on")
                    && has("Quote Author", "Maria L.")
                    && has("Rating", "\u{2605}\u{2605}\u{2605}\u{2605}\u{2605}")
            }
            "listicle" => (1..=3).all(|i| {
                t.get(&format!("List Item {i}")).is_some_and(|v| {
                    v.starts_with(&format!("{i}. "))
                        && [
                            "Smooth, never bitter",
                            "Ready in a minute",
                            "Calm mornings at home",
                            "Low-acid cold brew concentrate",
                            "Steeped for 18 hours",
                        ]
                        .iter()
                        .any(|b| v.contains(b))
                })
            }),
            "statistic" => has("Stat", "93%"),
            "benefit_headline" => t.get("Headline").is_some_and(|h| {
                let first = h.split_whitespace().next().unwrap_or("").to_lowercase();
                ["wake", "choose", "say", "try", "meet", "switch", "treat"]
                    .contains(&first.as_str())
            }),
            "question_headline" => t.get("Headline").is_some_and(|h| h.ends_with('?')),
            "all_caps_poster" => t
                .get("Headline")
                .is_some_and(|h| h.chars().any(char::is_alphabetic) && *h == h.to_uppercase()),
            _ => true,
        };
        if !ok {
            failures.push(format!("{}: {dump}", r.name));
        }
        // Every stated fact has a source in the report.
        if t.values().any(|v| v.contains('$') || v.contains('%'))
            && report["facts"].as_array().is_none_or(Vec::is_empty)
        {
            failures.push(format!(
                "{}: facts without sources: {}",
                r.name, report["facts"]
            ));
        }
        if r.name == "price_led" {
            let sources: Vec<(&str, &str)> = report["facts"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["slot"].as_str().unwrap(), f["source"].as_str().unwrap()))
                .collect();
            if !sources.contains(&("price", "variant.price"))
                || !sources.contains(&("compare_at_price", "variant.compare_at_price"))
            {
                failures.push(format!("price_led: fact sources {sources:?}"));
            }
        }
        headlines.push(headline(&t));
    }
    // docs/copy.md's contact sheet: each reference beside its ad, with every fact given.
    crate::blueprint::write_sheet(&sheet, "copy-sheet.png");
    let distinct: std::collections::HashSet<&String> = headlines.iter().collect();
    if distinct.len() != headlines.len() {
        failures.push(format!("headlines repeat: {headlines:?}"));
    }
    // Nor does any other line of one ad repeat in another (calls to action follow their
    // reference's kind and may).
    for (i, (a, line)) in free_lines.iter().enumerate() {
        if let Some((b, _)) = free_lines[i + 1..]
            .iter()
            .find(|(b, l)| l == line && b != a)
        {
            failures.push(format!("\"{line}\" is said by the {a} and the {b} ads"));
        }
    }
    for r in formats::all().into_iter().take(8) {
        let (t, report) = s
            .run(without_facts(s.job(&format!("ia_n_{}", r.name), r.name)))
            .await;
        let stated: Vec<&String> = t
            .values()
            .filter(|v| v.contains(['$', '%', '\u{2605}', '\u{201c}']))
            .collect();
        let empty: Vec<&String> = t.keys().filter(|k| t[*k].trim().is_empty()).collect();
        if !stated.is_empty() || !empty.is_empty() {
            failures.push(format!(
                "{} without facts: stated {stated:?}, empty {empty:?}\n    slots {}",
                r.name, report["slots"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_prompt_steers_and_words_are_deterministic() {
    let s = setup().await;
    let mut j = s.job("ia_prompt", "benefit_headline");
    j.prompt = Some("Warm, and mention free returns.".into());
    let (t, _) = s.run(j.clone()).await;
    assert!(
        t.get("Supporting")
            .is_some_and(|v| v.to_lowercase().contains("free returns")),
        "{t:?}"
    );
    let (again, _) = s.run(j).await;
    assert_eq!(t, again, "a retried job writes the same words");
    // Every ad carries the brand: a reference without a logo gets one in a free corner,
    // unless the prompt asks for none.
    let logo = |tree: &Value| {
        tree["nodes"]
            .as_object()
            .unwrap()
            .values()
            .find(|n| n["name"] == "Logo")
            .map(|n| n["visible"] != false)
    };
    let tree = s.tree(s.job("ia_logo", "benefit_headline")).await;
    assert_eq!(logo(&tree), Some(true), "a logo in a free corner");
    let mut j = s.job("ia_nologo", "benefit_headline");
    j.prompt = Some("Warm, no logo".into());
    assert_eq!(
        logo(&s.tree(j).await),
        Some(false),
        "the prompt asked for no logo"
    );
    let mut q = s.job("ia_quoted", "question_headline");
    q.prompt = Some("Lead with \"Mornings, sorted\"".into());
    let (t, _) = s.run(q).await;
    assert_eq!(
        t.get("Headline").map(String::as_str),
        Some("Mornings, sorted")
    );
}

#[test]
fn the_grounding_rule_refuses_an_invented_discount() {
    let tree = |words: &str| {
        json!({"root": "r", "nodes": {
            "r": {"id": "r", "type": "FRAME", "width": 100, "height": 100, "children": ["t"]},
            "t": {"id": "t", "type": "TEXT", "name": "Offer", "characters": words}
        }})
    };
    let mut j = job("http://x", "ia_g", "/r.png", true);
    j.variant = Some(variant(2400, None));
    let refused = check_tree(&tree("50% off"), &Facts::from_job(&j)).unwrap_err();
    assert!(refused[0].contains("50%"), "{refused:?}");
    j.variant = Some(variant(2400, Some(4800)));
    let stated = check_tree(&tree("50% off"), &Facts::from_job(&j)).unwrap();
    assert_eq!(stated[0].text, "50%");
    assert!(stated[0].source.contains("compare_at_price"), "{stated:?}");
    // Nor may an ad invent a price, a guarantee or stars.
    for invented in [
        "Only $19",
        "30-day guarantee",
        "\u{2605}\u{2605}\u{2605}\u{2605}\u{2605}",
    ] {
        assert!(
            check_tree(&tree(invented), &Facts::from_job(&j)).is_err(),
            "{invented}"
        );
    }
}

/// The copy step's time per ad (roles read, slots written and measured, grounding checked),
/// for the issue's benchmark: prints the median over the format references.
#[test]
#[ignore = "prints how long writing one ad's words takes; run with --release for real numbers"]
fn copy_time_per_ad() {
    use adforge_worker::blueprint::{analyse_image, template::template};
    use adforge_worker::generate::{blueprint_words, grounding};
    let renderer = Renderer::with_defaults();
    let mut times = Vec::new();
    for r in formats::all() {
        let bp = analyse_image(&r.png(&renderer)).unwrap();
        let tpl = template(&bp);
        let j = with_facts(job("http://x", "ia_t", "/r.png", true));
        let facts = Facts::from_job(&j);
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let w = blueprint_words(&j, &bp, &tpl, &facts, &renderer, None);
            for s in w.slots.values() {
                grounding::check_text(&s.text, "x", &facts).unwrap();
            }
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "copy per ad: median {:.2} ms, max {:.2} ms over {} runs",
        times[times.len() / 2],
        times[times.len() - 1],
        times.len()
    );
    // Reading a reference's words (once per reference: the blueprint cache keeps it), with a
    // process started for the read (cold) and with the one started ahead (warm), side by
    // side on each reference.
    let reader = crate::roles::tesseract().warm();
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    let ms = |t: std::time::Instant| t.elapsed().as_secs_f64() * 1000.0;
    for _ in 0..3 {
        for r in formats::all() {
            let png = r.png(&renderer);
            let t = std::time::Instant::now();
            adforge_worker::blueprint::analyse_image_with(&png, None).unwrap();
            let plain = ms(t);
            let fresh = reader.clone();
            let t = std::time::Instant::now();
            adforge_worker::blueprint::analyse_image_with(&png, Some(&fresh)).unwrap();
            cold.push(ms(t) - plain);
            drop(fresh);
            // Let the spare load its model, as it does while the rest of an ad is made.
            std::thread::sleep(std::time::Duration::from_millis(300));
            let t = std::time::Instant::now();
            adforge_worker::blueprint::analyse_image_with(&png, Some(&reader)).unwrap();
            warm.push(ms(t) - plain);
        }
    }
    for (what, v) in [("cold", &mut cold), ("started ahead", &mut warm)] {
        v.sort_by(f64::total_cmp);
        println!(
            "reading a reference's words with Tesseract, {what}: median {:.0} ms, max {:.0} ms over {} reads",
            v[v.len() / 2],
            v[v.len() - 1],
            v.len()
        );
    }
}

/// All words of an ad, lower case, one line per text.
fn all_words(t: &HashMap<String, String>) -> String {
    let mut v: Vec<&String> = t.values().collect();
    v.sort();
    v.iter()
        .map(|s| s.to_lowercase())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `text` (lower case) holds `word` on word boundaries.
fn has_word(text: &str, word: &str) -> bool {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .collect::<Vec<_>>()
        .windows(word.split(' ').count())
        .any(|w| w.join(" ") == word)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_offer_is_not_stated_and_a_live_one_says_when_it_ends() {
    let s = setup().await;
    // The job's creation time (2026-06-01, see the fixtures) decides; the worker's clock
    // does not.
    let with_offer = |id: &str, ends_at: Option<&str>| {
        let mut j = s.job(id, "offer");
        j.product.details = json!({
            "benefits": ["Smooth, never bitter"],
            "offer": {"text": "Free tote with your first order", "ends_at": ends_at},
        });
        j.variant = Some(variant(2400, None));
        j
    };
    let (t, report) = s.run(with_offer("ia_live", Some("2026-06-30"))).await;
    let words = all_words(&t);
    assert!(words.contains("free tote"), "the live offer: {t:?}");
    assert!(words.contains("june 30"), "when it ends: {t:?}");
    let dated = report["facts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["kind"] == "date" && f["source"] == "product.details.offer.ends_at");
    assert!(dated, "{}", report["facts"]);
    // The last day is still live; the day after is not.
    let (t, _) = s.run(with_offer("ia_today", Some("2026-06-01"))).await;
    assert!(all_words(&t).contains("free tote"), "{t:?}");
    for (id, ends_at) in [("ia_ended", "2026-05-31"), ("ia_long_ended", "2020-01-01")] {
        let (t, report) = s.run(with_offer(id, Some(ends_at))).await;
        let words = all_words(&t);
        assert!(
            !words.contains("tote") && !words.contains("may 31") && !words.contains("june"),
            "{ends_at}: {t:?}\n{}",
            report["slots"]
        );
        // No shown slot is left empty for it.
        assert!(t.values().all(|v| !v.trim().is_empty()), "{t:?}");
    }
    // Without the ad's creation time (an older API node), an offer with an end date cannot
    // be shown live: it is not stated. One without an end date is.
    let mut j = with_offer("ia_undated", Some("2026-06-30"));
    j.created_at = None;
    assert!(!all_words(&s.run(j).await.0).contains("tote"));
    let (t, _) = s.run(with_offer("ia_open", None)).await;
    assert!(all_words(&t).contains("free tote"), "{t:?}");
    // And the grounding rule: an ended offer's date grounds nothing.
    let mut j = with_offer("ia_g2", Some("2026-05-31"));
    j.created_at = Some("2026-06-01T00:00:00.000Z".into());
    let tree = json!({"root": "r", "nodes": {
        "r": {"id": "r", "type": "FRAME", "width": 100, "height": 100, "children": ["t"]},
        "t": {"id": "t", "type": "TEXT", "name": "Eyebrow", "characters": "Ends May 31"}
    }});
    assert!(check_tree(&tree, &Facts::from_job(&j)).is_err());
}

/// The same product and references for brands of three voices.
fn voiced(mut j: GenerateAdJob, description: &str) -> GenerateAdJob {
    j.brand.details = json!({"voice": {"description": description}});
    j
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_voice_steers_the_words_and_avoided_words_never_appear() {
    let s = setup().await;
    let refs = [
        "benefit_headline",
        "question_headline",
        "offer",
        "price_led",
    ];
    let mut by_voice: HashMap<&str, Vec<HashMap<String, String>>> = HashMap::new();
    for (voice, description) in [
        ("playful", "Playful, cheeky and warm"),
        ("formal", "Refined and professional"),
        ("minimal", "Minimal. Quiet confidence"),
    ] {
        for r in refs {
            let j = voiced(
                with_facts(s.job(&format!("ia_v_{voice}_{r}"), r)),
                description,
            );
            let (t, _) = s.run(j.clone()).await;
            // Deterministic per voice too.
            assert_eq!(t, s.run(j).await.0, "{voice} {r}");
            by_voice.entry(voice).or_default().push(t);
        }
    }
    let free = |t: &HashMap<String, String>| -> Vec<String> {
        ["Headline", "Supporting", "Eyebrow", "Cta Label", "Cta Text"]
            .iter()
            .filter_map(|k| t.get(*k).cloned())
            .collect()
    };
    let lines = |voice: &str| -> Vec<String> { by_voice[voice].iter().flat_map(free).collect() };
    let (playful, formal, minimal) = (lines("playful"), lines("formal"), lines("minimal"));
    assert!(
        playful.iter().any(|l| l.contains('!')),
        "a playful voice exclaims somewhere: {playful:?}"
    );
    assert!(
        !formal.iter().any(|l| l.contains('!')),
        "a formal voice never exclaims: {formal:?}"
    );
    assert!(
        !minimal.iter().any(|l| l.contains('!')),
        "a minimal voice never exclaims: {minimal:?}"
    );
    let words = |ls: &[String]| {
        ls.iter()
            .map(|l| l.split_whitespace().count())
            .sum::<usize>()
    };
    assert!(
        words(&minimal) < words(&formal) && words(&minimal) < words(&playful),
        "a minimal voice says less: {minimal:?} against {formal:?} and {playful:?}"
    );
    // The voices write different lines on the same references.
    for (i, r) in refs.iter().enumerate() {
        let h: std::collections::HashSet<Vec<String>> = ["playful", "formal", "minimal"]
            .iter()
            .map(|v| free(&by_voice[v][i]))
            .collect();
        assert_eq!(h.len(), 3, "{r}: {h:?}");
    }

    // Words the voice avoids are never written, on any reference, even where they are the
    // writer's first choice or part of a fact (the benefit "Smooth, never bitter").
    let avoid = ["meet", "now", "smooth", "yours", "discover", "shop"];
    for r in formats::all().into_iter().take(8) {
        let mut j = with_facts(s.job(&format!("ia_avoid_{}", r.name), r.name));
        j.brand.details = json!({"voice": {"description": "Warm", "avoid": avoid}});
        let (t, report) = s.run(j).await;
        for (slot, text) in &t {
            let lower = text.to_lowercase();
            for a in avoid {
                assert!(
                    !has_word(&lower, a),
                    "{}: {slot} says \"{text}\" ({a} is avoided)",
                    r.name
                );
            }
            assert!(!text.trim().is_empty(), "{}: {slot} is empty", r.name);
        }
        assert!(report["slots"].as_array().is_some_and(|s| !s.is_empty()));
    }
}

/// A product whose figures collide: a $24 price beside a $30 former price (20 % off, $6
/// saved), a 30-day guarantee, and a stat and a shipping line of 24h; few other lines, so
/// the guarantee and the shipping line are said.
fn colliding(mut j: GenerateAdJob) -> GenerateAdJob {
    j.product.description = None;
    j.audience.details = json!({});
    j.product.details = json!({
        "benefits": ["Smooth, never bitter"],
        "stats": [{"value": "24h", "label": "dispatch on every order"}],
        "reviews": [{"author": "Maria L.", "text": "The only coffee my whole team agrees on.", "rating": 5}],
        "guarantee": "30-day money-back guarantee",
        "shipping": "Ships within 24h"
    });
    j.variant = Some(variant(2400, Some(3000)));
    j
}

/// The words of the input a fact's source names: the variant's prices and the computed
/// figures as an ad writes them, else the input string at that path.
fn field_words(facts: &Facts, source: &str) -> Option<String> {
    use adforge_worker::generate::grounding::{
        COMPARE_AT_SOURCE, DISCOUNT_SOURCE, PRICE_SOURCE, SAVING_SOURCE,
    };
    match source {
        PRICE_SOURCE => facts.price.as_ref().map(|p| p.text.clone()),
        COMPARE_AT_SOURCE => facts.compare_at.as_ref().map(|p| p.text.clone()),
        SAVING_SOURCE => facts.saving.as_ref().map(|p| p.text.clone()),
        DISCOUNT_SOURCE => facts.discount.map(|d| format!("{d}%")),
        path => facts
            .sources
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, s)| s.clone()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colliding_figures_are_credited_to_the_fields_they_came_from() {
    let s = setup().await;
    let mut failures = Vec::new();
    let mut stated: Vec<(String, String)> = Vec::new();
    for r in formats::all().into_iter().take(8) {
        let j = colliding(s.job(&format!("ia_c_{}", r.name), r.name));
        let facts = Facts::from_job(&j);
        let (t, report) = s.run(j).await;
        for f in report["facts"].as_array().unwrap() {
            let (text, kind, source) = (
                f["text"].as_str().unwrap(),
                f["kind"].as_str().unwrap(),
                f["source"].as_str().unwrap(),
            );
            stated.push((text.to_owned(), source.to_owned()));
            if !matches!(kind, "price" | "percent" | "number") {
                continue;
            }
            // The field that is credited writes the figure the way the ad does ("30-day"
            // in the guarantee, not "$30"; "24h" in the stat, not "$24").
            let form = text.to_lowercase();
            let form = form.trim_start_matches('-');
            let words = field_words(&facts, source)
                .unwrap_or_default()
                .to_lowercase();
            if !words.contains(form) {
                failures.push(format!(
                    "{}: \"{text}\" credited to {source} (\"{words}\"); texts {t:?}",
                    r.name
                ));
            }
        }
    }
    // The colliding figures were stated, each with the field it came from.
    for (figure, want) in [
        ("$24", &["variant.price"][..]),
        ("$30", &["variant.compare_at_price"]),
        ("30-day", &["product.details.guarantee"]),
        (
            "24h",
            &["product.details.stats[0].value", "product.details.shipping"],
        ),
    ] {
        let got: Vec<&String> = stated
            .iter()
            .filter(|(t, _)| t.eq_ignore_ascii_case(figure))
            .map(|(_, s)| s)
            .collect();
        if got.is_empty() || got.iter().any(|s| !want.contains(&s.as_str())) {
            failures.push(format!("{figure}: credited to {got:?}, want {want:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\nstated {stated:?}",
        failures.join("\n")
    );
}

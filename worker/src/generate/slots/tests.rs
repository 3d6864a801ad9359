//! Unit tests: each role the blueprint gives a slot reaches the copywriter and gets its
//! fact, from one coffee product with a price, a former price, a review, a stat, benefits
//! and an offer; and nothing is stated that the inputs do not hold.

use serde_json::json;

use super::*;
use crate::generate::grounding::check_text;
use crate::protocol::{AdBrief, Audience, Brand, GenerateAdJob, Money, Product, Variant};

fn job(details: Value) -> GenerateAdJob {
    GenerateAdJob {
        ad_id: "ad_1".into(),
        org_id: "org_1".into(),
        version: 1,
        editable: true,
        reference_ad_url: "http://x/r.png".into(),
        brief: AdBrief {
            prompt: None,
            brand: Brand {
                id: "br_1".into(),
                name: "Northwind".into(),
                color_palettes: Value::Null,
                fonts: Value::Null,
                logos: Vec::new(),
                details: Value::Null,
            },
            product: Product {
                id: "prod_1".into(),
                name: "Morning Espresso".into(),
                description: Some("Whole-bean espresso roasted in small batches.".into()),
                details,
            },
            audience: Audience {
                id: "aud_1".into(),
                name: "Home baristas".into(),
                description: None,
                details: Value::Null,
            },
            variant_image_urls: Vec::new(),
            variant: Some(Variant {
                id: "pv_1".into(),
                name: "250 g".into(),
                price: Some(Money {
                    amount: 2400,
                    currency: "usd".into(),
                }),
                compare_at_price: Some(Money {
                    amount: 3000,
                    currency: "usd".into(),
                }),
            }),
            created_at: Some("2026-06-01T09:00:00.000Z".into()),
        },
        template: None,
        size: None,
    }
}

fn facts() -> Facts {
    Facts::from_job(&job(json!({
        "benefits": ["Ready in two minutes", "Ethically sourced beans", "Roasted fresh every week"],
        "stats": [{"value": "9 in 10", "label": "customers reorder within a month"}],
        "reviews": [{"author": "Maria Lopez", "text": "The smoothest espresso I have made at home. Rich and never bitter.", "rating": 5}],
        "offer": {"text": "20% off your first order"},
    })))
}

/// A slot `key` of `role` whose reference words were `words`, `lines` lines.
fn spec(key: &str, role: &str, words: &str, lines: u32) -> SlotSpec {
    SlotSpec {
        key: key.into(),
        role: role.into(),
        words: Some(words.into()),
        case: casing(words),
        lines,
        on: None,
        size: 60.0,
        width: 1600.0,
        height: 80.0 * lines as f32,
        style: None,
    }
}

/// The shown words of each slot of `specs`, written from `f`; every one grounded.
fn written(specs: &[SlotSpec], f: &Facts) -> BTreeMap<String, SlotText> {
    let reference = Reference {
        format: None,
        format_from: "words".into(),
        words_read: true,
    };
    let w = write(specs, f, &reference, 7, None, None);
    for (k, t) in &w.slots {
        if t.shown {
            assert!(
                check_text(&t.text, k, f).is_ok(),
                "{k}: {:?} is not grounded",
                t.text
            );
        }
    }
    w.slots
}

fn said<'a>(slots: &'a BTreeMap<String, SlotText>, key: &str) -> &'a SlotText {
    let t = &slots[key];
    assert!(t.shown, "{key} is left out: {slots:?}");
    t
}

#[test]
fn a_price_slot_gets_the_price_and_a_compare_at_slot_the_former_price() {
    let f = facts();
    let s = written(
        &[
            spec(
                "headline",
                "headline",
                "The one you keep coming back to.",
                1,
            ),
            spec("price", "price", "$29", 1),
            spec("compare_at_price", "compare_at_price", "$44", 1),
        ],
        &f,
    );
    assert_eq!(said(&s, "price").text, "$24");
    assert_eq!(said(&s, "price").role, "price");
    assert_eq!(said(&s, "compare_at_price").text, "$30");
}

#[test]
fn a_quote_slot_gets_the_review_with_its_author_and_stars() {
    let f = facts();
    let s = written(
        &[
            spec("rating", "rating", "★★★★★", 1),
            spec("quote", "quote", "“Better than anything I have tried.”", 2),
            spec("quote_author", "quote_author", "- Aiko Tanaka", 1),
        ],
        &f,
    );
    let q = &said(&s, "quote").text;
    assert!(
        q.contains("The smoothest espresso I have made at home"),
        "{q}"
    );
    assert_eq!(said(&s, "quote").role, "quote");
    assert!(said(&s, "quote_author").text.contains("Maria Lopez"));
    assert!(said(&s, "rating").text.starts_with('★'));
}

#[test]
fn a_stat_slot_gets_the_stat() {
    let f = facts();
    let s = written(
        &[
            spec("stat", "stat", "93%", 1),
            spec("supporting", "supporting", "say they sleep better", 1),
        ],
        &f,
    );
    assert!(said(&s, "stat").text.contains("9 in 10"), "{s:?}");
    assert_eq!(said(&s, "stat").role, "stat");
}

/// An offer slot states the product's offer or the discount; one that names a sale
/// without a figure ("SALE") does too when no other slot shows the figure, and leaves
/// the figure to a badge that shows one.
#[test]
fn an_offer_slot_gets_the_offer() {
    let f = facts();
    let s = written(&[spec("offer", "offer", "-30%", 1)], &f);
    assert_eq!(said(&s, "offer").text, "-20%");
    for words in ["SALE", "Free shipping"] {
        let s = written(
            &[
                spec("headline", "headline", "Made for mornings", 1),
                spec("offer", "offer", words, 1),
            ],
            &f,
        );
        let o = said(&s, "offer");
        assert_eq!(o.role, "offer");
        assert!(
            o.text.contains("20%") || o.text.contains("$6"),
            "{words}: {o:?}"
        );
    }
    let mut badge = spec("badge_label", "offer", "-30%", 1);
    badge.on = Some("badge".into());
    let s = written(&[spec("headline", "offer", "SUMMER\nSALE", 2), badge], &f);
    assert!(said(&s, "badge_label").text.contains("20%"));
    assert!(!said(&s, "headline").text.contains('%'), "{s:?}");
}

#[test]
fn list_items_get_the_benefits_with_the_reference_marker() {
    let f = facts();
    let specs: Vec<SlotSpec> = (1..=3)
        .map(|i| {
            spec(
                &format!("list_item_{i}"),
                "list_item",
                "✓ Cancel any time",
                1,
            )
        })
        .collect();
    let s = written(&specs, &f);
    let items: Vec<&str> = (1..=3)
        .map(|i| said(&s, &format!("list_item_{i}")).text.as_str())
        .collect();
    for (item, benefit) in items.iter().zip(&f.benefits) {
        assert!(item.starts_with('✓'), "{item}");
        assert!(item.contains(benefit.as_str()), "{item}");
    }
    // A comparison's crossed column: the product's benefits are ticked, never crossed.
    let crossed: Vec<SlotSpec> = (1..=2)
        .map(|i| {
            spec(
                &format!("list_item_{i}"),
                "list_item",
                "✗ Artificial flavours",
                1,
            )
        })
        .collect();
    let s = written(&crossed, &f);
    for i in 1..=2 {
        let item = &said(&s, &format!("list_item_{i}")).text;
        assert!(item.starts_with('✓') && !item.contains('✗'), "{item}");
    }
}

#[test]
fn an_all_caps_headline_stays_in_capitals_and_a_question_stays_a_question() {
    let f = facts();
    let s = written(
        &[spec("headline", "headline", "THE BIG WEEKEND SALE", 1)],
        &f,
    );
    let h = &said(&s, "headline").text;
    assert!(
        h.chars().any(char::is_alphabetic) && *h == h.to_uppercase(),
        "{h}"
    );
    let s = written(
        &[spec("headline", "headline", "Tired of bitter coffee?", 1)],
        &f,
    );
    assert!(said(&s, "headline").text.ends_with('?'), "{s:?}");
}

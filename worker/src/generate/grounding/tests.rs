//! Unit tests of the grounding rule.

use super::*;
use crate::generate::facts::{Price, Review};

fn facts() -> Facts {
    Facts {
        name: "Cold Brew".into(),
        price: Some(Price {
            text: "$24".into(),
            amount: 24.0,
        }),
        compare_at: Some(Price {
            text: "$48".into(),
            amount: 48.0,
        }),
        discount: Some(50),
        saving: Some(Price {
            text: "$24".into(),
            amount: 24.0,
        }),
        reviews: vec![Review {
            author: None,
            text: "Great".into(),
            rating: Some(5.0),
        }],
        sources: vec![
            ("product.details.stats[0].value".into(), "16".into()),
            (
                "product.details.shipping".into(),
                "Free shipping over $40".into(),
            ),
            ("product.details.benefits[0]".into(), "50% less acid".into()),
        ],
        ..Facts::default()
    }
}

#[test]
fn grounded_facts_name_their_source() {
    let f = facts();
    let got = check_text("50% OFF today", "offer", &f).unwrap();
    assert_eq!(got[0].source, DISCOUNT_SOURCE);
    let got = check_text("Now $24, was $48", "price", &f).unwrap();
    assert_eq!(got[0].source, "variant.price");
    assert_eq!(got[1].source, "variant.compare_at_price");
    assert!(check_text("★★★★★", "rating", &f).is_ok());
    assert!(check_text("16 cups in every bottle", "stat", &f).is_ok());
    assert!(check_text("Free shipping over $40", "supporting", &f).is_ok());
    assert!(check_text("1. Smooth, never bitter", "list_item_1", &f).is_ok());
    assert!(check_text("50% less acid", "list_item_2", &f).is_ok());
}

/// A product whose figures collide: $24 and $30 prices (20 % off, $6 saved), a 30-day
/// guarantee, a 24h stat, and a benefit with a 20 % of its own.
fn colliding() -> Facts {
    Facts {
        name: "Cold Brew".into(),
        price: Some(Price {
            text: "$24".into(),
            amount: 24.0,
        }),
        compare_at: Some(Price {
            text: "$30".into(),
            amount: 30.0,
        }),
        discount: Some(20),
        saving: Some(Price {
            text: "$6".into(),
            amount: 6.0,
        }),
        guarantee: Some("30-day money-back guarantee".into()),
        sources: vec![
            ("product.name".into(), "Cold Brew".into()),
            ("product.details.stats[0].value".into(), "24h".into()),
            (
                "product.details.stats[0].label".into(),
                "dispatch on every order".into(),
            ),
            (
                "product.details.guarantee".into(),
                "30-day money-back guarantee".into(),
            ),
            (
                "product.details.benefits[0]".into(),
                "20% less acid than hot brew".into(),
            ),
            (
                "product.details.shipping".into(),
                "Ships within 24 hours".into(),
            ),
        ],
        ..Facts::default()
    }
}

/// Each fact's source, by its text.
fn sources(got: &[FactSource]) -> Vec<(&str, &str)> {
    got.iter()
        .map(|f| (f.text.as_str(), f.source.as_str()))
        .collect()
}

#[test]
fn colliding_figures_are_credited_to_the_field_that_says_them() {
    let f = colliding();
    let got = check_text("30-day money-back guarantee.", "supporting", &f).unwrap();
    assert_eq!(
        sources(&got),
        [
            ("30-day", "product.details.guarantee"),
            ("money-back", "product.details.guarantee"),
            ("guarantee", "product.details.guarantee"),
        ]
    );
    let got = check_text("24h dispatch on every order", "stat", &f).unwrap();
    assert_eq!(sources(&got), [("24h", "product.details.stats[0].value")]);
    // The same duration in another form: a time of the same unit, never the $24.
    let got = check_text("Ships in 24 hours", "supporting", &f).unwrap();
    assert_eq!(sources(&got), [("24", "product.details.shipping")]);
    let got = check_text("Now $24, was $30", "price", &f).unwrap();
    assert_eq!(
        sources(&got),
        [("$24", PRICE_SOURCE), ("$30", COMPARE_AT_SOURCE)]
    );
    let got = check_text("Only 30 dollars", "price", &f).unwrap();
    assert_eq!(sources(&got), [("30", COMPARE_AT_SOURCE)]);
    let got = check_text("Save $6", "offer", &f).unwrap();
    assert_eq!(sources(&got), [("$6", SAVING_SOURCE)]);
    let got = check_text("20% off", "offer", &f).unwrap();
    assert_eq!(sources(&got), [("20%", DISCOUNT_SOURCE)]);
    // A percentage that is not a discount is the benefit's, said the same way.
    let got = check_text("20% less acid than hot brew", "list_item_1", &f).unwrap();
    assert_eq!(sources(&got), [("20%", "product.details.benefits[0]")]);
}

#[test]
fn words_composed_from_a_field_are_credited_to_it() {
    let f = colliding();
    // "24" stated plainly: the stat and the shipping line both hold a 24; the words
    // came from the shipping line.
    let from = ["product.details.shipping".to_owned()];
    let got = check_text_from("Ships within 24 hours.", "supporting", &f, &from).unwrap();
    assert_eq!(sources(&got), [("24", "product.details.shipping")]);
    let from = ["product.details.stats[0].value".to_owned()];
    let got = check_text_from("24h", "badge_label", &f, &from).unwrap();
    assert_eq!(sources(&got), [("24h", "product.details.stats[0].value")]);
    // A provenance that does not hold the figure credits nothing: it is matched.
    let from = ["product.name".to_owned()];
    let got = check_text_from("$24", "price", &f, &from).unwrap();
    assert_eq!(sources(&got), [("$24", PRICE_SOURCE)]);
    // A discount the prices compute is theirs, even in a line the prompt asked for.
    let mut f = colliding();
    f.sources
        .push(("prompt".into(), "mention the 20% off".into()));
    let from = ["prompt".to_owned()];
    let got = check_text_from("The 20% off.", "supporting", &f, &from).unwrap();
    assert_eq!(sources(&got), [("20%", DISCOUNT_SOURCE)]);
    // Nor does a provenance let a figure through that its input does not hold.
    let from = ["product.details.guarantee".to_owned()];
    assert!(check_text_from("60-day money-back guarantee", "supporting", &f, &from).is_err());
}

#[test]
fn a_figure_is_never_matched_across_units() {
    let f = colliding();
    // No input holds a 30-hour, a 24-day, a plain 30 as a price, or a $30 guarantee.
    for refused in [
        "Ships in 30h",
        "A 24-day trial",
        "30 cups a day",
        "Up to 24x faster",
        "Save 6",
        "24% off",
        "30% less acid",
    ] {
        assert!(check_text(refused, "supporting", &f).is_err(), "{refused}");
    }
}

#[test]
fn invented_facts_are_refused() {
    let mut f = facts();
    f.discount = None;
    f.compare_at = None;
    f.saving = None;
    // 50% appears in a benefit ("50% less acid"), but not as an offer.
    assert!(check_text("50% off this week", "offer", &f).is_err());
    assert!(check_text("Only $19", "price", &f).is_err());
    assert!(check_text("30-day guarantee", "supporting", &f).is_err());
    assert!(check_text("Free returns", "supporting", &f).is_err());
    assert!(check_text("★★★★", "rating", &f).is_err());
    assert!(check_text("Ends Sunday", "eyebrow", &f).is_err());
    assert!(check_text("2x faster", "stat", &f).is_err());
}

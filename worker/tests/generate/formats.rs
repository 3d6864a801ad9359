//! Ten references of different ad formats, drawn by our renderer, each with the roles its
//! text slots have and the format the swipe file's classifier gives it. The first eight are
//! the test set (offer, price-led, testimonial, listicle, statistic, benefit
//! headline, question headline, all-caps poster); the story and the content ad complete the
//! contact sheet of docs/copy.md.

use adforge_renderer::{RenderOptions, Renderer, Tree};
use serde_json::{Value, json};

use crate::references::{B, solid};

/// One format reference.
pub struct FormatRef {
    pub name: &'static str,
    pub tree: Value,
    /// Roles the blueprint must find with the words read (`list_item` once per item).
    pub roles: &'static [&'static str],
    /// Roles it must find from the layout alone (no words read).
    pub layout_roles: &'static [&'static str],
    /// The format the classifier gives it from its words, when it gives one.
    pub format: Option<&'static str>,
}

impl FormatRef {
    /// Renders at 1080 px on the long edge.
    pub fn png(&self, renderer: &Renderer) -> Vec<u8> {
        let root = &self.tree["nodes"]["root"];
        let (w, h) = (
            root["width"].as_f64().unwrap() as f32,
            root["height"].as_f64().unwrap() as f32,
        );
        let width = if w >= h {
            1080
        } else {
            (1080.0 * w / h).round() as u32
        };
        let tree = Tree::from_value(self.tree.clone()).unwrap();
        renderer
            .render(
                &tree,
                &RenderOptions {
                    width: Some(width),
                    encode_png: true,
                },
            )
            .unwrap()
            .png
            .unwrap()
    }
}

/// Stars as drawn marks: five small filled squares turned into diamonds would read as
/// shapes; the renderer draws the ★ glyph (DejaVu Sans, by fallback) instead.
const STARS: &str = "\u{2605}\u{2605}\u{2605}\u{2605}\u{2605}";

/// The ten references.
pub fn all() -> Vec<FormatRef> {
    let mut out = Vec::new();

    // 1. Offer: a "SUMMER SALE" poster with a "-30%" badge.
    {
        let mut b = B::new();
        b.text(
            [70.0, 120.0, 620.0, 300.0],
            "SUMMER\nSALE",
            130.0,
            900,
            0xFFFFFF,
            "LEFT",
        );
        b.ellipse([760.0, 90.0, 250.0, 250.0], 0xFFD400);
        b.text(
            [780.0, 175.0, 210.0, 90.0],
            "-30%",
            64.0,
            800,
            0x111111,
            "CENTER",
        );
        b.text(
            [70.0, 470.0, 420.0, 50.0],
            "On every bag of beans",
            36.0,
            400,
            0xFFFFFF,
            "LEFT",
        );
        b.photo([460.0, 620.0, 600.0, 460.0], 40.0, 11);
        b.button(
            [70.0, 880.0, 320.0, 100.0],
            "Shop now",
            38.0,
            0x111111,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "offer",
            tree: b.done(1080.0, 1080.0, solid(0xE4473C)),
            roles: &["offer", "offer", "cta"],
            layout_roles: &["headline", "offer", "cta"],
            format: Some("offer_sale"),
        });
    }

    // 2. Price-led: minimal, the price big under the product, the former price beside it.
    {
        let mut b = B::new();
        b.text(
            [140.0, 70.0, 800.0, 80.0],
            "Morning Roast",
            60.0,
            700,
            0x1A1A1A,
            "CENTER",
        );
        b.photo([290.0, 190.0, 500.0, 560.0], 24.0, 12);
        b.text(
            [300.0, 800.0, 220.0, 110.0],
            "$24",
            96.0,
            800,
            0x1A1A1A,
            "CENTER",
        );
        b.text(
            [560.0, 825.0, 200.0, 70.0],
            "$32",
            56.0,
            400,
            0x888888,
            "CENTER",
        );
        b.button(
            [390.0, 950.0, 300.0, 90.0],
            "Buy now",
            34.0,
            0x1F3A5F,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "price_led",
            tree: b.done(1080.0, 1080.0, solid(0xFFFFFF)),
            roles: &["headline", "price", "compare_at_price", "cta"],
            layout_roles: &["headline", "cta"],
            format: None,
        });
    }

    // 3. Testimonial: stars, a quote, who said it.
    {
        let mut b = B::new();
        b.photo([415.0, 80.0, 250.0, 250.0], 125.0, 13);
        b.text(
            [340.0, 380.0, 400.0, 70.0],
            STARS,
            56.0,
            400,
            0xE0A100,
            "CENTER",
        );
        b.text(
            [110.0, 480.0, 860.0, 240.0],
            "\u{201c}The only coffee my\nwhole team agrees on.\u{201d}",
            64.0,
            700,
            0x2B2118,
            "CENTER",
        );
        b.text(
            [240.0, 770.0, 600.0, 50.0],
            "\u{2014} Maria Lopez",
            34.0,
            400,
            0x5A4A3A,
            "CENTER",
        );
        b.text(
            [390.0, 980.0, 300.0, 40.0],
            "NORTHWIND",
            28.0,
            800,
            0x2B2118,
            "CENTER",
        );
        out.push(FormatRef {
            name: "testimonial",
            tree: b.done(1080.0, 1080.0, solid(0xF3E9DC)),
            roles: &["rating", "quote", "quote_author"],
            layout_roles: &["rating", "headline"],
            format: Some("testimonial"),
        });
    }

    // 4. Listicle: a title and three numbered reasons, photo on the right.
    {
        let mut b = B::new();
        b.text(
            [70.0, 90.0, 940.0, 200.0],
            "3 reasons to\nswitch today",
            84.0,
            800,
            0x0B3D2E,
            "LEFT",
        );
        for (i, line) in [
            "1. Smooth, never bitter",
            "2. Ready in a minute",
            "3. Brewed in small batches",
        ]
        .iter()
        .enumerate()
        {
            b.text(
                [70.0, 380.0 + 110.0 * i as f32, 560.0, 60.0],
                line,
                38.0,
                500,
                0x0B3D2E,
                "LEFT",
            );
        }
        b.photo([680.0, 360.0, 340.0, 460.0], 30.0, 14);
        b.button(
            [70.0, 900.0, 320.0, 96.0],
            "Learn more",
            36.0,
            0x0B3D2E,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "listicle",
            tree: b.done(1080.0, 1080.0, solid(0xE8F1EC)),
            roles: &["headline", "list_item", "list_item", "list_item", "cta"],
            layout_roles: &["headline", "list_item", "list_item", "list_item", "cta"],
            format: Some("listicle"),
        });
    }

    // 5. Statistic: a huge figure and its label.
    {
        let mut b = B::new();
        b.text(
            [70.0, 120.0, 600.0, 260.0],
            "93%",
            220.0,
            900,
            0x14213D,
            "LEFT",
        );
        b.text(
            [70.0, 400.0, 440.0, 120.0],
            "of people sleep\nbetter in a week",
            44.0,
            500,
            0x14213D,
            "LEFT",
        );
        b.photo([540.0, 540.0, 520.0, 520.0], 30.0, 15);
        b.button(
            [70.0, 860.0, 320.0, 96.0],
            "Find out how",
            34.0,
            0x14213D,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "statistic",
            tree: b.done(1080.0, 1080.0, solid(0xF5F1E8)),
            roles: &["stat", "supporting", "cta"],
            layout_roles: &["headline", "supporting", "cta"],
            format: Some("statistic"),
        });
    }

    // 6. Benefit headline with an imperative "Try it".
    {
        let mut b = B::new();
        b.text(
            [70.0, 100.0, 940.0, 200.0],
            "Wake up to\nbetter coffee",
            92.0,
            800,
            0x2E1F14,
            "LEFT",
        );
        b.text(
            [70.0, 330.0, 700.0, 60.0],
            "Slow roasted in small batches.",
            36.0,
            400,
            0x5A4030,
            "LEFT",
        );
        b.photo([70.0, 440.0, 940.0, 400.0], 30.0, 16);
        b.button(
            [70.0, 900.0, 260.0, 96.0],
            "Try it",
            38.0,
            0xC8553D,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "benefit_headline",
            tree: b.done(1080.0, 1080.0, solid(0xFBF3E6)),
            roles: &["headline", "supporting", "cta"],
            layout_roles: &["headline", "supporting", "cta"],
            format: None,
        });
    }

    // 7. Question headline.
    {
        let mut b = B::new();
        b.photo([0.0, 0.0, 1080.0, 560.0], 0.0, 17);
        b.text(
            [70.0, 610.0, 940.0, 180.0],
            "Tired of bitter\ncoffee?",
            80.0,
            800,
            0x1B1B2F,
            "LEFT",
        );
        b.text(
            [70.0, 810.0, 800.0, 50.0],
            "There is a smoother way to start.",
            34.0,
            400,
            0x44445A,
            "LEFT",
        );
        b.button(
            [70.0, 910.0, 300.0, 96.0],
            "Learn more",
            36.0,
            0x1B1B2F,
            0xFFFFFF,
        );
        out.push(FormatRef {
            name: "question_headline",
            tree: b.done(1080.0, 1080.0, solid(0xFFFFFF)),
            roles: &["headline", "supporting", "cta"],
            layout_roles: &["headline", "supporting", "cta"],
            format: None,
        });
    }

    // 8. All-caps poster.
    {
        let mut b = B::new();
        b.text(
            [70.0, 90.0, 940.0, 380.0],
            "BOLD TASTE.\nZERO\nBITTERNESS.",
            110.0,
            900,
            0xF4EBDD,
            "LEFT",
        );
        b.text(
            [70.0, 520.0, 600.0, 50.0],
            "SMALL BATCH COLD BREW",
            34.0,
            700,
            0xF4EBDD,
            "LEFT",
        );
        b.photo([560.0, 620.0, 460.0, 400.0], 30.0, 18);
        b.button(
            [70.0, 900.0, 300.0, 96.0],
            "SHOP NOW",
            36.0,
            0xF4EBDD,
            0x111111,
        );
        out.push(FormatRef {
            name: "all_caps_poster",
            tree: b.done(1080.0, 1080.0, solid(0x1E1E24)),
            roles: &["headline", "supporting", "cta"],
            layout_roles: &["headline", "supporting", "cta"],
            format: None,
        });
    }

    // 9. Story (9:16): a photo with a band and a "Swipe up" line.
    {
        let mut b = B::new();
        b.photo([0.0, 0.0, 1080.0, 1920.0], 0.0, 19);
        b.rect([0.0, 1240.0, 1080.0, 520.0], 0x111827, 0.0);
        b.text(
            [80.0, 1300.0, 920.0, 220.0],
            "Your new\nmorning ritual",
            88.0,
            800,
            0xFFFFFF,
            "LEFT",
        );
        b.text(
            [80.0, 1600.0, 500.0, 60.0],
            "Swipe up",
            40.0,
            700,
            0xF5C542,
            "LEFT",
        );
        out.push(FormatRef {
            name: "story",
            tree: b.done(1080.0, 1920.0, solid(0x000000)),
            roles: &["headline", "cta"],
            layout_roles: &["headline"],
            format: None,
        });
    }

    // 10. Content ad: a guide title and READ MORE.
    {
        let mut b = B::new();
        b.text(
            [70.0, 80.0, 500.0, 40.0],
            "THE JOURNAL",
            28.0,
            700,
            0x6B4F3A,
            "LEFT",
        );
        b.text(
            [70.0, 150.0, 940.0, 220.0],
            "The slow\nmorning guide",
            96.0,
            800,
            0x2E1F14,
            "LEFT",
        );
        b.photo([70.0, 420.0, 940.0, 460.0], 24.0, 20);
        b.text(
            [70.0, 940.0, 400.0, 60.0],
            "READ MORE",
            40.0,
            800,
            0xC8553D,
            "LEFT",
        );
        out.push(FormatRef {
            name: "content",
            tree: b.done(1080.0, 1080.0, solid(0xFBF3E6)),
            roles: &["headline", "cta"],
            layout_roles: &["headline"],
            format: None,
        });
    }
    out
}

/// The roles of a blueprint's drawn slots (button and badge labels included), sorted.
pub fn roles_of(bp: &adforge_worker::blueprint::Blueprint) -> Vec<String> {
    let mut r: Vec<String> = bp
        .texts
        .iter()
        .filter(|t| t.role != adforge_worker::blueprint::TextRole::Body)
        .map(|t| t.role.key().to_owned())
        .collect();
    r.sort();
    r
}

/// `want` (sorted) is contained in `got` (sorted), counting repeats.
pub fn has_roles(got: &[String], want: &[&str]) -> bool {
    let mut left: Vec<String> = got.to_vec();
    for w in want {
        match left.iter().position(|g| g == w) {
            Some(i) => {
                left.remove(i);
            }
            None => return false,
        }
    }
    true
}

/// A JSON dump of a blueprint's texts (for failure messages).
pub fn describe(bp: &adforge_worker::blueprint::Blueprint) -> String {
    bp.texts
        .iter()
        .map(|t| {
            json!({"role": t.role.key(), "words": t.words, "upper": t.upper, "rect": [t.rect.x, t.rect.y, t.rect.w, t.rect.h], "lh": t.line_height})
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n    ")
}

//! Unit tests of the template writer.

use super::place::logo_column;
use super::*;
use crate::blueprint::{
    Align, Background, ImageRegion, MIN_PRODUCT_SHARE, Rect, Shape, ShapeRole, TextBlock, TextRole,
};

fn rect(x: f32, y: f32, w: f32, h: f32) -> Rect {
    Rect { x, y, w, h }
}

/// A logo over a text column spans the column and takes the edge it is nearest to, so
/// a wordmark lines up with the headline; a blocked or lone logo keeps its own box.
#[test]
fn a_logo_heading_a_column_spans_it_and_lines_up() {
    let texts = [rect(0.53, 0.2, 0.42, 0.2), rect(0.53, 0.5, 0.44, 0.1)];
    let logo = rect(0.59, 0.06, 0.09, 0.04);
    let (col, align) = logo_column(&logo, &texts, &[]).unwrap();
    assert_eq!(align, "LEFT");
    assert!((col.x - 0.53).abs() < 1e-6 && (col.right() - 0.97).abs() < 1e-6);
    assert!((col.y - logo.y).abs() < 1e-6 && (col.h - logo.h).abs() < 1e-6);
    let centred = rect(0.70, 0.06, 0.1, 0.04);
    assert_eq!(logo_column(&centred, &texts, &[]).unwrap().1, "CENTER");
    // An image beside the logo, inside the column's span: the box stays as it was.
    assert!(logo_column(&logo, &texts, &[rect(0.85, 0.02, 0.1, 0.1)]).is_none());
    // Nothing below it: no column.
    assert!(logo_column(&rect(0.05, 0.9, 0.1, 0.04), &texts, &[]).is_none());
}

fn bp() -> Blueprint {
    Blueprint {
        source_width: 1000,
        source_height: 500,
        width: 3840,
        height: 1920,
        background: Background::Solid {
            color: [250, 250, 250],
        },
        images: vec![ImageRegion {
            rect: Rect {
                x: 0.05,
                y: 0.1,
                w: 0.1,
                h: 0.1,
            },
            shape: Shape::Circle,
            cutout: false,
            shadow: None,
        }],
        shapes: Vec::new(),
        texts: vec![TextBlock {
            role: TextRole::Headline,
            rect: Rect {
                x: 0.5,
                y: 0.1,
                w: 0.2,
                h: 0.1,
            },
            lines: 1,
            line_height: 0.1,
            align: Align::Left,
            color: [10, 10, 10],
            weight: 700,
            upper: false,
            words: None,
        }],
        logo: None,
        margins: [0.05, 0.1, 0.05, 0.8],
        words_read: false,
        format: None,
        format_from: "none",
    }
}

#[test]
fn a_small_product_grows_to_the_minimum_share_and_text_widens_to_the_margin() {
    let t = template(&bp());
    let p = &t["nodes"]["product_image"];
    let area = p["width"].as_f64().unwrap() * p["height"].as_f64().unwrap() / (3840.0 * 1920.0);
    assert!(area >= f64::from(MIN_PRODUCT_SHARE), "{area}");
    assert_eq!(p["type"], "ELLIPSE");
    let h = &t["nodes"]["headline"];
    // Left-aligned: starts where the reference's block starts, runs to the margin.
    assert_eq!(h["x"].as_f64().unwrap(), 1920.0);
    assert!(h["width"].as_f64().unwrap() > 0.2 * 3840.0);
    assert_eq!(t["nodes"]["background"]["$fill"], "background");
}

#[test]
fn sample_trees_name_every_node_after_its_slot() {
    let t = sample_tree(&bp());
    for (id, n) in t["nodes"].as_object().unwrap() {
        assert_eq!(n["name"], Value::from(id.clone()));
    }
    adforge_renderer::Tree::from_value(t).unwrap();
}

/// A 16:9 blueprint: a two-line headline on the right with a button `gap` (of the
/// height) below it, and the reference's bottom margin under the button.
fn landscape(gap: f32) -> Blueprint {
    use crate::blueprint::SolidShape;
    let head = Rect {
        x: 0.5,
        y: 0.3,
        w: 0.4,
        h: 0.2,
    };
    let button = Rect {
        x: 0.5,
        y: head.bottom() + gap,
        w: 0.18,
        h: 0.09,
    };
    Blueprint {
        source_width: 1920,
        source_height: 1080,
        width: 3840,
        height: 2160,
        margins: [0.1, 0.3, 0.1, 1.0 - button.bottom()],
        shapes: vec![SolidShape {
            rect: button,
            shape: Shape::Rounded { radius: 0.5 },
            color: [20, 33, 61],
            role: ShapeRole::Button,
        }],
        texts: vec![TextBlock {
            role: TextRole::Headline,
            rect: head,
            lines: 2,
            line_height: 0.07,
            align: Align::Left,
            color: [255, 255, 255],
            weight: 800,
            upper: false,
            words: None,
        }],
        ..bp()
    }
}

/// Box of a node in canvas pixels: (top, bottom).
fn span(t: &Value, id: &str) -> (f64, f64) {
    let n = &t["nodes"][id];
    let y = n["y"].as_f64().unwrap();
    (y, y + n["height"].as_f64().unwrap())
}

#[test]
fn a_long_headline_above_a_button_keeps_the_gap() {
    let renderer = adforge_renderer::Renderer::with_defaults();
    // Roomy (the reference's own gap), tight with room below (the button moves down),
    // and tight at the bottom margin (the headline box is shortened).
    for (gap, moves) in [(0.12, false), (0.02, true), (0.0, false)] {
        let mut bp = landscape(gap);
        if gap == 0.0 {
            bp.margins[3] = 0.03;
            bp.shapes[0].rect.y = 0.97 - bp.shapes[0].rect.h;
            bp.texts[0].rect.y = bp.shapes[0].rect.y - bp.texts[0].rect.h;
        }
        let mut t = template(&bp);
        let head = &t["nodes"]["headline"];
        let em = head["textFit"]["maxFontSize"].as_f64().unwrap();
        let (_, head_bottom) = span(&t, "headline");
        let (cta_top, cta_bottom) = span(&t, "cta");
        let want = f64::from(MIN_TEXT_GAP_EM) * em;
        assert!(
            cta_top - head_bottom >= want - 0.2,
            "gap {gap}: {} px between headline and button, want {want}",
            cta_top - head_bottom
        );
        let ref_top = f64::from(bp.shapes[0].rect.y * 2160.0);
        assert_eq!(
            cta_top > ref_top + 1.0,
            moves,
            "gap {gap}: button at {cta_top}"
        );
        assert!(cta_bottom <= 2160.0 * 0.97 + 0.2, "{cta_bottom}");
        // A headline three times the reference's length fits its box (shrink-to-fit)
        // and no text box comes near another slot's.
        t["nodes"]["headline"]["characters"] = Value::from(
            "Our lightest, fastest and most comfortable running shoe yet, made for you",
        );
        let tree = adforge_renderer::Tree::from_value(t.clone()).unwrap();
        let report = renderer
            .render(
                &tree,
                &adforge_renderer::RenderOptions {
                    width: Some(540),
                    encode_png: false,
                },
            )
            .unwrap()
            .report;
        assert!(
            !report.warnings.iter().any(|w| matches!(
                w,
                adforge_renderer::Warning::TextOverflow { .. }
                    | adforge_renderer::Warning::TextTruncated { .. }
            )),
            "gap {gap}: {:?}",
            report.warnings
        );
        assert!(
            report.warnings.iter().any(|w| matches!(
                w,
                adforge_renderer::Warning::TextShrunk { node, .. } if node == "headline"
            )),
            "gap {gap}: the long headline was not shrunk: {:?}",
            report.warnings
        );
        assert_eq!(crate::generate::quality::crowded_text(&t), None);
    }
    // The rule itself: a headline box that reaches into the button's air is reported.
    let mut t = template(&landscape(0.12));
    let (cta_top, _) = span(&t, "cta");
    let y = t["nodes"]["headline"]["y"].as_f64().unwrap();
    t["nodes"]["headline"]["height"] = Value::from(cta_top - y - 2.0);
    let why = crate::generate::quality::crowded_text(&t).unwrap();
    assert!(why.contains("headline") && why.contains("cta"), "{why}");
}

#[test]
fn colours_map_to_palette_roles() {
    assert_eq!(role_for([255, 255, 255]), "background");
    assert_eq!(role_for([12, 12, 14]), "ink");
    assert_eq!(role_for([200, 30, 40]), "primary");
}

/// A text block of `role` over `r`, its words `words`.
fn block(role: TextRole, r: Rect, words: &str) -> TextBlock {
    TextBlock {
        role,
        rect: r,
        lines: 1,
        line_height: r.h * 0.8,
        align: Align::Center,
        color: [250, 250, 250],
        weight: 700,
        upper: false,
        words: Some(words.to_owned()),
    }
}

/// Texts set straight on a photo ground get a scrim: painted over the photo and under the
/// texts, across their extent, and the texts are set on it (the fill makes them light and
/// the contrast pass can darken it). Texts on a solid ground get none.
#[test]
fn texts_on_a_photo_are_set_on_a_scrim() {
    let mut b = bp();
    b.images.clear();
    b.background = Background::Photo {
        mean: [120, 90, 70],
    };
    b.texts = vec![
        block(
            TextRole::Headline,
            rect(0.2, 0.55, 0.6, 0.12),
            "Made for the weekend",
        ),
        block(
            TextRole::Supporting,
            rect(0.3, 0.72, 0.4, 0.05),
            "Small batches",
        ),
    ];
    let t = template(&b);
    let nodes = &t["nodes"];
    let scrim = &nodes["text_scrim"];
    assert_eq!(scrim["$scrim"], true, "{t}");
    for slot in ["headline", "supporting"] {
        assert_eq!(nodes[slot]["$on"], "text_scrim", "{slot}");
        let (y, h) = (
            nodes[slot]["y"].as_f64().unwrap(),
            nodes[slot]["height"].as_f64().unwrap(),
        );
        let (sy, sh) = (
            scrim["y"].as_f64().unwrap(),
            scrim["height"].as_f64().unwrap(),
        );
        assert!(sy <= y && y + h <= sy + sh, "{slot} outside the scrim");
    }
    let order: Vec<&str> = nodes["root"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    let at = |id: &str| order.iter().position(|c| *c == id).unwrap();
    assert!(at("photo") < at("text_scrim") && at("text_scrim") < at("headline"));
    // Dark over the copy, fading out above it (it does not reach the top edge).
    let stops = scrim["fills"][0]["gradientStops"].as_array().unwrap();
    assert_eq!(stops[0]["color"]["a"], 0.0);
    assert!(stops.iter().any(|s| s["color"]["a"].as_f64() > Some(0.5)));
    // On a solid ground: no scrim, the texts on the ground.
    b.background = Background::Solid {
        color: [250, 250, 250],
    };
    let t = template(&b);
    assert!(t["nodes"].get("text_scrim").is_none());
    assert_eq!(t["nodes"]["headline"]["$on"], "background");
}

/// A square design of `side` px on a plain ground, without a picture.
fn plain_ground(side: u32) -> Blueprint {
    let mut b = bp();
    b.width = side;
    b.height = side;
    b.images.clear();
    b
}

/// A reference of text alone (a testimonial on a plain ground) is usable: the product
/// goes in its largest free room, clear of every text, at least the minimum share; a
/// reference whose text leaves no room still falls back.
#[test]
fn a_reference_without_a_picture_takes_the_product_in_its_free_room() {
    let mut b = plain_ground(1920);
    b.texts = vec![
        block(TextRole::Rating, rect(0.4, 0.06, 0.2, 0.04), "★★★★★"),
        block(
            TextRole::Quote,
            rect(0.1, 0.12, 0.8, 0.14),
            "“Better than anything.”",
        ),
        block(
            TextRole::QuoteAuthor,
            rect(0.4, 0.29, 0.2, 0.04),
            "- Aiko Tanaka",
        ),
    ];
    assert_eq!(b.unusable(), None);
    let room = room_for_product(&b).unwrap();
    assert!(room.area() >= MIN_PRODUCT_SHARE, "{room:?}");
    for t in &b.texts {
        assert!(
            room.overlap(&t.rect) <= 0.0,
            "{room:?} overlaps {:?}",
            t.rect
        );
    }
    let t = template(&b);
    let p = &t["nodes"]["product_image"];
    assert_eq!(p["$image"], "product");
    assert!(p["y"].as_f64().unwrap() > 0.33 * 1920.0, "{p}");
    // Text everywhere: no room, the built-in layout.
    b.texts = (0..6)
        .map(|i| {
            block(
                TextRole::ListItem,
                rect(0.05, 0.05 + 0.15 * i as f32, 0.9, 0.12),
                "✓ An item",
            )
        })
        .collect();
    assert!(room_for_product(&b).is_none());
    assert_eq!(b.unusable(), Some("no image region was found"));
    // A picture or a photo ground is the product's place already.
    let mut photo = bp();
    photo.images.clear();
    photo.background = Background::Photo { mean: [90, 90, 90] };
    assert!(room_for_product(&photo).is_none() && photo.unusable().is_none());
}

/// A statistic centred on a plain ground under a logo leaves a band above and below it,
/// each too thin for the product: the copy moves up as one group, its sizes and order
/// kept, and the product takes the room below it.
#[test]
fn copy_centred_on_a_plain_ground_moves_to_make_room_for_the_product() {
    let mut b = plain_ground(1080);
    b.logo = Some(rect(0.42, 0.04, 0.16, 0.06));
    b.texts = vec![
        block(TextRole::Stat, rect(0.2, 0.3, 0.6, 0.2), "93%"),
        block(
            TextRole::Headline,
            rect(0.15, 0.52, 0.7, 0.08),
            "of drinkers come back",
        ),
        block(TextRole::Cta, rect(0.35, 0.72, 0.3, 0.07), "Shop now"),
    ];
    assert!(room_for_product(&b).is_none(), "the bands are too thin");
    assert_eq!(b.unusable(), None);
    let (moved, room) = shift_for_product(&b).unwrap();
    assert!(room.area() >= MIN_PRODUCT_SHARE, "{room:?}");
    let logo = b.logo.unwrap();
    assert!(moved.texts[0].rect.y >= logo.bottom(), "below the logo");
    for (was, now) in b.texts.iter().zip(&moved.texts) {
        assert_eq!(was.words, now.words, "order kept");
        assert!(
            (was.rect.w - now.rect.w).abs() < 1e-6,
            "size kept at scale 1"
        );
        assert!((was.rect.center().0 - now.rect.center().0).abs() < 1e-6);
        assert!(now.rect.bottom() <= room.y, "{:?} above {room:?}", now.rect);
    }
    let t = template(&b);
    let p = &t["nodes"]["product_image"];
    assert_eq!(p["$image"], "product");
    let below = moved.texts[1].rect.bottom() as f64 * 1080.0;
    assert!(p["y"].as_f64().unwrap() >= below, "{p} under the headline");
}

/// The roles the blueprint found reach the copywriter: each block's slot carries its role
/// (`$text`), its words and its case, so the writer fills a price slot with the price, a
/// quote slot with a review, a stat slot with a stat, list items with benefits.
#[test]
fn every_role_reaches_its_slot() {
    let mut b = bp();
    let roles = [
        (TextRole::Price, "price", "$29"),
        (TextRole::CompareAtPrice, "compare_at_price", "$44"),
        (TextRole::Quote, "quote", "“Better than anything.”"),
        (TextRole::QuoteAuthor, "quote_author", "- Aiko Tanaka"),
        (TextRole::Rating, "rating", "★★★★★"),
        (TextRole::Stat, "stat", "93%"),
        (TextRole::Offer, "offer", "-30%"),
    ];
    b.texts.truncate(1);
    for (i, (role, _, words)) in roles.iter().enumerate() {
        b.texts.push(block(
            *role,
            rect(0.3, 0.25 + 0.08 * i as f32, 0.2, 0.05),
            words,
        ));
    }
    for i in 0..2 {
        b.texts.push(block(
            TextRole::ListItem,
            rect(0.6, 0.3 + 0.1 * i as f32, 0.3, 0.05),
            "✓ Ready in two minutes",
        ));
    }
    b.texts[0].words = Some("TIRED OF BITTER COFFEE?".into());
    b.texts[0].upper = true;
    let t = template(&b);
    let nodes = &t["nodes"];
    for (_, slot, words) in roles {
        assert_eq!(nodes[slot]["$text"], slot, "{slot}");
        assert_eq!(nodes[slot]["$words"], words, "{slot}");
    }
    assert_eq!(nodes["compare_at_price"]["textDecoration"], "STRIKETHROUGH");
    for slot in ["list_item_1", "list_item_2"] {
        assert_eq!(nodes[slot]["$text"], "list_item", "{slot}");
    }
    assert_eq!(nodes["headline"]["$case"], "upper");
    assert_eq!(nodes["headline"]["$words"], "TIRED OF BITTER COFFEE?");
}

/// Words read from a photo's texture ("WY" in a cat's fur) make no lead: the reference
/// falls back; a word, a figure or a lead read as nothing keeps it.
#[test]
fn a_lead_read_as_no_word_is_no_lead() {
    let mut b = bp();
    for (words, usable) in [
        ("WY", false),
        ("| ~", false),
        ("EEEEEEE", true),
        ("-30%", true),
        ("2x", true),
        ("", true),
    ] {
        b.texts[0].words = Some(words.into());
        assert_eq!(b.unusable().is_none(), usable, "{words:?}");
    }
    b.texts[0].words = None;
    assert_eq!(b.unusable(), None);
}

/// Blocks that touch (an eyebrow set tight over its headline) leave the quality rule's air
/// between their boxes once written.
#[test]
fn touching_blocks_leave_air_between_their_boxes() {
    let mut b = bp();
    b.texts = vec![
        block(TextRole::Eyebrow, rect(0.4, 0.2, 0.3, 0.04), "NEW"),
        block(
            TextRole::Headline,
            rect(0.4, 0.24, 0.5, 0.2),
            "Made for mornings",
        ),
    ];
    let t = template(&b);
    let n = &t["nodes"];
    let f = |id: &str, k: &str| n[id][k].as_f64().unwrap();
    let em = |id: &str| n[id]["textFit"]["maxFontSize"].as_f64().unwrap();
    let gap = f("headline", "y") - (f("eyebrow", "y") + f("eyebrow", "height"));
    let need =
        f64::from(crate::generate::quality::MIN_CHECKED_GAP_EM) * em("eyebrow").min(em("headline"));
    assert!(gap >= need, "gap {gap} < {need}");
}

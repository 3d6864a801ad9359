//! Filling a layout template: the brand's colours and fonts, the product image, a logo that
//! stands out from what is behind it, the copy, fresh node ids, and the contrast rules.
//!
//! A template is a renderer tree whose nodes may carry `$` keys (see
//! `assets/layouts/README.md`): `$fill` (a palette role), `$text` (a copy slot), `$font`,
//! `$image` (`product` or `logo`), `$on` (the node behind a text or logo), `$align` and
//! `$scrim`. Filling resolves them and removes them, so the tree handed to the renderer and
//! stored as `current_json_tree` is plain renderer format with UUID ids and readable `name`s.
//!
//! Text colour is chosen by arithmetic where the backdrop is a known solid (the WCAG ratio
//! against the role's colour); over photos the template puts a scrim, and the handler's
//! preflight render (the renderer measures contrast against the real pixels) darkens it
//! with [`strengthen`] when that is not enough. Rejected alternative: measuring the photo
//! here and guessing the pixels behind each line — the renderer already composites and
//! measures them exactly, so the pipeline asks it.
//!
//! This module writes tree keys by name (`fills`, `characters`, whole nodes such as the
//! contrast panel [`strengthen`] adds): it is where a tree is made from a template, so the
//! keys are its output. Image URLs alone go through `renderer::tree` (`paint::image`), as
//! the worker's layering test requires.

use adforge_renderer::tree::paint;
use serde_json::{Map, Value, json};

use super::analyse::{Rgb, contrast};
use super::brand::{Palette, fonts};
use super::copy::AdCopy;
use super::slots::SlotText;
use crate::protocol::Brand;
use std::collections::BTreeMap;

pub use super::logo::{LogoChoice, LogoSlot, MIN_LOGO_CONTRAST, relogo};

/// The product cut out of its photo, for `$cutout` slots.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductCutout {
    /// The cut-out PNG's URL.
    pub url: String,
    /// Its size in pixels (trimmed to the product).
    pub width: u32,
    pub height: u32,
}

/// Everything [`fill`] needs besides the template.
#[derive(Debug, Clone)]
pub struct FillInputs<'a> {
    /// The ad, whose id seeds the node UUIDs.
    pub ad_id: &'a str,
    /// The layout's name, kept as the root's `name`.
    pub layout_name: &'a str,
    /// The brand (fonts, name).
    pub brand: &'a Brand,
    /// Colours by role.
    pub palette: Palette,
    /// The copy.
    pub copy: &'a AdCopy,
    /// The product image URL, if the variant has images.
    pub product_image: Option<&'a str>,
    /// The product cut out of that image, when a `$cutout` slot asked for one and it
    /// could be made; such slots show the photo framed without it.
    pub product_cutout: Option<&'a ProductCutout>,
    /// The brand's logos, measured.
    pub logos: &'a [LogoChoice],
    /// The words of each slot by node key, written by role ([`super::slots`]); slots not
    /// in it take `copy`'s words by their `$text`.
    pub slots: Option<&'a BTreeMap<String, SlotText>>,
    /// The prompt asks for no logo: the logo slot stays in the tree, hidden.
    pub no_logo: bool,
}

/// How the contrast of one text node is guaranteed.
#[derive(Debug, Clone, PartialEq)]
pub struct TextPlacement {
    /// The node's UUID.
    pub id: String,
    /// The UUID of the scrim behind it, when it sits on a photo.
    pub scrim: Option<String>,
    /// The solid colour behind it, when known.
    pub backdrop: Option<Rgb>,
}

/// A filled tree plus what the contrast pass needs.
#[derive(Debug, Clone)]
pub struct Filled {
    /// The tree in renderer format.
    pub tree: Value,
    /// One entry per TEXT node.
    pub texts: Vec<TextPlacement>,
    /// The logo slot, when the ad shows one: [`relogo`] places it again against the ground
    /// the check render measured behind it.
    pub logo: Option<LogoSlot>,
}

/// Fills `template` (one aspect's tree from a layout file).
///
/// # Errors
/// A message when the template is not an object with `nodes` (a layout asset bug).
pub fn fill(template: &Value, inputs: &FillInputs<'_>) -> Result<Filled, String> {
    let nodes = template
        .get("nodes")
        .and_then(Value::as_object)
        .ok_or("layout template has no nodes")?;
    let root = template
        .get("root")
        .and_then(Value::as_str)
        .unwrap_or("root");
    let id_of = |key: &str| node_uuid(inputs.ad_id, key);
    let (heading, body) = fonts(&inputs.brand.fonts);

    // Backdrop colours first, so texts can look theirs up by template id.
    let role_of = |key: &str| -> Option<Rgb> {
        let n = nodes.get(key)?;
        if n.get("$scrim").is_some() {
            return Some([20, 20, 20]);
        }
        if let Some([a, b]) = gradient_roles(n) {
            return Some(super::brand::mix(
                inputs.palette.role(a),
                inputs.palette.role(b),
                0.5,
            ));
        }
        n.get("$fill")
            .and_then(Value::as_str)
            .map(|r| inputs.palette.role(r))
    };

    let mut out = Map::new();
    let mut texts = Vec::new();
    let mut logo_slot = None;
    let mut logo_plate = None;
    for (key, node) in nodes {
        let Some(src) = node.as_object() else {
            return Err(format!("layout node {key} is not an object"));
        };
        let mut n = Map::new();
        let uuid = id_of(key);
        let on = src.get("$on").and_then(Value::as_str);
        let backdrop = on.and_then(role_of);
        let on_scrim = on
            .and_then(|o| nodes.get(o))
            .is_some_and(|o| o.get("$scrim").is_some());
        for (k, v) in src {
            if k.starts_with('$') {
                continue;
            }
            let v = match k.as_str() {
                "id" => Value::from(uuid.clone()),
                "children" => Value::Array(
                    v.as_array()
                        .map(|c| {
                            c.iter()
                                .filter_map(Value::as_str)
                                .map(|c| Value::from(id_of(c)))
                                .collect()
                        })
                        .unwrap_or_default(),
                ),
                _ => v.clone(),
            };
            n.insert(k.clone(), v);
        }
        let name = if key == root {
            inputs.layout_name.to_owned()
        } else {
            display_name(key)
        };
        n.insert("name".into(), Value::from(name));
        if let Some(role) = src.get("$fill").and_then(Value::as_str) {
            n.insert("fills".into(), solid(inputs.palette.role(role)));
        }
        if let Some([a, b]) = gradient_roles(node) {
            let stops = Value::Array(vec![
                paint::stop(0, colour_json(inputs.palette.role(a))),
                paint::stop(1, colour_json(inputs.palette.role(b))),
            ]);
            if let Some(fill) = n
                .get_mut("fills")
                .and_then(|f| f.get_mut(0))
                .and_then(Value::as_object_mut)
            {
                fill.insert("gradientStops".into(), stops);
            }
        }
        if let Some(slot) = src.get("$text").and_then(Value::as_str) {
            let written = inputs.slots.and_then(|m| m.get(key));
            let text = match (written, slot) {
                (Some(w), _) => w.text.clone(),
                (None, "headline") => inputs.copy.headline.clone(),
                (None, "supporting") => inputs.copy.supporting.clone(),
                (None, "cta") => inputs.copy.cta.clone(),
                (None, "eyebrow" | "badge_label") => inputs.copy.eyebrow.clone(),
                _ => inputs.brand.name.clone(),
            };
            let slot = written.map_or(slot, |w| w.role.as_str());
            if let Some(w) = written {
                if !w.shown {
                    n.insert("visible".into(), Value::from(false));
                }
                if w.role != "compare_at_price" {
                    n.remove("textDecoration");
                }
            }
            n.insert("characters".into(), Value::from(text));
            let family = match src.get("$font").and_then(Value::as_str) {
                Some("heading") => &heading,
                _ => &body,
            };
            n.insert("fontFamily".into(), Value::from(family.clone()));
            let bg = backdrop.unwrap_or([255, 255, 255]);
            let mut colour = inputs.palette.text_on(bg);
            // Eyebrows take the accent colour where it stays readable.
            if slot == "eyebrow"
                && on != Some("badge")
                && contrast(inputs.palette.accent, bg) >= 4.6
            {
                colour = inputs.palette.accent;
            }
            if on_scrim {
                colour = [255, 255, 255];
            }
            n.insert("fills".into(), solid(colour));
            texts.push(TextPlacement {
                id: uuid.clone(),
                scrim: on_scrim.then(|| on.map(id_of)).flatten(),
                backdrop: (!on_scrim).then_some(bg),
            });
        }
        if let Some(ratios) = src.get("$shadow") {
            place_shadow(&mut n, nodes, ratios, inputs.product_cutout);
        }
        let cutout = inputs
            .product_cutout
            .filter(|_| src.get("$cutout") == Some(&Value::Bool(true)));
        match src.get("$image").and_then(Value::as_str) {
            Some("product") if inputs.product_image.is_some() && cutout.is_some() => {
                if let Some(c) = cutout {
                    // The cut-out product, whole and centred in the slot; no frame.
                    n.remove("cornerRadius");
                    n.insert(
                        "fills".into(),
                        Value::Array(vec![paint::image(&c.url, "FIT")]),
                    );
                }
            }
            Some("product") => {
                match inputs.product_image {
                    Some(url) => {
                        // `$scale: FIT` keeps a whole cut-out (transparent) product image
                        // inside its slot.
                        let mode = match src.get("$scale").and_then(Value::as_str) {
                            Some("FIT") => "FIT",
                            _ => "FILL",
                        };
                        n.insert("fills".into(), Value::Array(vec![paint::image(url, mode)]));
                    }
                    // No variant image: the slot stays in the tree (an editor can fill it)
                    // but is hidden rather than drawn as a placeholder.
                    None => {
                        n.insert("visible".into(), Value::from(false));
                    }
                }
            }
            Some("logo") => {
                if inputs.no_logo {
                    n.insert("visible".into(), Value::from(false));
                }
                let bg = backdrop.unwrap_or([255, 255, 255]);
                let align = src.get("$align").and_then(Value::as_str).unwrap_or("LEFT");
                let slot = LogoSlot {
                    id: uuid.clone(),
                    plate_id: id_of("logo_plate"),
                    node: n.clone(),
                    logos: inputs.logos.to_vec(),
                    brand: inputs.brand.name.clone(),
                    palette: inputs.palette.clone(),
                    align: align.to_owned(),
                    font: heading.clone(),
                    scrim: on_scrim.then(|| on.map(id_of)).flatten(),
                };
                let plate = super::logo::place_logo(&mut n, &slot, bg);
                if n.get("type").and_then(Value::as_str) == Some("TEXT") {
                    texts.push(TextPlacement {
                        id: uuid.clone(),
                        scrim: slot.scrim.clone(),
                        backdrop: (!on_scrim).then_some(bg),
                    });
                }
                if !inputs.no_logo {
                    logo_slot = Some(slot);
                    logo_plate = plate;
                }
            }
            _ => {}
        }
        out.insert(uuid, Value::Object(n));
    }
    // A badge whose label is left out goes with it.
    for (key, w) in inputs.slots.into_iter().flatten() {
        let on = nodes
            .get(key)
            .and_then(|n| n.get("$on"))
            .and_then(Value::as_str);
        if !w.shown
            && on == Some("badge")
            && let Some(Value::Object(b)) = out.get_mut(&id_of("badge"))
        {
            b.insert("visible".into(), Value::from(false));
        }
    }
    let mut tree = json!({"root": id_of(root), "nodes": Value::Object(out)});
    if let Some(slot) = &logo_slot {
        super::logo::set_plate(&mut tree, slot, logo_plate.as_ref());
    }
    Ok(Filled {
        tree,
        texts,
        logo: logo_slot,
    })
}

/// Whether `template` has a slot that shows the product cut out of its photo (`$cutout`).
pub fn wants_cutout(template: &Value) -> bool {
    template
        .get("nodes")
        .and_then(Value::as_object)
        .is_some_and(|nodes| {
            nodes
                .values()
                .any(|n| n.get("$cutout") == Some(&Value::Bool(true)))
        })
}

/// The box a cut-out of `cutout`'s aspect takes when drawn `FIT` in the slot `(x, y, w,
/// h)`: centred, as large as fits.
pub fn fitted(slot: [f64; 4], cutout: &ProductCutout) -> [f64; 4] {
    let [x, y, w, h] = slot;
    let aspect = f64::from(cutout.width.max(1)) / f64::from(cutout.height.max(1));
    let (fw, fh) = if aspect > w / h.max(1e-9) {
        (w, w / aspect)
    } else {
        (h * aspect, h)
    };
    [x + (w - fw) / 2.0, y + (h - fh) / 2.0, fw, fh]
}

/// Places the ground shadow (`$shadow` ratios, see the blueprint template) under the
/// cut-out as drawn in its slot, or hides it when there is no cut-out.
fn place_shadow(
    n: &mut Map<String, Value>,
    nodes: &Map<String, Value>,
    ratios: &Value,
    cutout: Option<&ProductCutout>,
) {
    let slot = nodes
        .values()
        .find(|o| o.get("$cutout") == Some(&Value::Bool(true)))
        .and_then(|o| {
            let f = |k: &str| o.get(k).and_then(Value::as_f64);
            Some([f("x")?, f("y")?, f("width")?, f("height")?])
        });
    let (Some(slot), Some(c)) = (slot, cutout) else {
        n.insert("visible".into(), Value::from(false));
        return;
    };
    let [x, y, w, h] = fitted(slot, c);
    // In a unit square of the same size as the design, so the template's arithmetic holds.
    let product = crate::blueprint::Rect {
        x: x as f32,
        y: y as f32,
        w: w as f32,
        h: h as f32,
    };
    let extent = crate::blueprint::template::shadow_box(&product, 1.0, 1.0, ratios);
    let ([sx, sy, sw, sh], blur) = crate::blueprint::template::shadow_core(extent);
    for (k, v) in [("x", sx), ("y", sy), ("width", sw), ("height", sh)] {
        n.insert(k.into(), json!(v));
    }
    if let Some(effect) = n
        .get_mut("effects")
        .and_then(|e| e.get_mut(0))
        .and_then(Value::as_object_mut)
    {
        effect.insert("radius".into(), json!(blur));
    }
}

/// The two palette roles of a `$gradient` node (its first fill's two stops).
fn gradient_roles(node: &Value) -> Option<[&str; 2]> {
    let g = node.get("$gradient")?.as_array()?;
    Some([g.first()?.as_str()?, g.get(1)?.as_str()?])
}

/// Makes the contrast of `failing` text nodes safe: scrims behind them become nearly
/// opaque; other texts switch to black or white, whichever reads better on the colour the
/// check render measured behind them (else the backdrop the layout expected).
pub fn strengthen(filled: &mut Filled, failing: &[(String, Option<Rgb>)]) {
    for (id, measured) in failing {
        let Some(place) = filled.texts.iter().find(|t| &t.id == id).cloned() else {
            continue;
        };
        let nodes = &mut filled.tree["nodes"];
        if let Some(scrim) = &place.scrim {
            if let Some(stops) = nodes[scrim]["fills"][0]["gradientStops"].as_array_mut() {
                for stop in stops.iter_mut() {
                    // A clear stop is where the scrim fades out; it stays clear.
                    let a = stop["color"]["a"].as_f64().unwrap_or(0.0);
                    let boosted = if a <= 0.0 { a } else { (a + 0.2).min(0.96) };
                    stop["color"]["a"] = json!(round2(boosted));
                }
            }
        } else {
            // What the check render drew behind the text wins over what the layout
            // expected there (a text placed on a photo has no known backdrop).
            let bg = measured.or(place.backdrop).unwrap_or([255, 255, 255]);
            let c = if contrast([0, 0, 0], bg) > contrast([255, 255, 255], bg) {
                [0, 0, 0]
            } else {
                [255, 255, 255]
            };
            if nodes[id]["fills"] == solid(c) {
                // Black or white already failed here: what is behind is busy (a photo's
                // light and dark). The text gets a panel of its own, as a reference's
                // copy on a photo has.
                back(&mut filled.tree, id, c);
            } else {
                nodes[id]["fills"] = solid(c);
            }
        }
    }
}

/// Puts a nearly opaque panel behind text node `id` (its box, padded by a sixth of its
/// font size so it keeps clear of its neighbours, corners rounded), dark under light `ink` and light under dark. Once per
/// node; a rotated text keeps none (its box is not the panel's).
fn back(tree: &mut Value, id: &str, ink: Rgb) {
    let panel_id = node_uuid(id, "contrast-panel");
    let nodes = &tree["nodes"];
    if nodes.get(&panel_id).is_some() || nodes[id]["rotation"].as_f64().unwrap_or(0.0) != 0.0 {
        return;
    }
    let Some(parent) = nodes.as_object().and_then(|m| {
        m.iter().find_map(|(k, n)| {
            n["children"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c == id))
                .then(|| k.clone())
        })
    }) else {
        return;
    };
    let t = &nodes[id];
    let num = |k: &str| t[k].as_f64().unwrap_or(0.0);
    let pad = (num("fontSize") / 6.0).max(4.0);
    let colour = if ink == [255, 255, 255] {
        [20, 20, 24]
    } else {
        [250, 250, 248]
    };
    let mut fills = solid(colour);
    fills[0]["opacity"] = json!(0.88);
    let panel = json!({
        "id": panel_id,
        "type": "RECTANGLE",
        "name": "Contrast Panel",
        "x": round2(num("x") - pad),
        "y": round2(num("y") - pad),
        "width": round2(num("width") + 2.0 * pad),
        "height": round2(num("height") + 2.0 * pad),
        "cornerRadius": round2(pad),
        "fills": fills,
    });
    tree["nodes"][&panel_id] = panel;
    if let Some(children) = tree["nodes"][&parent]["children"].as_array_mut()
        && let Some(at) = children.iter().position(|c| c == id)
    {
        children.insert(at, json!(panel_id));
    }
}

/// Lowers the minimum font size of texts that did not fit, so the next render fits them.
pub fn loosen_fit(filled: &mut Filled, overflowing: &[String]) {
    for id in overflowing {
        let node = &mut filled.tree["nodes"][id];
        if let Some(min) = node["textFit"]["minFontSize"].as_f64() {
            node["textFit"]["minFontSize"] = json!(round2((min * 0.7).max(6.0)));
        }
    }
}

pub use crate::services::node_uuid;

/// A colour as the tree writes it, channels to 4 decimals.
fn colour_json(c: Rgb) -> Value {
    paint::color(channels(c))
}

/// A `fills` list of one SOLID paint.
fn solid(c: Rgb) -> Value {
    Value::Array(vec![paint::solid(channels(c))])
}

/// A colour's channels in 0..1, to 4 decimals.
fn channels(c: Rgb) -> [f64; 3] {
    c.map(|v| round4(f64::from(v) / 255.0))
}

/// The readable `name` a filled node gets from its template key (`list_item_2` → `List Item 2`).
pub fn display_name(key: &str) -> String {
    key.split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

fn round4(v: f64) -> f64 {
    (v * 10000.0).round() / 10000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ids_are_v4_uuids_and_stable() {
        let a = node_uuid("ia_1", "headline");
        assert_eq!(a, node_uuid("ia_1", "headline"));
        assert_ne!(a, node_uuid("ia_2", "headline"));
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 4);
    }
}

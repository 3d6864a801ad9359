//! Reading an ad's tree as the units a re-layout moves: the ground, the product (with what
//! sits on it), the logo (with its plate), the blocks of words in reading order, and the
//! shapes that follow them (scrims, panels) or stay where they were (decoration).

use adforge_renderer::tree::{Bounds, TreeDoc};
use serde_json::Value;

/// What a top-level node (a child of the root) is to the re-layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// Covers the whole canvas (a solid, a gradient, a full-bleed photo): it covers the new
    /// canvas too.
    Ground,
    /// The product image, moved and scaled whole with what sits on it (a ground shadow, a
    /// badge on its corner).
    Product,
    /// The logo with its plate, moved to the same corner and scaled whole.
    Logo,
    /// Words: a TEXT (re-flowed at the new width) or a frame holding text (a button,
    /// scaled whole).
    Content,
    /// A shape behind some of the units (a scrim, a panel, a contrast panel): it follows
    /// them, keeping its padding around them and the canvas edges it touched.
    Backdrop,
    /// A shape behind nothing: mapped to the new canvas in proportion, hidden where that
    /// would put it over a unit.
    Decor,
    /// Not drawn: mapped in proportion, so an editor that shows it finds it in place.
    Hidden,
}

/// One node the re-layout moves: a child of the root.
#[derive(Debug, Clone)]
pub(super) struct Item {
    pub id: String,
    pub role: Role,
    /// Its box in canvas coordinates (the root's children are in them).
    pub b: Bounds,
    /// For [`Role::Content`] and [`Role::Backdrop`] members: the index of the item it moves
    /// with whole (a badge's label with its badge), if any.
    pub rides: Option<usize>,
    /// Whether it is a single TEXT node (its words are flowed again at the new width).
    pub text: bool,
    /// Largest type size among its texts (0 when none).
    pub em: f64,
    /// Smallest type size among its texts (0 when none).
    pub min_em: f64,
    /// Whether it is (or holds) the headline.
    pub headline: bool,
    /// For a backdrop: the items whose centre it holds.
    pub holds: Vec<usize>,
    /// The plate behind the logo.
    pub plate: bool,
}

/// The source tree read as items, with the canvas size.
#[derive(Debug, Clone)]
pub(super) struct Source {
    pub root: String,
    pub w: f64,
    pub h: f64,
    pub items: Vec<Item>,
}

impl Source {
    /// The items with `role`, by index.
    pub fn with(&self, role: Role) -> impl Iterator<Item = usize> + '_ {
        (0..self.items.len()).filter(move |&i| self.items[i].role == role)
    }

    /// The product item, if the ad shows one apart from its ground.
    pub fn product(&self) -> Option<usize> {
        self.with(Role::Product).next()
    }

    /// The logo item (the logo itself, not its plate).
    pub fn logo(&self) -> Option<usize> {
        self.with(Role::Logo)
            .find(|&i| self.items[i].rides.is_none())
    }

    /// Share of the canvas the product's box covers (0 without one).
    pub fn product_share(&self) -> f64 {
        self.product()
            .map_or(0.0, |p| self.items[p].b.area() / (self.w * self.h).max(1.0))
    }
}

fn is_scrim_name(name: &str) -> bool {
    name == "Scrim" || name.ends_with(" Scrim") || name == "Contrast Panel"
}

/// Reads `tree` (see the module docs).
///
/// # Errors
/// A tree without a root of known size.
pub(super) fn read(tree: &Value) -> Result<Source, String> {
    let doc = TreeDoc::new(tree);
    let root = doc.root_id().ok_or("the tree names no root")?.to_owned();
    let rb = doc
        .bounds(&root)
        .filter(|b| b.width > 0.0 && b.height > 0.0)
        .ok_or("the tree's root has no width and height")?;
    let (w, h) = (rb.width, rb.height);
    let mut items: Vec<Item> = Vec::new();
    for id in doc.children(&root) {
        let Some(b) = doc.bounds(&id) else { continue };
        let name = doc.name(&id).unwrap_or_default().to_owned();
        let slot = doc.slot(&id);
        let texts: Vec<String> = doc
            .subtree(&id)
            .into_iter()
            .filter(|n| doc.kind(n) == Some("TEXT") && doc.visible(n))
            .collect();
        let sizes: Vec<f64> = texts.iter().filter_map(|t| doc.font_size(t)).collect();
        let em = sizes.iter().copied().fold(0.0, f64::max);
        let min_em = sizes.iter().copied().fold(f64::INFINITY, f64::min);
        let headline = texts
            .iter()
            .any(|t| doc.slot(t).as_deref() == Some("headline"));
        let is_text = doc.kind(&id) == Some("TEXT");
        let full = b.x <= 0.02 * w
            && b.y <= 0.02 * h
            && b.x + b.width >= 0.98 * w
            && b.y + b.height >= 0.98 * h;
        let role = if !doc.visible(&id) {
            Role::Hidden
        } else if slot.as_deref() == Some("logo") || name == "Logo Plate" {
            Role::Logo
        } else if is_scrim_name(&name) {
            Role::Backdrop
        } else if full && !is_text {
            Role::Ground
        } else if slot.as_deref() == Some("product_image") || name == "Product Shadow" {
            Role::Product
        } else if !texts.is_empty() {
            Role::Content
        } else if doc.has_image_fill(&id) {
            Role::Product
        } else {
            Role::Decor
        };
        items.push(Item {
            id,
            role,
            b,
            rides: None,
            text: is_text,
            em,
            min_em: if min_em.is_finite() { min_em } else { 0.0 },
            headline,
            holds: Vec::new(),
            plate: name == "Logo Plate",
        });
    }
    attach(&mut items, w, h);
    Ok(Source { root, w, h, items })
}

/// Ties items that move together: the product's shadow and other image items to the
/// largest product item, the plate to its logo, a small shape holding one text (a badge)
/// and its label, a badge on the product to the product; shapes behind units become their
/// backdrops.
fn attach(items: &mut [Item], w: f64, h: f64) {
    let canvas = w * h;
    // The product: the largest product item; the others ride on it.
    let product = (0..items.len())
        .filter(|&i| items[i].role == Role::Product)
        .max_by(|&a, &b| items[a].b.area().total_cmp(&items[b].b.area()));
    if let Some(p) = product {
        for (i, it) in items.iter_mut().enumerate() {
            if i != p && it.role == Role::Product {
                it.rides = Some(p);
            }
        }
    }
    // The logo: the logo node proper; its plate rides on it.
    let logo = (0..items.len()).find(|&i| items[i].role == Role::Logo && !items[i].plate);
    for (i, it) in items.iter_mut().enumerate() {
        if it.role == Role::Logo && Some(i) != logo {
            it.rides = logo;
            if logo.is_none() {
                // A plate without its logo is a shape like any other.
                it.role = Role::Decor;
            }
        }
    }
    // Small shapes holding exactly one text's centre: a badge or a tag, moved whole.
    for s in 0..items.len() {
        if items[s].role != Role::Decor || items[s].b.area() > 0.06 * canvas {
            continue;
        }
        let held: Vec<usize> = (0..items.len())
            .filter(|&t| items[t].role == Role::Content && items[s].b.holds(items[t].b.centre()))
            .collect();
        if let [t] = held[..] {
            items[t].rides = Some(s);
            items[s].role = Role::Content;
            items[s].em = items[t].em;
            items[s].min_em = items[t].min_em;
            items[s].b = items[s].b.union(&items[t].b);
        }
    }
    // A badge (a content unit without the headline) mostly on the product rides on it.
    if let Some(p) = product {
        let pb = items[p].b;
        for i in 0..items.len() {
            let it = &items[i];
            if it.role == Role::Content && it.rides.is_none() && !it.headline && !it.text {
                let inter = intersection(&it.b, &pb);
                if inter > 0.3 * it.b.area() && it.b.area() < 0.25 * pb.area() {
                    items[i].rides = Some(p);
                    items[i].role = Role::Product;
                    for other in items.iter_mut() {
                        if other.rides == Some(i) {
                            other.rides = Some(p);
                            other.role = Role::Product;
                        }
                    }
                }
            }
        }
    }
    // Shapes behind units: what they hold, they follow.
    for s in 0..items.len() {
        if !matches!(items[s].role, Role::Decor | Role::Backdrop) {
            continue;
        }
        let held: Vec<usize> = (0..items.len())
            .filter(|&u| {
                u != s
                    && items[u].rides.is_none()
                    && matches!(items[u].role, Role::Content | Role::Product | Role::Logo)
                    && items[s].b.holds(items[u].b.centre())
                    && items[u].b.area() < items[s].b.area()
            })
            .collect();
        if held.is_empty() {
            // A scrim over nothing stays a shade in place.
            items[s].role = Role::Decor;
        } else {
            items[s].role = Role::Backdrop;
            items[s].holds = held;
        }
    }
}

/// The area two boxes share.
pub(super) fn intersection(a: &Bounds, b: &Bounds) -> f64 {
    let w = (a.x + a.width).min(b.x + b.width) - a.x.max(b.x);
    let h = (a.y + a.height).min(b.y + b.height) - a.y.max(b.y);
    w.max(0.0) * h.max(0.0)
}

//! Eight reference ads of distinct compositions, drawn with our own renderer from JSON trees
//! written here, with the regions each one has (hand-written, in the unit square).

use adforge_renderer::{RenderOptions, Renderer, Tree};
use serde_json::{Map, Value, json};

/// What the analysis should find in a reference.
#[derive(Debug, Clone)]
pub struct Expect {
    pub ground: &'static str,
    /// Box of the headline text node (the ink lies inside it, at its top).
    pub headline: [f32; 4],
    pub product: Option<[f32; 4]>,
    pub product_shape: Option<&'static str>,
    pub cta: Option<[f32; 4]>,
    pub badge: Option<[f32; 4]>,
    pub logo: Option<[f32; 4]>,
    pub supporting: Option<[f32; 4]>,
}

pub struct Reference {
    pub name: &'static str,
    pub tree: Value,
    pub expect: Expect,
}

impl Reference {
    pub fn size(&self) -> (f32, f32) {
        let root = &self.tree["nodes"]["root"];
        (
            root["width"].as_f64().unwrap() as f32,
            root["height"].as_f64().unwrap() as f32,
        )
    }

    /// Renders at 1080 px on the long edge.
    pub fn png(&self, renderer: &Renderer) -> Vec<u8> {
        let (w, h) = self.size();
        let width = if w >= h {
            1080
        } else {
            (1080.0 * w / h).round() as u32
        };
        let tree = Tree::from_value(self.tree.clone()).unwrap();
        let out = renderer
            .render(
                &tree,
                &RenderOptions {
                    width: Some(width),
                    encode_png: true,
                },
            )
            .unwrap();
        out.png.unwrap()
    }
}

pub fn c(hex: u32) -> Value {
    let ch = |s: u32| f64::from((hex >> s) & 0xff) / 255.0;
    json!({"r": ch(16), "g": ch(8), "b": ch(0), "a": 1})
}

pub fn solid(hex: u32) -> Value {
    json!([{"type": "SOLID", "color": c(hex)}])
}

/// A tree being drawn: nodes under the root, in painting order.
pub struct B {
    nodes: Map<String, Value>,
    root: Vec<String>,
    n: usize,
}

impl B {
    pub fn new() -> B {
        B {
            nodes: Map::new(),
            root: Vec::new(),
            n: 0,
        }
    }

    pub fn add(&mut self, mut v: Value, parent: Option<&str>) -> String {
        self.n += 1;
        let id = format!("n{}", self.n);
        v["id"] = Value::from(id.clone());
        self.nodes.insert(id.clone(), v);
        match parent {
            None => self.root.push(id.clone()),
            Some(p) => {
                let ch = self.nodes[p]
                    .as_object_mut()
                    .unwrap()
                    .entry("children")
                    .or_insert(json!([]));
                ch.as_array_mut().unwrap().push(Value::from(id.clone()));
            }
        }
        id
    }

    pub fn rect(&mut self, r: [f32; 4], fill: u32, radius: f32) {
        self.add(
            json!({"type": "RECTANGLE", "x": r[0], "y": r[1], "width": r[2], "height": r[3],
                   "cornerRadius": radius, "fills": solid(fill)}),
            None,
        );
    }

    pub fn ellipse(&mut self, r: [f32; 4], fill: u32) {
        self.add(
            json!({"type": "ELLIPSE", "x": r[0], "y": r[1], "width": r[2], "height": r[3],
                   "fills": solid(fill)}),
            None,
        );
    }

    #[allow(clippy::too_many_arguments)]
    pub fn text(&mut self, r: [f32; 4], s: &str, size: f32, weight: u32, fill: u32, align: &str) {
        self.add(
            json!({"type": "TEXT", "x": r[0], "y": r[1], "width": r[2], "height": r[3],
                   "characters": s, "fontSize": size, "fontWeight": weight,
                   "lineHeight": {"value": 115, "unit": "PERCENT"},
                   "textAlignHorizontal": align, "textAutoResize": "NONE",
                   "fills": solid(fill)}),
            None,
        );
    }

    /// A filled button with a centred label.
    pub fn button(&mut self, r: [f32; 4], label: &str, size: f32, fill: u32, ink: u32) {
        self.rect(r, fill, r[3] / 2.0);
        self.add(
            json!({"type": "TEXT", "x": r[0], "y": r[1], "width": r[2], "height": r[3],
                   "characters": label, "fontSize": size, "fontWeight": 600,
                   "textAlignHorizontal": "CENTER", "textAlignVertical": "CENTER",
                   "textAutoResize": "NONE", "fills": solid(ink)}),
            None,
        );
    }

    /// A photo: a clipped frame of overlapping coloured discs over a gradient.
    pub fn photo(&mut self, r: [f32; 4], radius: f32, seed: u32) {
        let f = self.add(
            json!({"type": "FRAME", "x": r[0], "y": r[1], "width": r[2], "height": r[3],
                   "cornerRadius": radius, "clipsContent": true,
                   "fills": [{"type": "GRADIENT_LINEAR",
                              "gradientHandlePositions": [{"x": 0, "y": 0}, {"x": 1, "y": 1}, {"x": 0, "y": 1}],
                              "gradientStops": [{"position": 0, "color": c(0x2E5E4E)},
                                                {"position": 1, "color": c(0xC9A66B)}]}]}),
            None,
        );
        let mut k = seed.wrapping_mul(2654435761).max(1);
        let mut next = || {
            k ^= k << 13;
            k ^= k >> 17;
            k ^= k << 5;
            k
        };
        let palette = [
            0x8C4A2F, 0xD9C5A0, 0x3B6E8F, 0x6B8F3B, 0xE0B050, 0x4A2E2E, 0xA8C8D8,
        ];
        for _ in 0..40 {
            let d = r[2].min(r[3]) * (0.08 + (next() % 100) as f32 / 400.0);
            let x = (next() % 1000) as f32 / 1000.0 * r[2] - d / 2.0;
            let y = (next() % 1000) as f32 / 1000.0 * r[3] - d / 2.0;
            let col = palette[(next() % palette.len() as u32) as usize];
            self.add(
                json!({"type": "ELLIPSE", "x": x, "y": y, "width": d, "height": d,
                       "fills": solid(col)}),
                Some(&f),
            );
        }
    }

    /// A cut-out bottle: shoulders and a narrow neck, shaded.
    pub fn bottle(&mut self, r: [f32; 4]) {
        let (w, h) = (r[2], r[3]);
        let path = format!(
            "M{a} 0 L{b} 0 L{b} {n} C{w} {s} {w} {s} {w} {t} L{w} {h} L0 {h} L0 {t} C0 {s} 0 {s} {a} {n} Z",
            a = w * 0.34,
            b = w * 0.66,
            n = h * 0.22,
            s = h * 0.3,
            t = h * 0.38,
            w = w,
            h = h
        );
        self.add(
            json!({"type": "VECTOR", "x": r[0], "y": r[1], "width": w, "height": h,
                   "vectorPaths": [{"data": path, "windingRule": "NONZERO"}],
                   "fills": [{"type": "GRADIENT_LINEAR",
                              "gradientHandlePositions": [{"x": 0, "y": 0.5}, {"x": 1, "y": 0.5}, {"x": 0, "y": 1}],
                              "gradientStops": [{"position": 0, "color": c(0x7A2E12)},
                                                {"position": 0.4, "color": c(0xE08A4A)},
                                                {"position": 1, "color": c(0x4A1A08)}]}]}),
            None,
        );
    }

    pub fn done(self, w: f32, h: f32, ground: Value) -> Value {
        let mut nodes = self.nodes;
        nodes.insert(
            "root".into(),
            json!({"id": "root", "type": "FRAME", "width": w, "height": h, "fills": ground,
                   "children": self.root}),
        );
        json!({"root": "root", "nodes": nodes})
    }
}

fn unit(r: [f32; 4], w: f32, h: f32) -> [f32; 4] {
    [r[0] / w, r[1] / h, r[2] / w, r[3] / h]
}

/// The eight references.
pub fn all() -> Vec<Reference> {
    let mut out = Vec::new();

    // 1. Centred cut-out product on a plain white ground, headline above, button below.
    {
        let (w, h) = (1080.0, 1080.0);
        let mut b = B::new();
        let logo = [440.0, 50.0, 200.0, 40.0];
        b.text(logo, "ACME", 32.0, 800, 0x111111, "CENTER");
        let head = [140.0, 130.0, 800.0, 100.0];
        b.text(head, "Pure Morning Roast", 72.0, 700, 0x1A1A1A, "CENTER");
        let prod = [400.0, 290.0, 280.0, 560.0];
        b.bottle(prod);
        let cta = [390.0, 900.0, 300.0, 90.0];
        b.button(cta, "Shop now", 34.0, 0x1F3A5F, 0xFFFFFF);
        out.push(Reference {
            name: "centred_product",
            tree: b.done(w, h, solid(0xFFFFFF)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("silhouette"),
                cta: Some(unit(cta, w, h)),
                badge: None,
                logo: Some(unit(logo, w, h)),
                supporting: None,
            },
        });
    }

    // 2. Type poster, product bottom-right.
    {
        let (w, h) = (1080.0, 1350.0);
        let mut b = B::new();
        let logo = [80.0, 60.0, 300.0, 36.0];
        b.text(logo, "NORTHWIND", 28.0, 800, 0x222222, "LEFT");
        let head = [80.0, 160.0, 900.0, 460.0];
        b.text(
            head,
            "Bold taste\nfor bright\nmornings",
            130.0,
            800,
            0x1B1B2F,
            "LEFT",
        );
        let sup = [80.0, 640.0, 620.0, 100.0];
        b.text(
            sup,
            "Slow roasted beans, ground fresh\nevery single morning.",
            34.0,
            400,
            0x33334A,
            "LEFT",
        );
        let prod = [600.0, 820.0, 400.0, 450.0];
        b.photo(prod, 40.0, 2);
        out.push(Reference {
            name: "type_poster",
            tree: b.done(w, h, solid(0xF4EBDD)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("rounded"),
                cta: None,
                badge: None,
                logo: Some(unit(logo, w, h)),
                supporting: Some(unit(sup, w, h)),
            },
        });
    }

    // 3. 1.91:1 landscape: framed photo left, copy right.
    {
        let (w, h) = (1200.0, 628.0);
        let mut b = B::new();
        let prod = [40.0, 40.0, 520.0, 548.0];
        b.photo(prod, 0.0, 3);
        let head = [620.0, 120.0, 540.0, 150.0];
        b.text(
            head,
            "Fresh coffee,\ndelivered weekly",
            56.0,
            700,
            0x101820,
            "LEFT",
        );
        let sup = [620.0, 300.0, 520.0, 70.0];
        b.text(
            sup,
            "Pause or cancel any time. Free shipping.",
            26.0,
            400,
            0x3A4450,
            "LEFT",
        );
        let cta = [620.0, 440.0, 240.0, 76.0];
        b.button(cta, "Subscribe", 28.0, 0xE07A3F, 0x111111);
        out.push(Reference {
            name: "landscape_191",
            tree: b.done(w, h, solid(0xF7F7F2)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("rectangle"),
                cta: Some(unit(cta, w, h)),
                badge: None,
                logo: None,
                supporting: Some(unit(sup, w, h)),
            },
        });
    }

    // 4. 16:9 landscape on a gradient: round photo left, eyebrow + headline + button right.
    {
        let (w, h) = (1920.0, 1080.0);
        let mut b = B::new();
        let prod = [200.0, 240.0, 600.0, 600.0];
        b.photo(prod, 300.0, 4);
        let eyebrow = [960.0, 300.0, 600.0, 50.0];
        b.text(eyebrow, "NEW ARRIVAL", 34.0, 700, 0xFFD27A, "LEFT");
        let head = [960.0, 380.0, 800.0, 220.0];
        b.text(
            head,
            "The lightest\nrunning shoe yet",
            84.0,
            800,
            0xFFFFFF,
            "LEFT",
        );
        let cta = [960.0, 680.0, 340.0, 100.0];
        b.button(cta, "Get yours", 38.0, 0xFFFFFF, 0x14213D);
        let ground = json!([{"type": "GRADIENT_LINEAR",
            "gradientHandlePositions": [{"x": 0.5, "y": 0}, {"x": 0.5, "y": 1}, {"x": 0, "y": 0}],
            "gradientStops": [{"position": 0, "color": c(0x14213D)}, {"position": 1, "color": c(0x5B2A86)}]}]);
        out.push(Reference {
            name: "landscape_169_gradient",
            tree: b.done(w, h, ground),
            expect: Expect {
                ground: "gradient",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("circle"),
                cta: Some(unit(cta, w, h)),
                badge: None,
                logo: None,
                supporting: None,
            },
        });
    }

    // 5. 9:16 full-bleed photo with a headline band.
    {
        let (w, h) = (1080.0, 1920.0);
        let mut b = B::new();
        b.photo([0.0, 0.0, w, h], 0.0, 5);
        let band = [0.0, 1280.0, 1080.0, 440.0];
        b.rect(band, 0x111827, 0.0);
        let head = [80.0, 1340.0, 920.0, 220.0];
        b.text(
            head,
            "Made for the\nlong weekend",
            88.0,
            800,
            0xFFFFFF,
            "LEFT",
        );
        let cta = [80.0, 1590.0, 300.0, 90.0];
        b.button(cta, "Book now", 34.0, 0xF5C542, 0x111111);
        out.push(Reference {
            name: "full_bleed_band",
            tree: b.done(w, h, solid(0x000000)),
            expect: Expect {
                ground: "photo",
                headline: unit(head, w, h),
                product: Some([0.0, 0.0, 1.0, 1.0]),
                product_shape: None,
                cta: Some(unit(cta, w, h)),
                badge: None,
                logo: None,
                supporting: None,
            },
        });
    }

    // 6. Testimonial: round photo on top, centred quote, name, logo at the bottom.
    {
        let (w, h) = (1080.0, 1080.0);
        let mut b = B::new();
        let prod = [390.0, 100.0, 300.0, 300.0];
        b.photo(prod, 150.0, 6);
        let head = [120.0, 460.0, 840.0, 220.0];
        b.text(
            head,
            "\u{201c}The only coffee my\nwhole team agrees on.\u{201d}",
            60.0,
            700,
            0x2B2118,
            "CENTER",
        );
        let sup = [240.0, 730.0, 600.0, 50.0];
        b.text(
            sup,
            "Maria Lopez, Studio Nine",
            32.0,
            400,
            0x5A4A3A,
            "CENTER",
        );
        let logo = [390.0, 960.0, 300.0, 40.0];
        b.text(logo, "NORTHWIND", 28.0, 800, 0x2B2118, "CENTER");
        out.push(Reference {
            name: "testimonial",
            tree: b.done(w, h, solid(0xF3E9DC)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("circle"),
                cta: None,
                badge: None,
                logo: Some(unit(logo, w, h)),
                supporting: Some(unit(sup, w, h)),
            },
        });
    }

    // 7. Offer poster: red ground, huge offer, round badge, cut-out product, button.
    {
        let (w, h) = (1080.0, 1350.0);
        let mut b = B::new();
        let head = [60.0, 120.0, 700.0, 300.0];
        b.text(head, "50% OFF\nALL WEEK", 120.0, 900, 0xFFFFFF, "LEFT");
        let badge = [780.0, 90.0, 240.0, 240.0];
        b.ellipse(badge, 0xFFD400);
        b.add(
            json!({"type": "TEXT", "x": 800.0, "y": 170.0, "width": 200.0, "height": 80.0,
                   "characters": "SALE", "fontSize": 56, "fontWeight": 800,
                   "textAlignHorizontal": "CENTER", "textAutoResize": "NONE",
                   "fills": solid(0x111111)}),
            None,
        );
        let prod = [620.0, 600.0, 340.0, 640.0];
        b.bottle(prod);
        let cta = [60.0, 1120.0, 360.0, 110.0];
        b.button(cta, "Shop the sale", 38.0, 0x111111, 0xFFFFFF);
        out.push(Reference {
            name: "offer_poster",
            tree: b.done(w, h, solid(0xD7263D)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("silhouette"),
                cta: Some(unit(cta, w, h)),
                badge: Some(unit(badge, w, h)),
                logo: None,
                supporting: None,
            },
        });
    }

    // 8. Split: photo bleeding off the left half, copy on the right half.
    {
        let (w, h) = (1080.0, 1080.0);
        let mut b = B::new();
        let prod = [0.0, 0.0, 540.0, 1080.0];
        b.photo(prod, 0.0, 8);
        let head = [600.0, 300.0, 440.0, 260.0];
        b.text(head, "Sleep\nbetter\ntonight", 76.0, 800, 0x0B3D2E, "LEFT");
        let sup = [600.0, 600.0, 420.0, 100.0];
        b.text(
            sup,
            "Organic cotton sheets,\nwashed soft.",
            30.0,
            400,
            0x2F5D50,
            "LEFT",
        );
        let cta = [600.0, 760.0, 260.0, 84.0];
        b.button(cta, "Shop sheets", 30.0, 0x0B3D2E, 0xFFFFFF);
        out.push(Reference {
            name: "split",
            tree: b.done(w, h, solid(0xE8F1EC)),
            expect: Expect {
                ground: "solid",
                headline: unit(head, w, h),
                product: Some(unit(prod, w, h)),
                product_shape: Some("rectangle"),
                cta: Some(unit(cta, w, h)),
                badge: None,
                logo: None,
                supporting: Some(unit(sup, w, h)),
            },
        });
    }
    out
}

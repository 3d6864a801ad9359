//! Reference analysis into a blueprint: where a reference ad puts its background, blocks of
//! text, images, buttons, badges and logo, turned into a layout template with named slots at
//! the reference's own aspect ratio (3840 px long edge).
//!
//! Pure and deterministic: pixels in, [`Blueprint`] out; [`template::template`] writes it as
//! a template in the layout library's format (`assets/layouts/README.md`: renderer tree plus
//! `$` slot keys), so [`crate::generate::fill::fill`] fills it exactly like a built-in layout.
//!
//! How (no OCR: where text is, not what it says):
//!
//! 1. The image is reduced to [`WORK_EDGE`] px on its long edge.
//! 2. Background: the border ring's median colour. If most of the ring is that colour the
//!    ground is **solid**; if the ring is smooth but its two ends (top/bottom or left/right)
//!    differ, it is a **gradient** (the model is their interpolation); else a **photo**.
//! 3. Foreground: pixels far from the background model, split into 8-connected components.
//!    On a photo ground the whole canvas is the photo and large flat areas of one colour
//!    (bands, panels) are found instead; text is looked for inside them.
//! 4. A component is a **solid shape** (button, badge, panel) when it is large, nearly all
//!    one colour and fills its (hole-filled) box; an **image** when it is large and
//!    textured (a regular outline is a framed photo: rectangle, rounded or circle; an
//!    irregular one is a cut-out product); anything else is a **glyph**. The inside of a
//!    solid shape is analysed again against its own colour (a button's label, a panel's copy).
//! 5. Glyphs become lines (vertical overlap, small gaps), lines become blocks (similar
//!    height, small leading, overlapping columns). Alignment from the spread of the lines'
//!    left edges, centres and right edges; weight from stroke density; upper case from the
//!    evenness of glyph heights.
//! 6. Roles: a block inside a button is the `cta`, inside a badge the badge label; a small
//!    element at the top or bottom edge is the `logo`; the largest remaining block is the
//!    `headline`, the next the `supporting` copy; a small block right above the headline is
//!    the eyebrow. Others are kept in the blueprint as `body` but not drawn (the copywriter
//!    writes four texts).
//!
//! Rejected: a learned layout detector (no weights can be shipped here, and the
//! compositions ads use are few and flat), and OCR for finding text (slow, and finding
//! boxes needs no reading).

pub mod detect;
pub mod format;
pub mod template;
pub mod words;

pub use detect::{analyse_image, analyse_image_with};

use serde::Serialize;

/// Long edge of the working copy the analysis runs on.
pub const WORK_EDGE: u32 = 540;

/// Long edge of the blueprint's design size (and of the rendered ad).
pub const DESIGN_EDGE: f32 = 3840.0;

/// A rectangle in the unit square of the canvas (x, y, width, height).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Rect {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Rect {
    /// Right edge.
    pub fn right(&self) -> f32 {
        self.x + self.w
    }
    /// Bottom edge.
    pub fn bottom(&self) -> f32 {
        self.y + self.h
    }
    /// Centre.
    pub fn center(&self) -> (f32, f32) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }
    /// Area in the unit square.
    pub fn area(&self) -> f32 {
        self.w * self.h
    }
    /// The smallest rectangle holding both.
    pub fn union(&self, o: &Rect) -> Rect {
        let (x, y) = (self.x.min(o.x), self.y.min(o.y));
        Rect {
            x,
            y,
            w: self.right().max(o.right()) - x,
            h: self.bottom().max(o.bottom()) - y,
        }
    }
    /// Area of the intersection.
    pub fn overlap(&self, o: &Rect) -> f32 {
        let w = (self.right().min(o.right()) - self.x.max(o.x)).max(0.0);
        let h = (self.bottom().min(o.bottom()) - self.y.max(o.y)).max(0.0);
        w * h
    }
    /// True when `o`'s centre lies inside this rectangle.
    pub fn contains_center(&self, o: &Rect) -> bool {
        let (cx, cy) = o.center();
        cx >= self.x && cx <= self.right() && cy >= self.y && cy <= self.bottom()
    }
}

/// An sRGB colour.
pub type Rgb = [u8; 3];

/// What is behind everything.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Background {
    /// One colour.
    Solid { color: Rgb },
    /// A linear gradient from `from` to `to`, top to bottom (`vertical`) or left to right.
    Gradient { from: Rgb, to: Rgb, vertical: bool },
    /// A photograph covering the canvas.
    Photo { mean: Rgb },
}

impl Background {
    /// The average colour of the ground.
    pub fn mean(&self) -> Rgb {
        match self {
            Background::Solid { color } => *color,
            Background::Gradient { from, to, .. } => mix(*from, *to, 0.5),
            Background::Photo { mean } => *mean,
        }
    }
}

/// The outline of an image or shape region.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    Rectangle,
    /// Rounded rectangle; the radius is a share of the shorter side.
    Rounded {
        radius: f32,
    },
    Circle,
    /// An irregular outline (a cut-out product).
    Silhouette,
}

/// How a text block is aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Align {
    Left,
    Center,
    Right,
}

impl Align {
    /// The renderer's name.
    pub fn figma(self) -> &'static str {
        match self {
            Align::Left => "LEFT",
            Align::Center => "CENTER",
            Align::Right => "RIGHT",
        }
    }
}

/// The role of a text block: what its words do in the ad (see [`words`] for how words
/// decide it, and the module docs for the layout's rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TextRole {
    Headline,
    Supporting,
    Eyebrow,
    /// Kept in the blueprint, not drawn.
    Body,
    /// The call to action: a button's label, or a line such as "Read more".
    Cta,
    /// The label of a badge whose words were not read, or say none of the roles below.
    BadgeLabel,
    /// The price ("$24").
    Price,
    /// A former price shown beside the price (often crossed out).
    CompareAtPrice,
    /// A discount or deal ("50% OFF", "-30% this week", "Free shipping").
    Offer,
    /// A customer's words in quotation marks.
    Quote,
    /// Who said the quote.
    QuoteAuthor,
    /// Stars or a score out of five.
    Rating,
    /// One item of a list (a block of several items holds one per line).
    ListItem,
    /// A figure with its label ("93% of users", "2x faster").
    Stat,
}

impl TextRole {
    /// The role's name as slots and reports write it (`compare_at_price`, `list_item`).
    pub fn key(self) -> &'static str {
        match self {
            TextRole::Headline => "headline",
            TextRole::Supporting => "supporting",
            TextRole::Eyebrow => "eyebrow",
            TextRole::Body => "body",
            TextRole::Cta => "cta",
            TextRole::BadgeLabel => "badge_label",
            TextRole::Price => "price",
            TextRole::CompareAtPrice => "compare_at_price",
            TextRole::Offer => "offer",
            TextRole::Quote => "quote",
            TextRole::QuoteAuthor => "quote_author",
            TextRole::Rating => "rating",
            TextRole::ListItem => "list_item",
            TextRole::Stat => "stat",
        }
    }

    /// The role named `key` ([`TextRole::key`]).
    pub fn from_key(key: &str) -> Option<TextRole> {
        TextRole::ALL.into_iter().find(|r| r.key() == key)
    }

    /// Every role.
    pub const ALL: [TextRole; 14] = [
        TextRole::Headline,
        TextRole::Supporting,
        TextRole::Eyebrow,
        TextRole::Body,
        TextRole::Cta,
        TextRole::BadgeLabel,
        TextRole::Price,
        TextRole::CompareAtPrice,
        TextRole::Offer,
        TextRole::Quote,
        TextRole::QuoteAuthor,
        TextRole::Rating,
        TextRole::ListItem,
        TextRole::Stat,
    ];

    /// Whether a block of this role is drawn as a free text box of the template (button
    /// and badge labels are drawn with their shapes; body blocks are not drawn).
    pub fn drawn_free(self) -> bool {
        !matches!(self, TextRole::Body | TextRole::BadgeLabel)
    }
}

/// A block of text lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextBlock {
    pub role: TextRole,
    pub rect: Rect,
    pub lines: usize,
    /// Height of one line (glyph extent) in the unit square's height.
    pub line_height: f32,
    pub align: Align,
    pub color: Rgb,
    /// 400 or 700, from stroke density.
    pub weight: u16,
    /// True when every glyph has the same height (capitals), or the words read are capitals.
    pub upper: bool,
    /// The words read in the block (lines separated by `\n`), when Tesseract read any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub words: Option<String>,
}

/// What a solid shape is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeRole {
    /// A filled shape holding the call to action.
    Button,
    /// A small filled shape (often round) holding a short label.
    Badge,
    /// A large filled area holding copy (a band, a card).
    Panel,
}

/// A filled shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SolidShape {
    pub role: ShapeRole,
    pub rect: Rect,
    pub shape: Shape,
    pub color: Rgb,
}

/// A picture.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ImageRegion {
    pub rect: Rect,
    pub shape: Shape,
    /// True for a cut-out product on the plain ground; false for a framed photo.
    pub cutout: bool,
    /// The soft shadow a cut-out product casts on the ground below it, if the reference
    /// shows one (not part of `rect`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shadow: Option<GroundShadow>,
}

/// A soft shadow on the ground under a cut-out product.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GroundShadow {
    /// Where the darkening is, soft edge included.
    pub rect: Rect,
    /// How dark its core is: 1 minus the ratio of its colour to the ground's (0.3 = the
    /// ground at 70 % of its brightness).
    pub strength: f32,
}

/// Everything found in a reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blueprint {
    /// Pixel size of the reference.
    pub source_width: u32,
    pub source_height: u32,
    /// Design size: the reference's aspect, 3840 px long edge.
    pub width: u32,
    pub height: u32,
    pub background: Background,
    /// Largest first.
    pub images: Vec<ImageRegion>,
    pub shapes: Vec<SolidShape>,
    pub texts: Vec<TextBlock>,
    /// The logo slot, if the reference shows one.
    pub logo: Option<Rect>,
    /// Smallest distance from any element to each edge: left, top, right, bottom.
    pub margins: [f32; 4],
    /// Whether the words of the reference were read (Tesseract ran and read some).
    #[serde(default)]
    pub words_read: bool,
    /// The reference's ad format (the swipe file's values), decided from its words by the
    /// swipe file's classifier, else from its layout ([`format::format`]).
    pub format: Option<&'static str>,
    /// What decided `format`: `words`, `layout` or `none`.
    pub format_from: &'static str,
}

/// Minimum share of the canvas the product image takes in an ad built on a blueprint
/// (its box's area); smaller detected regions are grown about their centre.
pub const MIN_PRODUCT_SHARE: f32 = 0.08;

impl Blueprint {
    /// The block with `role`, if any.
    pub fn text(&self, role: TextRole) -> Option<&TextBlock> {
        self.texts.iter().find(|t| t.role == role)
    }

    /// The shape with `role`, if any.
    pub fn shape(&self, role: ShapeRole) -> Option<&SolidShape> {
        self.shapes.iter().find(|s| s.role == role)
    }

    /// The main picture: the largest image region, or the photo ground.
    pub fn product(&self) -> Option<Rect> {
        self.images
            .first()
            .map(|i| i.rect)
            .or(match self.background {
                Background::Photo { .. } => Some(Rect {
                    x: 0.0,
                    y: 0.0,
                    w: 1.0,
                    h: 1.0,
                }),
                _ => None,
            })
    }

    /// The lead block: the headline, else the largest drawn block (a quote, an offer, a
    /// price or a figure can lead an ad).
    pub fn lead(&self) -> Option<&TextBlock> {
        self.text(TextRole::Headline).or_else(|| {
            self.texts
                .iter()
                .filter(|t| t.role.drawn_free() && t.role != TextRole::Cta)
                .max_by(|a, b| a.line_height.total_cmp(&b.line_height))
        })
    }

    /// Why an ad cannot be built on this blueprint (the caller falls back to the layout
    /// library), or `None` when it can: it needs a lead text and a place for the product (a
    /// picture, a photo ground, or free room for one: [`template::shift_for_product`]).
    pub fn unusable(&self) -> Option<&'static str> {
        let Some(lead) = self.lead() else {
            return Some("no block of text was found");
        };
        // Words read from texture (a cat's fur read as "WY") are no lead: what was read must
        // hold a word of three letters or a figure.
        if lead
            .words
            .as_deref()
            .is_some_and(|w| !w.trim().is_empty() && !says_something(w))
        {
            return Some("the lead block's words read as no word");
        }
        // A reference without a picture still takes the product where it has room for it,
        // or where moving its copy makes room.
        if self.product().is_none() && template::shift_for_product(self).is_none() {
            return Some("no image region was found");
        }
        None
    }
}

/// Whether `words` hold a word of three letters or more, or a figure.
fn says_something(words: &str) -> bool {
    words
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.chars().count() >= 3 || w.chars().any(|c| c.is_ascii_digit()))
}

impl Blueprint {
    /// A plain composition at the reference's own aspect ratio, for references whose own
    /// layout cannot be used and whose shape no library layout has (landscapes): picture on
    /// the left half and copy on the right for landscapes; headline on top, picture in the
    /// middle and button below otherwise. Ground: the reference's background.
    /// Without a product image the copy takes the whole width.
    pub fn generic(
        source_width: u32,
        source_height: u32,
        background: Background,
        has_product: bool,
    ) -> Blueprint {
        let ratio = source_width.max(1) as f32 / source_height.max(1) as f32;
        let (width, height) = if ratio >= 1.0 {
            (
                DESIGN_EDGE as u32,
                (DESIGN_EDGE / ratio).round().max(1.0) as u32,
            )
        } else {
            (
                (DESIGN_EDGE * ratio).round().max(1.0) as u32,
                DESIGN_EDGE as u32,
            )
        };
        // Text never sits on a photo without a panel here: a photo ground becomes its mean.
        let background = Background::Solid {
            color: background.mean(),
        };
        let ink = if crate::generate::analyse::luminance(background.mean()) > 0.4 {
            [17, 17, 17]
        } else {
            [255, 255, 255]
        };
        let block = |role, rect, line_height, weight| TextBlock {
            role,
            rect,
            lines: 1,
            line_height,
            align: Align::Left,
            color: ink,
            weight,
            upper: false,
            words: None,
        };
        let r = |x, y, w, h| Rect { x, y, w, h };
        let (image, head, sup, button) = if ratio > 1.15 {
            let x = if has_product { 0.53 } else { 0.07 };
            let w = 0.95 - x;
            (
                r(0.05, 0.08, 0.42, 0.84),
                block(TextRole::Headline, r(x, 0.2, w, 0.1), 0.1, 700),
                block(TextRole::Supporting, r(x, 0.5, w, 0.05), 0.04, 400),
                r(x, 0.74, 0.2, 0.12),
            )
        } else {
            (
                r(0.12, 0.3, 0.76, 0.76 * ratio * 0.6),
                block(TextRole::Headline, r(0.07, 0.1, 0.86, 0.06), 0.05, 700),
                block(TextRole::Supporting, r(0.07, 0.22, 0.86, 0.03), 0.022, 400),
                r(0.07, 0.86, 0.36, 0.07 * ratio.min(1.0)),
            )
        };
        Blueprint {
            source_width,
            source_height,
            width,
            height,
            background,
            images: if has_product {
                vec![ImageRegion {
                    rect: image,
                    shape: Shape::Rounded { radius: 0.04 },
                    cutout: false,
                    shadow: None,
                }]
            } else {
                Vec::new()
            },
            shapes: vec![SolidShape {
                role: ShapeRole::Button,
                rect: button,
                shape: Shape::Rounded { radius: 0.5 },
                color: [30, 30, 30],
            }],
            texts: vec![head, sup],
            // The brand's logo (or name as a wordmark) at the top of the copy.
            logo: Some(if ratio > 1.15 {
                r(if has_product { 0.53 } else { 0.07 }, 0.07, 0.15, 0.05)
            } else {
                r(0.07, 0.035, 0.25, 0.03)
            }),
            margins: [0.05, 0.06, 0.05, 0.06],
            words_read: false,
            format: None,
            format_from: "none",
        }
    }
}

/// Linear mix of two colours (`t` = 0 gives `a`).
pub fn mix(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let m = |x: u8, y: u8| (f32::from(x) + (f32::from(y) - f32::from(x)) * t).round() as u8;
    [m(a[0], b[0]), m(a[1], b[1]), m(a[2], b[2])]
}

//! Stage 2: sizes and positions of every node (auto-layout) and text layout.
//!
//! Two passes over the tree, as in Figma: `measure` computes a node's intrinsic size for HUG
//! axes (bottom-up), `arrange` gives each node its final size and places its children
//! (top-down). FILL children share what is left on the primary axis and stretch on the
//! counter axis. Rotation does not affect layout (Figma lays out the unrotated box).

pub mod text;

use crate::report::{FittedText, Warning};
use crate::tree::{Align, AutoLayout, AutoResize, Axis, Node, NodeKind, Sizing, Tree};
pub use text::{PlacedGlyph, ShapedText, TextEngine};

/// A node's box relative to its parent, in design pixels.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BoxGeom {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

/// Boxes and shaped text per node index.
#[derive(Debug, Default)]
pub struct Layout {
    pub boxes: Vec<BoxGeom>,
    pub texts: Vec<Option<ShapedText>>,
}

/// Lays out the whole tree.
pub fn layout(
    tree: &Tree,
    engine: &mut TextEngine,
    warnings: &mut Vec<Warning>,
    fitted: &mut Vec<FittedText>,
) -> Layout {
    let n = tree.nodes().len();
    let mut cx = Ctx {
        tree,
        engine,
        warnings,
        fitted,
        out: Layout {
            boxes: vec![BoxGeom::default(); n],
            texts: vec![None; n],
        },
    };
    let root = tree.root_index();
    let (w, h) = tree.design_size();
    cx.arrange(root, w, h);
    cx.out.boxes[root].x = 0.0;
    cx.out.boxes[root].y = 0.0;
    cx.out
}

struct Ctx<'a> {
    tree: &'a Tree,
    engine: &'a mut TextEngine,
    warnings: &'a mut Vec<Warning>,
    fitted: &'a mut Vec<FittedText>,
    out: Layout,
}

fn main_of(axis: Axis, w: f32, h: f32) -> f32 {
    if axis == Axis::Horizontal { w } else { h }
}

impl<'a> Ctx<'a> {
    fn node(&self, i: usize) -> &'a Node {
        self.tree.node(i)
    }

    fn in_flow(&self, i: usize) -> bool {
        let n = self.node(i);
        n.visible && !n.absolute
    }

    /// Intrinsic size; `width` fixes the width (text with HEIGHT auto-resize wraps to it).
    fn measure(&mut self, i: usize, width: Option<f32>) -> (f32, f32) {
        let n = self.node(i);
        let fixed_w = n.width.unwrap_or(0.0);
        let fixed_h = n.height.unwrap_or(0.0);
        if let Some(style) = &n.text {
            let hug_w = n.sizing_h == Sizing::Hug && width.is_none();
            let w = width.unwrap_or(fixed_w);
            let shaped = if hug_w {
                self.engine.shape(style, style.font_size, None, None)
            } else {
                self.engine.shape(style, style.font_size, Some(w), None)
            };
            let out_w = if hug_w { shaped.width.ceil() } else { w };
            let out_h = if n.sizing_v == Sizing::Hug {
                shaped.height.ceil()
            } else {
                fixed_h
            };
            return (out_w, out_h);
        }
        let mut w = width.unwrap_or(fixed_w);
        let mut h = fixed_h;
        if let Some(al) = n.auto_layout.clone() {
            let (hug_w, hug_h) = (
                n.sizing_h == Sizing::Hug && width.is_none(),
                n.sizing_v == Sizing::Hug,
            );
            if hug_w || hug_h {
                let (cw, ch) = self.hug_size(i, &al, if hug_w { None } else { Some(w) });
                if hug_w {
                    w = cw;
                }
                if hug_h {
                    h = ch;
                }
            }
        } else if n.kind == NodeKind::Group && (n.width.is_none() || n.height.is_none()) {
            let mut bw: f32 = 0.0;
            let mut bh: f32 = 0.0;
            for c in n.children.clone() {
                let (cw, ch) = self.measure(c, None);
                let cn = self.node(c);
                bw = bw.max(cn.x + cw);
                bh = bh.max(cn.y + ch);
            }
            let n = self.node(i);
            if n.width.is_none() && width.is_none() {
                w = bw;
            }
            if n.height.is_none() {
                h = bh;
            }
        }
        (w.max(0.0), h.max(0.0))
    }

    /// Size an auto-layout frame hugs to, given an optional fixed width.
    fn hug_size(&mut self, i: usize, al: &AutoLayout, width: Option<f32>) -> (f32, f32) {
        let [pl, pt, pr, pb] = al.padding;
        let inner_w = width.map(|w| (w - pl - pr).max(0.0));
        let kids: Vec<usize> = self
            .node(i)
            .children
            .iter()
            .copied()
            .filter(|&c| self.in_flow(c))
            .collect();
        let sizes: Vec<(f32, f32)> = kids
            .iter()
            .map(|&c| {
                let fill_w = al.axis == Axis::Vertical && self.node(c).sizing_h == Sizing::Fill;
                self.measure(c, if fill_w { inner_w } else { None })
            })
            .collect();
        if al.wrap
            && al.axis == Axis::Horizontal
            && let Some(iw) = inner_w
        {
            let rows = wrap_rows(&sizes, iw, al.spacing);
            let h: f32 = rows
                .iter()
                .map(|r| r.iter().map(|&k| sizes[k].1).fold(0.0, f32::max))
                .sum::<f32>()
                + al.counter_spacing * rows.len().saturating_sub(1) as f32;
            return (width.unwrap_or(0.0), h + pt + pb);
        }
        let gaps = al.spacing * kids.len().saturating_sub(1) as f32;
        let (main, cross) = sizes
            .iter()
            .fold((0.0f32, 0.0f32), |(m, c), &(w, h)| match al.axis {
                Axis::Horizontal => (m + w, c.max(h)),
                Axis::Vertical => (m + h, c.max(w)),
            });
        match al.axis {
            Axis::Horizontal => (main + gaps + pl + pr, cross + pt + pb),
            Axis::Vertical => (cross + pl + pr, main + gaps + pt + pb),
        }
    }

    /// Gives node `i` its final size and lays out its subtree.
    fn arrange(&mut self, i: usize, w: f32, h: f32) {
        let n = self.node(i);
        self.out.boxes[i] = BoxGeom {
            x: n.x,
            y: n.y,
            w,
            h,
        };
        if n.text.is_some() {
            self.arrange_text(i, w, h);
            return;
        }
        let children = n.children.clone();
        match n.auto_layout.clone() {
            Some(al) => self.arrange_auto(i, &al, w, h, &children),
            None => {
                for c in children {
                    let (cw, ch) = self.measure(c, None);
                    self.arrange(c, cw, ch);
                }
            }
        }
    }

    fn arrange_auto(&mut self, _i: usize, al: &AutoLayout, w: f32, h: f32, children: &[usize]) {
        let [pl, pt, pr, pb] = al.padding;
        let (iw, ih) = ((w - pl - pr).max(0.0), (h - pt - pb).max(0.0));
        let (inner_main, inner_cross) = match al.axis {
            Axis::Horizontal => (iw, ih),
            Axis::Vertical => (ih, iw),
        };
        let flow: Vec<usize> = children
            .iter()
            .copied()
            .filter(|&c| self.in_flow(c))
            .collect();
        // Sizes (w, h) with FILL resolved.
        let mut sizes = Vec::with_capacity(flow.len());
        for &c in &flow {
            let cn = self.node(c);
            let (fill_main, fill_cross) = match al.axis {
                Axis::Horizontal => (cn.sizing_h == Sizing::Fill, cn.sizing_v == Sizing::Fill),
                Axis::Vertical => (cn.sizing_v == Sizing::Fill, cn.sizing_h == Sizing::Fill),
            };
            let width = match al.axis {
                Axis::Vertical if fill_cross => Some(inner_cross),
                _ => None,
            };
            let (mut cw, mut chh) = self.measure(c, width);
            if fill_cross && al.axis == Axis::Horizontal {
                chh = inner_cross;
            }
            if fill_main && al.axis == Axis::Vertical && width.is_none() {
                cw = cw.max(0.0);
            }
            sizes.push(((cw, chh), fill_main));
        }
        let n_fill = sizes.iter().filter(|s| s.1).count();
        if n_fill > 0 && !(al.wrap && al.axis == Axis::Horizontal) {
            let fixed: f32 = sizes
                .iter()
                .filter(|s| !s.1)
                .map(|s| main_of(al.axis, s.0.0, s.0.1))
                .sum();
            let gaps = al.spacing * flow.len().saturating_sub(1) as f32;
            let share = ((inner_main - fixed - gaps) / n_fill as f32).max(0.0);
            for (k, s) in sizes.iter_mut().enumerate() {
                if s.1 {
                    match al.axis {
                        Axis::Horizontal => {
                            s.0.0 = share;
                            // Text hugging its height re-wraps at the new width.
                            let c = flow[k];
                            if self.node(c).sizing_v == Sizing::Hug {
                                s.0.1 = self.measure(c, Some(share)).1;
                            }
                        }
                        Axis::Vertical => s.0.1 = share,
                    }
                }
            }
        }
        let plain: Vec<(f32, f32)> = sizes.iter().map(|s| s.0).collect();
        let rows: Vec<Vec<usize>> = if al.wrap && al.axis == Axis::Horizontal {
            wrap_rows(&plain, iw, al.spacing)
        } else {
            vec![(0..flow.len()).collect()]
        };
        let mut cross_pos = 0.0;
        for row in &rows {
            let row_cross = if rows.len() == 1 {
                inner_cross
            } else {
                row.iter()
                    .map(|&k| {
                        if al.axis == Axis::Horizontal {
                            plain[k].1
                        } else {
                            plain[k].0
                        }
                    })
                    .fold(0.0, f32::max)
            };
            let total: f32 = row
                .iter()
                .map(|&k| main_of(al.axis, plain[k].0, plain[k].1))
                .sum();
            let count = row.len() as f32;
            let (mut pos, gap) = match al.primary_align {
                Align::SpaceBetween if row.len() > 1 => (0.0, (inner_main - total) / (count - 1.0)),
                Align::Center => (
                    (inner_main - total - al.spacing * (count - 1.0)) / 2.0,
                    al.spacing,
                ),
                Align::Max => (inner_main - total - al.spacing * (count - 1.0), al.spacing),
                _ => (0.0, al.spacing),
            };
            // BASELINE: lay the row out first, then line up the first baselines.
            let baseline = al.counter_align == Align::Baseline && al.axis == Axis::Horizontal;
            let mut row_base = 0.0f32;
            if baseline {
                for &k in row {
                    self.arrange(flow[k], plain[k].0, plain[k].1);
                    row_base = row_base.max(self.baseline(flow[k]));
                }
            }
            for &k in row {
                let (cw, chh) = plain[k];
                let (main, cross) = match al.axis {
                    Axis::Horizontal => (cw, chh),
                    Axis::Vertical => (chh, cw),
                };
                let c = flow[k];
                let off = match al.counter_align {
                    Align::Center => (row_cross - cross) / 2.0,
                    Align::Max => row_cross - cross,
                    Align::Baseline if baseline => row_base - self.baseline(c),
                    _ => 0.0,
                };
                if !baseline {
                    self.arrange(c, cw, chh);
                }
                let b = &mut self.out.boxes[c];
                match al.axis {
                    Axis::Horizontal => {
                        b.x = pl + pos;
                        b.y = pt + cross_pos + off;
                    }
                    Axis::Vertical => {
                        b.x = pl + cross_pos + off;
                        b.y = pt + pos;
                    }
                }
                pos += main + gap;
            }
            cross_pos += row_cross + al.counter_spacing;
        }
        // Absolute children keep their x / y.
        for &c in children {
            if !self.in_flow(c) {
                let (cw, chh) = self.measure(c, None);
                self.arrange(c, cw, chh);
            }
        }
    }

    /// First text baseline of an arranged node, from its top (its height when it has no
    /// text), as Figma's BASELINE alignment uses.
    fn baseline(&self, i: usize) -> f32 {
        self.first_baseline(i).unwrap_or(self.out.boxes[i].h)
    }

    fn first_baseline(&self, i: usize) -> Option<f32> {
        let n = self.node(i);
        if let (Some(s), Some(style)) = (&self.out.texts[i], &n.text) {
            let h = self.out.boxes[i].h;
            let off = match style.vertical_align {
                crate::tree::VerticalAlign::Center => (h - s.height) / 2.0,
                crate::tree::VerticalAlign::Bottom => h - s.height,
                crate::tree::VerticalAlign::Top => 0.0,
            };
            return Some(off + s.first_baseline);
        }
        n.children
            .iter()
            .filter(|&&c| self.in_flow(c))
            .find_map(|&c| self.first_baseline(c).map(|b| self.out.boxes[c].y + b))
    }

    fn arrange_text(&mut self, i: usize, w: f32, h: f32) {
        let n = self.node(i);
        let Some(style) = n.text.clone() else { return };
        let id = n.id.clone();
        let hug_w = n.sizing_h == Sizing::Hug
            && n.width.is_none_or(|fw| (fw - w).abs() < 0.5)
            && style.auto_resize == AutoResize::WidthAndHeight;
        let fixed_h = n.sizing_v != Sizing::Hug;
        let width = if hug_w { None } else { Some(w) };
        let trunc_h = (style.auto_resize == AutoResize::Truncate).then_some(h);
        // Lines dropped by `maxLines` do not fit either: with `textFit` a one-line label
        // shrinks to one line rather than losing words to an ellipsis.
        let fits = |s: &ShapedText| {
            !s.broke_word
                && !s.truncated
                && (!fixed_h || s.height <= h + 0.5)
                && (width.is_none() || s.width <= w + 0.5)
        };
        let mut shaped = self.engine.shape(&style, style.font_size, width, trunc_h);
        if width.is_none() && style.align != crate::tree::TextAlign::Left && shaped.lines > 1 {
            // A hugging box is as wide as its longest line; align the others within it.
            shaped = self
                .engine
                .shape(&style, style.font_size, Some(shaped.width), trunc_h);
        }
        if let Some((min, max)) = style.fit {
            // Largest size on a 0.25 px grid in [min, max] that fits.
            let steps = ((max - min) / 0.25).floor() as i32;
            let at = |k: i32| (min + 0.25 * k as f32).min(max);
            let top = self.engine.shape(&style, max, width, trunc_h);
            shaped = if fits(&top) {
                top
            } else {
                let (mut lo, mut hi) = (0, steps);
                let mut best = self.engine.shape(&style, min, width, trunc_h);
                if fits(&best) {
                    while lo < hi {
                        let mid = (lo + hi + 1) / 2;
                        let s = self.engine.shape(&style, at(mid), width, trunc_h);
                        if fits(&s) {
                            lo = mid;
                            best = s;
                        } else {
                            hi = mid - 1;
                        }
                    }
                }
                best
            };
            if shaped.font_size < style.font_size {
                self.warnings.push(Warning::TextShrunk {
                    node: id.clone(),
                    from: style.font_size,
                    to: shaped.font_size,
                });
            }
            self.fitted.push(FittedText {
                node: id.clone(),
                font_size: shaped.font_size,
            });
        }
        for family in &shaped.missing_families {
            self.warnings.push(Warning::MissingFont {
                node: id.clone(),
                family: family.clone(),
                fallback: crate::fonts::DEFAULT_FAMILY.to_owned(),
            });
        }
        if shaped.truncated {
            self.warnings.push(Warning::TextTruncated {
                node: id.clone(),
                lines: shaped.lines,
            });
        }
        if !fits(&shaped) {
            let message = if shaped.broke_word {
                "a word is wider than the box and was broken".to_owned()
            } else {
                format!(
                    "text needs {:.1} x {:.1} but the box is {:.1} x {:.1}",
                    shaped.width, shaped.height, w, h
                )
            };
            self.warnings
                .push(Warning::TextOverflow { node: id, message });
        }
        self.out.texts[i] = Some(shaped);
    }
}

/// Greedy row breaking for layoutWrap.
fn wrap_rows(sizes: &[(f32, f32)], inner_w: f32, spacing: f32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut used = 0.0;
    for (k, &(w, _)) in sizes.iter().enumerate() {
        let need = if cur.is_empty() {
            w
        } else {
            used + spacing + w
        };
        if !cur.is_empty() && need > inner_w + 0.01 {
            rows.push(std::mem::take(&mut cur));
            used = w;
        } else {
            used = need;
        }
        cur.push(k);
    }
    if !cur.is_empty() {
        rows.push(cur);
    }
    rows
}

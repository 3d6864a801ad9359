//! TEXT nodes in the display list: glyph outlines as paths (crisp at any scale) and colour
//! glyphs (emoji) as bitmaps rasterised at their device size.

use std::sync::Arc;

use cosmic_text::{CacheKey, CacheKeyFlags, Command, SwashContent};
use tiny_skia::{Path, PathBuilder, Rect, Transform};

use super::DrawOp;
use super::build::{Builder, with_alpha};
use crate::layout::ShapedText;
use crate::tree::{BlendMode, Node, Paint, VerticalAlign};

/// Glyph outlines are extracted once at this size and scaled, so one cache entry serves every
/// font size (shrink-to-fit tries many).
const OUTLINE_SIZE: f32 = 256.0;

impl Builder<'_> {
    /// Glyph outlines (and decoration rectangles) of a text node in its box coordinates,
    /// plus the colour bitmaps (emoji) that have no outline.
    pub(super) fn glyph_path(
        &mut self,
        n: &Node,
        s: &ShapedText,
        box_h: f32,
    ) -> (Option<Path>, Vec<(CacheKey, f32, f32, f32)>) {
        self.glyph_path_of(n, s, box_h, |_| true)
    }

    /// [`Builder::glyph_path`] of the glyphs (and decorations) whose span `keep` accepts.
    fn glyph_path_of(
        &mut self,
        n: &Node,
        s: &ShapedText,
        box_h: f32,
        keep: impl Fn(usize) -> bool,
    ) -> (Option<Path>, Vec<(CacheKey, f32, f32, f32)>) {
        let oy = text_offset(n, box_h, s);
        let mut pb = PathBuilder::new();
        let mut bitmaps = Vec::new();
        for g in s.glyphs.iter().filter(|g| keep(g.span)) {
            let (key, _, _) = CacheKey::new(
                g.font_id,
                g.glyph_id,
                OUTLINE_SIZE,
                (0.0, 0.0),
                g.weight,
                g.flags | CacheKeyFlags::DISABLE_HINTING,
            );
            let k = g.font_size / OUTLINE_SIZE;
            let (gx, gy) = (g.x, g.y + oy);
            match self
                .engine
                .swash
                .get_outline_commands(&mut self.engine.font_system, key)
            {
                Some(cmds) if !cmds.is_empty() => {
                    for c in cmds {
                        match *c {
                            Command::MoveTo(p) => pb.move_to(gx + p.x * k, gy - p.y * k),
                            Command::LineTo(p) => pb.line_to(gx + p.x * k, gy - p.y * k),
                            Command::QuadTo(a, p) => {
                                pb.quad_to(gx + a.x * k, gy - a.y * k, gx + p.x * k, gy - p.y * k)
                            }
                            Command::CurveTo(a, b, p) => pb.cubic_to(
                                gx + a.x * k,
                                gy - a.y * k,
                                gx + b.x * k,
                                gy - b.y * k,
                                gx + p.x * k,
                                gy - p.y * k,
                            ),
                            Command::Close => pb.close(),
                        }
                    }
                }
                _ => bitmaps.push((key, gx, gy, g.font_size)),
            }
        }
        for ([x, y, w, h], _) in s.decorations.iter().filter(|(_, sp)| keep(*sp)) {
            if let Some(r) = Rect::from_xywh(*x, y + oy, *w, *h) {
                pb.push_rect(r);
            }
        }
        (pb.finish(), bitmaps)
    }

    pub(super) fn text(&mut self, i: usize, t: Transform, fold: f32) {
        let n = self.tree.node(i);
        let Some(s) = self.layout.texts[i].as_ref() else {
            return;
        };
        let b = self.layout.boxes[i];
        let spans = n
            .text
            .as_ref()
            .map(|t| t.spans.as_slice())
            .unwrap_or_default();
        // Glyphs are painted in groups: the node's own fills, then each span with fills of
        // its own (Figma's per-range fills).
        let own_fills = |span: usize| -> Option<&[Paint]> {
            span.checked_sub(1)
                .and_then(|k| spans.get(k))
                .and_then(|sp| sp.fills.as_deref())
        };
        let group_of = |span: usize| if own_fills(span).is_some() { span } else { 0 };
        let mut groups: Vec<usize> = s.glyphs.iter().map(|g| group_of(g.span)).collect();
        groups.extend(s.decorations.iter().map(|(_, sp)| group_of(*sp)));
        groups.push(0);
        groups.sort_unstable();
        groups.dedup();
        let mut bitmaps = Vec::new();
        for group in groups {
            let (path, mut group_bitmaps) =
                self.glyph_path_of(n, s, b.h, |span| group_of(span) == group);
            bitmaps.append(&mut group_bitmaps);
            let Some(path) = path else { continue };
            let (paints, blends): (&[Paint], &[BlendMode]) = match own_fills(group) {
                Some(p) if group > 0 => (p, &[]),
                _ => (&n.fills, &n.fill_blends),
            };
            let color = paints.iter().find_map(|p| match p {
                Paint::Solid { color, opacity } => Some(with_alpha(*color, *opacity)),
                _ => None,
            });
            for (k, p) in paints.iter().enumerate() {
                if let Some(sp) = self.paint(n, p, b.w, b.h, fold) {
                    let layer = self.push_paint_blend(blends.get(k), &path, t, 0.0);
                    self.ops.push(DrawOp::Text {
                        path: path.clone(),
                        transform: t,
                        paint: sp,
                        node: n.id.clone(),
                        color,
                    });
                    self.pop_if(layer);
                }
            }
        }
        // Colour glyphs: rasterised at their device size so they stay sharp.
        let dev_scale = (t.sx * t.sx + t.ky * t.ky).sqrt().max(0.01);
        for (key, gx, gy, size) in bitmaps {
            let (dkey, _, _) = CacheKey::new(
                key.font_id,
                key.glyph_id,
                size * dev_scale,
                (0.0, 0.0),
                key.font_weight,
                key.flags,
            );
            let Some(img) = self
                .engine
                .swash
                .get_image_uncached(&mut self.engine.font_system, dkey)
            else {
                continue;
            };
            let (w, h) = (img.placement.width, img.placement.height);
            let Some(size) = tiny_skia::IntSize::from_wh(w, h) else {
                continue;
            };
            let data: Vec<u8> = match img.content {
                SwashContent::Color => img
                    .data
                    .chunks_exact(4)
                    .flat_map(|p| {
                        let a = u16::from(p[3]);
                        [
                            ((u16::from(p[0]) * a + 127) / 255) as u8,
                            ((u16::from(p[1]) * a + 127) / 255) as u8,
                            ((u16::from(p[2]) * a + 127) / 255) as u8,
                            p[3],
                        ]
                    })
                    .collect(),
                _ => continue,
            };
            let Some(pixmap) = tiny_skia::Pixmap::from_vec(data, size) else {
                continue;
            };
            let transform = t
                .pre_translate(gx, gy)
                .pre_scale(1.0 / dev_scale, 1.0 / dev_scale)
                .pre_translate(img.placement.left as f32, -img.placement.top as f32);
            self.ops.push(DrawOp::Bitmap {
                image: Arc::new(pixmap),
                transform,
                opacity: fold,
            });
        }
    }
}

/// Vertical offset of the text block inside its box.
pub(super) fn text_offset(n: &Node, box_h: f32, s: &ShapedText) -> f32 {
    match n.text.as_ref().map(|t| t.vertical_align) {
        Some(VerticalAlign::Center) => (box_h - s.height) / 2.0,
        Some(VerticalAlign::Bottom) => box_h - s.height,
        _ => 0.0,
    }
}

//! Step 6: roles for the shapes and blocks (button, badge, panel; cta, badge label, logo,
//! headline, supporting, eyebrow), and the blueprint with its margins.

use super::{Found, Grid};
use crate::blueprint::{Background, Blueprint, Rect, ShapeRole, SolidShape, TextBlock, TextRole};

impl Grid {
    /// Gives shapes and blocks their roles and builds the blueprint.
    pub(super) fn assign(
        &self,
        background: Background,
        found: Found,
        blocks: Vec<(TextBlock, Option<usize>)>,
    ) -> Blueprint {
        let mut shapes: Vec<SolidShape> = found.shapes.into_iter().map(|(s, _)| s).collect();
        let mut texts = Vec::new();
        let mut keep = vec![false; shapes.len()];
        for (i, s) in shapes.iter_mut().enumerate() {
            let has_text = blocks.iter().any(|(_, o)| *o == Some(i));
            let aspect = s.rect.w * self.w as f32 / (s.rect.h * self.h as f32).max(1e-3);
            if s.role == ShapeRole::Panel || s.rect.area() >= 0.10 || s.rect.w >= 0.6 {
                s.role = ShapeRole::Panel;
                keep[i] = true;
            } else if has_text && aspect >= 1.6 {
                s.role = ShapeRole::Button;
                keep[i] = true;
            } else if has_text {
                s.role = ShapeRole::Badge;
                keep[i] = true;
            }
        }
        // At most one button and one badge: the largest.
        for role in [ShapeRole::Button, ShapeRole::Badge] {
            let best = (0..shapes.len())
                .filter(|i| keep[*i] && shapes[*i].role == role)
                .max_by(|a, b| shapes[*a].rect.area().total_cmp(&shapes[*b].rect.area()));
            for i in 0..shapes.len() {
                if keep[i] && shapes[i].role == role && Some(i) != best {
                    shapes[i].role = ShapeRole::Panel;
                }
            }
        }
        let mut free = Vec::new();
        for (mut b, owner) in blocks {
            match owner.map(|o| (o, shapes[o].role)) {
                Some((o, ShapeRole::Button)) if keep[o] => {
                    if texts.iter().all(|t: &TextBlock| t.role != TextRole::Cta) {
                        b.role = TextRole::Cta;
                        texts.push(b);
                    }
                }
                Some((o, ShapeRole::Badge)) if keep[o] => {
                    if texts
                        .iter()
                        .all(|t: &TextBlock| t.role != TextRole::BadgeLabel)
                    {
                        b.role = TextRole::BadgeLabel;
                        texts.push(b);
                    }
                }
                _ => free.push(b),
            }
        }
        // Roles by size: the largest text is the headline.
        free.sort_by(|a, b| {
            b.line_height
                .total_cmp(&a.line_height)
                .then(b.rect.area().total_cmp(&a.rect.area()))
        });
        let mut logo = None;
        if free.len() >= 2 {
            let head_lh = free[0].line_height;
            let pick = (1..free.len())
                .filter(|i| {
                    let b = &free[*i];
                    b.lines == 1
                        && b.line_height <= 0.6 * head_lh
                        && (b.rect.y < 0.14 || b.rect.bottom() > 0.9)
                        && b.rect.h <= 0.07
                })
                .min_by(|a, b| {
                    let edge = |r: &Rect| r.y.min(1.0 - r.bottom());
                    edge(&free[*a].rect).total_cmp(&edge(&free[*b].rect))
                });
            if let Some(i) = pick {
                logo = Some(free.remove(i).rect);
            }
        }
        if let Some(first) = free.first_mut() {
            first.role = TextRole::Headline;
        }
        if free.len() >= 2 {
            let head = free[0].clone();
            // A short small line right above the headline is its eyebrow.
            if let Some(i) = (1..free.len()).find(|i| {
                let b = &free[*i];
                b.lines == 1
                    && b.rect.bottom() <= head.rect.y + 0.01
                    && head.rect.y - b.rect.bottom() <= 2.0 * head.line_height
                    && b.line_height <= 0.6 * head.line_height
            }) {
                free[i].role = TextRole::Eyebrow;
            }
            if let Some(b) = free.iter_mut().find(|b| b.role == TextRole::Body) {
                b.role = TextRole::Supporting;
            }
        }
        texts.extend(free);
        let shapes: Vec<SolidShape> = shapes
            .into_iter()
            .zip(keep)
            .filter_map(|(s, k)| k.then_some(s))
            .collect();
        let mut images = found.images;
        // Pictures inside a panel's bounds on a photo ground are part of the photo.
        images.retain(|im| im.rect.area() >= 0.02);
        let mut margins = [1.0f32; 4];
        let rects = texts
            .iter()
            .map(|t| t.rect)
            .chain(images.iter().map(|i| i.rect))
            .chain(
                shapes
                    .iter()
                    .filter(|s| s.role != ShapeRole::Panel)
                    .map(|s| s.rect),
            )
            .chain(logo);
        for r in rects {
            margins[0] = margins[0].min(r.x);
            margins[1] = margins[1].min(r.y);
            margins[2] = margins[2].min(1.0 - r.right());
            margins[3] = margins[3].min(1.0 - r.bottom());
        }
        for m in &mut margins {
            *m = m.clamp(0.0, 0.5);
        }
        Blueprint {
            source_width: self.w as u32,
            source_height: self.h as u32,
            width: 0,
            height: 0,
            background,
            images,
            shapes,
            texts,
            logo,
            margins,
        }
    }
}

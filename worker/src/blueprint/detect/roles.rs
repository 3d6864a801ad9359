//! Step 6: roles for the shapes and blocks (button, badge, panel; cta, badge label, logo,
//! headline, supporting, eyebrow from the layout; price, offer, quote, rating, list items,
//! figures from their words, [`crate::blueprint::words`]), the ad format, and the blueprint
//! with its margins.

use super::text::RawBlock;
use super::{Found, Grid};
use crate::blueprint::format::{FormatEvidence, format};
use crate::blueprint::words::{Casing, casing, has_rating, prices, role_of};
use crate::blueprint::{Background, Blueprint, Rect, ShapeRole, SolidShape, TextBlock, TextRole};

/// Fewest text blocks a shape holds to be a panel of copy whatever its size (a badge or a
/// button holds one or two: "-30%" over "OFF").
const MIN_PANEL_BLOCKS: usize = 3;

impl Grid {
    /// Gives shapes and blocks their roles and builds the blueprint.
    pub(super) fn assign(
        &self,
        background: Background,
        found: Found,
        raw: Vec<RawBlock>,
        words: Option<Vec<Option<String>>>,
    ) -> Blueprint {
        let words_read = words
            .as_ref()
            .is_some_and(|w| w.iter().any(Option::is_some));
        // Each block with its words (their case decides `upper`) and the role they say.
        let blocks: Vec<(TextBlock, Option<usize>, Option<TextRole>)> = raw
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                let mut b = r.block;
                b.words = words.as_ref().and_then(|w| w.get(i).cloned().flatten());
                if let Some(c) = b.words.as_deref().and_then(casing) {
                    b.upper = c == Casing::Upper;
                }
                let said = if r.stars {
                    // Tesseract reads stars as letters ("Kk Kk"): keep no words for them.
                    if !b.words.as_deref().is_some_and(has_rating) {
                        b.words = None;
                    }
                    Some(TextRole::Rating)
                } else {
                    b.words.as_deref().and_then(role_of)
                };
                (b, r.owner, said)
            })
            .collect();
        let mut shapes: Vec<SolidShape> = found.shapes.into_iter().map(|(s, _)| s).collect();
        let mut texts = Vec::new();
        let mut keep = vec![false; shapes.len()];
        for (i, s) in shapes.iter_mut().enumerate() {
            let held = blocks.iter().filter(|(_, o, _)| *o == Some(i)).count();
            let has_text = held > 0;
            // A wide tag that says an offer ("SALE", "-30%") is a badge, not a button.
            let offer = blocks
                .iter()
                .any(|(_, o, said)| *o == Some(i) && *said == Some(TextRole::Offer));
            let aspect = s.rect.w * self.w as f32 / (s.rect.h * self.h as f32).max(1e-3);
            // A shape that holds three blocks or more holds copy (a comparison's column,
            // a card): a panel, whatever its size, not a badge that keeps one of them.
            if s.role == ShapeRole::Panel
                || s.rect.area() >= 0.10
                || s.rect.w >= 0.6
                || held >= MIN_PANEL_BLOCKS
            {
                s.role = ShapeRole::Panel;
                keep[i] = true;
            } else if has_text && aspect >= 1.6 && !offer {
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
        let mut free: Vec<(TextBlock, Option<TextRole>)> = Vec::new();
        for (b, owner, said) in blocks {
            match owner.map(|o| (o, shapes[o].role)) {
                Some((o, ShapeRole::Button)) if keep[o] => {
                    if texts.iter().all(|t: &TextBlock| t.role != TextRole::Cta) {
                        let mut b = b;
                        b.role = TextRole::Cta;
                        texts.push(b);
                    }
                }
                Some((o, ShapeRole::Badge)) if keep[o] => {
                    if texts.iter().all(|t: &TextBlock| !badge_roles(t.role)) {
                        let mut b = b;
                        // A badge holds an offer, a price, stars or a figure when its words
                        // say so; unread, it is taken for an offer (what badges mostly hold).
                        b.role = match said {
                            Some(
                                r @ (TextRole::Offer
                                | TextRole::Price
                                | TextRole::Rating
                                | TextRole::Stat),
                            ) => r,
                            _ if b.words.is_some() => TextRole::BadgeLabel,
                            _ => TextRole::Offer,
                        };
                        texts.push(b);
                    }
                }
                _ => free.push((b, said)),
            }
        }
        // Roles by size: the largest text leads (the headline, unless its words say it is
        // a quote, an offer, a price or a figure).
        free.sort_by(|a, b| {
            b.0.line_height
                .total_cmp(&a.0.line_height)
                .then(b.0.rect.area().total_cmp(&a.0.rect.area()))
        });
        let mut logo = None;
        if free.len() >= 2 {
            let head_lh = free[0].0.line_height;
            let pick = (1..free.len())
                .filter(|i| {
                    let (b, said) = &free[*i];
                    said.is_none()
                        && b.lines == 1
                        && b.line_height <= 0.6 * head_lh
                        && (b.rect.y < 0.14 || b.rect.bottom() > 0.9)
                        && b.rect.h <= 0.07
                })
                .min_by(|a, b| {
                    let edge = |r: &Rect| r.y.min(1.0 - r.bottom());
                    edge(&free[*a].0.rect).total_cmp(&edge(&free[*b].0.rect))
                });
            if let Some(i) = pick {
                logo = Some(free.remove(i).0.rect);
            }
        }
        list_by_layout(&mut free);
        if let Some((first, said)) = free.first_mut() {
            first.role = said.unwrap_or(TextRole::Headline);
        }
        if free.len() >= 2 {
            let head = free[0].0.clone();
            // A short small line right above the lead is its eyebrow (or what its words say).
            if let Some(i) = (1..free.len()).find(|i| {
                let b = &free[*i].0;
                b.role == TextRole::Body
                    && b.lines == 1
                    && b.rect.bottom() <= head.rect.y + 0.01
                    && head.rect.y - b.rect.bottom() <= 2.0 * head.line_height
                    && b.line_height <= 0.6 * head.line_height
            }) {
                free[i].0.role = free[i].1.unwrap_or(TextRole::Eyebrow);
            }
            for (b, said) in free.iter_mut().skip(1) {
                if b.role == TextRole::Body
                    && let Some(r) = said
                {
                    b.role = *r;
                }
            }
            quote_authors(&mut free);
            // A lead that is not a headline (a price, an offer, a figure, a quote) may have
            // one above it: the largest plain block at least half its size.
            if free[0].0.role != TextRole::Headline
                && let Some((b, _)) = free.iter_mut().skip(1).find(|(b, said)| {
                    b.role == TextRole::Body
                        && said.is_none()
                        && b.rect.bottom() <= head.rect.y + 0.01
                        && b.line_height >= 0.5 * head.line_height
                })
            {
                b.role = TextRole::Headline;
            }
            if let Some((b, _)) = free.iter_mut().find(|(b, _)| b.role == TextRole::Body) {
                b.role = TextRole::Supporting;
            }
        }
        list_siblings(&mut free);
        compare_at_prices(&mut free);
        let free: Vec<TextBlock> = free.into_iter().map(|(b, _)| b).collect();
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
        let blocks: Vec<(TextRole, Option<&str>)> = {
            let mut ordered: Vec<&TextBlock> = texts.iter().collect();
            ordered.sort_by(|a, b| a.rect.y.total_cmp(&b.rect.y));
            ordered
                .iter()
                .map(|t| (t.role, t.words.as_deref().filter(|_| words_read)))
                .collect()
        };
        let (format, format_from) = format(&FormatEvidence {
            blocks: &blocks,
            words_read,
            first_cutout: images.first().is_some_and(|i| i.cutout),
            any_cutout: images.iter().any(|i| i.cutout),
            framed_photo: images.iter().any(|i| !i.cutout),
            photo_ground: matches!(background, Background::Photo { .. }),
        });
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
            words_read,
            format,
            format_from,
        }
    }
}

/// Whether a block of `role` is a badge's label.
fn badge_roles(role: TextRole) -> bool {
    matches!(
        role,
        TextRole::BadgeLabel
            | TextRole::Offer
            | TextRole::Price
            | TextRole::Rating
            | TextRole::Stat
    )
}

/// Three or more unread blocks below the lead, left edges lined up, of one size and one or
/// two lines each, evenly stacked: a list (its items `list_item`), read from the layout.
fn list_by_layout(free: &mut [(TextBlock, Option<TextRole>)]) {
    let n = free.len();
    for i in 1..n {
        let a = free[i].0.clone();
        if free[i].1.is_some() || a.role != TextRole::Body || a.lines > 2 {
            continue;
        }
        let mut group: Vec<usize> = (1..n)
            .filter(|&j| {
                let b = &free[j].0;
                free[j].1.is_none()
                    && b.role == TextRole::Body
                    && b.lines <= 2
                    && (b.rect.x - a.rect.x).abs() < 0.015
                    && (b.line_height / a.line_height - 1.0).abs() < 0.2
            })
            .collect();
        if group.len() < 3 {
            continue;
        }
        group.sort_by(|p, q| free[*p].0.rect.y.total_cmp(&free[*q].0.rect.y));
        let gaps: Vec<f32> = group
            .windows(2)
            .map(|w| free[w[1]].0.rect.y - free[w[0]].0.rect.y)
            .collect();
        let (lo, hi) = gaps
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), g| (l.min(*g), h.max(*g)));
        if lo > 0.0 && hi <= lo * 1.35 {
            for j in group {
                free[j].0.role = TextRole::ListItem;
            }
            return;
        }
    }
}

/// Blocks set like a list item and next to one are items of that list too: Tesseract
/// often reads no tick before an item, or a tick as a letter ("X Cancel any time"). Such a
/// block has the item's type size (within 20 %), starts within 4 % of the width of its left
/// edge (a missing tick moves it right), is at most three lines long, and sits within two
/// and a half lines of an item above or below; the letter read for a tick is written as
/// the tick.
fn list_siblings(free: &mut [(TextBlock, Option<TextRole>)]) {
    loop {
        let items: Vec<TextBlock> = free
            .iter()
            .filter(|(b, _)| b.role == TextRole::ListItem)
            .map(|(b, _)| b.clone())
            .collect();
        let mut changed = false;
        for (b, said) in free.iter_mut() {
            let plain = matches!(
                b.role,
                TextRole::Body | TextRole::Supporting | TextRole::Offer
            ) && said.is_none_or(|r| r == TextRole::ListItem || r == TextRole::Offer);
            if !plain || b.lines > 3 {
                continue;
            }
            let sibling = items.iter().any(|it| {
                let lh = it.line_height.max(1e-4);
                let gap = (b.rect.y - it.rect.bottom()).max(it.rect.y - b.rect.bottom());
                (b.line_height / lh - 1.0).abs() <= 0.2
                    && (b.rect.x - it.rect.x).abs() <= 0.04
                    && gap <= 2.5 * lh
            });
            if sibling {
                b.role = TextRole::ListItem;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for (b, _) in free
        .iter_mut()
        .filter(|(b, _)| b.role == TextRole::ListItem)
    {
        if let Some(w) = &b.words
            && let Some(rest) = ["Y ", "v ", "V ", "/ "]
                .iter()
                .find_map(|m| w.strip_prefix(m))
        {
            b.words = Some(format!("✓ {rest}"));
        } else if let Some(w) = &b.words
            && let Some(rest) = ["X ", "x "].iter().find_map(|m| w.strip_prefix(m))
        {
            b.words = Some(format!("✗ {rest}"));
        }
    }
}

/// A short line right below a quote, in smaller type, names who said it.
fn quote_authors(free: &mut [(TextBlock, Option<TextRole>)]) {
    let quotes: Vec<TextBlock> = free
        .iter()
        .filter(|(b, _)| b.role == TextRole::Quote)
        .map(|(b, _)| b.clone())
        .collect();
    for q in quotes {
        if let Some((b, _)) = free.iter_mut().find(|(b, said)| {
            matches!(b.role, TextRole::Body | TextRole::Supporting)
                && said.is_none()
                && b.lines <= 2
                && b.rect.y >= q.rect.bottom() - 0.005
                && b.rect.y - q.rect.bottom() <= 3.0 * q.line_height
                && b.line_height < q.line_height
        }) {
            b.role = TextRole::QuoteAuthor;
        }
    }
}

/// Of two prices, the higher is the former price (shown beside the price, often crossed).
fn compare_at_prices(free: &mut [(TextBlock, Option<TextRole>)]) {
    let amount = |b: &TextBlock| {
        b.words
            .as_deref()
            .map(prices)
            .and_then(|p| p.into_iter().reduce(f64::max))
    };
    let priced: Vec<(usize, f64)> = free
        .iter()
        .enumerate()
        .filter(|(_, (b, _))| b.role == TextRole::Price)
        .filter_map(|(i, (b, _))| amount(b).map(|a| (i, a)))
        .collect();
    if priced.len() < 2 {
        return;
    }
    let (hi, hi_amount) = priced
        .iter()
        .copied()
        .fold((usize::MAX, f64::MIN), |m, p| if p.1 > m.1 { p } else { m });
    if priced.iter().any(|(i, a)| *i != hi && *a < hi_amount) {
        free[hi].0.role = TextRole::CompareAtPrice;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blueprint::Align;

    fn block(role: TextRole, y: f32, x: f32, words: &str) -> (TextBlock, Option<TextRole>) {
        let b = TextBlock {
            role,
            rect: Rect {
                x,
                y,
                w: 0.3,
                h: 0.03,
            },
            lines: 1,
            line_height: 0.03,
            align: Align::Left,
            color: [0, 0, 0],
            weight: 400,
            upper: false,
            words: Some(words.into()),
        };
        let said = crate::blueprint::words::role_of(words);
        (b, said)
    }

    #[test]
    fn blocks_set_like_a_list_item_beside_one_are_items() {
        // An item with its tick read, one below it whose tick was read as "X", one whose
        // tick was not read (its text starts further right), and a caption far below.
        let mut free = vec![
            block(TextRole::ListItem, 0.40, 0.10, "✓ Ready in two minutes"),
            block(TextRole::Body, 0.45, 0.10, "X Cancel any time"),
            block(TextRole::Supporting, 0.50, 0.125, "Made in small batches"),
            block(TextRole::Body, 0.80, 0.10, "Roasted every Monday"),
        ];
        list_siblings(&mut free);
        let got: Vec<(TextRole, &str)> = free
            .iter()
            .map(|(b, _)| (b.role, b.words.as_deref().unwrap_or("")))
            .collect();
        assert_eq!(
            got,
            vec![
                (TextRole::ListItem, "✓ Ready in two minutes"),
                (TextRole::ListItem, "✗ Cancel any time"),
                (TextRole::ListItem, "Made in small batches"),
                (TextRole::Body, "Roasted every Monday"),
            ]
        );
    }

    #[test]
    fn a_small_shape_holding_a_column_of_copy_is_a_panel_and_keeps_it_all() {
        // A comparison's column: a 30 % × 25 % card holding its heading and three items.
        // A badge keeps one block; this card keeps all four.
        let grid = Grid {
            w: 100,
            h: 100,
            px: vec![[255, 255, 255]; 100 * 100],
        };
        let card = SolidShape {
            role: ShapeRole::Badge,
            rect: Rect {
                x: 0.1,
                y: 0.5,
                w: 0.3,
                h: 0.25,
            },
            shape: crate::blueprint::Shape::Rectangle,
            color: [255, 230, 150],
        };
        let words = [
            "Purrfect",
            "✓ Ready in two minutes",
            "✓ Cancel any time",
            "✓ Ethically sourced",
        ];
        let raw: Vec<RawBlock> = words
            .iter()
            .enumerate()
            .map(|(i, w)| RawBlock {
                block: block(TextRole::Body, 0.52 + 0.05 * i as f32, 0.11, w).0,
                owner: Some(0),
                stars: false,
            })
            .collect();
        let found = Found {
            shapes: vec![(
                card,
                super::super::PxBox {
                    x0: 10,
                    y0: 50,
                    x1: 40,
                    y1: 75,
                },
            )],
            images: Vec::new(),
            glyphs: Vec::new(),
        };
        let bp = grid.assign(
            Background::Solid {
                color: [255, 255, 255],
            },
            found,
            raw,
            Some(words.iter().map(|w| Some((*w).to_owned())).collect()),
        );
        assert_eq!(bp.shapes.len(), 1);
        assert_eq!(bp.shapes[0].role, ShapeRole::Panel);
        assert_eq!(bp.texts.len(), 4, "{:?}", bp.texts);
        let items = bp
            .texts
            .iter()
            .filter(|t| t.role == TextRole::ListItem)
            .count();
        assert_eq!(items, 3);
    }
}

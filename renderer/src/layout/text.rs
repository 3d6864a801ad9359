//! Text shaping and line layout with cosmic-text: bidi, RTL, line breaking, per-glyph font
//! fallback, colour emoji, ellipsis and shrink-to-fit.
//!
//! Text is shaped at its design size with hinting off; the scene turns glyphs into outlines,
//! so text stays vector-crisp at any output size.

use std::collections::HashSet;

use cosmic_text::{
    Align, Attrs, Buffer, CacheKeyFlags, Family, FontSystem, Metrics, Shaping, Style, Weight, Wrap,
    fontdb,
};

use crate::fonts::{DEFAULT_FAMILY, FontLibrary};
use crate::tree::{LineHeight, TextAlign, TextCase, TextDecoration, TextStyle};

/// The text to lay out, after case and paragraph separators, cut into pieces: each piece's
/// end (a byte offset into `text`) and the span of [`TextStyle::spans`] it is in (`None`:
/// the node's own style). The pieces cover `text` in order.
struct Styled {
    text: String,
    pieces: Vec<(usize, Option<usize>)>,
}

impl Styled {
    fn new(style: &TextStyle) -> Self {
        if style.spans.is_empty() {
            let text = apply_case(&style.characters, style.case);
            let end = text.len();
            return Styled {
                text,
                pieces: vec![(end, None)],
            };
        }
        let chars = &style.characters;
        let mut ranges: Vec<(std::ops::Range<usize>, Option<usize>)> = Vec::new();
        let mut at = 0;
        for (k, sp) in style.spans.iter().enumerate() {
            // Spans are in order and on character boundaries (the tree made them so).
            let (start, end) = (sp.range.start.max(at), sp.range.end.min(chars.len()));
            if start >= end || !chars.is_char_boundary(start) || !chars.is_char_boundary(end) {
                continue;
            }
            if start > at {
                ranges.push((at..start, None));
            }
            ranges.push((start..end, Some(k)));
            at = end;
        }
        if at < chars.len() {
            ranges.push((at..chars.len(), None));
        }
        let mut text = String::with_capacity(chars.len());
        let mut pieces = Vec::with_capacity(ranges.len());
        let mut word_start = true;
        for (r, span) in ranges {
            text.push_str(&case_of(&chars[r], style.case, &mut word_start));
            pieces.push((text.len(), span));
        }
        Styled { text, pieces }
    }

    /// The pieces of `text[..cut]` followed by `tail` more bytes (an ellipsis) in the style
    /// of the last kept character.
    fn cut(&self, cut: usize, tail: usize) -> Vec<(usize, Option<usize>)> {
        let mut out = Vec::new();
        for &(end, span) in &self.pieces {
            if end >= cut {
                out.push((cut, span));
                break;
            }
            out.push((end, span));
        }
        match out.last_mut() {
            Some(last) => last.0 = cut + tail,
            None => out.push((cut + tail, None)),
        }
        out
    }
}

/// One positioned glyph, in the text box's coordinates (y is the baseline).
#[derive(Debug, Clone)]
pub struct PlacedGlyph {
    pub font_id: fontdb::ID,
    pub glyph_id: u16,
    pub x: f32,
    pub y: f32,
    pub font_size: f32,
    pub weight: Weight,
    pub flags: CacheKeyFlags,
    /// 0: the node's own style; `k`: span `k - 1` of [`TextStyle::spans`].
    pub span: usize,
}

/// The result of laying out one TEXT node.
#[derive(Debug, Clone, Default)]
pub struct ShapedText {
    pub glyphs: Vec<PlacedGlyph>,
    /// Underline / strikethrough rectangles `(x, y, w, h)`, each with the span of its
    /// glyphs (as [`PlacedGlyph::span`]).
    pub decorations: Vec<([f32; 4], usize)>,
    /// Widest line.
    pub width: f32,
    /// Total height of the lines.
    pub height: f32,
    /// Leftmost ink start (may be > 0 for centred or right-aligned text).
    pub min_x: f32,
    pub font_size: f32,
    /// Baseline of the first line, from the top of the text block.
    pub first_baseline: f32,
    pub lines: usize,
    /// True when a word had to be broken inside (does not fit the width).
    pub broke_word: bool,
    /// True when lines were dropped (maxLines / truncation).
    pub truncated: bool,
    /// The requested families (the node's, then its spans') that were not found, for which
    /// [`DEFAULT_FAMILY`] was used.
    pub missing_families: Vec<String>,
}

/// Owns the cosmic-text `FontSystem` (expensive: create once per process).
pub struct TextEngine {
    pub(crate) font_system: FontSystem,
    pub(crate) swash: cosmic_text::SwashCache,
    families: HashSet<String>,
}

impl std::fmt::Debug for TextEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextEngine")
            .field("families", &self.families.len())
            .finish()
    }
}

impl TextEngine {
    pub fn new(fonts: &FontLibrary) -> Self {
        let db = fonts.cosmic_db();
        let families = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.to_lowercase()))
            .collect();
        // A fixed locale keeps fallback choices identical on every machine.
        let font_system = FontSystem::new_with_locale_and_db("en-US".to_owned(), db);
        Self {
            font_system,
            swash: cosmic_text::SwashCache::new(),
            families,
        }
    }

    /// True when the library has this family (case-insensitive).
    pub fn has_family(&self, family: &str) -> bool {
        self.families.contains(&family.to_lowercase())
    }

    /// Shapes and breaks `style.characters` at `font_size` into lines at most `width` wide
    /// (`None`: no wrapping). `max_height` (TRUNCATE) and `maxLines` limit the lines; with
    /// `ellipsis` the last kept line ends in "…".
    pub fn shape(
        &mut self,
        style: &TextStyle,
        font_size: f32,
        width: Option<f32>,
        max_height: Option<f32>,
    ) -> ShapedText {
        let styled = Styled::new(style);
        let text = styled.text.clone();
        let line_height = line_height(style, font_size);
        let limit = match (style.max_lines, max_height) {
            (Some(n), _) => Some(n as usize),
            (None, Some(h)) => Some(((h + 0.01) / line_height).floor().max(1.0) as usize),
            _ => None,
        };
        let (mut out, starts) = self.run(
            style,
            &text,
            &styled.pieces,
            font_size,
            width,
            limit.filter(|_| !style.ellipsis),
        );
        let Some(n) = limit else { return out };
        if !style.ellipsis || starts.len() <= n {
            return out;
        }
        // Our own ellipsis (cosmic-text's keeps the wrapped space at the start of the last
        // line): keep the first n-1 lines, then the longest prefix of the rest of the n-th
        // line's paragraph that still fits on one line followed by "…".
        let (para, start) = starts[n - 1];
        let paragraphs: Vec<&str> = text.split('\n').collect();
        let para = para.min(paragraphs.len().saturating_sub(1));
        let mut prefix = paragraphs[..para]
            .iter()
            .map(|p| format!("{p}\n"))
            .collect::<String>();
        let rest_para = paragraphs.get(para).copied().unwrap_or_default();
        let start = start.min(rest_para.len());
        prefix.push_str(&rest_para[..start]);
        let rest = &rest_para[start..];
        let cuts: Vec<usize> = rest
            .char_indices()
            .map(|(i, _)| i)
            .chain([rest.len()])
            .collect();
        let candidate = |k: usize| {
            let kept = format!("{prefix}{}", rest[..cuts[k]].trim_end());
            let pieces = styled.cut(kept.len(), '\u{2026}'.len_utf8());
            (format!("{kept}\u{2026}"), pieces)
        };
        let (mut lo, mut hi) = (0usize, cuts.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let (text, pieces) = candidate(mid);
            let (s, _) = self.run(style, &text, &pieces, font_size, width, None);
            if s.lines <= n {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let lines_before = out.lines;
        let (text, pieces) = candidate(lo);
        (out, _) = self.run(style, &text, &pieces, font_size, width, Some(n));
        out.truncated = lines_before > out.lines || lo + 1 < cuts.len();
        out
    }

    /// One layout pass over `text`, cut into `pieces` of the node's style and of its spans.
    /// Returns the shaped text and, per visual line, its paragraph index and the logical
    /// byte offset where it starts.
    fn run(
        &mut self,
        style: &TextStyle,
        text: &str,
        pieces: &[(usize, Option<usize>)],
        font_size: f32,
        width: Option<f32>,
        max_lines: Option<usize>,
    ) -> (ShapedText, Vec<(usize, usize)>) {
        let mut missing_families: Vec<String> = Vec::new();
        let family_of = |name: &str, missing: &mut Vec<String>| -> String {
            if self.families.contains(&name.to_lowercase()) {
                name.to_owned()
            } else {
                if !missing.iter().any(|m| m == name) {
                    missing.push(name.to_owned());
                }
                DEFAULT_FAMILY.to_owned()
            }
        };
        let family = family_of(&style.font_family, &mut missing_families);
        // The families of the spans, resolved the same way, before the buffer borrows them.
        let span_families: Vec<Option<String>> = style
            .spans
            .iter()
            .map(|sp| {
                sp.font_family
                    .as_deref()
                    .map(|f| family_of(f, &mut missing_families))
            })
            .collect();
        let scale = font_size / style.font_size;
        let base_line = line_height(style, font_size);
        let metrics = Metrics::new(font_size, base_line);
        let attrs = Attrs::new()
            .family(Family::Name(&family))
            .weight(Weight(style.font_weight))
            .style(if style.italic {
                Style::Italic
            } else {
                Style::Normal
            })
            .letter_spacing(style.letter_spacing / style.font_size)
            .cache_key_flags(CacheKeyFlags::DISABLE_HINTING);
        let mut buffer = Buffer::new(&mut self.font_system, metrics);
        buffer.set_hinting(cosmic_text::Hinting::Disabled);
        buffer.set_wrap(if width.is_some() {
            Wrap::WordOrGlyph
        } else {
            Wrap::None
        });
        buffer.set_size(width.map(|w| w + 0.01), None);
        let align = match style.align {
            // Figma's LEFT is literally left, also for right-to-left paragraphs.
            TextAlign::Left => Some(Align::Left),
            TextAlign::Center => Some(Align::Center),
            TextAlign::Right => Some(Align::Right),
            TextAlign::Justified => Some(Align::Justified),
        };
        if style.spans.is_empty() {
            buffer.set_text(text, &attrs, Shaping::Advanced, align);
        } else {
            let mut rich = Vec::with_capacity(pieces.len());
            let mut start = 0;
            for &(end, span) in pieces {
                let end = end.min(text.len());
                if end <= start || !text.is_char_boundary(end) {
                    continue;
                }
                let a = match span.and_then(|k| style.spans.get(k).map(|sp| (k, sp))) {
                    None => attrs.clone(),
                    Some((k, sp)) => {
                        let size = sp.font_size.unwrap_or(style.font_size);
                        let mut a = attrs.clone().metadata(k + 1);
                        if let Some(Some(f)) = span_families.get(k) {
                            a = a.family(Family::Name(f));
                        }
                        if let Some(w) = sp.font_weight {
                            a = a.weight(Weight(w));
                        }
                        if let Some(i) = sp.italic {
                            a = a.style(if i { Style::Italic } else { Style::Normal });
                        }
                        let spacing = sp.letter_spacing.unwrap_or(style.letter_spacing);
                        a = a.letter_spacing(spacing / size);
                        if sp.font_size.is_some() {
                            let line = match style.line_height {
                                LineHeight::Auto => size * scale * 1.2,
                                _ => base_line,
                            };
                            a = a.metrics(Metrics::new(size * scale, line.max(0.01)));
                        }
                        a
                    }
                };
                rich.push((&text[start..end], a));
                start = end;
            }
            buffer.set_rich_text(rich, &attrs, Shaping::Advanced, align);
        }
        buffer.shape_until_scroll(&mut self.font_system, false);

        let mut out = ShapedText {
            font_size,
            missing_families,
            min_x: f32::MAX,
            ..Default::default()
        };
        let decoration_of = |meta: usize| -> TextDecoration {
            meta.checked_sub(1)
                .and_then(|k| style.spans.get(k))
                .and_then(|sp| sp.decoration)
                .unwrap_or(style.decoration)
        };
        let mut starts = Vec::new();
        let mut prev_line: Option<(usize, usize)> = None;
        for run in buffer.layout_runs() {
            let start = run.glyphs.iter().map(|g| g.start).min();
            let end = run.glyphs.iter().map(|g| g.end).max();
            starts.push((run.line_i, start.unwrap_or(0)));
            if max_lines.is_some_and(|m| out.lines >= m) {
                out.truncated = true;
                continue;
            }
            // A visual line that starts inside a word (not after whitespace) means the word
            // was broken by glyph wrapping. Clusters are compared in logical order, so this
            // also holds for RTL runs.
            if let (Some((line_i, prev_end)), Some(start)) = (prev_line, start)
                && line_i == run.line_i
                && start <= prev_end
                && start > 0
            {
                let before = run.text[..start].chars().next_back();
                let at = run.text[start..].chars().next();
                if before.is_some_and(|c| !c.is_whitespace())
                    && at.is_some_and(|c| !c.is_whitespace())
                {
                    out.broke_word = true;
                }
            }
            if let Some(end) = end {
                prev_line = Some((run.line_i, end));
            }
            if out.lines == 0 {
                out.first_baseline = run.line_y;
            }
            out.lines += 1;
            out.height = run.line_top + run.line_height;
            let mut lo = f32::MAX;
            let mut hi = f32::MIN;
            // Decorations: one rectangle per stretch of glyphs of one decoration and span.
            let mut stretch: Option<(TextDecoration, usize, f32, f32, f32)> = None;
            let close = |st: Option<(TextDecoration, usize, f32, f32, f32)>,
                         out: &mut ShapedText| {
                let Some((deco, span, a, b, size)) = st else {
                    return;
                };
                if a > b {
                    return;
                }
                let thick = (size / 14.0).max(0.5);
                match deco {
                    TextDecoration::None => {}
                    TextDecoration::Underline => out
                        .decorations
                        .push(([a, run.line_y + size * 0.1, b - a, thick], span)),
                    TextDecoration::Strikethrough => out
                        .decorations
                        .push(([a, run.line_y - size * 0.3, b - a, thick], span)),
                }
            };
            for g in run.glyphs {
                out.glyphs.push(PlacedGlyph {
                    font_id: g.font_id,
                    glyph_id: g.glyph_id,
                    x: g.x + g.font_size * g.x_offset,
                    y: run.line_y + g.y - g.font_size * g.y_offset,
                    font_size: g.font_size,
                    weight: g.font_weight,
                    flags: g.cache_key_flags,
                    span: g.metadata,
                });
                lo = lo.min(g.x);
                hi = hi.max(g.x + g.w);
                let deco = decoration_of(g.metadata);
                match &mut stretch {
                    Some((d, sp, a, b, size)) if *d == deco && *sp == g.metadata => {
                        *a = a.min(g.x);
                        *b = b.max(g.x + g.w);
                        *size = size.max(g.font_size);
                    }
                    _ => {
                        close(stretch.take(), &mut out);
                        stretch = Some((deco, g.metadata, g.x, g.x + g.w, g.font_size));
                    }
                }
            }
            close(stretch.take(), &mut out);
            if lo <= hi {
                out.width = out.width.max(hi - lo);
                out.min_x = out.min_x.min(lo);
            }
        }
        if out.min_x == f32::MAX {
            out.min_x = 0.0;
        }
        (out, starts)
    }
}

fn line_height(style: &TextStyle, font_size: f32) -> f32 {
    match style.line_height {
        LineHeight::Auto => font_size * 1.2,
        LineHeight::Pixels(px) => px * font_size / style.font_size,
        LineHeight::Relative(r) => font_size * r,
    }
    .max(0.01)
}

fn apply_case(s: &str, case: TextCase) -> String {
    case_of(s, case, &mut true)
}

/// [`apply_case`] of one piece of a text; `word_start` carries title case across pieces.
fn case_of(s: &str, case: TextCase, word_start: &mut bool) -> String {
    // One paragraph separator ("\n") so paragraph indices agree with cosmic-text's, which
    // also splits on "\r", "\r\n" and "\n\r".
    let normalised;
    let s = if s.contains('\r') {
        normalised = s
            .replace("\r\n", "\n")
            .replace("\n\r", "\n")
            .replace('\r', "\n");
        normalised.as_str()
    } else {
        s
    };
    match case {
        TextCase::Original => s.to_owned(),
        TextCase::Upper => s.to_uppercase(),
        TextCase::Lower => s.to_lowercase(),
        TextCase::Title => {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                if *word_start && c.is_alphabetic() {
                    out.extend(c.to_uppercase());
                } else {
                    out.push(c);
                }
                *word_start = c.is_whitespace();
            }
            out
        }
    }
}

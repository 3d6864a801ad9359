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
}

/// The result of laying out one TEXT node.
#[derive(Debug, Clone, Default)]
pub struct ShapedText {
    pub glyphs: Vec<PlacedGlyph>,
    /// Underline / strikethrough rectangles `(x, y, w, h)`.
    pub decorations: Vec<[f32; 4]>,
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
    /// The requested family when it was not found and [`DEFAULT_FAMILY`] was used.
    pub missing_family: Option<String>,
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
        let text = apply_case(&style.characters, style.case);
        let line_height = line_height(style, font_size);
        let limit = match (style.max_lines, max_height) {
            (Some(n), _) => Some(n as usize),
            (None, Some(h)) => Some(((h + 0.01) / line_height).floor().max(1.0) as usize),
            _ => None,
        };
        let (mut out, starts) = self.run(
            style,
            &text,
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
        let candidate = |k: usize| format!("{prefix}{}\u{2026}", rest[..cuts[k]].trim_end());
        let (mut lo, mut hi) = (0usize, cuts.len() - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            let (s, _) = self.run(style, &candidate(mid), font_size, width, None);
            if s.lines <= n {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        let lines_before = out.lines;
        (out, _) = self.run(style, &candidate(lo), font_size, width, Some(n));
        out.truncated = lines_before > out.lines || lo + 1 < cuts.len();
        out
    }

    /// One layout pass. Returns the shaped text and, per visual line, its paragraph index and
    /// the logical byte offset where it starts.
    fn run(
        &mut self,
        style: &TextStyle,
        text: &str,
        font_size: f32,
        width: Option<f32>,
        max_lines: Option<usize>,
    ) -> (ShapedText, Vec<(usize, usize)>) {
        let (family, missing_family) = if self.has_family(&style.font_family) {
            (style.font_family.as_str(), None)
        } else {
            (DEFAULT_FAMILY, Some(style.font_family.clone()))
        };
        let metrics = Metrics::new(font_size, line_height(style, font_size));
        let attrs = Attrs::new()
            .family(Family::Name(family))
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
        buffer.set_text(text, &attrs, Shaping::Advanced, align);
        buffer.shape_until_scroll(&mut self.font_system, false);

        let mut out = ShapedText {
            font_size,
            missing_family,
            min_x: f32::MAX,
            ..Default::default()
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
            for g in run.glyphs {
                out.glyphs.push(PlacedGlyph {
                    font_id: g.font_id,
                    glyph_id: g.glyph_id,
                    x: g.x + g.font_size * g.x_offset,
                    y: run.line_y + g.y - g.font_size * g.y_offset,
                    font_size: g.font_size,
                    weight: g.font_weight,
                    flags: g.cache_key_flags,
                });
                lo = lo.min(g.x);
                hi = hi.max(g.x + g.w);
            }
            if lo <= hi {
                out.width = out.width.max(hi - lo);
                out.min_x = out.min_x.min(lo);
                let thick = (font_size / 14.0).max(0.5);
                match style.decoration {
                    TextDecoration::None => {}
                    TextDecoration::Underline => {
                        out.decorations
                            .push([lo, run.line_y + font_size * 0.1, hi - lo, thick]);
                    }
                    TextDecoration::Strikethrough => {
                        out.decorations
                            .push([lo, run.line_y - font_size * 0.3, hi - lo, thick]);
                    }
                }
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
            let mut start = true;
            for c in s.chars() {
                if start && c.is_alphabetic() {
                    out.extend(c.to_uppercase());
                } else {
                    out.push(c);
                }
                start = c.is_whitespace();
            }
            out
        }
    }
}

//! Choosing among a slot's candidates: each passes the grounding rule, is new to the ad and
//! fits the slot as the renderer measures it at the slot's type size; the fitting candidate
//! nearest the reference's length wins, ties broken by the job's hash. The model's
//! proposals are asked for here too ([`propose`]).

use super::*;

impl State<'_> {
    /// The best candidate for `s` in the reference's case (see [`State::pick`]).
    pub(super) fn choose(
        &mut self,
        s: &SlotSpec,
        role: &str,
        candidates: Vec<Line>,
    ) -> Option<SlotText> {
        let cased = map_text(candidates, |c| apply_case(s.case, c));
        self.pick(s, role, cased)
    }

    /// The best candidate for `s`, as given (quotes and names keep their case).
    pub(super) fn choose_as_given(
        &mut self,
        s: &SlotSpec,
        role: &str,
        candidates: Vec<Line>,
    ) -> Option<SlotText> {
        self.pick(s, role, candidates)
    }

    /// Of the candidates that are grounded, new to this ad and fit the slot at its type
    /// size, the one nearest the reference's length (a hash breaking near-ties); else the
    /// shortest grounded one (shrink-to-fit sets it smaller).
    pub(super) fn pick(
        &mut self,
        s: &SlotSpec,
        role: &str,
        candidates: Vec<Line>,
    ) -> Option<SlotText> {
        let mut ok: Vec<(String, bool)> = Vec::new();
        let mut from: Vec<Vec<String>> = Vec::new();
        for l in candidates {
            let c = clean(&l.text);
            if c.is_empty() || ok.iter().any(|(o, _)| *o == c) {
                continue;
            }
            if self.used.contains(&c.to_lowercase()) {
                continue;
            }
            if let Err(reason) = check_text_from(&c, &s.key, self.facts, &l.from) {
                if self.refused.len() < 24 {
                    self.refused.push(Refusal {
                        slot: s.key.clone(),
                        text: c,
                        reason,
                        writer: TEMPLATE.into(),
                    });
                }
                continue;
            }
            let fits = self.fits(s, &c);
            ok.push((c, fits));
            from.push(l.from);
        }
        // The brand's voice weighs the free lines (facts are what they are).
        let tone = match role {
            "headline" | "supporting" | "eyebrow" | "cta" => self.facts.tone,
            _ => crate::generate::voice::Tone::Neutral,
        };
        let target = self.target_len(s) * tone.length_factor();
        let score = |c: &str| {
            let len = c.chars().count() as f32;
            let jitter = (fnv1a(&[&self.seed.to_string(), &s.key, c]) % 1000) as f32 / 1000.0;
            // The voice's own patterns are preferred: about a third of a reference length.
            let own = if tone != crate::generate::voice::Tone::Neutral
                && self.toned.contains(&c.to_lowercase())
            {
                -0.35
            } else {
                0.0
            };
            (len - target).abs() / target.max(8.0) + 0.5 * jitter + tone.weigh(c) + own
        };
        let best = (0..ok.len())
            .filter(|&i| ok[i].1)
            .min_by(|&a, &b| score(&ok[a].0).total_cmp(&score(&ok[b].0)))
            .or_else(|| (0..ok.len()).min_by_key(|&i| ok[i].0.chars().count()))?;
        Some(SlotText {
            text: ok[best].0.clone(),
            role: role.to_owned(),
            shown: true,
            writer: TEMPLATE.into(),
            from: std::mem::take(&mut from[best]),
        })
    }

    /// The length the slot's words should have: the reference's, else what fills its box.
    pub(super) fn target_len(&self, s: &SlotSpec) -> f32 {
        if let Some(w) = &s.words {
            return w.chars().filter(|c| *c != '\n').count() as f32;
        }
        let per_line = s.width / (0.5 * s.size);
        (per_line * s.lines.max(1) as f32 * 0.8).max(4.0)
    }

    /// Whether `text` fits the slot at its type size: no broken word, within its height
    /// and at most one line more than the reference had.
    pub(super) fn fits(&self, s: &SlotSpec, text: &str) -> bool {
        let (Some(r), Some(style)) = (self.renderer, &s.style) else {
            return text.chars().count() as f32 <= self.target_len(s) * 1.6 + 4.0;
        };
        let m = r.measure_text(style, text, s.size, s.width);
        // The box is the reference's glyph extent, a little less than the layout's line
        // pitch per line: count lines, not pixels (shrink-to-fit absorbs the rest).
        let pitch = m.height / m.lines.max(1) as f32;
        let room = ((s.height / pitch.max(1.0)).round() as usize).max(s.lines as usize);
        let max_lines = style
            .max_lines
            .map_or(room, |n| (n as usize).min(room.max(1)));
        !m.broke_word && m.lines <= max_lines.max(1)
    }
}

/// Asks `proposer` for the free lines of `specs` (a failure is logged and ignored).
pub(super) fn propose(
    proposer: &dyn SlotProposer,
    specs: &[SlotSpec],
    facts: &Facts,
    reference: &Reference,
    seed: u64,
) -> HashMap<String, Vec<String>> {
    let slots: Vec<BriefSlot> = specs
        .iter()
        .filter(|s| {
            matches!(
                s.role.as_str(),
                "headline" | "supporting" | "eyebrow" | "cta"
            )
        })
        .map(|s| BriefSlot {
            key: s.key.clone(),
            role: s.role.clone(),
            reference_words: s.words.clone(),
            max_chars: (s.width / (0.5 * s.size) * s.lines.max(1) as f32) as usize,
        })
        .collect();
    if slots.is_empty() {
        return HashMap::new();
    }
    let brief = Brief {
        slots,
        facts: facts.brief(),
        prompt: facts.prompt.clone(),
        format: reference.format.clone(),
        seed,
    };
    match proposer.propose(&brief) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(writer = %proposer.name(), error = %e, "the copy model proposed nothing; the template writer's words are used");
            HashMap::new()
        }
    }
}

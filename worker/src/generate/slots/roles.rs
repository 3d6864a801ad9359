//! The copywriter's rules, role by role: [`State::slot`] is one arm per role (offer, price,
//! review, list item, stat, headline, supporting line, eyebrow, call to action, brand), each
//! gathering its candidates from the facts and handing them to the selection
//! ([`super::select`]); the model's proposals for the free lines are tried first
//! ([`State::model_line`]).
//!
//! Longer than most modules because it is one writer's rules, role by role; splitting the
//! arms would scatter what one ad says.

use super::*;

impl State<'_> {
    pub(super) fn slot(
        &mut self,
        s: &SlotSpec,
        lead: bool,
        has_headline: bool,
        all: &[SlotSpec],
        reference: &Reference,
    ) -> SlotText {
        let f = self.facts;
        let hidden = |role: &str| SlotText {
            text: String::new(),
            role: role.to_owned(),
            shown: false,
            writer: TEMPLATE.into(),
            from: Vec::new(),
        };
        let offer_path = f
            .offer
            .as_ref()
            .and_then(|o| f.field(&["product.details.offer"], o));
        let (discount, saving) = (Some(DISCOUNT_SOURCE), Some(SAVING_SOURCE));
        let refs = s.words.as_deref().unwrap_or("").to_lowercase();
        match s.role.as_str() {
            "offer" => {
                // Words without a figure ("SUMMER SALE") name a sale; the figure is left to
                // the slot that shows one (the badge's "-30%"). With no such slot ("SALE" or
                // "Free shipping" the only offer) this one states the offer itself.
                if f.discount.is_some()
                    && !refs.is_empty()
                    && !refs.chars().any(|c| c.is_ascii_digit())
                    && all.iter().any(|o| o.key != s.key && shows_figure(o))
                {
                    let named = lines(
                        [format!("{} sale", f.brand), format!("The {} sale", f.brand)],
                        &[Some("brand.name"), discount],
                    );
                    if let Some(t) = self.choose(s, "offer", named) {
                        return t;
                    }
                }
                let mut c = Vec::new();
                if let Some(d) = f.discount {
                    if refs.starts_with('-') {
                        c.push(line(format!("-{d}%"), &[discount]));
                    }
                    if refs.contains("save") {
                        c.push(line(format!("Save {d}%"), &[discount]));
                    }
                    c.extend(lines(
                        [format!("{d}% off"), format!("-{d}%"), format!("Save {d}%")],
                        &[discount],
                    ));
                    if let Some(sv) = &f.saving {
                        c.push(line(format!("Save {}", sv.text), &[saving]));
                    }
                    c.push(line(
                        format!("{d}% off {}", f.name),
                        &[discount, Some("product.name")],
                    ));
                }
                if let Some(o) = &f.offer {
                    c.extend(lines(shorter(o), &[offer_path.as_deref()]));
                    if urgent(s, reference) {
                        c.extend(self.ends_lines());
                    }
                }
                if let Some(o) = &f.prompt_offer {
                    c.push(line(o.clone(), &[Some("prompt")]));
                }
                if let Some(t) = self.choose(s, "offer", c) {
                    return t;
                }
                // No offer: a lead becomes the headline; a badge shows the price or a
                // figure; elsewhere the slot is left out.
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                if s.on.as_deref() == Some("badge") || s.key == "badge_label" {
                    if let Some(p) = &f.price
                        && let Some(t) = self.choose(
                            s,
                            "price",
                            vec![line(p.text.clone(), &[Some(PRICE_SOURCE)])],
                        )
                    {
                        return t;
                    }
                    if let Some(st) = f.stats.first() {
                        let from = f.field(&["product.details.stats"], &st.value);
                        if let Some(t) =
                            self.choose(s, "stat", vec![line(st.value.clone(), &[from.as_deref()])])
                        {
                            return t;
                        }
                    }
                }
                if !lead && s.key != "badge_label" {
                    let c = self.eyebrows();
                    if let Some(t) = self.choose(s, "eyebrow", c) {
                        return t;
                    }
                }
                hidden("offer")
            }
            "price" => {
                let mut c = Vec::new();
                if let Some(p) = &f.price {
                    if refs.contains("from") {
                        c.push(line(format!("From {}", p.text), &[Some(PRICE_SOURCE)]));
                    }
                    c.push(line(p.text.clone(), &[Some(PRICE_SOURCE)]));
                }
                if let Some(t) = self.choose(s, "price", c) {
                    return t;
                }
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                hidden("price")
            }
            "compare_at_price" => {
                let c = match (&f.price, &f.compare_at) {
                    (Some(_), Some(ca)) => vec![line(ca.text.clone(), &[Some(COMPARE_AT_SOURCE)])],
                    _ => Vec::new(),
                };
                self.choose(s, "compare_at_price", c)
                    .unwrap_or_else(|| hidden("compare_at_price"))
            }
            "quote" => {
                let pick = self.review_index();
                let mut c = Vec::new();
                if let Some(r) = pick.map(|i| &f.reviews[i]) {
                    let from = f.field(&["product.details.reviews"], &r.text);
                    for cut in shorter(&r.text) {
                        c.push(line(format!("\u{201c}{cut}\u{201d}"), &[from.as_deref()]));
                    }
                }
                if let Some(t) = self.choose_as_given(s, "quote", c) {
                    return t;
                }
                // No review: the product's own words, not in quotation marks.
                let role = if lead && !has_headline {
                    "headline"
                } else {
                    "supporting"
                };
                if role == "headline" {
                    self.headline(s, all, reference, role)
                } else {
                    let c = self.supporting_lines();
                    self.choose(s, role, c).unwrap_or_else(|| hidden("quote"))
                }
            }
            "quote_author" => {
                let author = self
                    .review_index()
                    .and_then(|i| f.reviews[i].author.clone());
                let dash = s
                    .words
                    .as_deref()
                    .is_some_and(|w| w.trim_start().starts_with(['—', '–', '-', '~']));
                let c = author
                    .map(|a| {
                        let from = f.field(&["product.details.reviews"], &a);
                        let both = if dash {
                            vec![format!("\u{2014} {a}"), a]
                        } else {
                            vec![a.clone(), format!("\u{2014} {a}")]
                        };
                        lines(both, &[from.as_deref()])
                    })
                    .unwrap_or_default();
                self.choose_as_given(s, "quote_author", c)
                    .unwrap_or_else(|| hidden("quote_author"))
            }
            "rating" => {
                let rated = self
                    .review_index()
                    .filter(|i| f.reviews[*i].rating.is_some())
                    .or_else(|| f.reviews.iter().position(|r| r.rating.is_some()));
                let rating = rated.and_then(|i| f.reviews[i].rating);
                let from = rated.map(|i| format!("product.details.reviews[{i}].rating"));
                let from = [from.as_deref()];
                // The reference's form (stars, or "4.8/5"), the other only when it does not
                // fit.
                let forms = rating.filter(|r| *r >= 1.0).map(|r| {
                    let stars = "\u{2605}".repeat(r.round() as usize);
                    if refs.contains("/5") {
                        [format!("{}/5", trim_num(r)), stars]
                    } else {
                        [stars, format!("{}/5", trim_num(r))]
                    }
                });
                let Some([first, other]) = forms else {
                    return hidden("rating");
                };
                if self.fits(s, &first)
                    && let Some(t) =
                        self.choose_as_given(s, "rating", vec![line(first.clone(), &from)])
                {
                    return t;
                }
                self.choose_as_given(s, "rating", lines([other, first], &from))
                    .unwrap_or_else(|| hidden("rating"))
            }
            "stat" => {
                let mut c = Vec::new();
                let mut label_from = None;
                if let Some(stat) = f.stats.get(self.stat_next) {
                    let alone = s
                        .words
                        .as_deref()
                        .is_some_and(|w| w.split_whitespace().count() == 1);
                    let both = clean(&format!("{} {}", stat.value, stat.label));
                    let value_from = f.field(&["product.details.stats"], &stat.value);
                    label_from = f.field(&["product.details.stats"], &stat.label);
                    // The figure alone only where a supporting line below can say what it
                    // counts (a bare "93%" beside another line would claim that line).
                    let carrier = all.iter().any(|x| x.role == "supporting");
                    if alone && carrier && !stat.label.is_empty() {
                        c.push(line(stat.value.clone(), &[value_from.as_deref()]));
                    } else {
                        c.push(line(both, &[value_from.as_deref(), label_from.as_deref()]));
                    }
                }
                if let Some(t) = self.choose(s, "stat", c) {
                    let stat = &f.stats[self.stat_next];
                    if t.text.trim() == stat.value && !stat.label.is_empty() {
                        self.stat_label = Some(line(stat.label.clone(), &[label_from.as_deref()]));
                    }
                    self.stat_next += 1;
                    return t;
                }
                if lead && !has_headline {
                    return self.headline(s, all, reference, "headline");
                }
                let c = self.supporting_lines();
                self.choose(s, "supporting", c)
                    .unwrap_or_else(|| hidden("stat"))
            }
            "list_item" => {
                let points = f.points();
                let marker = s
                    .words
                    .as_deref()
                    .and_then(|w| w.lines().next().and_then(list_marker))
                    // A cross marks what a comparison's other column lacks: the product's
                    // own benefit never carries one (it would say the product lacks it).
                    .map(|m| match m {
                        "✗" | "✘" | "×" => "✓",
                        m => m,
                    })
                    .map(str::to_owned);
                while self.point_next < points.len() {
                    let p = &points[self.point_next];
                    self.point_next += 1;
                    if self.used.iter().any(|u| u.contains(&p.to_lowercase())) {
                        continue;
                    }
                    let n = self.list_number + 1;
                    let with_marker = |t: &str| match marker.as_deref() {
                        Some(m) if m.ends_with(['.', ')']) => {
                            format!("{n}{} {t}", &m[m.len() - 1..])
                        }
                        Some(m) => format!("{m} {t}"),
                        None => t.to_owned(),
                    };
                    let from =
                        f.field(&["product.details.benefits", "product.details.features"], p);
                    let c = lines(
                        shorter(p).iter().map(|t| with_marker(t)),
                        &[from.as_deref()],
                    );
                    if let Some(t) = self.choose(s, "list_item", c) {
                        self.list_number += 1;
                        return t;
                    }
                }
                hidden("list_item")
            }
            "headline" | "supporting" | "eyebrow" | "cta"
                if self.proposals.contains_key(&s.key) =>
            {
                match self.model_line(s) {
                    Some(t) => t,
                    None => {
                        self.proposals.remove(&s.key);
                        self.slot(s, lead, has_headline, all, reference)
                    }
                }
            }
            "headline" => self.headline(s, all, reference, "headline"),
            "supporting" => {
                // What a figure shown alone counts comes first, fitting or shrunk to fit.
                if let Some(label) = self.stat_label.take()
                    && let Some(t) = self.choose(s, "supporting", map_text(vec![label], sentence))
                {
                    return t;
                }
                if urgent(s, reference) {
                    let c = map_text(self.ends_lines(), sentence);
                    if let Some(t) = self.choose(s, "supporting", c) {
                        return t;
                    }
                }
                let c = self.supporting_lines();
                self.choose(s, "supporting", c)
                    .unwrap_or_else(|| hidden("supporting"))
            }
            "eyebrow" | "badge_label" => {
                if urgent(s, reference)
                    && let Some(t) = self.choose(s, "eyebrow", self.ends_lines())
                {
                    return t;
                }
                let c = self.eyebrows();
                self.choose(s, "eyebrow", c)
                    .unwrap_or_else(|| hidden("eyebrow"))
            }
            "cta" => {
                let c = lines(self.ctas(s), &[]);
                if let Some(t) = self.choose(s, "cta", c) {
                    return t;
                }
                // Nothing fitted or every line used a word the voice avoids: the plainest
                // calls, each checked like any other line.
                let plain = ["Shop now", "Shop", "Learn more", "Discover", "See more"];
                plain
                    .iter()
                    .map(|p| apply_case(s.case, p))
                    .find(|p| check_text(p, &s.key, f).is_ok())
                    .map_or_else(
                        || hidden("cta"),
                        |text| SlotText {
                            text,
                            role: "cta".into(),
                            shown: true,
                            writer: TEMPLATE.into(),
                            from: Vec::new(),
                        },
                    )
            }
            _ => {
                let c = vec![line(f.brand.clone(), &[Some("brand.name")])];
                self.choose(s, "brand", c)
                    .unwrap_or_else(|| hidden("brand"))
            }
        }
    }

    /// The first of the model's candidates for `s` that is grounded, new to this ad and
    /// fits the slot; the others are reported as refused.
    pub(super) fn model_line(&mut self, s: &SlotSpec) -> Option<SlotText> {
        let candidates = self.proposals.get(&s.key).cloned().unwrap_or_default();
        for c in candidates {
            let c = apply_case(s.case, &clean(&c));
            if c.is_empty() || self.used.contains(&c.to_lowercase()) {
                continue;
            }
            let why = match check_text(&c, &s.key, self.facts) {
                Err(reason) => Some(reason),
                Ok(_) if !self.fits(s, &c) => {
                    Some("does not fit the slot at the reference's type size".to_owned())
                }
                Ok(_) => None,
            };
            match why {
                None => {
                    return Some(SlotText {
                        text: c,
                        role: s.role.clone(),
                        shown: true,
                        writer: "llm".into(),
                        from: Vec::new(),
                    });
                }
                Some(reason) => self.refused.push(Refusal {
                    slot: s.key.clone(),
                    text: c,
                    reason,
                    writer: "llm".into(),
                }),
            }
        }
        None
    }

    /// The review the quote, its author and the rating show (one for all three).
    pub(super) fn review_index(&mut self) -> Option<usize> {
        if self.review.is_none() && !self.facts.reviews.is_empty() {
            // The best-rated review, the hash choosing among equals.
            let best = self
                .facts
                .reviews
                .iter()
                .map(|r| r.rating.unwrap_or(0.0))
                .fold(f64::MIN, f64::max);
            let top: Vec<usize> = (0..self.facts.reviews.len())
                .filter(|i| self.facts.reviews[*i].rating.unwrap_or(0.0) == best)
                .collect();
            self.review = Some(top[(self.seed % top.len() as u64) as usize]);
        }
        self.review
    }
}

//! The candidate lines of the free roles: headlines in the reference's structure, offers'
//! end dates, supporting lines, eyebrows and calls to action of the reference's kind.

use super::*;

impl State<'_> {
    /// A headline in the reference's structure.
    pub(super) fn headline(
        &mut self,
        s: &SlotSpec,
        all: &[SlotSpec],
        reference: &Reference,
        role: &str,
    ) -> SlotText {
        let f = self.facts;
        let refw = s.words.as_deref().unwrap_or("").trim().to_owned();
        let name = &f.name;
        // Each fact as the headline says it, with its input's path.
        let benefits: Vec<(String, Option<String>)> = f
            .benefits
            .iter()
            .filter(|b| !self.used.iter().any(|u| u.contains(&b.to_lowercase())))
            .map(|b| {
                (
                    strip_stop(b).to_owned(),
                    f.field(&["product.details.benefits"], b),
                )
            })
            .collect();
        let pains: Vec<(String, Option<String>)> = f
            .pains
            .iter()
            .map(|p| {
                (
                    lower_first(strip_stop(p)),
                    f.field(
                        &[
                            "audience.details.pain_points",
                            "audience.details.pain_point",
                        ],
                        p,
                    ),
                )
            })
            .collect();
        let motives: Vec<(String, Option<String>)> = f
            .motivations
            .iter()
            .map(|m| {
                (
                    strip_stop(m).to_owned(),
                    f.field(
                        &[
                            "audience.details.motivations",
                            "audience.details.motivation",
                        ],
                        m,
                    ),
                )
            })
            .collect();
        let who = (!f.audience.is_empty() && f.audience.chars().count() <= 28)
            .then(|| lower_first(&f.audience));
        let (product, audience) = (Some("product.name"), Some("audience.name"));
        // A phrase the prompt quotes is the headline, as written.
        if let Some(q) = quoted(&f.prompt)
            && let Some(t) = self.choose_as_given(s, role, vec![line(q, &[Some("prompt")])])
        {
            return t;
        }
        let mut c: Vec<Line> = Vec::new();
        let question = refw.ends_with('?');
        let first = refw.split_whitespace().next().unwrap_or("").to_lowercase();
        let imperative = IMPERATIVES.contains(&first.as_str());
        let list_title = reference.format.as_deref() == Some("listicle")
            || all.iter().any(|x| x.role == "list_item");
        if question {
            for (p, from) in &pains {
                let from = [from.as_deref()];
                c.push(line(format!("Tired of {p}?"), &from));
                c.push(line(format!("Still putting up with {p}?"), &from));
            }
            // Motivations are things one is ready for; benefits are often not ("Ready in
            // a minute"), so they make no question of their own.
            for (m, from) in &motives {
                c.push(line(
                    format!("Ready for {}?", lower_first(m)),
                    &[from.as_deref()],
                ));
            }
            c.push(line(format!("Have you tried {name}?"), &[product]));
            c.push(line(format!("Why {name}?"), &[product]));
        } else if list_title {
            c.push(line(format!("Why people love {name}"), &[product]));
            c.push(line(format!("Reasons to love {name}"), &[product]));
            c.push(line(format!("What makes {name} different"), &[product]));
            if let Some(w) = &who {
                c.push(line(
                    format!("Why {w} switch to {name}"),
                    &[audience, product],
                ));
            }
            c.push(line(format!("The {name} difference"), &[product]));
        } else if imperative {
            for (p, from) in &pains {
                c.push(line(format!("Say goodbye to {p}"), &[from.as_deref()]));
            }
            for (m, from) in &motives {
                let from = [from.as_deref()];
                c.push(line(format!("Wake up to {}", lower_first(m)), &from));
                c.push(line(format!("Choose {}", lower_first(m)), &from));
            }
            for l in [
                format!("Try {name}"),
                format!("Meet {name}"),
                format!("Switch to {name}"),
                format!("Treat yourself to {name}"),
            ] {
                c.push(line(l, &[product]));
            }
        } else {
            for (b, from) in &benefits {
                c.push(line(sentence(b), &[from.as_deref()]));
                c.push(line(
                    format!("{name}. {}", sentence(b)),
                    &[product, from.as_deref()],
                ));
            }
            for (p, from) in &pains {
                let from = [from.as_deref()];
                c.push(line(format!("No more {p}."), &from));
                c.push(line(format!("Say goodbye to {p}."), &from));
            }
            for (m, from) in &motives {
                c.push(line(
                    format!("{}, made easy.", capitalise(m)),
                    &[from.as_deref()],
                ));
            }
            c.push(line(format!("Meet {name}."), &[product]));
            if let Some(w) = &who {
                c.push(line(format!("Made for {w}."), &[audience]));
                c.push(line(format!("{name}, for {w}"), &[product, audience]));
            }
            c.push(line(format!("Your new favourite: {name}"), &[product]));
        }
        if !list_title {
            let about = crate::generate::voice::About {
                benefit: benefits.first().map(|b| b.0.as_str()),
                motive: motives.first().map(|m| m.0.as_str()),
                who: who.as_deref(),
            };
            let own = f.tone.headlines(name, &about, question, imperative);
            self.toned
                .extend(own.iter().map(|l| apply_case(s.case, l).to_lowercase()));
            // A tone's line may say any of these.
            let from = [
                product,
                benefits.first().and_then(|b| b.1.as_deref()),
                motives.first().and_then(|m| m.1.as_deref()),
                who.as_ref().and(audience),
            ];
            c.extend(lines(own, &from));
        }
        if c.is_empty() {
            c.push(line(format!("Meet {name}."), &[product]));
        }
        if let Some(t) = self.choose(s, role, c) {
            return t;
        }
        // The product's name, unless the voice avoids a word of it too.
        let text = apply_case(s.case, name);
        let shown = check_text(&text, &s.key, f).is_ok();
        SlotText {
            text: if shown { text } else { String::new() },
            role: role.to_owned(),
            shown,
            writer: TEMPLATE.into(),
            from: if shown {
                vec!["product.name".to_owned()]
            } else {
                Vec::new()
            },
        }
    }

    /// Lines that say when the product's offer ends (`Ends June 30`), naming the offer
    /// unless a slot already states it; none when it has no end date, or it was said.
    pub(super) fn ends_lines(&self) -> Vec<Line> {
        let f = self.facts;
        let (Some(o), Some(e)) = (&f.offer, &f.offer_ends) else {
            return Vec::new();
        };
        if self.ends_shown {
            return Vec::new();
        }
        let ends = Some("product.details.offer.ends_at");
        if self.own_offer_shown {
            return lines(
                [
                    format!("Ends {e}"),
                    format!("Offer ends {e}"),
                    format!("Until {e}"),
                ],
                &[ends],
            );
        }
        let offer = f.field(&["product.details.offer"], o);
        let from = [offer.as_deref(), ends];
        shorter(o)
            .iter()
            .flat_map(|cut| {
                let cut = strip_stop(cut);
                [format!("{cut}, until {e}"), format!("{cut}. Ends {e}")]
            })
            .map(|l| line(l, &from))
            .collect()
    }

    /// Supporting lines: what the prompt asks to mention first, then the stat's label,
    /// the description, the benefits, the guarantee and shipping.
    pub(super) fn supporting_lines(&self) -> Vec<Line> {
        let f = self.facts;
        let mut base: Vec<Line> = Vec::new();
        if let Some(l) = &self.stat_label {
            base.extend(map_text(vec![l.clone()], sentence));
        }
        let pain = |p: &str| {
            f.field(
                &[
                    "audience.details.pain_points",
                    "audience.details.pain_point",
                ],
                p,
            )
        };
        for p in &f.pains {
            if let Some(m) = f.motivations.first() {
                let motive = f.field(
                    &[
                        "audience.details.motivations",
                        "audience.details.motivation",
                    ],
                    m,
                );
                base.push(line(
                    format!(
                        "Less {}, more {}.",
                        lower_first(strip_stop(p)),
                        lower_first(strip_stop(m))
                    ),
                    &[pain(p).as_deref(), motive.as_deref()],
                ));
            }
        }
        if let Some(d) = f
            .sources
            .iter()
            .find(|(p, _)| p == "product.description")
            .map(|(_, d)| clean(d))
        {
            base.extend(lines(
                shorter(&d).into_iter().map(|s| sentence(&s)),
                &[Some("product.description")],
            ));
        }
        let points = f.points();
        let point = |p: &str| f.field(&["product.details.benefits", "product.details.features"], p);
        let fresh: Vec<&String> = points
            .iter()
            .filter(|p| !self.used.iter().any(|u| u.contains(&p.to_lowercase())))
            .collect();
        if fresh.len() >= 2 {
            base.push(line(
                format!(
                    "{}. {}",
                    sentence(fresh[0]).trim_end_matches('.'),
                    sentence(fresh[1])
                ),
                &[point(fresh[0]).as_deref(), point(fresh[1]).as_deref()],
            ));
        }
        for p in fresh {
            base.push(line(sentence(p), &[point(p).as_deref()]));
        }
        if let Some(g) = &f.guarantee {
            base.push(line(sentence(g), &[Some("product.details.guarantee")]));
        }
        if let Some(s) = &f.shipping {
            base.push(line(sentence(s), &[Some("product.details.shipping")]));
        }
        if !f.audience.is_empty() {
            base.push(line(
                format!("Made for {}.", lower_first(&f.audience)),
                &[Some("audience.name")],
            ));
        }
        base.push(line(
            format!("Discover what makes {} different.", f.name),
            &[Some("product.name")],
        ));
        if f.mentions.is_empty() {
            return base;
        }
        let mut out = Vec::new();
        for m in &f.mentions {
            for b in &base {
                let mut from = vec!["prompt".to_owned()];
                from.extend(b.from.iter().cloned());
                out.push(Line {
                    text: format!("{} {}", sentence(m), b.text),
                    from,
                });
            }
            out.push(line(sentence(m), &[Some("prompt")]));
        }
        out
    }

    /// Short kickers: the offer, "New" for a launch, who it is for, the brand.
    pub(super) fn eyebrows(&self) -> Vec<Line> {
        let f = self.facts;
        let mut c = Vec::new();
        if let Some(d) = f.discount {
            c.push(line(format!("{d}% off"), &[Some(DISCOUNT_SOURCE)]));
        }
        if let Some(o) = &f.offer {
            let from = f.field(&["product.details.offer"], o);
            c.extend(lines(shorter(o), &[from.as_deref()]));
        }
        if let Some(o) = &f.prompt_offer {
            c.push(line(o.clone(), &[Some("prompt")]));
        }
        let p = f.prompt.to_lowercase();
        if ["launch", "new ", "introduc"].iter().any(|w| p.contains(w)) {
            c.push(line("New", &[Some("prompt")]));
        }
        if !f.audience.is_empty() {
            c.push(line(
                format!("For {}", lower_first(&f.audience)),
                &[Some("audience.name")],
            ));
        }
        c.push(line(f.brand.clone(), &[Some("brand.name")]));
        c.push(line(f.name.clone(), &[Some("product.name")]));
        c
    }

    /// Calls to action of the reference's kind.
    pub(super) fn ctas(&mut self, s: &SlotSpec) -> Vec<String> {
        let refw: String = s
            .words
            .as_deref()
            .unwrap_or("")
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ')
            .collect();
        let refw = refw.trim();
        let kinds: [&[&str]; 5] = [
            &[
                "Read more",
                "Learn more",
                "Find out more",
                "Find out how",
                "See how",
            ],
            &["Swipe up", "Swipe up to shop"],
            &["Try it", "Try it now", "Try it today"],
            &["Shop now", "Buy now", "Get yours", "Order now"],
            &["Discover more", "Explore now", "Find yours"],
        ];
        let mut c: Vec<String> = Vec::new();
        if self.offer_shown {
            c.extend(["Claim offer", "Get the deal"].map(str::to_owned));
        }
        let kind = kinds
            .iter()
            .find(|k| k.iter().any(|p| p.to_lowercase() == refw))
            .copied()
            .or_else(|| CTA_PHRASES.contains(&refw).then_some(kinds[3]));
        // The voice's own calls join the buying and exploring kinds (not a reading or
        // swiping call, whose meaning they would change).
        let toned: Vec<String> = self
            .facts
            .tone
            .ctas()
            .iter()
            .map(|p| (*p).to_owned())
            .collect();
        self.toned
            .extend(toned.iter().map(|l| apply_case(s.case, l).to_lowercase()));
        match kind {
            Some(k) => {
                // The reference's kind first; an offer's call only with an offer format.
                let buying = std::ptr::eq(k, kinds[3]) || std::ptr::eq(k, kinds[4]);
                let mut k: Vec<String> = k.iter().map(|p| (*p).to_owned()).collect();
                if self.offer_shown && refw.contains("shop") {
                    k.extend(c);
                }
                if buying {
                    k.extend(toned);
                }
                k
            }
            None => {
                c.extend(kinds[3].iter().map(|p| (*p).to_owned()));
                c.extend(toned);
                c
            }
        }
    }
}

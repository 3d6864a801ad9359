//! The words of a template's text slots, by role, from the job's facts ([`super::slots`]),
//! seeded by the job's inputs, the reference and the ad's version so a retried job writes
//! the same words.

use adforge_renderer::Renderer;

use super::{brand, copy, facts, fill, llm, slots};
use crate::blueprint;
use crate::protocol::GenerateAdJob;

/// The words of every text slot of `template` (written from `blueprint`), by role, from
/// `facts` ([`slots`]), measured with `renderer`.
pub fn blueprint_words(
    job: &GenerateAdJob,
    blueprint: &blueprint::Blueprint,
    template: &serde_json::Value,
    facts: &facts::Facts,
    renderer: &Renderer,
    model: Option<&dyn llm::SlotProposer>,
) -> slots::Written {
    let reference = slots::Reference {
        format: blueprint.format.map(str::to_owned),
        format_from: blueprint.format_from.to_owned(),
        words_read: blueprint.words_read,
    };
    template_words(job, template, &reference, facts, renderer, model)
}

/// The words of every text slot of `template` (a blueprint's or a design template's), by
/// role, from `facts` ([`slots`]), measured with `renderer`.
pub fn template_words(
    job: &GenerateAdJob,
    template: &serde_json::Value,
    reference: &slots::Reference,
    facts: &facts::Facts,
    renderer: &Renderer,
    model: Option<&dyn llm::SlotProposer>,
) -> slots::Written {
    let (heading, body) = brand::fonts(&job.brand.fonts);
    let specs = slots::specs(template, &heading, &body);
    let seed = copy_seed(&copy_seed_parts(job), &specs, reference);
    slots::write(&specs, facts, reference, seed, Some(renderer), model)
}

/// The facts with their slots named by template key (`badge_label`), as the report's slots
/// are, rather than by node name (`Badge Label`).
pub fn slot_keys(
    mut facts: Vec<crate::protocol::FactSource>,
    report: &crate::protocol::CopyReport,
) -> Vec<crate::protocol::FactSource> {
    for f in &mut facts {
        if let Some(s) = report
            .slots
            .iter()
            .find(|s| fill::display_name(&s.slot) == f.slot)
        {
            f.slot = s.slot.clone();
        }
    }
    facts
}

/// What the copy's hash covers of a job: the inputs the words come from and the ad's
/// version (a retried job writes the same words; a new version may write others).
fn copy_seed_parts(job: &GenerateAdJob) -> Vec<String> {
    vec![
        job.product.name.clone(),
        job.product.description.clone().unwrap_or_default(),
        job.product.details.to_string(),
        job.audience.name.clone(),
        job.audience.details.to_string(),
        job.brand.name.clone(),
        job.brand.details.to_string(),
        job.prompt.clone().unwrap_or_default(),
        serde_json::to_string(&job.variant).unwrap_or_default(),
        job.version.to_string(),
    ]
}

/// The seed of an ad's words: [`copy_seed_parts`], the reference's slots, words and format.
fn copy_seed(parts: &[String], specs: &[slots::SlotSpec], reference: &slots::Reference) -> u64 {
    let mut all: Vec<String> = parts.to_vec();
    for s in specs {
        all.push(format!(
            "{}:{}:{}:{}",
            s.key,
            s.role,
            s.words.as_deref().unwrap_or(""),
            s.lines
        ));
    }
    all.push(reference.format.clone().unwrap_or_default());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    copy::fnv1a(&refs)
}

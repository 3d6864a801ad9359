//! The Figma sync state an ad or a design template stores (`figma_sync`): the frame it
//! was last synced from, when, and what the import reported. The completion of either
//! (`image_ads::apply`, `design_templates::apply`) writes it in its transaction.

use adforge_worker::protocol::FigmaSynced;

use crate::resources::integrations::{FigmaImportReport, FigmaSyncState};

/// The stored sync state after `f` (design templates store theirs with it too).
pub fn next_state(before: Option<&str>, f: &FigmaSynced, now: &str) -> FigmaSyncState {
    let mut s: FigmaSyncState = before
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    s.file_name = Some(f.file_name.clone());
    s.file_version = Some(f.frame.file_version.clone());
    s.frame_hash = Some(f.frame.frame_hash.clone());
    s.last_modified = Some(f.last_modified.clone());
    s.synced_at = Some(now.to_owned());
    if !f.unchanged {
        if f.figma_render_url.is_some() {
            s.render_url = f.figma_render_url.clone();
        }
        s.report = serde_json::to_value(&f.report)
            .ok()
            .and_then(|v| serde_json::from_value::<FigmaImportReport>(v).ok());
    }
    s
}

//! The editor's static files, compiled in: its stylesheet and its ES modules (served as
//! `text/javascript`, which module scripts require; no build step, no bundler).

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::DashError;

const CSS: &str = include_str!("../../../../assets/dashboard/editor.css");

macro_rules! modules {
    ($($name:literal),* $(,)?) => {
        &[$(($name, include_str!(concat!("../../../../assets/dashboard/editor/", $name)))),*]
    };
}

/// Every module of `assets/dashboard/editor/`, by file name.
const MODULES: &[(&str, &str)] = modules![
    "main.js",
    "model.js",
    "history.js",
    "preview.js",
    "canvas.js",
    "layers.js",
    "panel.js",
    "paint.js",
    "dom.js",
];

/// GET /dashboard/assets/editor.css
pub async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        CSS,
    )
        .into_response()
}

/// GET /dashboard/assets/editor/{file}: one of [`MODULES`], else the 404 page.
pub async fn script(Path(file): Path<String>) -> Result<Response, DashError> {
    let (_, text) = MODULES
        .iter()
        .find(|(name, _)| *name == file)
        .ok_or(DashError::NotFound)?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        *text,
    )
        .into_response())
}

#[cfg(test)]
mod tests {
    /// Every module the editor imports is served (a new file must be added to MODULES).
    #[test]
    fn every_imported_module_is_served() {
        for (name, text) in super::MODULES {
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let target = line
                    .rsplit("from \"./")
                    .next()
                    .and_then(|r| r.split('"').next())
                    .unwrap_or("");
                assert!(
                    super::MODULES.iter().any(|(n, _)| *n == target),
                    "{name} imports {target}, which is not served"
                );
            }
        }
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../assets/dashboard/editor");
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            assert!(
                super::MODULES.iter().any(|(n, _)| *n == name),
                "{name} is in assets/dashboard/editor but not served"
            );
        }
    }
}

//! The curated font set (`assets/fonts`) and the font database built from it.
//!
//! Fonts come only from here, never from the system, so a render is the same on every
//! machine. With the default `bundled-fonts` feature the files are compiled into the binary;
//! [`FontLibrary::from_dir`] loads them from a folder instead.

use std::path::Path;
use std::sync::Arc;

use crate::Error;

/// Family used when a requested family is not in the library.
pub const DEFAULT_FAMILY: &str = "Inter";

/// The families of the bundled set a tree may name in `fontFamily` (what an editor
/// offers). The Arabic, Hebrew and emoji faces are left out: they are reached per glyph by
/// fallback, not chosen. A test checks each name against the bundled files.
pub const FAMILIES: &[&str] = &[
    "Inter",
    "Roboto",
    "Open Sans",
    "Lato",
    "League Spartan",
    "Bebas Neue",
    "Noto Sans",
    "Noto Serif Display",
    "EB Garamond",
    "DejaVu Sans",
];

/// A set of font files. Cheap to clone (the bytes are shared).
#[derive(Clone, Default)]
pub struct FontLibrary {
    files: Vec<(String, Arc<Vec<u8>>)>,
}

impl std::fmt::Debug for FontLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FontLibrary")
            .field("files", &self.files.len())
            .finish()
    }
}

#[cfg(feature = "bundled-fonts")]
macro_rules! bundled {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/fonts/", $path)) as &[u8])),*]
    };
}

#[cfg(feature = "bundled-fonts")]
const BUNDLED: &[(&str, &[u8])] = bundled![
    "bebas-neue/BebasNeue-Bold.otf",
    "bebas-neue/BebasNeue-Regular.otf",
    "dejavu/DejaVuSans-Bold.ttf",
    "dejavu/DejaVuSans.ttf",
    "eb-garamond/EBGaramond12-Bold.otf",
    "eb-garamond/EBGaramond12-Italic.otf",
    "eb-garamond/EBGaramond12-Regular.otf",
    "inter/Inter-Bold.otf",
    "inter/Inter-BoldItalic.otf",
    "inter/Inter-Italic.otf",
    "inter/Inter-Regular.otf",
    "inter/Inter-SemiBold.otf",
    "lato/Lato-Bold.ttf",
    "lato/Lato-Italic.ttf",
    "lato/Lato-Regular.ttf",
    "league-spartan/LeagueSpartan-Black.otf",
    "league-spartan/LeagueSpartan-Bold.otf",
    "league-spartan/LeagueSpartan-Regular.otf",
    "noto-color-emoji/NotoColorEmoji.ttf",
    "noto-sans/NotoSans-Bold.ttf",
    "noto-sans/NotoSans-Italic.ttf",
    "noto-sans/NotoSans-Regular.ttf",
    "noto-sans/NotoSansArabic-Bold.ttf",
    "noto-sans/NotoSansArabic-Regular.ttf",
    "noto-sans/NotoSansHebrew-Bold.ttf",
    "noto-sans/NotoSansHebrew-Regular.ttf",
    "noto-serif-display/NotoSerifDisplay-Bold.ttf",
    "noto-serif-display/NotoSerifDisplay-Italic.ttf",
    "noto-serif-display/NotoSerifDisplay-Regular.ttf",
    "open-sans/OpenSans-Bold.ttf",
    "open-sans/OpenSans-Italic.ttf",
    "open-sans/OpenSans-Regular.ttf",
    "open-sans/OpenSans-Semibold.ttf",
    "roboto/Roboto-Bold.ttf",
    "roboto/Roboto-BoldItalic.ttf",
    "roboto/Roboto-Italic.ttf",
    "roboto/Roboto-Medium.ttf",
    "roboto/Roboto-Regular.ttf",
];

impl FontLibrary {
    /// The fonts compiled into this binary from `assets/fonts`.
    #[cfg(feature = "bundled-fonts")]
    pub fn bundled() -> Self {
        Self {
            files: BUNDLED
                .iter()
                .map(|(name, bytes)| ((*name).to_owned(), Arc::new(bytes.to_vec())))
                .collect(),
        }
    }

    /// Loads every `.ttf`, `.otf` and `.ttc` file under `dir` (recursively, sorted by path so
    /// the database order, and with it fallback order, is deterministic).
    ///
    /// # Errors
    /// [`Error::Io`] when the folder or a file cannot be read.
    pub fn from_dir(dir: &Path) -> Result<Self, Error> {
        let mut paths = Vec::new();
        collect(dir, &mut paths)?;
        paths.sort();
        let mut files = Vec::new();
        for p in paths {
            let bytes = std::fs::read(&p).map_err(|source| Error::Io {
                path: p.clone(),
                source,
            })?;
            files.push((p.display().to_string(), Arc::new(bytes)));
        }
        Ok(Self { files })
    }

    /// Adds one font file.
    pub fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) {
        self.files.push((name.into(), Arc::new(bytes)));
    }

    /// Number of files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when there are no files.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub(crate) fn cosmic_db(&self) -> cosmic_text::fontdb::Database {
        let mut db = cosmic_text::fontdb::Database::new();
        for (_, bytes) in &self.files {
            db.load_font_source(cosmic_text::fontdb::Source::Binary(bytes.clone()));
        }
        db.set_sans_serif_family(DEFAULT_FAMILY);
        db.set_serif_family("Noto Serif Display");
        db
    }

    /// The same fonts as a usvg / resvg font database (for SVG images and comparisons).
    pub fn usvg_db(&self) -> resvg::usvg::fontdb::Database {
        let mut db = resvg::usvg::fontdb::Database::new();
        for (_, bytes) in &self.files {
            db.load_font_source(resvg::usvg::fontdb::Source::Binary(bytes.clone()));
        }
        db.set_sans_serif_family(DEFAULT_FAMILY);
        db.set_serif_family("Noto Serif Display");
        db
    }
}

fn collect(dir: &Path, out: &mut Vec<std::path::PathBuf>) -> Result<(), Error> {
    let rd = std::fs::read_dir(dir).map_err(|source| Error::Io {
        path: dir.to_owned(),
        source,
    })?;
    for entry in rd.flatten() {
        let p = entry.path();
        if p.is_dir() {
            collect(&p, out)?;
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e.to_ascii_lowercase().as_str(), "ttf" | "otf" | "ttc"))
        {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(all(test, feature = "bundled-fonts"))]
mod tests {
    use super::*;

    #[test]
    fn every_offered_family_is_bundled() {
        let db = FontLibrary::bundled().cosmic_db();
        let names: std::collections::HashSet<String> = db
            .faces()
            .flat_map(|f| f.families.iter().map(|(n, _)| n.clone()))
            .collect();
        for family in FAMILIES {
            assert!(names.contains(*family), "{family} is not in {names:?}");
        }
    }
}

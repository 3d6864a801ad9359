//! The items of a bulk import as read from a folder or a manifest (JSON lines or CSV),
//! each with the problem that keeps it from being imported as written.

use std::path::{Path, PathBuf};

use adforge_worker::IngestHints;
use adforge_worker::swipe::taxonomy::{AD_FORMATS, INDUSTRIES};

use crate::Error;

/// Where an item's image comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    Path(PathBuf),
    Url(String),
}

impl Locator {
    pub(super) fn text(&self) -> String {
        match self {
            Locator::Path(p) => p.display().to_string(),
            Locator::Url(u) => u.clone(),
        }
    }
}

/// One item of a folder or manifest.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Its place: the manifest line (from 1) or the file's place in the sorted folder.
    pub item: i64,
    pub locator: Locator,
    pub hints: IngestHints,
    /// Why it cannot be imported as written (a bad line, an unknown industry).
    pub problem: Option<String>,
}

/// The PNG, JPEG and WebP files of `folder`, by name.
///
/// # Errors
/// An unreadable folder.
pub fn folder_entries(folder: &Path) -> Result<Vec<Entry>, Error> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(folder)
        .map_err(|e| Error::Invalid(format!("cannot read --folder {}: {e}", folder.display())))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                matches!(
                    e.to_ascii_lowercase().as_str(),
                    "png" | "jpg" | "jpeg" | "webp"
                )
            })
        })
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .enumerate()
        .map(|(i, p)| Entry {
            item: i as i64 + 1,
            locator: Locator::Path(p),
            hints: IngestHints::default(),
            problem: None,
        })
        .collect())
}

/// The items of a manifest: JSON lines (`{"path"|"url", "industry"?, "ad_format"?,
/// "caption"?}`), or CSV with a header naming those columns (a `.csv` file, or one whose
/// first line does not start with `{`). Relative paths are relative to the manifest's
/// folder. A line that cannot be read becomes an item with its problem.
///
/// # Errors
/// An unreadable file, or a CSV header without `path` or `url`.
pub fn manifest_entries(file: &Path) -> Result<Vec<Entry>, Error> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::Invalid(format!("cannot read --manifest {}: {e}", file.display())))?;
    let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let is_csv = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        || !first.trim_start().starts_with('{');
    let mut out = Vec::new();
    if is_csv {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let header: Vec<String> = lines
            .next()
            .map(|(_, l)| {
                csv_fields(l)
                    .into_iter()
                    .map(|h| h.trim().to_ascii_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        let col = |name: &str| header.iter().position(|h| h == name);
        let (path_col, url_col) = (col("path"), col("url"));
        if path_col.is_none() && url_col.is_none() {
            return Err(Error::Invalid(format!(
                "{}: the CSV header must name a `path` or `url` column (and optionally industry, ad_format, caption); it has {header:?}",
                file.display()
            )));
        }
        let (industry, ad_format, caption) = (col("industry"), col("ad_format"), col("caption"));
        for (n, line) in lines {
            let f = csv_fields(line);
            let get = |c: Option<usize>| {
                c.and_then(|c| f.get(c))
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
            };
            out.push(entry(
                n as i64 + 1,
                &dir,
                get(path_col),
                get(url_col),
                IngestHints {
                    industry: get(industry),
                    ad_format: get(ad_format),
                    caption: get(caption),
                },
            ));
        }
    } else {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Line {
            path: Option<String>,
            url: Option<String>,
            industry: Option<String>,
            ad_format: Option<String>,
            caption: Option<String>,
        }
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let item = n as i64 + 1;
            match serde_json::from_str::<Line>(line) {
                Ok(l) => out.push(entry(
                    item,
                    &dir,
                    l.path,
                    l.url,
                    IngestHints {
                        industry: l.industry,
                        ad_format: l.ad_format,
                        caption: l.caption,
                    },
                )),
                Err(e) => out.push(Entry {
                    item,
                    locator: Locator::Path(PathBuf::from(truncate(line, 200))),
                    hints: IngestHints::default(),
                    problem: Some(format!(
                        "line {item} is not a JSON object of path or url, industry, ad_format, caption: {e}"
                    )),
                }),
            }
        }
    }
    Ok(out)
}

pub(super) fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// A checked item: exactly one of path and url, known taxonomy values, a caption of at most
/// 1,000 characters.
fn entry(
    item: i64,
    dir: &Path,
    path: Option<String>,
    url: Option<String>,
    hints: IngestHints,
) -> Entry {
    let mut problem = None;
    let locator = match (path, url) {
        (Some(p), None) => Locator::Path(dir.join(p)),
        (None, Some(u)) => Locator::Url(u),
        (p, u) => {
            problem = Some(format!("line {item} must give exactly one of path and url"));
            Locator::Path(PathBuf::from(p.or(u).unwrap_or_default()))
        }
    };
    let check = |field: &str, v: &Option<String>, allowed: &[&str]| {
        v.as_ref()
            .filter(|v| !allowed.contains(&v.as_str()))
            .map(|v| {
                format!(
                    "{field} `{v}` is not a value of {field}; use one of {}",
                    allowed.join(", ")
                )
            })
    };
    problem = problem
        .or_else(|| check("industry", &hints.industry, &INDUSTRIES.map(|(k, _)| k)))
        .or_else(|| check("ad_format", &hints.ad_format, &AD_FORMATS.map(|(k, _)| k)))
        .or_else(|| {
            hints
                .caption
                .as_ref()
                .filter(|c| c.chars().count() > 1000)
                .map(|_| "caption must be at most 1000 characters".to_string())
        });
    Entry {
        item,
        locator,
        hints,
        problem,
    }
}

/// The fields of one CSV line (RFC 4180 quotes; no line breaks inside a field).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    out.push(field);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_read_json_lines_and_csv_with_their_problems() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("m.jsonl");
        std::fs::write(
            &jsonl,
            "{\"path\": \"a.png\", \"industry\": \"food_beverages_tobacco\"}\n\n{\"url\": \"https://example.com/b.jpg\", \"caption\": \"Two shoes\"}\nnot json\n{\"path\": \"c.png\", \"url\": \"https://example.com/c.png\"}\n{\"path\": \"d.png\", \"ad_format\": \"poster\"}\n",
        )
        .unwrap();
        let e = manifest_entries(&jsonl).unwrap();
        assert_eq!(e.len(), 5);
        assert_eq!(e[0].locator, Locator::Path(dir.path().join("a.png")));
        assert_eq!(e[0].item, 1);
        assert!(e[0].problem.is_none(), "{:?}", e[0].problem);
        assert_eq!(e[1].item, 3);
        assert_eq!(
            e[1].locator,
            Locator::Url("https://example.com/b.jpg".into())
        );
        assert_eq!(e[1].hints.caption.as_deref(), Some("Two shoes"));
        assert!(
            e[2].problem
                .as_deref()
                .unwrap()
                .contains("line 4 is not a JSON object")
        );
        assert!(
            e[3].problem
                .as_deref()
                .unwrap()
                .contains("exactly one of path and url")
        );
        assert!(
            e[4].problem
                .as_deref()
                .unwrap()
                .contains("ad_format `poster`")
        );

        let csv = dir.path().join("m.csv");
        std::fs::write(
            &csv,
            "url,industry,caption\nhttps://example.com/x.png,,\"A caption, with a comma and \"\"quotes\"\"\"\n/abs/y.png,nope,\n",
        )
        .unwrap();
        let e = manifest_entries(&csv).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0].hints.caption.as_deref(),
            Some("A caption, with a comma and \"quotes\"")
        );
        assert!(e[0].hints.industry.is_none());
        assert!(e[1].problem.as_deref().unwrap().contains("industry `nope`"));
        std::fs::write(&csv, "file,caption\nx.png,y\n").unwrap();
        assert!(manifest_entries(&csv).is_err());
    }
}

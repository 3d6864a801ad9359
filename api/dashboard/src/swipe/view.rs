//! What the swipe page was asked for ([`View`], from its query) and the filter form.

use super::*;

/// What the swipe page was asked for.
pub(super) struct View {
    pub(super) text: Option<String>,
    pub(super) like: Option<String>,
    pub(super) archived: bool,
    pub(super) after: Option<String>,
    /// (dimension, chosen values)
    pub(super) chosen: Vec<(&'static str, Vec<String>)>,
}

impl View {
    pub(super) fn of(q: &Form) -> Self {
        let nonempty = |k: &str| {
            q.get(k)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        View {
            text: nonempty("q"),
            like: nonempty("like"),
            archived: q.get("archived") == Some("true"),
            after: nonempty("starting_after"),
            chosen: swipe_files::FACETS
                .iter()
                .map(|d| {
                    (
                        *d,
                        q.all(d)
                            .into_iter()
                            .filter(|v| !v.is_empty())
                            .map(str::to_string)
                            .collect(),
                    )
                })
                .collect(),
        }
    }

    pub(super) fn values(&self, dim: &str) -> Vec<String> {
        self.chosen
            .iter()
            .find(|(d, _)| *d == dim)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }

    /// The designs this view lists, as the API's typed filter.
    pub(super) fn filter(&self) -> SwipeFilter {
        let mut industry = self.values("industry");
        industry.dedup();
        SwipeFilter {
            industry,
            ad_format: self.values("ad_format"),
            aspect_ratio: self.values("aspect_ratio"),
            archived: self.archived,
            ..SwipeFilter::visible()
        }
    }

    /// `limit` designs from this view's cursor, with every facet.
    pub(super) fn page(&self, limit: i64) -> ListParams {
        ListParams {
            limit,
            starting_after: self.after.clone(),
            ids: None,
            facets: swipe_files::FACETS.to_vec(),
        }
    }

    /// This view's own URL with `starting_after` replaced.
    pub(super) fn url_after(&self, after: &str) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        if self.archived {
            s.append_pair("archived", "true");
        }
        for (d, vs) in &self.chosen {
            for v in vs {
                s.append_pair(d, v);
            }
        }
        s.append_pair("starting_after", after);
        format!("/dashboard/swipe?{}", s.finish())
    }

    pub(super) fn many(&self, dim: &str) -> Option<OneOrMany> {
        let v = self.values(dim);
        (!v.is_empty()).then_some(OneOrMany::Many(v))
    }

    pub(super) fn search_body(&self) -> Option<SearchBody> {
        if self.text.is_none() && self.like.is_none() {
            return None;
        }
        Some(SearchBody {
            query: self.text.clone(),
            swipe_file_id: if self.text.is_none() {
                self.like.clone()
            } else {
                None
            },
            image_url: None,
            industry: self.many("industry"),
            ad_format: self.many("ad_format"),
            aspect_ratio: self.many("aspect_ratio"),
            data_source_ids: None,
            include_own: None,
            limit: Some(PAGE_SIZE),
            design_pack_id: None,
            min_similarity: None,
        })
    }
}

pub(super) fn filter_form(
    v: &View,
    facets: Option<
        &std::collections::BTreeMap<String, Vec<adforge_api::http::envelope::FacetValue>>,
    >,
) -> String {
    let mut groups = String::new();
    for dim in swipe_files::FACETS {
        let chosen = v.values(dim);
        let mut options: Vec<(String, Option<i64>)> = facets
            .and_then(|f| f.get(dim))
            .map(|vals| {
                vals.iter()
                    .map(|fv| (fv.value.clone(), Some(fv.count)))
                    .collect()
            })
            .unwrap_or_default();
        for c in &chosen {
            if !options.iter().any(|(o, _)| o == c) {
                options.push((c.clone(), None));
            }
        }
        let mut boxes = String::new();
        for (val, count) in &options {
            let id = format!(
                "f-{dim}-{}",
                val.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
            );
            let _ = write!(
                boxes,
                r#"<label class="check" for="{id}"><input type="checkbox" id="{id}" name="{dim}" value="{v}"{checked}> {name}{count}</label>"#,
                v = esc(val),
                checked = if chosen.contains(val) { " checked" } else { "" },
                name = esc(&facet_name(dim, val)),
                count = count
                    .map(|c| format!(r#" <span class="hint">({c})</span>"#))
                    .unwrap_or_default(),
            );
        }
        if boxes.is_empty() {
            boxes.push_str(r#"<p class="hint">No values yet.</p>"#);
        }
        let legend = match dim {
            "industry" => "Industry",
            "ad_format" => "Ad format",
            _ => "Aspect ratio",
        };
        let _ = write!(
            groups,
            r#"<fieldset class="facet"><legend>{legend}</legend>{boxes}</fieldset>"#
        );
    }
    format!(
        r#"<form method="get" action="/dashboard/swipe" class="card swipe-filters" role="search" aria-label="Search the swipe file">
<label for="swipe-q">Search by words</label>
<div class="search-row"><input type="search" id="swipe-q" name="q" value="{q}" placeholder="e.g. coffee, sale"><button type="submit">Search</button></div>
{like}<details class="facets-toggle"{open}><summary>Filters</summary><div class="facets">{groups}</div>
<label class="check" for="f-archived"><input type="checkbox" id="f-archived" name="archived" value="true"{arch}> Show archived designs only</label>
<button type="submit" class="secondary">Apply filters</button></details>
<p><a href="/dashboard/swipe">Clear search and filters</a></p></form>"#,
        q = esc(v.text.as_deref().unwrap_or("")),
        like = v
            .like
            .as_ref()
            .filter(|_| v.text.is_none())
            .map(|l| format!(r#"<input type="hidden" name="like" value="{}">"#, esc(l)))
            .unwrap_or_default(),
        arch = if v.archived { " checked" } else { "" },
        // Collapsed on a phone unless a filter is chosen (the CSS always shows it on a
        // desktop), so the chosen filters are never hidden.
        open = if v.archived || swipe_files::FACETS.iter().any(|d| !v.values(d).is_empty()) {
            " open"
        } else {
            ""
        },
    )
}

//! HTML building: plain Rust strings, with every dynamic value passed through [`esc`].
//!
//! Why no template crate: the pages are a handful of tables and forms; `format!` with one
//! escaping helper keeps them readable, costs no build time on a 2-core machine, and keeps
//! the escaping rule in one place a reviewer can grep for (every `{}` of page text is
//! either an `esc(..)` result or a fragment built by these helpers). `maud` was the
//! alternative (escaping by default), rejected for its proc-macro build cost and because
//! nothing here needs its control flow.

use std::fmt::Write;

use crate::members::SessionMember;

/// Escapes text for HTML element content and double- or single-quoted attributes.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The hidden CSRF field every form of a signed-in page carries.
pub fn csrf_field(token: &str) -> String {
    format!(
        r#"<input type="hidden" name="csrf" value="{}">"#,
        esc(token)
    )
}

/// A one-button form that POSTs to `action` (revoke, rotate, sign out).
pub fn post_button(action: &str, csrf: &str, label: &str, class: &str, aria: &str) -> String {
    format!(
        r#"<form method="post" action="{}" class="inline">{}<button type="submit" class="{}" aria-label="{}">{}</button></form>"#,
        esc(action),
        csrf_field(csrf),
        esc(class),
        esc(aria),
        esc(label)
    )
}

/// A short, readable UTC time from a stored timestamp (`2026-11-23 03:04 UTC`).
pub fn when(ts: &str) -> String {
    if ts.len() >= 16 {
        format!("{} {} UTC", &ts[..10], &ts[11..16])
    } else {
        ts.to_string()
    }
}

/// Navigation entries: (path, label).
const NAV: &[(&str, &str)] = &[
    ("/dashboard/ads", "Image ads"),
    ("/dashboard/batches", "Batches"),
    ("/dashboard/swipe", "Swipe file"),
    ("/dashboard/packs", "Packs"),
    ("/dashboard/templates", "Templates"),
    ("/dashboard/cutouts", "Cut-outs"),
    ("/dashboard/figma", "Figma"),
    ("/dashboard/brands", "Brands"),
    ("/dashboard/keys", "API keys"),
    ("/dashboard/wallet", "Wallet"),
    ("/dashboard/members", "Members"),
    ("/dashboard/sessions", "Sessions"),
];

/// Navigation entries only the service's operators see.
const OPERATOR_NAV: &[(&str, &str)] = &[("/dashboard/imports", "Imports")];

/// A whole page. `member` is `None` on sign-in pages (no navigation).
pub fn page(title: &str, member: Option<&SessionMember>, active: &str, body: &str) -> String {
    page_with_head(title, member, active, body, "")
}

/// [`page`] with extra elements in `<head>` (already HTML: a `<meta http-equiv=refresh>`).
pub fn page_with_head(
    title: &str,
    member: Option<&SessionMember>,
    active: &str,
    body: &str,
    head: &str,
) -> String {
    let mut header = String::new();
    if let Some(m) = member {
        let mut nav = String::new();
        let operator: &[(&str, &str)] = if m.is_operator { OPERATOR_NAV } else { &[] };
        for &(path, label) in NAV.iter().chain(operator) {
            let current = if path == active {
                r#" aria-current="page""#
            } else {
                ""
            };
            let _ = write!(nav, r#"<li><a href="{path}"{current}>{label}</a></li>"#);
        }
        let org = if m.orgs.len() > 1 {
            let mut options = String::new();
            for (id, name) in &m.orgs {
                let sel = if *id == m.org_id { " selected" } else { "" };
                let _ = write!(
                    options,
                    r#"<option value="{}"{sel}>{}</option>"#,
                    esc(id),
                    esc(name)
                );
            }
            format!(
                r#"<form method="post" action="/dashboard/org" class="org-switch">{}<label for="org-switch" class="sr-only">Organisation</label><select id="org-switch" name="org">{options}</select><button type="submit" class="small secondary">Switch</button></form>"#,
                csrf_field(&m.csrf_token)
            )
        } else {
            format!(
                r#"<span class="org" title="Organisation">{}</span>"#,
                esc(&m.org_name)
            )
        };
        let _ = write!(
            header,
            r#"<header class="top"><div class="brand"><a href="/dashboard">adforge</a>{org}</div>
<nav aria-label="Dashboard"><ul>{nav}</ul></nav>
<div class="who"><span>{name}{op}</span>{signout}</div></header>"#,
            name = esc(&m.name),
            op = if m.is_operator {
                r#" <span class="badge">operator</span>"#
            } else {
                ""
            },
            signout = post_button(
                "/dashboard/sign-out",
                &m.csrf_token,
                "Sign out",
                "link",
                "Sign out"
            ),
        );
    } else {
        header.push_str(
            r#"<header class="top plain"><div class="brand"><a href="/dashboard">adforge</a><span class="org">dashboard</span></div></header>"#,
        );
    }
    format!(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} · adforge</title>
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
{head}</head><body>
<a class="skip" href="#main">Skip to content</a>
{header}
<main id="main" tabindex="-1">
<h1>{title}</h1>
{body}
</main>
</body></html>"##,
        title = esc(title),
    )
}

/// A notice box: `kind` is `ok`, `warn` or `error` (errors are announced by screen
/// readers as alerts).
pub fn notice(kind: &str, html: &str) -> String {
    let role = if kind == "error" { "alert" } else { "status" };
    format!(r#"<div class="notice {kind}" role="{role}">{html}</div>"#)
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            super::esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}

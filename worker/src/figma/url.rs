//! Which frame a request names: a Figma link (`https://www.figma.com/design/KEY/Name?node-id=1-2`,
//! also `/file/`, `/proto/`, `/board/` and branch links) or a file key and node id given
//! apart. Checked by the API before anything is queued, so a bad link is a 400 that says
//! what to send.

/// A frame of a Figma file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    /// The file key (the branch's key for a branch link).
    pub file_key: String,
    /// The node id in the REST API's form, `1:2` (links write it `1-2`).
    pub node_id: String,
}

impl FrameRef {
    /// The frame's link, as the API stores it in `reference_ad_url`.
    pub fn url(&self) -> String {
        format!(
            "https://www.figma.com/design/{}?node-id={}",
            self.file_key,
            self.node_id.replace(':', "-")
        )
    }
}

/// Longest file key or node id accepted.
const MAX_PART: usize = 128;

/// Checks a file key: letters and digits, 1 to 128 of them.
///
/// # Errors
/// What is wrong, for the client.
pub fn check_file_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_PART || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!(
            "`{}` is not a Figma file key (the letters and digits after /design/ or /file/ in the file's link)",
            shorten(key)
        ));
    }
    Ok(())
}

/// Normalises a node id: `1-2` and `1%3A2` become `1:2`. Ids of nodes inside instances
/// (`I1:2;3:4`) are accepted too.
///
/// # Errors
/// What is wrong, for the client.
pub fn node_id(raw: &str) -> Result<String, String> {
    let decoded = raw.replace("%3A", ":").replace("%3a", ":");
    let id = if decoded.contains(':') {
        decoded
    } else {
        decoded.replacen('-', ":", 1)
    };
    let ok = !id.is_empty()
        && id.len() <= MAX_PART
        && id.contains(':')
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, ':' | ';' | 'I'));
    if !ok {
        return Err(format!(
            "`{}` is not a Figma node id (like 1:2, or 1-2 as links write it)",
            shorten(raw)
        ));
    }
    Ok(id)
}

/// Reads a Figma link.
///
/// # Errors
/// What is wrong and what to send instead, for the client.
pub fn parse_link(link: &str) -> Result<FrameRef, String> {
    let rest = link
        .trim()
        .strip_prefix("https://")
        .ok_or("must be an https://www.figma.com/… link")?;
    let (host, path_and_query) = rest.split_once('/').unwrap_or((rest, ""));
    let host = host.to_ascii_lowercase();
    if host != "www.figma.com" && host != "figma.com" {
        return Err(format!(
            "must be a link to figma.com, not to `{}`",
            shorten(&host)
        ));
    }
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let query = query.split('#').next().unwrap_or_default();
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let file_key = match segments.as_slice() {
        [kind, _, "branch", branch, ..] if is_file_kind(kind) => *branch,
        [kind, key, ..] if is_file_kind(kind) => *key,
        _ => {
            return Err(
                "is not a link to a Figma file: it should look like https://www.figma.com/design/FILE_KEY/Name?node-id=1-2"
                    .into(),
            );
        }
    };
    check_file_key(file_key)?;
    let node = query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "node-id")
        .map(|(_, v)| v)
        .ok_or(
            "has no node-id: in Figma, select the frame, right-click and choose Copy link to selection",
        )?;
    Ok(FrameRef {
        file_key: file_key.to_owned(),
        node_id: node_id(node)?,
    })
}

fn is_file_kind(kind: &str) -> bool {
    matches!(kind, "design" | "file" | "proto" | "board")
}

fn shorten(s: &str) -> String {
    s.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_link_form() {
        let want = FrameRef {
            file_key: "AbC123xyz".into(),
            node_id: "1:2".into(),
        };
        for link in [
            "https://www.figma.com/design/AbC123xyz/My-Ad?node-id=1-2",
            "https://www.figma.com/file/AbC123xyz/My-Ad?type=design&node-id=1%3A2&mode=dev",
            "https://figma.com/proto/AbC123xyz/My-Ad?node-id=1-2&t=x#frag",
            "https://www.figma.com/design/Parent9/branch/AbC123xyz/My-Ad?node-id=1-2",
        ] {
            assert_eq!(parse_link(link).unwrap(), want, "{link}");
        }
        assert_eq!(
            want.url(),
            "https://www.figma.com/design/AbC123xyz?node-id=1-2"
        );
        assert_eq!(node_id("I12:3;45:6").unwrap(), "I12:3;45:6");
    }

    #[test]
    fn bad_links_say_what_to_send() {
        for (link, says) in [
            ("http://www.figma.com/design/K/N?node-id=1-2", "https://"),
            ("https://evil.example/design/K/N?node-id=1-2", "figma.com"),
            ("https://www.figma.com/design/K/N", "Copy link to selection"),
            (
                "https://www.figma.com/community/file/1",
                "not a link to a Figma file",
            ),
            ("https://www.figma.com/design/K!/N?node-id=1-2", "file key"),
            ("https://www.figma.com/design/K/N?node-id=abc", "node id"),
        ] {
            let e = parse_link(link).unwrap_err();
            assert!(e.contains(says), "{link}: {e}");
        }
    }
}

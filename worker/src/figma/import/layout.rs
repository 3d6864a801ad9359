//! Frames and texts of an import: auto layout and sizing, and what of a text's style the
//! renderer does not draw.

use serde_json::{Map, Value};

use super::{Importer, aside, num, str_of};

impl Importer<'_> {
    /// Auto layout and frame sizing.
    pub(super) fn frame(
        &mut self,
        id: &str,
        f: &Map<String, Value>,
        n: &mut Map<String, Value>,
        is_root: bool,
    ) {
        let mode = str_of(f, "layoutMode");
        match mode {
            "" | "NONE" | "HORIZONTAL" | "VERTICAL" => {}
            other => {
                n.insert("layoutMode".into(), Value::from("NONE"));
                aside(n, "layoutMode", Value::from(other));
                self.unmapped(
                    id,
                    f,
                    &format!("layoutMode {other}"),
                    "the children stay where Figma placed them; they do not re-flow",
                );
            }
        }
        if matches!(mode, "HORIZONTAL" | "VERTICAL") {
            // The frame's own sizing: REST's layoutSizing* when given, else the axis modes.
            let (primary, counter) = (
                str_of(f, "primaryAxisSizingMode"),
                str_of(f, "counterAxisSizingMode"),
            );
            let sizing = |m: &str| if m == "AUTO" { "HUG" } else { "FIXED" };
            let (h_mode, v_mode) = if mode == "HORIZONTAL" {
                (sizing(primary), sizing(counter))
            } else {
                (sizing(counter), sizing(primary))
            };
            if !f.contains_key("layoutSizingHorizontal") || is_root {
                n.insert("layoutSizingHorizontal".into(), Value::from(h_mode));
            }
            if !f.contains_key("layoutSizingVertical") || is_root {
                n.insert("layoutSizingVertical".into(), Value::from(v_mode));
            }
            if is_root {
                // The ad is the frame's size.
                n.insert("layoutSizingHorizontal".into(), Value::from("FIXED"));
                n.insert("layoutSizingVertical".into(), Value::from("FIXED"));
            }
            if f.get("itemReverseZIndex").and_then(Value::as_bool) == Some(true) {
                self.unmapped(
                    id,
                    f,
                    "itemReverseZIndex",
                    "children are stacked first-on-top in Figma; drawn last-on-top",
                );
            }
            if f.get("strokesIncludedInLayout").and_then(Value::as_bool) == Some(true) {
                self.unmapped(
                    id,
                    f,
                    "strokesIncludedInLayout",
                    "strokes do not take space in the layout",
                );
            }
            if str_of(f, "counterAxisAlignContent") == "SPACE_BETWEEN" {
                self.unmapped(
                    id,
                    f,
                    "counterAxisAlignContent SPACE_BETWEEN",
                    "wrapped rows are packed at the start",
                );
            }
            if str_of(f, "primaryAxisAlignItems") == "SPACE_BETWEEN"
                && f.get("layoutWrap").and_then(Value::as_str) == Some("WRAP")
            {
                // Supported as is; nothing to report.
            }
        }
        for key in ["minWidth", "maxWidth", "minHeight", "maxHeight"] {
            if f.get(key).is_some_and(|v| !v.is_null()) {
                self.unmapped(
                    id,
                    f,
                    key,
                    "not enforced: the node keeps the size Figma laid it out at",
                );
            }
        }
        if is_root {
            n.remove("layoutPositioning");
            n.remove("layoutGrow");
            n.remove("layoutAlign");
            n.insert("clipsContent".into(), Value::Bool(true));
        }
    }

    /// TEXT: `characters`, `style` and the per-range overrides are the tree's own fields;
    /// what the renderer does not draw is reported.
    pub(super) fn text(&mut self, id: &str, f: &Map<String, Value>) {
        let style = f.get("style").and_then(Value::as_object);
        let get = |k: &str| style.and_then(|s| s.get(k));
        for key in ["paragraphSpacing", "paragraphIndent", "listSpacing"] {
            if num(get(key)).is_some_and(|v| v != 0.0) {
                self.unmapped(
                    id,
                    f,
                    key,
                    "not drawn: paragraphs are set without extra spacing or indent",
                );
            }
        }
        if get("opentypeFlags")
            .and_then(Value::as_object)
            .is_some_and(|o| !o.is_empty())
        {
            self.unmapped(
                id,
                f,
                "opentypeFlags",
                "OpenType feature toggles are not applied",
            );
        }
        if f.get("lineTypes")
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|t| t.as_str().is_some_and(|t| t != "NONE")))
        {
            self.unmapped(
                id,
                f,
                "lineTypes",
                "list markers (bullets, numbers) are not drawn",
            );
        }
        if get("textCase")
            .and_then(Value::as_str)
            .is_some_and(|c| c.starts_with("SMALL_CAPS"))
        {
            self.unmapped(id, f, "textCase SMALL_CAPS", "drawn in the original case");
        }
        if let Some(Value::Object(table)) = f.get("styleOverrideTable") {
            for (k, o) in table {
                for key in ["lineHeightPx", "textCase", "paragraphSpacing"] {
                    if o.get(key).is_some() {
                        self.unmapped(id, f, &format!("styleOverrideTable.{k}.{key}"), "per-range line heights, cases and paragraph spacing are not drawn; the node's own are used");
                    }
                }
            }
        }
    }
}

//! Fills, strokes, effects and blend modes of an imported node: Figma's paint and effect
//! objects are the tree's own (same names, same meaning), so they are kept as they are;
//! image fills get a placeholder URL, and what the renderer does not draw as Figma does is
//! reported.

use adforge_renderer::tree::{BlendMode, paint};
use serde_json::{Map, Value};

use super::{IMAGE_PLACEHOLDER, Importer, aside, num, str_of};

impl Importer<'_> {
    pub(super) fn paints_and_effects(
        &mut self,
        id: &str,
        f: &Map<String, Value>,
        n: &mut Map<String, Value>,
    ) {
        if let Some(mode) = f.get("blendMode").and_then(Value::as_str)
            && !BlendMode::NAMES.contains(&mode)
        {
            if let Some(v) = n.remove("blendMode") {
                aside(n, "blendMode", v);
            }
            self.unmapped(
                id,
                f,
                &format!("blendMode {mode}"),
                "drawn with NORMAL blending",
            );
        }
        for list in ["fills", "strokes"] {
            if let Some(Value::Array(paints)) = f.get(list) {
                let out: Vec<Value> = paints
                    .iter()
                    .enumerate()
                    .map(|(k, p)| self.paint(id, f, &format!("{list}[{k}]"), p))
                    .collect();
                n.insert(list.into(), Value::Array(out));
            }
        }
        if let Some(Value::Array(effects)) = f.get("effects") {
            for e in effects {
                if e.get("visible") == Some(&Value::Bool(false)) {
                    continue;
                }
                let kind = e.get("type").and_then(Value::as_str).unwrap_or_default();
                match kind {
                    "DROP_SHADOW" | "INNER_SHADOW" => {
                        if let Some(mode) = e.get("blendMode").and_then(Value::as_str)
                            && !matches!(mode, "NORMAL" | "PASS_THROUGH")
                        {
                            self.unmapped(id, f, &format!("{kind} blendMode {mode}"), "the shadow is blended NORMAL");
                        }
                    }
                    "LAYER_BLUR" | "BACKGROUND_BLUR" => {
                        if e.get("blurType").and_then(Value::as_str) == Some("PROGRESSIVE") {
                            self.unmapped(id, f, &format!("{kind} PROGRESSIVE"), "drawn as a uniform blur of the full radius");
                        }
                    }
                    other => self.unmapped(id, f, &format!("effect {other}"), "not drawn (the renderer draws drop and inner shadows, layer and background blurs)"),
                }
            }
        }
        if num(f.get("cornerSmoothing")).is_some_and(|v| v > 0.0) {
            self.unmapped(
                id,
                f,
                "cornerSmoothing",
                "corners are drawn circular, not smoothed",
            );
        }
        let has_strokes = f.get("strokes").and_then(Value::as_array).is_some_and(|s| {
            s.iter()
                .any(|p| p.get("visible") != Some(&Value::Bool(false)))
        });
        if has_strokes {
            // Strokes drawn from Figma's own outline (open paths, CENTER strokes of vectors
            // with geometry) keep their dashes; the renderer's own strokes do not.
            let open = str_of(f, "type") == "LINE"
                || f.get("fillGeometry")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty);
            let center = matches!(
                f.get("strokeAlign").and_then(Value::as_str),
                None | Some("CENTER")
            );
            let outlined = f
                .get("strokeGeometry")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
                && (open || center);
            if !outlined
                && f.get("strokeDashes")
                    .and_then(Value::as_array)
                    .is_some_and(|d| !d.is_empty())
            {
                self.unmapped(id, f, "strokeDashes", "the stroke is drawn solid");
            }
            if let Some(w) = f.get("individualStrokeWeights").and_then(Value::as_object) {
                let weights: Vec<f64> = w.values().filter_map(Value::as_f64).collect();
                let max = weights.iter().copied().fold(0.0, f64::max);
                if weights.iter().any(|v| (v - max).abs() > 1e-6) {
                    self.unmapped(
                        id,
                        f,
                        "individualStrokeWeights",
                        &format!("every side is drawn {max} px wide"),
                    );
                    if let Some(v) = n.insert("strokeWeight".into(), Value::from(max)) {
                        aside(n, "strokeWeight", v);
                    }
                }
            }
        }
    }

    /// One paint: kept as Figma wrote it, with the image fill's placeholder URL.
    fn paint(&mut self, id: &str, f: &Map<String, Value>, field: &str, p: &Value) -> Value {
        let Some(obj) = p.as_object() else {
            return p.clone();
        };
        let mut q = obj.clone();
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(mode) = obj.get("blendMode").and_then(Value::as_str)
            && !BlendMode::NAMES.contains(&mode)
        {
            if let Some(v) = q.remove("blendMode") {
                q.insert("figmaBlendMode".into(), v);
            }
            self.unmapped(
                id,
                f,
                &format!("{field}.blendMode {mode}"),
                "the paint is blended NORMAL",
            );
        }
        let visible = obj.get("visible") != Some(&Value::Bool(false));
        match kind {
            "SOLID" | "GRADIENT_LINEAR" | "GRADIENT_RADIAL" => {}
            "IMAGE" => {
                match obj.get("imageRef").and_then(Value::as_str) {
                    Some(r) if !r.is_empty() => {
                        paint::set_image_url(&mut q, format!("{IMAGE_PLACEHOLDER}{r}"));
                        if visible {
                            self.image_refs.insert(r.to_owned());
                        }
                    }
                    _ => {
                        // No image behind it: kept, hidden.
                        q.insert("visible".into(), Value::Bool(false));
                        if visible {
                            self.unmapped(
                                id,
                                f,
                                field,
                                "an image fill without imageRef is not drawn",
                            );
                        }
                    }
                }
                if obj.get("gifRef").is_some() && visible {
                    self.unmapped(
                        id,
                        f,
                        &format!("{field}.gifRef"),
                        "an animated GIF is drawn from its still image",
                    );
                }
                if num(obj.get("rotation")).is_some_and(|r| r.rem_euclid(360.0) != 0.0) && visible {
                    self.unmapped(
                        id,
                        f,
                        &format!("{field}.rotation"),
                        "the image is drawn unrotated in its box",
                    );
                }
                if let Some(filters) = obj.get("filters").and_then(Value::as_object)
                    && filters
                        .values()
                        .any(|v| num(Some(v)).is_some_and(|v| v != 0.0))
                    && visible
                {
                    self.unmapped(
                        id,
                        f,
                        &format!("{field}.filters"),
                        "image adjustments (exposure, contrast, …) are not applied",
                    );
                }
            }
            "GRADIENT_ANGULAR" | "GRADIENT_DIAMOND" => {
                if visible {
                    self.unmapped(
                        id,
                        f,
                        &format!("{field} {kind}"),
                        "not drawn yet (the renderer draws solid, linear, radial and image paints)",
                    );
                }
            }
            other => {
                if visible {
                    self.unmapped(
                        id,
                        f,
                        &format!("{field} {other}"),
                        "not drawn: the tree has no such paint",
                    );
                }
            }
        }
        Value::Object(q)
    }
}

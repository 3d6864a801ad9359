#!/usr/bin/env python3
"""Writes the golden-test fixture trees (<area>/<name>.json) and their SVG twins.

The JSON files are the source of truth once written; this script documents how they were
made and regenerates them: `python3 renderer/tests/goldens/fixtures.py`. Then run
`UPDATE_GOLDENS=1 cargo test -p adforge-renderer --test render` to redraw the PNGs.
"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))

def c(r, g, b, a=1.0):
    return {"r": r, "g": g, "b": b, "a": a}

def solid(r, g, b, a=1.0, **kw):
    return dict({"type": "SOLID", "color": c(r, g, b, a)}, **kw)

BG = solid(1, 1, 1)
RED, BLUE, GREEN, DARK = solid(0.9, 0.2, 0.2), solid(0.2, 0.4, 0.9), solid(0.1, 0.7, 0.4), solid(0.1, 0.1, 0.15)

def tree(children, w=100, h=100, fills=None, **root):
    nodes = {"root": dict({"id": "root", "type": "FRAME", "width": w, "height": h,
                           "fills": [BG] if fills is None else fills,
                           "children": [k for k in children]}, **root)}
    for k, v in children.items():
        nodes[k] = dict({"id": k}, **v)
    return {"root": "root", "nodes": nodes}

def nested(nodes):
    out = {}
    for k, v in nodes.items():
        out[k] = dict({"id": k}, **v)
    return out

def rect(x, y, w, h, fills, **kw):
    return dict({"type": "RECTANGLE", "x": x, "y": y, "width": w, "height": h, "fills": fills}, **kw)

def text(x, y, w, h, chars, size=14, fills=None, **kw):
    d = {"type": "TEXT", "x": x, "y": y, "characters": chars, "fontSize": size,
         "fontFamily": "Inter", "fills": fills or [DARK]}
    if w is not None: d["width"] = w
    if h is not None: d["height"] = h
    d.update(kw)
    return d

F = {}  # (area, name) -> tree
SVG = {}  # (area, name) -> svg text

# ---------- shapes
F["shapes", "rectangle"] = tree({"r": rect(20, 30, 60, 40, [RED])})
SVG["shapes", "rectangle"] = '<rect x="20" y="30" width="60" height="40" fill="rgb(229.5,51,51)"/>'
F["shapes", "corner_radius"] = tree({"r": rect(10, 20, 80, 60, [BLUE], cornerRadius=16)})
SVG["shapes", "corner_radius"] = '<rect x="10" y="20" width="80" height="60" rx="16" fill="rgb(51,102,229.5)"/>'
F["shapes", "rectangle_corner_radii"] = tree({"r": rect(10, 10, 80, 80, [GREEN], rectangleCornerRadii=[0, 30, 8, 40])})
F["shapes", "ellipse"] = tree({"e": {"type": "ELLIPSE", "x": 10, "y": 25, "width": 80, "height": 50, "fills": [GREEN]}})
SVG["shapes", "ellipse"] = '<ellipse cx="50" cy="50" rx="40" ry="25" fill="rgb(25.5,178.5,102)"/>'
F["shapes", "vector_path"] = tree({"v": {"type": "VECTOR", "x": 10, "y": 10, "width": 80, "height": 80,
    "vectorPaths": [{"data": "M40 0 L80 80 L0 80 Z M40 30 L60 70 L20 70 Z", "windingRule": "NONZERO"}], "fills": [DARK]}})
SVG["shapes", "vector_path"] = '<path transform="translate(10 10)" d="M40 0 L80 80 L0 80 Z M40 30 L60 70 L20 70 Z" fill="rgb(25.5,25.5,38.25)"/>'
F["shapes", "vector_evenodd"] = tree({"v": {"type": "VECTOR", "x": 10, "y": 10, "width": 80, "height": 80,
    "vectorPaths": [{"data": "M40 0 L80 80 L0 80 Z M40 30 L60 70 L20 70 Z", "windingRule": "EVENODD"}], "fills": [DARK]}})
SVG["shapes", "vector_evenodd"] = '<path transform="translate(10 10)" fill-rule="evenodd" d="M40 0 L80 80 L0 80 Z M40 30 L60 70 L20 70 Z" fill="rgb(25.5,25.5,38.25)"/>'
for align in ["INSIDE", "OUTSIDE"]:
    F["shapes", "vector_stroke_" + align.lower()] = tree({"v": {"type": "VECTOR", "x": 20, "y": 20, "width": 60, "height": 60,
        "vectorPaths": [{"data": "M30 0 L60 60 L0 60 Z"}], "fills": [solid(0.9, 0.9, 0.2)], "strokes": [DARK],
        "strokeWeight": 6, "strokeAlign": align}})
F["shapes", "rotation"] = tree({"r": rect(50, 10, 50, 30, [BLUE], rotation=-45)})
SVG["shapes", "rotation"] = '<rect transform="translate(50 10) rotate(45)" width="50" height="30" fill="rgb(51,102,229.5)"/>'
F["shapes", "opacity"] = tree({"a": rect(10, 10, 50, 50, [RED]), "b": rect(40, 40, 50, 50, [BLUE], opacity=0.5)})
SVG["shapes", "opacity"] = ('<rect x="10" y="10" width="50" height="50" fill="rgb(229.5,51,51)"/>'
                            '<rect x="40" y="40" width="50" height="50" fill="rgb(51,102,229.5)" opacity="0.5"/>')
F["shapes", "invisible"] = tree({"a": rect(10, 10, 80, 80, [RED], visible=False), "b": rect(30, 30, 40, 40, [GREEN])})
F["shapes", "group"] = tree({"g": {"type": "GROUP", "x": 20, "y": 20, "opacity": 0.6, "children": ["g1", "g2"]}})
F["shapes", "group"]["nodes"].update(nested({"g1": rect(0, 0, 40, 40, [RED]), "g2": rect(20, 20, 40, 40, [BLUE])}))
SVG["shapes", "group"] = ('<g opacity="0.6" transform="translate(20 20)"><rect width="40" height="40" fill="rgb(229.5,51,51)"/>'
                          '<rect x="20" y="20" width="40" height="40" fill="rgb(51,102,229.5)"/></g>')
F["shapes", "frame_clip"] = tree({"f": {"type": "FRAME", "x": 20, "y": 20, "width": 60, "height": 60, "cornerRadius": 20,
    "clipsContent": True, "fills": [solid(0.9, 0.9, 0.9)], "children": ["big"]}})
F["shapes", "frame_clip"]["nodes"].update(nested({"big": rect(-20, 30, 100, 60, [RED])}))
SVG["shapes", "frame_clip"] = ('<clipPath id="c"><rect x="20" y="20" width="60" height="60" rx="20"/></clipPath>'
    '<rect x="20" y="20" width="60" height="60" rx="20" fill="rgb(229.5,229.5,229.5)"/>'
    '<rect clip-path="url(#c)" x="0" y="50" width="100" height="60" fill="rgb(229.5,51,51)"/>')
F["shapes", "frame_no_clip"] = tree({"f": {"type": "FRAME", "x": 20, "y": 20, "width": 60, "height": 60, "clipsContent": False,
    "fills": [solid(0.9, 0.9, 0.9)], "children": ["big"]}})
F["shapes", "frame_no_clip"]["nodes"].update(nested({"big": rect(-10, 30, 80, 40, [RED])}))
for align in ["INSIDE", "CENTER", "OUTSIDE"]:
    F["shapes", "stroke_" + align.lower()] = tree({"r": rect(25, 25, 50, 50, [solid(0.9, 0.9, 0.2)], cornerRadius=10,
        strokes=[DARK], strokeWeight=8, strokeAlign=align)})
SVG["shapes", "stroke_center"] = ('<rect x="25" y="25" width="50" height="50" rx="10" fill="rgb(229.5,229.5,51)" '
                                  'stroke="rgb(25.5,25.5,38.25)" stroke-width="8"/>')
F["shapes", "blend_multiply"] = tree({"a": rect(10, 10, 60, 60, [solid(1, 0.8, 0)]),
    "b": {"type": "ELLIPSE", "x": 30, "y": 30, "width": 60, "height": 60, "fills": [solid(0, 0.6, 1)], "blendMode": "MULTIPLY"}})
SVG["shapes", "blend_multiply"] = ('<rect x="10" y="10" width="60" height="60" fill="rgb(255,204,0)"/>'
    '<ellipse cx="60" cy="60" rx="30" ry="30" fill="rgb(0,153,255)" style="mix-blend-mode:multiply"/>')

# ---------- paints
F["paints", "solid_alpha"] = tree({"r": rect(10, 10, 80, 80, [solid(0.2, 0.4, 0.9, 0.5)])})
SVG["paints", "solid_alpha"] = '<rect x="10" y="10" width="80" height="80" fill="rgb(51,102,229.5)" fill-opacity="0.5"/>'
stops = [{"position": 0, "color": c(1, 0.3, 0.2)}, {"position": 0.5, "color": c(1, 0.9, 0.2)}, {"position": 1, "color": c(0.2, 0.5, 1)}]
F["paints", "linear_gradient"] = tree({"r": rect(10, 10, 80, 80, [{"type": "GRADIENT_LINEAR",
    "gradientHandlePositions": [{"x": 0, "y": 0.5}, {"x": 1, "y": 0.5}, {"x": 0, "y": 1}], "gradientStops": stops}])})
SVG["paints", "linear_gradient"] = ('<linearGradient id="g" x1="10" y1="50" x2="90" y2="50" gradientUnits="userSpaceOnUse">'
    '<stop offset="0" stop-color="rgb(255,76.5,51)"/><stop offset="0.5" stop-color="rgb(255,229.5,51)"/>'
    '<stop offset="1" stop-color="rgb(51,127.5,255)"/></linearGradient><rect x="10" y="10" width="80" height="80" fill="url(#g)"/>')
F["paints", "linear_gradient_diagonal"] = tree({"r": rect(10, 10, 80, 80, [{"type": "GRADIENT_LINEAR",
    "gradientHandlePositions": [{"x": 0, "y": 0}, {"x": 1, "y": 1}], "gradientStops": stops}])})
F["paints", "radial_gradient"] = tree({"r": rect(10, 10, 80, 80, [{"type": "GRADIENT_RADIAL",
    "gradientHandlePositions": [{"x": 0.5, "y": 0.5}, {"x": 1, "y": 0.5}, {"x": 0.5, "y": 1}], "gradientStops": stops}])})
SVG["paints", "radial_gradient"] = ('<radialGradient id="g" cx="50" cy="50" r="40" gradientUnits="userSpaceOnUse">'
    '<stop offset="0" stop-color="rgb(255,76.5,51)"/><stop offset="0.5" stop-color="rgb(255,229.5,51)"/>'
    '<stop offset="1" stop-color="rgb(51,127.5,255)"/></radialGradient><rect x="10" y="10" width="80" height="80" fill="url(#g)"/>')
F["paints", "paint_opacity"] = tree({"r": rect(10, 10, 80, 80, [RED, solid(0.2, 0.4, 0.9, 1, opacity=0.5)])})
SVG["paints", "paint_opacity"] = ('<rect x="10" y="10" width="80" height="80" fill="rgb(229.5,51,51)"/>'
                                  '<rect x="10" y="10" width="80" height="80" fill="rgb(51,102,229.5)" fill-opacity="0.5"/>')
F["paints", "multiple_fills"] = tree({"r": rect(10, 10, 80, 80, [BLUE, {"type": "GRADIENT_LINEAR",
    "gradientHandlePositions": [{"x": 0.5, "y": 0}, {"x": 0.5, "y": 1}], "gradientStops": [
        {"position": 0, "color": c(0, 0, 0, 0)}, {"position": 1, "color": c(0, 0, 0, 0.8)}]}])})
F["paints", "paint_blend_multiply"] = tree({"a": rect(10, 10, 50, 80, [solid(1, 0.8, 0)]),
    "b": rect(30, 30, 60, 40, [BLUE, solid(0.9, 0.2, 0.2, 1, blendMode="MULTIPLY")])})
F["paints", "unsupported_angular"] = tree({"r": rect(10, 10, 80, 80, [GREEN, {"type": "GRADIENT_ANGULAR", "gradientStops": stops}])})
img = lambda url, mode, **kw: dict({"type": "IMAGE", "imageFillUrl": url, "scaleMode": mode}, **kw)
COFFEE = "assets/samples/coffee.png"
F["images", "fill"] = tree({"r": rect(10, 10, 80, 80, [img(COFFEE, "FILL")], cornerRadius=12)})
F["images", "fit"] = tree({"r": rect(10, 10, 80, 80, [solid(0.9, 0.9, 0.9), img(COFFEE, "FIT")])})
F["images", "stretch"] = tree({"r": rect(10, 10, 80, 80, [img(COFFEE, "STRETCH")])})
F["images", "crop"] = tree({"r": rect(10, 10, 80, 80, [img(COFFEE, "CROP", imageTransform=[[0.4, 0, 0.3], [0, 0.5, 0.25]])])})
F["images", "tile"] = tree({"r": rect(0, 0, 100, 100, [img("renderer/tests/goldens/assets/tile.png", "TILE", scalingFactor=0.5)])})
F["images", "jpeg"] = tree({"r": rect(10, 10, 80, 80, [img("assets/samples/rocket.jpg", "FILL")])})
F["images", "webp"] = tree({"r": rect(10, 10, 80, 80, [img("renderer/tests/goldens/assets/chelsea.webp", "FILL")])})
F["images", "svg"] = tree({"r": rect(10, 10, 80, 80, [img("renderer/tests/goldens/assets/badge.svg", "FIT")])})
F["images", "image_opacity"] = tree({"r": rect(10, 10, 80, 80, [RED, img(COFFEE, "FILL", opacity=0.5)])})
F["images", "missing"] = tree({"r": rect(10, 10, 80, 80, [GREEN, img("renderer/tests/goldens/assets/nope.png", "FILL")])})
F["images", "rotated"] = tree({"r": rect(50, 5, 60, 60, [img(COFFEE, "FILL")], rotation=-30)})

# ---------- effects
shadow = lambda **kw: dict({"type": "DROP_SHADOW", "radius": 8, "offset": {"x": 4, "y": 6}, "color": c(0, 0, 0, 0.5), "spread": 0}, **kw)
F["effects", "drop_shadow"] = tree({"r": rect(20, 20, 60, 60, [BG], cornerRadius=10, effects=[shadow()])}, fills=[solid(0.93, 0.93, 0.95)])
F["effects", "drop_shadow_spread"] = tree({"r": rect(25, 25, 50, 50, [BG], cornerRadius=10, effects=[shadow(spread=6, offset={"x": 0, "y": 0})])}, fills=[solid(0.93, 0.93, 0.95)])
F["effects", "inner_shadow"] = tree({"r": rect(20, 20, 60, 60, [solid(0.95, 0.8, 0.3)], cornerRadius=30,
    effects=[dict(shadow(), type="INNER_SHADOW")])})
F["effects", "layer_blur"] = tree({"r": rect(25, 25, 50, 50, [BLUE], effects=[{"type": "LAYER_BLUR", "radius": 10}])})
F["effects", "background_blur"] = tree({
    "stripes": {"type": "VECTOR", "x": 0, "y": 0, "width": 100, "height": 100, "fills": [RED],
        "vectorPaths": [{"data": "M0 0H10V100H0Z M20 0H30V100H20Z M40 0H50V100H40Z M60 0H70V100H60Z M80 0H90V100H80Z"}]},
    "glass": rect(15, 30, 70, 40, [solid(1, 1, 1, 0.3)], cornerRadius=10, effects=[{"type": "BACKGROUND_BLUR", "radius": 12}])})
F["effects", "effect_node"] = tree({"card": {"type": "FRAME", "x": 20, "y": 20, "width": 60, "height": 60, "cornerRadius": 8,
    "fills": [BG], "children": ["fx"]}}, fills=[solid(0.93, 0.93, 0.95)])
F["effects", "effect_node"]["nodes"].update(nested({"fx": {"type": "EFFECT", "effects": [shadow(color=c(0.8, 0, 0.3, 0.6))]}}))
# Every effect path at once (GPU parity): two drop shadows (one shrunk by a negative spread,
# a large blur that is downsampled), an inner shadow grown by its spread, opacity and a
# multiply blend on a gradient; a blurred layer; frosted glass with a large background blur.
F["effects", "stacked"] = tree({
    "card": rect(14, 12, 46, 40, [solid(0.98, 0.96, 0.9)], cornerRadius=12, opacity=0.85, blendMode="MULTIPLY",
        effects=[shadow(radius=24, spread=-4, offset={"x": 6, "y": 8}, color=c(0.2, 0.1, 0.5, 0.6)),
                 shadow(radius=4, offset={"x": -3, "y": -2}),
                 dict(shadow(radius=12, spread=3, offset={"x": -3, "y": 5}, color=c(0.6, 0, 0.2, 0.7)), type="INNER_SHADOW")]),
    "soft": rect(66, 14, 24, 24, [GREEN], cornerRadius=4, effects=[{"type": "LAYER_BLUR", "radius": 6}]),
    "glass": rect(8, 58, 84, 34, [solid(1, 1, 1, 0.25)], cornerRadius=8, effects=[{"type": "BACKGROUND_BLUR", "radius": 30}])},
    fills=[{"type": "GRADIENT_LINEAR", "gradientHandlePositions": [{"x": 0, "y": 0}, {"x": 1, "y": 1}], "gradientStops": stops}])
F["effects", "text_shadow"] = tree({"t": text(10, 30, None, None, "Shadow", 22, fontWeight=700, effects=[shadow(radius=4, offset={"x": 2, "y": 2})])})

# ---------- auto-layout
def al(mode, kids, **kw):
    return dict({"type": "FRAME", "x": 5, "y": 5, "layoutMode": mode, "itemSpacing": 6,
                 "fills": [solid(0.9, 0.92, 0.96)], "children": list(kids)}, **kw)

def boxes(n, w=20, h=20, **kw):
    cols = [RED, BLUE, GREEN, solid(0.9, 0.6, 0.1), solid(0.5, 0.2, 0.7)]
    return {f"k{i}": rect(0, 0, w + 4 * i, h + 3 * i, [cols[i % 5]], **kw) for i in range(n)}

def al_case(name, mode, n=3, kid_kw=None, **kw):
    kids = boxes(n, **(kid_kw or {}))
    t = tree({"al": al(mode, kids, **kw)})
    t["nodes"].update(nested(kids))
    F["layout", name] = t
    return t

al_case("horizontal_hug", "HORIZONTAL", paddingLeft=4, paddingRight=4, paddingTop=4, paddingBottom=4)
al_case("vertical_hug", "VERTICAL", paddingLeft=8, paddingTop=4, paddingBottom=4, paddingRight=8)
al_case("fixed_center", "HORIZONTAL", width=90, height=50, primaryAxisAlignItems="CENTER", counterAxisAlignItems="CENTER")
al_case("fixed_max", "VERTICAL", width=90, height=90, primaryAxisAlignItems="MAX", counterAxisAlignItems="MAX")
al_case("space_between", "HORIZONTAL", width=90, height=40, primaryAxisAlignItems="SPACE_BETWEEN", paddingLeft=4, paddingRight=4)
t = al_case("fill_children", "HORIZONTAL", n=2, width=90, height=40, paddingLeft=4, paddingRight=4, paddingTop=4, paddingBottom=4)
t["nodes"]["k1"]["layoutSizingHorizontal"] = "FILL"
t["nodes"]["k0"]["layoutSizingVertical"] = "FILL"
t = al_case("layout_grow_legacy", "VERTICAL", width=90, height=90, paddingLeft=4, paddingTop=4)
t["nodes"]["k0"]["layoutGrow"] = 1
t["nodes"]["k1"]["layoutAlign"] = "STRETCH"
al_case("wrap", "HORIZONTAL", n=5, width=90, layoutWrap="WRAP", counterAxisSpacing=4, paddingLeft=4, paddingTop=4, paddingBottom=4, layoutSizingVertical="HUG")
t = al_case("absolute_child", "HORIZONTAL", n=3, width=90, height=60, paddingLeft=4, paddingTop=4)
t["nodes"]["k1"].update({"layoutPositioning": "ABSOLUTE", "x": 60, "y": 30})
btn = {"type": "FRAME", "x": 10, "y": 30, "layoutMode": "HORIZONTAL", "paddingLeft": 12, "paddingRight": 12, "paddingTop": 8,
       "paddingBottom": 8, "cornerRadius": 16, "fills": [BLUE], "children": ["label"], "counterAxisAlignItems": "CENTER"}
F["layout", "hug_text_button"] = tree({"btn": btn})
F["layout", "hug_text_button"]["nodes"].update(nested({"label": text(0, 0, None, None, "Shop now", 12, fills=[BG], fontWeight=600)}))
row = {"type": "FRAME", "x": 4, "y": 20, "layoutMode": "HORIZONTAL", "itemSpacing": 4, "counterAxisAlignItems": "BASELINE",
       "fills": [solid(0.95, 0.95, 0.9)], "children": ["big", "small", "box"]}
F["layout", "baseline"] = tree({"row": row})
F["layout", "baseline"]["nodes"].update(nested({
    "big": text(0, 0, None, None, "Big", 28, fontWeight=700),
    "small": text(0, 0, None, None, "small", 11),
    "box": rect(0, 0, 12, 12, [RED])}))
col = {"type": "FRAME", "x": 5, "y": 5, "width": 90, "layoutMode": "VERTICAL", "itemSpacing": 4, "paddingLeft": 6, "paddingRight": 6,
       "paddingTop": 6, "paddingBottom": 6, "fills": [solid(0.95, 0.95, 0.9)], "children": ["h", "p"]}
F["layout", "text_fill_width"] = tree({"col": col})
F["layout", "text_fill_width"]["nodes"].update(nested({
    "h": text(0, 0, None, None, "Headline", 16, fontWeight=700, layoutSizingHorizontal="FILL", textAutoResize="HEIGHT"),
    "p": text(0, 0, None, None, "Body copy wraps to the column width here.", 10, layoutSizingHorizontal="FILL", textAutoResize="HEIGHT")}))

# ---------- text
T = lambda chars, **kw: tree({"t": text(8, 8, 84, 84, chars, **kw)})
F["text", "basic"] = T("Hello, world. Wrapping text in a box.", size=14)
F["text", "bold_italic"] = T("Bold italic type", size=16, fontWeight=700, italic=True)
F["text", "family_serif"] = T("Serif display", size=18, fontFamily="Noto Serif Display")
F["text", "family_bebas"] = T("BEBAS NEUE", size=24, fontFamily="Bebas Neue")
F["text", "align_center"] = T("Centred lines of text here", size=12, textAlignHorizontal="CENTER")
F["text", "align_right"] = T("Right aligned lines of text", size=12, textAlignHorizontal="RIGHT")
F["text", "justified"] = T("Justified text spreads words to fill every line but the last one.", size=10, textAlignHorizontal="JUSTIFIED")
F["text", "vertical_center"] = T("Middle", size=16, textAlignVertical="CENTER", textAlignHorizontal="CENTER")
F["text", "vertical_bottom"] = T("Bottom", size=16, textAlignVertical="BOTTOM")
F["text", "line_height"] = T("Tall line height spacing", size=12, lineHeight={"value": 200, "unit": "PERCENT"})
F["text", "letter_spacing"] = T("Track", size=14, letterSpacing=4)
F["text", "upper_case"] = T("upper case", size=14, textCase="UPPER")
F["text", "title_case"] = T("title case words", size=14, textCase="TITLE")
F["text", "underline"] = T("Underlined", size=14, textDecoration="UNDERLINE")
F["text", "strikethrough"] = T("Struck", size=14, textDecoration="STRIKETHROUGH")
F["text", "rtl_arabic"] = T("مرحبا بالعالم", size=16, fontFamily="Noto Sans Arabic", textAlignHorizontal="RIGHT")
F["text", "rtl_fallback_hebrew"] = T("שלום עולם", size=16)
F["text", "bidi_mixed"] = T("Sale تخفيض 50%", size=14)
F["text", "emoji"] = T("Hi 👋🎉", size=20)
F["text", "missing_family"] = T("Unknown family", size=14, fontFamily="Comic Sans Neue")
F["text", "shrink_to_fit"] = T("A long headline that must shrink to fit", size=40, fontWeight=700, textFit={"minFontSize": 8, "maxFontSize": 40})
F["text", "shrink_overflow"] = T("Supercalifragilisticexpialidocious word", size=30, textFit={"minFontSize": 14})
F["text", "max_lines_ellipsis"] = T("This text is much longer than two lines so it gets an ellipsis at the end", size=12, maxLines=2)
F["text", "truncate_height"] = tree({"t": text(8, 8, 84, 30, "Truncated to the box height with an ellipsis, never spilling", 12, textAutoResize="TRUNCATE")})
F["text", "auto_width"] = tree({"t": text(8, 40, None, None, "Auto width", 14, fills=[BLUE])})
F["text", "gradient_fill"] = T("Gradient", size=18, fontWeight=700, fills=[{"type": "GRADIENT_LINEAR",
    "gradientHandlePositions": [{"x": 0, "y": 0.5}, {"x": 1, "y": 0.5}], "gradientStops": stops}])
F["text", "stroke"] = T("Outline", size=20, fontWeight=700, fills=[BG], strokes=[DARK], strokeWeight=1)
F["text", "low_contrast"] = T("Faint", size=20, fills=[solid(0.85, 0.85, 0.85)])
# White text straddling a dark band and a light one: readable on average, not on the light half.
F["text", "contrast_straddle"] = tree({
    "dark": rect(0, 0, 100, 57, [DARK]),
    "light": rect(0, 57, 100, 43, [solid(0.97, 0.95, 0.92)]),
    "t": text(8, 30, 84, None, "Half", size=36, fills=[solid(1, 1, 1)], fontWeight=700)})
# Figma's per-range styles: a bold red "sale" a size up, an italic underlined blue "words".
_ranges = "Big sale on these words"
F["text", "style_ranges"] = T(_ranges, size=12,
    characterStyleOverrides=[1 if 4 <= i < 8 else 2 if i >= 18 else 0 for i in range(len(_ranges))],
    styleOverrideTable={"1": {"fontWeight": 700, "fontSize": 16, "fills": [RED]},
                        "2": {"italic": True, "textDecoration": "UNDERLINE", "fills": [BLUE]}})
F["text", "rotated"] = tree({"t": text(20, 80, None, None, "Rotated", 16, rotation=45)})

def main():
    for (area, name), t in F.items():
        d = os.path.join(HERE, area)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name + ".json"), "w") as f:
            json.dump(t, f, indent=1)
            f.write("\n")
    for (area, name), body in SVG.items():
        t = F[area, name]
        r = t["nodes"]["root"]
        svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{r["width"]}" height="{r["height"]}" '
               f'viewBox="0 0 {r["width"]} {r["height"]}"><rect width="100%" height="100%" fill="white"/>{body}</svg>\n')
        with open(os.path.join(HERE, area, name + ".svg"), "w") as f:
            f.write(svg)
    print(len(F), "fixtures,", len(SVG), "svg twins")

main()

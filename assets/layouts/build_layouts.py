#!/usr/bin/env python3
"""Writes the built-in layout templates (assets/layouts/*.json).

The JSON files are the source of truth the worker embeds; this script is how they were
drawn, so a change to a margin or a type scale is one edit here instead of 27 by hand.
Run `python3 assets/layouts/build_layouts.py` from the repository root; see README.md for
the format.
"""
import json
import os

W = 1080
SIZES = {"1:1": 1080, "4:5": 1350, "9:16": 1920}
M = 72  # outer margin
WHITE = {"r": 1, "g": 1, "b": 1, "a": 1}
INK = {"r": 0.07, "g": 0.07, "b": 0.09, "a": 1}


def solid(c):
    return [{"type": "SOLID", "color": c}]


class T:
    def __init__(self):
        self.nodes = {}

    def add(self, nid, node, parent=None):
        node = dict(node)
        node["id"] = nid
        self.nodes[nid] = node
        if parent:
            self.nodes[parent].setdefault("children", []).append(nid)
        return nid

    def frame(self, nid, x, y, w, h, role=None, parent="root", **kw):
        n = {"type": "FRAME", "x": x, "y": y, "width": w, "height": h,
             "fills": solid(WHITE)}
        if role:
            n["$fill"] = role
        n.update(kw)
        return self.add(nid, n, parent)

    def rect(self, nid, x, y, w, h, role=None, parent="root", kind="RECTANGLE", **kw):
        n = {"type": kind, "x": x, "y": y, "width": w, "height": h, "fills": solid(WHITE)}
        if role:
            n["$fill"] = role
        n.update(kw)
        return self.add(nid, n, parent)

    def image(self, nid, x, y, w, h, parent="root", kind="RECTANGLE", **kw):
        n = {"type": kind, "x": x, "y": y, "width": w, "height": h,
             "fills": solid({"r": 0.8, "g": 0.8, "b": 0.8, "a": 1}), "$image": "product"}
        n.update(kw)
        return self.add(nid, n, parent)

    def logo(self, x, y, w, h, on, parent="root", align="LEFT"):
        return self.add("logo", {"type": "RECTANGLE", "x": x, "y": y, "width": w, "height": h,
                                 "fills": [], "$image": "logo", "$on": on, "$align": align}, parent)

    def text(self, nid, slot, x, y, w, h, size, on, weight=400, align="LEFT", valign="TOP",
             parent="root", font=None, min_ratio=0.4, **kw):
        n = {"type": "TEXT", "x": x, "y": y, "width": w, "height": h,
             "characters": slot.upper() if slot == "eyebrow" else slot.capitalize(),
             "fontFamily": "Inter", "fontSize": size, "fontWeight": weight,
             "lineHeight": {"value": 110 if slot == "headline" else 135, "unit": "PERCENT"},
             "textAlignHorizontal": align, "textAlignVertical": valign,
             "textAutoResize": "NONE",
             "textFit": {"minFontSize": round(size * min_ratio, 1), "maxFontSize": size},
             "fills": solid(INK), "$text": slot, "$on": on,
             "$font": font or ("heading" if slot in ("headline", "brand") else "body")}
        if slot == "eyebrow":
            n["letterSpacing"] = round(size * 0.12, 1)
        n.update(kw)
        return self.add(nid, n, parent)

    def stack(self, nid, x, y, w, h, items, on, parent="root", align="MIN", spacing=20,
              text_align="LEFT"):
        """A vertical auto-layout column of texts: each hugs its height, so the lines follow
        each other whatever the copy's length; `align` places the column in its box."""
        self.add(nid, {"type": "FRAME", "x": x, "y": y, "width": w, "height": h, "fills": [],
                       "clipsContent": False, "layoutMode": "VERTICAL", "itemSpacing": spacing,
                       "primaryAxisAlignItems": align, "counterAxisAlignItems": "MIN"}, parent)
        for item in items:
            slot, size = item[0], item[1]
            kw = dict(item[2]) if len(item) > 2 else {}
            weight = kw.pop("weight", 700 if slot == "headline" else 400)
            self.text(slot if slot != "eyebrow" else "eyebrow", slot, 0, 0, w, 10, size, on,
                      weight=weight, align=text_align, parent=nid, **kw)
            node = self.nodes[slot]
            del node["height"]
            node["textAutoResize"] = "HEIGHT"
            node["layoutSizingHorizontal"] = "FILL"

    def cta(self, x, y, w, h, size, parent="root", role="accent", radius=None, align="CENTER"):
        self.frame("cta", x, y, w, h, role=role, parent=parent,
                   cornerRadius=h / 2 if radius is None else radius, clipsContent=False)
        self.text("cta_label", "cta", 0, 0, w, h, size, on="cta", weight=600, align="CENTER",
                  valign="CENTER", parent="cta", min_ratio=0.5, maxLines=1)


def root(h, role="background"):
    t = T()
    t.add("root", {"type": "FRAME", "x": 0, "y": 0, "width": W, "height": h,
                   "fills": solid(WHITE), "$fill": role, "clipsContent": True})
    return t


def hero_bottom_panel(h):
    t = root(h, "surface")
    ph = round(h * (0.5 if h < 1200 else 0.56 if h < 1900 else 0.6))
    t.image("product_image", 0, 0, W, ph)
    ty = ph + 56
    cta_y = h - M - 96
    t.logo(W - M - 200, ty, 200, 56, on="root", align="RIGHT")
    t.stack("copy", M, ty, W - 2 * M - 240, cta_y - 32 - ty,
            [("headline", 64 if h < 1100 else 80 if h < 1500 else 96),
             ("supporting", 28 if h < 1100 else 32 if h < 1500 else 36)],
            on="root", spacing=18 if h < 1500 else 28, align="MIN" if h < 1500 else "CENTER")
    t.cta(M, cta_y, 340, 96, 34)
    return t


def split(h, image_right):
    t = root(h, "background")
    half = W // 2
    ix = half if image_right else 0
    tx = (0 if image_right else half) + 64
    tw = half - 64 - 56
    t.image("product_image", ix, 0, W - half, h)
    t.logo(tx, M, 190, 56, on="root")
    top = M + 56 + 48
    cta_y = h - M - 88
    t.stack("copy", tx, top, tw, cta_y - 48 - top,
            [("eyebrow", 22, {"weight": 600}), ("headline", 68 if h < 1100 else 76),
             ("supporting", 30)], on="root", align="CENTER", spacing=24)
    t.cta(tx, cta_y, min(tw, 300), 88, 30)
    return t


def centered_product(h):
    t = root(h, "primary")
    t.logo((W - 200) // 2, M, 200, 52, on="root", align="CENTER")
    y = M + 52 + 36
    if h > 1500:
        t.text("eyebrow", "eyebrow", M, y + 24, W - 2 * M, 36, 24, "root", weight=600,
               align="CENTER")
        y += 36 + 56
    hh = round(h * (0.15 if h < 1500 else 0.14))
    t.text("headline", "headline", M + 20, y, W - 2 * M - 40, hh, 76 if h < 1500 else 88,
           "root", weight=700, align="CENTER", valign="CENTER")
    iy = y + hh + 32
    ib = h - M - 96 - 130
    ih = ib - iy
    iw = min(W - 2 * M - 120, round(ih * 1.05))
    t.image("product_image", (W - iw) // 2, iy, iw, ih, cornerRadius=36, kind="FRAME",
            clipsContent=True)
    t.add("card_shadow", {"type": "EFFECT", "effects": [
        {"type": "DROP_SHADOW", "radius": 48, "offset": {"x": 0, "y": 24},
         "color": {"r": 0, "g": 0, "b": 0, "a": 0.28}}]}, "product_image")
    t.text("supporting", "supporting", M + 60, ib + 24, W - 2 * M - 120, 84, 28, "root",
           align="CENTER", valign="CENTER")
    t.cta((W - 360) // 2, h - M - 96, 360, 96, 34)
    return t


def top_headline(h):
    t = root(h, "background")
    t.logo(M, M, 190, 56, on="root")
    copy_h = round(h * (0.3 if h < 1900 else 0.26))
    t.stack("copy", M, M + 96, W - 2 * M, copy_h,
            [("headline", 84 if h < 1100 else 96), ("supporting", 32)], on="root", spacing=16)
    iy = M + 96 + copy_h + 32
    t.image("product_image", M, iy, W - 2 * M, h - iy - M, cornerRadius=28)
    t.cta(W - M - 40 - 320, h - M - 40 - 92, 320, 92, 32)
    t.add("cta_shadow", {"type": "EFFECT", "effects": [
        {"type": "DROP_SHADOW", "radius": 24, "offset": {"x": 0, "y": 8},
         "color": {"r": 0, "g": 0, "b": 0, "a": 0.25}}]}, "cta")
    return t


def full_bleed_scrim(h):
    t = root(h, "ink")
    t.image("product_image", 0, 0, W, h)
    sh = round(h * 0.62)
    t.rect("scrim", 0, h - sh, W, sh, fills=[{
        "type": "GRADIENT_LINEAR",
        "gradientHandlePositions": [{"x": 0.5, "y": 0}, {"x": 0.5, "y": 1}, {"x": 0, "y": 0}],
        "gradientStops": [{"position": 0, "color": {"r": 0, "g": 0, "b": 0, "a": 0}},
                          {"position": 0.55, "color": {"r": 0, "g": 0, "b": 0, "a": 0.72}},
                          {"position": 1, "color": {"r": 0, "g": 0, "b": 0, "a": 0.86}}]}],
           **{"$scrim": True})
    t.rect("top_scrim", 0, 0, W, 240, fills=[{
        "type": "GRADIENT_LINEAR",
        "gradientHandlePositions": [{"x": 0.5, "y": 0}, {"x": 0.5, "y": 1}, {"x": 0, "y": 0}],
        "gradientStops": [{"position": 0, "color": {"r": 0, "g": 0, "b": 0, "a": 0.55}},
                          {"position": 1, "color": {"r": 0, "g": 0, "b": 0, "a": 0}}]}],
           **{"$scrim": True})
    t.logo(M, M, 200, 60, on="top_scrim")
    hh = round(h * 0.19)
    ty = h - M - 96 - 40 - 84 - 16 - hh
    t.text("headline", "headline", M, ty, W - 2 * M - 60, hh, 88, "scrim", weight=700,
           valign="BOTTOM", fills=solid(WHITE))
    t.text("supporting", "supporting", M, ty + hh + 16, W - 2 * M - 120, 84, 30, "scrim",
           fills=solid(WHITE))
    t.cta(M, h - M - 96, 340, 96, 34)
    return t


def offer_badge(h):
    t = root(h, "primary")
    t.logo(M, M, 190, 56, on="root")
    d = min(W - 160, round(h * 0.58))
    cx, cy = W - d - 40 + 120, h - d - 40 + (60 if h < 1300 else -60)
    t.stack("copy", M, M + 100, W - 2 * M - 60, cy - 24 - (M + 100) if h > 1100 else 360,
            [("headline", 88 if h < 1500 else 104), ("supporting", 30 if h < 1500 else 34)],
            on="root", spacing=24, align="MIN" if h < 1500 else "CENTER")
    t.nodes["supporting"]["width"] = 460
    t.nodes["supporting"]["layoutSizingHorizontal"] = "FIXED"
    t.image("product_image", cx, cy, d, d, kind="ELLIPSE")
    b = 220
    t.rect("badge", cx - 40, cy + 10, b, b, role="accent", kind="ELLIPSE")
    t.text("badge_label", "eyebrow", cx - 40 + 30, cy + 10 + 30, b - 60, b - 60, 30, "badge",
           weight=700, align="CENTER", valign="CENTER", min_ratio=0.5)
    t.cta(M, h - M - 96, 330, 96, 34)
    return t


def text_poster(h):
    t = root(h, "ink")
    t.logo((W - 200) // 2, M, 200, 60, on="root", align="CENTER")
    cta_y = h - M - 96
    d = round(h * (0.1 if h < 1200 else 0.13))
    my = cta_y - 36 - d
    # The group eyebrow / headline / rule / supporting, centred between logo and medallion;
    # the headline box is capped so a short headline does not leave gaps around it.
    region_top, region_bottom = M + 60 + 32, my - 32
    sh = 92
    fixed = 36 + 24 + 28 + 8 + 28 + sh
    hh = min(region_bottom - region_top - fixed, 560)
    y = region_top + (region_bottom - region_top - fixed - hh) // 2
    t.text("eyebrow", "eyebrow", M, y, W - 2 * M, 36, 26, "root", weight=600, align="CENTER")
    y += 36 + 24
    t.text("headline", "headline", M, y, W - 2 * M, hh, 150, "root", weight=700,
           align="CENTER", valign="CENTER", textCase="UPPER", min_ratio=0.3)
    y += hh + 28
    t.rect("rule", (W - 120) // 2, y, 120, 8, role="accent", cornerRadius=4)
    y += 8 + 28
    t.text("supporting", "supporting", M + 60, y, W - 2 * M - 120, sh, 30, "root",
           align="CENTER")
    t.image("product_image", (W - d) // 2, my, d, d, kind="ELLIPSE")
    t.cta((W - 380) // 2, cta_y, 380, 96, 34)
    return t


def framed_card(h):
    t = root(h, "primary")
    cw, ch = W - 2 * 64, h - 2 * 64
    t.frame("card", 64, 64, cw, ch, role="paper", cornerRadius=32)
    t.add("card_shadow", {"type": "EFFECT", "effects": [
        {"type": "DROP_SHADOW", "radius": 40, "offset": {"x": 0, "y": 16},
         "color": {"r": 0, "g": 0, "b": 0, "a": 0.22}}]}, "card")
    ih = round(ch * (0.46 if h < 1200 else 0.52))
    t.image("product_image", 24, 24, cw - 48, ih, parent="card", cornerRadius=20)
    p = 48
    y = 24 + ih + 36
    t.stack("copy", p, y, cw - 2 * p, ch - y - 40 - 88 - 24,
            [("headline", 64 if h < 1200 else 72), ("supporting", 28)], on="card",
            parent="card", spacing=14, align="CENTER")
    t.cta(p, ch - 40 - 88, 320, 88, 32, parent="card")
    t.logo(cw - p - 180, ch - 40 - 88 + 19, 180, 50, on="card", parent="card", align="RIGHT")
    return t


LAYOUTS = [
    ("hero_bottom_panel", "Photo across the top, brand-coloured panel with the copy below.",
     hero_bottom_panel, {"image_center": [0.5, 0.3], "image_area": 0.58,
                         "text_center": [0.45, 0.8], "text_weight": 0.2}),
    ("split_text_left", "Copy on a calm field on the left, photo filling the right half.",
     lambda h: split(h, True), {"image_center": [0.75, 0.5], "image_area": 0.5,
                                "text_center": [0.25, 0.45], "text_weight": 0.3}),
    ("split_text_right", "Photo filling the left half, copy on the right.",
     lambda h: split(h, False), {"image_center": [0.25, 0.5], "image_area": 0.5,
                                 "text_center": [0.75, 0.45], "text_weight": 0.3}),
    ("centered_product", "Product card centred on a brand colour field, headline above.",
     centered_product, {"image_center": [0.5, 0.52], "image_area": 0.4,
                        "text_center": [0.5, 0.2], "text_weight": 0.15}),
    ("top_headline", "Big headline on top, the product photo below it.",
     top_headline, {"image_center": [0.5, 0.72], "image_area": 0.45,
                    "text_center": [0.45, 0.2], "text_weight": 0.45}),
    ("full_bleed_scrim", "Full-bleed photo with a dark scrim carrying white copy.",
     full_bleed_scrim, {"image_center": [0.5, 0.45], "image_area": 1.0,
                        "text_center": [0.4, 0.82], "text_weight": 0.1}),
    ("offer_badge", "Headline top left, round product crop bottom right with a badge.",
     offer_badge, {"image_center": [0.68, 0.68], "image_area": 0.3,
                   "text_center": [0.3, 0.28], "text_weight": 0.55}),
    ("text_poster", "Minimal type-led poster: huge headline, small product medallion.",
     text_poster, {"image_center": [0.5, 0.82], "image_area": 0.03,
                   "text_center": [0.5, 0.42], "text_weight": 0.9}),
    ("framed_card", "White card framed by the brand colour: photo above, copy below.",
     framed_card, {"image_center": [0.5, 0.33], "image_area": 0.4,
                   "text_center": [0.45, 0.75], "text_weight": 0.3}),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, desc, build, comp in LAYOUTS:
        variants = {}
        for key, h in SIZES.items():
            t = build(h)
            variants[key] = {"root": "root", "nodes": t.nodes}
        doc = {"name": name, "description": desc, "composition": comp, "variants": variants}
        with open(os.path.join(here, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()

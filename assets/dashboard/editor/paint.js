// adforge editor: choosing colours and images. A colour offers the brand's palettes
// first, then the colours already in the design, then any colour (the browser's picker);
// an image slot offers the brand's logos and the product's images and cut-outs.

import * as M from "./model.js";
import { h } from "./dom.js";

/** The distinct solid colours of the tree, most used first (at most `max`). */
export function designColors(doc, max) {
  const count = new Map();
  for (const n of Object.values(doc.nodes)) {
    for (const list of [n.fills, n.strokes]) {
      for (const p of list || []) {
        if (p.type === "SOLID" && p.color) {
          const hex = M.hexOf(p.color);
          count.set(hex, (count.get(hex) || 0) + 1);
        }
      }
    }
  }
  return [...count.entries()].sort((a, b) => b[1] - a[1]).slice(0, max).map(([hex]) => hex);
}

/**
 * The colour control of one solid paint: swatch buttons (brand palettes, then the
 * design's colours) and a colour input. `set(hex, final)` applies a colour.
 */
export function colorControl(ed, id, what, current, set) {
  const groups = [];
  for (const p of ed.data.palettes) {
    groups.push({ name: "Brand: " + p.name, colors: p.colors });
  }
  groups.push({ name: "In this design", colors: designColors(ed.doc, 10) });
  const box = h("div", { class: "ed-color" });
  for (const g of groups) {
    if (!g.colors.length) continue;
    const sw = h("div", { class: "swatches", role: "group", "aria-label": g.name + " colours for " + what });
    sw.append(h("span", { class: "swatch-group", text: g.name, "aria-hidden": "true" }));
    g.colors.forEach((hex, i) => {
      const c = hex.slice(0, 7).toLowerCase();
      const b = h("button", {
        type: "button", class: "swatch", "aria-label": g.name + " " + (i + 1) + ": " + c.toUpperCase(),
        "aria-pressed": String(c === current), dataset: { hex: c },
        onclick: () => set(c, true),
      });
      b.style.backgroundColor = c;
      sw.append(b);
    });
    box.append(sw);
  }
  const inputId = "p-" + what.replace(/[^a-z0-9]+/gi, "-").toLowerCase();
  const input = h("input", { type: "color", id: inputId, value: current });
  input.addEventListener("input", () => set(input.value, false));
  input.addEventListener("change", () => set(input.value, true));
  box.append(h("div", { class: "ed-field inline" }, h("label", { for: inputId, text: "Any colour" }), input));
  return box;
}

/** The image choices for node `id`: buttons with thumbnails, the current one pressed. */
export function imageChooser(ed, id) {
  const doc = ed.doc;
  const n = doc.nodes[id];
  const paint = (n.fills || []).find((p) => p.type === "IMAGE");
  const current = paint ? paint[M.imageKey(paint)] : null;
  const name = M.label(doc, id);
  const box = h("fieldset", { class: "ed-images" }, h("legend", { text: paint ? "Image" : "Fill with an image" }));
  if (!ed.data.images.length) {
    box.append(h("p", { class: "hint", text: ed.data.kind === "ad"
      ? "The brand and product have no images yet: upload them with POST /v1/images."
      : "The organisation has no product images or logos yet." }));
  }
  let group = null;
  let list = null;
  for (const img of ed.data.images) {
    if (img.group !== group) {
      group = img.group;
      list = h("div", { class: "image-choices", role: "group", "aria-label": group });
      box.append(h("p", { class: "image-group", text: group }), list);
    }
    list.append(h("button", {
      type: "button", class: "image-choice", "aria-pressed": String(img.url === current),
      "aria-label": (img.url === current ? "Current image: " : "Use ") + img.label + " in " + name,
      onclick: () => ed.change("Swapped the image of " + name, null, (d) => M.setImage(d, id, img.url)),
    }, h("img", { src: img.thumb || img.url, alt: "", loading: "lazy", width: 56, height: 56 }),
    h("span", { text: img.label })));
  }
  if (paint) {
    const sel = h("select", { id: "p-scale" },
      ["FILL", "FIT"].map((m) => h("option", { value: m, selected: (paint.scaleMode || "FILL") === m,
        text: m === "FILL" ? "Fill the box (cropped)" : "Fit inside the box" })));
    sel.addEventListener("change", () => ed.change("Changed how the image of " + name + " fits", null, (d) => {
      d.nodes[id].fills.find((p) => p.type === "IMAGE").scaleMode = sel.value;
    }));
    box.append(h("div", { class: "ed-field" }, h("label", { for: "p-scale", text: "Placement" }), sel));
  }
  return box;
}

// adforge editor: the side panel of the selected node: place and size; for text its words,
// font, size, weight, alignment and line height; fills and strokes (solid colours with the
// brand's palette first, image fills swapped among the brand's and product's images).
// The panel is rebuilt when the selection or the tree changes from elsewhere; its own
// edits leave it as it is, so typing and the colour picker keep their focus.

import * as M from "./model.js";
import { h, field } from "./dom.js";
import { colorControl, imageChooser } from "./paint.js";
import { keyOf, restore } from "./layers.js";

const WEIGHTS = [[100, "Thin"], [200, "Extra light"], [300, "Light"], [400, "Regular"],
  [500, "Medium"], [600, "Semibold"], [700, "Bold"], [800, "Extra bold"], [900, "Black"]];
const ALIGN = [["LEFT", "Left"], ["CENTER", "Centre"], ["RIGHT", "Right"], ["JUSTIFIED", "Justified"]];

export class Panel {
  constructor(ed) {
    this.ed = ed;
    this.box = document.getElementById("ed-props");
    this.title = document.getElementById("ed-sel-name");
  }

  render() {
    const focus = keyOf(document.activeElement, this.box);
    const ed = this.ed;
    const doc = ed.doc;
    const id = ed.selected;
    this.box.replaceChildren();
    if (!id || !doc.nodes[id]) {
      this.title.textContent = "nothing selected";
      this.box.append(h("p", { class: "hint", text: "Pick a part of the picture: click it, move to it with Tab, or choose it in the layers." }));
      return;
    }
    const n = doc.nodes[id];
    const name = M.label(doc, id);
    this.title.textContent = name;
    const isRoot = id === M.rootId(doc);
    if (!isRoot && !ed.narrow) {
      this.box.append(h("div", { class: "ed-actions" },
        h("button", { type: "button", class: "small secondary", id: "p-duplicate", onclick: () => ed.duplicate(id), text: "Duplicate" }),
        h("button", { type: "button", class: "small danger", id: "p-delete", onclick: () => ed.remove(id), text: "Delete" })));
    }
    this.box.append(this.geometry(id, n, name, isRoot));
    if (n.type === "TEXT") this.box.append(this.text(id, n, name));
    if (n.type !== "GROUP" && n.type !== "EFFECT") {
      this.box.append(this.paints(id, n, name, "fills"));
      this.box.append(this.paints(id, n, name, "strokes"));
      if (n.type !== "TEXT") this.box.append(imageChooser(ed, id));
    }
    restore(this.box, focus);
  }

  set(label, key, fn, quiet) {
    this.ed.change(label, key, fn, quiet === false ? null : "panel");
  }

  geometry(id, n, name, isRoot) {
    const ed = this.ed;
    const b = ed.canvas.boxes.get(id);
    const s = ed.canvas.scale;
    const flow = M.inFlow(ed.doc, id);
    const fs = h("fieldset", { class: "ed-box" }, h("legend", { text: "Place and size (design pixels)" }));
    const num = (key, label, value, disabled, apply) => {
      const input = h("input", { type: "number", id: "p-" + key, step: "1", value: String(Math.round(value * 100) / 100), disabled: disabled || ed.narrow });
      input.addEventListener("change", () => {
        const v = Number(input.value);
        if (!Number.isFinite(v)) return;
        this.set(label + " of " + name + " set to " + v, null, (d) => apply(d, v));
      });
      return field(label, input);
    };
    const w = n.width !== undefined ? n.width : b ? b.width / s : 0;
    const hh = n.height !== undefined ? n.height : b ? b.height / s : 0;
    fs.append(h("div", { class: "ed-grid" },
      num("x", "X", n.x || 0, isRoot || flow, (d, v) => M.setBox(d, id, { x: v })),
      num("y", "Y", n.y || 0, isRoot || flow, (d, v) => M.setBox(d, id, { y: v })),
      num("w", "Width", w, isRoot, (d, v) => M.setBox(d, id, { width: v })),
      num("h", "Height", hh, isRoot, (d, v) => M.setBox(d, id, { height: v }))));
    if (isRoot) fs.append(h("p", { class: "hint", text: "The whole design: its size is the ad's format." }));
    else if (flow) fs.append(h("p", { class: "hint", text: "Placed by its auto-layout frame: drag it, or use the arrow keys, to change its place in the order." }));
    return fs;
  }

  text(id, n, name) {
    const ed = this.ed;
    const fs = h("fieldset", { class: "ed-text" }, h("legend", { text: "Text" }));
    const words = h("textarea", { id: "p-text", rows: 3, maxlength: 5000 });
    words.value = n.characters || "";
    words.addEventListener("focus", () => ed.history.seal());
    words.addEventListener("input", () => this.set("Changed the text of " + name, "text:" + id,
      (d) => { d.nodes[id].characters = words.value; }));
    fs.append(field("Words", words));

    const family = n.fontFamily || (n.style && n.style.fontFamily) || "Inter";
    const fonts = ed.data.fonts.slice();
    if (!fonts.some((f) => f.name === family)) fonts.unshift({ name: family, brand: false, missing: true });
    const font = h("select", { id: "p-font" }, fonts.map((f) => h("option", {
      value: f.name, selected: f.name === family,
      text: f.name + (f.brand ? " (brand)" : "") + (f.missing ? " (not installed: Inter is used)" : ""),
    })));
    font.addEventListener("change", () => this.set("Changed the font of " + name, null, (d) => { d.nodes[id].fontFamily = font.value; }));

    const size = h("input", { type: "number", id: "p-size", min: 1, max: 1000, step: 1, value: String(n.fontSize || (n.style && n.style.fontSize) || 16) });
    size.addEventListener("change", () => {
      const v = Number(size.value);
      if (v >= 1) this.set("Changed the text size of " + name, null, (d) => M.setFontSize(d, id, v));
    });
    const weightNow = n.fontWeight || (n.style && n.style.fontWeight) || 400;
    const weights = WEIGHTS.some(([v]) => v === weightNow) ? WEIGHTS : WEIGHTS.concat([[weightNow, String(weightNow)]]);
    const weight = h("select", { id: "p-weight" }, weights.map(([v, l]) => h("option", { value: v, selected: v === weightNow, text: v + " " + l })));
    weight.addEventListener("change", () => this.set("Changed the weight of " + name, null, (d) => { d.nodes[id].fontWeight = Number(weight.value); }));
    const lh = h("input", { type: "number", id: "p-line-height", min: 50, max: 400, step: 5, value: String(M.lineHeightPercent(n)) });
    lh.addEventListener("change", () => {
      const v = Number(lh.value);
      if (v > 0) this.set("Changed the line height of " + name, null, (d) => M.setLineHeight(d, id, v));
    });
    fs.append(h("div", { class: "ed-grid" }, field("Font", font), field("Size", size), field("Weight", weight), field("Line height (%)", lh)));

    const alignNow = n.textAlignHorizontal || "LEFT";
    const align = h("fieldset", { class: "ed-align" }, h("legend", { text: "Alignment" }));
    for (const [v, l] of ALIGN) {
      const r = h("input", { type: "radio", name: "p-align", id: "p-align-" + v.toLowerCase(), value: v, checked: v === alignNow });
      r.addEventListener("change", () => this.set("Aligned " + name + " " + l.toLowerCase(), null, (d) => { d.nodes[id].textAlignHorizontal = v; }));
      align.append(h("label", { class: "check", for: r.id }, r, l));
    }
    fs.append(align);
    return fs;
  }

  paints(id, n, name, list) {
    const ed = this.ed;
    const isText = n.type === "TEXT";
    const noun = list === "fills" ? (isText ? "Text colour" : "Fill") : "Stroke";
    const fs = h("fieldset", { class: "ed-paints" }, h("legend", { text: list === "fills" ? (isText ? "Text colour" : "Fills") : "Strokes" }));
    const paints = n[list] || [];
    paints.forEach((p, i) => {
      const what = name + " " + noun.toLowerCase() + (paints.length > 1 ? " " + (i + 1) : "");
      const row = h("div", { class: "ed-paint" });
      if (p.type === "SOLID") {
        row.append(colorControl(ed, id, what, M.hexOf(p.color || {}), (hex, final) =>
          this.set("Changed the " + (list === "fills" ? "colour" : "stroke colour") + " of " + name,
            list + ":" + id + ":" + i, (d) => M.setSolid(d, id, list, i, hex), !final)));
      } else if (p.type === "IMAGE") {
        row.append(h("p", { class: "hint", text: "An image (choose it below)." }));
      } else {
        row.append(h("p", { class: "hint", text: p.type.replace("GRADIENT_", "").toLowerCase() + " gradient: kept as it is." }));
      }
      row.append(h("button", { type: "button", class: "small secondary", id: "p-" + list + "-remove-" + i,
        text: "Remove", "aria-label": "Remove " + what,
        onclick: () => this.set("Removed a " + noun.toLowerCase() + " of " + name, null, (d) => M.removePaint(d, id, list, i), false) }));
      fs.append(row);
    });
    if (list === "strokes" && paints.length) {
      const wt = h("input", { type: "number", id: "p-stroke-weight", min: 0, max: 500, step: 1, value: String(n.strokeWeight === undefined ? 1 : n.strokeWeight) });
      wt.addEventListener("change", () => {
        const v = Number(wt.value);
        if (v >= 0) this.set("Changed the stroke width of " + name, null, (d) => { d.nodes[id].strokeWeight = v; });
      });
      fs.append(field("Stroke width", wt));
    }
    if (!(isText && list === "fills" && paints.length)) {
      const first = ed.data.palettes.length ? ed.data.palettes[0].colors[0] : "#111111";
      fs.append(h("button", { type: "button", class: "small secondary", id: "p-add-" + list,
        text: list === "fills" ? "Add a fill" : "Add a stroke",
        onclick: () => this.set("Added a " + noun.toLowerCase() + " to " + name, null, (d) => M.addPaint(d, id, list, first.slice(0, 7)), false) }));
    }
    return fs;
  }
}

// adforge editor: an editable ad or a design template on its own picture. Loaded as an ES
// module from /dashboard/assets/editor/ (the page's policy allows only this server's
// scripts). The page carries the tree's JSON text and what the panel offers (brand
// palettes, images, fonts) in a JSON data block; previews and Save go to the dashboard's
// own endpoints with the session's CSRF token in a header (never an API key).
//
// Every change goes through `change()`: the tree is edited in place, its new text is
// recorded for undo, the layer list, panel and boxes are redrawn, and a preview is asked
// for. The time from a change to its picture on screen is kept in `data-change-ms` on the
// picture (the browser test reads it).

import * as M from "./model.js";
import { History } from "./history.js";
import { Previewer } from "./preview.js";
import { Canvas } from "./canvas.js";
import { Layers } from "./layers.js";
import { Panel } from "./panel.js";

const $ = (id) => document.getElementById(id);

class Editor {
  constructor(data) {
    this.data = data;
    this.doc = JSON.parse(data.tree);
    this.history = new History(data.tree);
    this.selected = null;
    this.rev = 0;
    this.changedAt = new Map();
    const narrow = window.matchMedia("(max-width: 700px)");
    this.narrow = narrow.matches;
    narrow.addEventListener("change", (e) => { this.narrow = e.matches; this.refresh(null); });
    this.canvas = new Canvas(this);
    this.layers = new Layers(this);
    this.panel = new Panel(this);
    this.json = $("ed-json");
    this.previewer = new Previewer({
      url: data.preview_url,
      csrf: data.csrf,
      show: (answer, rev, seq) => this.show(answer, rev, seq),
      fail: (message, details) => this.alert(message, details),
      busy: (b) => { $("ed-stage").classList.toggle("busy", b); },
    });
    this.wire();
    this.canvas.fit();
    this.refresh(null);
    this.preview(true);
  }

  wire() {
    $("ed-undo").addEventListener("click", () => this.undo());
    $("ed-redo").addEventListener("click", () => this.redo());
    $("ed-add-text").addEventListener("click", () => this.add("text"));
    $("ed-add-shape").addEventListener("click", () => this.add("shape"));
    $("ed-save").addEventListener("submit", (e) => { e.preventDefault(); this.save(); });
    $("ed-summary").addEventListener("input", () => { this.summaryTouched = true; });
    document.addEventListener("keydown", (e) => this.shortcut(e));
    window.addEventListener("beforeunload", (e) => {
      if (this.history.dirty() && !this.leaving) { e.preventDefault(); e.returnValue = ""; }
    });
    let t = null;
    window.addEventListener("resize", () => {
      clearTimeout(t);
      t = setTimeout(() => { if (this.canvas.fit()) this.preview(true); }, 150);
    });
  }

  shortcut(e) {
    const mod = e.ctrlKey || e.metaKey;
    // Typing in place keeps the text field's own undo; the toolbar's Undo still works.
    if (!mod || e.altKey || this.canvas.inplace) return;
    const k = e.key.toLowerCase();
    if (k === "z" && !e.shiftKey) { e.preventDefault(); this.undo(); }
    else if ((k === "z" && e.shiftKey) || k === "y") { e.preventDefault(); this.redo(); }
    else if (k === "d" && this.selected && !this.narrow && document.activeElement.closest(".node, #ed-layers")) {
      e.preventDefault();
      this.duplicate(this.selected);
    }
  }

  /** Applies `fn` to the tree and records it; `key` merges a run of the same edit. */
  change(label, key, fn, source) {
    fn(this.doc);
    if (!this.history.push(JSON.stringify(this.doc), label, key)) return false;
    this.changed(source);
    return true;
  }

  changed(source) {
    this.rev++;
    this.changedAt.set(this.rev, performance.now());
    if (this.selected && !this.doc.nodes[this.selected]) this.selected = null;
    this.refresh(source);
    this.preview(false);
  }

  refresh(source) {
    this.layers.render();
    if (source !== "panel") this.panel.render();
    this.canvas.draw();
    const h = this.history;
    const u = $("ed-undo");
    const r = $("ed-redo");
    u.disabled = !h.canUndo();
    r.disabled = !h.canRedo();
    u.title = h.undoLabel() ? "Undo: " + h.undoLabel() : "Nothing to undo";
    r.title = h.redoLabel() ? "Redo: " + h.redoLabel() : "Nothing to redo";
    const dirty = h.dirty();
    $("ed-dirty").textContent = dirty ? "Unsaved changes" : "No unsaved changes";
    $("ed-save-button").disabled = !dirty;
    if (!this.summaryTouched) $("ed-summary").value = h.summary();
    this.json.value = h.text;
    $("ed-stage").dataset.rev = String(this.rev);
  }

  preview(now) {
    this.previewer.request(this.history.text, this.rev, this.canvas.previewWidth(), now);
    $("ed-stage").dataset.asked = String(this.previewer.seq);
  }

  async show(answer, rev, seq) {
    const img = this.canvas.img;
    img.src = answer.image;
    try { await img.decode(); } catch (_) { /* replaced by a newer picture, or shown when loaded */ }
    if (this.previewer.shown !== seq) return;
    this.canvas.layout(answer.layout);
    await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
    const at = this.changedAt.get(rev);
    img.dataset.rev = String(rev);
    img.dataset.seq = String(seq);
    if (at !== undefined) img.dataset.changeMs = String(Math.round(performance.now() - at));
    for (const k of this.changedAt.keys()) if (k <= rev) this.changedAt.delete(k);
    $("ed-status").textContent = "Preview " + answer.layout.width + "×" + answer.layout.height +
      " px, rendered in " + Math.round(answer.render_ms) + " ms" + (rev === this.rev ? "." : "; a newer one is on its way.");
    if (rev === this.rev) this.alert(null);
  }

  alert(message, details) {
    const box = $("ed-alert");
    box.replaceChildren();
    if (!message) { box.hidden = true; return; }
    box.hidden = false;
    const p = document.createElement("p");
    p.textContent = message;
    box.append(p);
    for (const d of details || []) {
      const q = document.createElement("p");
      q.textContent = (d.field ? d.field + ": " : "") + d.message;
      box.append(q);
    }
  }

  select(id, from) {
    if (id === this.selected) return;
    this.selected = id;
    this.history.seal();
    this.layers.render();
    this.panel.render();
    this.canvas.drawSelection();
  }

  undo() {
    const t = this.history.undo();
    if (t === null) return;
    this.doc = JSON.parse(t);
    this.changed(null);
  }

  redo() {
    const t = this.history.redo();
    if (t === null) return;
    this.doc = JSON.parse(t);
    this.changed(null);
  }

  duplicate(id) {
    let copy = null;
    this.change("Duplicated " + M.label(this.doc, id), null, (d) => { copy = M.duplicate(d, id); });
    if (copy) this.select(copy, "layers");
  }

  remove(id) {
    const parent = M.parentMap(this.doc).get(id);
    if (!parent) return;
    const name = M.label(this.doc, id);
    const onCanvas = document.activeElement && document.activeElement.closest(".node");
    this.change("Deleted " + name, null, (d) => M.remove(d, id));
    this.select(parent, "layers");
    if (onCanvas) this.canvas.focusNode(parent);
  }

  add(what) {
    const palette = this.data.palettes.length ? this.data.palettes[0].colors : [];
    const font = (this.data.fonts.find((f) => f.brand) || { name: "Inter" }).name;
    let id = null;
    this.change(what === "text" ? "Added a text" : "Added a shape", null, (d) => {
      id = what === "text"
        ? M.addText(d, this.selected, { font, ink: palette[1] || "#111111" })
        : M.addShape(d, this.selected, { color: palette[0] || "#2450d6" });
    });
    if (id) this.select(id, "layers");
  }

  async save() {
    if (!this.history.dirty()) { this.alert("Nothing has changed since this version, so there is nothing to save."); return; }
    const button = $("ed-save-button");
    button.disabled = true;
    const summary = $("ed-summary").value.trim() || this.history.summary();
    const body = '{"tree":' + this.history.text + ',"base_version":' + this.data.version +
      ',"change_summary":' + JSON.stringify(summary) + "}";
    try {
      const res = await fetch(this.data.save_url, {
        method: "POST", credentials: "same-origin", body,
        headers: { "Content-Type": "application/json", "X-CSRF-Token": this.data.csrf, Accept: "application/json" },
      });
      const answer = await res.json().catch(() => null);
      if (res.ok && answer && answer.url) {
        this.history.markSaved();
        this.leaving = true;
        $("ed-dirty").textContent = "Saved as version " + answer.version + ".";
        window.location.assign(answer.url);
        return;
      }
      const err = (answer && answer.error) || { message: "Saving failed (HTTP " + res.status + ")." };
      this.alert(err.message, err.details);
    } catch (e) {
      this.alert("Saving failed: " + e.message);
    }
    button.disabled = false;
  }
}

const data = JSON.parse($("ed-data").textContent);
window.adforgeEditor = new Editor(data);

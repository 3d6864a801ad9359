// adforge editor: the picture and what sits over it. Every visible node has a focusable
// box over the place the renderer put it (from the preview's laid-out boxes), in tree
// order, so the pointer outlines and picks the top-most node and Tab walks the nodes.
// A selected node gets a frame with resize handles. Dragging moves a node (or, inside an
// auto-layout frame, reorders it); handles resize it (Shift keeps the ratio); arrow keys
// nudge (Shift: 10 px); Enter or a double click edits a text in place.

import * as M from "./model.js";

const HANDLES = ["nw", "n", "ne", "e", "se", "s", "sw", "w"];
/** Pointer travel (CSS px) before a press becomes a drag. */
const DRAG_START = 3;

export class Canvas {
  constructor(ed) {
    this.ed = ed;
    this.stage = document.getElementById("ed-stage");
    this.img = document.getElementById("ed-picture");
    this.overlay = document.getElementById("ed-overlay");
    this.frame = document.getElementById("ed-selection");
    this.marker = document.getElementById("ed-marker");
    this.boxes = new Map();
    this.els = new Map();
    this.cssW = 0;
    this.cssH = 0;
    this.scale = 1;
    this.inplace = null;
    for (const h of HANDLES) {
      const d = document.createElement("div");
      d.className = "handle h-" + h;
      d.dataset.handle = h;
      this.frame.appendChild(d);
    }
    this.overlay.addEventListener("pointerdown", (e) => this.press(e));
    this.frame.addEventListener("pointerdown", (e) => this.pressHandle(e));
    this.overlay.addEventListener("focusin", (e) => {
      const el = e.target.closest(".node");
      if (el && el.dataset.id !== this.ed.selected) this.ed.select(el.dataset.id, "canvas");
    });
    this.overlay.addEventListener("keydown", (e) => this.key(e));
    this.overlay.addEventListener("dblclick", (e) => {
      const el = e.target.closest(".node");
      if (el) this.editText(el.dataset.id);
    });
  }

  /** Sizes the picture to the space it has; true when the size changed. */
  fit() {
    const doc = this.ed.doc;
    const root = doc.nodes[M.rootId(doc)];
    const dw = root.width || 1080;
    const dh = root.height || 1080;
    const availW = this.stage.parentElement.clientWidth || 600;
    const availH = Math.max(280, window.innerHeight - 200);
    const w = Math.max(120, Math.floor(Math.min(availW, availH * dw / dh)));
    const h = Math.round(w * dh / dw);
    if (w === this.cssW && h === this.cssH) return false;
    if (this.cssW) {
      // Until the next preview, the boxes scale with the picture.
      const k = w / this.cssW;
      for (const b of this.boxes.values()) {
        b.x *= k; b.y *= k; b.width *= k; b.height *= k;
        if (b.fontSize) b.fontSize *= k;
      }
    }
    this.cssW = w;
    this.cssH = h;
    this.scale = w / dw;
    this.stage.style.width = w + "px";
    this.stage.style.height = h + "px";
    this.stage.dataset.scale = String(this.scale);
    if (this.boxes.size) this.draw();
    return true;
  }

  /** Pixels to ask the server for: the picture's size on this screen, at most 1080. */
  previewWidth() {
    return Math.max(64, Math.min(1080, Math.round(this.cssW * (window.devicePixelRatio || 1))));
  }

  /** Puts a preview's boxes (preview pixels) over the picture. */
  layout(layout) {
    const k = this.cssW / layout.width;
    this.boxes = new Map();
    for (const n of layout.nodes) {
      if (!n.visible) continue;
      this.boxes.set(n.id, {
        x: n.x * k, y: n.y * k, width: n.width * k, height: n.height * k,
        rotation: n.rotation || 0, fontSize: n.font_size ? n.font_size * k : null,
      });
    }
    this.draw();
  }

  /** Moves the boxes of `id` and everything under it by (dx, dy) CSS px until the next preview. */
  shift(id, dx, dy) {
    const doc = this.ed.doc;
    const visit = (x) => {
      const b = this.boxes.get(x);
      if (b) { b.x += dx; b.y += dy; }
      for (const c of (doc.nodes[x] && doc.nodes[x].children) || []) visit(c);
    };
    visit(id);
  }

  draw() {
    const doc = this.ed.doc;
    const want = [];
    for (const { id } of M.walk(doc)) {
      const b = this.boxes.get(id);
      if (!b || M.isHidden(doc, id)) continue;
      let el = this.els.get(id);
      if (!el) {
        el = document.createElement("div");
        el.className = "node";
        el.dataset.id = id;
        el.setAttribute("role", "button");
        el.setAttribute("aria-describedby", "ed-keys");
        this.els.set(id, el);
      }
      const locked = M.isLocked(doc, id);
      el.setAttribute("aria-label", M.label(doc, id) + ", " + M.kindWord(doc, id) + (locked ? ", locked" : ""));
      el.tabIndex = locked ? -1 : 0;
      el.classList.toggle("locked", locked);
      el.classList.toggle("root", id === M.rootId(doc));
      el.classList.toggle("selected", id === this.ed.selected);
      if (id === this.ed.selected) el.setAttribute("aria-current", "true");
      else el.removeAttribute("aria-current");
      place(el, b);
      want.push(el);
    }
    for (const [id, el] of this.els) {
      if (!want.includes(el)) { el.remove(); this.els.delete(id); }
    }
    const kids = this.overlay.children;
    const same = kids.length === want.length && want.every((el, i) => kids[i] === el);
    if (!same) {
      const active = document.activeElement;
      for (const el of want) this.overlay.appendChild(el);
      if (active && want.includes(active)) active.focus({ preventScroll: true });
    }
    this.drawSelection();
  }

  drawSelection() {
    const id = this.ed.selected;
    const b = id && this.boxes.get(id);
    for (const [x, el] of this.els) {
      el.classList.toggle("selected", x === id);
      if (x === id) el.setAttribute("aria-current", "true");
      else el.removeAttribute("aria-current");
    }
    if (!b || M.isHidden(this.ed.doc, id)) { this.frame.hidden = true; return; }
    this.frame.hidden = false;
    place(this.frame, b);
    this.frame.classList.toggle("fixed", !this.resizable(id));
  }

  focusNode(id) {
    const el = this.els.get(id);
    if (el) el.focus({ preventScroll: true });
  }

  movable(id) {
    const doc = this.ed.doc;
    return !this.ed.narrow && id !== M.rootId(doc) && !M.isLocked(doc, id);
  }

  resizable(id) {
    const b = this.boxes.get(id);
    return this.movable(id) && b && Math.abs(b.rotation) < 0.01 && this.ed.doc.nodes[id].type !== "GROUP";
  }

  // --- pointer ---------------------------------------------------------------------------

  press(e) {
    const el = e.target.closest(".node");
    if (!el || e.button !== 0 || this.inplace) return;
    const id = el.dataset.id;
    e.preventDefault();
    this.ed.select(id, "canvas");
    el.focus({ preventScroll: true });
    if (!this.movable(id)) return;
    const doc = this.ed.doc;
    const flow = M.inFlow(doc, id);
    const start = { x: e.clientX, y: e.clientY };
    let moved = false;
    el.setPointerCapture(e.pointerId);
    const move = (ev) => {
      const dx = ev.clientX - start.x;
      const dy = ev.clientY - start.y;
      if (!moved && Math.hypot(dx, dy) < DRAG_START) return;
      moved = true;
      this.stage.classList.add("dragging");
      if (flow) this.showMarker(id, ev);
      else {
        el.style.translate = dx + "px " + dy + "px";
        this.frame.style.translate = dx + "px " + dy + "px";
      }
    };
    const up = (ev) => {
      el.removeEventListener("pointermove", move);
      el.removeEventListener("pointerup", up);
      el.removeEventListener("pointercancel", up);
      el.style.translate = "";
      this.frame.style.translate = "";
      this.marker.hidden = true;
      this.stage.classList.remove("dragging");
      if (!moved || ev.type === "pointercancel") return;
      const dx = ev.clientX - start.x;
      const dy = ev.clientY - start.y;
      if (flow) this.dropInFlow(id, ev);
      else this.moveBy(id, dx, dy);
    };
    el.addEventListener("pointermove", move);
    el.addEventListener("pointerup", up);
    el.addEventListener("pointercancel", up);
  }

  /** Where the pointer is, in the stage's CSS pixels. */
  local(ev) {
    const r = this.stage.getBoundingClientRect();
    return { x: ev.clientX - r.left, y: ev.clientY - r.top };
  }

  showMarker(id, ev) {
    const doc = this.ed.doc;
    const parents = M.parentMap(doc);
    const p = parents.get(id);
    const axis = M.flowAxis(doc, p);
    const at = this.local(ev);
    const others = doc.nodes[p].children.filter((c) => c !== id && M.inFlow(doc, c, parents) && this.boxes.has(c));
    const pb = this.boxes.get(p);
    if (!pb) return;
    let pos = null;
    for (const c of others) {
      const b = this.boxes.get(c);
      const mid = axis === "x" ? b.x + b.width / 2 : b.y + b.height / 2;
      if ((axis === "x" ? at.x : at.y) < mid) { pos = axis === "x" ? b.x : b.y; break; }
    }
    if (pos === null) {
      const last = others.length ? this.boxes.get(others[others.length - 1]) : pb;
      pos = axis === "x" ? last.x + (others.length ? last.width : 0) : last.y + (others.length ? last.height : 0);
    }
    const m = this.marker.style;
    this.marker.hidden = false;
    this.marker.className = "marker " + axis;
    if (axis === "x") { m.left = pos - 1 + "px"; m.top = pb.y + "px"; m.width = "3px"; m.height = pb.height + "px"; }
    else { m.left = pb.x + "px"; m.top = pos - 1 + "px"; m.width = pb.width + "px"; m.height = "3px"; }
  }

  dropInFlow(id, ev) {
    const doc = this.ed.doc;
    const p = M.parentMap(doc).get(id);
    const at = this.local(ev);
    const index = M.flowIndex(doc, id, M.flowAxis(doc, p) === "x" ? at.x : at.y, this.boxes);
    this.ed.change("Reordered " + M.label(doc, id), null, (d) => M.reorder(d, id, index));
  }

  /** Moves a node by (dx, dy) CSS px: whole design pixels in its parent's frame. */
  moveBy(id, dx, dy) {
    const doc = this.ed.doc;
    const b = this.boxes.get(id);
    const own = doc.nodes[id].rotation || 0;
    const t = ((b ? b.rotation : own) - own) * Math.PI / 180;
    const lx = (dx * Math.cos(t) - dy * Math.sin(t)) / this.scale;
    const ly = (dx * Math.sin(t) + dy * Math.cos(t)) / this.scale;
    const ddx = Math.round(lx);
    const ddy = Math.round(ly);
    if (!ddx && !ddy) return;
    this.shift(id, dx, dy);
    this.ed.change("Moved " + M.label(doc, id), null, (d) => M.moveBy(d, id, ddx, ddy));
  }

  pressHandle(e) {
    const h = e.target.dataset && e.target.dataset.handle;
    const id = this.ed.selected;
    if (!h || !id || e.button !== 0 || !this.resizable(id)) return;
    e.preventDefault();
    e.stopPropagation();
    const doc = this.ed.doc;
    const n = doc.nodes[id];
    const b0 = Object.assign({}, this.boxes.get(id));
    const s = this.scale;
    const start = { x: e.clientX, y: e.clientY };
    const w0 = n.width !== undefined ? n.width : b0.width / s;
    const h0 = n.height !== undefined ? n.height : b0.height / s;
    const flow = M.inFlow(doc, id);
    let next = null;
    const handle = e.target;
    handle.setPointerCapture(e.pointerId);
    const move = (ev) => {
      next = resized(h, w0, h0, (ev.clientX - start.x) / s, (ev.clientY - start.y) / s, ev.shiftKey);
      place(this.frame, {
        x: b0.x + next.dx * s, y: b0.y + next.dy * s,
        width: next.width * s, height: next.height * s, rotation: 0,
      });
    };
    const up = () => {
      handle.removeEventListener("pointermove", move);
      handle.removeEventListener("pointerup", up);
      handle.removeEventListener("pointercancel", up);
      if (!next) return this.drawSelection();
      const box = {};
      if (next.width !== w0) box.width = next.width;
      if (next.height !== h0) box.height = next.height;
      if (!flow) { box.x = (n.x || 0) + next.dx; box.y = (n.y || 0) + next.dy; }
      this.boxes.set(id, Object.assign(b0, {
        x: b0.x + next.dx * s, y: b0.y + next.dy * s, width: next.width * s, height: next.height * s,
      }));
      this.ed.change("Resized " + M.label(doc, id), null, (d) => M.setBox(d, id, box));
    };
    handle.addEventListener("pointermove", move);
    handle.addEventListener("pointerup", up);
    handle.addEventListener("pointercancel", up);
  }

  // --- keyboard --------------------------------------------------------------------------

  key(e) {
    const el = e.target.closest(".node");
    if (!el || e.target !== el) return;
    const id = el.dataset.id;
    const doc = this.ed.doc;
    const arrows = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    if (arrows[e.key] && !e.ctrlKey && !e.metaKey) {
      e.preventDefault();
      if (!this.movable(id)) return;
      const [x, y] = arrows[e.key];
      const by = e.shiftKey ? 10 : 1;
      const name = M.label(doc, id);
      if (e.altKey) {
        const n = doc.nodes[id];
        const b = this.boxes.get(id);
        const w = n.width !== undefined ? n.width : b.width / this.scale;
        const h = n.height !== undefined ? n.height : b.height / this.scale;
        const box = x ? { width: Math.max(1, w + x * by) } : { height: Math.max(1, h + y * by) };
        this.ed.change("Resized " + name, "size:" + id, (d) => M.setBox(d, id, box));
      } else if (M.inFlow(doc, id)) {
        this.ed.change("Reordered " + name, null, (d) => M.step(d, id, x + y));
      } else {
        this.shift(id, x * by * this.scale, y * by * this.scale);
        this.ed.change("Moved " + name, "nudge:" + id, (d) => M.moveBy(d, id, x * by, y * by));
      }
    } else if (e.key === "Enter") {
      e.preventDefault();
      this.editText(id);
    } else if ((e.key === "Delete" || e.key === "Backspace") && !this.ed.narrow) {
      e.preventDefault();
      this.ed.remove(id);
    } else if (e.key === "Escape") {
      const p = M.parentMap(doc).get(id);
      if (p) { e.preventDefault(); this.ed.select(p, "canvas"); this.focusNode(p); }
    }
  }

  // --- text in place ---------------------------------------------------------------------

  /** Edits a text in place; on a frame (a button), its first text. */
  editText(at) {
    const doc = this.ed.doc;
    const id = firstText(doc, at);
    const n = id && doc.nodes[id];
    const b = id && this.boxes.get(id);
    if (!n || !b || this.inplace) return;
    if (id !== at) this.ed.select(id, "canvas");
    const ta = document.createElement("textarea");
    ta.className = "inplace";
    ta.value = n.characters || "";
    ta.setAttribute("aria-label", "Text of " + M.label(doc, id) + " (Escape to finish)");
    place(ta, { x: b.x, y: b.y, width: Math.max(b.width, 80), height: Math.max(b.height, 32), rotation: 0 });
    ta.style.fontSize = Math.max(12, Math.min(48, b.fontSize || 16)) + "px";
    this.stage.appendChild(ta);
    this.inplace = ta;
    this.ed.history.seal();
    ta.addEventListener("input", () => {
      this.ed.change("Changed the text of " + M.label(this.ed.doc, id), "text:" + id, (d) => {
        if (d.nodes[id]) d.nodes[id].characters = ta.value;
      }, "inplace");
    });
    const done = (refocus) => {
      if (this.inplace !== ta) return;
      this.inplace = null;
      ta.remove();
      this.ed.history.seal();
      if (refocus) this.focusNode(id);
    };
    ta.addEventListener("keydown", (e) => {
      if (e.key === "Escape" || (e.key === "Enter" && (e.ctrlKey || e.metaKey))) {
        e.preventDefault();
        e.stopPropagation();
        done(true);
      }
    });
    ta.addEventListener("blur", () => done(false));
    ta.focus();
    ta.select();
  }
}

/** `id` when it is a text, else its first visible text descendant (or null). */
function firstText(doc, id) {
  const n = doc.nodes[id];
  if (!n || M.isHidden(doc, id)) return null;
  if (n.type === "TEXT") return id;
  for (const c of n.children || []) {
    const t = firstText(doc, c);
    if (t) return t;
  }
  return null;
}

/** A node's box in CSS px: place and size, turned about its top-left corner. */
function place(el, b) {
  const s = el.style;
  s.left = b.x + "px";
  s.top = b.y + "px";
  s.width = Math.max(1, b.width) + "px";
  s.height = Math.max(1, b.height) + "px";
  s.transform = b.rotation ? "rotate(" + -b.rotation + "deg)" : "";
}

/**
 * A resize by handle `h` (nw…w) of a w0 × h0 box by (dx, dy) design px: the new size and
 * how far the top-left corner moves. With `keep`, the ratio stays (corners scale by the
 * larger change; edges carry the other side along).
 */
export function resized(h, w0, h0, dx, dy, keep) {
  let w = w0;
  let hh = h0;
  if (h.includes("e")) w = w0 + dx;
  if (h.includes("w")) w = w0 - dx;
  if (h.includes("s")) hh = h0 + dy;
  if (h.includes("n")) hh = h0 - dy;
  if (keep && w0 > 0 && h0 > 0) {
    const corner = h.length === 2;
    let k;
    if (corner) k = Math.abs(w / w0 - 1) >= Math.abs(hh / h0 - 1) ? w / w0 : hh / h0;
    else k = (h === "e" || h === "w") ? w / w0 : hh / h0;
    w = w0 * k;
    hh = h0 * k;
  }
  w = Math.max(1, Math.round(w));
  hh = Math.max(1, Math.round(hh));
  return {
    width: w, height: hh,
    dx: h.includes("w") ? w0 - w : 0,
    dy: h.includes("n") ? h0 - hh : 0,
  };
}

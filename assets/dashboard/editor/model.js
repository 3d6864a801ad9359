// adforge editor: reading and changing a JSON tree (docs/json-tree.md) in the browser.
// Every function here takes the parsed document `{root, nodes}` and changes it in place;
// the caller snapshots the text before and after (history.js), so nothing here needs to
// know about undo. Rust's `renderer::tree` owns trees on the server; this module is the
// browser's half of the same format and the server checks every tree it is sent exactly
// as PATCH does, so a tree this module breaks is refused, never saved.

/** Words for the slot names that generated trees keep as node names. */
const SLOT_WORDS = {
  headline: "Headline", supporting: "Supporting text", cta: "Call to action",
  cta_label: "Button label", eyebrow: "Eyebrow", brand: "Brand name", price: "Price",
  badge: "Badge", product_image: "Product image", photo: "Photo", logo: "Logo",
  background: "Background", copy: "Copy", scrim: "Scrim",
};

/** `Product Image`, `product-image` and `product_image` all name the slot `product_image`. */
export function slotKey(name) {
  return String(name).trim().toLowerCase().replace(/[\s-]+/g, "_");
}

const KIND_WORDS = {
  FRAME: "frame", GROUP: "group", RECTANGLE: "rectangle", ELLIPSE: "ellipse",
  TEXT: "text", VECTOR: "vector", EFFECT: "effect",
};

export function rootId(doc) {
  if (doc.root && doc.nodes[doc.root]) return doc.root;
  const parents = parentMap(doc);
  return Object.keys(doc.nodes).find((id) => !parents.has(id)) || null;
}

/** child id → parent id. */
export function parentMap(doc) {
  const map = new Map();
  for (const [id, n] of Object.entries(doc.nodes)) {
    for (const c of n.children || []) map.set(c, id);
  }
  return map;
}

/** Node ids from the root, parents before children, children in painting order. */
export function walk(doc) {
  const out = [];
  const seen = new Set();
  const visit = (id, depth) => {
    const n = doc.nodes[id];
    if (!n || seen.has(id)) return;
    seen.add(id);
    out.push({ id, depth });
    for (const c of n.children || []) visit(c, depth + 1);
  };
  visit(rootId(doc), 0);
  return out;
}

/** A node's name for people: its slot's words, its name, or its kind and text. */
export function label(doc, id) {
  const n = doc.nodes[id];
  if (!n) return id;
  if (id === rootId(doc)) return "Whole design";
  const name = n.name || (SLOT_WORDS[id] ? id : null);
  if (name) return SLOT_WORDS[slotKey(name)] || name;
  if (n.type === "TEXT" && n.characters) {
    const t = n.characters.replace(/\s+/g, " ").trim();
    return "Text “" + (t.length > 24 ? t.slice(0, 23) + "…" : t) + "”";
  }
  return (KIND_WORDS[n.type] || "node") + " " + id.slice(0, 8);
}

export function kindWord(doc, id) {
  const n = doc.nodes[id];
  return (n && KIND_WORDS[n.type]) || "node";
}

export function isHidden(doc, id) {
  return doc.nodes[id] && doc.nodes[id].visible === false;
}

export function isLocked(doc, id) {
  return !!(doc.nodes[id] && doc.nodes[id].locked === true);
}

/** True when the node's place is decided by its parent's auto-layout. */
export function inFlow(doc, id, parents) {
  const p = (parents || parentMap(doc)).get(id);
  const parent = p && doc.nodes[p];
  const n = doc.nodes[id];
  if (!parent || !n) return false;
  const mode = parent.layoutMode;
  return (mode === "HORIZONTAL" || mode === "VERTICAL") &&
    n.layoutPositioning !== "ABSOLUTE" && n.type !== "EFFECT";
}

export function flowAxis(doc, parentId) {
  return doc.nodes[parentId].layoutMode === "HORIZONTAL" ? "x" : "y";
}

const round = (v) => Math.round(v * 100) / 100;

/** Moves a node by (dx, dy) design pixels in its parent's coordinates. */
export function moveBy(doc, id, dx, dy) {
  const n = doc.nodes[id];
  n.x = round((n.x || 0) + dx);
  n.y = round((n.y || 0) + dy);
}

/**
 * Sets a node's box in its parent's coordinates. Sizes are whole design pixels (at least
 * 1). Text boxes keep growing with their text unless their height was set; hugging frames
 * become fixed on the axis that was set.
 */
export function setBox(doc, id, box) {
  const n = doc.nodes[id];
  if (box.x !== undefined) n.x = round(box.x);
  if (box.y !== undefined) n.y = round(box.y);
  const w = box.width !== undefined ? Math.max(1, Math.round(box.width)) : undefined;
  const h = box.height !== undefined ? Math.max(1, Math.round(box.height)) : undefined;
  const wChanged = w !== undefined && w !== n.width;
  const hChanged = h !== undefined && h !== n.height;
  if (wChanged) {
    n.width = w;
    if (n.layoutSizingHorizontal && n.layoutSizingHorizontal !== "FIXED") n.layoutSizingHorizontal = "FIXED";
    else if (n.layoutMode && n.layoutSizingHorizontal === undefined) n.layoutSizingHorizontal = "FIXED";
  }
  if (hChanged) {
    n.height = h;
    if (n.layoutSizingVertical && n.layoutSizingVertical !== "FIXED") n.layoutSizingVertical = "FIXED";
    else if (n.layoutMode && n.layoutSizingVertical === undefined) n.layoutSizingVertical = "FIXED";
  }
  if (n.type === "TEXT") {
    // A box the text sized itself keeps the size it was given (TRUNCATE and NONE already do).
    const mode = n.textAutoResize;
    if (hChanged && (mode === "HEIGHT" || mode === "WIDTH_AND_HEIGHT")) n.textAutoResize = "NONE";
    else if (wChanged && mode === "WIDTH_AND_HEIGHT") n.textAutoResize = "HEIGHT";
  }
}

/** Moves `id` to `index` among its parent's children (painting order). */
export function reorder(doc, id, index) {
  const p = parentMap(doc).get(id);
  if (!p) return false;
  const kids = doc.nodes[p].children;
  const from = kids.indexOf(id);
  const to = Math.max(0, Math.min(kids.length - 1, index));
  if (from === to) return false;
  kids.splice(from, 1);
  kids.splice(to, 0, id);
  return true;
}

/** Moves `id` one step up (later, painted on top: +1) or down (-1) among its siblings. */
export function step(doc, id, delta) {
  const p = parentMap(doc).get(id);
  if (!p) return false;
  const kids = doc.nodes[p].children;
  return reorder(doc, id, kids.indexOf(id) + delta);
}

/**
 * Where a node dragged in an auto-layout frame lands: the index in the parent's children
 * for a pointer at `at` (design pixels on the frame's axis), from the siblings' boxes.
 */
export function flowIndex(doc, id, at, boxes) {
  const parents = parentMap(doc);
  const p = parents.get(id);
  const axis = flowAxis(doc, p);
  const kids = doc.nodes[p].children;
  const others = kids.filter((c) => c !== id && inFlow(doc, c, parents) && boxes.has(c));
  let before = others.length;
  for (let i = 0; i < others.length; i++) {
    const b = boxes.get(others[i]);
    const mid = axis === "x" ? b.x + b.width / 2 : b.y + b.height / 2;
    if (at < mid) { before = i; break; }
  }
  const without = kids.filter((c) => c !== id);
  const target = before < others.length ? without.indexOf(others[before]) : without.indexOf(others[others.length - 1]) + 1;
  return Math.max(0, target);
}

function freshId(doc, base) {
  const stem = base.replace(/-copy(-\d+)?$/, "");
  let i = 1;
  let id = stem + "-copy";
  while (doc.nodes[id]) id = stem + "-copy-" + ++i;
  return id;
}

/** Copies a node and everything under it next to it (offset unless in auto-layout). */
export function duplicate(doc, id) {
  const parents = parentMap(doc);
  const p = parents.get(id);
  if (!p) return null;
  const copy = (src) => {
    const nid = freshId(doc, src);
    const n = JSON.parse(JSON.stringify(doc.nodes[src]));
    if (n.id !== undefined) n.id = nid;
    doc.nodes[nid] = n;
    if (n.children) n.children = n.children.map(copy);
    return nid;
  };
  const nid = copy(id);
  if (!inFlow(doc, id, parents)) moveBy(doc, nid, 20, 20);
  const node = doc.nodes[nid];
  if (node.name) node.name = node.name + " copy";
  const kids = doc.nodes[p].children;
  kids.splice(kids.indexOf(id) + 1, 0, nid);
  return nid;
}

/** Removes a node and everything under it; the root stays. */
export function remove(doc, id) {
  const p = parentMap(doc).get(id);
  if (!p) return false;
  const drop = (x) => {
    const n = doc.nodes[x];
    if (!n) return;
    for (const c of n.children || []) drop(c);
    delete doc.nodes[x];
  };
  drop(id);
  const kids = doc.nodes[p].children;
  kids.splice(kids.indexOf(id), 1);
  return true;
}

function newId(doc, stem) {
  let i = 1;
  while (doc.nodes[stem + "-" + i]) i++;
  return stem + "-" + i;
}

/**
 * The frame a new node goes into: the selected frame when it places its children freely
 * (not an auto-layout frame, whose layout the new node would change), else the root.
 */
function container(doc, selected) {
  const n = selected && doc.nodes[selected];
  return n && n.type === "FRAME" && !n.layoutMode ? selected : rootId(doc);
}

function add(doc, selected, stem, node) {
  const parent = container(doc, selected);
  const frame = doc.nodes[parent];
  const id = newId(doc, stem);
  if (!frame.layoutMode) {
    node.x = Math.round(((frame.width || 400) - (node.width || 0)) / 2);
    node.y = Math.round(((frame.height || 400) - (node.height || 80)) / 2);
  }
  doc.nodes[id] = Object.assign({ id }, node);
  (frame.children = frame.children || []).push(id);
  return id;
}

export function addText(doc, selected, style) {
  const root = doc.nodes[rootId(doc)];
  const width = Math.round((root.width || 1080) * 0.6);
  return add(doc, selected, "text", {
    type: "TEXT", name: "Text", width, characters: "New text",
    fontFamily: style.font || "Inter", fontSize: Math.round((root.width || 1080) / 18),
    fontWeight: 600, textAlignHorizontal: "LEFT", textAutoResize: "HEIGHT",
    fills: [solid(style.ink || "#111111")],
  });
}

export function addShape(doc, selected, style) {
  const root = doc.nodes[rootId(doc)];
  const side = Math.round((root.width || 1080) / 5);
  return add(doc, selected, "shape", {
    type: "RECTANGLE", name: "Shape", width: side, height: side, cornerRadius: 0,
    fills: [solid(style.color || "#2450d6")],
  });
}

// --- paints ---------------------------------------------------------------------------

export function hexOf(color) {
  const c = (v) => Math.max(0, Math.min(255, Math.round((v || 0) * 255))).toString(16).padStart(2, "0");
  return "#" + c(color.r) + c(color.g) + c(color.b);
}

export function colorOf(hex, alpha) {
  const h = hex.replace("#", "");
  const full = h.length === 3 ? h.split("").map((x) => x + x).join("") : h.slice(0, 6);
  const v = (i) => Math.round(parseInt(full.slice(i, i + 2), 16) / 255 * 10000) / 10000;
  const a = h.length === 8 ? Math.round(parseInt(h.slice(6, 8), 16) / 255 * 10000) / 10000 : alpha;
  return { r: v(0), g: v(2), b: v(4), a: a === undefined ? 1 : a };
}

export function solid(hex) {
  return { type: "SOLID", color: colorOf(hex, 1) };
}

/** The URL field an IMAGE paint uses (`imageFillUrl`, or an accepted alias). */
export function imageKey(paint) {
  return ["imageFillUrl", "imageUrl", "imageRef"].find((k) => typeof paint[k] === "string") || "imageFillUrl";
}

export function setSolid(doc, id, list, index, hex) {
  const paint = doc.nodes[id][list][index];
  paint.color = colorOf(hex, paint.color && paint.color.a);
}

/** Puts `url` into the node's first image fill, adding one on top when it has none. */
export function setImage(doc, id, url) {
  const n = doc.nodes[id];
  n.fills = n.fills || [];
  const paint = n.fills.find((p) => p.type === "IMAGE");
  if (paint) paint[imageKey(paint)] = url;
  else n.fills.push({ type: "IMAGE", imageFillUrl: url, scaleMode: "FILL" });
}

export function addPaint(doc, id, list, hex) {
  const n = doc.nodes[id];
  (n[list] = n[list] || []).push(solid(hex));
  if (list === "strokes" && n.strokeWeight === undefined) n.strokeWeight = 4;
}

export function removePaint(doc, id, list, index) {
  doc.nodes[id][list].splice(index, 1);
}

// --- text -----------------------------------------------------------------------------

/** A text node's line height in percent of its size (AUTO and pixels converted). */
export function lineHeightPercent(n) {
  const lh = n.lineHeight;
  const size = n.fontSize || 16;
  if (typeof lh === "number") return Math.round(lh / size * 100);
  if (lh && lh.unit === "PERCENT") return lh.value;
  if (lh && lh.unit === "PIXELS") return Math.round(lh.value / size * 100);
  if (n.lineHeightPercentFontSize) return n.lineHeightPercentFontSize;
  if (n.lineHeightPx) return Math.round(n.lineHeightPx / size * 100);
  return 120;
}

export function setLineHeight(doc, id, percent) {
  const n = doc.nodes[id];
  delete n.lineHeightPx;
  delete n.lineHeightPercentFontSize;
  n.lineHeight = { value: percent, unit: "PERCENT" };
}

/** Sets a text size; a shrink-to-fit range moves with it so the new size is used. */
export function setFontSize(doc, id, size) {
  const n = doc.nodes[id];
  n.fontSize = size;
  if (n.textFit) {
    n.textFit.maxFontSize = size;
    if (n.textFit.minFontSize > size) n.textFit.minFontSize = size;
  }
}

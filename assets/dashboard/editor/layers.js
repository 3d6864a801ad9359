// adforge editor: the layer list, a mirror of the tree (top-most first in each frame, as
// design tools list them). A layer's name selects it; the selected layer shows buttons to
// hide or show it, lock or unlock it (a locked node cannot be picked or moved on the
// picture), and move it up or down among its siblings. Hidden and locked layers say so.

import * as M from "./model.js";

export class Layers {
  constructor(ed) {
    this.ed = ed;
    this.list = document.getElementById("ed-layer-list");
    this.list.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-act]");
      if (b) this.act(b.dataset.act, b.dataset.id);
    });
  }

  act(what, id) {
    const ed = this.ed;
    const doc = ed.doc;
    const name = M.label(doc, id);
    if (what === "select") {
      ed.select(id, "layers");
    } else if (what === "hide") {
      const hidden = M.isHidden(doc, id);
      ed.change((hidden ? "Showed " : "Hid ") + name, null, (d) => {
        if (hidden) delete d.nodes[id].visible;
        else d.nodes[id].visible = false;
      });
    } else if (what === "lock") {
      const locked = M.isLocked(doc, id);
      ed.change((locked ? "Unlocked " : "Locked ") + name, null, (d) => {
        if (locked) delete d.nodes[id].locked;
        else d.nodes[id].locked = true;
      });
    } else if (what === "up" || what === "down") {
      ed.change("Moved " + name + (what === "up" ? " forward" : " backward"), null,
        (d) => M.step(d, id, what === "up" ? 1 : -1));
    }
  }

  render() {
    const ed = this.ed;
    const doc = ed.doc;
    const root = M.rootId(doc);
    const focusKey = keyOf(document.activeElement, this.list);
    const parents = M.parentMap(doc);
    const item = (id) => {
      const n = doc.nodes[id];
      const li = document.createElement("li");
      const row = document.createElement("div");
      row.className = "layer-row";
      const name = M.label(doc, id);
      const sel = document.createElement("button");
      sel.type = "button";
      sel.className = "layer-name";
      sel.dataset.act = "select";
      sel.dataset.id = id;
      sel.textContent = name;
      const kind = document.createElement("span");
      kind.className = "layer-kind";
      const flags = [M.kindWord(doc, id)];
      if (M.isHidden(doc, id)) flags.push("hidden");
      if (M.isLocked(doc, id)) flags.push("locked");
      kind.textContent = " " + flags.join(", ");
      sel.appendChild(kind);
      if (id === ed.selected) {
        sel.setAttribute("aria-current", "true");
        row.classList.add("selected");
      }
      if (M.isHidden(doc, id)) row.classList.add("hidden");
      row.appendChild(sel);
      if (id === ed.selected && id !== root) {
        const tools = document.createElement("span");
        tools.className = "layer-tools wide-only";
        const kids = doc.nodes[parents.get(id)].children;
        const at = kids.indexOf(id);
        tools.append(
          toggle("hide", id, M.isHidden(doc, id) ? "Show" : "Hide", (M.isHidden(doc, id) ? "Show " : "Hide ") + name),
          toggle("lock", id, M.isLocked(doc, id) ? "Unlock" : "Lock", (M.isLocked(doc, id) ? "Unlock " : "Lock ") + name),
          toggle("up", id, "↑", "Move " + name + " forward", at === kids.length - 1),
          toggle("down", id, "↓", "Move " + name + " backward", at === 0),
        );
        row.appendChild(tools);
      }
      li.appendChild(row);
      const kids = (n.children || []).filter((c) => doc.nodes[c]);
      if (kids.length) {
        const ul = document.createElement("ul");
        for (const c of kids.slice().reverse()) ul.appendChild(item(c));
        li.appendChild(ul);
      }
      return li;
    };
    this.list.replaceChildren(item(root));
    restore(this.list, focusKey);
  }
}

function toggle(act, id, text, aria, disabled) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "small secondary";
  b.dataset.act = act;
  b.dataset.id = id;
  b.textContent = text;
  b.setAttribute("aria-label", aria);
  if (disabled) b.disabled = true;
  return b;
}

/** What identifies a focused control across a re-render: its action and node. */
export function keyOf(el, within) {
  if (!el || !within.contains(el)) return null;
  if (el.dataset.act) return '[data-act="' + el.dataset.act + '"][data-id="' + CSS.escape(el.dataset.id || "") + '"]';
  if (el.id) return "#" + CSS.escape(el.id);
  return null;
}

/** Puts focus back on the control `key` names after a re-render (or on the list). */
export function restore(within, key) {
  if (!key) return;
  const el = within.querySelector(key);
  if (el && !el.disabled) el.focus({ preventScroll: true });
  else {
    const sel = within.querySelector('[aria-current="true"]');
    if (sel) sel.focus({ preventScroll: true });
  }
}

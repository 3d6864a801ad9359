// adforge editor: a small element builder (no markup strings, so nothing needs escaping).

/** `h("input", {id: "x", type: "number"}, child, "text")`: attributes, then children. */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

/** A labelled field: `<div><label for=id>text</label>control</div>`. */
export function field(label, control, hint) {
  return h("div", { class: "ed-field" },
    h("label", { for: control.id, text: label }), control,
    hint ? h("p", { class: "hint", text: hint }) : null);
}

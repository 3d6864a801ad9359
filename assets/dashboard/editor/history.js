// adforge editor: undo and redo. Every state is kept as the tree's exact JSON text, so
// undoing to the start gives back the text the page was loaded with, byte for byte (a
// parse and re-serialise would not: `1080.0` comes back as `1080`).

export class History {
  constructor(text) {
    this.entries = [{ text, label: null, key: null }];
    this.at = 0;
    this.savedText = text;
  }

  get text() {
    return this.entries[this.at].text;
  }

  /**
   * Records a new state. A change with the same `key` as the one before it (typing in one
   * text, dragging one colour) replaces that entry, so one undo takes back the whole run.
   * Returns false when the text did not change.
   */
  push(text, label, key) {
    if (text === this.text) return false;
    this.entries.splice(this.at + 1);
    const top = this.entries[this.at];
    if (key && this.at > 0 && top.key === key) {
      top.text = text;
    } else {
      this.entries.push({ text, label, key });
      this.at++;
    }
    return true;
  }

  /** Breaks the run of the current entry, so the next change is undone by itself. */
  seal() {
    this.entries[this.at].key = null;
  }

  canUndo() { return this.at > 0; }
  canRedo() { return this.at < this.entries.length - 1; }

  undo() {
    if (!this.canUndo()) return null;
    this.at--;
    return this.text;
  }

  redo() {
    if (!this.canRedo()) return null;
    this.at++;
    return this.text;
  }

  dirty() {
    return this.text !== this.savedText;
  }

  markSaved() {
    this.savedText = this.text;
  }

  /** What changed, for the version's change summary: each step's words once, in order. */
  summary() {
    const seen = [];
    for (let i = 1; i <= this.at; i++) {
      const l = this.entries[i].label;
      if (l && !seen.includes(l)) seen.push(l);
    }
    let s = seen.join("; ");
    if (s.length > 500) s = s.slice(0, 499) + "…";
    return s;
  }

  /** Words for the next undo and redo (button titles). */
  undoLabel() { return this.canUndo() ? this.entries[this.at].label : null; }
  redoLabel() { return this.canRedo() ? this.entries[this.at + 1].label : null; }
}

// adforge editor: live previews. Each change asks the server for a new picture after a
// short pause (DEBOUNCE_MS), so a run of keystrokes or a drag costs one render; answers
// are shown only when asked for after the picture on screen (a late answer to an older
// request, of an older tree or an older size, is dropped). The server renders with the same renderer and checks as PATCH
// (POST /dashboard/editor/preview → previews::preview).

export const DEBOUNCE_MS = 60;

export class Previewer {
  /**
   * `show(answer, rev, seq)` puts an answer on screen and resolves once it is painted;
   * `fail(message, details)` reports a refused tree; `busy(bool)` says a render is out.
   */
  constructor({ url, csrf, show, fail, busy }) {
    this.url = url;
    this.csrf = csrf;
    this.show = show;
    this.fail = fail;
    this.busy = busy;
    this.timer = null;
    this.seq = 0;
    this.shown = 0;
    this.inFlight = 0;
    this.dropped = 0;
    this.pending = null;
  }

  /** Asks for the picture of `text` (revision `rev`) at `width` pixels, after the pause. */
  request(text, rev, width, immediate) {
    this.pending = { text, rev, width, seq: ++this.seq };
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.send(), immediate ? 0 : DEBOUNCE_MS);
  }

  async send() {
    const job = this.pending;
    if (!job) return;
    this.pending = null;
    this.inFlight++;
    this.busy(true);
    try {
      const res = await fetch(this.url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": this.csrf, Accept: "application/json" },
        body: '{"tree":' + job.text + ',"width":' + job.width + "}",
      });
      let body = null;
      try { body = await res.json(); } catch (_) { body = null; }
      if (res.status === 429) {
        const wait = Number(res.headers.get("Retry-After") || "2");
        this.fail("Too many previews in a minute: the next one is in " + wait + " s.", []);
        if (!this.pending) this.pending = job;
        clearTimeout(this.timer);
        this.timer = setTimeout(() => this.send(), wait * 1000);
        return;
      }
      if (!res.ok || !body || !body.image) {
        const err = (body && body.error) || { message: "The preview failed (HTTP " + res.status + ").", details: [] };
        if (job.seq > this.shown) this.fail(err.message, err.details || []);
        return;
      }
      if (job.seq <= this.shown) { this.dropped++; return; }
      this.shown = job.seq;
      await this.show(body, job.rev, job.seq);
    } catch (e) {
      this.fail("The preview could not be loaded: " + e.message, []);
    } finally {
      this.inFlight--;
      if (this.inFlight === 0) this.busy(false);
    }
  }
}

// adforge dashboard: the swipe file page's script (the visual editor has its own modules).
// 1. It makes the upload form accept dropped files and send them one request per file with
//    a progress bar; without it the same form posts every chosen file at once.
// 2. While designs are being analysed it asks /dashboard/swipe/designs every few seconds
//    and swaps each card in place once it is ready, announcing the count left in the page's
//    status region, so the page never reloads under the reader (WCAG 2.2.1); without it the
//    status region's "Refresh" link reloads the page.
"use strict";
(function () {
  var form = document.querySelector("form[data-upload]");
  if (!form || !window.FormData || !window.XMLHttpRequest) return;
  var input = form.querySelector("input[type=file]");
  var drop = form.querySelector("[data-drop]");
  var bar = form.querySelector(".upload-progress");
  var status = form.querySelector(".upload-status");
  var csrf = form.querySelector("input[name=csrf]").value;

  ["dragenter", "dragover"].forEach(function (t) {
    drop.addEventListener(t, function (e) { e.preventDefault(); drop.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (t) {
    drop.addEventListener(t, function (e) { e.preventDefault(); drop.classList.remove("over"); });
  });
  drop.addEventListener("drop", function (e) {
    if (e.dataTransfer && e.dataTransfer.files.length) {
      input.files = e.dataTransfer.files;
      send(Array.prototype.slice.call(e.dataTransfer.files));
    }
  });
  form.addEventListener("submit", function (e) {
    if (!input.files.length) return;
    e.preventDefault();
    send(Array.prototype.slice.call(input.files));
  });

  function send(files) {
    var total = files.reduce(function (n, f) { return n + f.size; }, 0) || 1;
    var done = 0, ok = 0, failed = [];
    bar.hidden = false;
    bar.value = 0;
    next(0);
    function next(i) {
      if (i >= files.length) {
        status.textContent = ok + " of " + files.length + " uploaded" +
          (failed.length ? "; not uploaded: " + failed.join(", ") : "") + ". Reloading…";
        window.location.assign("/dashboard/swipe?uploaded=" + ok);
        return;
      }
      var f = files[i];
      status.textContent = "Uploading " + f.name + " (" + (i + 1) + " of " + files.length + ")";
      var body = new FormData();
      body.append("csrf", csrf);
      body.append("file", f, f.name);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.upload.onprogress = function (e) {
        if (e.lengthComputable) bar.value = Math.round(100 * (done + e.loaded) / total);
      };
      xhr.onload = function () {
        if (xhr.status >= 200 && xhr.status < 300) ok++; else failed.push(f.name);
        done += f.size;
        bar.value = Math.round(100 * done / total);
        next(i + 1);
      };
      xhr.onerror = function () { failed.push(f.name); done += f.size; next(i + 1); };
      xhr.send(body);
    }
  }
})();

(function () {
  var note = document.getElementById("swipe-processing");
  if (!note || !window.fetch || !window.JSON) return;
  var url = note.getAttribute("data-poll");
  var archived = /[?&]archived=true(&|$)/.test(window.location.search);
  var every = 4000;

  function pending() {
    return Array.prototype.slice.call(document.querySelectorAll('li.design[data-status="processing"]'));
  }
  function say(left) {
    var text = left ? left + (left === 1 ? " design is" : " designs are") +
      " being analysed; each appears here when it is ready." : "Every design is analysed.";
    if (note.textContent !== text) note.textContent = text;
  }
  // Swaps one card for its new markup, keeping its checkbox's state and the focus.
  function swap(li, html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html.trim();
    var fresh = tpl.content.firstElementChild;
    if (!fresh || fresh.id !== li.id) return false;
    var box = li.querySelector("input[type=checkbox]");
    var freshBox = fresh.querySelector("input[type=checkbox]");
    if (box && freshBox) freshBox.checked = box.checked;
    var focused = li.contains(document.activeElement) ? document.activeElement.id : "";
    li.parentNode.replaceChild(fresh, li);
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    return true;
  }
  function poll() {
    var items = pending();
    if (!items.length) return;
    var ids = items.map(function (li) { return li.id; }).join(",");
    fetch(url + "?ids=" + encodeURIComponent(ids) + (archived ? "&archived=true" : ""), {
      credentials: "same-origin",
      headers: { Accept: "application/json" }
    }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.json();
    }).then(function (body) {
      body.designs.forEach(function (d) {
        var li = document.getElementById(d.id);
        if (d.status !== "processing" && li) swap(li, d.html);
      });
      var left = pending().length;
      if (left !== items.length) say(left);
      if (left) window.setTimeout(poll, every);
    }).catch(function () {
      // The "Refresh" link stays; try again later.
      window.setTimeout(poll, every * 4);
    });
  }
  if (pending().length) window.setTimeout(poll, every);
})();

// A processing batch's page (issue 42): every 4 s the page is fetched again and each of its
// `data-live` regions (counts, actions, the ads) is swapped for the new one, keeping the
// focus where its element still exists; the status note says when the batch has ended. No
// reload (a timed reload fails WCAG 2.2.1); without this script the note's "Refresh" link
// does the same by hand.
(function () {
  var note = document.getElementById("live-note");
  if (!note || !window.fetch || !window.DOMParser) return;
  var every = 4000;
  function poll() {
    fetch(window.location.href, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) throw new Error("HTTP " + r.status);
      return r.text();
    }).then(function (text) {
      var doc = new DOMParser().parseFromString(text, "text/html");
      var focused = document.activeElement && document.activeElement.id;
      Array.prototype.forEach.call(document.querySelectorAll("[data-live]"), function (el) {
        var fresh = doc.getElementById(el.id);
        if (fresh && fresh.innerHTML !== el.innerHTML) el.innerHTML = fresh.innerHTML;
      });
      if (focused && document.activeElement !== document.getElementById(focused) &&
          document.getElementById(focused)) document.getElementById(focused).focus();
      if (doc.getElementById("live-note")) {
        window.setTimeout(poll, every);
      } else {
        note.textContent = "The batch has ended: every ad is shown.";
      }
    }).catch(function () {
      // The "Refresh" link stays; try again later.
      window.setTimeout(poll, every * 4);
    });
  }
  window.setTimeout(poll, every);
})();

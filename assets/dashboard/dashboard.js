// adforge dashboard: the only script. It makes the swipe file's upload form accept dropped
// files and send them one request per file with a progress bar; without it the same form
// posts every chosen file at once. No other page needs it.
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

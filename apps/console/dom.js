// The console's page building: elements from data (always as text), badges, times, cleanups.
//
// Every console script reads its neighbours from window.batonflow (this file comes first).
(function (bf) {
  "use strict";

  var STATUSES = ["queued", "running", "waiting", "completed", "failed", "cancelled", "timed_out", "interrupted"];
  var FINISHED = ["completed", "failed", "cancelled", "timed_out", "interrupted"];
  // What the current view started (timers, streams): stopped when the view changes.
  var cleanups = [];

  function el(tag, attrs) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      var value = attrs[key];
      if (value === undefined || value === null || value === false) return;
      if (key.slice(0, 2) === "on") node.addEventListener(key.slice(2), value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key in node && key !== "list") node[key] = value;
      else node.setAttribute(key, value === true ? "" : value);
    });
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }

  function append(node, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) { append(node, c); });
    else node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }

  function statusBadge(status) {
    return el("span", { className: "status " + status, dataset: { status: status } }, status);
  }

  function problem(error) {
    return el("p", { className: "error", role: "alert" }, error.message || String(error));
  }

  function clock(seconds) {
    return new Date(seconds * 1000).toLocaleTimeString([], { hour12: false });
  }

  function duration(seconds) {
    if (seconds < 1) return Math.round(seconds * 1000) + " ms";
    if (seconds < 60) return seconds.toFixed(1) + " s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + " min " + Math.round(seconds % 60) + " s";
    return Math.floor(minutes / 60) + " h " + (minutes % 60) + " min";
  }

  function runDuration(run) {
    var end = FINISHED.indexOf(run.status) >= 0 ? run.updated : Date.now() / 1000;
    return duration(Math.max(0, end - run.created));
  }

  function compact(value, limit) {
    var text = typeof value === "string" ? value : JSON.stringify(value);
    limit = limit || 400;
    return text.length > limit ? text.slice(0, limit) + "…" : text;
  }

  function every(ms, fn) {
    var id = setInterval(fn, ms);
    cleanups.push(function () { clearInterval(id); });
  }

  function showDrawing(frame, html) {
    if (frame.dataset.html !== html) {
      frame.dataset.html = html;
      frame.srcdoc = html;
    }
  }

  function drawingFrame(title) {
    // No scripts, no same-origin access: the drawing is a static SVG page.
    return el("iframe", { className: "drawing", sandbox: "", title: title });
  }

  Object.assign(bf, {
    STATUSES: STATUSES,
    FINISHED: FINISHED,
    cleanups: cleanups,
    el: el,
    append: append,
    statusBadge: statusBadge,
    problem: problem,
    clock: clock,
    duration: duration,
    runDuration: runDuration,
    compact: compact,
    every: every,
    showDrawing: showDrawing,
    drawingFrame: drawingFrame,
  });
})(window.batonflow = window.batonflow || {});

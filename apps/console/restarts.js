// A restart on the run page. A step interrupted by a crash runs again and streams its events
// again; before them the run's stream carries a StepRestarted (step, attempt, the id of the
// interrupted attempt's first event). The timeline then drops the rows that attempt wrote (those
// of the same step execution, from that id on; a question stays) and shows a small marker.
(function (bf) {
  "use strict";

  var el = bf.el;

  // The row data naming the step execution that wrote an event (a durable run's events do).
  function tags(body) {
    return body.step == null ? {} : { step: String(body.step), execution: String(body.execution) };
  }

  function isRestart(body) {
    return body.type === "StepRestarted";
  }

  // Drops the rows the restart supersedes from the timeline; returns the marker's row.
  function restarted(timeline, body) {
    var value = body.value || {};
    var first = value.first_event_id;
    var dropped = 0;
    if (first != null) {
      Array.prototype.slice.call(timeline.children).forEach(function (row) {
        var d = row.dataset;
        if (d.step === String(body.step) && d.execution === String(body.execution) &&
            !row.classList.contains("ask") && Number(d.seq) >= first && Number(d.seq) < body.seq) {
          row.remove();
          dropped += 1;
        }
      });
    }
    var note = " · " + value.step_name + " runs again (attempt " + value.attempt + ")" +
      (dropped ? "; " + dropped + " event" + (dropped > 1 ? "s" : "") + " of the interrupted attempt dropped" : "");
    return el("li", { className: "restart", dataset: Object.assign({ seq: body.seq, type: body.type, dropped: dropped }, tags(body)) },
      el("span", { className: "seq" }, body.seq),
      el("span", {}, el("span", { className: "type" }, "restarted"), el("span", { className: "muted" }, note)));
  }

  bf.restarts = { tags: tags, isRestart: isRestart, restarted: restarted };
})(window.batonflow = window.batonflow || {});

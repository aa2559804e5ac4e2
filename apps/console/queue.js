// The console's view of the run queue: the line of a queued run's facts that says where it
// waits (its place in its workflow's queue) and why (the limit it waits on).
(function (bf) {
  "use strict";

  var el = bf.el;
  var WAITING_ON = {
    concurrency: "the workflow's concurrency limit",
    key_concurrency: "its key's concurrency limit (same tenant or user)",
    rate: "the rate limit",
    max_running: "the replicas' --max-running",
    position: "the runs ahead of it"
  };

  // The facts (dt, dd) of a queued run, or nothing.
  function queueFacts(run) {
    if (run.status !== "queued" || !run.queue) return [];
    var why = WAITING_ON[run.queue.waiting_on] || run.queue.waiting_on;
    return [
      el("dt", {}, "queue"),
      el("dd", { id: "run-queue", dataset: { waitingOn: run.queue.waiting_on } },
        "position " + run.queue.position + ", waiting on " + why)];
  }

  bf.queueFacts = queueFacts;
})(window.batonflow);

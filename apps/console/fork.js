// Forks and lineage on the run page: "fork from here" on each step that wrote a checkpoint (the
// state there shown and editable, POST runs/ID/fork starts the new run) and the run's lineage
// (the run it was forked from or whose step ran it as a child run, its forks and child runs),
// linked both ways; rowLineage links a child and its parent in the runs list.
(function (bf) {
  "use strict";

  var el = bf.el;
  var api = bf.api;
  var problem = bf.problem;

  // A fork continues one of the run's checkpoints as a new run: the panel shows the state at
  // that checkpoint, editable; each top-level key is set to its value when the fork starts.
  async function forkPanel(runId, seq) {
    var there = await api("runs/" + encodeURIComponent(runId) + "/checkpoints/" + seq);
    var editor = el("textarea", { id: "fork-state", className: "mono", rows: 8, spellcheck: false });
    editor.value = JSON.stringify(there.state, null, 2);
    var error = el("p", { className: "error", role: "alert", hidden: true });
    var go = el("button", { className: "primary", type: "submit", name: "fork" }, "Start the fork");
    return el("form", { id: "fork-form", className: "card", dataset: { seq: seq }, onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      var state;
      try {
        state = JSON.parse(editor.value);
        if (!state || typeof state !== "object" || Array.isArray(state)) throw new Error("The state must be a JSON object.");
        go.disabled = true;
        var forked = await api("runs/" + encodeURIComponent(runId) + "/fork", { method: "POST", json: { at: seq, state: state } });
        location.hash = "#/runs/" + forked.run_id;
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
        go.disabled = false;
      }
    } },
      el("h2", {}, "Fork from checkpoint " + seq + " (after " + there.step + ")"),
      el("p", { className: "muted" }, "The steps up to here do not run again; edit the state the fork starts with."),
      editor,
      el("div", { className: "row", style: "margin-top:10px" }, go),
      error);
  }

  // The "fork from here" button of a step (nothing for a step without a checkpoint): it opens
  // the fork panel in ``box``.
  function forkButton(runId, step, box) {
    if (step.checkpoint === null || step.checkpoint === undefined) return "";
    return el("button", { type: "button", name: "fork-from-here", dataset: { checkpoint: step.checkpoint }, onclick: async function () {
      try {
        box.replaceChildren(await forkPanel(runId, step.checkpoint));
        box.scrollIntoView();
      } catch (e) {
        box.replaceChildren(problem(e));
      }
    } }, "fork from here");
  }

  function runLink(id, text) {
    return el("a", { href: "#/runs/" + encodeURIComponent(id), className: "mono" }, text || id);
  }

  // Fills ``holder`` with the run's lineage (GET runs/ID/lineage): its parent (the run it was
  // forked from, at a checkpoint, or the run whose step started it as a child run), its forks
  // and its child runs; "—" when it has none, left as it is when the server gives none.
  async function showLineage(runId, holder) {
    var found = await api("runs/" + encodeURIComponent(runId) + "/lineage").catch(function () { return null; });
    if (!found) return;
    var parts = [];
    var up = found.parent;
    if (up && up.kind === "child") parts.push(el("span", { id: "parent-run" }, "child run of ", runLink(up.run_id), " (its step " + up.step + ")"));
    else if (up) parts.push(el("span", { id: "parent-run" }, "forked from ", runLink(up.run_id), " at checkpoint " + up.seq));
    var forks = found.children.filter(function (c) { return c.kind !== "child"; });
    var started = found.children.filter(function (c) { return c.kind === "child"; });
    if (forks.length) {
      parts.push(el("span", { id: "fork-runs" }, (parts.length ? "; " : "") + "forks: ",
        forks.map(function (c, i) { return [i ? ", " : "", runLink(c.run_id), " (at " + c.seq + ", " + c.status + ")"]; })));
    }
    if (started.length) {
      parts.push(el("span", { id: "child-runs" }, (parts.length ? "; " : "") + "child runs: ",
        started.map(function (c, i) { return [i ? ", " : "", runLink(c.run_id), " (" + c.workflow + " from " + c.step + ", " + c.status + ")"]; })));
    }
    holder.replaceChildren.apply(holder, parts.length ? parts : ["—"]);
  }

  // The lineage cell of a row in the runs list: a child run links its parent; a parent links
  // the child runs that are in the same list (``runs``).
  function rowLineage(run, runs) {
    var parts = [];
    if (run.parent_kind === "child" && run.parent_run_id) {
      parts.push(el("span", { className: "parent-link" }, "child of ", runLink(run.parent_run_id, run.parent_run_id.slice(0, 12))));
    }
    var kids = runs.filter(function (r) { return r.parent_kind === "child" && r.parent_run_id === run.run_id; });
    if (kids.length) {
      parts.push(el("span", { className: "child-links" }, (parts.length ? "; " : "") + "children: ",
        kids.map(function (k, i) { return [i ? ", " : "", runLink(k.run_id, k.run_id.slice(0, 12))]; })));
    }
    return parts;
  }

  bf.forkButton = forkButton;
  bf.showLineage = showLineage;
  bf.rowLineage = rowLineage;
})(window.batonflow = window.batonflow || {});

// The batonflow run console: one page, no framework, nothing fetched but this server's API.
//
// Views (the URL's hash): "#/" workflows and runs, "#/start/NAME" the start form built from the
// workflow's start-event JSON schema, "#/runs/ID" one run: its live event timeline (Server-Sent
// Events read with fetch, so the bearer token can be sent, resumed with Last-Event-ID after a
// drop), its drawing, steps, state, result or error, an answer box while it waits, cancel, a
// "fork from here" on each step with a checkpoint and the lineage (fork.js); an agent's run
// shows its conversation too. "#/chat/NAME/RUN,RUN..." is an agent's chat (chat.js).
// Everything shown from the server goes through textContent: no data is parsed as HTML, and
// drawings are shown in sandboxed iframes.
//
// The script is split by concept, each file loaded by index.html in this order and sharing
// window.batonflow: dom.js (building the page), api.js (the token, requests, a run's event
// stream), forms.js (forms from JSON schemas), answer.js (the answer form of a waiting run),
// fork.js (a run's forks and lineage), chat.js (an agent's run as a conversation, and the chat
// page), schedules.js (the schedules page, "#/schedules"), budget.js (a run's budget, usage and
// its raise), then this file: the token prompt, the
// views and the routing.
(function () {
  "use strict";

  var bf = window.batonflow;
  var el = bf.el, api = bf.api, problem = bf.problem, statusBadge = bf.statusBadge;
  var clock = bf.clock, duration = bf.duration, runDuration = bf.runDuration, compact = bf.compact;
  var every = bf.every, showDrawing = bf.showDrawing, drawingFrame = bf.drawingFrame;
  var workflows = bf.workflows, openapi = bf.openapi, schemaFields = bf.schemaFields;
  var followEvents = bf.followEvents, answerForm = bf.answerForm, token = bf.token;
  var forkButton = bf.forkButton, showLineage = bf.showLineage;
  var STATUSES = bf.STATUSES, FINISHED = bf.FINISHED, TOKEN_KEY = bf.TOKEN_KEY;
  var cleanups = bf.cleanups;
  var app = document.getElementById("app");

  // -- the token -----------------------------------------------------------------------------

  var tokenForm = document.getElementById("token-form");

  function showTokenState() {
    var box = document.getElementById("token-state");
    box.textContent = "";
    if (document.body.dataset.token !== "required") return;
    if (!token()) {
      box.textContent = "no token";
      return;
    }
    box.appendChild(document.createTextNode("token set"));
    box.appendChild(
      el("button", { type: "button", onclick: function () {
        sessionStorage.removeItem(TOKEN_KEY);
        askForToken("");
      } }, "forget")
    );
  }

  function askForToken(problem) {
    tokenForm.hidden = false;
    app.hidden = true;
    var error = document.getElementById("token-error");
    error.hidden = !problem;
    error.textContent = problem || "";
    document.getElementById("token-input").focus();
    showTokenState();
  }

  document.getElementById("token-entry").addEventListener("submit", function (event) {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token-input").value.trim());
    document.getElementById("token-input").value = "";
    tokenForm.hidden = true;
    app.hidden = false;
    showTokenState();
    route();
  });
  bf.askForToken = askForToken;

  // -- view: workflows and runs --------------------------------------------------------------

  async function homeView() {
    var list = await workflows();
    var cards = list.map(function (w) {
      var frame = null;
      var holder = el("div");
      var toggle = el("button", { type: "button", onclick: async function () {
        if (frame) {
          holder.textContent = "";
          frame = null;
          toggle.textContent = "Show drawing";
          return;
        }
        frame = drawingFrame("All possible flows of " + w.name);
        holder.appendChild(frame);
        toggle.textContent = "Hide drawing";
        try {
          showDrawing(frame, await api("workflows/" + encodeURIComponent(w.name) + "/drawing"));
        } catch (e) {
          holder.appendChild(problem(e));
        }
      } }, "Show drawing");
      return el("div", { className: "card workflow", dataset: { workflow: w.name } },
        el("h3", {}, w.name),
        el("div", { className: "meta" }, w.class + (w.accepts.length ? " · accepts " + w.accepts.join(", ") : "")),
        el("div", { className: "row" },
          w.chat ? el("a", { className: "button", href: "#/chat/" + encodeURIComponent(w.name) }, "Chat") : null,
          el("a", { className: "button", href: "#/start/" + encodeURIComponent(w.name) }, "Start a run"),
          toggle),
        holder);
    });

    var byWorkflow = el("select", { id: "filter-workflow", "aria-label": "workflow" },
      el("option", { value: "" }, "all workflows"),
      list.map(function (w) { return el("option", { value: w.name }, w.name); }));
    var byStatus = el("select", { id: "filter-status", "aria-label": "status" },
      el("option", { value: "" }, "any status"),
      STATUSES.map(function (s) { return el("option", { value: s }, s); }));
    var rows = el("tbody", { id: "runs" });
    var note = el("p", { className: "muted" });

    async function refresh() {
      var query = new URLSearchParams({ limit: "200" });
      if (byWorkflow.value) query.set("workflow", byWorkflow.value);
      if (byStatus.value) query.set("status", byStatus.value);
      var runs;
      try {
        runs = (await api("runs?" + query)).runs;
      } catch (e) {
        note.textContent = e.message;
        return;
      }
      rows.textContent = "";
      runs.forEach(function (run) {
        rows.appendChild(el("tr", { dataset: { runId: run.run_id, status: run.status } },
          el("td", {}, el("a", { className: "mono", href: "#/runs/" + run.run_id }, run.run_id.slice(0, 12)),
            el("div", { className: "muted lineage" }, bf.rowLineage(run, runs))),
          el("td", {}, run.workflow),
          el("td", {}, statusBadge(run.status)),
          el("td", {}, clock(run.created)),
          el("td", {}, runDuration(run)),
          el("td", { className: "tokens" }, bf.tokensCell(run))));
      });
      note.textContent = runs.length ? "" : "No runs" + (byWorkflow.value || byStatus.value ? " match these filters." : " yet: start one above.");
    }
    byWorkflow.addEventListener("change", refresh);
    byStatus.addEventListener("change", refresh);
    every(2000, refresh);

    app.replaceChildren(
      el("h1", {}, "Workflows"),
      el("div", { className: "grid" }, cards),
      el("section", { className: "card" },
        el("h2", {}, "Runs"),
        el("div", { className: "filters" }, byWorkflow, byStatus,
          el("button", { type: "button", onclick: refresh }, "Refresh")),
        el("table", {},
          el("thead", {}, el("tr", {}, ["run", "workflow", "status", "started", "duration", "tokens"].map(function (h) { return el("th", {}, h); }))),
          rows),
        note));
    await refresh();
  }

  // -- view: start a run ---------------------------------------------------------------------

  async function startView(name) {
    var list = await workflows();
    var workflow = list.find(function (w) { return w.name === name; });
    if (!workflow) throw new Error("Workflow '" + name + "' is not served here.");
    var schema = workflow.start_event;
    var form = schemaFields(schema, schema, "start");
    var error = el("p", { className: "error", role: "alert", hidden: true });
    var submit = el("button", { className: "primary", type: "submit", name: "start" }, "Start the run");
    var element = el("form", { id: "start-form", className: "card", onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      submit.disabled = true;
      try {
        var started = await api("workflows/" + encodeURIComponent(name) + "/runs", { method: "POST", json: form.values() });
        location.hash = "#/runs/" + started.run_id;
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
      } finally {
        submit.disabled = false;
      }
    } },
      el("h2", {}, schema.title || "Start event"),
      schema.description ? el("p", { className: "muted" }, schema.description) : null,
      form.nodes,
      el("div", { className: "row", style: "margin-top:12px" }, submit, el("a", { href: "#/" }, "back")),
      error);
    app.replaceChildren(el("h1", {}, "Start a run of " + name), element);
    var first = element.querySelector("input, textarea, select");
    if (first) first.focus();
  }

  // -- view: one run -------------------------------------------------------------------------

  async function runView(runId) {
    var run = await api("runs/" + encodeURIComponent(runId));
    var resumable = false;
    var prompt = null;
    var facts = el("dl", { className: "facts" });
    var actions = el("div", { className: "row" });
    var answerBox = el("div");
    var outcome = el("div", { id: "outcome" });
    var timeline = el("ol", { className: "timeline", id: "timeline" });
    var streamState = el("span", { className: "stream-state", id: "stream-state" });
    var drawing = drawingFrame("What run " + runId + " did");
    var drawingNote = el("p", { className: "muted" });
    var stateBox = el("pre", { className: "json", id: "state" }, "…");
    var steps = el("tbody", { id: "steps" });
    var forkBox = el("div");
    var lineage = el("dd", { id: "lineage" }, "—");
    var answering = false;
    // An agent's run reads as a conversation, its questions answered inline (chat.js).
    var workflow = (await workflows()).find(function (w) { return w.name === run.workflow; });
    var chat = workflow && workflow.chat ? bf.transcript(run, workflow.chat, function (slot, asked, r, stillOpen) {
      bf.inlineAnswer(slot, asked, r, stillOpen, refresh);
    }) : null;

    function renderFacts() {
      facts.replaceChildren(
        el("dt", {}, "status"), el("dd", { id: "run-status" }, statusBadge(run.status)),
        el("dt", {}, "workflow"), el("dd", {}, el("a", { href: "#/start/" + encodeURIComponent(run.workflow) }, run.workflow)),
        el("dt", {}, "started"), el("dd", {}, new Date(run.created * 1000).toLocaleString()),
        el("dt", {}, "duration"), el("dd", { id: "run-duration" }, runDuration(run)),
        el("dt", {}, "start fields"), el("dd", { className: "mono" }, compact(run.start, 300)),
        el("dt", {}, "lineage"), lineage);
      bf.scheduleFacts(run).forEach(function (node) { facts.appendChild(node); });
      bf.queueFacts(run).forEach(function (node) { facts.appendChild(node); });
      bf.budgetFacts(run, refresh).forEach(function (node) { facts.appendChild(node); });
      var live = FINISHED.indexOf(run.status) < 0;
      actions.replaceChildren(
        el("button", { type: "button", className: "danger", name: "cancel", disabled: !live, onclick: async function () {
          try {
            await api("runs/" + encodeURIComponent(runId) + "/cancel", { method: "POST" });
          } catch (e) {
            outcome.replaceChildren(problem(e));
          }
          refresh();
        } }, "Cancel"),
        // Resume shows only where the API offers it, and works on an interrupted or failed run
        // (it continues from its last checkpoint); its answer is the new run that continues.
        resumable ? el("button", { type: "button", name: "resume", disabled: live || !(run.status === "interrupted" || run.status === "failed"), onclick: async function () {
          try {
            var resumed = await api("runs/" + encodeURIComponent(runId) + "/resume", { method: "POST" });
            location.hash = "#/runs/" + resumed.run_id;
          } catch (e) {
            outcome.replaceChildren(problem(e));
          }
        } }, "Resume") : null);
      outcome.parentNode.hidden = !(run.status === "completed" || run.error);
      if (run.status === "completed") {
        outcome.replaceChildren(el("h2", {}, "Result"), el("pre", { className: "json", id: "result" }, JSON.stringify(run.result, null, 2)));
      } else if (run.error) {
        outcome.replaceChildren(el("h2", {}, "Error"), el("p", { className: "error", id: "error" }, run.error));
      }
    }

    async function renderAnswer() {
      if (run.status !== "waiting" || chat || run.waiting_reason === "budget") {
        answerBox.textContent = "";
        return;
      }
      var shown = answerBox.firstChild;
      var asked = run.question ? String(run.question.seq) : "";
      if (answering || (shown && shown.dataset.question === asked)) return;
      answering = true;
      try {
        answerBox.replaceChildren(await answerForm(run, prompt, function () {
          answerBox.textContent = "";
          refresh();
        }));
      } finally {
        answering = false;
      }
    }

    var pending = null;
    async function refresh() {
      try {
        run = await api("runs/" + encodeURIComponent(runId));
      } catch (e) {
        outcome.replaceChildren(problem(e));
        return;
      }
      renderFacts();
      renderAnswer();
      await showLineage(runId, lineage);  // also for a run whose steps this server cannot show
      try {
        showDrawing(drawing, await api("runs/" + encodeURIComponent(runId) + "/drawing"));
        drawingNote.textContent = "";
        var recorded = await api("runs/" + encodeURIComponent(runId) + "/steps");
        steps.replaceChildren.apply(steps, recorded.steps.map(function (s) {
          return el("tr", {}, el("td", {}, s.step), el("td", {}, s.input_event + " → " + (s.output_events.join(", ") || "nothing")), el("td", {}, s.duration == null ? "" : duration(s.duration)), el("td", {}, forkButton(runId, s, forkBox)));
        }));
        var state = await api("runs/" + encodeURIComponent(runId) + "/state");
        stateBox.textContent = JSON.stringify(state.state, null, 2);
      } catch (e) {
        if (e.status === undefined || e.status === 503) {
          // The server is away (a restart): the stream reconnects, the next refresh tries again.
          drawingNote.textContent = "The server did not answer; trying again.";
          return;
        }
        if (e.status !== 404) throw e;
        drawingNote.textContent = e.message + " Drawn: all possible flows.";
        stateBox.textContent = "not recorded";
        showDrawing(drawing, await api("workflows/" + encodeURIComponent(run.workflow) + "/drawing").catch(function () { return ""; }));
      }
    }
    function soon() {
      if (pending) return;
      pending = setTimeout(function () {
        pending = null;
        refresh();
      }, 250);
    }

    // Consecutive AgentStream events of one agent make one row that grows (not a row a token).
    function grewStreamRow(body) {
      var last = timeline.lastElementChild;
      var value = body.value || {};
      if (body.type !== "AgentStream" || !last || last.dataset.type !== "AgentStream" ||
          last.dataset.agent !== String(value.current_agent_name)) return false;
      var count = Number(last.dataset.count) + 1;
      last.dataset.count = count;
      last.dataset.lastSeq = body.seq;
      last.querySelector(".type").textContent = "AgentStream × " + count + " (to " + body.seq + ")";
      last.querySelector(".value").textContent = compact(value.response || "");
      return true;
    }

    var stream = followEvents(runId, function (message) {
      var body = message.data;
      var item;
      if (chat) chat.add(message);
      if (message.event === "event" && bf.restarts.isRestart(body)) {
        timeline.appendChild(bf.restarts.restarted(timeline, body));
        timeline.scrollTop = timeline.scrollHeight;
        soon();
        return;
      }
      if (grewStreamRow(body)) {
        timeline.scrollTop = timeline.scrollHeight;
        return;
      }
      if (message.event === "end") {
        item = el("li", { className: "end", dataset: { seq: body.seq } },
          el("span", { className: "seq" }, body.seq),
          el("span", {}, el("span", { className: "type" }, "end · " + body.status),
            body.error ? el("div", { className: "value error" }, body.error) : null));
      } else {
        var value = body.value || {};
        // A question: its log entry says what the run waits for (older servers: by its name).
        var asks = body.waiting_for !== undefined || (typeof value.prefix === "string" && /InputRequired/.test(body.type + " " + body.qualified_name));
        if (asks) {
          prompt = value.prefix;
          var shown = document.getElementById("answer-prompt");
          if (shown) shown.textContent = prompt;
        }
        var streamed = body.type === "AgentStream";
        var data = Object.assign({ seq: body.seq, type: body.type }, bf.restarts.tags(body));
        if (streamed) Object.assign(data, { agent: String(value.current_agent_name), count: 1 });
        item = el("li", { className: asks ? "ask" : "", dataset: data },
          el("span", { className: "seq" }, body.seq),
          el("span", {},
            el("span", { className: "type" }, body.type),
            el("span", { className: "muted" }, " · " + new Date().toLocaleTimeString([], { hour12: false })),
            el("div", { className: "value mono" }, compact(streamed ? value.response || "" : value))));
      }
      timeline.appendChild(item);
      timeline.scrollTop = timeline.scrollHeight;
      soon();
    }, function (text, connections) {
      streamState.textContent = text;
      streamState.dataset.connections = connections;
    });
    cleanups.push(stream.stop);
    window.batonflowConsole = { dropStream: stream.drop };
    every(1000, function () {
      if (FINISHED.indexOf(run.status) < 0) refresh();
    });

    app.replaceChildren(
      el("h1", {}, "Run ", el("span", { className: "mono", id: "run-id" }, runId)),
      el("div", { className: "columns" },
        el("div", {},
          el("section", { className: "card" }, facts, el("div", { style: "margin-top:10px" }, actions)),
          chat ? el("section", { className: "card chat", id: "conversation" },
            el("h2", {}, "Conversation ",
              el("a", { className: "stream-state", href: "#/chat/" + encodeURIComponent(run.workflow) + "/" + encodeURIComponent(runId) }, "continue in the chat")),
            chat.node) : null,
          answerBox,
          el("section", { className: "card" }, outcome),
          el("section", { className: "card" },
            el("h2", {}, "Events ", streamState),
            timeline)),
        el("div", {},
          el("section", { className: "card" }, el("h2", {}, "What ran"), drawing, drawingNote),
          el("section", { className: "card" },
            el("h2", {}, "Steps"),
            el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "step"), el("th", {}, "event in → out"), el("th", {}, "took"), el("th", {}, ""))), steps)),
          forkBox,
          el("section", { className: "card" }, el("h2", {}, "State"), stateBox))));
    renderFacts();
    openapi().then(function (spec) {
      resumable = "/runs/{run_id}/resume" in spec.paths;
      if (resumable) renderFacts();
    }, function () {});
    await refresh();
  }

  // -- routing -------------------------------------------------------------------------------

  async function route() {
    cleanups.splice(0).forEach(function (fn) { fn(); });
    if (document.body.dataset.token === "required" && !token()) {
      askForToken("");
      return;
    }
    showTokenState();
    var parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    try {
      if (parts[0] === "start" && parts[1]) await startView(parts[1]);
      else if (parts[0] === "chat" && parts[1]) await bf.chatView(parts[1], parts[2] ? parts[2].split(",") : []);
      else if (parts[0] === "runs" && parts[1]) await runView(parts[1]);
      else if (parts[0] === "schedules") await bf.schedulesView(app);
      else await homeView();
    } catch (e) {
      if (e.status === 401) return;
      app.replaceChildren(el("h1", {}, "Something went wrong"), problem(e), el("a", { href: "#/" }, "back to the runs"));
    }
  }

  window.addEventListener("hashchange", route);
  route();
})();

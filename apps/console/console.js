// The batonflow run console: one page, no framework, nothing fetched but this server's API.
//
// Views (the URL's hash): "#/" workflows and runs, "#/start/NAME" the start form built from the
// workflow's start-event JSON schema, "#/runs/ID" one run: its live event timeline (Server-Sent
// Events read with fetch, so the bearer token can be sent, resumed with Last-Event-ID after a
// drop), its drawing, steps, state, result or error, an answer box while it waits, cancel.
// Everything shown from the server goes through textContent: no data is parsed as HTML, and
// drawings are shown in sandboxed iframes.
(function () {
  "use strict";

  var TOKEN_KEY = "batonflow.token";
  var STATUSES = ["running", "waiting", "completed", "failed", "cancelled", "timed_out", "interrupted"];
  var FINISHED = ["completed", "failed", "cancelled", "timed_out", "interrupted"];
  var app = document.getElementById("app");
  var cache = { workflows: null, openapi: null };
  var cleanups = [];

  // -- talking to the API --------------------------------------------------------------------

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  function authHeaders(extra) {
    var headers = Object.assign({}, extra || {});
    if (token()) headers.Authorization = "Bearer " + token();
    return headers;
  }

  function ApiError(status, detail) {
    this.status = status;
    this.message = detail;
  }
  ApiError.prototype = Object.create(Error.prototype);

  function detailOf(data, status) {
    if (data && typeof data === "object" && data.detail !== undefined) {
      return typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail);
    }
    return "The server answered " + status + (data ? ": " + String(data).slice(0, 300) : ".");
  }

  async function api(path, options) {
    options = options || {};
    var init = { method: options.method || "GET", headers: authHeaders() };
    if (options.json !== undefined) {
      init.body = JSON.stringify(options.json);
      init.headers["Content-Type"] = "application/json";
    }
    var response = await fetch(path, init);
    if (response.status === 401) {
      askForToken(token() ? "The server refused this token; enter the right one." : "");
      throw new ApiError(401, "This server needs its token.");
    }
    var type = response.headers.get("content-type") || "";
    var data = type.indexOf("json") >= 0 ? await response.json() : await response.text();
    if (!response.ok) throw new ApiError(response.status, detailOf(data, response.status));
    return data;
  }

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

  // -- building the page ---------------------------------------------------------------------

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
    var end = FINISHED.indexOf(run.status) >= 0 ? run.updated_at : Date.now() / 1000;
    return duration(Math.max(0, end - run.created_at));
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

  async function workflows() {
    if (!cache.workflows) cache.workflows = (await api("workflows")).workflows;
    return cache.workflows;
  }

  async function openapi() {
    if (!cache.openapi) cache.openapi = await api("openapi.json");
    return cache.openapi;
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

  // -- forms from JSON schemas ---------------------------------------------------------------

  function resolve(schema, root) {
    var seen = 0;
    while (schema && schema.$ref && seen++ < 20) {
      var parts = schema.$ref.replace(/^#\//, "").split("/");
      var node = root;
      parts.forEach(function (part) { node = node ? node[part] : undefined; });
      schema = node;
    }
    if (schema && Array.isArray(schema.anyOf)) {
      var real = schema.anyOf.filter(function (s) { return s.type !== "null"; });
      if (real.length === 1) {
        var merged = Object.assign({}, resolve(real[0], root), { nullable: true });
        ["title", "default", "description"].forEach(function (k) {
          if (schema[k] !== undefined) merged[k] = schema[k];
        });
        return merged;
      }
    }
    return schema || {};
  }

  // One input per property; returns the form's fields and a function reading their values.
  function schemaFields(schema, root, prefix) {
    schema = resolve(schema, root);
    var props = schema.properties || {};
    var required = schema.required || [];
    var readers = [];
    var nodes = [];
    Object.keys(props).forEach(function (name) {
      var prop = resolve(props[name], root);
      var id = prefix + "-" + name;
      var isRequired = required.indexOf(name) >= 0;
      var kind = prop.type || (typeof prop.default === "string" ? "text" : "json");
      var hint = kind + (isRequired ? ", required" : "");
      var input;
      var read;
      if (Array.isArray(prop.enum)) {
        input = el("select", { id: id, name: name },
          prop.enum.map(function (v) { return el("option", { value: JSON.stringify(v) }, String(v)); }));
        if (prop.default !== undefined) input.value = JSON.stringify(prop.default);
        read = function () { return JSON.parse(input.value); };
      } else if (prop.type === "boolean") {
        input = el("input", { id: id, name: name, type: "checkbox", checked: prop.default === true });
        read = function () { return input.checked; };
      } else if (prop.type === "integer" || prop.type === "number") {
        input = el("input", { id: id, name: name, type: "number",
          step: prop.type === "integer" ? "1" : "any", required: isRequired });
        if (prop.default !== undefined && prop.default !== null) input.value = prop.default;
        read = function () { return input.value === "" ? undefined : Number(input.value); };
      } else if (prop.type === "string" || (!prop.type && typeof prop.default === "string")) {
        input = el("input", { id: id, name: name, type: "text", required: isRequired });
        if (prop.default !== undefined && prop.default !== null) input.value = prop.default;
        read = function () { return input.value === "" && !isRequired ? undefined : input.value; };
      } else {
        input = el("textarea", { id: id, name: name, placeholder: "JSON" });
        if (prop.default !== undefined) input.value = JSON.stringify(prop.default);
        read = function () {
          if (input.value.trim() === "") return undefined;
          try {
            return JSON.parse(input.value);
          } catch (e) {
            throw new Error("Field '" + name + "' is not valid JSON: " + e.message);
          }
        };
      }
      nodes.push(el("div", { className: "field" },
        el("label", { htmlFor: id }, prop.title || name, el("span", { className: "hint" }, hint)),
        input,
        prop.description ? el("div", { className: "muted" }, prop.description) : null));
      readers.push([name, read]);
    });
    var free = null;
    if (!Object.keys(props).length) {
      free = el("textarea", { id: prefix + "-json", name: "json", placeholder: '{"field": "value"}' });
      free.value = "{}";
      nodes.push(el("div", { className: "field" },
        el("label", { htmlFor: free.id }, "Fields", el("span", { className: "hint" }, "a JSON object")),
        free));
    }
    function values() {
      if (free) {
        var parsed;
        try {
          parsed = JSON.parse(free.value || "{}");
        } catch (e) {
          throw new Error("The fields are not valid JSON: " + e.message);
        }
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
          throw new Error("The fields must be a JSON object, like {\"topic\": \"x\"}.");
        }
        return parsed;
      }
      var out = {};
      readers.forEach(function (pair) {
        var v = pair[1]();
        if (v !== undefined) out[pair[0]] = v;
      });
      return out;
    }
    return { nodes: nodes, values: values };
  }

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
          el("td", {}, el("a", { className: "mono", href: "#/runs/" + run.run_id }, run.run_id.slice(0, 12))),
          el("td", {}, run.workflow),
          el("td", {}, statusBadge(run.status)),
          el("td", {}, clock(run.created_at)),
          el("td", {}, runDuration(run))));
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
          el("thead", {}, el("tr", {}, ["run", "workflow", "status", "started", "duration"].map(function (h) { return el("th", {}, h); }))),
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

  // Reads GET runs/ID/events with fetch (EventSource cannot send a bearer header); after a drop
  // it reconnects with Last-Event-ID = the last id seen, so no event is lost or repeated.
  function followEvents(runId, onMessage, onState) {
    var stopped = false;
    var lastId = 0;
    var connection = null;
    var connections = 0;

    async function connectOnce() {
      connection = new AbortController();
      var headers = authHeaders({ Accept: "text/event-stream" });
      if (lastId) headers["Last-Event-ID"] = String(lastId);
      connections += 1;
      onState(connections > 1 ? "reconnected after event " + lastId : "live", connections);
      var response = await fetch("runs/" + encodeURIComponent(runId) + "/events", { headers: headers, signal: connection.signal });
      if (!response.ok) {
        var data = await response.json().catch(function () { return null; });
        throw new ApiError(response.status, detailOf(data, response.status));
      }
      var reader = response.body.getReader();
      var decoder = new TextDecoder();
      var buffer = "";
      for (;;) {
        var chunk = await reader.read();
        if (chunk.done) return false;
        buffer += decoder.decode(chunk.value, { stream: true }).replace(/\r\n/g, "\n");
        var cut;
        while ((cut = buffer.indexOf("\n\n")) >= 0) {
          var block = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          var message = { id: null, event: "message", data: "" };
          block.split("\n").forEach(function (line) {
            if (!line || line[0] === ":") return;
            var colon = line.indexOf(":");
            var field = colon < 0 ? line : line.slice(0, colon);
            var value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
            if (field === "data") message.data += (message.data ? "\n" : "") + value;
            else if (field === "id" || field === "event") message[field] = value;
          });
          if (!message.data) continue;
          if (message.id !== null) lastId = Number(message.id);
          message.data = JSON.parse(message.data);
          onMessage(message);
          if (message.event === "end") return true;
        }
      }
    }

    (async function loop() {
      while (!stopped) {
        try {
          if (await connectOnce()) {
            onState("ended", connections);
            return;
          }
        } catch (e) {
          if (stopped) return;
          if (e instanceof ApiError && e.status !== 503) {
            onState(e.message, connections);
            return;
          }
        }
        if (stopped) return;
        onState("reconnecting…", connections);
        await new Promise(function (r) { setTimeout(r, 500); });
      }
    })();

    return {
      stop: function () {
        stopped = true;
        if (connection) connection.abort();
      },
      // Cut the connection as a network drop would (the loop reconnects); the tests use it.
      drop: function () {
        if (connection) connection.abort();
      },
    };
  }

  // What the waiting run waits for (GET runs/ID: waiting_for), one choice per awaited event: its
  // fields come from its schema, the values its waiting step requires are filled in. A server
  // that does not say falls back to the events the workflow accepts from outside.
  async function answerChoices(run) {
    if (Array.isArray(run.waiting_for) && run.waiting_for.length) {
      return run.waiting_for.map(function (w) {
        var needs = Object.keys(w.requirements || {}).map(function (k) { return k + " = " + JSON.stringify(w.requirements[k]); });
        return { type: w.type, schema: w.schema, root: w.schema,
          label: w.type + (needs.length ? " with " + needs.join(", ") : "") + (w.steps && w.steps.length ? " (step " + w.steps.join(", ") + ")" : "") };
      });
    }
    var list = await workflows();
    var workflow = list.find(function (w) { return w.name === run.workflow; });
    var types = (workflow ? workflow.accepts.slice() : []);
    if (types.indexOf("HumanResponseEvent") < 0) types.push("HumanResponseEvent");
    var schemas = (await openapi()).components.schemas;
    return types.map(function (t) {
      var envelope = schemas["Send" + t];
      return { type: t, label: t, schema: envelope ? envelope.properties.data : { type: "object" }, root: { components: { schemas: schemas } } };
    });
  }

  async function answerForm(run, prompt, onSent) {
    var choices = await answerChoices(run);
    var fieldsBox = el("div");
    var form = null;
    // An option's value is its type (numbered when one type is awaited with other values).
    choices.forEach(function (c, i) {
      var twice = choices.filter(function (d) { return d.type === c.type; }).length > 1;
      c.value = twice ? c.type + "#" + i : c.type;
    });
    var picker = el("select", { id: "answer-type", name: "type", "aria-label": "event type" },
      choices.map(function (c) { return el("option", { value: c.value }, c.label); }));
    function chosen() { return choices.find(function (c) { return c.value === picker.value; }); }
    function showFields() {
      form = schemaFields(chosen().schema, chosen().root, "answer");
      fieldsBox.replaceChildren.apply(fieldsBox, form.nodes);
    }
    picker.addEventListener("change", showFields);
    picker.value = choices[0].value;
    showFields();
    var error = el("p", { className: "error", role: "alert", hidden: true });
    var send = el("button", { className: "primary", type: "submit", name: "answer" }, "Send the answer");
    return el("form", { id: "answer-form", className: "card answer", dataset: { question: run.question ? String(run.question.seq) : "" }, onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      send.disabled = true;
      try {
        await api("runs/" + encodeURIComponent(run.run_id) + "/events", { method: "POST", json: { type: chosen().type, data: form.values() } });
        onSent();
      } catch (e) {
        // Refused (the server says what the run waits for): the question stays, with the form.
        error.textContent = e.message;
        error.hidden = false;
        send.disabled = false;
      }
    } },
      el("div", { className: "prompt", id: "answer-prompt" }, prompt || (run.question && run.question.value && run.question.value.prefix) || "The run waits for an answer."),
      el("div", { className: "row" }, el("span", { className: "muted" }, "as"), picker),
      fieldsBox,
      el("div", { className: "row", style: "margin-top:10px" }, send),
      error);
  }

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
    var answering = false;

    function renderFacts() {
      facts.replaceChildren(
        el("dt", {}, "status"), el("dd", { id: "run-status" }, statusBadge(run.status)),
        el("dt", {}, "workflow"), el("dd", {}, el("a", { href: "#/start/" + encodeURIComponent(run.workflow) }, run.workflow)),
        el("dt", {}, "started"), el("dd", {}, new Date(run.created_at * 1000).toLocaleString()),
        el("dt", {}, "duration"), el("dd", { id: "run-duration" }, runDuration(run)),
        el("dt", {}, "start fields"), el("dd", { className: "mono" }, compact(run.start, 300)));
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
      if (run.status !== "waiting") {
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
      try {
        showDrawing(drawing, await api("runs/" + encodeURIComponent(runId) + "/drawing"));
        drawingNote.textContent = "";
        var recorded = await api("runs/" + encodeURIComponent(runId) + "/steps");
        steps.replaceChildren.apply(steps, recorded.steps.map(function (s) {
          return el("tr", {}, el("td", {}, s.step), el("td", {}, s.input_event + " → " + (s.output_events.join(", ") || "nothing")), el("td", {}, duration(s.duration)));
        }));
        var state = await api("runs/" + encodeURIComponent(runId) + "/state");
        stateBox.textContent = JSON.stringify(state.state, null, 2);
      } catch (e) {
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

    var stream = followEvents(runId, function (message) {
      var body = message.data;
      var item;
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
        item = el("li", { className: asks ? "ask" : "", dataset: { seq: body.seq, type: body.type } },
          el("span", { className: "seq" }, body.seq),
          el("span", {},
            el("span", { className: "type" }, body.type),
            el("span", { className: "muted" }, " · " + new Date().toLocaleTimeString([], { hour12: false })),
            el("div", { className: "value mono" }, compact(value))));
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
          answerBox,
          el("section", { className: "card" }, outcome),
          el("section", { className: "card" },
            el("h2", {}, "Events ", streamState),
            timeline)),
        el("div", {},
          el("section", { className: "card" }, el("h2", {}, "What ran"), drawing, drawingNote),
          el("section", { className: "card" },
            el("h2", {}, "Steps"),
            el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "step"), el("th", {}, "event in → out"), el("th", {}, "took"))), steps)),
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
      else if (parts[0] === "runs" && parts[1]) await runView(parts[1]);
      else await homeView();
    } catch (e) {
      if (e.status === 401) return;
      app.replaceChildren(el("h1", {}, "Something went wrong"), problem(e), el("a", { href: "#/" }, "back to the runs"));
    }
  }

  window.addEventListener("hashchange", route);
  route();
})();

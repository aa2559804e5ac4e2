// The chat of an agent (a workflow whose GET /workflows entry has "chat": FunctionAgent,
// AgentWorkflow, ReActAgent...): a run's events read as a conversation.
//
// transcript(run, chat, onAsk) turns one run's events into: the user's message; the LLM's
// text growing as its AgentStream deltas arrive (one bubble per LLM turn, replaced by the
// turn's AgentOutput text when it ends); a card per tool call, filled in by its result; a line
// when another agent takes over (a handoff); the question of a tool that waits for a human,
// with the answer form (answer.js) inline while the run waits. The run page shows it above
// the events; the chat page (#/chat/NAME/RUN,RUN...) shows one per turn under a message box,
// each turn started with the earlier turns as its chat history.
(function (bf) {
  "use strict";

  var el = bf.el;
  var api = bf.api;
  var AGENT_EVENTS = "batonflow.agents.events.";
  var SILENT = ["AgentInput", "AgentSetup"];

  // The text of a ChatMessage in its JSON form: its text blocks, or its content.
  function messageText(message) {
    if (typeof message === "string") return message;
    if (!message || typeof message !== "object") return "";
    if (Array.isArray(message.blocks)) {
      return message.blocks.map(function (b) { return b && typeof b.text === "string" ? b.text : ""; }).join("");
    }
    return typeof message.content === "string" ? message.content : "";
  }

  // What a tool returned, as its ToolOutput JSON shows it to the LLM.
  function toolOutputText(output) {
    if (!output || typeof output !== "object") return output === undefined || output === null ? "" : String(output);
    var text = messageText(output);
    if (text) return text;
    return typeof output.raw_output === "string" ? output.raw_output : JSON.stringify(output.raw_output);
  }

  function argumentList(kwargs) {
    var list = el("dl", { className: "tool-args" });
    Object.keys(kwargs || {}).forEach(function (key) {
      var value = kwargs[key];
      list.append(el("dt", {}, key), el("dd", { className: "mono" }, typeof value === "string" ? value : JSON.stringify(value)));
    });
    return list;
  }

  // One run as a conversation. onAsk(slot, prompt, run) fills a question's slot with a form.
  function transcript(run, chat, onAsk) {
    var node = el("div", { className: "transcript", dataset: { runId: run.run_id } });
    var agent = null;     // the agent answering now
    var bubble = null;    // the LLM turn being streamed
    var asking = null;    // the question waiting for its answer
    var tools = {};       // tool call cards by call id
    var state = { node: node, answer: null, user: "", done: false, status: run.status };

    var start = run.start || {};
    state.user = messageText(start[chat.message] !== undefined && start[chat.message] !== null ? start[chat.message] : start.input);
    if (state.user) {
      node.appendChild(el("div", { className: "msg user" }, el("div", { className: "who" }, "you"),
        el("div", { className: "text" }, state.user)));
    }

    function speaker(name) {
      if (typeof name !== "string" || name === agent) return;
      if (agent !== null) {
        node.appendChild(el("div", { className: "handoff", dataset: { agent: name } }, name + " takes over from " + agent));
      }
      agent = name;
    }

    function openBubble() {
      if (!bubble) {
        bubble = el("div", { className: "msg assistant", dataset: { agent: agent || "" } },
          el("div", { className: "who" }, agent || "agent"), el("div", { className: "text" }));
        node.appendChild(bubble);
      }
      return bubble.lastChild;
    }

    function turnEnded(value) {
      var text = messageText(value.response);
      if (text) openBubble().textContent = text;
      else if (bubble && !bubble.lastChild.textContent) bubble.remove();
      if (bubble) {
        delete bubble.dataset.streaming;
        if (value.is_final) bubble.classList.add("final");
      }
      if (value.is_final) state.answer = text;
      bubble = null;
    }

    function toolCard(value) {
      var id = value.tool_id || value.tool_name;
      if (!tools[id]) {
        bubble = null;  // text after a tool call is a new bubble
        tools[id] = el("div", { className: "tool-card", dataset: { tool: value.tool_name, state: "running" } },
          el("div", { className: "tool-head" }, el("span", { className: "muted" }, "tool "), el("strong", {}, value.tool_name),
            agent ? el("span", { className: "muted" }, " · " + agent) : null),
          argumentList(value.tool_kwargs),
          el("div", { className: "tool-result muted" }, "running…"));
        node.appendChild(tools[id]);
      }
      return tools[id];
    }

    function ask(prompt) {
      bubble = null;
      var slot = el("div", { className: "slot" });
      asking = el("div", { className: "ask-card", dataset: { state: "open" } },
        el("div", { className: "question" }, prompt), slot);
      node.appendChild(asking);
      var card = asking;
      onAsk(slot, prompt, run, function stillOpen() { return asking === card; });
    }

    // Any later event means the question was answered (a replay of a past run, or this tab).
    function answered() {
      if (!asking) return;
      asking.dataset.state = "answered";
      asking.lastChild.replaceChildren(el("span", { className: "muted" }, "answered"));
      asking = null;
    }

    state.add = function (message) {
      var body = message.data;
      if (message.event === "end") {
        answered();
        state.done = true;
        state.status = body.status;
        if (body.status !== "completed") {
          node.appendChild(el("div", { className: "msg failed error", role: "alert" },
            "The run ended " + body.status + (body.error ? ": " + body.error : ".")));
        }
        return;
      }
      var value = body.value || {};
      // A question: a server that records what the run waits for says so on its event (as the
      // run page reads it); else an InputRequiredEvent with its prefix.
      var asks = body.waiting_for !== undefined || (typeof value.prefix === "string" && /InputRequired/.test(body.type + " " + body.qualified_name));
      if (asks) {
        ask(typeof value.prefix === "string" && value.prefix ? value.prefix : "The run waits for an answer.");
        return;
      }
      if (body.type !== "StopEvent") answered();
      if ((body.qualified_name || "").indexOf(AGENT_EVENTS) !== 0 || SILENT.indexOf(body.type) >= 0) return;
      speaker(value.current_agent_name);
      if (body.type === "AgentStream") {
        if (value.delta) {
          var text = openBubble();
          bubble.dataset.streaming = "true";
          text.textContent += value.delta;
        }
      } else if (body.type === "AgentOutput") {
        turnEnded(value);
      } else if (body.type === "ToolCall") {
        toolCard(value);
      } else if (body.type === "ToolCallResult") {
        var card = toolCard(value);
        var output = value.tool_output || {};
        card.dataset.state = output.is_error ? "error" : "done";
        card.lastChild.className = "tool-result" + (output.is_error ? " error" : "");
        card.lastChild.textContent = toolOutputText(output);
      } else if (body.type === "AgentStreamStructuredOutput") {
        node.appendChild(el("div", { className: "tool-card", dataset: { state: "done" } },
          el("div", { className: "tool-head" }, "structured output"),
          el("pre", { className: "json" }, JSON.stringify(value.output, null, 2))));
      }
    };
    return state;
  }

  // The answer form of a waiting run (answer.js's, built from the run's record once it says
  // the run waits), inside a question's slot while the question is still open.
  async function inlineAnswer(slot, prompt, run, stillOpen, onSent) {
    try {
      var record = await api("runs/" + encodeURIComponent(run.run_id));
      // The question may come through the stream a moment before the record says "waiting".
      for (var tries = 0; record.status === "running" && tries < 40 && stillOpen(); tries++) {
        await new Promise(function (r) { setTimeout(r, 250); });
        record = await api("runs/" + encodeURIComponent(run.run_id));
      }
      if (!stillOpen() || record.status !== "waiting") return;
      var form = await bf.answerForm(record, prompt, function () {
        slot.replaceChildren(el("span", { className: "muted" }, "answer sent"));
        if (onSent) onSent();
      });
      if (stillOpen()) slot.replaceChildren(form);
    } catch (e) {
      slot.replaceChildren(bf.problem(e));
    }
  }

  // -- view: the chat of an agent --------------------------------------------------------------

  async function chatView(name, runIds) {
    var list = await bf.workflows();
    var workflow = list.find(function (w) { return w.name === name; });
    if (!workflow) throw new Error("Workflow '" + name + "' is not served here.");
    if (!workflow.chat) {
      throw new Error("Workflow '" + name + "' is not an agent: start it from its form (#/start/" + name + ").");
    }
    var chat = workflow.chat;
    var log = el("div", { id: "chat-log", className: "chat-log" });
    var turns = [];
    var box = el("textarea", { id: "chat-input", name: "message", rows: 2, placeholder: "Message " + name + "…", "aria-label": "message" });
    var send = el("button", { className: "primary", type: "submit", name: "send" }, "Send");
    var error = el("p", { className: "error", role: "alert", hidden: true });

    function busy() {
      return turns.some(function (t) { return !t.done; });
    }

    function showTurn(run) {
      var turn = transcript(run, chat, function (slot, prompt, r, stillOpen) {
        inlineAnswer(slot, prompt, r, stillOpen);
      });
      turns.push(turn);
      var status = el("span", { className: "muted" });
      log.appendChild(el("div", { className: "turn" }, turn.node,
        el("div", { className: "turn-meta" }, el("a", { className: "mono", href: "#/runs/" + run.run_id }, "run " + run.run_id.slice(0, 12)), " ", status)));
      send.disabled = true;
      var stream = bf.followEvents(run.run_id, function (message) {
        turn.add(message);
        log.scrollTop = log.scrollHeight;
        if (message.event === "end") {
          status.textContent = message.data.status;
          send.disabled = busy();
        }
      }, function (text) {
        if (!turn.done) status.textContent = text;
      });
      bf.cleanups.push(stream.stop);
    }

    // The turns before this one, as the agent's chat history.
    function conversation() {
      var messages = [];
      turns.forEach(function (t) {
        if (t.user) messages.push({ role: "user", content: t.user });
        if (t.answer) messages.push({ role: "assistant", content: t.answer });
      });
      return messages;
    }

    async function submit(event) {
      event.preventDefault();
      var text = box.value.trim();
      if (!text || busy()) return;
      error.hidden = true;
      send.disabled = true;
      var fields = {};
      fields[chat.message] = text;
      var before = conversation();
      if (before.length) fields[chat.history] = before;
      try {
        var started = await api("workflows/" + encodeURIComponent(name) + "/runs", { method: "POST", json: fields });
        box.value = "";
        runIds.push(started.run_id);
        window.history.replaceState(null, "", "#/chat/" + encodeURIComponent(name) + "/" + runIds.join(","));
        showTurn({ run_id: started.run_id, workflow: name, start: fields, status: started.status });
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
        send.disabled = busy();
      }
    }

    box.addEventListener("keydown", function (event) {
      // Enter sends, Shift+Enter is a new line.
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
    var form = el("form", { id: "chat-form", className: "chat-form", onsubmit: submit }, box, send);
    app().replaceChildren(
      el("h1", {}, "Chat with " + name),
      el("section", { className: "card chat" },
        el("p", { className: "muted" }, workflow.class + ": each message starts a run, with the conversation so far as its " + chat.history + "."),
        log, form, error));
    for (var i = 0; i < runIds.length; i++) showTurn(await api("runs/" + encodeURIComponent(runIds[i])));
    box.focus();
  }

  function app() {
    return document.getElementById("app");
  }

  Object.assign(bf, { transcript: transcript, inlineAnswer: inlineAnswer, chatView: chatView, messageText: messageText });
})(window.batonflow = window.batonflow || {});

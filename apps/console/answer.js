// The answer form of a run that waits for a human: what the run waits for (its awaited events,
// their fields, the values its step requires), sent to POST runs/ID/events. The run page and the
// chat both show it.
(function (bf) {
  "use strict";

  var el = bf.el;
  var api = bf.api;
  var schemaFields = bf.schemaFields;
  var workflows = bf.workflows;
  var openapi = bf.openapi;

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

  bf.answerForm = answerForm;
})(window.batonflow = window.batonflow || {});

// The answer form of a run that waits for a human: the event types the run accepts from
// outside, their fields, sent to POST runs/ID/events. The run page and the chat both show it.
(function (bf) {
  "use strict";

  var el = bf.el;
  var api = bf.api;
  var schemaFields = bf.schemaFields;
  var workflows = bf.workflows;
  var openapi = bf.openapi;

  async function answerForm(run, prompt, onSent) {
    var list = await workflows();
    var workflow = list.find(function (w) { return w.name === run.workflow; });
    var types = (workflow ? workflow.accepts.slice() : []);
    if (types.indexOf("HumanResponseEvent") < 0) types.push("HumanResponseEvent");
    var schemas = (await openapi()).components.schemas;
    var fieldsBox = el("div");
    var form = null;
    var picker = el("select", { id: "answer-type", name: "type", "aria-label": "event type" },
      types.map(function (t) { return el("option", { value: t }, t); }));
    function showFields() {
      var envelope = schemas["Send" + picker.value];
      var dataSchema = envelope ? envelope.properties.data : { type: "object" };
      form = schemaFields(dataSchema, { components: { schemas: schemas } }, "answer");
      fieldsBox.replaceChildren.apply(fieldsBox, form.nodes);
    }
    picker.addEventListener("change", showFields);
    picker.value = types[0];
    showFields();
    var error = el("p", { className: "error", role: "alert", hidden: true });
    var send = el("button", { className: "primary", type: "submit", name: "answer" }, "Send the answer");
    return el("form", { id: "answer-form", className: "card answer", onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      send.disabled = true;
      try {
        await api("runs/" + encodeURIComponent(run.run_id) + "/events", { method: "POST", json: { type: picker.value, data: form.values() } });
        onSent();
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
        send.disabled = false;
      }
    } },
      el("div", { className: "prompt", id: "answer-prompt" }, prompt || "The run waits for an answer."),
      el("div", { className: "row" }, el("span", { className: "muted" }, "as"), picker),
      fieldsBox,
      el("div", { className: "row", style: "margin-top:10px" }, send),
      error);
  }

  bf.answerForm = answerForm;
})(window.batonflow = window.batonflow || {});

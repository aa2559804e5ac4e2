// The console's schedules page ("#/schedules"): the stored schedules, a form to add one (its
// fields as JSON, checked by the server), a remove button on each; and the line of a run's
// facts that names the schedule firing that started it. Cron times are UTC.
(function (bf) {
  "use strict";

  var el = bf.el, api = bf.api, problem = bf.problem, workflows = bf.workflows;

  function utc(seconds) {
    return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }

  // The facts (dt, dd) of a run started by a schedule, or nothing.
  function scheduleFacts(run) {
    if (!run.schedule) return [];
    return [
      el("dt", {}, "schedule"),
      el("dd", { id: "run-schedule" },
        el("a", { href: "#/schedules" }, run.schedule.name),
        " (fired for " + utc(run.schedule.fire) + ")")];
  }

  async function schedulesView(app) {
    var list = await workflows();
    var rows = el("tbody", { id: "schedules" });
    var note = el("p", { className: "muted" });
    var error = el("p", { className: "error", role: "alert", hidden: true });

    async function refresh() {
      var schedules;
      try {
        schedules = (await api("schedules")).schedules;
      } catch (e) {
        note.textContent = e.message;
        return;
      }
      rows.textContent = "";
      schedules.forEach(function (s) {
        rows.appendChild(el("tr", { dataset: { schedule: s.name } },
          el("td", { className: "mono" }, s.name),
          el("td", {}, s.workflow),
          el("td", { className: "mono" }, s.cron),
          el("td", { className: "mono" }, bf.compact(s.fields, 120)),
          el("td", {}, s.missed),
          el("td", {}, el("button", { type: "button", className: "danger", name: "remove", onclick: async function () {
            try {
              await api("schedules/" + encodeURIComponent(s.name), { method: "DELETE" });
            } catch (e) {
              note.textContent = e.message;
            }
            refresh();
          } }, "Remove"))));
      });
      note.textContent = schedules.length ? "" : "No schedules yet: add one below.";
    }

    var name = el("input", { id: "schedule-name", required: true, placeholder: "nightly-report" });
    var workflow = el("select", { id: "schedule-workflow" },
      list.map(function (w) { return el("option", { value: w.name }, w.name); }));
    var cron = el("input", { id: "schedule-cron", required: true, placeholder: "*/5 * * * *", className: "mono" });
    var fields = el("textarea", { id: "schedule-fields", rows: 3, className: "mono" }, "{}");
    var missed = el("select", { id: "schedule-missed" },
      el("option", { value: "skip" }, "skip missed firings"),
      el("option", { value: "once" }, "run the latest missed firing once"));
    var submit = el("button", { className: "primary", type: "submit", name: "add" }, "Add the schedule");

    function field(label, input, hint) {
      return el("label", { htmlFor: input.id }, label, hint ? el("span", { className: "hint" }, hint) : null, input);
    }

    var form = el("form", { id: "schedule-form", className: "card", onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      var values;
      try {
        values = JSON.parse(fields.value || "{}");
      } catch (e) {
        error.textContent = "The fields are not JSON (" + e.message + "); write an object, e.g. {\"topic\": \"sales\"}.";
        error.hidden = false;
        return;
      }
      submit.disabled = true;
      try {
        await api("schedules", { method: "POST", json: {
          name: name.value.trim(), workflow: workflow.value, cron: cron.value.trim(),
          fields: values, missed: missed.value } });
        name.value = "";
        await refresh();
      } catch (e) {
        error.textContent = e.message;
        error.hidden = false;
      } finally {
        submit.disabled = false;
      }
    } },
      el("h2", {}, "Add a schedule"),
      field("name", name),
      field("workflow", workflow),
      field("cron", cron, "minute hour day month weekday, UTC"),
      field("start fields", fields, "JSON object"),
      field("missed firings", missed),
      el("div", { className: "row", style: "margin-top:12px" }, submit),
      error);

    bf.every(5000, refresh);
    app.replaceChildren(
      el("h1", {}, "Schedules"),
      el("section", { className: "card" },
        el("table", {},
          el("thead", {}, el("tr", {}, ["name", "workflow", "cron (UTC)", "fields", "missed", ""].map(function (h) { return el("th", {}, h); }))),
          rows),
        note),
      form);
    await refresh();
  }

  bf.schedulesView = schedulesView;
  bf.scheduleFacts = scheduleFacts;
})(window.batonflow);

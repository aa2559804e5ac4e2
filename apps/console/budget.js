// A run's LLM budget and usage in the console: the tokens column of the runs table, and in a
// run's facts its budget, its usage (the run's and each step's) and, while an LLM call waits
// for the budget to be raised, a form that raises it (POST runs/ID/budget). Costs are US
// dollars at the server's price table; "cost unknown" when a model had no price.
(function (bf) {
  "use strict";

  var el = bf.el, api = bf.api, problem = bf.problem;

  function usageText(usage) {
    var cost = usage.cost === null || usage.cost === undefined ? "cost unknown" : "$" + usage.cost.toFixed(6);
    return usage.total_tokens + " tokens (" + usage.prompt_tokens + " prompt, " + usage.completion_tokens +
      " completion; " + usage.calls + " LLM call" + (usage.calls === 1 ? "" : "s") + "), " + cost;
  }

  // The runs table's cell: the run's tokens (and dollars, when known), or nothing.
  function tokensCell(run) {
    var usage = run.usage;
    if (!usage) return "";
    var text = String(usage.total_tokens);
    if (usage.cost !== null && usage.cost !== undefined) text += " · $" + usage.cost.toFixed(4);
    return text;
  }

  function budgetText(budget) {
    var parts = [];
    if (budget.tokens !== null) parts.push(budget.tokens + " tokens");
    if (budget.cost !== null) parts.push("$" + budget.cost);
    return parts.join(" and ") + " (over it: " + budget.on_exceed + ")";
  }

  // The form raising a waiting run's budget: tokens, or dollars for a cost budget.
  function raiseForm(run, done) {
    var byCost = run.budget && run.budget.tokens === null;
    var amount = el("input", { type: "number", name: "raise-amount", min: "0", step: byCost ? "0.01" : "1",
      required: true, value: byCost ? "1" : String(run.budget && run.budget.tokens ? run.budget.tokens : 1000),
      "aria-label": byCost ? "US dollars to add" : "tokens to add" });
    var error = el("p", { className: "error", role: "alert", hidden: true });
    var blocked = run.budget_blocked || {};
    return el("form", { id: "raise-budget", className: "card", onsubmit: async function (event) {
      event.preventDefault();
      error.hidden = true;
      var body = byCost ? { cost: Number(amount.value) } : { tokens: Number(amount.value) };
      try {
        await api("runs/" + encodeURIComponent(run.run_id) + "/budget", { method: "POST", json: body });
        done();
      } catch (e) {
        error.replaceChildren(problem(e));
        error.hidden = false;
      }
    } },
      el("p", {}, "Step " + (blocked.step || "?") + " waits: its next LLM call would pass the run's budget. " +
        "Raise it to let the run go on, or cancel the run."),
      el("div", { className: "row" }, amount,
        el("button", { type: "submit", className: "primary", name: "raise-budget" }, byCost ? "Add dollars" : "Add tokens")),
      error);
  }

  // The facts (dt, dd) of a run's budget and usage, and the raise form while it waits for one.
  function budgetFacts(run, done) {
    var nodes = [];
    if (run.budget) nodes.push(el("dt", {}, "budget"), el("dd", { id: "run-budget" }, budgetText(run.budget)));
    if (run.usage) {
      nodes.push(el("dt", {}, "LLM usage"), el("dd", { id: "run-usage" }, usageText(run.usage)));
      var steps = run.usage_by_step || {};
      Object.keys(steps).forEach(function (step) {
        nodes.push(el("dt", {}, "· " + step), el("dd", { className: "step-usage", dataset: { step: step } }, usageText(steps[step])));
      });
    }
    if (run.status === "waiting" && run.waiting_reason === "budget") {
      // The page refreshes its facts as the run goes: the same wait keeps its form (and what
      // was typed in it).
      var key = run.run_id + " " + JSON.stringify([run.budget, run.budget_blocked]);
      if (!kept || kept.key !== key) kept = { key: key, form: raiseForm(run, done) };
      nodes.push(el("dt", {}, "waits for"), el("dd", {}, kept.form));
    }
    return nodes;
  }

  var kept = null;

  bf.tokensCell = tokensCell;
  bf.budgetFacts = budgetFacts;
})(window.batonflow);

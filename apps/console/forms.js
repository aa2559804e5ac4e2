// Forms made from JSON schemas: one input per field (the start form, the answer form).
(function (bf) {
  "use strict";

  var el = bf.el;

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

  Object.assign(bf, { resolve: resolve, schemaFields: schemaFields });
})(window.batonflow = window.batonflow || {});

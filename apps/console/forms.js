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

  // The JSON types a field takes, null left out (a union's types in its order).
  function typesOf(prop, root) {
    if (Array.isArray(prop.anyOf)) {
      var types = [];
      prop.anyOf.forEach(function (option) {
        var t = resolve(option, root).type || (resolve(option, root).properties ? "object" : null);
        if (t && t !== "null" && types.indexOf(t) < 0) types.push(t);
      });
      return types;
    }
    if (Array.isArray(prop.type)) return prop.type.filter(function (t) { return t !== "null"; });
    return prop.type ? [prop.type] : [];
  }

  // Which input a field gets: a select for choices, a checkbox (or a three-way select when it
  // may be left out) for true/false, a number box for numbers, a text box for anything that
  // takes a string (a union with a string too: "str | ChatMessage" takes text), and a JSON box
  // for lists and objects. A field without a type takes JSON when it parses, else text.
  function widgetOf(prop, types) {
    if (Array.isArray(prop.enum)) return "choice";
    if (types.length === 1 && types[0] === "boolean") return prop.nullable ? "yes-no" : "checkbox";
    if (types.length === 1 && (types[0] === "integer" || types[0] === "number")) return "number";
    if (types.indexOf("string") >= 0) return "text";
    if (!types.length) return typeof prop.default === "string" ? "text" : "any";
    return "json";
  }

  var HINTS = { any: "JSON or text", json: "JSON" };

  function given(value) {
    return value !== undefined && value !== null;
  }

  // One input per property; returns the form's fields and a function reading their values.
  // A field left empty is left out of the values (the event's default applies), never null.
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
      var types = typesOf(prop, root);
      var widget = widgetOf(prop, types);
      var hint = (types.join(" or ") || "any") + (HINTS[widget] ? ", " + HINTS[widget] : "") +
        (isRequired ? ", required" : "");
      var input;
      var read;
      if (widget === "choice") {
        var choices = prop.enum.map(function (v) { return el("option", { value: JSON.stringify(v) }, String(v)); });
        if (!isRequired && !given(prop.default)) choices.unshift(el("option", { value: "" }, "—"));
        input = el("select", { id: id, name: name }, choices);
        if (given(prop.default)) input.value = JSON.stringify(prop.default);
        read = function () { return input.value === "" ? undefined : JSON.parse(input.value); };
      } else if (widget === "checkbox") {
        input = el("input", { id: id, name: name, type: "checkbox", checked: prop.default === true });
        read = function () { return input.checked; };
      } else if (widget === "yes-no") {
        input = el("select", { id: id, name: name },
          el("option", { value: "" }, "—"), el("option", { value: "true" }, "true"),
          el("option", { value: "false" }, "false"));
        if (given(prop.default)) input.value = String(prop.default);
        read = function () { return input.value === "" ? undefined : input.value === "true"; };
      } else if (widget === "number") {
        input = el("input", { id: id, name: name, type: "number",
          step: types[0] === "integer" ? "1" : "any", required: isRequired });
        if (given(prop.default)) input.value = prop.default;
        read = function () { return input.value === "" ? undefined : Number(input.value); };
      } else if (widget === "text") {
        input = el("input", { id: id, name: name, type: "text", required: isRequired });
        if (typeof prop.default === "string") input.value = prop.default;
        read = function () { return input.value === "" && !isRequired ? undefined : input.value; };
      } else {
        var example = types[0] === "array" ? "[1, 2]" : '{"key": "value"}';
        input = el("textarea", { id: id, name: name, placeholder: widget === "any" ? "JSON or text" : "JSON, like " + example });
        if (given(prop.default)) input.value = JSON.stringify(prop.default);
        read = function () {
          if (input.value.trim() === "") return undefined;
          try {
            return JSON.parse(input.value);
          } catch (e) {
            if (widget === "any") return input.value;  // not JSON: the text itself
            throw new Error("Field '" + name + "' is not valid JSON (" + e.message + "); write " +
              (types[0] === "array" ? "a JSON array, like " : "a JSON object, like ") + example + ".");
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

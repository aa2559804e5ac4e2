// The console's API calls: the bearer token, JSON requests, errors, and a run's event stream.
(function (bf) {
  "use strict";

  var TOKEN_KEY = "batonflow.token";
  var cache = { workflows: null, openapi: null };

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
      bf.askForToken(token() ? "The server refused this token; enter the right one." : "");
      throw new ApiError(401, "This server needs its token.");
    }
    var type = response.headers.get("content-type") || "";
    var data = type.indexOf("json") >= 0 ? await response.json() : await response.text();
    if (!response.ok) throw new ApiError(response.status, detailOf(data, response.status));
    return data;
  }

  async function workflows() {
    if (!cache.workflows) cache.workflows = (await api("workflows")).workflows;
    return cache.workflows;
  }

  async function openapi() {
    if (!cache.openapi) cache.openapi = await api("openapi.json");
    return cache.openapi;
  }

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

  Object.assign(bf, {
    TOKEN_KEY: TOKEN_KEY,
    token: token,
    authHeaders: authHeaders,
    ApiError: ApiError,
    detailOf: detailOf,
    api: api,
    workflows: workflows,
    openapi: openapi,
    followEvents: followEvents,
  });
})(window.batonflow = window.batonflow || {});

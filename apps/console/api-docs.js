// Starts Swagger UI or ReDoc on this server's /openapi.json, from files served by the server.
// When the server has a token, the schema and "Try it out" calls carry it: the token the
// console keeps in sessionStorage, or one asked for here (and then kept there too).
(function () {
  "use strict";
  var KEY = "batonflow.token";
  var body = document.body;

  function token() {
    var kept = sessionStorage.getItem(KEY);
    if (!kept && body.dataset.token === "required") {
      kept = window.prompt("This server needs its bearer token (batonflow serve --token):") || "";
      if (kept) sessionStorage.setItem(KEY, kept);
    }
    return kept || "";
  }

  var bearer = token();
  var schemaUrl = "openapi.json";

  if (body.dataset.page === "swagger") {
    var ui = SwaggerUIBundle({
      url: schemaUrl,
      dom_id: "#swagger-ui",
      validatorUrl: null,
      deepLinking: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
      layout: "BaseLayout",
      requestInterceptor: function (request) {
        if (bearer && !request.headers.Authorization) {
          request.headers.Authorization = "Bearer " + bearer;
        }
        return request;
      },
    });
    window.ui = ui;
    return;
  }

  fetch(schemaUrl, { headers: bearer ? { Authorization: "Bearer " + bearer } : {} })
    .then(function (response) {
      if (!response.ok) throw new Error("GET /openapi.json answered " + response.status);
      return response.json();
    })
    .then(function (schema) {
      Redoc.init(schema, { hideDownloadButton: false }, document.getElementById("redoc"));
    })
    .catch(function (error) {
      document.getElementById("redoc").textContent = String(error);
    });
})();

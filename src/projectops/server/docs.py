"""The OpenAPI document and a browsable reference of the API, as Starlette routes.

:func:`docs_routes` gives, relative to where they are mounted:

- ``GET /openapi.json``: :func:`projectops.openapi.document`, whose ``servers`` is the base URL
  the request came to (or the `base_url` given);
- ``GET /docs``: the reference page, rendered by Swagger UI from ``/openapi.json``;
- ``GET /docs/static/<file>``: Swagger UI's assets and the page's start-up script.

Swagger UI (5.x, for OpenAPI 3.1) comes from the installed ``swagger-ui-py`` package (extra
``server``): nothing is fetched from the internet, and the page's Content-Security-Policy allows
scripts and styles from this server only. The routes need no API key: the document describes the
API, it holds no project's data (its examples are the mock server's public fixtures).

Add them to any app of :func:`projectops.server.create_app` (its routes do not overlap)::

    app = create_app(handlers, authenticate)
    app.router.routes.extend(docs_routes())
"""

from __future__ import annotations

import html
import importlib.util
import json
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route

from projectops.codec import to_json
from projectops.conventions import CONTENT_TYPE, InvalidBaseUrl
from projectops.openapi import TITLE, document
from projectops.v1.error_pb2 import ErrorResponse

__all__ = ["DOCS_PATH", "OPENAPI_PATH", "docs_routes", "swagger_ui_assets"]

#: Path of the OpenAPI document.
OPENAPI_PATH = "/openapi.json"
#: Path of the reference page; its assets are under ``DOCS_PATH + "/static/"``.
DOCS_PATH = "/docs"

#: The files of Swagger UI the page loads (nothing else of the package is served).
_ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png", "favicon-16x16.png")
_INIT = "init.js"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src *; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def swagger_ui_assets() -> Path:
    """The folder of Swagger UI's files in the installed ``swagger-ui-py`` package.

    Found without importing the package (its import pulls in its web-framework adapters).

    Raises:
        RuntimeError: ``swagger-ui-py`` is not installed (install the ``server`` extra).
    """
    spec = importlib.util.find_spec("swagger_ui")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        folder = Path(location, "static")
        if all((folder / name).is_file() for name in _ASSETS[:2]):
            return folder
    raise RuntimeError(
        "the /docs page needs Swagger UI from the swagger-ui-py package: "
        "pip install 'projectops[server]'"
    )


def docs_routes(base_url: str | None = None) -> list[Route | Mount]:
    """``GET /openapi.json``, ``GET /docs`` and its assets (module docstring).

    Args:
        base_url: the ``servers`` URL of the served document; ``None`` uses the base URL of
            each request (scheme, host and mount point, as the client reached the server).

    Raises:
        RuntimeError: Swagger UI is not installed (:func:`swagger_ui_assets`).
        projectops.InvalidBaseUrl: (a ``ValueError``) `base_url` is not an absolute http(s) URL.
    """
    assets = swagger_ui_assets()
    if base_url is not None:
        document(base_url)  # fail now, not on the first request

    async def openapi_json(request: Request) -> Response:
        url = base_url if base_url is not None else _request_base_url(request)
        try:
            doc = document(url)
        except InvalidBaseUrl:
            return _error(
                "invalid_argument", 400, f"cannot serve the document for the base URL {url!r}"
            )
        return JSONResponse(doc, headers={"Cache-Control": "no-cache"})

    async def page(request: Request) -> Response:
        root = request.scope.get("root_path", "").rstrip("/")
        static = html.escape(f"{root}{DOCS_PATH}/static/", quote=True)
        body = _PAGE.format(title=html.escape(TITLE), static=static)
        return Response(
            body, media_type="text/html; charset=utf-8", headers={"Content-Security-Policy": _CSP}
        )

    async def init_js(request: Request) -> Response:
        root = request.scope.get("root_path", "").rstrip("/")
        script = _INIT_JS.replace("SPEC_URL", json.dumps(root + OPENAPI_PATH))
        return Response(
            script,
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": "no-cache"},
        )

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return _error("not_found", 404, f"no such file {name!r} of the reference page")
        return FileResponse(assets / name)

    return [
        Route(OPENAPI_PATH, openapi_json, methods=["GET"]),
        Route(DOCS_PATH, page, methods=["GET"]),
        Route(f"{DOCS_PATH}/static/{_INIT}", init_js, methods=["GET"]),
        Route(DOCS_PATH + "/static/{name}", asset, methods=["GET"]),
    ]


def _request_base_url(request: Request) -> str:
    """The URL the client reached this app at: scheme, host and mount point (root path)."""
    return str(request.base_url).rstrip("/")


def _error(code: str, status: int, message: str) -> Response:
    """An ``ErrorResponse`` answer, like those of the operations."""
    body = to_json(ErrorResponse(code=code, message=message))
    return Response(body, status_code=status, media_type=CONTENT_TYPE)


_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} reference</title>
<link rel="icon" type="image/png" href="{static}favicon-32x32.png">
<link rel="stylesheet" href="{static}swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{static}swagger-ui-bundle.js"></script>
<script src="{static}init.js"></script>
</body>
</html>
"""

# Operations and schemas expanded, so the page (and a text search of it) shows every field.
_INIT_JS = """window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: SPEC_URL,
    dom_id: "#swagger-ui",
    deepLinking: true,
    docExpansion: "full",
    defaultModelsExpandDepth: 1,
    defaultModelExpandDepth: 2,
    displayOperationId: true,
    showExtensions: true,
    tryItOutEnabled: false,
    validatorUrl: null
  });
});
"""

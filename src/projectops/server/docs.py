"""``GET /openapi.json`` and a Swagger UI page (``GET /docs``, from the installed
``swagger-ui-py``) as Starlette routes (docs/server.md). The page may hold the reader's key, so
no request header decides where it connects: its CSP allows its origin and the base URL's."""

from __future__ import annotations

import html
import importlib.util
import json
import re
from pathlib import Path
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route

from projectops.conventions import InvalidBaseUrl, normalize_base_url, shown_url
from projectops.errors import InvalidArgument, NotFound
from projectops.openapi import TITLE, document
from projectops.registry import REGISTRY, Registry
from projectops.server._responses import error_response

__all__ = ["DOCS_PATH", "OPENAPI_PATH", "docs_routes", "swagger_ui_assets"]

OPENAPI_PATH = "/openapi.json"
DOCS_PATH = "/docs"
# The files of Swagger UI the page loads (nothing else of the package is served).
_ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png", "favicon-16x16.png")
_INIT = "init.js"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src {connect}; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}
# A base URL's host that may enter the CSP: DNS name, IPv4 or [IPv6], port; no backtracking.
_CSP_HOST = re.compile(r"(?:[a-z0-9.-]+|\[[0-9a-f:.]+\])(?::[0-9]{1,5})?")


def swagger_ui_assets() -> Path:
    """The folder of Swagger UI's files, found without importing ``swagger-ui-py`` (it pulls in web
    frameworks).

    Returns:
        The folder's path.

    Raises:
        RuntimeError: ``swagger-ui-py`` (extra ``server``) is not installed.
    """
    spec = importlib.util.find_spec("swagger_ui")
    locations: list[str] = []
    if spec is not None:
        locations = list(spec.submodule_search_locations or [])
    for location in locations:
        folder = Path(location, "static")
        if all((folder / name).is_file() for name in _ASSETS[:2]):
            return folder
    raise RuntimeError(
        "the /docs page needs Swagger UI from the swagger-ui-py package: "
        "pip install 'projectops[server]'"
    )


def docs_routes(
    base_url: str | None = None, *, registry: Registry = REGISTRY
) -> list[Route | Mount]:
    """The routes of the API reference page: ``/docs`` (Swagger UI) and ``/openapi.json``.

    Args:
        base_url: the document's ``servers`` URL; ``None`` (the default): the path the routes
            are mounted at, so "Try it out" calls the server that serves the page.
        registry: the operations the document describes; :data:`projectops.registry.REGISTRY`
            by default.

    Returns:
        Starlette routes to mount on an app.

    Raises:
        RuntimeError: Swagger UI is not installed.
        projectops.InvalidBaseUrl: `base_url` is no absolute http(s) URL with a plain DNS name or
            IP address.
    """
    assets = swagger_ui_assets()
    connect = "'self'"
    if base_url is not None:
        base_url = normalize_base_url(base_url)  # fail now, not on the first request
        connect = f"'self' {_origin(base_url)}"
    page_headers = {
        "Content-Security-Policy": _CSP.format(connect=connect),
        "Referrer-Policy": "no-referrer",
        **_NOSNIFF,
    }

    async def openapi_json(request: Request) -> Response:
        url = base_url
        if url is None:
            url = _mount_path(request)
        try:
            doc = document(url, registry=registry)
        except InvalidBaseUrl:
            return error_response(InvalidArgument("cannot serve the document for this mount"))
        return JSONResponse(doc, headers={"Cache-Control": "no-cache", **_NOSNIFF})

    async def page(request: Request) -> Response:
        root = request.scope.get("root_path", "").rstrip("/")
        static = html.escape(f"{root}{DOCS_PATH}/static/", quote=True)
        body = _PAGE.format(title=html.escape(TITLE), static=static)
        return Response(body, media_type="text/html; charset=utf-8", headers=page_headers)

    async def init_js(request: Request) -> Response:
        root = request.scope.get("root_path", "").rstrip("/")
        script = _INIT_JS.replace("SPEC_URL", json.dumps(root + OPENAPI_PATH))
        return Response(
            script,
            media_type="text/javascript; charset=utf-8",
            headers={"Cache-Control": "no-cache", **_NOSNIFF},
        )

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _ASSETS:
            return error_response(NotFound(f"no such file {name!r} of the reference page"))
        return FileResponse(assets / name, headers=_NOSNIFF)

    return [
        Route(OPENAPI_PATH, openapi_json, methods=["GET"]),
        Route(DOCS_PATH, page, methods=["GET"]),
        Route(f"{DOCS_PATH}/static/{_INIT}", init_js, methods=["GET"]),
        Route(DOCS_PATH + "/static/{name}", asset, methods=["GET"]),
    ]


def _origin(base_url: str) -> str:
    """The origin of a normalised `base_url` for the CSP (a ``;`` in it would add directives)."""
    parts = urlsplit(base_url)
    host = parts.netloc.lower()
    if not _CSP_HOST.fullmatch(host):
        raise InvalidBaseUrl(
            "base URL's host must be a DNS name or IP address (and port), "
            f"got '{shown_url(base_url)}'"
        )
    return f"{parts.scheme}://{host}"  # urlsplit lowercased the scheme


def _mount_path(request: Request) -> str:
    """The mount point (``root_path``) as a relative, percent-encoded server URL."""
    root = str(request.scope.get("root_path", "")).strip("/")
    return "/" + quote(root, safe="/!$&'()*+,;=:@-._~")


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

"""The FastAPI application: routers, error handlers and request limits."""

from __future__ import annotations

import importlib.resources
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server import anonymous
from server.audit.endpoints import router as audit_router
from server.batches.endpoints import router as batches_router
from server.competitions.endpoints import router as competitions_router
from server.competitions.judging_endpoints import router as judging_router
from server.errors import BadRequest, ErrorBody, KernelJudgeError, NotAuthenticated, Unavailable
from server.exports.endpoints import router as exports_router
from server.health import router as health_router
from server.leaderboards.endpoints import router as leaderboards_router
from server.problems.endpoints import router as problems_router
from server.rejudges.endpoints import router as rejudge_router
from server.security_headers import SecurityHeaders, script_hashes
from server.settings import get_settings
from server.submissions.admin_endpoints import router as submission_admin_router
from server.submissions.endpoints import router as submissions_router
from server.users.endpoints import account_router
from server.users.endpoints import router as user_admin_router
from server.web import errors as web_errors
from server.web.accounts import router as accounts_router
from server.web.admin import router as admin_router
from server.web.competition_admin import router as competition_admin_router
from server.web.competition_review import router as competition_review_router
from server.web.competitions import router as competition_pages_router
from server.web.page import STATIC
from server.web.pages import router as pages_router
from server.web.sessions import SESSION_COOKIE, PageSessions, secret_key

log = logging.getLogger(__name__)
# Swagger UI's files (5.x, which reads OpenAPI 3.1), from the swagger-ui-py package.
DOCS_ASSETS = "/docs/assets"
SWAGGER_UI = importlib.resources.files("swagger_ui") / "static"
DATABASE_AWAY = "the database cannot be reached right now; nothing was done, try again shortly"


def error_response(
    status_code: int, code: str, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        status_code=status_code, content={"error": code, "detail": detail}, headers=headers
    )


class BodySizeLimit:
    """Refuse request bodies over the limit with 413, whether or not they declare a length."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self.too_large()(scope, receive, send)
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except BodyTooLarge:
            await self.too_large()(scope, receive, send)

    def too_large(self) -> JSONResponse:
        return error_response(413, "too_large", f"the request body is over {self.max_bytes} bytes")


class BodyTooLarge(Exception):
    pass


def create_app() -> FastAPI:
    settings = get_settings()
    app = FastAPI(
        title="KernelJudge",
        version="0.1.0",
        description="Submit GPU kernels, have them graded in a sandbox against a reference, "
        "and see them ranked. Authenticate with `Authorization: Bearer TOKEN`.",
        # Served below from a package's copy of Swagger UI, not from a CDN: /docs works on a
        # site with no way out to the internet.
        docs_url=None,
        redoc_url=None,
    )

    def docs_page() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="KernelJudge API",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon-32x32.png",
        )

    @app.get("/docs", include_in_schema=False)
    def api_docs() -> HTMLResponse:
        return docs_page()

    # Browsers get pages for errors; the REST API and other clients get JSON.
    @app.exception_handler(KernelJudgeError)
    async def kernel_judge_error(request: Request, exc: KernelJudgeError) -> Response:
        if web_errors.wants_page(request):
            if isinstance(exc, NotAuthenticated):
                return web_errors.to_login(request)
            page = web_errors.error_page(request, exc.status_code, exc.detail)
            page.headers.update(exc.headers)
            return page
        return error_response(exc.status_code, exc.code, exc.detail, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        detail = "; ".join(
            f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
            for error in exc.errors()
        )
        if web_errors.wants_page(request):
            return web_errors.error_page(request, 422, detail)
        return error_response(422, "invalid_request", detail)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        headers = dict(exc.headers or {})
        if exc.status_code == 405 and (allowed := allowed_methods(request)):
            # Starlette names the methods of the first route on the path only.
            headers["Allow"] = ", ".join(allowed)
        # Starlette's 400 (a malformed multipart body) is this API's malformed input.
        status = 422 if exc.status_code == 400 else exc.status_code
        if web_errors.wants_page(request):
            page = web_errors.error_page(request, status, str(exc.detail))
            page.headers.update(headers)
            return page
        code = {404: "not_found", 405: "method_not_allowed", 422: "invalid_request"}
        return error_response(status, code.get(status, "http_error"), str(exc.detail), headers)

    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    @app.exception_handler(PoolTimeout)
    async def database_unreachable(request: Request, exc: Exception) -> Response:
        log.warning("database unreachable: %s", exc.__class__.__name__)
        return await kernel_judge_error(request, Unavailable(DATABASE_AWAY))

    @app.exception_handler(Exception)
    async def unexpected_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error", exc_info=exc)
        if web_errors.wants_page(request):
            return web_errors.error_page(request, 500, "")
        return error_response(500, "internal_error", "something went wrong on our side")

    app.include_router(health_router)
    app.include_router(problems_router)
    app.include_router(exports_router)
    app.include_router(submissions_router)
    app.include_router(batches_router)
    app.include_router(leaderboards_router)
    app.include_router(competitions_router)
    app.include_router(judging_router)
    app.include_router(rejudge_router)
    app.include_router(audit_router)
    app.include_router(submission_admin_router)
    app.include_router(account_router)
    app.include_router(user_admin_router)
    app.include_router(pages_router)
    app.include_router(competition_pages_router)
    app.include_router(competition_review_router)
    app.include_router(accounts_router)
    app.include_router(admin_router)
    app.include_router(competition_admin_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount(DOCS_ASSETS, StaticFiles(directory=str(SWAGGER_UI)), name="docs-assets")
    # Signed, not encrypted: the cookie holds only the user's id and the CSRF token.
    app.add_middleware(PageSessions, secret_key=secret_key(settings), https_only=settings.https)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.add_middleware(anonymous.FreshCopiesFirst, session_cookie=SESSION_COOKIE)
    # Added last, so it runs first: on every response, the stored copies above included.
    docs_scripts = script_hashes(bytes(docs_page().body).decode())
    app.add_middleware(SecurityHeaders, https=settings.https, pages={"/docs": docs_scripts})

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = with_error_bodies(
                get_openapi(
                    title=app.title,
                    version=app.version,
                    description=app.description,
                    routes=app.routes,
                )
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method some route of the app takes on this request's path, found by asking
    the routes as they would be asked for that method (mounts, which take any method and
    answer for themselves, aside)."""
    routes = [route for route in request.app.routes if not isinstance(route, Mount)]
    return [
        method
        for method in HTTP_METHODS
        if any(
            route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes
        )
    ]


def with_error_bodies(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as the API behaves: every 422 with the body the handler above sends
    (FastAPI documents its own, ``detail`` a list), a 503 on every route, and optional
    tokens as optional."""
    body = {"$ref": "#/components/schemas/ErrorBody"}
    for path_item in schema.get("paths", {}).values():
        for operation in path_item.values():
            # Every route needs the database, so any may answer 503 while it is away.
            operation.setdefault("responses", {}).setdefault(
                "503",
                {
                    "description": Unavailable.__doc__,
                    "content": {"application/json": {"schema": body}},
                },
            )
            response = operation.get("responses", {}).get("422")
            if response is not None:
                response["description"] = BadRequest.__doc__
                response["content"] = {"application/json": {"schema": body}}
            # A route that reads a token without requiring one (it shows admins more)
            # declares no 401: its token is optional, which `{}` among the options says.
            security = operation.get("security")
            if security and "401" not in operation.get("responses", {}):
                operation["security"] = [{}, *security]
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        components.pop(unused, None)
    components.setdefault("ErrorBody", ErrorBody.model_json_schema())
    return schema

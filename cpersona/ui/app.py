"""The browser view's ASGI app (Starlette): routes, request parsing, and calls into ``Memory``.

Every read and every change goes through the public ``Memory`` API (the same rules as the
MCP tools: locked rows refuse edits, ownership is checked by agent). Pages are rendered on
the server; ``static/`` holds one stylesheet and one small script. ``GuardMiddleware``
(security.py) has already checked Host, Origin and authentication when a handler runs;
handlers check the CSRF token of every POST and refuse changes under ``read_only``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, cast
from urllib.parse import parse_qs, urlencode

import anyio
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from cpersona.errors import CPersonaError, DuplicateRow, Forbidden, LockedRow, NotFound, PersistencePaused
from cpersona.memory import Memory
from cpersona.result_types import EpisodeRow
from cpersona.secret_guard import SecretGuard
from cpersona.ui import insight, pages, relations
from cpersona.ui.access import Action, grants_for_request
from cpersona.ui.html import layout, url
from cpersona.ui.security import Guard, GuardMiddleware

_STATUS = {Forbidden: 403, NotFound: 404, LockedRow: 409, DuplicateRow: 409, PersistencePaused: 503}
_STATIC = {"ui.css": "text/css; charset=utf-8", "ui.js": "text/javascript; charset=utf-8"}
#: Headers on every page: no framing, no inline script, nothing loaded from elsewhere.
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _status(exc: CPersonaError) -> int:
    return next((code for kind, code in _STATUS.items() if isinstance(exc, kind)), 400)


def _opt(value: str | None) -> str | None:
    return None if value is None or value == pages.ANY else value


def _tri(value: str | None) -> bool | None:
    return {"yes": True, "no": False}.get(value or "")


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(value or default)))
    except ValueError:
        return default


class UiApp:
    """Handlers bound to one ``Memory`` and the view's settings."""

    def __init__(self, memory: Memory, guard: Guard, *, read_only: bool) -> None:
        self.memory = memory
        self.guard = guard
        self.read_only = read_only

    # -- plumbing ----------------------------------------------------------------------------
    def _view(self, request: Request, agent: str | None = None) -> pages.View:
        # Change buttons show only when the client may use them on this agent (the POST checks again).
        writable = grants_for_request(request.state).allows("write", agent)
        return pages.View(csrf=request.state.csrf, read_only=self.read_only or not writable)

    def _page(
        self, request: Request, title: str, body: Markup, active: str, status: int = 200
    ) -> HTMLResponse:
        html = layout(
            title,
            body,
            active=active,
            csrf=request.state.csrf,
            read_only=self.read_only,
            authenticated_by_login=self.guard.login_required,
        )
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def _error(self, request: Request, exc: CPersonaError, back: str | None = None) -> HTMLResponse:
        code = _status(exc)
        kind = exc.code
        body = pages.error_body(f"{exc} ({kind})", back)
        return self._page(request, "Refused" if code in (401, 403) else "Not done", body, "", status=code)

    def _allow(self, request: Request, action: Action, agent: str | None) -> None:
        grants = grants_for_request(request.state)
        if not grants.allows(action, agent):
            hint = "; choose one of your agents" if agent is None and not grants.unrestricted else ""
            raise Forbidden(f"your grants do not allow {action} on {agent or 'the whole store'}{hint}")

    async def _form(self, request: Request, *, change: bool = True) -> dict[str, str]:
        """The urlencoded body after the CSRF check (and the read-only check for changes)."""
        raw = (await request.body()).decode("utf-8", errors="replace")
        form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
        supplied = form.get("csrf") or request.headers.get("x-csrf-token", "")
        if not self.guard.csrf_ok(request.state.sid, supplied):
            raise Forbidden("missing or wrong CSRF token: reload the page and try again")
        if change and self.read_only:
            raise Forbidden("this view was started with --read-only: changes are refused")
        return form

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await anyio.to_thread.run_sync(fn)

    def _agents(self, request: Request) -> list[dict[str, Any]]:
        grants = grants_for_request(request.state)
        return [dict(a) for a in self.memory.list_agents()["agents"] if grants.allows("read", a["agent_id"])]

    def _notice(self, request: Request, agent: str | None) -> str | None:
        """The unknown-agent notice, naming only agents this client may read."""
        if agent is None:
            return None
        return self.memory.agent_notice(agent, [a["agent_id"] for a in self._agents(request)])

    def _filters(self, request: Request) -> pages.Filters:
        q = request.query_params
        return pages.Filters(
            agent=_opt(q.get("agent")),
            project=_opt(q.get("project")),
            channel=_opt(q.get("channel")),
            locked=_tri(q.get("locked")),
            embedded=_tri(q.get("embedded")),
            offset=_int(q.get("offset"), 0, 0, 10_000_000),
            size=_int(q.get("size"), 25, 1, 200),
        )

    # -- pages -------------------------------------------------------------------------------
    def agents(self, request: Request) -> Response:
        """GET /: every agent with counts and axes."""
        return self._page(request, "Agents", pages.agents_page(self._agents(request)), "/")

    def memories(self, request: Request) -> Response:
        """GET /memories: filtered, paged, newest first."""
        return self._listing(request, episodes=False)

    def episodes(self, request: Request) -> Response:
        """GET /episodes: filtered, paged, newest first."""
        return self._listing(request, episodes=True)

    def _listing(self, request: Request, *, episodes: bool) -> Response:
        f = self._filters(request)
        axes: dict[str, Any] = {"project_id": f.project, "channel": f.channel, "embedded": f.embedded}
        result: Mapping[str, Any]
        try:
            self._allow(request, "read", f.agent)
            if episodes:
                result = self.memory.browse_episodes(f.agent, **axes, offset=f.offset, limit=f.size)
            else:
                result = self.memory.browse_memories(
                    f.agent, **axes, locked=f.locked, offset=f.offset, limit=f.size
                )
        except CPersonaError as exc:
            return self._error(request, exc, "/")
        render_page = pages.episodes_page if episodes else pages.memories_page
        body = render_page(dict(result), f, self._agents(request), self._view(request, f.agent))
        done = pages.done_box(request.query_params.get("done"))
        notice = pages.agent_notice_box(self._notice(request, f.agent) if not result.get("total") else None)
        title, path = ("Episodes", "/episodes") if episodes else ("Memories", "/memories")
        return self._page(request, title, done + notice + body, path)

    def _memory_row(self, agent: str, memory_id: str) -> dict[str, Any]:
        found = self.memory.get_contents(agent, [f"mem:{memory_id}"])
        if not found["items"]:
            raise NotFound(f"no memory mem:{memory_id} for agent {agent!r}")
        row: dict[str, Any] = dict(found["items"][0])
        return row

    def memory_detail(self, request: Request) -> Response:
        """GET /memory?agent=&id=: one memory in full, with the edit form."""
        agent, mid = request.query_params.get("agent", ""), request.query_params.get("id", "")
        try:
            self._allow(request, "read", agent)
            row = self._memory_row(agent, mid)
            found = self._relations(request, row)
        except CPersonaError as exc:
            return self._error(request, exc, "/memories")
        body = pages.memory_page(row, self._view(request, agent), relations=found)
        return self._page(request, f"Memory {row['ref']}", body, "/memories")

    def _relations(self, request: Request, row: dict[str, Any]) -> relations.Relations:
        """The memory's supersede chain and one hop of its declared links, as far as this client may read."""
        readable = grants_for_request(request.state).readable_agents()
        agent, ref = row["agent_id"], row["ref"]
        history = self.memory.get_history(ref, agent_id=agent, allowed_agents=readable)
        walks = [
            self.memory.traverse(
                agent,
                ref,
                depth=1,
                limit=relations.SHOWN_PER_SECTION,
                direction=direction,
                readable_agents=readable,
            )
            for direction in ("out", "in")
        ]
        return relations.memory_relations(row, dict(history), dict(walks[0]), dict(walks[1]))

    def episode_detail(self, request: Request) -> Response:
        """GET /episode?agent=&id=: one episode in full (where ``ep:`` refs lead)."""
        agent, eid = request.query_params.get("agent", ""), request.query_params.get("id", "")
        try:
            self._allow(request, "read", agent)
            items = self.memory.get_contents(agent, [f"ep:{eid}"])["items"]
            if not items:
                raise NotFound(f"no episode ep:{eid} for agent {agent!r}")
        except CPersonaError as exc:
            return self._error(request, exc, "/episodes")
        row = items[0]
        return self._page(
            request,
            f"Episode {row['ref']}",
            pages.episode_page(dict(row), self._view(request, agent)),
            "/episodes",
        )

    def profile(self, request: Request) -> Response:
        """GET /profile?agent=: the agent's profiles."""
        agent = request.query_params.get("agent", "")
        try:
            self._allow(request, "read", agent)
            result = self.memory.list_profiles(agent)
        except CPersonaError as exc:
            return self._error(request, exc, "/")
        notice = pages.agent_notice_box(self._notice(request, agent))
        return self._page(
            request, f"Profile of {agent}", notice + pages.profiles_page(agent, dict(result)), "/"
        )

    def search(self, request: Request) -> Response:
        """GET /search?q=&agent=: the real recall, best first, with match_reason."""
        q = request.query_params
        agent, query = _opt(q.get("agent")), q.get("q", "")
        project, channel = q.get("project") or None, q.get("channel") or None
        limit = _int(q.get("limit"), 10, 1, insight.SEARCH_LIMIT_MAX)  # the form's maximum, on the server too
        body = insight.search_form(self._agents(request), agent, query, project, channel, limit)
        if "q" in q:
            try:
                self._allow(request, "read", agent)
                # The trace lets the page draw each channel's share of a row's score.
                result: dict[str, Any] = dict(
                    self.memory.recall(
                        agent,
                        query,
                        limit=limit,
                        project_id=project,
                        channel=channel,
                        record=False,
                        trace=True,
                    )
                )
            except CPersonaError as exc:
                return self._error(request, exc, "/search")
            if "notice" in result:  # recall names every agent; this client hears only of its own
                result["notice"] = self._notice(request, agent)
            body += insight.search_results(result, self._view(request, agent))
        return self._page(request, "Search", body, "/search")

    def health(self, request: Request) -> Response:
        """GET /health: verdict, findings, embeddings with the fix, queue, the store over time."""
        try:
            self._allow(request, "admin", None)
            body = insight.health_page(
                dict(self.memory.check_health()),
                dict(self.memory.stats()),
                dict(self.memory.memory_timeline()),
            )
        except CPersonaError as exc:
            return self._error(request, exc, "/")
        return self._page(request, "Health", body, "/health")

    # -- changes -----------------------------------------------------------------------------
    async def _change(self, request: Request, kind: str) -> Response:
        back = "/memories"
        try:
            form = await self._form(request)
            agent, rid = form.get("agent", ""), form.get("id", "")
            back = (
                f"/memory?{_qs(agent=agent, id=rid)}"
                if kind != "delete_episode"
                else f"/episodes?{_qs(agent=agent)}"
            )
            self._allow(request, "write", agent)
            return await self._run(lambda: self._apply(request, kind, form, agent, rid))
        except CPersonaError as exc:
            return self._error(request, exc, back)

    def _apply(self, request: Request, kind: str, form: dict[str, str], agent: str, rid: str) -> Response:
        view = self._view(request)
        confirmed = form.get("confirmed") == "1"
        key = {"agent": agent, "id": rid}
        if kind == "lock":
            self.memory.lock_memory(rid, agent_id=agent)
        elif kind == "unlock":
            self.memory.unlock_memory(rid, agent_id=agent)
        elif kind == "edit":
            # The confirm page already shows (and its form carries) the text as it will be stored:
            # credentials as their placeholders; under refuse the error page says which kinds.
            content = SecretGuard(self.memory.settings.secrets).check(form.get("content", ""), "content").text
            if not confirmed:
                row = self._memory_row(agent, rid)
                body = pages.confirm_page(
                    f"Save this change to mem:{rid}?",
                    "/memory/edit",
                    {**key, "content": content},
                    view,
                    url("/memory", **key),
                    before=row["content"],
                    after=content,
                )
                return self._page(request, "Confirm edit", body, "/memories")
            self.memory.update_memory(rid, content, agent_id=agent)
        elif kind in ("delete", "delete_episode"):
            episode = kind == "delete_episode"
            if not confirmed:
                if episode:
                    items = self.memory.get_contents(agent, [f"ep:{rid}"])["items"]
                    if not items:
                        raise NotFound(f"no episode ep:{rid} for agent {agent!r}")
                    text = cast(EpisodeRow, items[0])["summary"]  # an ep: ref finds episodes only
                else:
                    text = self._memory_row(agent, rid)["content"]
                ref = f"{'ep' if episode else 'mem'}:{rid}"
                body = pages.confirm_page(
                    f"Delete {ref} of {agent}? This cannot be undone.",
                    "/episode/delete" if episode else "/memory/delete",
                    key,
                    view,
                    url("/episodes", agent=agent) if episode else url("/memory", **key),
                    before=text,
                )
                return self._page(request, "Confirm delete", body, "/episodes" if episode else "/memories")
            if episode:
                self.memory.delete_episode(rid, agent_id=agent)
                return RedirectResponse(
                    f"/episodes?{_qs(agent=agent, done=f'deleted ep:{rid}')}", status_code=303
                )
            self.memory.delete_memory(rid, agent_id=agent)
            return RedirectResponse(
                f"/memories?{_qs(agent=agent, done=f'deleted mem:{rid}')}", status_code=303
            )
        return RedirectResponse(f"/memory?{_qs(**key)}", status_code=303)

    async def delete_confirm(self, request: Request) -> Response:
        """GET /memory/delete or /episode/delete: the confirmation page (nothing changes yet)."""
        if self.read_only:
            return self._error(request, Forbidden("this view was started with --read-only"), "/")
        episode = request.url.path.startswith("/episode")
        agent, rid = request.query_params.get("agent", ""), request.query_params.get("id", "")
        try:
            self._allow(request, "write", agent)
            return await self._run(
                lambda: self._apply(request, "delete_episode" if episode else "delete", {}, agent, rid)
            )
        except CPersonaError as exc:
            return self._error(request, exc, "/")

    # -- login -------------------------------------------------------------------------------
    @property
    def _acl(self) -> bool:
        return self.guard.acl is not None

    def login_form(self, request: Request) -> Response:
        """GET /login."""
        return self._page(request, "Log in", pages.login_page(request.state.csrf, None, acl=self._acl), "")

    async def login(self, request: Request) -> Response:
        """POST /login: check the token, start an authenticated session."""
        try:
            form = await self._form(request, change=False)
        except Forbidden as exc:
            return self._error(request, exc, "/login")
        accepted, client = self.guard.login(form.get("token", ""))
        if not accepted:
            body = pages.login_page(request.state.csrf, "wrong token", acl=self._acl)
            return self._page(request, "Log in", body, "", status=401)
        # A fresh session id (no fixation); under an ACL the signed cookie names the client.
        _, cookie = self.guard.new_cookie(True, client.name if client is not None else None)
        response = RedirectResponse("/", status_code=303)
        response.raw_headers.append((b"set-cookie", self.guard.cookie_header(cookie)))
        return response

    async def logout(self, request: Request) -> Response:
        """POST /logout: forget the session cookie."""
        try:
            await self._form(request, change=False)
        except Forbidden as exc:
            return self._error(request, exc, "/")
        response = RedirectResponse("/login", status_code=303)
        response.raw_headers.append((b"set-cookie", self.guard.cookie_header("", clear=True)))
        return response

    def static(self, request: Request) -> Response:
        """GET /static/<name>: the packaged stylesheet and script."""
        name = request.path_params["name"]
        if name not in _STATIC:
            return PlainTextResponse("not found", status_code=404)
        text = resources.files("cpersona.ui").joinpath("static", name).read_text(encoding="utf-8")
        return Response(text, media_type=_STATIC[name], headers={"x-content-type-options": "nosniff"})


def _qs(**params: str) -> str:
    return urlencode(params)


def build_app(memory: Memory, guard: Guard, *, read_only: bool = False) -> Starlette:
    """The view as an ASGI app (tests run it under uvicorn on 127.0.0.1)."""
    ui = UiApp(memory, guard, read_only=read_only)

    def change(kind: str) -> Callable[[Request], Any]:
        async def handler(request: Request) -> Response:
            return await ui._change(request, kind)

        return handler

    routes = [
        Route("/", ui.agents),
        Route("/memories", ui.memories),
        Route("/memory", ui.memory_detail),
        Route("/episodes", ui.episodes),
        Route("/episode", ui.episode_detail),
        Route("/profile", ui.profile),
        Route("/search", ui.search),
        Route("/health", ui.health),
        Route("/login", ui.login_form, methods=["GET"]),
        Route("/login", ui.login, methods=["POST"]),
        Route("/logout", ui.logout, methods=["POST"]),
        Route("/static/{name}", ui.static),
        Route("/memory/edit", change("edit"), methods=["POST"]),
        Route("/memory/lock", change("lock"), methods=["POST"]),
        Route("/memory/unlock", change("unlock"), methods=["POST"]),
        Route("/memory/delete", ui.delete_confirm, methods=["GET"]),
        Route("/memory/delete", change("delete"), methods=["POST"]),
        Route("/episode/delete", ui.delete_confirm, methods=["GET"]),
        Route("/episode/delete", change("delete_episode"), methods=["POST"]),
    ]
    return Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard)])

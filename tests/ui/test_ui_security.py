"""The browser view's security rules over real HTTP against a real ``cpersona ui`` process."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from ui_helpers import UiServer, cpersona_executable, ui_env, ui_server

from cpersona.config import Settings
from cpersona.http.addresses import is_loopback
from cpersona.memory import Memory
from cpersona.ui.security import Guard, ui_refusal

TOKEN = "s3cret-token-for-the-ui-0123"


def _memory(tmp: Path) -> Memory:
    return Memory(
        Settings(db_path=tmp / "memory.db", embedding_mode="none", update_check=False), start_background=False
    )


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page carries no CSRF field"
    return found.group(1)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[UiServer, Path, list[int]]]:
    tmp = tmp_path_factory.mktemp("ui-sec")
    with _memory(tmp) as memory:
        ids = [memory.store("ana", f"note {i} about the kestrel plan")["id"] for i in range(4)]
    with ui_server(tmp) as server:
        yield server, tmp, ids


def _locked(tmp: Path, memory_id: int) -> bool:
    with _memory(tmp) as memory:
        return bool(memory.get_contents("ana", [f"mem:{memory_id}"])["items"][0]["locked"])


def test_pages_set_a_strict_session_cookie_and_security_headers(
    seeded: tuple[UiServer, Path, list[int]],
) -> None:
    server, _, _ = seeded
    response = httpx2.get(server.base + "/")
    assert response.status_code == 200 and "ana" in response.text
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    assert "script-src 'self'" in response.headers["content-security-policy"]
    assert response.headers["x-frame-options"] == "DENY"


def test_a_change_with_a_valid_csrf_token_is_applied(seeded: tuple[UiServer, Path, list[int]]) -> None:
    # The positive control for the refusals below: the same request with the session's token works.
    server, tmp, ids = seeded
    with httpx2.Client(base_url=server.base) as client:
        csrf = _csrf(client.get("/memories").text)
        response = client.post("/memory/lock", data={"csrf": csrf, "agent": "ana", "id": str(ids[0])})
        assert response.status_code == 303
    assert _locked(tmp, ids[0])


def test_a_change_without_csrf_token_is_refused(seeded: tuple[UiServer, Path, list[int]]) -> None:
    server, tmp, ids = seeded
    with httpx2.Client(base_url=server.base) as client:
        client.get("/memories")  # a valid session cookie, but no token in the form
        response = client.post("/memory/lock", data={"agent": "ana", "id": str(ids[1])})
    assert response.status_code == 403 and "CSRF" in response.text
    assert not _locked(tmp, ids[1])


def test_another_sessions_csrf_token_is_refused(seeded: tuple[UiServer, Path, list[int]]) -> None:
    server, tmp, ids = seeded
    with httpx2.Client(base_url=server.base) as first, httpx2.Client(base_url=server.base) as second:
        token_of_first = _csrf(first.get("/memories").text)
        second.get("/memories")
        response = second.post(
            "/memory/lock", data={"csrf": token_of_first, "agent": "ana", "id": str(ids[1])}
        )
    assert response.status_code == 403
    assert not _locked(tmp, ids[1])


def test_a_foreign_origin_is_refused_even_with_a_valid_token(
    seeded: tuple[UiServer, Path, list[int]],
) -> None:
    server, tmp, ids = seeded
    with httpx2.Client(base_url=server.base) as client:
        csrf = _csrf(client.get("/memories").text)
        response = client.post(
            "/memory/lock",
            data={"csrf": csrf, "agent": "ana", "id": str(ids[1])},
            headers={"Origin": "http://evil.example"},
        )
        assert response.status_code == 403 and "cross-origin" in response.text
        assert client.get("/", headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
        assert client.get("/", headers={"Origin": server.base}).status_code == 200
    assert not _locked(tmp, ids[1])


def test_a_foreign_host_header_is_refused(seeded: tuple[UiServer, Path, list[int]]) -> None:
    server, _, _ = seeded
    # DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends its own Host.
    assert httpx2.get(server.base + "/", headers={"Host": f"evil.example:{server.port}"}).status_code == 403
    assert httpx2.get(server.base + "/", headers={"Host": "127.0.0.1:1"}).status_code == 403
    assert httpx2.get(server.base + "/", headers={"Host": f"localhost:{server.port}"}).status_code == 200


def test_read_only_hides_and_refuses_every_change(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        mid = memory.store("ana", "keep me")["id"]
        ep = memory.archive_episode("ana", "a session")["id"]
    # With a token the page carries a logout form, so the client holds a VALID CSRF token: the
    # refusals below are the read-only rule, not a CSRF failure.
    with (
        ui_server(tmp_path, "--read-only", CPERSONA_AUTH_TOKEN=TOKEN) as server,
        httpx2.Client(base_url=server.base) as client,
    ):
        client.post("/login", data={"csrf": _csrf(client.get("/login").text), "token": TOKEN})
        page = client.get("/memories").text
        assert "Read-only view" in page and "keep me" in page
        assert "/memory/delete" not in page and "/memory/lock" not in page and "Edit</a>" not in page
        assert "<textarea" not in client.get(f"/memory?agent=ana&id={mid}").text
        assert "/episode/delete" not in client.get("/episodes").text
        csrf = _csrf(page)
        for path, rid in (
            ("/memory/delete", mid),
            ("/episode/delete", ep),
            ("/memory/lock", mid),
            ("/memory/edit", mid),
        ):
            response = client.post(
                path,
                data={"csrf": csrf, "agent": "ana", "id": str(rid), "confirmed": "1", "content": "changed"},
            )
            assert response.status_code == 403 and "read-only" in response.text, path
        assert client.get(f"/memory/delete?agent=ana&id={mid}").status_code == 403
    with _memory(tmp_path) as memory:
        row = memory.get_contents("ana", [f"mem:{mid}", f"ep:{ep}"])
        assert (
            len(row["items"]) == 2
            and row["items"][0]["content"] == "keep me"
            and not row["items"][0]["locked"]
        )


def test_a_confirmed_delete_without_read_only_removes_the_row(tmp_path: Path) -> None:
    # The positive control for the read-only refusal: the same request deletes on a read-write view.
    with _memory(tmp_path) as memory:
        mid = memory.store("ana", "deletable")["id"]
    with ui_server(tmp_path) as server, httpx2.Client(base_url=server.base) as client:
        csrf = _csrf(client.get("/memories").text)
        asked = client.post("/memory/delete", data={"csrf": csrf, "agent": "ana", "id": str(mid)})
        assert asked.status_code == 200 and "cannot be undone" in asked.text  # unconfirmed: only asks
        done = client.post(
            "/memory/delete", data={"csrf": csrf, "agent": "ana", "id": str(mid), "confirmed": "1"}
        )
        assert done.status_code == 303 and "deleted" in done.headers["location"]
    with _memory(tmp_path) as memory:
        assert memory.get_contents("ana", [f"mem:{mid}"])["missing"] == [f"mem:{mid}"]


def test_with_a_token_pages_need_a_login_or_bearer(tmp_path: Path) -> None:
    with _memory(tmp_path) as memory:
        memory.store("ana", "secret note")
    with (
        ui_server(tmp_path, CPERSONA_AUTH_TOKEN=TOKEN) as server,
        httpx2.Client(base_url=server.base) as client,
    ):
        first = client.get("/")
        assert first.status_code == 303 and first.headers["location"] == "/login"
        assert client.get("/memories").status_code == 303
        assert client.post("/memory/lock", data={"agent": "ana", "id": "1"}).status_code == 401
        login = client.get("/login").text
        assert "secret note" not in login
        wrong = client.post("/login", data={"csrf": _csrf(login), "token": "not-the-token-at-all"})
        assert wrong.status_code == 401
        no_csrf = client.post("/login", data={"token": TOKEN})
        assert no_csrf.status_code == 403
        ok = client.post("/login", data={"csrf": _csrf(login), "token": TOKEN})
        assert ok.status_code == 303 and "HttpOnly" in ok.headers["set-cookie"]
        assert "secret note" in client.get("/memories").text
        logout = client.post("/logout", data={"csrf": _csrf(client.get("/memories").text)})
        assert logout.status_code == 303
        client.cookies.clear()
        assert client.get("/memories").status_code == 303
        bearer = httpx2.get(server.base + "/memories", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200 and "secret note" in bearer.text
        assert (
            httpx2.get(server.base + "/memories", headers={"Authorization": "Bearer wrong"}).status_code
            == 303
        )


def test_binding_beyond_loopback_without_a_token_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [cpersona_executable(), "ui", "--host", "0.0.0.0", "--port", "1"],
        env=ui_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "CPERSONA_AUTH_TOKEN" in done.stderr


def test_guard_rules_in_process() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert ui_refusal("127.0.0.1", None) is None
    assert ui_refusal("10.0.0.2", None) is not None and ui_refusal("10.0.0.2", TOKEN) is None
    assert ui_refusal("127.0.0.1", "short") is not None
    guard = Guard("127.0.0.1", 8403, None)
    sid, cookie = guard.new_cookie(False)
    assert guard.read_cookie(cookie) == (sid, False)
    forged = cookie.replace(".0.", ".1.", 1)  # claim to be logged in without the signature
    assert guard.read_cookie(forged) is None
    assert guard.read_cookie("garbage") is None
    assert Guard("127.0.0.1", 8403, None, secret=b"other").read_cookie(cookie) is None
    assert (
        guard.csrf_ok(sid, guard.csrf_token(sid))
        and not guard.csrf_ok(sid, "")
        and not guard.csrf_ok("x", "y")
    )
    assert guard.origin_ok("http://127.0.0.1:8403") and guard.origin_ok("http://localhost:8403")
    for origin in ("https://127.0.0.1:8403", "http://127.0.0.1:8404", "null", "http://evil.example:8403"):
        assert not guard.origin_ok(origin), origin


@pytest.mark.parametrize(
    "path",
    [
        "/memory?agent=ana&id=abc",
        "/memory?id=1",
        "/memory?agent=ana&id=999999",
        "/memories?offset=-5&size=x",
        "/memories?agent=%00&project=%27%3B--",
        "/episodes?embedded=maybe",
        "/profile",
        "/search?q=%00&limit=-1",
        "/search?q=" + "x" * 5000,
        "/memory/delete?agent=ana&id=",
        "/episode/delete?agent=ana&id=ep:oops",
        "/static/../../pyproject.toml",
        "/static/nope.js",
        "/nowhere",
    ],
)
def test_odd_requests_get_an_answer_never_a_server_error(
    seeded: tuple[UiServer, Path, list[int]], path: str
) -> None:
    server, _, _ = seeded
    response = httpx2.get(server.base + path)
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text


def test_an_odd_change_is_refused_cleanly(seeded: tuple[UiServer, Path, list[int]]) -> None:
    server, _, ids = seeded
    with httpx2.Client(base_url=server.base) as client:
        csrf = _csrf(client.get("/memories").text)
        for form in (
            {"agent": "ana", "id": "mem:x"},
            {"agent": "bo", "id": str(ids[2])},
            {"id": str(ids[2])},
            {"agent": "ana", "id": str(ids[2]), "content": "", "confirmed": "1"},
        ):
            response = client.post("/memory/edit", data={"csrf": csrf, **form})
            assert 400 <= response.status_code < 500, (form, response.text)
            assert 'data-testid="error"' in response.text

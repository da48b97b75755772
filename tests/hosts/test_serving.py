"""The server's hook socket in-process: answers, one listener per database, an unusable directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.hooks.endpoint import Unreachable, ask
from cpersona.hooks.serving import hook_socket, start_endpoint
from cpersona.memory import Memory


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    runtime = tmp_path / "run"
    return Settings(db_path=tmp_path / "m.db", embedding_mode="none", update_check=False, runtime_dir=runtime)


def test_one_listener_answers_and_gives_the_socket_up(settings: Settings) -> None:
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        memory.store("ada", "The release train leaves every second Wednesday.")
        first = start_endpoint(settings, lambda: memory)
        second = start_endpoint(settings, lambda: memory)
        assert first is not None and second is not None
        try:
            assert first.listening and not second.listening  # elected by the lock, the other waits
            answer = ask(
                hook_socket(settings), {"event": "prompt", "agent_id": "ada", "prompt": "release train"}, 10
            )
            assert "second Wednesday" in answer["context"]
            start = ask(hook_socket(settings), {"event": "session-start", "agent_id": "ada"}, 10)
            assert 'agent_id is "ada"' in start["context"]
            refused = ask(hook_socket(settings), {"event": "prompt", "prompt": "x"}, 10)
            assert refused == {"context": None, "note": "no agent_id bound"}
        finally:
            second.close()
            first.close()
        with pytest.raises(Unreachable):
            ask(hook_socket(settings), {"event": "prompt"}, 1)


def test_an_unusable_runtime_directory_is_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    settings = Settings(db_path=tmp_path / "m.db", embedding_mode="none", runtime_dir=blocker / "run")
    assert start_endpoint(settings, lambda: None) is None  # type: ignore[arg-type, return-value]
    assert "host hooks cannot reach this server" in caplog.text

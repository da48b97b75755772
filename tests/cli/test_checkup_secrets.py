"""`cpersona checkup --checks secrets [--fix]` as the installed script (issue 39): an existing
database's credentials are reported without their values, then redacted in place."""

from __future__ import annotations

from pathlib import Path

from test_checkup import env_for, run

from cpersona.config import Settings
from cpersona.embed.runtime.none_backend import NoEmbeddings
from cpersona.memory import Memory

KEY = "AKIAQ7ZX4TYHGF2LMN8P"


def test_checkup_reports_then_fix_redacts_an_existing_database(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    settings = Settings(
        db_path=db, embedding_mode="none", auto_fetch_model=False, update_check=False, secrets="allow"
    )
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        ref = memory.store("ops", f"the backup job signs in with {KEY} every night")["ref"]
        memory.store("ops", "the backup job runs at 02:00")
    env = env_for(tmp_path)
    report = run(env, "checkup", "--checks", "secrets")
    assert report.returncode == 3, report.stdout + report.stderr
    assert ref in report.stdout and "aws-access-key" in report.stdout
    assert KEY not in report.stdout + report.stderr
    assert (
        KEY.encode() in db.read_bytes() + (tmp_path / "memory.db-wal").read_bytes()
        if (tmp_path / "memory.db-wal").exists()
        else KEY.encode() in db.read_bytes()
    )

    fixed = run(env, "checkup", "--checks", "secrets", "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert KEY not in fixed.stdout + fixed.stderr
    again = run(env, "checkup", "--checks", "secrets")
    assert again.returncode == 0, again.stdout
    with Memory(settings, backend=NoEmbeddings(), start_background=False) as memory:
        content = memory.get_contents("ops", [ref])["items"][0]["content"]
    assert content == "the backup job signs in with [redacted: aws-access-key] every night"
    on_disk = b"".join(p.read_bytes() for p in tmp_path.glob("memory.db*"))
    assert KEY.encode() not in on_disk  # freed pages are overwritten too (secure_delete)

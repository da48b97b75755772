"""Host hooks (Claude Code, Codex): what a session injects from memory, and how it gets there fast.

``wire`` reads the host's hook JSON and writes the JSON the host reads back (stdlib only);
``run`` is the hook command itself (``python -S …/hooks/launch.py HOST EVENT``, or ``python -m
cpersona.hooks``), lean: it asks the
running server over a Unix socket (``endpoint``) and answers in-process, keyword-only, only when
no server is there; ``answer`` builds the injected text from the ``Memory`` API; ``install`` and
``skill`` are what ``cpersona register … --hooks / --policy`` write (docs/hosts-claude-code.md,
docs/hosts-codex.md).
"""

"""Log records without credentials: a ``logging.Filter`` the command line puts on its log handler.

Tool arguments (a recall's query, a refused store's content) can reach a log line through an
exception message or an unreadable request's echo; queries are not stored, so the write guard
never sees them. This filter redacts every record's message and traceback text on the way out,
whatever CPERSONA_SECRETS says (a log is never the place for a credential).
"""

from __future__ import annotations

import logging

from cpersona.secret_guard import redact


class RedactingFilter(logging.Filter):
    """Replace credentials in a record's message and traceback with their placeholders."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record in place; never drops it."""
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned.total:
            record.msg, record.args = cleaned.text, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text).text
        return True


def install(handlers: list[logging.Handler] | None = None) -> None:
    """Put the filter on ``handlers`` (default: the root logger's, as ``logging.basicConfig`` made them)."""
    for handler in logging.getLogger().handlers if handlers is None else handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())

"""Who the server says it is in ``initialize`` (``serverInfo``): name, title, description, website, icon.

The icon travels as a ``data:`` URI (MCP allows ``http(s):`` and ``data:``), so a host shows it
without fetching anything from the network, and the server needs no file beside the code. It is
drawn here, for this project: a rounded tile holding three stacked records (the memory) and a
spark (the recall). Plain shapes only: no script, no external reference, no text.
"""

from __future__ import annotations

import base64

TITLE = "CPersona"
DESCRIPTION = (
    "Persistent memory for AI agents: store facts, decisions and session summaries, and recall them "
    "by meaning and keywords, in one local database."
)
#: The package's page on PyPI (the same project check_update asks about).
WEBSITE_URL = "https://pypi.org/project/cpersona-embedded/"

ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64" width="64" height="64">'
    '<rect x="2" y="2" width="60" height="60" rx="14" fill="#27465c"/>'
    '<rect x="13" y="16" width="30" height="8" rx="3" fill="#9fd3c7"/>'
    '<rect x="13" y="28" width="30" height="8" rx="3" fill="#cfe9e2"/>'
    '<rect x="13" y="40" width="30" height="8" rx="3" fill="#9fd3c7"/>'
    '<path d="M50 14l2.6 6.4L59 23l-6.4 2.6L50 32l-2.6-6.4L41 23l6.4-2.6z" fill="#f2c14e"/>'
    "</svg>"
)
ICON_MIME_TYPE = "image/svg+xml"


def icon_data_uri() -> str:
    """The icon as a ``data:`` URI (base64, so no character of the SVG needs escaping)."""
    encoded = base64.b64encode(ICON_SVG.encode("utf-8")).decode("ascii")
    return f"data:{ICON_MIME_TYPE};base64,{encoded}"

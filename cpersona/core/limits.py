"""Fixed limits of the public contract, read by both the MCP schemas and the Python API.

Each number here is promised somewhere (docs/tools.md, the README, a tool schema)
and must be the same in the JSON schema an agent sees and in the check the API
applies. Limits an operator can change are NOT here: they are ``Settings`` fields
(e.g. ``recall_preview_chars``, ``max_content_length``, ``max_profile_length``).
"""

from __future__ import annotations

# -- row ids and refs ------------------------------------------------------------------------
#: SQLite INTEGER is signed 64-bit; larger ids would overflow the driver instead of "not found".
MAX_ROW_ID = 2**63 - 1
#: Digits of the largest row id (the ref patterns allow at most this many).
MAX_ROW_ID_DIGITS = len(str(MAX_ROW_ID))
#: Largest number of refs one get_contents call accepts (docs/tools.md#get_contents).
MAX_REFS_PER_CALL = 20
#: Longest ref string get_contents looks at ('mem:' plus a 19-digit id fits easily).
MAX_REF_CHARS = 64

# -- recall ----------------------------------------------------------------------------------
#: recall ``limit`` range (docs/tools.md#recall) and its default.
RECALL_LIMIT_MAX = 100
RECALL_LIMIT_DEFAULT = 10
#: Longer queries are cut: no model or trigram search gains from more.
MAX_QUERY_CHARS = 8000
#: Profiles join recall results only when the scope holds at least this many rows ...
PROFILE_INJECTION_MIN_POOL = 50
#: ... and then at most this many of them (newest first).
PROFILE_INJECTION_ROWS = 3
#: recall_with_context / archive_episode history: entries accepted per call.
MAX_CONTEXT_ENTRIES = 200

# -- listings --------------------------------------------------------------------------------
#: list_memories / list_episodes ``limit`` ceiling; the response budget bounds the size anyway.
LIST_LIMIT_MAX = 1000
LIST_MEMORIES_LIMIT_DEFAULT = 100
LIST_EPISODES_LIMIT_DEFAULT = 50
#: MCP resources: memories in one agent's "recent memories" resource; resources in one resources/list page.
RESOURCE_RECENT_MEMORIES = 20
RESOURCE_LIST_PAGE = 100
#: MCP prompts: a free-text argument (a question, a focus) is at most this many characters.
PROMPT_TEXT_ARGUMENT_CHARS = 20_000

# -- identifiers and small strings -------------------------------------------------------------
#: agent_id, project_id, channel, user_id, message id, source_id: at most this many characters.
MAX_IDENTIFIER_CHARS = 512
#: One episode keyword.
MAX_KEYWORD_CHARS = 200
#: store's ttl: at least a second (tests and short-lived notes), at most ten years.
TTL_MIN_SECONDS = 1
TTL_MAX_SECONDS = 10 * 366 * 86400
#: Characters of a retire_memory reason (a note, not a memory: longer ones are refused).
MAX_REASON_CHARS = 1000
#: String lists (exclude_contents, keywords): at most this many items, each cut to this many characters.
MAX_LIST_ITEMS = 100
MAX_LIST_ITEM_CHARS = 20000

# -- structured values -------------------------------------------------------------------------
#: source / metadata: deepest nesting of objects and lists accepted (the top object is level 1).
#: Deeper values are refused, never flattened; real metadata is a few levels deep.
MAX_JSON_DEPTH = 32

# -- MCP response budgets (characters of row texts) ------------------------------------------------
#: recall with full_content=true: whole texts up to this many characters per response.
RECALL_FULL_CONTENT_BUDGET_CHARS = 200_000
#: get_contents: characters of whole rows per batch; refs past it are deferred.
GET_CONTENTS_BUDGET_CHARS = 40_000
#: list_memories / list_episodes: whole texts up to this budget, previews after it.
LIST_BUDGET_CHARS = 100_000
#: Longest error text echoed back; jsonschema messages quote the offending value, which may be huge.
MAX_ERROR_CHARS = 400

# -- the JSON-RPC wire ---------------------------------------------------------------------------
#: Deepest nesting of one JSON-RPC message (envelope included) either transport accepts. The SDK's
#: own parser gives up near 200 levels and used to drop such a line without a reply; we answer
#: instead. Tool arguments are checked against MAX_JSON_DEPTH later, so this only needs headroom.
MAX_MESSAGE_DEPTH = 128

# -- HTTP ------------------------------------------------------------------------------------------
#: Shortest bearer token HTTP starts with (docs/decisions.md#trust-boundary-issue-9); shorter secrets are guessable.
MIN_TOKEN_CHARS = 16
#: Largest POST body the wire screen buffers to check (the SDK's own request limit is the same 4 MiB).
MAX_HTTP_BODY_BYTES = 4 * 1024 * 1024

# -- declared associations (docs/tools.md#traverse) ---------------------------------------------------
#: Associations one store / declare_associations call accepts.
MAX_ASSOCIATIONS_PER_CALL = 50
#: A relation name: lower-case letters, digits and '_', starting with a letter, at most this long.
MAX_RELATION_CHARS = 64
#: A relation name (services/links.py checks it; the tool schemas carry it).
RELATION_PATTERN = f"^[a-z][a-z0-9_]{{0,{MAX_RELATION_CHARS - 1}}}$"
#: An entity name (after whitespace is collapsed).
MAX_ENTITY_CHARS = 200
#: traverse: hops from the start (default and ceiling) ...
TRAVERSE_DEPTH_DEFAULT = 2
TRAVERSE_DEPTH_MAX = 5
#: ... and nodes returned (default and ceiling).
TRAVERSE_LIMIT_DEFAULT = 20
TRAVERSE_LIMIT_MAX = 100

# -- context packs (docs/tools.md#reconstruct) ------------------------------------------------------
#: reconstruct: characters of quoted text per pack (default, floor and ceiling; the ceiling is
#: get_contents' batch budget, the most whole text any one read tool hands an agent).
RECONSTRUCT_BUDGET_DEFAULT = 4_000
RECONSTRUCT_BUDGET_MIN = 100
RECONSTRUCT_BUDGET_MAX = 40_000
#: ... recall rows taken as seeds (default and ceiling).
RECONSTRUCT_LIMIT_DEFAULT = 5
RECONSTRUCT_LIMIT_MAX = 20
#: ... neighbours considered per seed, of each kind (rows it replaced; linked rows).
RECONSTRUCT_NEIGHBOURS_PER_SEED = 20
#: ... a row is quoted as a prefix only when at least this many characters of budget are left.
RECONSTRUCT_MIN_QUOTE_CHARS = 80

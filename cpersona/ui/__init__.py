"""``cpersona ui``: a local browser view of the store (docs/cli.md#cpersona-ui).

Server-rendered pages on Starlette + uvicorn (both already carried for the HTTP
transport), one stylesheet and one small script shipped in ``static/``; nothing is
fetched from the network at run time. Everything goes through ``cpersona.Memory``.
This package may import memory, config, health, errors (and shapes/limits), never storage.
"""

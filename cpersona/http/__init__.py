"""HTTP plumbing shared by the MCP transport (``cpersona.server``) and the browser view (``cpersona.ui``).

One place for what both front doors do the same way: the ASGI types (``asgi``), reading and
comparing bearer tokens (``tokens``), which addresses are loopback and which Host names a server
answers to (``addresses``), and the one shape of a 401 / 403 refusal (``refusals``). The package
imports neither the server nor the view, so each may import it (tests/test_layers.py). This
``__init__`` imports nothing: the embedding client reads ``addresses`` without loading Starlette.
"""

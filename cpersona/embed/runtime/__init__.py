"""Running an embedding model: the backend interface, the onnx/http/none backends, pooling,
the embedding service the API uses, the backend factory and the loopback embedding server.

Nothing here imports ``cpersona.embed.install`` (tests/test_layers.py checks it): a server
that only embeds never loads the download and archive code.
"""

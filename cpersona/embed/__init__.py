"""Embedding models: running one (``runtime/``) and installing one (``install/``).

Shared by both sides: ``registry`` (the model manifests, shipped as package data in
``manifests/``), ``integrity`` (install records written by the installer and checked by
the ONNX backend at load) and ``model_hint`` (what every "no model" message says: both
install routes and how to select an installed model). No shared module imports ``runtime``
or ``install``.

Nothing heavy is imported here: onnxruntime and tokenizers load lazily in the
ONNX backend so a missing runtime becomes a reported fault, not a crash.
"""

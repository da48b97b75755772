"""Embedding backends (onnx, http, none), the model registry and model fetching.

Nothing heavy is imported here: onnxruntime and tokenizers load lazily in the
ONNX backend so a missing runtime becomes a reported fault, not a crash.
"""

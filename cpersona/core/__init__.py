"""Utilities every layer may use, importing nothing above them: text and timestamp normalisation,
argument checks, the public contract's fixed limits, atomic file writes, a long operation's cancel
flag (``Work``) and the ``@public`` marker of Python API methods."""

"""Installing an embedding model: hub downloads, local sources and archives, model assembly,
install records, and the ``cpersona models`` listing.

The install side may use the runtime (it test-loads what it installed); never the reverse.
"""

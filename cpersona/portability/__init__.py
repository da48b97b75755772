"""Moving memories between databases and agents: JSONL export/import, merge, channel-axis repair.

The logic (file format, validation, path confinement, progress) lives here;
every SQL statement it needs is in ``cpersona.storage.port_*``.
"""

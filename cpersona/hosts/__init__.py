"""Registering CPersona with an MCP host: where each host keeps its config, the server entry, the merge.

``locations`` knows each host's config file per OS; ``entry`` builds the server entry (this
installation's executable, ``serve`` and the CPERSONA_* env in force); ``config_file`` merges it
into an existing file without losing anything else (atomic write, backup, refusal of a file
that is not JSON). ``cpersona register`` (cpersona/cli/register_command.py) is the CLI over them.
"""

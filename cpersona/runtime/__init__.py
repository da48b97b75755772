"""What the running process holds: the embedding health state, the persistence switch and the
operator's context file. Embedding, health checks, services and the server read it; it imports
nothing above the core utilities."""

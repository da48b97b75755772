"""The services ``Memory`` is a facade over, one job each: writing, reading, recall, administration, back-fill."""

"""The degradation surface: what works, what does not, and what to do about it."""

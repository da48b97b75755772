"""Recall: retrievers (vector, FTS memories, FTS episodes), fusion, penalties, ordering."""

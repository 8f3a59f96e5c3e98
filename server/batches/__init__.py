"""Batches: many submissions sent together by one token, read back together."""

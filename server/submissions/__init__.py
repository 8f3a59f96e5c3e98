"""Accepting submissions, queueing their grading and recording their reports."""

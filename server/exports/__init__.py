"""Exports of a problem's leaderboard and submissions as CSV and Parquet."""

"""Competitions: a set of problems ranked on one device type over a time window, teams
that enter them, and the standings."""

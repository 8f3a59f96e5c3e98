"""Rejudges: an organizer's selection of submissions graded again as a review set."""

"""Leaderboards: each user's best passing score per problem and device type."""

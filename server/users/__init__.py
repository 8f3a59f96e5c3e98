"""Users and their API tokens."""

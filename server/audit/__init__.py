"""The audit log: every admin action, who did it and when."""

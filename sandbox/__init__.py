"""Running one untrusted command with limits and reading its output safely (stdlib only).

Today: a new session, rlimits, capped output, whole-group kill. Bubblewrap plugs in at
`process.wrap_argv`, the one place that decides what actually gets executed.
"""

from sandbox.process import Child, Limits, ProcessResult, kill_tree, run, start

__all__ = ["Child", "Limits", "ProcessResult", "kill_tree", "run", "start"]

"""The submitter's client: ``kerneljudge login``, ``submit``, ``status``, ``problems``,
``bundle``, ``leaderboard`` and ``submissions``, talking to a server over its REST API. It
imports only httpx, Typer, Rich and the standard library, so it runs on the light install."""

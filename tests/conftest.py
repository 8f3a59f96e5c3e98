"""Shared test set-up: every test session gets its own data directory, so the embedded
database and broker never touch a developer's ./var."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

# Before any server module is imported: settings are read once per process.
_DATA_DIR = Path(tempfile.mkdtemp(prefix="kj-test-"))
os.environ["KJ_DATA_DIR"] = str(_DATA_DIR)
os.environ.pop("KJ_DATABASE_URL", None)
os.environ.pop("KJ_BROKER_URL", None)
os.environ.setdefault("KJ_GPU_TYPES", "cpu")

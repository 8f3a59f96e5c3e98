# threat: 25
# expect: timeout
# timeout_s: 6
# defence: the harness's deadline on every exchange, then the runner's tree is killed
"""Sleeps forever inside custom_kernel."""

import time


def custom_kernel(data):
    time.sleep(10**9)

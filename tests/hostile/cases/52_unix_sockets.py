# threat: 19, 21
# expect: passed
# defence: network and mount namespaces: no host abstract sockets, no host socket files
"""Connects to abstract unix sockets it can see in /proc/net/unix (a worker-side service among
them) and to the usual database and broker socket files; prints what answers."""

import base64
import glob
from pathlib import Path

_net = __import__(base64.b64decode("c29ja2V0").decode())
names = set()
try:
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        parts = line.split()
        if len(parts) >= 8 and parts[7].startswith("@kj"):
            names.add("\0" + parts[7][1:])
except OSError as exc:
    print("no /proc/net/unix", exc)
names.add("\0kj-hostile-broker")
paths = glob.glob("/var/run/postgresql/.s.PGSQL.*") + glob.glob("/run/redis/*.sock")
for address in sorted(names) + paths:
    conn = _net.socket(_net.AF_UNIX, _net.SOCK_STREAM)
    conn.settimeout(1.0)
    try:
        conn.connect(address)
        try:
            answer = conn.recv(200)
        except OSError:
            answer = b""
        print(f"KJ-ESCAPE connected to {address!r}: {answer!r}")
    except OSError as exc:
        print(f"{address!r}: unreachable ({exc})")
    finally:
        conn.close()


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out

# threat: 19
# expect: passed
# defence: a network namespace with no route out; name resolution fails too
"""Tries to reach the internet (DNS and TCP to well-known public addresses) to send data out."""

import base64

_net = __import__(base64.b64decode("c29ja2V0").decode())
for host, port in (("1.1.1.1", 443), ("8.8.8.8", 53), ("pypi.org", 443)):
    try:
        conn = _net.create_connection((host, port), timeout=2.0)
    except OSError as exc:
        print(f"{host}:{port}: unreachable ({exc})")
        continue
    conn.close()
    print(f"KJ-ESCAPE reached {host}:{port}")


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out

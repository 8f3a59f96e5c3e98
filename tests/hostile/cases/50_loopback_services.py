# threat: 19
# expect: passed
# defence: a network namespace with only its own loopback; the host's services are unreachable
"""Connects to the grader's own loopback services (the broker, the database, a service the
worker runs on a known port) and prints what they answer; computes the right answer."""

import base64

_net = __import__(base64.b64decode("c29ja2V0").decode())
TARGETS = [("redis", 6379, b"PING\r\n"), ("postgres", 5432, b""), ("broker", 47391, b"")]
for name, port, hello in TARGETS:
    try:
        conn = _net.create_connection(("127.0.0.1", port), timeout=1.0)
    except OSError as exc:
        print(f"{name}: unreachable ({exc})")
        continue
    with conn:
        if hello:
            conn.sendall(hello)
        conn.settimeout(1.0)
        try:
            answer = conn.recv(200)
        except OSError:
            answer = b""
    print(f"KJ-ESCAPE connected to {name} on 127.0.0.1:{port}: {answer!r}")


def custom_kernel(data):
    A, B, out = data
    out[...] = A + B
    return out

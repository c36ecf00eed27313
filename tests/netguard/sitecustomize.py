"""Loaded by every Python process of a test that puts this folder on PYTHONPATH.

Records, and refuses, any socket connection to an address outside 127.0.0.0/8 (and ::1), so a
test can prove that a command and every process it starts never tried the network.
"""

import ipaddress
import os
import sys

_LOG = os.environ.get("WATCHER_NETGUARD_LOG")


def _guard(event, args):
    if event not in ("socket.connect", "socket.getaddrinfo"):
        return
    if event == "socket.getaddrinfo":
        host = args[0]
    else:
        address = args[1]
        if not isinstance(address, tuple):
            return  # unix sockets
        host = address[0]
    if host is None:
        return
    host = host.decode() if isinstance(host, bytes) else str(host)
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = host == "localhost"
    if not ok:
        if _LOG:
            with open(_LOG, "a") as f:
                f.write(f"{os.getpid()} {event} {host}\n")
        raise ConnectionRefusedError(f"netguard: {event} to {host} refused in this test")


sys.addaudithook(_guard)

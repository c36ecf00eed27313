"""The smoke harness's ports cannot be taken between picking and binding (issue 21)."""

from __future__ import annotations


def test_smoke_ports_come_from_outside_the_ephemeral_range_and_are_reserved():
    """bind(0) and outgoing connections draw from the ephemeral range, so a port picked there
    and released can be taken before the engine binds it (test_smoke failed 4 of 53 once)."""
    import fcntl

    from kits.smokekit import _PORT_LOCK_DIR, _ephemeral_range, free_port

    low, high = _ephemeral_range()
    ports = [free_port() for _ in range(20)]
    assert len(set(ports)) == 20
    assert all(not (low <= p <= high) for p in ports), ports
    with open(_PORT_LOCK_DIR / f"{ports[0]}.lock", "w") as other:  # another test process
        try:
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = False
        except OSError:
            taken = True
    assert taken

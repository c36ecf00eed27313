"""Stored rows and smoke runs as the judge reads them, for the judge's tests and the survivors."""

from __future__ import annotations

from kits.smokekit import clearing_comparison


def rows(**states):
    """item id -> a stored row with that state (pull extras via tuples)."""
    out = {}
    for item_id, state in states.items():
        row = {"id": item_id, "state": state, "stale": False}
        if isinstance(state, dict):
            row.update(state)
        out[item_id] = row
    return out


def run(
    recipe,
    outcome,
    *,
    signature=None,
    target=True,
    stage=None,
    started="2026-11-29T10:00:00Z",
    **kw,
):
    return {
        "run_id": f"{recipe}-{started}",
        "recipe": recipe,
        "outcome": outcome,
        "signature": signature,
        "blockers_reproduced": kw.get("reproduced", []),
        "reason": "r",
        "started_at": started,
        "stage_reached": stage or ("passed" if outcome == "passed" else "launch"),
        "hardware": {
            "gpus": [
                {
                    "name": "NVIDIA GeForce RTX 3090" if target else "NVIDIA H200",
                    "memory_mib": 24576,
                    "compute_capability": "8.6",
                }
            ],
            "matches_target": target,
        },
        "metrics": {},
        # the default SGLang recipes are judged against the vLLM MTP baseline: a pass clears it
        **({"comparison": clearing_comparison(target=target)} if outcome == "passed" else {}),
    }

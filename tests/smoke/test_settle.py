"""Every dispatched Actions job is settled (issue 32 H3, M2, M5, L5, L9): a cancelled job's empty
result, a corrupt artifact, GitHub trouble past the dispatch timeout each end the trigger with a
reason; a skipped run keeps it waiting; a result and its trigger are stored together."""

import io
import json
import zipfile
from datetime import timedelta

import pytest
from kits.triggerkit import NOW, gha_cfg, make_cfg, remote_doc

from watcher.core.clock import iso
from watcher.fakes.github.routes.actions import JobEnded
from watcher.github.client import GitHubClient
from watcher.judge.evaluate import evaluate
from watcher.smoke.dispatch import refusal
from watcher.smoke.trigger import run_triggers

CHANGED = [{"kind": "item", "subject": "fix-pr", "old": "open", "new": "merged"}]


def workflow(fake_github, on_dispatch):
    fake_github.add_workflow(
        "org/guide",
        "smoke.yml",
        on_dispatch=on_dispatch,
        run_name="smoke {recipe} {run_id}",
        artifact_name="smoke-result",
    )


def cycles(cfg, store, fake_github, now=NOW, n=6):
    """Dispatch, then collect until a result comes (the fake moves a run one step per GET)."""
    ev = evaluate(cfg, {}, [], {}, NOW)
    with GitHubClient(fake_github.url, token="test-token") as client:
        args = dict(cycle_id=None, at=iso(NOW), client=client)
        docs, _ = run_triggers(cfg, store, ev, CHANGED, NOW, **args)
        for _ in range(n):
            if docs:
                break
            docs, _ = run_triggers(cfg, store, ev, [], now, **args)
    return docs


def test_a_cancelled_job_with_an_empty_result_is_settled_at_once(tmp_path, fake_github, store):
    def cancelled(inputs):
        raise JobEnded("cancelled", {"result.json": ""})  # `if: always()` uploads it empty

    workflow(fake_github, cancelled)
    cfg = gha_cfg(tmp_path)
    (doc,) = cycles(cfg, store, fake_github)
    assert doc["outcome"] == "error" and doc["refused"] is True
    assert "concluded cancelled; refused: artifact smoke-result is unreadable" in doc["reason"]
    assert store.triggers() == {}  # its budget slot is free again
    assert [r["outcome"] for r in store.smoke_runs()] == ["error"]


def test_an_artifact_whose_log_fails_its_crc_is_refused_not_a_crash(tmp_path, fake_github, store):
    def corrupt(inputs):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
            zf.writestr("result.json", json.dumps(remote_doc(inputs)))
            zf.writestr(f"data/smoke/{inputs['run_id']}.log", "engine log line\n")
        return buf.getvalue().replace(b"engine log line", b"engine LOG line")

    workflow(fake_github, corrupt)
    cfg = gha_cfg(tmp_path)
    (doc,) = cycles(cfg, store, fake_github)
    assert doc["outcome"] == "error" and doc["refused"] is True
    assert "its log is unreadable" in doc["reason"] and "CRC" in doc["reason"]
    assert store.triggers() == {}


def test_github_trouble_past_the_dispatch_timeout_settles_the_trigger(tmp_path, fake_github, store):
    workflow(fake_github, lambda inputs: {"result.json": json.dumps(remote_doc(inputs))})
    fake_github.fail("GET", r"/artifacts/\d+/zip$", status=500, times=-1)
    cfg = gha_cfg(tmp_path)
    assert cycles(cfg, store, fake_github) == []  # within the timeout: asked again
    assert store.triggers()["r1"]["state"] == "dispatched"
    later = NOW + timedelta(seconds=cfg.smoke.dispatch_timeout + 60)
    (doc,) = cycles(cfg, store, fake_github, now=later, n=1)
    assert doc["outcome"] == "error" and "after the dispatch timeout" in doc["reason"]
    assert store.triggers() == {}


def test_a_skipped_actions_run_keeps_the_trigger_waiting(tmp_path, fake_github, store):
    """The runner found no working GPU: like the local backend, nothing is judged and the
    trigger waits for the next chance instead of being used up."""
    workflow(
        fake_github,
        lambda inputs: {"result.json": json.dumps(remote_doc(inputs, outcome="skipped"))},
    )
    cfg = gha_cfg(tmp_path)
    ev = evaluate(cfg, {}, [], {}, NOW)
    with GitHubClient(fake_github.url, token="test-token") as client:
        args = dict(cycle_id=None, at=iso(NOW), client=client)
        run_triggers(cfg, store, ev, CHANGED, NOW, **args)
        first = store.triggers()["r1"]["run_id"]
        for _ in range(6):  # collects the skipped result, then dispatches again
            run_triggers(cfg, store, ev, [], NOW, **args)
            t = store.triggers()["r1"]
            if t["run_id"] not in (None, first):
                break
    assert t["state"] == "dispatched" and t["run_id"] != first  # waited, then tried again
    assert store.smoke_runs() == []


@pytest.mark.parametrize(
    ("drop", "why"),
    [("event", "not a dispatch"), ("head_repository", "ran code from None")],
)
def test_refusal_fails_closed_on_missing_fields(tmp_path, drop, why):
    cfg = gha_cfg(tmp_path)
    run = {"event": "workflow_dispatch", "head_repository": {"full_name": "org/guide"}}
    doc = remote_doc({"recipe": "r1", "run_id": "r1-x"})
    assert refusal(cfg, cfg.recipe("r1"), run, doc) is None
    del run[drop]
    assert why in refusal(cfg, cfg.recipe("r1"), run, doc)


def test_a_result_that_says_started_is_refused(tmp_path):
    cfg = gha_cfg(tmp_path)
    run = {"event": "workflow_dispatch", "head_repository": {"full_name": "org/guide"}}
    doc = remote_doc({"recipe": "r1", "run_id": "r1-x"}, outcome="started")
    assert "never finished" in refusal(cfg, cfg.recipe("r1"), run, doc)


def test_a_result_and_its_trigger_are_stored_together(tmp_path, store, monkeypatch):
    """A failure between storing the result and dropping the trigger loses neither."""
    cfg = make_cfg(tmp_path)
    ev = evaluate(cfg, {}, [], {}, NOW)

    def runner(cfg, recipe, run_id):
        return remote_doc({"recipe": recipe.id, "run_id": run_id}, outcome="failed")

    def broken(*a, **kw):
        raise RuntimeError("disk gone")

    monkeypatch.setattr(store, "add_event", broken)
    with pytest.raises(RuntimeError):
        run_triggers(cfg, store, ev, CHANGED, NOW, cycle_id=None, at=iso(NOW), runner=runner)
    assert list(store.triggers()) == ["r1"] and store.smoke_runs() == []


def test_a_result_for_another_recipe_is_refused(tmp_path):
    # Issue 32's mutation set: the recipe check could go and no test noticed (each one's
    # result.json named the dispatched recipe). Here only the name differs.
    cfg = gha_cfg(tmp_path)
    run = {"event": "workflow_dispatch", "head_repository": {"full_name": "org/guide"}}
    doc = remote_doc({"recipe": "r1", "run_id": "r1-x"})
    doc["recipe"] = "r9"
    assert refusal(cfg, cfg.recipe("r1"), run, doc) == (
        "result.json is for recipe 'r9', dispatched 'r1'"
    )

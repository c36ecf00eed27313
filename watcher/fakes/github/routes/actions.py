"""Actions: dispatch a workflow, list and poll its runs, list and download artifacts."""

from __future__ import annotations

import io
import re
import threading
import zipfile
from typing import TYPE_CHECKING

from watcher.fakes.github.http import Ctx, HTTPError, Reply
from watcher.fakes.github.routes.common import body_json, need_login
from watcher.fakes.github.shapes import api_url
from watcher.fakes.github.shapes_actions import artifact_json, run_json
from watcher.fakes.github.util import WEB, iso, now, sha

if TYPE_CHECKING:
    from watcher.fakes.github.server import FakeGitHub


def workflow_for(ctx: Ctx) -> dict:
    key = ctx.params["workflow"]
    for wf in ctx.repo.workflows.values():
        if key in (wf["key"], str(wf["id"])):
            return wf
    raise HTTPError(404, "Not Found")


def dispatch(gh: FakeGitHub, ctx: Ctx) -> Reply:
    login = need_login(ctx)
    data = body_json(ctx)
    if not isinstance(data.get("ref"), str):
        raise HTTPError(422, 'Invalid request.\n\n"ref" wasn\'t supplied.')
    inputs = data.get("inputs") or {}
    if not isinstance(inputs, dict):
        raise HTTPError(422, "Invalid request.\n\nFor 'properties/inputs', it is not an object.")
    with gh._lock:
        r = ctx.repo
        wf = workflow_for(ctx)
        target = r.git.resolve(data["ref"])
        if target is None and r.git.commits:
            raise HTTPError(422, f"No ref found for: {data['ref']}")
        head = r.git.commits[target] if target is not None else None
        wf["runs"] += 1
        ident = gh._next_run_id
        gh._next_run_id += 1
        title = wf["name"]
        if wf["run_name"]:
            try:
                title = wf["run_name"].format(**inputs)
            except (KeyError, IndexError, ValueError):
                title = wf["run_name"]
        stamp = now()
        run = {
            "id": ident,
            "repo": r,
            "workflow": wf,
            "run_number": wf["runs"],
            "ref": data["ref"],
            "inputs": inputs,
            "actor": login,
            "display_title": title,
            "head_sha": head["sha"] if head else sha("run", ident),
            "head_message": head["message"] if head else "",
            "created_at": stamp,
            "updated_at": stamp,
            "status": "queued",
            "conclusion": None,
            "done": threading.Event(),
            "files": None,
            "error": None,
            "artifacts": [],
        }
        gh._runs[ident] = run
    threading.Thread(target=_work, args=(run,), daemon=True).start()
    if data.get("return_run_details"):
        api = api_url(gh, r)
        out = {
            "workflow_run_id": ident,
            "run_url": f"{api}/actions/runs/{ident}",
            "html_url": f"{WEB}/{r.full_name}/actions/runs/{ident}",
        }
        reply = gh._json(out)
        reply.cacheable = False
        return reply
    return Reply(204)


class JobEnded(Exception):
    """Raised by an `on_dispatch` callback: the run concludes `conclusion` (cancelled,
    timed_out, failure) and still uploads `files` (a step with `if: always()`)."""

    def __init__(self, conclusion: str, files: dict | bytes | None = None):
        super().__init__(conclusion)
        self.conclusion, self.files = conclusion, files


def _work(run: dict) -> None:
    callback = run["workflow"]["on_dispatch"]
    try:
        files = callback(dict(run["inputs"])) if callback else None
        run["files"] = files if isinstance(files, bytes) or files is None else dict(files)
    except JobEnded as e:
        run["ended"], run["files"] = e.conclusion, e.files
    except Exception as e:  # the "job" failed: the run concludes failure
        run["error"] = e
    finally:
        run["done"].set()


def list_runs(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        wf = workflow_for(ctx)
        runs = [x for x in gh._runs.values() if x["workflow"] is wf]
        runs.sort(key=lambda x: x["id"], reverse=True)
        q = ctx.query
        if q.get("status"):
            runs = [x for x in runs if q["status"] in (x["status"], x["conclusion"])]
        if q.get("event"):
            runs = [x for x in runs if q["event"] == "workflow_dispatch"]
        if q.get("branch"):
            runs = [x for x in runs if x["ref"] == q["branch"]]
        if q.get("head_sha"):
            runs = [x for x in runs if x["head_sha"] == q["head_sha"]]
        if q.get("actor"):
            runs = [x for x in runs if x["actor"] == q["actor"]]
        created = q.get("created", "")
        if created.startswith(">="):
            runs = [x for x in runs if x["created_at"] >= iso(created[2:])]
        rendered = [run_json(gh, x) for x in runs]
        page, link = gh._paginate(rendered, q, ctx.raw_query, ctx.path)
        return gh._json({"total_count": len(rendered), "workflow_runs": page}, **link)


def run_for(gh: FakeGitHub, ctx: Ctx) -> dict:
    run = gh._runs.get(int(ctx.params["run_id"]))
    if run is None or run["repo"] is not ctx.repo:
        raise HTTPError(404, "Not Found")
    return run


def get_run(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        run = run_for(gh, ctx)
    if run["status"] == "in_progress":
        run["done"].wait(5.0)  # a quick callback finishes in step; a slow one keeps running
    with gh._lock:
        if run["status"] == "queued":
            run["status"] = "in_progress"
            run["updated_at"] = now()
        elif run["status"] == "in_progress" and run["done"].is_set():
            _complete(gh, run)
        return gh._json(run_json(gh, run), last_modified=run["updated_at"])


def _complete(gh: FakeGitHub, run: dict) -> None:
    run["status"] = "completed"
    run["conclusion"] = run.get("ended") or ("failure" if run["error"] is not None else "success")
    run["updated_at"] = now()
    if run["files"]:
        buf = io.BytesIO()
        if isinstance(run["files"], bytes):  # the archive as uploaded, byte for byte
            buf.write(run["files"])
        else:
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, content in sorted(run["files"].items()):
                    data = content.encode() if isinstance(content, str) else bytes(content)
                    zf.writestr(zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0)), data)
        ident = gh._next_artifact_id
        gh._next_artifact_id += 1
        gh._artifacts[ident] = {
            "id": ident,
            "repo": run["repo"],
            "run_id": run["id"],
            "name": run["workflow"]["artifact_name"],
            "zip": buf.getvalue(),
            "created_at": run["updated_at"],
        }
        run["artifacts"].append(ident)


def list_artifacts(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        run = run_for(gh, ctx)
        arts = [artifact_json(gh, gh._artifacts[i]) for i in run["artifacts"]]
        if ctx.query.get("name"):
            arts = [a for a in arts if a["name"] == ctx.query["name"]]
        page, link = gh._paginate(arts, ctx.query, ctx.raw_query, ctx.path)
        return gh._json({"total_count": len(arts), "artifacts": page}, **link)


def download_artifact(gh: FakeGitHub, ctx: Ctx) -> Reply:
    with gh._lock:
        art = gh._artifacts.get(int(ctx.params["artifact_id"]))
        if art is None or art["repo"] is not ctx.repo or ctx.params["format"] != "zip":
            raise HTTPError(404, "Not Found")
        location = f"{gh.url}/_fake/artifacts/{art['id']}.zip"
    return Reply(302, b"", {"Location": location})


def artifact_blob(gh: FakeGitHub, path: str) -> Reply:
    m = re.fullmatch(r"/_fake/artifacts/(\d+)\.zip", path)
    with gh._lock:
        art = gh._artifacts.get(int(m.group(1))) if m else None
    if art is None:
        return Reply(404, b"BlobNotFound", {"Content-Type": "text/plain"}, rate_free=True)
    return Reply(200, art["zip"], {"Content-Type": "application/zip"}, rate_free=True)

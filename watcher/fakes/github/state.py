"""The fake GitHub's state model and its seeding API: repos, issues, pulls, timelines, comments,
commits, tags, releases, branches, permissions and workflows.

Every method takes the lock, so a test may seed while the server answers. Seeding methods return
the new object rendered as GitHub would (handy in assertions). `FakeGitHub` is this state served
over HTTP; another filler (e.g. a replay of recorded history) may override `tree_at` and `blob`,
raising `Unknown` where it has no answer: the routes then say 503, never 404.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from watcher.fakes.github import events, shapes, shapes_git, util
from watcher.fakes.github.git import History, Unknown
from watcher.fakes.github.util import color, iso, later, node, num, split_repo

__all__ = ["GitHubState", "Repo", "Unknown", "PERMISSIONS"]

# Fields an issue or pull record keeps; `update()` puts anything else into "extra", which is
# laid over the rendered JSON (so a test can set e.g. locked=True).
RECORD_FIELDS = {
    "closed_by",
    "title",
    "state",
    "state_reason",
    "created_at",
    "updated_at",
    "closed_at",
    "labels",
    "body",
    "user",
    "draft",
    "merged",
    "merge_commit_sha",
    "merged_at",
    "head_ref",
    "base_ref",
}
DATE_FIELDS = {"created_at", "updated_at", "closed_at", "merged_at"}
PERMISSIONS = ("admin", "maintain", "write", "triage", "read", "none")


class Repo:
    def __init__(self, full_name: str):
        self.full_name = full_name
        self.owner, self.name = split_repo(full_name)
        self.id = num("repo", full_name.lower())
        self.issues: dict[int, dict] = {}
        self.discussions: dict[int, dict] = {}  # served by GraphQL only, as on GitHub
        self.timelines: dict[int, list[dict]] = {}
        self.git = History()
        self.releases: list[dict] = []
        self.workflows: dict[str, dict] = {}
        self.permissions: dict[str, str] = {}
        self.events: list[dict] = []  # the events feed, oldest first (watcher.fakes.github.events)
        self.stars = 0


class GitHubState:
    """What the fake GitHub knows. Subclassed by `FakeGitHub`, which serves it."""

    url: str  # provided by the server

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._repos: dict[str, Repo] = {}
        self._repo_ids: dict[int, Repo] = {}
        self._comments: dict[int, dict] = {}
        self._next_comment_id = 3_000_000_001
        self._runs: dict[int, dict] = {}
        self._next_run_id = 17_000_000_001
        self._artifacts: dict[int, dict] = {}
        self._next_artifact_id = 2_400_000_001
        self._event_seq = 0
        self.events_poll_interval = events.POLL_INTERVAL

    # ---------------------------------------------------------------- lookups

    def _repo(self, repo: str, create: bool = True) -> Repo:
        key = repo.lower()
        found = self._repos.get(key)
        if found is None:
            if not create:
                raise KeyError(f"unknown repo {repo}")
            found = self._repos[key] = Repo(repo)
            self._repo_ids[found.id] = found
        return found

    def _record(self, repo: str, number: int) -> dict:
        with self._lock:
            found = self._repos.get(repo.lower())
            if found is None or number not in found.issues:
                raise KeyError(f"no issue or pull {repo}#{number}")
            return found.issues[number]

    # ---------------------------------------------------------------- issues, pulls

    def add_issue(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        state: str = "open",
        state_reason: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        closed_at: str | None = None,
        labels: Iterable[str | dict] = (),
        body: str = "",
        user: str = "someone",
        closed_by: str | None = None,
    ) -> dict:
        """Seed an issue. A closed issue without a state_reason reads "completed", like GitHub.
        `closed_by`: who closed it (default: the repository's owner, a maintainer; "": not
        said, null, as GitHub answers for some issues: the timeline's `closed` actor tells)."""
        if state == "closed" and state_reason is None:
            state_reason = "completed"
        return self._add(repo, number, False, locals())

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        state: str = "open",
        draft: bool = False,
        merged: bool = False,
        merge_commit_sha: str | None = None,
        merged_at: str | None = None,
        closed_at: str | None = None,
        created_at: str | None = None,
        updated_at: str | None = None,
        body: str = "",
        user: str = "someone",
        head_ref: str = "feature",
        base_ref: str = "main",
        labels: Iterable[str | dict] = (),
    ) -> dict:
        """Seed a pull request (it is an issue too). merged=True implies state "closed"."""
        return self._add(repo, number, True, locals())

    def _add(self, repo: str, number: int, is_pull: bool, args: dict) -> dict:
        with self._lock:
            r = self._repo(repo)
            rec = {k: args.get(k) for k in RECORD_FIELDS}
            rec.update(repo=r, number=number, is_pull=is_pull, extra={})
            rec["labels"] = list(args.get("labels") or ())
            rec["draft"] = bool(rec["draft"])
            rec["merged"] = bool(rec["merged"])
            for k in DATE_FIELDS:
                rec[k] = iso(rec[k])
            rec["created_at"] = rec["created_at"] or "2026-01-05T09:00:00Z"
            _settle(rec, fallback=rec["updated_at"] or rec["created_at"])
            if not rec["updated_at"]:
                stamps = [rec["created_at"], rec["closed_at"], rec["merged_at"]]
                rec["updated_at"] = max(s for s in stamps if s)
            r.issues[number] = rec
            r.timelines.setdefault(number, [])
            events.issue_event(self, rec, "opened", rec["created_at"])
            return shapes.pull_json(self, rec) if is_pull else shapes.issue_json(self, rec)

    def add_discussion(
        self,
        repo: str,
        number: int,
        *,
        title: str,
        closed: bool = False,
        state_reason: str | None = None,
        answered: bool = False,
        created_at: str = "2026-01-05T09:00:00Z",
        closed_at: str | None = None,
        updated_at: str | None = None,
    ) -> None:
        """Seed a discussion (GitHub serves discussions through GraphQL only: POST /graphql).
        `state_reason`: RESOLVED, OUTDATED or DUPLICATE when closed (default RESOLVED)."""
        with self._lock:
            r = self._repo(repo)
            stamps = [iso(s) for s in (created_at, closed_at, updated_at) if s]
            r.discussions[number] = {
                "number": number,
                "title": title,
                "url": f"{util.WEB}/{r.full_name}/discussions/{number}",
                "closed": closed,
                "closedAt": iso(closed_at) if closed else None,
                "stateReason": (state_reason or "RESOLVED") if closed else None,
                "isAnswered": answered,
                "createdAt": iso(created_at),
                "updatedAt": iso(updated_at) if updated_at else max(stamps),
            }

    def update(self, repo: str, number: int, **fields: object) -> None:
        """Change fields of an issue or pull; updated_at moves forward, so the ETag changes.

        Known fields (those of add_issue/add_pull) change the record; any other key is laid
        over the rendered JSON as-is. Closing sets closed_at, merging sets merged_at and the
        state, reopening clears closed_at and reads state_reason "reopened".
        """
        with self._lock:
            rec = self._record(repo, number)
            was_closed = rec["state"] == "closed"
            for key, value in fields.items():
                if key in DATE_FIELDS:
                    value = iso(value)
                if key == "labels":
                    value = list(value or ())
                if key in RECORD_FIELDS:
                    rec[key] = value
                else:
                    rec["extra"][key] = value
            if "updated_at" in fields and fields["updated_at"]:
                stamp = rec["updated_at"]
            else:
                stamps = [later(rec["updated_at"], 1)]
                stamps += [rec[k] for k in ("closed_at", "merged_at") if k in fields and rec[k]]
                stamp = max(stamps)
            _settle(rec, fallback=stamp)
            if rec["state"] == "closed" and not was_closed and "state_reason" not in fields:
                rec["state_reason"] = None if rec["is_pull"] else "completed"
            if rec["state"] == "open" and was_closed and "state_reason" not in fields:
                rec["state_reason"] = "reopened"
            rec["updated_at"] = stamp
            closed = rec["state"] == "closed"
            action = "closed" if closed and not was_closed else "edited"
            action = "reopened" if was_closed and not closed else action
            events.issue_event(self, rec, action, stamp)

    # ---------------------------------------------------------------- timeline

    def add_cross_reference(
        self,
        repo: str,
        number: int,
        *,
        source_repo: str,
        source_number: int,
        created_at: str | None = None,
    ) -> None:
        """repo#number gets a `cross-referenced` event from source_repo#source_number.

        The source must already be seeded; its issue JSON is rendered at request time, so the
        event shows the source's current state (as GitHub does).
        """
        with self._lock:
            self._record(repo, number)
            source = self._record(source_repo, source_number)
            stamp = iso(created_at) or source["created_at"]
            self._repo(repo).timelines[number].append(
                {
                    "_cross_ref": (source_repo, source_number),
                    "event": "cross-referenced",
                    "created_at": stamp,
                    "updated_at": stamp,
                }
            )

    def add_timeline_event(self, repo: str, number: int, event: dict) -> None:
        """Append any timeline event; missing common fields (id, actor, urls...) are filled in.

        `actor` may be a login string. A `label` given as a string becomes {"name", "color"}.
        """
        with self._lock:
            self._record(repo, number)
            r = self._repo(repo)
            self._event_seq += 1
            ident = num("event", r.full_name, number, self._event_seq)
            ev = dict(event)
            ev.setdefault("id", ident)
            ev.setdefault("node_id", node("IssueEvent", ev["id"]))
            ev.setdefault("url", f"/repos/{r.full_name}/issues/events/{ev['id']}")
            ev.setdefault("actor", "someone")
            ev.setdefault("event", "commented")
            ev.setdefault("commit_id", None)
            ev.setdefault("commit_url", None)
            ev["created_at"] = iso(ev.get("created_at")) or self._record(repo, number)["updated_at"]
            ev.setdefault("performed_via_github_app", None)
            if isinstance(ev.get("label"), str):
                ev["label"] = {"name": ev["label"], "color": color(ev["label"])}
            r.timelines[number].append(ev)

    # ---------------------------------------------------------------- git

    def add_commit(
        self,
        repo: str,
        sha: str | None = None,
        *,
        message: str,
        date: str,
        files: Iterable[str] = (),
        author: str = "dev",
        contents: dict[str, str | bytes | None] | None = None,
        renamed: dict[str, str] | None = None,
    ) -> dict:
        """Append a commit to the default branch, which advances to it.

        `contents` ({path: text | bytes | None}) are the file changes it makes (None deletes);
        `files` defaults to its keys. Its tree is the parent's tree plus these changes.
        `renamed` ({new path: old path}) is git's rename detection: the single-commit answer
        lists each as one `renamed` entry with `previous_filename` (give the old path None in
        `contents` and the new one its text, as a move does).
        """
        with self._lock:
            r = self._repo(repo)
            date = iso(date)
            files = list(files) or [p.strip("/") for p in contents or ()]
            ident = sha or util.sha(r.full_name, len(r.git.commits), message, date)
            if ident in r.git.commits:
                raise ValueError(f"commit {ident} already in {repo}")
            for new, old in (renamed or {}).items():
                files += [p for p in (old, new) if p not in files]
            rec = {"sha": ident, "message": message, "date": date, "files": files, "author": author}
            if renamed:
                rec["renamed"] = dict(renamed)
            before = r.git.head()
            r.git.add(rec, contents)
            events.push_event(self, r, before["sha"] if before else None, rec)
            return shapes_git.commit_json(self, r, rec, detail=True)

    def add_tag(
        self, repo: str, name: str, sha: str | None = None, *, annotated: bool = False
    ) -> None:
        """A tag at `sha` (a full or abbreviated sha; default: the head commit); lightweight, or
        `annotated` (its git/ref answers a tag object, not the commit, as GitHub does)."""
        with self._lock:
            r = self._repo(repo)
            if not r.git.commits:
                raise ValueError(f"{repo} has no commits to tag")
            target = r.git.resolve("HEAD" if sha is None else sha)
            if target is None:
                raise ValueError(f"no commit {sha} in {repo}")
            r.git.tags[name] = target
            if annotated:
                r.git.annotated.add(name)
            events.tag_event(self, r, name)

    def set_default_branch(self, repo: str, name: str) -> None:
        """Name the default branch (new commits go there); created at the current head if new."""
        with self._lock:
            r = self._repo(repo)
            head = r.git.head()
            if name not in r.git.branches and head is not None:
                r.git.branches[name] = head["sha"]
            r.git.default_branch = name

    def set_branch(self, repo: str, name: str, sha: str) -> None:
        """Point branch `name` at a commit (a sha, tag or branch of this repo)."""
        with self._lock:
            r = self._repo(repo)
            target = r.git.resolve(sha)
            if target is None:
                raise ValueError(f"no commit {sha} in {repo}")
            r.git.branches[name] = target

    def churn(self, repo: str, *, pushes: int = 1, stars: int = 1) -> list[str]:
        """The moving-repository mode, one step: new stars and pushes to a file nobody watches
        (what real GitHub does between two quiet cycles). Returns the pushed shas."""
        return events.churn(self, repo, pushes=pushes, stars=stars)

    def set_permission(self, repo: str, login: str, perm: str) -> None:
        """A user's role on repo: admin, maintain, write, triage, read or none (default: read)."""
        if perm not in PERMISSIONS:
            raise ValueError(f"unknown permission {perm!r}; one of {PERMISSIONS}")
        with self._lock:
            self._repo(repo).permissions[login.lower()] = perm

    def tree_at(self, repo: str, sha: str) -> dict[str, str]:
        """{path: blob sha} of the files at commit `sha` (a full sha of this repo)."""
        with self._lock:
            rec = self._repo(repo).git.commits.get(sha)
            if rec is None:
                raise Unknown(f"commit {sha} of {repo}")
            return rec["tree"]

    def blob(self, repo: str, blob_sha: str) -> bytes:
        """The bytes of a blob seeded through `add_commit(contents=...)`."""
        with self._lock:
            data = self._repo(repo).git.blobs.get(blob_sha)
            if data is None:
                raise Unknown(f"blob {blob_sha} of {repo}")
            return data

    def add_release(
        self,
        repo: str,
        tag: str,
        *,
        published_at: str,
        name: str | None = None,
        draft: bool = False,
        prerelease: bool = False,
        sha: str | None = None,
        body: str = "",
    ) -> dict:
        """A release; also creates the tag (at `sha`, default head) unless it exists."""
        with self._lock:
            r = self._repo(repo)
            if tag not in r.git.tags or sha is not None:
                self.add_tag(repo, tag, sha)
            ident = num("release", r.full_name, tag)
            rec = {
                "id": ident,
                "tag": tag,
                "name": name if name is not None else tag,
                "draft": draft,
                "prerelease": prerelease,
                "published_at": iso(published_at),
                "body": body,
                "seq": len(r.releases),
            }
            r.releases = [x for x in r.releases if x["tag"] != tag] + [rec]
            events.release_event(self, r, rec)
            return shapes_git.release_json(self, r, rec)

    # ---------------------------------------------------------------- comments

    def add_comment(
        self,
        repo: str,
        number: int,
        *,
        body: str,
        user: str = "someone",
        created_at: str | None = None,
    ) -> dict:
        """Seed a comment. Without created_at it is one minute after the previous one."""
        with self._lock:
            issue = self._record(repo, number)
            if created_at is None:
                prior = [c["created_at"] for c in self._issue_comments(issue)]
                created_at = later(max(prior, default=issue["created_at"]), 60)
            rec = self._new_comment(issue, body, user, iso(created_at))
            events.comment_event(self, rec)
            return shapes.comment_json(self, rec)

    def _new_comment(self, issue: dict, body: str, user: str, stamp: str) -> dict:
        ident = self._next_comment_id
        self._next_comment_id += 1
        rec = {
            "id": ident,
            "issue": issue,
            "body": body,
            "user": user,
            "created_at": stamp,
            "updated_at": stamp,
        }
        self._comments[ident] = rec
        return rec

    def _issue_comments(self, issue: dict) -> list[dict]:
        return [c for c in self._comments.values() if c["issue"] is issue]

    def comments(self, repo: str, number: int) -> list[dict]:
        """The comments now stored on repo#number, oldest first, as GitHub renders them."""
        with self._lock:
            issue = self._record(repo, number)
            return [shapes.comment_json(self, c) for c in self._issue_comments(issue)]

    # ---------------------------------------------------------------- actions

    def add_workflow(
        self,
        repo: str,
        workflow_id: str,
        *,
        on_dispatch: Callable[[dict], dict[str, bytes]] | None = None,
        name: str | None = None,
        run_name: str | None = None,
        artifact_name: str = "artifact",
    ) -> None:
        """A dispatchable workflow (e.g. "smoke.yml").

        on_dispatch(inputs) runs in a thread when a run is dispatched; the files it returns
        become the run's single artifact (a zip called `artifact_name`; bytes: the zip itself).
        If it raises, the run concludes "failure" with no artifact; raising
        `routes.actions.JobEnded(conclusion, files)` concludes `conclusion` with those files. `run_name` is a str.format template over the
        inputs for the run's display_title (like `run-name:` in a workflow file).
        Each GET of actions/runs/{id} moves the run one step: queued -> in_progress -> completed.
        """
        with self._lock:
            r = self._repo(repo)
            r.workflows[workflow_id] = {
                "key": workflow_id,
                "id": num("workflow", r.full_name, workflow_id),
                "name": name or workflow_id.rsplit(".", 1)[0],
                "path": f".github/workflows/{workflow_id}",
                "on_dispatch": on_dispatch,
                "run_name": run_name,
                "artifact_name": artifact_name,
                "runs": 0,
            }


def _settle(rec: dict, fallback: str) -> None:
    """Make merged/closed fields agree with each other, the way GitHub keeps them."""
    if rec["merged"]:
        rec["state"] = "closed"
        rec["merged_at"] = rec["merged_at"] or rec["closed_at"] or fallback
        rec["merge_commit_sha"] = rec["merge_commit_sha"] or util.sha(
            "merge", rec["repo"].full_name, rec["number"]
        )
    if rec["state"] == "closed":
        rec["closed_at"] = rec["closed_at"] or rec["merged_at"] or fallback
    else:
        rec["closed_at"] = None
        rec["merged_at"] = None

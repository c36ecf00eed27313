"""`watcher doctor`: is this host ready to run watcher? One line per check, one fix per failure.

Adoption fails on small things (a token GitHub rejects, a site folder that cannot be written, a
GPU host whose docker has no NVIDIA runtime) that a cycle would only report hours later, or look
green while doing nothing. The doctor asks each question once, directly, and says what to do.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from watcher.config.load import load_config
from watcher.config.model import Config, Recipe
from watcher.core.errors import GitHubError, WatcherError
from watcher.onboard.scaffold import PYTHON_MIN

MIN_FREE_DISK_MIB = 1024  # smoke logs are small, but an engine writes caches beside them
COMMENT_PERMISSIONS = ("admin", "maintain", "write", "triage")


@dataclass
class Check:
    """One line of the checklist. `fix` is set exactly when the check failed."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        text = f"{mark} {self.name}: {self.detail}"
        return text + (f"\n     fix: {self.fix}" if self.fix else "")


def _ok(name: str, detail: str) -> Check:
    return Check(name, True, detail)


def _fail(name: str, detail: str, fix: str) -> Check:
    return Check(name, False, detail, fix)


def run_doctor(config_path: Path, *, gpu: bool = False) -> list[Check]:
    """Every check, in order; the GitHub and host checks need a valid config."""
    checks = [check_python()]
    try:
        cfg = load_config(config_path)
    except WatcherError as e:
        checks.append(
            _fail(
                "config",
                str(e),
                "fix the named key (`watcher validate` says the same), or `watcher init`",
            )
        )
        return checks
    checks.append(
        _ok(
            "config",
            f"{cfg.path}: {len(cfg.items)} items, {len(cfg.blockers)} blockers, "
            f"{len(cfg.recipes)} recipes, {len(cfg.pages)} pages",
        )
    )
    checks += check_github(cfg)
    checks += check_first_reads(cfg)
    checks += [check_writable("site folder", cfg.site_dir, cfg), check_page_folders(cfg)]
    checks.append(check_data_dir(cfg))
    workflow = cfg.base_dir / ".github" / "workflows" / "watch.yml"
    if workflow.is_file():
        checks.append(check_workflow_permissions(cfg, workflow))
        checks.append(check_install(workflow.parent))
    if gpu:
        checks += gpu_checks(cfg)
    return checks


def check_python() -> Check:
    have = ".".join(map(str, sys.version_info[:3]))
    want = ".".join(map(str, PYTHON_MIN))
    if sys.version_info[:2] >= PYTHON_MIN:
        return _ok("python", f"{have} (needs >= {want})")
    return _fail("python", f"{have}; watcher needs >= {want}", f"install Python {want} or newer")


# ---------------------------------------------------------------- GitHub


def check_github(cfg: Config) -> list[Check]:
    from watcher.github.client import GitHubClient, api_base_url

    base = api_base_url(cfg.settings.github_api_url)
    opts = {"timeout": cfg.settings.timeout, "max_rate_limit_wait": 0, "retries": 0}
    out = []
    with GitHubClient(base, token="", **opts) as anon:  # /rate_limit is free, with or without
        try:
            anon.get_json("/rate_limit")
        except GitHubError as e:
            if e.status is None:
                return [
                    _fail(
                        "github reachable",
                        f"{base}: {e}",
                        "check the network (proxy, firewall) and GITHUB_API_URL / "
                        "[watcher] github_api_url",
                    )
                ]
        out.append(_ok("github reachable", base))
    from watcher.core.token import github_token

    token = github_token() or ""
    if not token:
        out.append(
            _fail(
                "token",
                "GITHUB_TOKEN is not set: 60 requests an hour, and a 304 is not free",
                "export GITHUB_TOKEN=… (a fine-grained token with read access to public "
                "repositories; in Actions: env GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }})",
            )
        )
        if cfg.notify.enabled:
            out.append(_fail("notify issue", "no token to comment with", "set GITHUB_TOKEN"))
        return out
    with GitHubClient(base, token=token, **opts) as client:
        try:
            rate = client.get_json("/rate_limit")
        except GitHubError as e:
            out.append(
                _fail(
                    "token",
                    f"GitHub rejected the token ({e})",
                    "make a new token (Settings → Developer settings → tokens) and export it "
                    "as GITHUB_TOKEN; check it has not expired",
                )
            )
            return out
        core = (rate.get("resources") or {}).get("core") or rate.get("rate") or {}
        login = _login(client)
        who = f" as {login}" if login else ""
        remaining, limit = core.get("remaining"), core.get("limit")
        if remaining == 0:
            reset = datetime.fromtimestamp(int(core.get("reset") or 0), UTC)
            out.append(
                _fail(
                    "token",
                    f"accepted{who}, but its rate limit is spent (0 of {limit})",
                    f"wait until {reset:%Y-%m-%d %H:%M} UTC, or use another token",
                )
            )
        else:
            out.append(_ok("token", f"accepted{who}; rate limit {remaining} of {limit} left"))
        if cfg.notify.enabled:
            out.append(check_notify(cfg, client, login))
    return out


def _login(client) -> str | None:
    """The token's login; None for a GitHub Actions token (GET /user answers 403 to it)."""
    try:
        return client.get_json("/user").get("login")
    except GitHubError:
        return None


def check_notify(cfg: Config, client, login: str | None) -> Check:
    """The tracking issue exists, is an issue, and the token's user may comment on it."""
    repo, number = cfg.notify.repo, cfg.notify.issue
    name = f"notify issue {repo}#{number}"
    try:
        issue = client.get_json(f"/repos/{repo}/issues/{number}")
    except GitHubError as e:
        return _fail(
            name,
            f"cannot read it ({e})",
            "create the tracking issue, or fix [notify] repo / issue in the config",
        )
    if issue.get("pull_request"):
        return _fail(name, "is a pull request", "point [notify] issue at an issue")
    if login is None:
        return _ok(
            name,
            f"exists ({issue.get('state')}); the token has no user (a GitHub Actions token): "
            "the workflow needs `permissions: issues: write`",
        )
    try:
        perm = client.get_json(f"/repos/{repo}/collaborators/{login}/permission")
    except GitHubError as e:
        return _fail(
            name,
            f"exists, but {login}'s permission on {repo} cannot be read ({e})",
            f"use a token of a collaborator of {repo} (write access)",
        )
    level = perm.get("permission") or "none"
    locked = bool(issue.get("locked"))
    if level in COMMENT_PERMISSIONS or (level == "read" and not locked):
        return _ok(name, f"exists ({issue.get('state')}); {login} may comment ({level})")
    why = "the issue is locked" if locked else "no access"
    return _fail(
        name,
        f"{login} cannot comment: permission {level!r} on {repo} ({why})",
        f"give {login} write access to {repo}, or use a token of someone who has it",
    )


def check_workflow_permissions(cfg: Config, workflow: Path) -> Check:
    """The watch workflow grants what the config will use (a config edited after `init`)."""
    text = workflow.read_text(encoding="utf-8", errors="replace")
    needed = []
    if cfg.notify.enabled:
        needed.append(("issues", "[notify] enabled"))
    if cfg.smoke.backend == "github-actions":
        needed.append(("actions", '[smoke] backend = "github-actions"'))
    missing = [
        (scope, why)
        for scope, why in needed
        if not re.search(rf"^\s*{scope}:\s*write\b", text, re.MULTILINE)
    ]
    if not missing:
        granted = ", ".join(f"{scope}: write" for scope, _ in needed) or "nothing extra needed"
        return _ok("workflow permissions", f"{workflow.name}: {granted}")
    lines = "; ".join(f"{scope}: write (for {why})" for scope, why in missing)
    return _fail(
        "workflow permissions",
        f"{workflow} lacks {lines}",
        "add "
        + ", ".join(f"`{scope}: write`" for scope, _ in missing)
        + " under `permissions:` in that workflow",
    )


_PIP_LINE = re.compile(r"""pip install\s+(?:-\S+\s+)*["']([^"'\n]+)["']""")


def check_install(folder: Path) -> Check:
    """The workflows install one watcher, named in a form pip can resolve to one version (set
    by `watcher init --github --install`); a guide points it at where watcher is published."""
    from watcher.onboard.scaffold import install_problem

    found: dict[str, list[str]] = {}
    for name in ("watch.yml", "smoke.yml"):
        path = folder / name
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            for spec in _PIP_LINE.findall(text):
                found.setdefault(spec.strip(), []).append(name)
    fix = (
        'rerun `watcher init --github --install "NAME @ git+https://host/owner/repo@vX.Y.Z"`'
        " in a fresh checkout, or edit the pip line of both workflows to the same pinned form"
    )
    if not found:
        return _fail("install source", f'no `pip install "..."` line in {folder}', fix)
    if len(found) > 1:
        shown = "; ".join(f"{', '.join(w)}: {s}" for s, w in sorted(found.items()))
        return _fail("install source", f"the workflows install different watchers ({shown})", fix)
    (spec,) = found
    problem = install_problem(spec)
    if problem:
        return _fail("install source", f"{spec!r}: {problem}", fix)
    return _ok("install source", f"{spec} (make sure it is where watcher is really published)")


def _thread(repo: str, kind: str, number: int | None) -> str:
    return f"{repo}#{number}" if number else f"{repo} ({kind})"


def first_reads(cfg: Config) -> list[tuple[str, str | None]]:
    """(item id, what was read before or None) for each item whose next read is a first read,
    once a store exists: never read well, or its repo, kind or number changed in watch.toml
    since it was (a typo made or fixed). None before the first cycle: `validate --online`."""
    from watcher.loop.cycle import same_thing
    from watcher.store.db import Store

    if not cfg.db_path.is_file():
        return []
    try:
        store = Store(cfg.db_path)
    except WatcherError:
        return []  # the data folder line says what is wrong with it
    try:
        rows = store.items()
    finally:
        store.close()
    out: list[tuple[str, str | None]] = []
    for item in cfg.items:
        row = rows.get(item.id)
        if not row or not (row.get("title") or row.get("state")):
            out.append((item.id, None))
        elif not same_thing(row, item):
            out.append((item.id, _thread(row["repo"], row["kind"], row.get("number"))))
    return out


def check_first_reads(cfg: Config) -> list[Check]:
    """An item whose repo or number changed since the last good read is a first read, as on a
    fresh store (so is one never read well): read it now, so a typo fails here with the key to
    fix, not on the next cycle (exit 2) after "all checks passed"."""
    from watcher.core.token import github_token
    from watcher.github.client import GitHubClient, api_base_url
    from watcher.poll.poller import check_paths

    todo = first_reads(cfg)
    if not todo:
        return []
    out, unread = [], []
    opts = {"timeout": cfg.settings.timeout, "max_rate_limit_wait": 0, "retries": 0}
    base = api_base_url(cfg.settings.github_api_url)
    with GitHubClient(base, token=github_token() or "", **opts) as client:
        for item_id, before in todo:
            item = cfg.item(item_id)
            now = _thread(item.repo, item.kind, item.number)
            was = (
                f"now {now}, read before as {before}: a first read"
                if before
                else f"{now} not read yet: a first read"
            )
            problems, _ = check_paths(client, [item])
            if not problems:
                if before:
                    out.append(_ok(f"item {item_id}", f"{was}; GitHub has it"))
                else:
                    unread.append(item_id)
                continue
            problem = problems[0][1]
            fix = (
                f"fix `repo`/`number` of [[item]] {item_id} in {cfg.path}, then"
                " `watcher validate --online`"
            )
            if "GitHub answered 404" not in problem:  # an outage says nothing about the key
                fix = "run `watcher doctor` (or `watcher validate --online`) once GitHub answers"
            out.append(_fail(f"item {item_id}", f"{was}; {problem}", fix))
    if unread:
        out.append(_ok("first reads", f"{', '.join(unread)}: not read yet; GitHub has each"))
    return out


# ---------------------------------------------------------------- folders


def check_writable(name: str, folder: Path, cfg: Config) -> Check:
    """What the cycle does: a temp file in the site folder (a mount point is written in place)
    and, unless it is a mount point, in its parent (where the new site is built and swapped in)."""
    from watcher.publish.site import check_site_dir

    try:
        check_site_dir(cfg, folder)
    except WatcherError as e:
        return _fail(name, str(e), "set [watcher] site_dir to a folder of its own")
    mounted = folder.is_dir() and os.path.ismount(folder)
    for where in (folder,) if mounted else (folder, folder.parent):
        check = _probe_write(name, where, folder)
        if not check.ok:
            return check
    return check


def check_page_folders(cfg: Config) -> Check:
    """Each page is written as a temp file in its own folder, then renamed: each must take one."""
    folders = dict.fromkeys(cfg.resolve(p.output).parent for p in cfg.pages)
    for folder in folders:
        check = _probe_write("page folders", folder, folder)
        if not check.ok:
            return check
    shown = ", ".join(str(f) for f in folders) or "no pages"
    return _ok("page folders", f"{shown} writable")


def check_data_dir(cfg: Config) -> Check:
    return _probe_write("data folder", cfg.data_dir, cfg.data_dir)


def _probe_write(name: str, where: Path, shown: Path) -> Check:
    """Create and delete a file in `where` (or, before first use, its nearest existing parent)."""
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():  # a file where a folder must be made: no write can go there
            raise NotADirectoryError(errno.ENOTDIR, "a file is in the way", str(probe))
        with tempfile.NamedTemporaryFile(dir=probe, prefix=".watcher-doctor-"):
            pass
    except OSError as e:
        fix = {
            errno.EROFS: f"remount {probe} read-write, or point the config at a writable folder",
            errno.ENOTDIR: f"move the file {probe} out of the way, or point the config elsewhere",
        }.get(
            e.errno or 0,
            f"make {probe} writable for {_user()} (chown/chmod), or point the config elsewhere",
        )
        return _fail(name, f"{shown}: cannot write in {probe} ({e.strerror or e})", fix)
    return _ok(name, f"{shown} is writable")


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return "this user"


# ---------------------------------------------------------------- the GPU host


def gpu_checks(cfg: Config, run: Callable = subprocess.run) -> list[Check]:
    from watcher.smoke.hardware import check_hardware, read_gpus

    if not cfg.recipes:
        return [_fail("recipes", "the config has no [[recipe]]", "add a recipe to smoke-test")]
    out = []
    reading = read_gpus()
    for target in {r.hardware for r in cfg.recipes}:
        gate = check_hardware(target, reading)
        name = f"gpu {target.gpu_count}× {target.gpu_name}"
        if gate.matches_target:
            out.append(_ok(name, f"{reading.source}: {gate.reason}"))
        else:
            out.append(
                _fail(
                    name,
                    gate.reason,
                    "install the NVIDIA driver (nvidia-smi must list the GPUs), or run the "
                    "smoke tests on a host that has this GPU",
                )
            )
    if any(_is_docker(r) for r in cfg.recipes):
        out.append(check_docker(run))
    seen: set[str] = set()
    for r in cfg.recipes:  # recipes often share a model and a port: say each once
        for check in ([check_model(r)] if r.model else []) + [check_port(r)]:
            if check.detail not in seen:
                seen.add(check.detail)
                out.append(check)
    out.extend(quantization_checks(cfg))
    out.append(check_disk(cfg))
    return out


def _is_docker(recipe: Recipe) -> bool:
    return bool(recipe.command) and Path(recipe.command[0]).name in ("docker", "podman")


def check_docker(run: Callable = subprocess.run) -> Check:
    exe = shutil.which("docker")
    if exe is None:
        return _fail(
            "docker",
            "a recipe runs docker, but there is no docker on PATH",
            "install Docker Engine and the NVIDIA container toolkit",
        )
    try:
        info = run(
            [exe, "info", "--format", "{{json .Runtimes}}"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return _fail("docker", f"`docker info` failed: {e}", "check that the docker daemon runs")
    if info.returncode != 0:
        err = (info.stderr or info.stdout).strip().splitlines()
        first = err[0] if err else f"exit {info.returncode}"
        fix = "start the daemon: sudo systemctl start docker"
        if "permission denied" in first.lower():
            fix = f"add {_user()} to the docker group (sudo usermod -aG docker {_user()}), log in again"
        return _fail("docker", f"`docker info` failed: {first}", fix)
    if "nvidia" not in info.stdout:
        return _fail(
            "docker",
            f"runs, but has no NVIDIA runtime (runtimes: {info.stdout.strip() or 'none'})",
            "install the NVIDIA container toolkit, then "
            "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker`",
        )
    return _ok("docker", "runs, with the NVIDIA runtime")


def _host_model_path(recipe: Recipe) -> Path | None:
    """Where the model lives on this host: the path itself, or its `-v host:container` source."""
    model = recipe.model
    if not model.startswith(("/", "~", ".")):
        return None  # a hub id: the engine downloads it
    if _is_docker(recipe):
        argv = recipe.command
        for i, arg in enumerate(argv):
            spec = argv[i + 1] if arg in ("-v", "--volume") and i + 1 < len(argv) else None
            if arg.startswith("--volume="):
                spec = arg.split("=", 1)[1]
            if not spec or ":" not in spec:
                continue
            host, container = spec.split(":")[:2]
            if model == container or model.startswith(container.rstrip("/") + "/"):
                return Path(host + model[len(container) :]).expanduser()
    return Path(model).expanduser()


def check_model(recipe: Recipe) -> Check:
    name = f"model of {recipe.id}"
    path = _host_model_path(recipe)
    if path is None:
        return _ok(name, f"{recipe.model} (a hub id; the engine downloads it on first start)")
    if path.exists():
        return _ok(name, f"{path} exists")
    return _fail(
        name,
        f"{path} does not exist",
        f"download the model there, or fix `model` of recipe {recipe.id}",
    )


def recipe_quantization(argv: tuple[str, ...] | list[str]) -> str | None:
    """The value the command passes to --quantization (either spelling), or None."""
    for i, arg in enumerate(argv):
        if arg == "--quantization" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--quantization="):
            return arg.split("=", 1)[1]
    return None


def checkpoint_quant_method(folder: Path) -> str | None:
    """quantization_config.quant_method from the model folder's config.json, if it says one."""
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    q = data.get("quantization_config") if isinstance(data, dict) else None
    method = q.get("quant_method") if isinstance(q, dict) else None
    return str(method) if method else None


def _same_method(a: str, b: str) -> bool:
    return a.lower().replace("_", "-") == b.lower().replace("_", "-")


def quantization_checks(cfg: Config) -> list[Check]:
    """Recipes whose --quantization disagrees with the checkpoint's config.json (when the model
    folder is on this host): SGLang's _verify_quantization refuses that pairing at start."""
    out = []
    for r in cfg.recipes:
        flag = recipe_quantization(r.command)
        path = _host_model_path(r) if r.model else None
        method = checkpoint_quant_method(path) if flag and path is not None else None
        if flag and method and not _same_method(flag, method):
            out.append(
                _fail(
                    f"quantization of {r.id}",
                    f"the recipe passes --quantization {flag}, but {path / 'config.json'} says"
                    f" quantization_config.quant_method = {method}; the engine refuses the"
                    " mismatch (SGLang: 'Quantization method specified in the model config"
                    " ... does not match')",
                    f"drop --quantization from recipe {r.id} (the engine reads the"
                    " checkpoint's method)",
                )
            )
    return out


def check_port(recipe: Recipe) -> Check:
    port = recipe.host_port or recipe.port
    name = f"port {port} of {recipe.id}"
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as e:
            return _fail(
                name,
                f"in use ({e.strerror or e})",
                f"stop what listens on {port} (`ss -ltnp 'sport = :{port}'`), or change "
                f"`port` of recipe {recipe.id}",
            )
    return _ok(name, "free")


def check_disk(cfg: Config) -> Check:
    where = cfg.data_dir
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free // (1024 * 1024)
    if free >= MIN_FREE_DISK_MIB:
        return _ok("disk", f"{free} MiB free for logs in {cfg.data_dir}")
    return _fail(
        "disk",
        f"{free} MiB free in {where} (needs {MIN_FREE_DISK_MIB} MiB for smoke logs)",
        "free some space, or point [watcher] data_dir at a larger disk",
    )


def as_json(checks: list[Check]) -> dict:
    return {"ok": all(c.ok for c in checks), "checks": [asdict(c) for c in checks]}

"""A fake `docker` with a `compose` subcommand, for the compose recipe tests (no docker daemon).

`compose -f F [-f OVERRIDE] -p P up -d S` reads F (YAML; each OVERRIDE's service keys laid over
F's, as Compose merges files), starts service S's `command` DETACHED under a small
supervisor that writes the output to a file and the exit code when it ends (like a container
that outlives its client); `logs -f` follows that output until the "container" stops; `port`
prints the published port from F; `down -v --remove-orphans` kills the project; `ps -a -q`
lists it while it exists; `image inspect` prints a fixed digest. Every argv is recorded.
FAKE_COMPOSE_UP_FAIL=1 makes `up` start the service and then fail (a half-started project).
A service's `restart:` policy (`always`, `unless-stopped`, `on-failure[:N]`) is honoured as
docker does: the command is started again after it exits (0.3 s back-off), so `logs -f` never
ends; `inspect --format ... ID` prints `RestartCount State.Status State.ExitCode`.

The file is interpolated as Compose does (its own inside-out resolver, not watcher's: the
environment `docker compose` got over the `.env` beside the file), and `up` fails like Compose on
a required variable that is unset. With FAKE_COMPOSE_IMAGES=1 the service's image is "run" as the
fake engine, bound to the host port the interpolated file publishes (a guide's real compose file,
whose command only its image understands).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from kits.smokekit import REPO, write_exe

DIGEST = "fake/sglang@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

FAKE_COMPOSE = r'''#!{python}
import json, os, signal, subprocess, sys, time
import yaml
state = os.environ.get("FAKE_DOCKER_STATE") or {state!r}
os.environ.setdefault("PYTHONPATH", {repo!r})  # for the fake engine an "image" runs
os.makedirs(state, exist_ok=True)
with open(os.path.join(state, "calls.jsonl"), "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\n")
args = sys.argv[1:]
# @@INTERP@@
SUPERVISOR = """
import json, os, subprocess, sys, time
logf, exitf, policy, cmd = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
restarts = 0
def note(status, code):  # what `docker inspect` shows: RestartCount, State.Status, State.ExitCode
    with open(exitf + ".state.tmp", "w") as f:
        f.write(json.dumps([restarts, status, code]))
    os.replace(exitf + ".state.tmp", exitf + ".state")
while True:
    note("running", 0)
    with open(logf, "ab") as out:
        code = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    limit = policy.partition(":")[2]
    again = policy in ("always", "unless-stopped") or (
        policy.startswith("on-failure") and code != 0 and (not limit or restarts < int(limit)))
    if not again:
        break
    note("restarting", code)  # docker's back-off before it starts the container again
    time.sleep(0.3)
    restarts += 1
note("exited", code)
open(exitf, "w").write(str(code))
"""

def alive(pid):
    try:
        with open(f"/proc/{{pid}}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False

if args[:2] == ["image", "inspect"]:
    print(json.dumps([{digest!r}]))
    sys.exit(0)
if args[:1] == ["inspect"]:  # only the fields the compose launcher asks for
    for name in os.listdir(state):
        if name.endswith(".pid") and "c0ffee" + name[:-4][-6:] == args[-1]:
            path = os.path.join(state, name[:-4] + ".exit.state")
            restarts, status, code = json.load(open(path)) if os.path.exists(path) else [0, "created", 0]
            print(f"{{restarts}} {{status}} {{code}}")
            sys.exit(0)
    print(f"Error: No such object: {{args[-1]}}", file=sys.stderr)
    sys.exit(1)
if args[:1] != ["compose"]:
    print("fake docker: unsupported " + " ".join(args), file=sys.stderr)
    sys.exit(125)
args = args[1:]
file = project = None
files = []  # later files are laid over the first, service by service, as Compose merges them
while args and args[0] in ("-f", "-p"):
    if args[0] == "-f":
        file = args[1]
        files.append(file)
    else:
        project = args[1]
    args = args[2:]
pidf = os.path.join(state, project + ".pid")
logf = os.path.join(state, project + ".log")
exitf = os.path.join(state, project + ".exit")
if args[:2] == ["up", "-d"]:
    service = args[2]
    try:
        svc = dict(compose(files[0])["services"][service])
        for extra in files[1:]:
            svc.update(compose(extra)["services"].get(service) or {{}})
    except Required as e:
        print(f"error while interpolating services.{{service}}: {{e}}", file=sys.stderr)
        sys.exit(1)
    if os.environ.get("FAKE_COMPOSE_IMAGES") or {images!r}:
        host = str(svc["ports"][0]).split("/")[0].rsplit(":", 2)[-2]
        cmd = [sys.executable, "-m", "watcher.fakes.engine", "--port", host, "--ready-delay", "0.2"]
    else:
        cmd = list(svc["command"])
    if cmd[0] == "python":
        cmd[0] = sys.executable
    print(f" Container {{project}}-{{service}}-1  Started", file=sys.stderr)
    if "--builds" in cmd:  # a build-aware fake engine is the build its image names
        os.environ["FAKE_DOCKER_IMAGE"] = str(svc.get("image") or "")
    child = subprocess.Popen(
        [sys.executable, "-c", SUPERVISOR, logf, exitf, str(svc.get("restart") or "no"), *cmd],
        start_new_session=True, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    open(pidf, "w").write(str(child.pid))
    if os.environ.get("FAKE_COMPOSE_UP_FAIL"):
        print("Error response from daemon: could not select device driver \"nvidia\" with capabilities: [[gpu]]", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)
if args[:1] == ["logs"]:
    pos = 0
    while True:
        data = b""
        if os.path.exists(logf):
            with open(logf, "rb") as f:
                f.seek(pos)
                data = f.read()
        if data:
            pos += len(data)
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
            continue
        if not os.path.exists(pidf) or not alive(int(open(pidf).read())):
            sys.exit(0)
        time.sleep(0.05)
if args[:1] == ["port"]:
    service, target = args[1], int(args[2])
    for spec in compose(file)["services"][service].get("ports") or []:
        pub, _, tgt = str(spec).rpartition(":")
        if int(tgt) == target:
            print(f"0.0.0.0:{{pub or tgt}}")  # "ephemeral": the fake engine binds the target
            sys.exit(0)
    sys.exit(1)
if args[:1] == ["down"]:
    if os.path.exists(pidf):
        pid = int(open(pidf).read())
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for _ in range(100):
            if not alive(pid):
                break
            time.sleep(0.02)
        os.remove(pidf)
        print(f" Container {{project}}-1  Removed", file=sys.stderr)
    sys.exit(0)
if args[:1] == ["ps"]:
    if os.path.exists(pidf):
        print("c0ffee" + project[-6:])
    sys.exit(0)
print("fake docker compose: unsupported " + " ".join(args), file=sys.stderr)
sys.exit(125)
'''


INTERP = r'''
import re

class Required(Exception):
    pass

_INNER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?+])([^${}]*))?\}")

def interpolate(text, env):
    """Innermost `${...}` first, until none is left; then `$NAME`; `$$` kept aside."""
    text = text.replace("$$", "\0")
    while True:
        m = _INNER.search(text)
        if not m:
            break
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        value = env.get(name)
        empty = value is None or (op or "").startswith(":") and value == ""
        if op in (":-", "-"):
            out = arg if empty else value
        elif op in (":+", "+"):
            out = "" if empty else arg
        elif op in (":?", "?"):
            if empty:
                raise Required(f"required variable {name} is missing a value: {arg}")
            out = value
        else:
            out = value or ""
        text = text[: m.start()] + out + text[m.end() :]
    text = re.sub(r"\$([A-Za-z_][A-Za-z0-9_]*)", lambda m: env.get(m.group(1), ""), text)
    return text.replace("\0", "$")

def walk(v, env):
    if isinstance(v, str):
        return interpolate(v, env)
    if isinstance(v, list):
        return [walk(x, env) for x in v]
    if isinstance(v, dict):
        return {k: walk(x, env) for k, x in v.items()}
    return v

def compose(file):
    env = {}
    dotenv = os.path.join(os.path.dirname(os.path.abspath(file)), ".env")
    if os.path.exists(dotenv):
        for line in open(dotenv):
            line = line.strip()
            if line and not line.startswith("#") and "=" in line:
                k, v = line.removeprefix("export ").split("=", 1)
                env[k.strip()] = v.split(" #")[0].strip().strip("'\"")
    env.update(os.environ)
    return walk(yaml.safe_load(open(file)), env)
'''


def fake_compose_docker(bin_dir: Path, state: Path | None = None, images: bool = False) -> Path:
    """The fake `docker`; `state` and `images` are baked in for runs whose environment does not
    carry FAKE_DOCKER_STATE / FAKE_COMPOSE_IMAGES (a scanned recipe, run as proposed)."""
    text = FAKE_COMPOSE.format(
        python=sys.executable, digest=DIGEST, state=str(state or ""), images=images, repo=str(REPO)
    )
    return write_exe(bin_dir / "docker", text.replace("# @@INTERP@@", INTERP))


def calls(state: Path) -> list[list[str]]:
    path = state / "calls.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def compose_file(
    path: Path, port: int, *engine_args: str, gpus: str = "count: 1", restart: str = ""
) -> Path:
    """A compose file whose service `engine` runs the fake engine on `port` (published 1:1)."""
    argv = ["python", "-m", "watcher.fakes.engine", "--port", str(port), *engine_args]
    policy = f"\n    restart: {restart}" if restart else ""
    text = f"""
services:
  engine:
    image: fake/sglang:latest{policy}
    command: {json.dumps(argv)}
    ports:
      - "{port}:{port}"
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              {gpus}
              capabilities: [gpu]
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path

"""Compose interpolation against the Compose specification's own forms and examples, and the
`.env` file beside a compose file."""

from __future__ import annotations

import pytest

from watcher.config.interpolate import Seen, compose_environ, substitute, walk
from watcher.core.errors import ConfigError

ENV = {"SET": "value", "EMPTY": "", "FOO": "foo"}


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("${SET}", "value"),
        ("$SET", "value"),
        ("$SET-tail", "value-tail"),
        ("${SET}x", "valuex"),
        ("${UNSET}", ""),
        ("$UNSET/x", "/x"),
        # default: `:-` for unset or empty, `-` for unset only
        ("${SET:-d}", "value"),
        ("${EMPTY:-d}", "d"),
        ("${UNSET:-d}", "d"),
        ("${EMPTY-d}", ""),
        ("${UNSET-d}", "d"),
        # alternative: `:+` when set and non-empty, `+` when set
        ("${SET:+alt}", "alt"),
        ("${EMPTY:+alt}", ""),
        ("${UNSET:+alt}", ""),
        ("${EMPTY+alt}", "alt"),
        ("${UNSET+alt}", ""),
        # required, when satisfied
        ("${SET:?err}", "value"),
        ("${EMPTY?err}", ""),
        # the specification's nesting examples
        ("${VARIABLE:-${FOO}}", "foo"),
        ("${VARIABLE:-${FOO:-default}}", "foo"),
        ("${VARIABLE:-${BAR:-default}}", "default"),
        ("${SET:-${UNSET:?never evaluated}}", "value"),
        # the guide's house style
        ("${BIND_HOST:-0.0.0.0}:${ESTATE_PORT:-${PORT:-8020}}:8000", "0.0.0.0:8020:8000"),
        ("${ESTATE_GPUS:-0,1}", "0,1"),
        ("${TEMP:-${TEMPERATURE:-0.6}}", "0.6"),
        ('{"t":${TEMP:-${TEMPERATURE:-0.6}},"k":${TOP_K:-20}}', '{"t":0.6,"k":20}'),
        # `$$` is a literal `$`, never interpolated
        ("$$VAR_NOT_INTERPOLATED_BY_COMPOSE", "$VAR_NOT_INTERPOLATED_BY_COMPOSE"),
        ('"$${_NVLINK_ENABLED:-0}" = "1"', '"${_NVLINK_ENABLED:-0}" = "1"'),
        ("$$$SET", "$value"),
        ("${UNSET:-$$x}", "$x"),
        # a `$` that starts no variable stays
        ("cost $5 and $ alone", "cost $5 and $ alone"),
        ("${UNSET:-a}b}", "ab}"),
    ],
)
def test_substitute_forms(text, want):
    assert substitute(text, ENV) == want


def test_required_and_unset_are_noted():
    seen = Seen()
    out = substitute("${MODEL_DIR:?MODEL_DIR is required}/x:${B?}:${C}:${D:?need $FOO}", ENV, seen)
    assert out == "/x:::"
    assert seen.required == {
        "MODEL_DIR": "MODEL_DIR is required",
        "B": "B is required",
        "D": "need foo",
    }
    assert seen.unset == ["C"]
    seen = Seen()
    substitute("${EMPTY:?must not be empty}", ENV, seen)
    assert seen.required == {"EMPTY": "must not be empty"}
    seen = Seen()
    assert substitute("${VARIABLE?$FOO}", ENV, seen) == "" and seen.required["VARIABLE"] == "foo"


@pytest.mark.parametrize("text", ["${", "${SET", "${1X}", "${VAR/foo/bar}", "${VAR:=x}", "${}"])
def test_malformed_is_an_error(text):
    with pytest.raises(ConfigError, match="invalid interpolation format"):
        substitute(text, ENV)


def test_walk_substitutes_values_not_keys():
    tree = {"${SET}": ["${SET}", 8000, True, {"k": "$FOO"}], "n": None}
    assert walk(tree, ENV, Seen()) == {"${SET}": ["value", 8000, True, {"k": "foo"}], "n": None}


def test_dotenv_beside_the_compose(tmp_path):
    (tmp_path / ".env").write_text(
        "# the guide's defaults\n"
        "export MODEL_DIR=/srv/models\n"
        "PORT=8031  # inline comment\n"
        "ESTATE_PORT=${PORT:-1}\n"
        "LITERAL='${PORT}'\n"
        'QUOTED="a b"\n'
        "FROM_SHELL=${SHELL_ONLY:-none}\n"
    )
    env = compose_environ(tmp_path / "c.yml", {"SHELL_ONLY": "sh", "PORT": "9000"})
    assert env["MODEL_DIR"] == "/srv/models"
    assert env["PORT"] == "9000"  # the environment wins over .env
    assert env["ESTATE_PORT"] == "9000"  # .env values interpolate, the environment first
    assert env["LITERAL"] == "${PORT}"  # single quotes: literal
    assert env["QUOTED"] == "a b" and env["FROM_SHELL"] == "sh"
    assert compose_environ(tmp_path / "none" / "c.yml", {}) == {}


def _docker_compose() -> bool:
    import shutil
    import subprocess

    if not shutil.which("docker"):
        return False
    r = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    return r.returncode == 0


FORMS = [
    "${SET}", "$SET-tail", "${UNSET}", "${SET:-d}", "${EMPTY:-d}", "${EMPTY-d}", "${UNSET-d}",
    "${SET:+alt}", "${EMPTY:+alt}", "${EMPTY+alt}", "${UNSET+alt}", "${VARIABLE:-${FOO:-default}}",
    "${BIND_HOST:-0.0.0.0}:${ESTATE_PORT:-${PORT:-8020}}:8000", "$$NOT_INTERPOLATED", "cost $5",
    "${FROM_DOTENV:-unset}",
]  # fmt: skip


@pytest.mark.skipif(not _docker_compose(), reason="no `docker compose` on this host to compare")
def test_the_reader_agrees_with_docker_compose_config(tmp_path):
    """Where the host has `docker compose`, its `config` is the authority: the same values."""
    import json
    import subprocess

    env_lines = "\n".join(f"      V{i}: {json.dumps(t)}" for i, t in enumerate(FORMS))
    (tmp_path / "compose.yml").write_text(
        f"services:\n  s:\n    image: busybox\n    environment:\n{env_lines}\n"
    )
    (tmp_path / ".env").write_text("FROM_DOTENV=${FOO}-dotenv\n")
    r = subprocess.run(
        ["docker", "compose", "-f", str(tmp_path / "compose.yml"), "config", "--format", "json"],
        capture_output=True, text=True, check=True, cwd=tmp_path,
        env={"PATH": __import__("os").environ["PATH"], **ENV},
    )  # fmt: skip
    theirs = json.loads(r.stdout)["services"]["s"]["environment"]
    environ = compose_environ(tmp_path / "compose.yml", ENV)
    ours = {f"V{i}": substitute(t, environ) for i, t in enumerate(FORMS)}
    # `config` may print a literal `$` re-escaped as `$$`, and an empty value as null
    assert ours == {k: (theirs[k] or "").replace("$$", "$") for k in ours}

"""README.md cannot rot: its set-up commands, every shell command and every Python block run here.

Shell commands run in order in one scratch directory (so `armlab plot results/x` finds the
results an earlier `armlab run --out results/x` wrote), with `examples/` and `data/` linked in,
and `armlab run` at a reduced number of replicas (live runs are one replica already).
`armlab serve` runs until stopped, so here its command line is parsed and its config
validated; the service itself is driven end to end, in real processes, by
tests/live/test_processes.py.  A Python block that talks to a served experiment runs against
a real `armlab serve` started for it.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.config import load_config

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
ML_100K = REPO.parent / "shared" / "data" / "ml-100k"
REDUCED_REPLICAS = "8"
LONG_RUNNING = {"serve"}


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def setup_commands() -> list[str]:
    block = re.search(r"<!-- setup-commands -->\s*```(?:bash|sh)?\n(.*?)```", README, re.S)
    assert block, "README.md must keep its set-up commands block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def shell_commands() -> list[str]:
    setup = set(setup_commands())
    lines = [line.strip() for block in fenced("bash") for line in block.splitlines()]
    return [line for line in lines if line and not line.startswith("#") and line not in setup]


def split_env(line: str) -> tuple[dict[str, str], list[str]]:
    """``A=1 B=2 armlab ...`` -> ({A: 1, B: 2}, [armlab, ...])."""
    argv = shlex.split(line)
    env = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        key, value = argv.pop(0).split("=", 1)
        env[key] = value
    return env, argv


def invoke(args: list[str]) -> str:
    result = CliRunner().invoke(cli, ["--no-plugins", *args], catch_exceptions=False)
    assert result.exit_code == 0, f"armlab {shlex.join(args)} failed:\n{result.output}"
    return result.output


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A user's working directory: the examples and (if present) MovieLens 100K under data/."""
    root = tmp_path_factory.mktemp("readme")
    (root / "examples").symlink_to(REPO / "examples")
    if ML_100K.is_dir():
        (root / "data").mkdir()
        (root / "data" / "ml-100k").symlink_to(ML_100K)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        patch.setenv("XDG_CACHE_HOME", str(root / "cache"))
        yield root


@contextmanager
def _served_example(code: str, workdir: Path, monkeypatch) -> Iterator[str]:
    """A block that talks to `armlab serve` gets a real one: the A/B example at budget 40,
    on a free port that replaces the block's (its only change), with ARMLAB_TOKEN set."""
    if "http://127.0.0.1:8000" not in code:
        yield code
        return
    config = workdir / "ab-readme.toml"
    config.write_text((REPO / "examples/live/ab_service.toml").read_text().replace("budget = 400", "budget = 40"))
    token = "r" * 32
    monkeypatch.setenv("ARMLAB_TOKEN", token)
    server = subprocess.Popen(
        [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "serve", str(config),
         "--journal", str(workdir / "ab-readme.sqlite"), "--port", "0", "--log", os.devnull],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "ARMLAB_TOKEN": token},
    )
    try:
        banner = server.stdout.readline()
        assert "serving" in banner, banner
        yield code.replace("http://127.0.0.1:8000", "http://" + banner.split("http://")[1].split()[0])
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_readme_states_two_setup_commands_and_ci_runs_the_test_one():
    commands = setup_commands()
    assert len(commands) == 2
    assert "armlab run examples/" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (REPO / ".ci/run").read_text()


def test_readme_main_command_runs_at_reduced_scale(workdir):
    env, argv = split_env(setup_commands()[0].split("&&")[-1])
    assert not env and argv[0].endswith("armlab") and argv[1] == "run"
    output = invoke([*argv[1:], "--replicas", "20"])
    assert "error at budget" in output and (workdir / "results" / "quickstart" / "summary.json").is_file()


def test_readme_shows_shell_commands():
    commands = shell_commands()
    assert len(commands) >= 8 and all(split_env(c)[1][0] == "armlab" for c in commands)


@pytest.mark.parametrize("line", shell_commands())
def test_readme_shell_command(line, workdir, monkeypatch):
    env, argv = split_env(line)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    args = argv[1:]
    if any(arg.startswith("data/") for arg in args) or "movielens" in line:
        if not ML_100K.is_dir():
            pytest.skip(f"MovieLens 100K not found at {ML_100K}")
    if args[0] in LONG_RUNNING:
        command = cli.get_command(None, args[0])  # type: ignore[arg-type]
        context = command.make_context(args[0], args[1:])  # parses and type-checks every option
        assert context.params, f"{line!r} parsed to nothing"
        for config in (a for a in args[1:] if a.endswith(".toml")):
            invoke(["validate", config])
        return
    if args[0] == "run" and load_config(args[1]).replicas > int(REDUCED_REPLICAS):
        args = [*args, "--replicas", REDUCED_REPLICAS]
    invoke(args)
    out = next((args[i + 1] for i, a in enumerate(args) if a == "--out"), None)
    if out is not None:  # a plot with several figures writes FILE-<kind>.png
        target = workdir / out
        written = target.exists() or any(target.parent.glob(f"{target.stem}-*{target.suffix}"))
        assert written, f"{line!r} did not write {out}"


@pytest.mark.parametrize("code", fenced("python"), ids=lambda code: code.split("\n", 1)[0][:40])
def test_readme_python_block(code, workdir, monkeypatch):
    namespace: dict = {}
    with _served_example(code, workdir, monkeypatch) as code:
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    if "EpsilonGreedy" in namespace:
        from armlab.testing import check_policy

        check_policy(namespace["EpsilonGreedy"])
        assert namespace["armlab_register_policies"]() == [namespace["EpsilonGreedy"]]

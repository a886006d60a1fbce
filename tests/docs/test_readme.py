"""README.md cannot rot: its set-up commands, every shell command and every Python block run here.

The shell commands are a walk-through of what a user types after a clone.  A scratch
directory gets what a checkout has (the top-level folders the README's configs live in,
copied) and MovieLens 100K under `data/` (copied from this checkout's ``data/ml-100k`` or
``../shared/data/ml-100k``, where present), a fresh virtual environment at the set-up command's `.venv` with armlab installed
editable from this checkout (offline, in seconds: `fresh_venv`), and then every line of every
```bash block runs, in README order, verbatim, each in its own bash session that begins with
the README's own `source .venv/bin/activate`.  The exceptions, each written out below:

- the set-up commands are not run as written: the fixture builds the environment they build,
  and the test command is this suite; the main command's `.venv/bin/armlab run ...` runs as is;
- a run of a config in `LONG_RUNS` (each far over a minute) gets `--replicas` reduced;
- `armlab serve` runs until stopped, so it is started, probed over HTTP with the token of its
  command line, and stopped with SIGTERM, which must end it with status 0;
- `armlab server` too: the lines after it in its block (`armlab experiments ...`) run while it
  runs, then it is stopped the same way.

```text blocks (the Ctrl-C and resume of a long run) are not commands.  Python blocks run in
this process; one that talks to a served experiment runs against a real `armlab serve`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import tomllib
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest

import armlab

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
#: MovieLens 100K: under data/ as the README says, else in the shared folder beside the checkout.
ML_100K = next((p for p in (REPO / "data" / "ml-100k", REPO.parent / "shared" / "data" / "ml-100k") if p.is_dir()),
               REPO.parent / "shared" / "data" / "ml-100k")
REDUCED_REPLICAS = "8"
COMMAND_TIMEOUT_S = 240  # every command not in LONG_RUNS takes well under a minute on 2 cores

# Runs whose configs take far more than a minute as shipped; the walk-through appends
# `--replicas REDUCED_REPLICAS` to their README commands (test_readme_shows_shell_commands
# fails when one of them is no longer in the README, so a renamed config cannot slip through
# at full scale).
LONG_RUNS = {
    # 5000 replicas x 5 values of K x 7 policies at budget 5000: 50 replicas took 22 s with
    # --workers 2 on a 2-core machine, so the shipped 5000 take about half an hour.
    "examples/heterogeneous_variances/fig3_arms.toml",
    # 5000 replicas x 7 budgets up to 10000 x 7 policies on MovieLens: 50 replicas took 20 s,
    # so the shipped 5000 take well over ten minutes (its header's own figures used 500).
    "examples/movielens/fig5_k64.toml",
}


def fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, re.S)


def setup_commands() -> list[str]:
    block = re.search(r"<!-- setup-commands -->\s*```(?:bash|sh)?\n(.*?)```", README, re.S)
    assert block, "README.md must keep its set-up commands block"
    return [line.strip() for line in block.group(1).splitlines() if line.strip() and not line.startswith("#")]


def _commands(block: str) -> list[str]:
    return [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def server_walk() -> tuple[str, list[str]]:
    """The README's `armlab server` line and the lines after it in its block, which talk to it."""
    for block in fenced("bash"):
        lines = _commands(block)
        for at, line in enumerate(lines):
            if split_env(line)[1][1:2] == ["server"]:
                return line, lines[at + 1:]
    raise AssertionError("README.md must keep its `armlab server` walk-through")


def shell_commands() -> list[str]:
    """Every command line of the README's bash blocks but the set-up commands and the lines
    that talk to `armlab server` (run by its walk-through, while it runs)."""
    skip = set(setup_commands()) | set(server_walk()[1])
    return [line for block in fenced("bash") for line in _commands(block) if line not in skip]


def split_env(line: str) -> tuple[dict[str, str], list[str]]:
    """``A=1 B=2 armlab ...`` -> ({A: 1, B: 2}, [armlab, ...])."""
    argv = shlex.split(line)
    env = {}
    while argv and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", argv[0]):
        key, value = argv.pop(0).split("=", 1)
        env[key] = value
    return env, argv


def option(argv: list[str], name: str) -> str | None:
    return next((argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == name), None)


def needs_movielens(line: str) -> bool:
    return "movielens" in line or any(arg.startswith("data/") for arg in split_env(line)[1])


def main_command() -> tuple[str, str, str]:
    """The first set-up command's three parts: make the venv, install armlab, run the quickstart."""
    parts = tuple(part.strip() for part in setup_commands()[0].split("&&"))
    assert len(parts) == 3, parts
    return parts  # type: ignore[return-value]


VENV = re.fullmatch(r"python3 -m venv (\S+)", main_command()[0]).group(1)  # type: ignore[union-attr]
ACTIVATE = f"source {VENV}/bin/activate"


# -- a user's clone: copied folders, a fresh virtual environment ---------------------------------


def _editable_wheel(folder: Path) -> Path:
    """The wheel `pip install -e .` builds here (setuptools' PEP 660 editable wheel for a src
    layout: a .pth that puts src/ on sys.path, and the dist-info with the console script),
    made without the build backend: setuptools before 70.1 needs the `wheel` package to build
    it and Python 3.12's venv has no setuptools at all, so an offline
    `pip install --no-build-isolation -e .` works in some test environments and not others."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, version = project["name"], armlab.__version__
    info = f"{name}-{version}.dist-info"
    groups = {"console_scripts": project.get("scripts", {}), **project.get("entry-points", {})}
    entry_points = "".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in points.items()) + "\n"
        for group, points in groups.items() if points
    )
    files = {
        f"__editable__.{name}-{version}.pth": f"{REPO / 'src'}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: armlab-readme-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/entry_points.txt": entry_points,
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}\n")
    files[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    wheel = folder / f"{name}-{version}-0.editable-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return wheel


def fresh_venv(venv: Path, env: dict[str, str]) -> None:
    """`python3 -m venv VENV && VENV/bin/pip install -e '.[plot,live]'`, offline and in seconds.

    armlab is installed by pip (which writes the `armlab` console script, as for any install)
    from `_editable_wheel`.  Its dependencies are not installed again: a .pth file puts this
    interpreter's packages after the new environment's own (the `test` extra holds the
    `plot`, `live` and `dask` extras), and pip itself comes from there too; only those, not
    the plugins a developer installed beside them (`_outer_packages`).
    """
    if find_spec("pip") is None:
        pytest.skip("the README walk-through installs armlab into a fresh venv with pip, which is missing here")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True, env=env).stdout.strip()
    ours = dict.fromkeys(Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib"))
    view = _outer_packages(venv / "outer-packages", list(ours))
    (Path(site) / "readme-walkthrough-dependencies.pth").write_text(f"{view}\n")
    install = subprocess.run(
        [python, "-m", "pip", "--isolated", "install", "--no-deps", "--no-index", "--no-cache-dir",
         "--disable-pip-version-check", "--quiet", _editable_wheel(venv.parent)],
        check=False, capture_output=True, text=True, env=env,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert (venv / "bin" / "armlab").is_file()


def _outer_packages(view: Path, sites: list[Path]) -> Path:
    """A folder ``view`` of links to the installed packages in ``sites``, less the
    distributions that register armlab plugins.  A plugin installed editable here (as
    `armlab new-plugin` says) keeps its import path in a .pth file, which Python reads only in
    a site directory, not in a folder a .pth names: seen from the fresh environment, its entry
    point would lead to a module that cannot be imported, and armlab would call it broken.
    The walk-through must not depend on what else a developer has installed."""
    view.mkdir()
    for site in sites:
        for entry in sorted(site.iterdir()):
            if not (view / entry.name).exists() and not _registers_armlab_plugins(entry):
                (view / entry.name).symlink_to(entry)
    return view


def _registers_armlab_plugins(entry: Path) -> bool:
    """Whether ``entry`` is the metadata of a distribution with `armlab` entry points."""
    points = entry / "entry_points.txt"
    return entry.suffix == ".dist-info" and points.is_file() and bool(
        re.search(r"^\[armlab\]\s*$", points.read_text(encoding="utf-8"), re.M))


def _user_env(root: Path) -> dict[str, str]:
    """This process's environment as a new shell would see it: outside any virtual environment
    (this one's bin/ off PATH), no PYTHONPATH, no armlab or pip settings, caches in the clone."""
    dropped = {"VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "BASH_ENV", "ENV"}
    env = {key: value for key, value in os.environ.items()
           if key not in dropped and not key.startswith(("ARMLAB_", "PIP_"))}
    if sys.prefix != sys.base_prefix:
        ours = Path(sys.prefix) / "bin"
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != ours)
    env["XDG_CACHE_HOME"] = str(root / "cache")
    return env


def _fail(line: str, status: int | None, out: str, err: str) -> str:
    return (f"README command failed: {line}\nexit status {status}\n"
            f"--- stdout (tail) ---\n{out[-2000:]}\n--- stderr (tail) ---\n{err[-4000:]}")


@dataclass
class Clone:
    root: Path
    env: dict[str, str]
    setup_seconds: float

    def bash(self, line: str, *, activate: bool = True) -> subprocess.CompletedProcess[str]:
        """`line` in a new bash session in the clone (after the README's activation); must exit 0."""
        script = f"{ACTIVATE} && {line}" if activate else line
        shell = subprocess.Popen(["bash", "-c", script], cwd=self.root, env=self.env, stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = shell.communicate(timeout=COMMAND_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(shell.pid, signal.SIGKILL)
            out, err = shell.communicate()
            pytest.fail(f"{line!r} ran over {COMMAND_TIMEOUT_S} s: if it is a long run, add its config to LONG_RUNS\n"
                        + _fail(line, None, out, err))
        assert shell.returncode == 0, _fail(line, shell.returncode, out, err)
        return subprocess.CompletedProcess(script, shell.returncode, out, err)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Clone:
    root = tmp_path_factory.mktemp("clone")
    started = time.perf_counter()
    configs = [a for line in [main_command()[2], *shell_commands()] for a in split_env(line)[1] if a.endswith(".toml")]
    for top in sorted({Path(config).parts[0] for config in configs if (REPO / config).is_file()}):
        shutil.copytree(REPO / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    if ML_100K.is_dir():
        shutil.copytree(ML_100K, root / "data" / "ml-100k")
    env = _user_env(root)
    fresh_venv(root / VENV, env)
    return Clone(root, env, time.perf_counter() - started)


def _get_json(url: str, token: str | None) -> dict:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
    with opener.open(request, timeout=30) as response:
        return json.load(response)


def _start(clone: Clone, line: str) -> tuple[subprocess.Popen[str], str, str, Path]:
    """Start a README line that runs until stopped (`armlab serve`, `armlab server`): the shell,
    the line as run, its banner, its stderr log.

    Port 8000 (the line's default) in use by something else is the one thing retried, on a
    free port (`--port 0`): the line itself is otherwise run as written."""
    for attempt in (line, f"{line} --port 0"):
        # bash forwards SIGTERM to the service and exits with the service's status
        script = f"{ACTIVATE} || exit 1\n{attempt} &\ntrap 'kill -TERM $!' TERM\nwait $!\nwait $!\n"
        log = clone.root / "serve.stderr"
        with log.open("w") as stderr:
            shell = subprocess.Popen(["bash", "-c", script], cwd=clone.root, env=clone.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=stderr, text=True, start_new_session=True)
        pool = ThreadPoolExecutor(1)
        try:
            banner = pool.submit(shell.stdout.readline).result(timeout=60)  # type: ignore[union-attr]
        except FutureTimeout:
            os.killpg(shell.pid, signal.SIGKILL)
            pytest.fail(f"{line!r} printed no banner within 60 s:\n{log.read_text()[-4000:]}")
        finally:
            pool.shutdown(wait=False)
        if banner or "cannot listen on" not in log.read_text() or attempt != line:
            break
        shell.communicate()
    return shell, attempt, banner, log


def _stop(shell: subprocess.Popen[str], line: str, banner: str, log: Path) -> str:
    """Stop a started service with SIGTERM; it must end with status 0.  Its standard output."""
    shell.send_signal(signal.SIGTERM)
    try:
        out, _ = shell.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(shell.pid, signal.SIGKILL)
        out, _ = shell.communicate()
    assert shell.returncode == 0, _fail(line, shell.returncode, banner + out, log.read_text())
    return out


def _serve(clone: Clone, line: str) -> None:
    """Start the README's `armlab serve` line, probe it, stop it with SIGTERM, check its exit."""
    env, argv = split_env(line)
    token = env.get("ARMLAB_TOKEN")
    assert token, f"{line!r}: the README's serve commands carry their token"
    config = next(arg for arg in argv if arg.endswith(".toml"))
    name = tomllib.loads((clone.root / config).read_text(encoding="utf-8"))["name"]
    shell, attempt, banner, log = _start(clone, line)
    try:
        assert "serving" in banner, _fail(attempt, shell.poll(), banner, log.read_text())
        url = "http://" + banner.split("http://")[1].split()[0]
        status = _get_json(f"{url}/status", token)
        assert status["name"] == name and status["state"] in {"running", "in_flight_full"}, status
        with pytest.raises(urllib.error.HTTPError) as refused:
            _get_json(f"{url}/status", None)
        refused.value.close()
        assert refused.value.code == 401  # the token is required
        assert "/status" in _get_json(f"{url}/openapi.json", None)["paths"]
    finally:
        out = _stop(shell, attempt, banner, log)
    final = out.strip().splitlines()[-1]  # the experiment's final state, printed after a graceful stop
    assert "dispatched" in final and "recommendation" in final, out
    assert (clone.root / option(argv, "--journal")).is_file()  # type: ignore[operator]


def _server(clone: Clone, line: str, after: list[str]) -> None:
    """Start the README's `armlab server` line, run the lines after it in its block against it
    (the URL's port changed only when 8000 was taken), and stop it with SIGTERM."""
    shell, attempt, banner, log = _start(clone, line)
    try:
        assert "server on" in banner, _fail(attempt, shell.poll(), banner, log.read_text())
        port = banner.split("http://")[1].split()[0].rsplit(":", 1)[1]
        outputs = [clone.bash(command.replace("127.0.0.1:8000", f"127.0.0.1:{port}")).stdout for command in after]
    finally:
        _stop(shell, attempt, banner, log)
    created = [out for command, out in zip(after, outputs, strict=True) if " experiments create " in command]
    assert created and all("token" in out and "not be shown again" in out for out in created), outputs
    listed = [out for command, out in zip(after, outputs, strict=True) if " experiments list " in command]
    names = [split_env(command)[1][4] for command in after if " experiments create " in command]
    assert listed and all(name in listed[-1] for name in names), outputs


def _check_outputs(clone: Clone, line: str, result: subprocess.CompletedProcess[str]) -> None:
    """What a command says it writes is there."""
    argv = split_env(line)[1]
    out, journal = option(argv, "--out"), option(argv, "--journal")
    if argv[1] == "run" and out is not None:
        summary = json.loads((clone.root / out / "summary.json").read_text())
        assert summary["name"] == tomllib.loads((clone.root / argv[2]).read_text())["name"]
        if "--replicas" in argv:
            assert summary["replicas"] == int(option(argv, "--replicas"))  # type: ignore[arg-type]
        if "--plot" in argv:
            assert list((clone.root / out).glob("*.png")), f"{line!r} drew no figure"
    elif out is not None:  # armlab plot --out FILE writes that file, every figure in it
        assert (clone.root / out).exists(), f"{line!r}: no {out}"
        assert not list((clone.root / out).parent.glob(f"{Path(out).stem}-*")), f"{line!r}: files beside {out}"
    if journal is not None:
        assert (clone.root / journal).is_file()
    if argv[1] == "resume":
        assert "replayed" in result.stdout, result.stdout


# -- the tests ------------------------------------------------------------------------------------


def test_readme_states_two_setup_commands_and_ci_runs_the_test_one():
    commands = setup_commands()
    assert len(commands) == 2
    assert "armlab run examples/" in commands[0] and "pytest" in commands[1]
    assert commands[1] in (REPO / ".ci/run").read_text()


def test_readme_shows_shell_commands():
    commands = shell_commands()
    assert len(commands) >= 8 and all(split_env(c)[1][0] == "armlab" for c in commands)
    # only ```bash blocks are walked through: a command in a block of another shell language would escape it
    assert not re.findall(r"```(?:sh|shell|console|zsh|bash-session)\n", README)
    configs = {arg for line in commands for arg in split_env(line)[1]}
    assert not LONG_RUNS - configs, f"LONG_RUNS names configs no README command runs: {LONG_RUNS - configs}"


@pytest.mark.system
def test_readme_activation_puts_the_fresh_armlab_first(clone):
    """The README: 'activate the environment first in each new shell, `source .venv/bin/activate`,
    or write `.venv/bin/armlab`'; the walk-through does exactly that (and took this long to set up)."""
    assert f"`{ACTIVATE}`" in README and f"`{VENV}/bin/armlab`" in README
    print(f"clone and fresh venv: {clone.setup_seconds:.1f} s")
    found = clone.bash("command -v armlab && python -c 'import armlab; print(armlab.__file__)'").stdout.split()
    assert found == [str(clone.root / VENV / "bin" / "armlab"), str(REPO / "src" / "armlab" / "__init__.py")]
    assert clone.bash(f"{VENV}/bin/armlab --help", activate=False).stdout.startswith("Usage: armlab")


@pytest.mark.system
def test_the_fresh_environment_leaves_out_the_plugins_installed_beside_armlab(clone, tmp_path):
    """A developer's own plugin, installed editable beside armlab, is not part of the walk-through."""
    site = tmp_path / "site-packages"
    for name, points in [("zigzag-0.1.dist-info", "[armlab]\nzigzag = zigzag.plugin\n"),
                         ("tool-1.0.dist-info", "[console_scripts]\ntool = tool:main\n")]:
        (site / name).mkdir(parents=True)
        (site / name / "entry_points.txt").write_text(points, encoding="utf-8")
    (site / "tool").mkdir()
    view = _outer_packages(tmp_path / "view", [site])
    assert sorted(p.name for p in view.iterdir()) == ["tool", "tool-1.0.dist-info"]
    found = clone.bash("python -c \"from importlib.metadata import entry_points; "
                       "print(sorted(e.name for e in entry_points(group='armlab')))\"")
    assert found.stdout.strip() == "[]"


@pytest.mark.system
def test_readme_main_command_runs_verbatim(clone):
    """`.venv/bin/armlab run examples/quickstart.toml --out results/quickstart`, as written:
    the set-up's other two parts made the environment the clone fixture made."""
    _, install, run = main_command()
    assert install.startswith(f"{VENV}/bin/pip install -e ") and run.startswith(f"{VENV}/bin/armlab run ")
    result = clone.bash(run, activate=False)
    assert "error at budget" in result.stdout, result.stdout
    _check_outputs(clone, run, result)


@pytest.mark.parametrize("line", shell_commands(), ids=str)
@pytest.mark.system
def test_readme_shell_command(line, clone):
    """Every line of every ```bash block, in README order, in the activated fresh venv."""
    if needs_movielens(line) and not ML_100K.is_dir():
        pytest.skip(f"MovieLens 100K not found at {ML_100K}")
    argv = split_env(line)[1]
    if argv[1] == "serve":
        _serve(clone, line)
        return
    if argv[1] == "server":
        _server(clone, line, server_walk()[1])
        return
    if argv[1] == "run" and argv[2] in LONG_RUNS:
        line = f"{line} --replicas {REDUCED_REPLICAS}"
    _check_outputs(clone, line, clone.bash(line))


# -- configs --------------------------------------------------------------------------------------


@pytest.mark.parametrize("config", [block for block in fenced("toml") if "[problem]" in block],
                         ids=lambda block: block.split("\n", 1)[0])
@pytest.mark.system
def test_readme_config_runs(config, tmp_path):
    """Every experiment config the README shows (the config reference, several bandits) runs
    as written, at two replicas; a multi-bandit one reports its bandits completed."""
    path = tmp_path / "readme.toml"
    path.write_text(config, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", "--no-plugins", "run", str(path),
         "--replicas", "2"], capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    assert result.returncode == 0, _fail(str(path), result.returncode, result.stdout, result.stderr)
    if "[[bandits]]" in config:
        assert "bandits completed" in result.stdout, result.stdout


# -- Python blocks --------------------------------------------------------------------------------


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


#: The address the README's client examples use; the test serves the A/B example there.
SERVED_URL = "http://127.0.0.1:8000"


@contextmanager
def _served_example(code: str, workdir: Path, monkeypatch) -> Iterator[str]:
    """A block that talks to `armlab serve` gets a real one: the A/B example at budget 40,
    on a free port that replaces the block's (its only change), with ARMLAB_TOKEN set."""
    if SERVED_URL not in code:
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


def python_blocks() -> list:
    """The README's Python blocks; one that talks to `armlab serve` starts it (`system`)."""
    return [pytest.param(code, marks=pytest.mark.system) if SERVED_URL in code else code for code in fenced("python")]


@pytest.mark.parametrize("code", python_blocks(), ids=lambda code: code.split("\n", 1)[0][:40])
def test_readme_python_block(code, workdir, monkeypatch):
    namespace: dict = {}
    with _served_example(code, workdir, monkeypatch) as code:
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own documentation
    if "EpsilonGreedy" in namespace:
        from armlab.testing import check_policy

        check_policy(namespace["EpsilonGreedy"])
        assert namespace["armlab_register_policies"]() == [namespace["EpsilonGreedy"]]

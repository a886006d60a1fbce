"""The plugin kit: the example package, ``armlab new-plugin``, and the written guide."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.errors import ConfigError
from armlab.plugins.manager import get_plugin_manager
from armlab.plugins.registry import Registry
from armlab.templates.scaffold import plugin_names, render_plugin
from armlab.testing import check_policy

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plugin_package"
IGNORED = {"__pycache__", ".pytest_cache", "results"}


def _tree(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*"))
        if p.is_file() and not IGNORED & set(p.relative_to(root).parts) and ".egg-info" not in str(p)
    }


def test_the_example_package_is_the_scaffold_output(tmp_path):
    render_plugin("epsilon-greedy", tmp_path / "pkg")
    assert _tree(tmp_path / "pkg") == _tree(EXAMPLE), (
        "examples/plugin_package differs from `armlab new-plugin epsilon-greedy`: edit the template in "
        "src/armlab/templates/plugin/ and re-render the example"
    )


def test_names_derived_from_the_plugin_name():
    assert plugin_names("epsilon-greedy") == {
        "dist": "armlab-epsilon-greedy", "module": "armlab_epsilon_greedy",
        "plugin": "epsilon-greedy", "cls": "EpsilonGreedy",
    }
    assert plugin_names("ucb_v2")["cls"] == "UcbV2"
    for bad in ("Greedy", "2fast", "my rule", "a--b", ""):
        with pytest.raises(ConfigError, match="is not valid"):
            plugin_names(bad)


def test_new_plugin_command_writes_a_package_that_registers_and_passes_the_checks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["--no-plugins", "new-plugin", "my-rule"])
    assert result.exit_code == 0, result.output
    package = tmp_path / "armlab-my-rule"
    assert (package / "src" / "armlab_my_rule" / "policy.py").is_file()
    assert 'my-rule = "armlab_my_rule"' in (package / "pyproject.toml").read_text(encoding="utf-8")
    monkeypatch.syspath_prepend(str(package / "src"))
    try:
        module = importlib.import_module("armlab_my_rule")
        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(module, name="my-rule")
        cls = Registry(pm).get("policy", "my-rule")
        assert cls is module.MyRule
        check_policy(cls)
    finally:
        for name in [m for m in sys.modules if m.startswith("armlab_my_rule")]:
            del sys.modules[name]
    again = CliRunner().invoke(cli, ["--no-plugins", "new-plugin", "my-rule"])
    assert again.exit_code == 2 and "already exists" in again.output
    bad = CliRunner().invoke(cli, ["--no-plugins", "new-plugin", "My Rule", "--dir", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "is not valid" in bad.output


def test_installed_example_is_listed_with_its_distribution(installed_plugin):
    result = CliRunner().invoke(cli, ["plugins", "--kind", "policy", "--json"])
    assert result.exit_code == 0, result.output
    info = next(i for i in json.loads(result.stdout) if i["name"] == "epsilon-greedy")
    assert info["origin"] == "armlab-epsilon-greedy 0.1.0"
    assert info["params"]["epsilon"]["default"] == 0.1
    hidden = CliRunner().invoke(cli, ["--no-plugins", "plugins", "--kind", "policy", "--json"])
    assert "epsilon-greedy" not in {i["name"] for i in json.loads(hidden.stdout)}


def test_installed_example_runs_its_experiment(installed_plugin, tmp_path):
    args = ["run", str(EXAMPLE / "experiment.toml"), "--replicas", "40", "--out", str(tmp_path)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    greedy = summary["policies"]["epsilon-greedy"]
    assert greedy["plugin"] == "epsilon-greedy" and greedy["params"] == {"epsilon": 0.1}
    regret = greedy["regret_mean"]
    assert all(a <= b for a, b in zip(regret, regret[1:], strict=False))
    # uniform allocation would lose T x mean gap = 2000 x 0.0875 = 175; exploration alone costs
    # about epsilon x 175 = 17.5 (the full-scale run gives 51 +- 2.9)
    assert 17.5 - 4 * greedy["regret_stderr"][-1] < regret[-1] < 120


@pytest.mark.system
def test_a_fresh_interpreter_finds_the_entry_point(installed_plugin):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(installed_plugin["pythonpath"])}
    env.pop("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", None)
    listing = subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", "plugins", "--kind", "policy"],
        capture_output=True, text=True, env=env, timeout=120, check=True,
    ).stdout
    assert "epsilon-greedy" in listing and "[armlab-epsilon-greedy 0.1.0]" in listing
    blocked = subprocess.run(
        [sys.executable, "-c", "from armlab.cli import main; main()", "plugins", "--kind", "policy"],
        capture_output=True, text=True, env={**env, "ARMLAB_BLOCK_PLUGINS": "epsilon-greedy"}, timeout=120,
        check=True,
    ).stdout
    assert "  epsilon-greedy " not in blocked and "blocked by ARMLAB_BLOCK_PLUGINS: epsilon-greedy" in blocked


@pytest.mark.system
def test_the_example_package_tests_pass():
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE / "src"), "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}  # the package's tests need no pytest plugins
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=EXAMPLE, capture_output=True, text=True, env=env, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout


def test_the_guide_shows_the_example_policy_verbatim():
    guide = (REPO / "docs" / "writing-a-policy.md").read_text(encoding="utf-8")
    policy = (EXAMPLE / "src" / "armlab_epsilon_greedy" / "policy.py").read_text(encoding="utf-8")
    assert policy.strip() in guide
    assert len(policy.splitlines()) <= 40

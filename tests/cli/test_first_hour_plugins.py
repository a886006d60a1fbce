"""Plugins and help texts as a newcomer meets them: blocked and clashing plugin names explained,
``armlab plugins`` and ``--help`` in plain, whole sentences, names that would clash refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.plugins.registry import default_registry
from armlab.templates.scaffold import render_plugin

CONFIG = """\
replicas = 2
[problem]
objective = "regret"
budget = 50
[source]
plugin = "bernoulli"
means = [0.6, 0.4]
[[policies]]
plugin = "{policy}"
"""

RST = re.compile(r"``|:(class|func|meth|mod|data|attr|ref):`")


@pytest.fixture
def fresh_registry():
    """Registries built from this test's environment (``ARMLAB_BLOCK_PLUGINS``), none kept after."""
    default_registry.cache_clear()
    yield
    default_registry.cache_clear()


def _config(tmp_path: Path, policy: str) -> str:
    path = tmp_path / f"{policy}.toml"
    path.write_text(CONFIG.format(policy=policy), encoding="utf-8")
    return str(path)


def _invoke(*args: str):
    return CliRunner().invoke(cli, ["--no-plugins", *args])


# -- B29: blocking -------------------------------------------------------------------------------


def test_a_plugin_of_a_blocked_module_is_reported_as_blocked(tmp_path, monkeypatch, fresh_registry):
    monkeypatch.setenv("ARMLAB_BLOCK_PLUGINS", "armlab.plugins.policies")
    result = _invoke("validate", _config(tmp_path, "ucb1"))
    assert result.exit_code == 2, result.output
    assert ("policies[0].plugin: policy plugin 'ucb1' is blocked: it comes from the built-in module "
            "'armlab.plugins.policies', which ARMLAB_BLOCK_PLUGINS blocks; remove 'armlab.plugins.policies' "
            "from ARMLAB_BLOCK_PLUGINS to use it") in result.stderr
    assert _invoke("validate", _config(tmp_path, "klucb")).exit_code == 0  # other modules' plugins stay


def test_blocking_a_plugin_name_instead_of_a_module_is_refused_clearly(tmp_path, monkeypatch, fresh_registry):
    monkeypatch.setenv("ARMLAB_BLOCK_PLUGINS", "ucb1")
    result = _invoke("validate", _config(tmp_path, "klucb"))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "Error: ARMLAB_BLOCK_PLUGINS: 'ucb1' is the name of a policy of 'armlab.plugins.policies', not of a "
        "plugin module, so it blocks nothing; block the module 'armlab.plugins.policies' (all of its plugins) "
        "or leave 'ucb1' out"
    )
    monkeypatch.setenv("ARMLAB_BLOCK_PLUGINS", "armlab.plugins.polices")
    default_registry.cache_clear()
    result = _invoke("validate", _config(tmp_path, "klucb"))
    assert result.exit_code == 2 and "did you mean 'armlab.plugins.policies'?" in result.stderr, result.output


# -- B30: clashing names -------------------------------------------------------------------------


def test_new_plugin_refuses_the_name_of_an_installed_plugin(tmp_path):
    result = _invoke("new-plugin", "ucb1", "--dir", str(tmp_path / "pkg"))
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "Error: 'ucb1' is already the name of a policy (armlab (built-in)); a package registering it again "
        "would, once installed, make 'ucb1' unusable: choose another name, e.g. 'my-ucb1'"
    )
    assert not (tmp_path / "pkg").exists()


@pytest.mark.system
def test_an_installed_plugin_that_reuses_a_builtin_name_leaves_the_other_commands_working(tmp_path, fake_distribution):
    package = tmp_path / "armlab-ucb1"
    render_plugin("ucb1", package)  # what `new-plugin ucb1` wrote before it refused such names
    site = tmp_path / "site"
    fake_distribution(package, site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(package / "src")])}
    env.pop("ARMLAB_DISABLE_PLUGIN_AUTOLOAD", None)

    def armlab(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", "from armlab.cli import main; main()", *args],
                              capture_output=True, text=True, env=env, timeout=120, check=False)

    listing = armlab("plugins", "--kind", "policy")
    assert listing.returncode == 0, listing.stderr
    assert ("unusable, claimed by 2 policy plugins: ucb1 (armlab-ucb1 0.1.0 and armlab (built-in))"
            in listing.stdout)
    assert armlab("validate", _config(tmp_path, "klucb")).returncode == 0
    clash = armlab("validate", _config(tmp_path, "ucb1"))
    assert clash.returncode == 2
    assert ("policies[0].plugin: 2 policy plugins are named 'ucb1': armlab_ucb1.policy.Ucb1 (from "
            "armlab-ucb1 0.1.0) and armlab.plugins.policies.ucb1.UCB1 (from armlab (built-in)); uninstall "
            "armlab-ucb1 or block it with ARMLAB_BLOCK_PLUGINS=ucb1") in clash.stderr, clash.stderr


# -- B16 and summaries: `armlab plugins` -----------------------------------------------------------


def test_plugins_shows_defaults_made_by_a_factory():
    result = _invoke("plugins", "--kind", "source")
    assert result.exit_code == 0, result.output
    assert "PydanticUndefined" not in result.output
    assert "headers (dict, default {}) - extra request headers" in result.output


def test_plugin_summaries_are_whole_plain_sentences():
    result = _invoke("plugins", "--json")
    assert result.exit_code == 0, result.output
    for info in json.loads(result.output):
        assert info["summary"].endswith((".", ")", "?", "!")), info
        assert not RST.search(info["summary"]), info
    apt = next(info for info in json.loads(result.output) if info["name"] == "agapev-topm")
    assert apt["summary"].endswith("as distances to the midpoint of the m-th and (m+1)-th means.")


# -- help texts ----------------------------------------------------------------------------------


def _commands(group: click.Group, ctx: click.Context) -> list[tuple[str, ...]]:
    found = []
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        found.append((name,))
        if isinstance(command, click.Group):
            found += [(name, *sub) for sub in _commands(command, click.Context(command, parent=ctx))]
    return found


def test_help_texts_are_plain_text():
    ctx = click.Context(cli, obj=None)
    ctx.params["no_plugins"] = True
    for path in [(), *_commands(cli, ctx)]:
        result = _invoke(*path, "--help")
        assert result.exit_code == 0, (path, result.output)
        assert not RST.search(result.output), (path, result.output)

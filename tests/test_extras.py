"""Optional dependencies: a missing extra is one line naming the extra and how to install it."""

from __future__ import annotations

import sys

from click.testing import CliRunner

from armlab.cli import cli

REPO_QUICKSTART = "examples/quickstart.toml"


def _invoke(args, monkeypatch, hidden):
    for module in hidden:  # None in sys.modules makes `import module` fail
        monkeypatch.setitem(sys.modules, module, None)
    return CliRunner().invoke(cli, ["--no-plugins", *args])


def test_serve_without_the_live_extra_says_how_to_install_it(monkeypatch, tmp_path):
    result = _invoke(["serve", "examples/live/ab_service.toml", "--journal", str(tmp_path / "j.sqlite"),
                      "--insecure"], monkeypatch, ["uvicorn"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "armlab serve needs uvicorn, part of armlab's 'live' extra" in result.output
    assert "pip install -e '.[live]'" in result.output and not (tmp_path / "j.sqlite").exists()


def test_plot_without_the_plot_extra_says_how_to_install_it(monkeypatch, tmp_path):
    out = tmp_path / "run"
    assert CliRunner().invoke(cli, ["--no-plugins", "run", REPO_QUICKSTART, "--replicas", "5",
                                    "--out", str(out)]).exit_code == 0
    result = _invoke(["plot", str(out)], monkeypatch, ["matplotlib", "matplotlib.figure"])
    assert result.exit_code == 2 and "plotting needs matplotlib, part of armlab's 'plot' extra" in result.output

"""Figures: which kinds a summary supports, what each draws, and the files written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from matplotlib.collections import PolyCollection

from armlab import run_experiment
from armlab.cli import cli
from armlab.errors import ArmlabError
from armlab.plots import load_summary, plot_summary, save_figures
from armlab.plots.kinds import applicable_kinds

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


def _bands(ax) -> int:
    return sum(isinstance(c, PolyCollection) for c in ax.collections)


def test_error_vs_time_draws_one_line_and_band_per_policy_in_percent(single_run):
    summary = single_run(
        sh={"error_rate": [0.5, 0.25, 0.1], "error_stderr": [0.05, 0.04, 0.03]},
        unif={"error_rate": [0.6, 0.4, 0.3], "error_stderr": [0.05, 0.05, 0.04]},
    )
    figures = plot_summary(summary)
    assert list(figures) == ["error-vs-time"]
    (ax,) = _axes(figures["error-vs-time"])
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["sh", "unif"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["sh", "unif"]
    np.testing.assert_allclose(lines[0].get_xdata(), [10, 20, 30])
    np.testing.assert_allclose(lines[0].get_ydata(), [50, 25, 10])
    assert _bands(ax) == 2
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(10 - 3) and band[:, 1].max() == pytest.approx(50 + 5)
    assert ax.get_xlabel() == "trials t" and ax.get_ylabel() == "error (%)"
    assert ax.get_xscale() == "linear" and ax.get_yscale() == "linear"


def test_regret_with_one_replica_has_no_band(single_run):
    summary = single_run("regret", ucb1={"regret_mean": [1.0, 2.0, 2.5], "regret_stderr": [None] * 3})
    (ax,) = _axes(plot_summary(summary)["regret-vs-time"])
    assert len(ax.get_lines()) == 1 and _bands(ax) == 0
    assert ax.get_ylabel() == "cumulative regret"


def test_metric_keys_of_the_observers_give_their_own_figures(single_run):
    summary = single_run(
        "top-m",
        bayes={"error_rate": [0.3, 0.2, 0.1], "error_stderr": [0.1] * 3,
               "confidence_mean": [0.5, 0.8, 0.95], "confidence_stderr": [0.02] * 3,
               "bandits_completed_mean": [0.0, 1.5, 4.0], "bandits_completed_stderr": [0.0, 0.2, 0.3]},
        pac={"error_rate": [0.4, 0.3, 0.2], "error_stderr": [0.1] * 3,
             "confidence_mean": [0.4, 0.6, 0.9], "confidence_stderr": [0.02] * 3},
    )
    figures = plot_summary(summary)
    assert list(figures) == ["error-vs-time", "confidence-vs-time", "completed-vs-time"]
    (conf,) = _axes(figures["confidence-vs-time"])
    assert [line.get_label() for line in conf.get_lines()] == ["bayes", "pac"]
    np.testing.assert_allclose(conf.get_lines()[1].get_ydata(), [0.4, 0.6, 0.9])
    (done,) = _axes(figures["completed-vs-time"])
    assert [line.get_label() for line in done.get_lines()] == ["bayes"]
    assert done.get_ylabel() == "bandits completed"


def test_budget_sweep_draws_error_vs_budget_and_a_panel_per_run(single_run, sweep_summary):
    runs = [
        single_run(checkpoints=(50, 100), sh={"error_rate": [0.6, 0.4], "error_stderr": [0.05, 0.05]},
                   unif={"error_rate": [0.7, 0.5], "error_stderr": [0.05, 0.05]}),
        single_run(checkpoints=(100, 200), sh={"error_rate": [0.4, 0.2], "error_stderr": [0.04, 0.04]},
                   unif={"error_rate": [0.5, 0.3], "error_stderr": [0.05, 0.05]}),
    ]
    summary = sweep_summary("problem.budget", [100, 200], runs)
    figures = plot_summary(summary)
    assert list(figures) == ["error-vs-time", "error-vs-sweep"]
    panels = _axes(figures["error-vs-time"])
    assert [ax.get_title() for ax in panels] == ["problem.budget = 100", "problem.budget = 200"]
    np.testing.assert_allclose(panels[1].get_lines()[0].get_xdata(), [100, 200])
    (ax,) = _axes(figures["error-vs-sweep"])
    assert ax.get_xlabel() == "budget n (trials)" and ax.get_ylabel() == "error (%)"
    sh, unif = ax.get_lines()
    np.testing.assert_allclose(sh.get_xdata(), [100, 200])
    np.testing.assert_allclose(sh.get_ydata(), [40, 20])
    np.testing.assert_allclose(unif.get_ydata(), [50, 30])
    assert _bands(ax) == 2


def test_arm_count_sweep_draws_median_completion_time_and_regret_at_t(single_run, sweep_summary):
    runs = [
        single_run("regret", checkpoints=(100,), bayes={"regret_mean": [float(k)], "regret_stderr": [1.0],
                                                        "completion_time_median": 10.0 * k})
        for k in (5, 10, 20)
    ]
    summary = sweep_summary("source.n_arms", [5, 10, 20], runs)
    figures = plot_summary(summary)
    assert set(figures) == {"regret-vs-time", "regret-vs-sweep", "completion-vs-sweep"}
    (ax,) = _axes(figures["completion-vs-sweep"])
    assert ax.get_xlabel() == "number of arms K"
    assert ax.get_ylabel() == "median completion time (trials)"
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [50, 100, 200])
    assert _bands(ax) == 0  # the median comes without a standard error
    (regret,) = _axes(figures["regret-vs-sweep"])
    np.testing.assert_allclose(regret.get_lines()[0].get_ydata(), [5, 10, 20])


def test_stopping_time_and_non_numeric_sweep_values(single_run, sweep_summary):
    means = [[0.5, 0.4], [0.5, 0.45]]
    runs = [
        single_run(lucb={"error_rate": [0.1] * 3, "error_stderr": [0.01] * 3,
                         "stopping_time_mean": t, "stopping_time_stderr": 2.0})
        for t in (120.0, 480.0)
    ]
    summary = sweep_summary("source.means", means, runs)
    (ax,) = _axes(plot_summary(summary, ["stopping-vs-sweep"])["stopping-vs-sweep"])
    assert ax.get_xlabel() == "source.means"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["[0.5, 0.4]", "[0.5, 0.45]"]
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), [120, 480])
    assert _bands(ax) == 1


def test_log_scales_on_request(single_run):
    summary = single_run("regret", a={"regret_mean": [1.0, 2.0, 3.0], "regret_stderr": [0.1] * 3})
    (ax,) = _axes(plot_summary(summary, logx=True, logy=True)["regret-vs-time"])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_nothing_to_plot_and_malformed_summaries_are_clear_errors(single_run):
    live = single_run(a={"trials": 10, "failed": 0, "recommendation": 1})
    with pytest.raises(ArmlabError, match="nothing to plot"):
        plot_summary(live)
    with pytest.raises(ArmlabError, match="unknown figure kind 'errors'"):
        plot_summary(live, ["errors"])
    bad = single_run(a={"error_rate": [0.1, 0.2], "error_stderr": [0.1, 0.1]})
    with pytest.raises(ArmlabError, match="'error_rate' has 2 values but the summary has 3 checkpoints"):
        plot_summary(bad)


def test_applicable_kinds_follow_the_keys_present(single_run):
    summary = single_run(a={"error_rate": [0.1] * 3, "error_stderr": [0.0] * 3, "completion_time_median": 5.0})
    assert [k.name for k in applicable_kinds(summary)] == ["error-vs-time"]  # sweep kinds need a sweep


def _png_height(path: Path) -> int:
    """The pixel height in a PNG file's header (IHDR)."""
    return int.from_bytes(path.read_bytes()[20:24], "big")


def test_save_figures_writes_the_file_it_is_given_and_names_files_in_a_directory_by_kind(tmp_path, single_run):
    summary = single_run(
        a={"error_rate": [0.3, 0.2, 0.1], "error_stderr": [0.1] * 3, "confidence_mean": [0.5, 0.7, 0.9]}
    )
    paths = save_figures(summary, tmp_path / "fig.png")
    assert paths == [tmp_path / "fig.png"] and sorted(tmp_path.iterdir()) == paths  # both figures, one file
    (one,) = save_figures(summary, tmp_path / "one.png", ["error-vs-time"])
    assert paths[0].read_bytes().startswith(PNG_MAGIC)
    assert _png_height(paths[0]) == 2 * _png_height(one)  # one figure above the other
    (svg,) = save_figures(summary, tmp_path / "one.svg", ["confidence-vs-time"])
    assert svg.name == "one.svg" and b"<svg" in svg.read_bytes()[:400]
    assert [p.name for p in save_figures(summary, tmp_path / "dir")] == ["error-vs-time.png", "confidence-vs-time.png"]
    with pytest.raises(ArmlabError, match="use a directory or a .png"):
        save_figures(summary, tmp_path / "fig.jpeg")


def test_plot_command_draws_a_real_run(tmp_path, make_config, registry):
    config = make_config(problem={"objective": "regret", "budget": 300}, replicas=8, checkpoint_every=50,
                         policies=[{"plugin": "ucb1"}, {"plugin": "uniform", "label": "round robin"}])
    summary = run_experiment(config, out_dir=tmp_path, registry=registry)
    result = CliRunner().invoke(cli, ["--no-plugins", "plot", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(tmp_path / "regret-vs-time.png")
    assert (tmp_path / "regret-vs-time.png").read_bytes().startswith(PNG_MAGIC)
    (ax,) = _axes(plot_summary(load_summary(tmp_path / "summary.json"))["regret-vs-time"])
    assert [line.get_label() for line in ax.get_lines()] == ["ucb1", "round robin"]
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), summary["policies"]["round robin"]["regret_mean"])


def test_plot_command_reports_bad_input(tmp_path):
    (tmp_path / "summary.json").write_text(json.dumps({"name": "x", "policies": {}}), encoding="utf-8")
    result = CliRunner().invoke(cli, ["--no-plugins", "plot", str(tmp_path), "--out", str(tmp_path / "f.png")])
    assert result.exit_code == 2 and "nothing to plot" in result.output
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    result = CliRunner().invoke(cli, ["--no-plugins", "plot", str(tmp_path / "broken.json")])
    assert result.exit_code == 2 and "not a JSON summary" in result.output


def test_a_real_arm_count_sweep_with_the_confidence_metric(tmp_path, registry):
    config = tmp_path / "sweep.toml"
    config.write_text(
        'name = "k-sweep"\nreplicas = 10\ncheckpoint_every = 100\n'
        '[problem]\nobjective = "best-arm"\nbudget = 300\n'
        '[source]\nplugin = "random-bernoulli"\nn_arms = 3\n'
        '[[policies]]\nplugin = "ucb1"\n[[policies]]\nplugin = "uniform"\n'
        '[metrics]\nconfidence = true\nconfidence_hold = 10\n'
        '[sweep]\nparameter = "source.n_arms"\nvalues = [3, 5]\n',
        encoding="utf-8",
    )
    summary = run_experiment(config, registry=registry)
    figures = plot_summary(summary)
    assert list(figures) == ["error-vs-time", "confidence-vs-time", "error-vs-sweep", "completion-vs-sweep"]
    assert [ax.get_title() for ax in _axes(figures["confidence-vs-time"])] == ["source.n_arms = 3", "source.n_arms = 5"]
    (ax,) = _axes(figures["completion-vs-sweep"])
    assert ax.get_xlabel() == "number of arms K"
    ucb1 = ax.get_lines()[0]
    np.testing.assert_allclose(ucb1.get_xdata(), [3, 5])
    np.testing.assert_allclose(
        ucb1.get_ydata(), [run["policies"]["ucb1"]["completion_time_median"] for run in summary["runs"]]
    )


def test_without_matplotlib_the_error_says_what_to_install(monkeypatch, single_run):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import now fails
    summary = single_run("regret", a={"regret_mean": [1.0, 2.0, 3.0], "regret_stderr": [0.1] * 3})
    with pytest.raises(ArmlabError, match=r"pip install -e '\.\[plot\]'"):
        plot_summary(summary)

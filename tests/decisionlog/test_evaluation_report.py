"""``armlab report`` of an offline evaluation (``armlab evaluate --out``), read in a real
headless browser: the estimates as a table, one dot-and-interval panel per estimator."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from armlab.cli import cli
from armlab.config import validate_config
from armlab.orchestrator.live.session import LiveSession

MEANS = (0.2, 0.5, 0.7)


@pytest.fixture
def evaluated(tmp_path, registry):
    """A floored UCB1 log of 300 trials on three arms, evaluated for two policies into a directory."""
    journal = tmp_path / "log.sqlite"
    config = validate_config({
        "name": "evaluated", "seed": 5, "exploration_floor": 0.2, "problem": {"objective": "regret", "budget": 300},
        "source": {"plugin": "external", "arms": 3, "reward_min": 0, "reward_max": 1},
        "policies": [{"plugin": "ucb1"}],
    })
    session = LiveSession.open(journal=journal, config=config, registry=registry)
    draws = np.random.default_rng(1).random(300)
    for draw in draws:
        trial = session.experiment.ask()
        session.experiment.tell(trial.id, float(draw < MEANS[trial.arm]))
    session.close()
    result = CliRunner().invoke(cli, ["--no-plugins", "evaluate", str(journal), "--policy", "thompson",
                                      "--policy", "uniform", "--out", str(tmp_path / "eval")])
    assert result.exit_code == 0, result.output
    return tmp_path / "eval"


@pytest.mark.system
async def test_the_report_of_an_evaluation_shows_its_table_and_figure(evaluated, browser):
    result = CliRunner().invoke(cli, ["--no-plugins", "report", str(evaluated)])
    assert result.exit_code == 0, result.output
    path = evaluated / "report.html"
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"<script|src=\"http|href=\"http", text)  # self-contained: nothing to fetch
    document = json.loads((evaluated / "evaluation.json").read_text())

    page = await browser.new_page()
    await page.goto(path.as_uri())
    assert (await page.title()).startswith("offline evaluation of ")
    assert "clipped to the reward range [0, 1]" in await page.locator("p.note").first.inner_text()
    rows = await page.locator("table tbody tr").all_inner_texts()
    assert len(rows) == len(document["results"]) == 10
    for row, result in zip(rows, document["results"], strict=True):
        cells = row.split("\t")
        assert cells[:2] == [result["policy"], result["estimator"]]
        if result["estimate"] is None:
            assert "does not apply" in cells[-1]
        else:
            low, high = result["interval"]
            assert cells[2:5] == [f"{result['estimate']:.4f}", f"{result['stderr']:.4f}", f"[{low:.4f}, {high:.4f}]"]
    image = page.locator("figure img")
    assert await image.count() == 1
    assert await image.evaluate("img => img.complete && img.naturalWidth > 300")  # a real, decoded PNG
    await page.close()


def test_a_single_evaluation_file_is_reported_next_to_it(evaluated, tmp_path):
    target = tmp_path / "one.json"
    target.write_text((evaluated / "evaluation.json").read_text())
    result = CliRunner().invoke(cli, ["--no-plugins", "report", str(target)])
    assert result.exit_code == 0, result.output
    assert "<h2>Estimates</h2>" in (tmp_path / "report.html").read_text(encoding="utf-8")


def test_a_truncated_evaluation_is_refused_with_a_fix(tmp_path):
    (tmp_path / "evaluation.json").write_text('{"kind": "armlab offline evaluation", "log": "x"}')
    result = CliRunner().invoke(cli, ["--no-plugins", "report", str(tmp_path)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "without trials, results" in result.output and "armlab evaluate" in result.output

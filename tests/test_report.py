"""``armlab report``: one self-contained HTML file, read in a real headless browser."""

from __future__ import annotations

import pytest

import json
import re

from click.testing import CliRunner

from armlab import run_experiment
from armlab.cli import cli
from armlab.config import validate_config

EXPERIMENT = {
    "name": "report-test", "seed": 4, "replicas": 40, "checkpoints": [100, 200],
    "problem": {"objective": "regret", "budget": 200},
    "source": {"plugin": "bernoulli", "means": [0.6, 0.4, 0.3]},
    "policies": [{"plugin": "ucb1"}, {"plugin": "uniform"}],
}


@pytest.mark.system
async def test_the_report_shows_results_comparisons_figures_and_config(tmp_path, registry, browser):
    run_experiment(validate_config(EXPERIMENT), registry=registry, out_dir=tmp_path / "run")
    result = CliRunner().invoke(cli, ["--no-plugins", "report", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    path = tmp_path / "run" / "report.html"
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"<script|src=\"http|href=\"http", text)  # self-contained: nothing to fetch
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())

    page = await browser.new_page()
    await page.goto(path.as_uri())
    assert await page.title() == "report-test: armlab report"
    rows = await page.locator("table").first.locator("tbody tr").all_inner_texts()
    ucb1 = summary["policies"]["ucb1"]["regret_mean"][-1]
    assert any(row.startswith("ucb1") and f"{ucb1:.4g}" in row for row in rows)
    comparison = await page.locator("table").nth(1).locator("tbody tr").first.inner_text()
    pair = summary["comparisons"]["pairs"][0]
    assert "ucb1 - uniform" in comparison and f"{pair['difference']:.4g}" in comparison
    images = page.locator("figure img")
    assert await images.count() >= 1
    assert await images.first.evaluate("img => img.complete && img.naturalWidth > 100")  # a real, decoded PNG
    assert '"name": "report-test"' in await page.locator("pre").first.inner_text()
    await page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    await page.close()


def test_report_refuses_what_is_not_a_summary(tmp_path):
    (tmp_path / "fake.json").write_text('{"hello": 1}')
    result = CliRunner().invoke(cli, ["--no-plugins", "report", str(tmp_path / "fake.json")])
    assert result.exit_code == 2 and "Traceback" not in result.output and "summary" in result.output

"""The safeguards on the dashboard, in a real headless Chromium against a real `armlab serve`:
anytime-valid intervals labelled beside the fixed-sample ones, the attrition banner once the
check fires, and a guardrail retirement with its evidence (issue 32)."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import live_toml
from tests.service.test_dashboard import AUTH, TOKEN, WAIT_MS, open_page, serve, sign_in  # noqa: F401 (fixture)

try:
    from playwright.async_api import expect
except ImportError:  # the `browser` fixture (tests/conftest.py) skips and says how to install it
    pass

pytestmark = pytest.mark.system

GUARDED = live_toml(name="guarded-checkout", seed=14, problem={"budget": 3000},
                    source={"arms": ["control", "one-page", "express"]}, feedback={"in_flight": 60},
                    guardrails=[{"metric": "latency_ms", "max": 300, "range": [0, 1000]}],
                    stopping={"rule": "anytime", "delta": 0.05}, policies=[{"plugin": "uniform"}])


def _interval_text(interval: list[float] | None) -> str:
    return "—" if interval is None else f"{interval[0]:.3f} – {interval[1]:.3f}"


async def _drive(client: httpx.AsyncClient) -> dict:
    """Control is slow (900 ms, the guardrail retires it); one-page's trials are all abandoned
    (the attrition check fires); every reported trial converts every other time, so the anytime
stopping rule has nothing to find.  Until both safeguards fired."""
    for _ in range(40):
        trials = (await client.post("/ask/batch", json={"count": 30})).json()["trials"]
        reports = []
        for trial in trials:
            if trial["arm"] == 1:
                await client.post("/abandon", json={"trial_id": trial["trial_id"], "reason": "user left"})
            else:
                reports.append({"trial_id": trial["trial_id"], "reward": trial["trial_id"] % 2,
                                "metrics": {"latency_ms": 900 if trial["arm"] == 0 else 120}})
        assert (await client.post("/tell/batch", json={"reports": reports})).status_code == 200
        status = (await client.get("/status")).json()
        if status["bandits"][0]["retired"] and status["checks"]["attrition"]["flagged"]:
            return status
    raise AssertionError(f"the safeguards did not fire: {status}")


@pytest.mark.timeout(180)
async def test_dashboard_shows_anytime_intervals_attrition_and_a_guardrail_retirement(browser, serve, tmp_path):
    service = await serve(GUARDED)
    page, errors = await open_page(browser, service.url)
    await sign_in(page, TOKEN)
    await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)
    await expect(page.get_by_test_id("attrition")).to_be_hidden()
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        status = await _drive(client)
    bandit = status["bandits"][0]
    panel = page.get_by_test_id("bandit-panel")
    for header, name in (("fixed-sample-header", "95% interval fixed-sample: valid only at one pre-planned look"),
                         ("anytime-header", "Anytime-valid interval valid at every look, all arms at once")):
        await expect(panel.get_by_test_id(header)).to_have_accessible_name(name)
    for header in ("fixed-sample-header", "anytime-header"):  # not clipped by the table's scroll box
        box, wrap = await panel.get_by_test_id(header).bounding_box(), await panel.locator(".table-wrap").bounding_box()
        assert box["x"] + box["width"] <= wrap["x"] + wrap["width"] + 1, header
    await expect(panel.get_by_test_id("arm-pulls")).to_have_text([str(n) for n in bandit["counts"]], timeout=WAIT_MS)
    await expect(panel.get_by_test_id("arm-anytime-interval")).to_have_text(
        [_interval_text(i) for i in bandit["anytime_intervals"]], timeout=WAIT_MS)
    await expect(panel.get_by_test_id("arm-interval")).to_have_text(
        [_interval_text(i) for i in bandit["intervals"]])

    attrition = status["checks"]["attrition"]
    banner = page.get_by_test_id("attrition")
    await expect(banner).to_be_visible(timeout=WAIT_MS)
    await expect(banner).to_contain_text("Attrition check: the share of trials that come back differs across arms")
    await expect(banner).to_contain_text(f", threshold {attrition['threshold']}); reported per arm ")
    assert "p = 0.000," not in await banner.inner_text()  # a tiny p-value is written out, not rounded to 0

    evidence = bandit["guardrail_retirements"][0]
    retirements = panel.get_by_test_id("guardrail-retirements")
    await expect(retirements).to_be_visible(timeout=WAIT_MS)
    await expect(retirements.locator("li")).to_have_count(1)
    await expect(retirements).to_contain_text(
        "control retired by the latency_ms guardrail: its mean lies in ")
    await expect(retirements).to_contain_text(f"after {evidence['n']} reports, beyond max 300 (δ = 0.05)")
    await expect(panel.locator("tr.retired").get_by_test_id("arm-name")).to_have_text(["control"])
    retired_event = page.get_by_test_id("events").locator("li[data-kind=arm_retired]")
    await expect(retired_event).to_contain_text("latency_ms guardrail: mean in ")  # the evidence in words
    await expect(retired_event).not_to_contain_text("{")

    await page.screenshot(path=tmp_path / "dashboard-safeguards.png", full_page=True)
    assert errors == []

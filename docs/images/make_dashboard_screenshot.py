"""Make docs/images/dashboard.png, the README's picture of the dashboard.

Serves a four-variant landing-page test with ``armlab serve``, opens the dashboard in headless
Chromium (Debian's ``chromium``, driven by Playwright's Python client), signs in, and then
drives 300 simulated visitors through the HTTP API while the page watches, so the chart grows
from the event stream as it would in a real run; a few trials are left in flight.

    .venv/bin/python docs/images/make_dashboard_screenshot.py [OUTPUT.png]
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import httpx
from playwright.async_api import async_playwright, expect

CONFIG = textwrap.dedent("""
    name = "landing-page"
    seed = 5

    [problem]
    objective = "best-arm"
    budget = 1000

    [source]
    plugin = "external"
    arms = ["control", "short-form", "video-hero", "testimonials"]
    reward_min = 0
    reward_max = 1

    [feedback]
    in_flight = 8
    timeout = 600

    [[policies]]
    plugin = "ucb1"
""")
RATES = (0.30, 0.42, 0.55, 0.47)  # the simulated visitors' conversion rates per variant
VISITORS = 300
LEFT_PENDING = 3
OUTPUT = Path(__file__).with_name("dashboard.png")


def main(output: Path) -> None:
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp, "landing.toml")
        config.write_text(CONFIG)
        server = subprocess.Popen(
            [sys.executable, "-c", "from armlab.cli import main; main()", "serve", str(config),
             "--journal", str(Path(tmp, "landing.sqlite")), "--port", "0", "--log", str(Path(tmp, "log.jsonl"))],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "ARMLAB_TOKEN": token},
        )
        try:
            banner = server.stdout.readline()
            url = banner.split("on ", 1)[1].split()[0]
            asyncio.run(shoot(url, token, output))
        finally:
            server.terminate()
            server.communicate(timeout=30)


async def shoot(url: str, token: str, output: Path) -> None:
    rng = random.Random(1)
    async with async_playwright() as playwright, httpx.AsyncClient(
        base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as client:
        browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium")
        page = await browser.new_page(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
        await page.goto(url)
        await page.get_by_test_id("token-input").fill(token)
        await page.get_by_test_id("login-submit").click()
        await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=20_000)
        for _ in range(VISITORS):
            trial = (await client.post("/ask", json={})).json()
            reward = float(rng.random() < RATES[trial["arm"]])
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
        for _ in range(LEFT_PENDING):
            await client.post("/ask", json={})
        await expect(page.get_by_test_id("chart")).to_have_attribute("data-observed", str(VISITORS), timeout=20_000)
        await expect(page.get_by_test_id("in-flight")).to_have_text(f"{LEFT_PENDING} / 8", timeout=20_000)
        await page.wait_for_timeout(1500)  # the "oldest pending" age ticks past zero
        await page.screenshot(path=output, full_page=True)
        await browser.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)

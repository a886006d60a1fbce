"""The web dashboard of ``armlab serve``, checked in a real headless Chromium.

A real ``armlab serve`` process runs the experiment; trials go through the HTTP API with
httpx, and what the page shows (arms tables, recommendations, progress, chart, events) is
compared with ``/status``.  The browser is Debian's ``chromium`` driven by Playwright's
Python client (nothing is downloaded at run time); without them the browser tests skip.
"""

from __future__ import annotations

import re
import textwrap

import anyio
import httpx
import pytest

from armlab.orchestrator.live.session import LiveSession
from armlab.service.app import create_app

try:
    from playwright.async_api import Browser, Locator, Page, expect
except ImportError:  # the `browser` fixture (tests/conftest.py) skips and says how to install it
    pass

TOKEN = "p" * 32  # the token live.serve starts the service with
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WAIT_MS = 20_000  # bound on every wait for the page

AB_TEST = textwrap.dedent("""
    name = "checkout-ab"
    seed = 3

    [problem]
    objective = "best-arm"
    budget = 40

    [source]
    plugin = "external"
    arms = ["control", "one-page", "express"]
    reward_min = 0
    reward_max = 1

    [feedback]
    in_flight = 4

    [[policies]]
    plugin = "ucb1"
""")

THREE_TESTS = textwrap.dedent("""
    name = "three-tests"
    seed = 21

    [problem]
    objective = "best-arm"
    budget = 60

    [[bandits]]
    label = "checkout"
    source = {plugin = "external", arms = ["one-page", "two-step"], reward_min = 0, reward_max = 1}

    [[bandits]]
    label = "banner"
    source = {plugin = "external", arms = ["red", "green", "blue"], reward_min = 0, reward_max = 1}

    [[bandits]]
    label = "email"
    source = {plugin = "external", arms = ["short", "long"], reward_min = 0, reward_max = 1}

    [allocator]
    plugin = "gcp-bayes"
    warmup_per_arm = 2

    [feedback]
    in_flight = 8
    timeout = 1.0

    [[policies]]
    plugin = "bayes-topm"
    warmup_per_arm = 2
""")


STOPS = textwrap.dedent("""
    name = "stops"
    seed = 6

    [problem]
    objective = "best-arm"
    budget = 3000
    delta = 0.1

    [source]
    plugin = "external"
    arms = ["A", "B"]
    reward_min = 0
    reward_max = 1

    [[policies]]
    plugin = "lucb1"
""")

MID_RUN = textwrap.dedent("""
    name = "mid-run"
    seed = 8

    [problem]
    objective = "best-arm"
    budget = 400

    [source]
    plugin = "external"
    arms = ["red", "green", "blue"]
    reward_min = 0
    reward_max = 1

    [feedback]
    in_flight = 4
    timeout = 1.0

    [[policies]]
    plugin = "thompson"
""")


@pytest.fixture
async def serve(tmp_path, live):
    """Start ``armlab serve`` on a config text (again: resumed from its journal); stopped after the test."""
    services = []

    async def start(config_text: str, port: int = 0):
        config = tmp_path / "experiment.toml"
        config.write_text(config_text)
        services.append(await live.serve(config, tmp_path / "experiment.sqlite", port).started())
        return services[-1]

    yield start
    for service in services:
        if service.process.poll() is None:
            service.stop()


async def open_page(browser: Browser, url: str) -> tuple[Page, list[str]]:
    """A new page at ``url`` and the list its uncaught script errors go to."""
    page = await browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(url)
    return page, errors


async def sign_in(page: Page, token: str) -> None:
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("login-submit").click()


async def assert_panel_shows(panel: Locator, bandit: dict) -> None:
    """The panel's arms table and recommendation say what ``bandit`` (from /status) says."""
    names = bandit["arm_names"]
    assert await panel.get_by_test_id("arm-name").all_inner_texts() == names
    assert await panel.get_by_test_id("arm-pulls").all_inner_texts() == [str(n) for n in bandit["counts"]]
    assert await panel.get_by_test_id("arm-pending").all_inner_texts() == [str(n) for n in bandit["pending"]]
    shown_means = await panel.get_by_test_id("arm-mean").all_inner_texts()
    for shown, count, mean in zip(shown_means, bandit["counts"], bandit["means"], strict=True):
        if count:  # toFixed and Python's format may round a last-digit tie differently
            assert abs(float(shown) - mean) <= 5e-4 + 1e-12, (shown, mean)
        else:
            assert shown == "—"
    recommended = bandit["recommendation"]
    recommended = [] if recommended is None else recommended if isinstance(recommended, list) else [recommended]
    await expect(panel.get_by_test_id("recommendation")).to_have_text(
        ", ".join(names[arm] for arm in recommended) or "none yet")
    highlighted = panel.locator("tr.recommended").get_by_test_id("arm-name")
    assert await highlighted.all_inner_texts() == [names[arm] for arm in recommended]


async def test_dashboard_files_need_no_token_and_data_does(tmp_path, live, registry):
    session = LiveSession.open(journal=tmp_path / "j.sqlite", config=live.config(), registry=registry)
    try:
        app = create_app(session, token=TOKEN)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://armlab.test") as client:
            root = await client.get("/")
            page = await client.get("/dashboard/")
            script = await client.get("/dashboard/app.js")
            status = await client.get("/status")
            schema = (await client.get("/openapi.json")).json()
    finally:
        session.close()
    assert root.status_code == 307 and root.headers["location"] == "dashboard/"
    assert page.status_code == 200 and 'data-testid="login-form"' in page.text
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "sessionStorage" in script.text
    assert status.status_code == 401  # the data still needs the token
    assert not [path for path in schema["paths"] if path == "/" or path.startswith("/dashboard")]


@pytest.mark.system
async def test_dashboard_shows_a_served_experiment_and_follows_it(browser, serve, tmp_path):
    service = await serve(AB_TEST)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        for reward in (0.2, 0.9, 0.4, 0.7, 0.1):
            trial = (await client.post("/ask", json={})).json()
            told = await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
            assert told.status_code == 200
        last = (await client.post("/ask", json={})).json()  # left pending for now
        status = (await client.get("/status")).json()

        page, errors = await open_page(browser, service.url)  # "/" redirects to the dashboard
        await sign_in(page, "x" * 32)
        await expect(page.get_by_test_id("login-error")).to_have_text("The service rejected this token.",
                                                                      timeout=WAIT_MS)
        await sign_in(page, TOKEN)
        panel = page.get_by_test_id("bandit-panel")
        await expect(panel).to_have_count(1, timeout=WAIT_MS)
        assert TOKEN not in page.url and await page.evaluate("sessionStorage.getItem('armlab.token')") == TOKEN
        await expect(page.get_by_test_id("experiment-name")).to_have_text("checkout-ab")
        await expect(page.get_by_test_id("policy")).to_have_text(status["policy"])
        await expect(page.get_by_test_id("budget")).to_have_text("6 / 40")
        await expect(page.get_by_test_id("in-flight")).to_have_text("1 / 4")
        await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)
        await assert_panel_shows(panel, status["bandits"][0])
        chart = panel.get_by_test_id("chart")
        await expect(chart).to_have_attribute("data-observed", "5", timeout=WAIT_MS)  # the baseline
        await expect(chart.get_by_test_id("chart-line")).to_have_count(3)

        # another report: the page follows the event stream
        await client.post("/tell", json={"trial_id": last["trial_id"], "reward": 1.0})
        after = (await client.get("/status")).json()["bandits"][0]
        pulls = panel.get_by_test_id("arm-pulls").nth(last["arm"])
        await expect(pulls).to_have_text(str(after["counts"][last["arm"]]), timeout=WAIT_MS)
        await assert_panel_shows(panel, after)
        await expect(page.get_by_test_id("in-flight")).to_have_text("0 / 4", timeout=WAIT_MS)
        await expect(chart).to_have_attribute("data-observed", "6", timeout=WAIT_MS)  # from trial_observed
        observed = page.get_by_test_id("events").locator("li[data-kind=trial_observed]")
        await expect(observed.first).to_contain_text(f"trial {last['trial_id']}", timeout=WAIT_MS)

        # an operator retires an arm: its row says so
        assert (await client.post("/retire", json={"arm": "control"})).json()["status"] == "retired"
        control = panel.locator("tr[data-arm=control]")
        await expect(control).to_have_class(re.compile(r"\bretired\b"), timeout=WAIT_MS)
        await expect(control.locator(".badge-retired")).to_be_visible()
        assert await panel.locator("tr.retired").count() == 1
        after = (await client.get("/status")).json()["bandits"][0]
        assert after["retired"] == [0]

        # the token is kept for the tab: a reload does not ask again
        await page.reload()
        await expect(page.get_by_test_id("bandit-panel")).to_have_count(1, timeout=WAIT_MS)
        await expect(page.get_by_test_id("login-form")).to_be_hidden()
        await assert_panel_shows(page.get_by_test_id("bandit-panel"), after)
        screenshot = tmp_path / "dashboard.png"
        await page.screenshot(path=screenshot, full_page=True)
    assert screenshot.stat().st_size > 10_000
    assert errors == []


@pytest.mark.system
async def test_dashboard_has_one_panel_per_bandit(browser, serve, tmp_path):
    service = await serve(THREE_TESTS)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        for i in range(7):  # each answered at once, well within the 1 s timeout
            trial = (await client.post("/ask", json={})).json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": float(i % 3 == 0)})

        page, errors = await open_page(browser, f"{service.url}/dashboard/")
        await sign_in(page, TOKEN)
        panels = page.get_by_test_id("bandit-panel")
        await expect(panels).to_have_count(3, timeout=WAIT_MS)
        await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)
        # a trial nobody answers times out (timeout = 1 s): the service fails it, the page counts it
        await client.post("/ask", json={})
        await expect(page.get_by_test_id("overdue")).to_have_text("1", timeout=WAIT_MS)
        status = (await client.get("/status")).json()
        assert status["failed"] == 1
        await expect(page.get_by_test_id("outcomes")).to_contain_text("1 failed", timeout=WAIT_MS)
        for b, bandit in enumerate(status["bandits"]):
            panel = panels.nth(b)
            await expect(panel.locator("h2")).to_have_text(bandit["label"])
            await assert_panel_shows(panel, bandit)
        await page.screenshot(path=tmp_path / "dashboard-three-bandits.png", full_page=True)
    assert errors == []


@pytest.mark.system
async def test_dashboard_reconnects_after_the_service_restarts(browser, serve):
    service = await serve(AB_TEST)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        for reward in (1.0, 0.0):
            trial = (await client.post("/ask", json={})).json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
        page, errors = await open_page(browser, service.url)
        await sign_in(page, TOKEN)
        connection = page.get_by_test_id("connection")
        await expect(connection).to_have_text("live", timeout=WAIT_MS)
        chart = page.get_by_test_id("chart")
        await expect(chart).to_have_attribute("data-observed", "2", timeout=WAIT_MS)

        service.stop()
        await expect(connection).to_contain_text("reconnecting", timeout=WAIT_MS)
        service = await serve(AB_TEST, service.port)  # resumes from the journal
        for reward in (0.5, 0.25, 0.75):  # while the page is still waiting to reconnect
            trial = (await client.post("/ask", json={})).json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
        status = (await client.get("/status")).json()
    await expect(connection).to_have_text("live", timeout=WAIT_MS)
    await expect(chart).to_have_attribute("data-observed", "5", timeout=WAIT_MS)  # a new baseline
    panel = page.get_by_test_id("bandit-panel")
    await expect(panel.get_by_test_id("arm-pulls")).to_have_text([str(n) for n in status["counts"]], timeout=WAIT_MS)
    await assert_panel_shows(panel, status["bandits"][0])
    assert errors == []


@pytest.mark.system
async def test_dashboard_reports_a_live_stop_and_its_confidence(browser, serve, tmp_path):
    service = await serve(STOPS)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        page, errors = await open_page(browser, service.url)
        await sign_in(page, TOKEN)
        await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)
        await expect(page.get_by_test_id("stop")).to_be_hidden()
        for _ in range(3000):  # A always converts, B never: LUCB1 is soon confident
            asked = await client.post("/ask", json={})
            if asked.status_code == 409:
                break
            trial = asked.json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": float(trial["arm"] == 0)})
        status = (await client.get("/status")).json()
    stop = status["stop"]
    assert stop["reason"] == "confident" and stop["recommendation"] == 0 and stop["delta"] == 0.1
    await expect(page.get_by_test_id("stop")).to_have_text(
        f"Stopped after {stop['trials']} trials: confident the answer is A "
        "(right with probability ≥ 90%, δ = 0.1).", timeout=WAIT_MS)
    await expect(page.get_by_test_id("state")).to_have_text("finished")
    await expect(page.get_by_test_id("events").locator("li[data-kind=experiment_stopped]")).to_have_count(1)
    await assert_panel_shows(page.get_by_test_id("bandit-panel"), status["bandits"][0])
    await page.screenshot(path=tmp_path / "dashboard-stopped.png", full_page=True)
    assert errors == []


async def tell_many(client: httpx.AsyncClient, n: int, live) -> list[float]:
    """``n`` trials asked and answered at once; the total reward per arm (of three)."""
    sums = [0.0, 0.0, 0.0]
    for _ in range(n):
        trial = (await client.post("/ask", json={})).json()
        reward = live.conversion(trial["arm"], trial["pull"])
        assert (await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})).status_code == 200
        sums[trial["arm"]] += reward
    return sums


async def assert_page_shows_the_whole_run(page: Page, observed: int, sums: list[float], overdue: int) -> None:
    """The chart starts at 0 with a point per reward, the latest events and the overdue count since the start."""
    chart = page.get_by_test_id("chart")
    await expect(chart).to_have_attribute("data-observed", str(observed), timeout=WAIT_MS)
    await expect(chart).to_have_attribute("data-from", "0")
    await expect(chart).to_have_attribute("data-points", str(observed + 1))  # fewer than 500: every reward
    points = await page.evaluate("view.charts[0].points")
    assert [p["x"] for p in points] == list(range(observed + 1))
    assert points[-1]["cum"] == pytest.approx(sums) and points[0]["cum"] == [0, 0, 0]
    assert await chart.get_by_test_id("chart-line").count() == 3
    assert "before" not in await chart.inner_html()  # no straight line guessed from 0 to now
    events = page.get_by_test_id("events").locator("li")
    await expect(events).to_have_count(50)  # the history's latest events
    await expect(page.locator("#no-events")).to_be_hidden()
    await expect(page.get_by_test_id("events").locator("li[data-kind=trial_failed]")).to_have_count(overdue)
    await expect(page.get_by_test_id("overdue")).to_have_text(str(overdue))


@pytest.mark.system
async def test_a_page_opened_mid_run_shows_the_run_from_its_start(browser, serve, live):
    """Opened at trial 150 of 400 (two trials overdue before): the curves from trial 0, the
    latest events and the overdue count since the start; a reload the same; then a tell live, once."""
    service = await serve(MID_RUN)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        sums = await tell_many(client, 148, live)
        for _ in range(2):  # nobody answers these: the service fails them after 1 s
            await client.post("/ask", json={})
        with anyio.fail_after(WAIT_MS / 1000):
            while (status := (await client.get("/status")).json())["failed"] < 2:
                await anyio.sleep(0.1)
        assert status["dispatched"] == 150 and status["failed"] == 2 and status["completed"] == 148

        page, errors = await open_page(browser, service.url)
        await sign_in(page, TOKEN)
        await assert_page_shows_the_whole_run(page, 148, sums, overdue=2)
        await expect(page.get_by_test_id("budget")).to_have_text("150 / 400")
        await page.reload()
        await assert_page_shows_the_whole_run(page, 148, sums, overdue=2)
        await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)

        # a tell now: it joins the chart and the events once
        sums = [a + b for a, b in zip(sums, await tell_many(client, 1, live), strict=True)]
        chart = page.get_by_test_id("chart")
        await expect(chart).to_have_attribute("data-observed", "149", timeout=WAIT_MS)
        observed = page.get_by_test_id("events").locator("li[data-kind=trial_observed]")
        await expect(observed.filter(has_text="trial 150 ")).to_have_count(1, timeout=WAIT_MS)
        await anyio.sleep(1)  # nothing arrives twice later
        await expect(chart).to_have_attribute("data-points", "150")
        await expect(observed.filter(has_text="trial 150 ")).to_have_count(1)
        assert (await page.evaluate("view.charts[0].points.at(-1).cum")) == pytest.approx(sums)
    assert errors == []


@pytest.mark.system
async def test_an_event_arriving_while_the_history_loads_counts_once(browser, serve, live):
    """The history request is held back while a tell happens: its event reaches the page
    first, and the history holds it too; the page counts it once."""
    service = await serve(AB_TEST)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        await tell_many(client, 4, live)
        page, errors = await open_page(browser, service.url)
        reached, released = anyio.Event(), anyio.Event()

        async def hold(route):
            reached.set()
            await released.wait()
            await route.continue_()

        await page.route("**/history*", hold)
        await sign_in(page, TOKEN)
        with anyio.fail_after(WAIT_MS / 1000):
            await reached.wait()  # the stream is connected, the history not asked yet
        await tell_many(client, 1, live)
        await anyio.sleep(0.5)  # its event reaches the page, which holds it
        released.set()
        chart = page.get_by_test_id("chart")
        await expect(chart).to_have_attribute("data-observed", "5", timeout=WAIT_MS)
        observed = page.get_by_test_id("events").locator("li[data-kind=trial_observed]")
        await expect(observed).to_have_count(5)
        await anyio.sleep(1)
        await expect(chart).to_have_attribute("data-observed", "5")
        await expect(observed).to_have_count(5)
    assert errors == []


PARSE_CHUNKS = """async (chunks) => {
    const encoder = new TextEncoder();
    const body = new ReadableStream({start(controller) {
        for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
        controller.close();
    }});
    const messages = [];
    for await (const message of serverSentEvents(body)) messages.push(message);
    return messages;
}"""

SEAM = """(events) => {
    view.streamId = 2;  // the history shown holds the events up to id 2
    const before = view.charts[0].points.length;
    for (const event of events) applyEvent(event);
    const last = view.charts[0].points.at(-1);
    return {added: view.charts[0].points.length - before, x: last.x, cum: last.cum};
}"""


@pytest.mark.system
async def test_stream_parser_and_the_seam_with_the_history(browser, serve):
    """The page's own functions, in the browser: the server-sent events parser on awkward
    chunking, and which events of the stream join the history shown (those with a larger id)."""
    service = await serve(AB_TEST)
    async with httpx.AsyncClient(base_url=service.url, headers=AUTH, timeout=30) as client:
        for reward in (1.0, 0.5):
            trial = (await client.post("/ask", json={})).json()
            await client.post("/tell", json={"trial_id": trial["trial_id"], "reward": reward})
        history = (await client.get("/history")).json()
    page, errors = await open_page(browser, service.url)
    await sign_in(page, TOKEN)
    await expect(page.get_by_test_id("chart")).to_have_attribute("data-observed", "2", timeout=WAIT_MS)

    # CRLF split across chunks, a field without its space, a multi-line data, a bare "message"
    chunks = [": connected\r", '\n\r\nevent: trial_observed\r\ndata: {"a": 1}\r', "\ndata:second\rid: 7\r",
              "\n\r", "\ndata: x\n\n"]
    assert await page.evaluate(PARSE_CHUNKS, chunks) == [
        {"comment": "connected"},
        {"event": "trial_observed", "data": '{"a": 1}\nsecond', "id": "7"},
        {"event": "message", "data": "x", "id": None},
    ]

    # events up to the history's stream id are in it already; the later ones are new
    events = [{"id": 1, "event": "trial_observed", "trial": 0, "bandit": 0, "arm": 0, "reward": 1.0},
              {"id": 2, "event": "trial_observed", "trial": 1, "bandit": 0, "arm": 1, "reward": 0.5},
              {"id": 3, "event": "trial_observed", "trial": 2, "bandit": 0, "arm": 2, "reward": 0.25}]
    sums = history["series"][-1]["sums"]
    assert await page.evaluate(SEAM, events) == {"added": 1, "x": 3, "cum": [sums[0], sums[1], sums[2] + 0.25]}
    assert errors == []

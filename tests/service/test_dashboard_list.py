"""The list page of ``armlab server`` (dashboard/experiments.html) in headless Chromium: against
a stub server that answers ``GET /experiments`` and ``GET /experiments/{name}`` as the API
contract says (admin token: everything; client token: its own experiment, 403 elsewhere;
401 without a valid token), and against the real server (in process) from sign-in to a tell
followed live on an experiment's page."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

import anyio
import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

try:
    from playwright.async_api import Browser, Page, expect
except ImportError:  # the `browser` fixture (tests/conftest.py) skips and says how to install it
    pass

pytestmark = pytest.mark.system

ADMIN = "a" * 32
ALPHA_CLIENT = "c" * 32  # a client token of experiment "alpha"
WAIT_MS = 20_000
MEDIA = {"html": "text/html", "js": "text/javascript", "css": "text/css"}
SUMMARIES = {
    "alpha": {"name": "alpha", "state": "running", "trials": 150, "budget": 400, "recommendation": 2,
              "created": "2026-01-05T10:00:00Z", "last_activity": "2026-01-05T11:30:00Z", "owner": None},
    "beta <b>": {"name": "beta <b>", "state": "finished", "trials": 60, "budget": 60, "recommendation": [0, 1],
                 "created": "2026-01-04T09:00:00Z", "last_activity": None, "owner": None},
}


def stub_server() -> FastAPI:
    """The contract's two reading routes and the dashboard's files, nothing else."""
    app = FastAPI()

    def token_of(request: Request) -> str:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" else ""

    def refusal(request: Request, experiment: str | None) -> JSONResponse | None:
        token = token_of(request)
        if token == ADMIN:
            return None
        if token != ALPHA_CLIENT:
            return JSONResponse({"detail": "missing or wrong bearer token"}, 401)
        if experiment != "alpha":
            return JSONResponse({"detail": "this token belongs to another experiment"}, 403)
        return None

    def dashboard_file(name: str) -> Response:
        path = resources.files("armlab.service").joinpath("dashboard", name)
        if not path.is_file():
            return JSONResponse({"detail": "not found"}, 404)
        return Response(path.read_bytes(), media_type=MEDIA[name.rsplit(".", 1)[1]])

    @app.get("/experiments")
    async def experiments(request: Request) -> Response:
        return refusal(request, None) or JSONResponse({"experiments": [SUMMARIES[n] for n in sorted(SUMMARIES)]})

    @app.get("/experiments/{name}")
    async def experiment(request: Request, name: str) -> Response:
        if name not in SUMMARIES and token_of(request) == ADMIN:
            return JSONResponse({"detail": f"no experiment {name}"}, 404)
        return refusal(request, name) or JSONResponse(SUMMARIES[name])

    @app.get("/experiments/{name}/")
    async def experiment_page(name: str) -> Response:
        return dashboard_file("index.html")

    @app.get("/experiments/{name}/{file}")
    async def experiment_asset(name: str, file: str) -> Response:
        return dashboard_file(file)

    @app.get("/")
    async def root() -> Response:
        return dashboard_file("experiments.html")

    @app.get("/{name}")
    async def asset(name: str) -> Response:
        return dashboard_file(name)

    return app


@asynccontextmanager
async def served(app: FastAPI) -> AsyncIterator[str]:
    """``app`` on a free loopback port in this event loop; yields its URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    server = uvicorn.Server(uvicorn.Config(app, ws="none", log_config=None, access_log=False,
                                           timeout_graceful_shutdown=1))
    with sock:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, [sock])
            with anyio.fail_after(10):
                while not server.started:
                    await anyio.sleep(0.01)
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                server.should_exit = True


async def open_list(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    await page.goto(url)
    return page, errors


async def sign_in(page: Page, token: str) -> None:
    await expect(page.get_by_test_id("token-input")).to_be_visible(timeout=WAIT_MS)
    await page.get_by_test_id("token-input").fill(token)
    await page.get_by_test_id("login-submit").click()


async def test_the_admin_sees_every_experiment_and_its_link(browser):
    async with served(stub_server()) as url:
        page, errors = await open_list(browser, url)
        await sign_in(page, ADMIN)
        rows = page.get_by_test_id("experiments").locator("tbody tr")
        await expect(rows).to_have_count(2, timeout=WAIT_MS)
        links = page.get_by_test_id("experiment-link")
        await expect(links).to_have_text(["alpha", "beta <b>"])  # names are text, never markup
        assert await page.locator("tbody b").count() == 0
        assert await links.nth(0).get_attribute("href") == f"{url}/experiments/alpha/"
        assert await links.nth(1).get_attribute("href") == f"{url}/experiments/beta%20%3Cb%3E/"
        await expect(page.get_by_test_id("experiment-state")).to_have_text(["running", "finished"])
        await expect(page.get_by_test_id("experiment-budget")).to_have_text(["150 / 400", "60 / 60"])
        await expect(page.get_by_test_id("experiment-recommendation")).to_have_text(["arm 2", "arm 0, arm 1"])
        await expect(page.get_by_test_id("experiment-activity").nth(1)).to_have_text("—")
        assert await page.evaluate("sessionStorage.getItem('armlab.token')") == ADMIN

        await page.reload()  # the token is kept for the tab
        await expect(rows).to_have_count(2, timeout=WAIT_MS)
        await links.nth(0).click()  # the experiment's page, which finds its routes beside it
        await page.wait_for_url(f"{url}/experiments/alpha/")
        assert await page.evaluate("apiUrl('status').href") == f"{url}/experiments/alpha/status"
    assert errors == []


async def test_a_client_token_shows_its_own_experiment(browser):
    async with served(stub_server()) as url:
        page, errors = await open_list(browser, url)
        await sign_in(page, ALPHA_CLIENT)
        await expect(page.get_by_test_id("client-token-note")).to_be_visible(timeout=WAIT_MS)
        await page.get_by_test_id("name-input").fill("beta <b>")
        await page.get_by_test_id("name-submit").click()
        await expect(page.get_by_test_id("name-error")).to_have_text(
            "This token does not belong to the experiment “beta <b>”.", timeout=WAIT_MS)
        await page.get_by_test_id("name-input").fill("alpha")
        await page.get_by_test_id("name-submit").click()
        await expect(page.get_by_test_id("experiment-link")).to_have_text(["alpha"], timeout=WAIT_MS)
        await expect(page.get_by_test_id("list-title")).to_have_text("Your experiment")

        named, named_errors = await open_list(browser, f"{url}/?experiment=alpha")  # a new tab: sign in again
        await sign_in(named, ALPHA_CLIENT)
        await expect(named.get_by_test_id("experiment-link")).to_have_text(["alpha"], timeout=WAIT_MS)
        await expect(named.get_by_test_id("experiment-budget")).to_have_text("150 / 400")
    assert errors == [] and named_errors == []


async def test_a_wrong_token_is_refused_with_a_message(browser):
    async with served(stub_server()) as url:
        page, errors = await open_list(browser, url)
        await sign_in(page, "x" * 32)
        await expect(page.get_by_test_id("login-error")).to_have_text("The server rejected this token.",
                                                                      timeout=WAIT_MS)
        await expect(page.get_by_test_id("experiments")).to_be_hidden()
        assert await page.evaluate("sessionStorage.getItem('armlab.token')") is None
    assert errors == []


def test_the_page_resolves_the_api_beside_itself():
    """Where shared.js puts the API, for each place a page is served (run in Node when present)."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs node to run the page's script outside a browser")
    script = resources.files("armlab.service").joinpath("dashboard", "shared.js").read_text()
    probe = script + """
for (const page of ["http://h/dashboard/", "http://h/dashboard/index.html", "http://h/", "http://h/experiments/a/",
                    "http://h/experiments/dashboard/", "http://h/prefix/dashboard/", "http://h/dashboard/experiments.html"]) {
  globalThis.document = {baseURI: page};
  console.log(apiUrl("status").href);
}"""
    out = subprocess.run([node, "-e", "globalThis.sessionStorage = {};" + probe], capture_output=True, text=True,
                         timeout=30, check=True).stdout.split()
    assert out == ["http://h/status", "http://h/status", "http://h/status", "http://h/experiments/a/status",
                   "http://h/experiments/dashboard/status", "http://h/prefix/status", "http://h/status"]


async def test_on_armlab_server_the_admin_sees_every_experiment_and_follows_one_live(browser, tmp_path):
    """The real server (in process): the admin signs in at /, sees the experiments, opens one;
    its page (at /experiments/NAME/dashboard/) reuses the token, draws the run from its start
    and follows a tell live."""
    import httpx

    from armlab.plugins.registry import default_registry
    from armlab.service.server_app import create_server_app
    from armlab.service.server_experiments import Experiments
    from armlab.storage import open_storage

    examples = Path(__file__).resolve().parents[2] / "examples" / "live"
    storage = open_storage(f"sqlite:///{tmp_path / 'armlab.sqlite'}")
    app = create_server_app(Experiments(storage, default_registry()), admin_token=ADMIN)
    try:
        async with served(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as client:
            admin = {"Authorization": f"Bearer {ADMIN}"}
            tokens = {}
            for name, config in (("ab", "ab_service.toml"), ("three", "three_ab_tests.toml"),
                                 ("ab-2", "ab_service.toml")):
                created = await client.post("/experiments", headers=admin,
                                            json={"name": name, "config": (examples / config).read_text()})
                assert created.status_code == 201, created.text
                tokens[name] = {"Authorization": f"Bearer {created.json()['token']}"}

            async def tell(reward: float) -> None:
                trial = (await client.post("/experiments/ab/ask", json={}, headers=tokens["ab"])).json()
                await client.post("/experiments/ab/tell", json={"trial_id": trial["trial_id"], "reward": reward},
                                  headers=tokens["ab"])

            for reward in (1.0, 0.0):
                await tell(reward)
            page, errors = await open_list(browser, url)
            await sign_in(page, ADMIN)
            await expect(page.get_by_test_id("experiment-link")).to_have_text(["ab", "ab-2", "three"],
                                                                              timeout=WAIT_MS)
            await expect(page.get_by_test_id("experiment-budget").first).to_have_text("2 / 400")
            await page.get_by_test_id("experiment-link").first.click()
            await page.wait_for_url(f"{url}/experiments/ab/dashboard/")
            chart = page.get_by_test_id("chart")
            await expect(chart).to_have_attribute("data-observed", "2", timeout=WAIT_MS)  # no sign-in again
            await expect(chart).to_have_attribute("data-from", "0")
            await expect(page.get_by_test_id("connection")).to_have_text("live", timeout=WAIT_MS)
            await tell(1.0)
            await expect(chart).to_have_attribute("data-observed", "3", timeout=WAIT_MS)
            observed = page.get_by_test_id("events").locator("li[data-kind=trial_observed]")
            await expect(observed.filter(has_text="trial 2 ")).to_have_count(1, timeout=WAIT_MS)
    finally:
        storage.close()
    assert errors == []

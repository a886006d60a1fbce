"""``webhook``: POST each trial as JSON to a URL; the reward comes back in the response or later."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from pydantic import Field

from armlab.adapters.base import DEFERRED, Trial
from armlab.adapters.common import AdapterSource, AnswerParams, BoundedAnswer, reward_of
from armlab.errors import ConfigError, TrialFailed
from armlab.plugins.interfaces import PluginParams

if TYPE_CHECKING:
    import httpx  # the `live` extra; imported when a webhook source is entered

__all__ = ["Webhook"]


class WebhookParams(AnswerParams):
    url: str = Field(pattern=r"^https?://", description="where each trial is POSTed (http or https)")
    headers: dict[str, str] = Field(default_factory=dict, description="extra request headers")
    token_env: str | None = Field(
        None, description="name of an environment variable holding a bearer token for the webhook"
    )
    reward_in_response: bool = Field(
        True,
        description="true: the response carries the reward; false: a 2xx response only accepts the "
        "trial and the reward is reported later to `armlab serve`'s /tell endpoint",
    )


class Webhook(AdapterSource):
    """POST ``{"trial_id", "arm", "arm_name", "bandit", "pull", "attempt"}`` to ``url`` per trial.

    With ``reward_in_response`` the 2xx response body is the reward (a JSON number, or an
    object with ``reward`` and optionally ``metrics``, name to number); otherwise a 2xx response means "accepted", the trial stays
    pending, and its reward arrives through the ask/tell service's ``/tell`` (which needs
    ``armlab serve``; ``[feedback] timeout`` bounds the wait).  A response that does carry
    a reward is used either way.  Connection errors, non-2xx statuses and a body over
    ``max_answer_bytes`` (reading stops there and the connection is closed) fail the
    attempt (retried per ``retries``).  ``transport`` (Python only) replaces the network, for tests.
    """

    name = "webhook"
    Params = WebhookParams
    params: WebhookParams

    def __init__(
        self,
        params: PluginParams | Mapping[str, Any] | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(params)
        self.defers_rewards = not self.params.reward_in_response
        self._transport = transport
        self._client: httpx.AsyncClient | None = None
        headers = dict(self.params.headers)
        if self.params.token_env is not None:
            token = os.environ.get(self.params.token_env)
            if not token:
                raise ConfigError(
                    f"source 'webhook': environment variable {self.params.token_env!r} (token_env) is not set"
                )
            headers["Authorization"] = f"Bearer {token}"
        self._headers = headers

    async def __aenter__(self) -> Self:
        import httpx

        # no httpx time limit: `timeout` bounds each attempt, [feedback] timeout the trial
        self._client = httpx.AsyncClient(headers=self._headers, transport=self._transport, timeout=None)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def run_once(self, trial: Trial, attempt: int) -> Any:
        if self._client is None:
            raise RuntimeError("use the webhook source as an async context manager (async with source:)")
        import httpx

        answer = BoundedAnswer(self.params.max_answer_bytes)
        try:
            async with self._client.stream(
                "POST", self.params.url, json={**self.describe(trial), "attempt": attempt}
            ) as response:
                async for chunk in response.aiter_bytes():
                    if not answer.add(chunk):
                        break  # the rest is never read: the connection closes with the response
        except httpx.HTTPError as exc:
            raise TrialFailed(f"POST {self.params.url} failed: {type(exc).__name__}: {exc}") from None
        if not response.is_success:
            text = answer.data[:2000].decode(response.encoding or "utf-8", errors="replace")
            raise TrialFailed(f"POST {self.params.url} answered HTTP {response.status_code}: {text[:500]}")
        content = answer.value()
        if self.defers_rewards:
            body = _json_or_none(content)
            return reward_of(body) if _carries_reward(body) else DEFERRED
        if not content.strip():
            raise TrialFailed(f"POST {self.params.url} answered without a reward (empty body)")
        body = _json_or_none(content)
        if body is None:
            raise TrialFailed(f"the webhook's response is not JSON: {content[:200].decode(errors='replace')!r}")
        return reward_of(body)


def _json_or_none(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:  # not JSON, or not UTF-8 (JSON's encoding)
        return None


def _carries_reward(body: Any) -> bool:
    if isinstance(body, Mapping):
        return "reward" in body
    return isinstance(body, (int, float)) and not isinstance(body, bool)

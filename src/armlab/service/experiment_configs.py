"""Check the configuration of an experiment created over ``POST /experiments``.

The config arrives as TOML text or as the same tables in a JSON object.  It is validated
exactly as ``armlab validate`` validates a file (:func:`armlab.plan.experiment_from_data`
and :func:`armlab.cli.validate.checked_plans`), and must then be a live experiment whose
clients ask and tell (``external`` trials): a served experiment has no process of its own
to run trials in.  Every problem is reported, each as ``{"field", "message", "fix"}``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from armlab.cli.validate import checked_plans
from armlab.config import ExperimentConfig, InvalidExperiment
from armlab.config_paths import PathBase
from armlab.errors import ConfigError
from armlab.orchestrator.live.session import LiveSession
from armlab.plan import experiment_from_data
from armlab.plugins.registry import Registry

__all__ = ["ConfigProblems", "served_session"]

_FIELD = re.compile(r"^([A-Za-z_][\w.\[\]]*): (.*)$", re.S)
_CHECK = "check a config file the same way with `armlab validate FILE`"


class ConfigProblems(ConfigError):
    """The config cannot be served; ``problems`` lists each as ``{"field", "message", "fix"}``."""

    def __init__(self, problems: list[dict[str, str]]) -> None:
        super().__init__("; ".join(f"{p['field']}: {p['message']}" for p in problems))
        self.problems = problems


def problem(field: str, message: str, fix: str = _CHECK) -> dict[str, str]:
    return {"field": field, "message": message, "fix": fix}


def _problem_of(line: str) -> dict[str, str]:
    """A report line (``field.path: message; did you mean ...?``) as a problem object."""
    match = _FIELD.match(line.strip())
    field, message = (match.group(1), match.group(2)) if match else ("config", line.strip())
    head, sep, tail = message.rpartition("; ")
    if sep and tail:
        return problem(field, head, tail)
    return problem(field, message, f"correct `{field}` in the config; {_CHECK}")


def _tables(config: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(config, dict):
        return config
    try:
        return tomllib.loads(config)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigProblems([problem("config", f"not valid TOML: {exc}", "fix the TOML syntax at the place named")])


def served_session(config: str | dict[str, Any], base_dir: Path, registry: Registry) -> LiveSession:
    """A fresh session of ``config`` (not journaled yet); :class:`ConfigProblems` if it cannot
    be served.  Relative paths in the config resolve against ``base_dir``."""
    data = _tables(config)
    try:
        validated: ExperimentConfig = experiment_from_data(data, PathBase(base_dir), registry, "config")
        plans = checked_plans(validated, registry)
    except InvalidExperiment as exc:
        raise ConfigProblems([_problem_of(line) for line in exc.problems]) from None
    except ConfigError as exc:
        lines = str(exc).removeprefix("config: ").removeprefix("invalid experiment:").strip().split("\n")
        raise ConfigProblems([_problem_of(line) for line in lines if line.strip()]) from None
    if validated.sweep is not None:
        raise ConfigProblems([problem("sweep", "a served experiment runs one configuration, not a sweep",
                                      "remove [sweep] and create one experiment per value")])
    try:
        session = LiveSession.from_plan(plans[0][1])
    except ConfigError as exc:
        raise ConfigProblems([problem("source.plugin", str(exc), "use plugin = \"external\": clients ask and tell")])
    if session.runs_trials:
        raise ConfigProblems([problem(
            "source.plugin", f"source {session.sources[0].name!r} runs its own trials; a served experiment's "
            "trials are run by its clients", "use plugin = \"external\" (or run this config with `armlab serve`)")])
    return session

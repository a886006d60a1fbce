"""The experiment file: pydantic models of its tables, TOML loading, and error messages.

Plugin tables (``[source]``, ``[[policies]]``, ``[allocator]``) hold ``plugin = "name"`` and
the plugin's own parameters side by side; those are validated later by the plugin's
``Params`` model (:mod:`armlab.plan`), so a typo there is reported against the plugin.

Numbers must be finite: TOML has ``nan`` and ``inf`` literals, and a non-finite mean,
variance or threshold would run and report meaningless numbers (``0 ± 0``), so every model here
(and every plugin's ``Params``, :class:`~armlab.plugins.interfaces.PluginParams`) refuses them.
Error paths are written one way everywhere, ``policies[0].plugin``, and an unknown field
comes with the closest known name.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from armlab.config_errors import field_path, format_validation_error, misplaced, suggest
from armlab.config_paths import PathBase
from armlab.config_tables import (
    BANDITS_SOURCE,
    BanditEntry,
    FeedbackConfig,
    MetricsConfig,
    PluginEntry,
    PolicyEntry,
    ProblemConfig,
    SweepConfig,
    _Strict,
)
from armlab.errors import ConfigError
from armlab.problem import Objective
from armlab.safeguards.config import GuardrailConfig, StoppingConfig

__all__ = [
    "BANDITS_SOURCE",
    "MAX_SEED",
    "BanditEntry",
    "ExperimentConfig",
    "FeedbackConfig",
    "InvalidExperiment",
    "MetricsConfig",
    "PluginEntry",
    "PolicyEntry",
    "ProblemConfig",
    "SweepConfig",
    "config_problems",
    "field_path",
    "format_validation_error",
    "load_config",
    "read_config_data",
    "suggest",
]

#: The largest seed: random numbers are keyed by 64-bit words, so a larger seed would wrap
#: around to the numbers of a smaller one.
MAX_SEED = 2**64 - 1


class InvalidExperiment(ConfigError):
    """An experiment with one or more problems, one line each (``problems``); the message is
    ``invalid experiment:`` followed by those lines, so callers can merge several reports."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("invalid experiment:\n  " + "\n  ".join(self.problems))

    def __reduce__(self) -> tuple[type[InvalidExperiment], tuple[list[str]]]:
        return type(self), (self.problems,)  # pickled (from a worker process) with its lines


class ExperimentConfig(_Strict):
    """A whole experiment file.

    Relative paths in its plugin tables resolve against the directory of the file it was
    read from (:func:`load_config`), or against the current directory for a config built in
    Python (:attr:`path_base`, :mod:`armlab.config_paths`).  That directory is not a field:
    it is kept beside the tables, carried by :meth:`with_overrides`, :meth:`variants` and
    :meth:`located`, and stored by journals and worker recipes next to the dumped tables.
    """

    _base_dir: Path | None = PrivateAttr(None)  # None: the current directory, when validated

    name: str = Field("experiment", min_length=1)
    seed: int = Field(0, ge=0, description="root of every random number in the run (0 .. 2**64 - 1)")
    replicas: int = Field(100, ge=1, description="independent runs (Monte Carlo replicas)")
    checkpoints: list[int] | None = Field(None, description="trial counts at which metrics are taken")
    checkpoint_every: int | None = Field(None, gt=0, description="take metrics every this many trials")
    problem: ProblemConfig
    source: PluginEntry
    bandits: list[BanditEntry] | None = Field(
        None, min_length=1, description="several bandits sharing the budget (instead of [source])"
    )
    feedback: FeedbackConfig = FeedbackConfig()
    metrics: MetricsConfig = MetricsConfig()
    policies: list[PolicyEntry] = Field(min_length=1)
    allocator: PluginEntry = PluginEntry(plugin="single")
    sweep: SweepConfig | None = None
    exploration_floor: float = Field(
        0.0, ge=0.0, le=1.0,
        description="live runs: the share of trials sent to a uniformly drawn active arm, so every arm keeps "
        "a propensity of at least exploration_floor / K for offline evaluation (docs/decision-log.md)",
    )
    guardrails: list[GuardrailConfig] = Field(
        default_factory=list,
        description="live runs: [[guardrails]] retire an arm whose metric mean is surely beyond a bound "
        "(docs/safeguards.md)",
    )
    stopping: StoppingConfig | None = Field(
        None, description='live runs: [stopping] rule = "anytime" stops once the best arm is surely best',
    )

    @model_validator(mode="before")
    @classmethod
    def _source_or_bandits(cls, data: Any) -> Any:
        """``[source]`` and ``[[bandits]]`` exclude each other; with bandits, ``source`` is the
        :data:`BANDITS_SOURCE` placeholder (also accepted back, so dumps re-validate)."""
        if not isinstance(data, dict) or data.get("bandits") is None:
            return data
        source = data.get("source")
        if isinstance(source, PluginEntry):
            source = source.model_dump()
        if source is not None and source != {"plugin": BANDITS_SOURCE}:
            raise ValueError(
                "give either [source] (one bandit) or [[bandits]] (several, each with its own "
                "source), not both"
            )
        return {**data, "source": {"plugin": BANDITS_SOURCE}}

    @field_validator("seed")
    @classmethod
    def _seed_fits_64_bits(cls, seed: int) -> int:
        if seed > MAX_SEED:
            raise ValueError(
                f"seed must lie in 0 .. 2**64 - 1 ({MAX_SEED}), not {seed}: random numbers are keyed "
                "by 64-bit words, so a larger seed would repeat a smaller one's numbers"
            )
        return seed

    @model_validator(mode="after")
    def _cross_checks(self) -> ExperimentConfig:
        if self.checkpoints is not None and self.checkpoint_every is not None:
            raise ValueError("give either checkpoints or checkpoint_every, not both")
        if self.checkpoints is not None:
            bad = [c for c in self.checkpoints if not 0 < c <= self.problem.budget]
            if bad:
                raise ValueError(
                    f"checkpoints must lie in 1..budget ({self.problem.budget}); {bad[0]} does not"
                )
        labels = [p.display_label for p in self.policies]
        dupes = sorted({label for label in labels if labels.count(label) > 1})
        if dupes:
            raise ValueError(
                f"two policies share the label {dupes[0]!r}; give each a distinct label = \"...\""
            )
        self._check_delay()
        metrics = [g.metric for g in self.guardrails]
        repeated = sorted({m for m in metrics if metrics.count(m) > 1})
        if repeated:
            raise ValueError(
                f"guardrails: two entries guard the metric {repeated[0]!r}; keep one [[guardrails]] per metric"
            )
        if self.sweep is not None:
            table, swept = self.sweep.parameter.split(".", 1)
            if table == "problem" and swept not in ProblemConfig.model_fields:
                raise ValueError(
                    f"sweep.parameter: {self.sweep.parameter!r} is not a field of [problem] "
                    f"({', '.join(ProblemConfig.model_fields)}){suggest(swept, list(ProblemConfig.model_fields))}"
                )
        if self.bandits is not None and self.sweep is not None and self.sweep.parameter.startswith("source."):
            raise ValueError(
                f"sweep.parameter: {self.sweep.parameter!r} sweeps [source], but this experiment "
                f"has [[bandits]] (each with its own source); sweep a problem.* field instead"
            )
        for bandit in self.bandit_list():
            if bandit.objective is Objective.TOP_M and bandit.m is None:
                raise ValueError(f"bandit {bandit.label!r}: objective 'top-m' needs m, e.g. m = 3")
            if bandit.target_arm is not None and bandit.objective is not Objective.BEST_ARM:
                raise ValueError(
                    f"bandit {bandit.label!r}: target_arm needs the best-arm objective "
                    f"(a target is an arm hoped to be best), not {bandit.objective.value!r}"
                )
        return self

    def _check_delay(self) -> None:
        """Refuse a delay longer than the budget: its results arrive only after the last trial
        is dispatched, when no policy can use them, while the simulation steps through every
        step of the wait (and holds that many results per replica)."""
        feedback, budget = self.feedback, self.problem.budget
        name = "delay" if feedback.delay > budget or feedback.delay_max is None else "delay_max"
        value = feedback.delay if name == "delay" else feedback.delay_max
        assert value is not None
        if value > budget:
            what = "batch size" if feedback.delay_model == "batch" else "delay"
            raise ValueError(
                f"feedback.{name}: a {what} of {value} steps is longer than the budget ({budget} trials): "
                f"its results would arrive only after the last trial is dispatched, when no policy can "
                f"use them; use {name} <= {budget}"
            )

    def bandit_list(self) -> list[BanditEntry]:
        """One entry per bandit (``count`` expanded) with label, objective and ``m`` resolved
        against ``[problem]``; a one-source experiment is a single bandit ``bandit0``."""
        if self.bandits is None:
            entries = [BanditEntry(source=self.source)]
        else:
            entries = [entry for entry in self.bandits for _ in range(entry.count)]
        out = []
        for index, entry in enumerate(entries):
            objective = entry.objective or self.problem.objective
            label = entry.label if entry.label and entry.count == 1 else None
            out.append(entry.model_copy(update={
                "count": 1,
                "label": label or (f"{entry.label}{index}" if entry.label else f"bandit{index}"),
                "objective": objective,
                "m": entry.m if entry.m is not None else self.problem.m,
            }))
        return out

    def checkpoint_list(self) -> list[int]:
        """Sorted, de-duplicated checkpoints; always ends at the budget.

        Default: 20 evenly spaced points.
        """
        budget = self.problem.budget
        if self.checkpoints is not None:
            points = set(self.checkpoints)
        elif self.checkpoint_every is not None:
            points = set(range(self.checkpoint_every, budget + 1, self.checkpoint_every))
        else:
            points = {max(1, round(budget * i / 20)) for i in range(1, 21)}
        return sorted(points | {budget})

    def variants(self) -> list[tuple[Any, ExperimentConfig]]:
        """``(value, config)`` for each sweep value (just ``(None, self)`` without a sweep).

        In a budget sweep, checkpoints beyond a run's budget are dropped for that run.  Every
        invalid value is reported (:class:`InvalidExperiment`, one line per problem).
        """
        if self.sweep is None:
            return [(None, self)]
        table, field = self.sweep.parameter.split(".", 1)
        out, problems = [], []
        for value in self.sweep.values:
            data = self.model_dump(mode="python")
            data["sweep"] = None
            data[table][field] = value
            if (
                self.sweep.parameter == "problem.budget"
                and data["checkpoints"] is not None
                and isinstance(value, int)
            ):
                data["checkpoints"] = [c for c in data["checkpoints"] if c <= value] or None
            try:
                out.append((value, ExperimentConfig.model_validate(data).located(self._base_dir)))
            except ValidationError as exc:
                problems += [
                    f"sweep value {self.sweep.parameter} = {value!r} gives an invalid experiment: {line}"
                    for line in format_validation_error(exc, model=ExperimentConfig)
                ]
        if problems:
            raise InvalidExperiment(problems)
        return out

    def with_overrides(self, **changes: Any) -> ExperimentConfig:
        """A copy with top-level fields replaced (``None`` values are ignored), re-validated."""
        data = self.model_dump(mode="python", exclude_none=False)
        data.update({k: v for k, v in changes.items() if v is not None})
        return validate_config(data).located(self._base_dir)

    def located(self, directory: str | Path | None) -> ExperimentConfig:
        """A copy whose relative paths resolve against ``directory`` (made absolute now);
        ``None``: against the current directory at the time plugins are validated."""
        copy = self.model_copy()
        copy._base_dir = None if directory is None else Path(os.path.abspath(directory))
        return copy

    @property
    def path_base(self) -> PathBase:
        """What relative paths in the plugin tables resolve against (see :meth:`located`)."""
        if self._base_dir is None:
            return PathBase(Path.cwd(), from_file=False)
        return PathBase(self._base_dir)


def config_problems(exc: ValidationError, data: dict[str, Any]) -> list[str]:
    """The lines of an experiment's validation error; a missing top-level field that TOML
    put inside a table says so."""
    lines = format_validation_error(exc, model=ExperimentConfig)
    for err in exc.errors():
        if err["type"] == "missing" and len(err["loc"]) == 1:
            key = str(err["loc"][0])
            lines = [line + misplaced(data, key) if line.startswith(f"{key}: ") else line for line in lines]
    return lines


def validate_config(data: dict[str, Any]) -> ExperimentConfig:
    """Validate a parsed experiment mapping, raising :class:`InvalidExperiment` with every problem."""
    try:
        return ExperimentConfig.model_validate(data)
    except ValidationError as exc:
        raise InvalidExperiment(config_problems(exc, data)) from None


def read_config_data(path: str | Path) -> dict[str, Any]:
    """The parsed TOML of an experiment file (not validated yet)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read experiment file {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file ({exc.reason} at byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate a TOML experiment file; its relative paths resolve against its directory."""
    try:
        return validate_config(read_config_data(path)).located(Path(path).parent)
    except InvalidExperiment as exc:
        raise ConfigError(f"{path}: {exc}") from None

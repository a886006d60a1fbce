"""Open a live experiment: build it from a config, or replay its journal and continue.

A :class:`LiveSession` is the one place where a live experiment's parts are put together:
the validated plan, the live source, the ask/tell :class:`~armlab.orchestrator.live.experiment.LiveExperiment`
and (optionally) its :class:`~armlab.orchestrator.journal.store.Journal`.  ``armlab run``, ``armlab serve`` and ``armlab resume`` all open one.

With a journal, the experiment's recorder is the session's
:class:`~armlab.orchestrator.journal.group_commit.GroupCommit`, given once when the experiment
is built.  Opening an existing journal rebuilds the experiment from the configuration stored
in it and replays every event (a replay records nothing), so the continued run is the run
that never stopped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from armlab.adapters.base import LiveSource
from armlab.config import ExperimentConfig, load_config, validate_config
from armlab.errors import ConfigError
from armlab.orchestrator.journal.group_commit import GroupCommit
from armlab.orchestrator.journal.store import Journal, JournalError
from armlab.orchestrator.live.experiment import LiveExperiment
from armlab.orchestrator.live.run import LiveRun
from armlab.plan import ExperimentPlan, build_plan
from armlab.plugins.registry import Registry, default_registry

__all__ = ["LiveSession", "journal_meta"]


@dataclass
class LiveSession:
    """A live experiment ready to be driven (by :meth:`live_run` or the HTTP service)."""

    plan: ExperimentPlan
    sources: list[LiveSource]  # one per bandit
    experiment: LiveExperiment
    journal: Journal | None = None
    writer: GroupCommit | None = None  # the experiment's recorder (with a journal)
    replayed: int = 0

    @property
    def config(self) -> ExperimentConfig:
        return self.plan.config

    @property
    def label(self) -> str:
        return self.plan.policies[0].label

    @property
    def runs_trials(self) -> bool:
        """The sources run the trials themselves (else clients ask and tell through the service)."""
        return self.sources[0].runs_trials

    def arm_names(self, bandit: int = 0) -> list[str]:
        return self.sources[bandit].arm_names

    @classmethod
    def from_plan(cls, plan: ExperimentPlan, journal: Journal | None = None) -> LiveSession:
        """A fresh session (no events yet) of a validated live plan (one bandit or several),
        recording into ``journal`` if given."""
        _require_live(plan)
        cfg = plan.config
        sources = [plan.create_source(b) for b in range(len(plan.bandits))]
        assert all(isinstance(source, LiveSource) for source in sources)
        spec = plan.policies[0]
        writer = None if journal is None else GroupCommit(journal)
        experiment = LiveExperiment(
            spec.create,
            [plan.problem(source, None, b) for b, source in enumerate(sources)],
            cfg.seed,
            allocator=plan.create_allocator(spec),
            in_flight=cfg.feedback.effective_in_flight,
            checkpoints=cfg.checkpoint_list(),
            exploration_floor=cfg.exploration_floor,
            guardrails=cfg.guardrails,
            stopping=cfg.stopping,
            recorder=None if writer is None else writer.record,
        )
        return cls(plan, sources, experiment, journal, writer)  # type: ignore[arg-type]

    @classmethod
    def open(
        cls,
        *,
        journal: str | Path,
        config: ExperimentConfig | str | Path | None = None,
        registry: Registry | None = None,
    ) -> LiveSession:
        """Create ``journal`` for ``config``, or resume it if it exists.

        When resuming, ``config`` may be omitted (the journal stores it); if given it must
        equal the stored one, so a resumed run cannot silently change its experiment.  The
        journal also stores the directory the config's relative paths resolve against, so a
        run resumed from another working directory uses the same files (a journal written
        before it was stored resolves them against the current directory, as it did then).
        """
        registry = registry or default_registry()
        if config is not None and not isinstance(config, ExperimentConfig):
            config = load_config(config)
        path = Path(journal)
        if not path.exists():
            if config is None:
                raise ConfigError(f"journal {str(path)!r} does not exist; give the experiment's config to start it")
            plan = build_plan(config, registry)
            _require_live(plan)  # before the file is created
            return cls.from_plan(plan, Journal.create(path, journal_meta(plan)))
        return cls.resume(Journal.open(path), config, registry)

    @classmethod
    def resume(
        cls, journal: Journal, config: ExperimentConfig | None = None, registry: Registry | None = None
    ) -> LiveSession:
        """Rebuild the experiment stored in the open ``journal`` and replay its events; it
        records into ``journal`` from then on (``journal`` is closed if that fails).
        ``config``, if given, must equal the stored one."""
        try:
            stored = validate_config(journal.meta["config"]).located(journal.meta.get("base_dir"))
            if config is not None:
                _require_same(stored, config, journal.path)
            session = cls.from_plan(build_plan(stored, registry or default_registry()), journal)
            session.replayed = session.experiment.replay(journal.events())
        except BaseException:
            journal.close()
            raise
        return session

    def live_run(self) -> LiveRun:
        """The async driver that runs this session's trials through its source."""
        if any(source.defers_rewards for source in self.sources):
            raise ConfigError(
                f"source {self.sources[0].name!r} is set to report rewards later "
                "(reward_in_response = false); they arrive at the /tell endpoint of `armlab serve`, "
                "so run this experiment with `armlab serve CONFIG --journal FILE`"
            )
        return LiveRun(sources=self.sources, experiment=self.experiment, timeout=self.config.feedback.timeout)

    async def run(self) -> None:
        """Run the trials through the source until the experiment ends, journal writes batched."""
        async with self.group_commit():
            await self.live_run().run()

    @asynccontextmanager
    async def group_commit(
        self, on_failure: Callable[[JournalError], None] | None = None
    ) -> AsyncIterator[GroupCommit | None]:
        """Within this context, journal writes are batched (:meth:`GroupCommit.batching`).

        Yields the writer (None without a journal): await its ``durable()`` before
        acknowledging a change.  On a clean exit (even cancelled) every recorded event is
        written.  A failed write is passed to ``on_failure`` (else raised), and from then on
        every change is refused: nothing is ever written after a gap.
        """
        if self.writer is None:
            yield None
            return
        async with self.writer.batching(on_failure):
            yield self.writer

    def policy_summary(self) -> dict[str, Any]:
        """``{label: {...}}``: the live entry of ``summary.json``.

        Besides the final state it holds ``at_checkpoints`` (the run at each checkpoint: the
        rows of the live ``results.csv``), ``arm_names`` per bandit and, with several bandits,
        their ``bandit_labels``, so the table names what it counts.
        """
        experiment = self.experiment
        entry = {"plugin": self.plan.policies[0].plugin, **experiment.summary(),
                 "at_checkpoints": list(experiment.checkpoint_states),
                 "arm_names": [self.arm_names(b) for b in range(len(self.sources))]}
        if experiment.core.multi_bandit:
            entry["bandit_labels"] = [bandit.label for bandit in self.plan.bandits]
        return {self.label: entry}

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


def _require_live(plan: ExperimentPlan) -> None:
    """Refuse a plan that is not one live experiment (a simulated source, several policies)."""
    if not plan.live:
        raise ConfigError(
            f"source {plan.bandits[0].source_cls.name!r} is simulated; a live session needs a live "
            "source (callback, command, webhook or external)"
        )
    if len(plan.policies) != 1:
        raise ConfigError(
            f"a live experiment runs exactly one policy (its source is live); "
            f"the config lists {len(plan.policies)} in [[policies]]"
        )


def journal_meta(plan: ExperimentPlan) -> dict[str, Any]:
    """What a new journal of ``plan``'s experiment stores besides its events (its config first)."""
    config = plan.config
    return {
        "config": config.model_dump(mode="json"),
        "base_dir": str(config.path_base.directory),
        "seed": config.seed,
        "policy": plan.policies[0].label,
        "source": plan.bandits[0].source_cls.name,
    }


def _require_same(stored: ExperimentConfig, given: ExperimentConfig, path: Path) -> None:
    a, b = stored.model_dump(mode="json"), given.model_dump(mode="json")
    if a != b:
        changed = ", ".join(sorted(_differences(a, b))) or "(unknown)"
        raise ConfigError(
            f"journal {str(path)!r} was written for a different experiment (changed: {changed}); "
            "resume it with its own config, or start a new journal"
        )


def _differences(a: Any, b: Any, prefix: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in a.keys() | b.keys():
            out += _differences(a.get(key), b.get(key), f"{prefix}.{key}" if prefix else str(key))
        return out
    return [] if a == b else [prefix or "(top level)"]

"""Finished tasks of a simulated experiment, saved as they finish so an interrupted run resumes.

With an output directory, every task (one policy of one run on a block of replicas,
:mod:`armlab.orchestrator.montecarlo.scale.tasks`) is written to ``DIR/tasks/<run>-<policy>-<start>-<stop>.npz``
as soon as its output reaches this process: the per-replica arrays it returned, nothing of
the policy's state.  ``DIR/tasks/manifest.json`` holds a key (a hash of the resolved config,
seed and replicas included, and of the armlab version), so the tasks of another experiment
are never mixed in: a directory holding them is refused, with the way out.

Running the same experiment into the same directory again loads the saved tasks, runs only
the replicas they lack (whatever the worker count or block size this time) and merges all of
them in replica order.  Every random number is keyed by the seed and the global replica id,
so the summary is bit-identical to an uninterrupted run's.  Once the whole summary is
written, the folder is removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from armlab._version import __version__
from armlab.config import ExperimentConfig
from armlab.errors import ConfigError
from armlab.orchestrator.montecarlo.scale.tasks import Task, TaskOutput
from armlab.plan import ExperimentPlan

__all__ = ["RunInterrupted", "SavedTasks"]

_NAME = re.compile(r"^(\d+)-(\d+)-(\d+)-(\d+)\.npz$")


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C stopped a simulated run whose finished tasks are saved; ``summary`` is the
    partial summary written (``"partial": true``, ``"missing"`` lists what is left)."""

    def __init__(self, summary: dict[str, Any], folder: Path) -> None:
        super().__init__(f"finished tasks saved in {folder}")
        self.summary = summary
        self.folder = folder


def experiment_key(config: ExperimentConfig) -> str:
    """What saved tasks must match: the resolved config (seed and replicas included) and
    the armlab version that computed them."""
    text = json.dumps({"armlab": __version__, "config": config.model_dump(mode="json")}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class SavedTasks:
    """The ``tasks`` folder of an output directory, for one experiment."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    @classmethod
    def open(cls, out_dir: str | Path, config: ExperimentConfig) -> SavedTasks:
        """The folder for ``config`` under ``out_dir``; refused when it holds another experiment's tasks."""
        folder = Path(out_dir) / "tasks"
        manifest = folder / "manifest.json"
        key = experiment_key(config)
        if manifest.exists():
            try:
                stored = json.loads(manifest.read_text(encoding="utf-8")).get("key")
            except (OSError, ValueError, AttributeError):
                stored = None
            if stored != key:
                raise ConfigError(
                    f"{folder} holds the finished tasks of an interrupted run of another experiment (its config, "
                    "seed, replicas or armlab version differ): run that experiment again to finish it, or remove "
                    f"{folder} (or choose another --out) to start this one"
                )
        else:
            folder.mkdir(parents=True, exist_ok=True)
            _write_atomically(manifest, lambda handle: handle.write(
                json.dumps({"key": key, "experiment": config.name, "armlab": __version__}).encode()))
        return cls(folder)

    def save(self, task: Task, output: TaskOutput) -> None:
        """Write ``task``'s output (atomically: a file that exists is whole)."""
        arrays = {"cp_error": output.cp_error, "cp_regret": output.cp_regret, "stopped_at": output.stopped_at,
                  "trials": np.int64(output.trials), "wall_seconds": np.float64(output.wall_seconds),
                  "extra": np.array(json.dumps(output.extra))}
        _write_atomically(self._path(task), lambda handle: np.savez(handle, **arrays))

    def load(self, plans: Sequence[ExperimentPlan]) -> dict[Task, TaskOutput]:
        """Every saved task that fits ``plans`` (a file that does not is left out: its
        replicas run again)."""
        return dict(self.each(plans))

    def each(self, plans: Sequence[ExperimentPlan]) -> Iterator[tuple[Task, TaskOutput]]:
        """The saved tasks that fit ``plans``, read one at a time (as :meth:`load` says)."""
        found: list[Task] = []
        for path in sorted(self.folder.glob("*.npz")):
            match = _NAME.match(path.name)
            if match is None:
                continue
            task = Task(*(int(part) for part in match.groups()))
            if not _fits(task, plans) or any(_overlap(task, other) for other in found):
                continue
            try:
                output = self.read(task)
            except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                continue
            if len(output.cp_error) == len(output.cp_regret) == len(output.stopped_at) == task.stop - task.start:
                found.append(task)
                yield task, output

    def read(self, task: Task) -> TaskOutput:
        """The saved output of ``task`` (raises OSError when there is none)."""
        with np.load(self._path(task), allow_pickle=False) as data:
            return TaskOutput(data["cp_error"], data["cp_regret"], data["stopped_at"], json.loads(str(data["extra"])),
                              int(data["trials"]), float(data["wall_seconds"]))

    def _path(self, task: Task) -> Path:
        return self.folder / f"{task.run}-{task.policy}-{task.start}-{task.stop}.npz"

    def remove(self) -> None:
        """Delete the folder: the whole summary is written, nothing is left to resume."""
        shutil.rmtree(self.folder, ignore_errors=True)


def _fits(task: Task, plans: Sequence[ExperimentPlan]) -> bool:
    if task.run >= len(plans) or task.policy >= len(plans[task.run].policies):
        return False
    return 0 <= task.start < task.stop <= plans[task.run].config.replicas


def _overlap(task: Task, other: Task) -> bool:
    return (task.run, task.policy) == (other.run, other.policy) and task.start < other.stop and other.start < task.stop


def _write_atomically(path: Path, write: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as handle:
        write(handle)
    os.replace(tmp, path)

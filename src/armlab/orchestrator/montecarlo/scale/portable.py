"""Plans as worker processes rebuild them: a config and the name of a default registry.

Workers (local processes, forked or spawned, and Dask workers) never receive plugin
classes.  They rebuild each plan from its config with their own
:func:`~armlab.plugins.registry.default_registry` (armlab's built-ins, plus the installed
``armlab`` entry points when this process loaded them), so they import every plugin by
itself.  A plugin class defined in ``__main__`` (a script, a notebook), inside a function (a
test) or registered by hand in this process only does not exist in a spawned or Dask
worker: :func:`recipe` refuses it before anything runs, naming the plugin and the fix
(where workers fork too, so that a run that works on one machine works on every one).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

from armlab.config import ExperimentConfig
from armlab.errors import PluginError, UnknownPluginError
from armlab.orchestrator.montecarlo.simulate import make_observers
from armlab.plan import ExperimentPlan, build_plan
from armlab.plugins.registry import Registry, default_registry

__all__ = ["PlanRecipe", "rebuild", "recipe"]

_FIX = (
    "put it in an importable module or package that registers it through the 'armlab' entry-point "
    "group, or run the experiment in this process only (--workers 1, no --executor dask)"
)


@dataclass(frozen=True)
class PlanRecipe:
    """A plan as a worker rebuilds it: its config (JSON), the directory its relative paths
    resolve against (so a worker finds the same files whatever its working directory), and
    whether the worker's default registry loads the installed entry points (as this
    process's registry did)."""

    config: str
    entry_points: bool
    base_dir: str


def recipe(plan: ExperimentPlan) -> PlanRecipe:
    """The recipe of ``plan``, once sure a worker rebuilds it with the same plugins."""
    entry_points = bool(plan.registry.pm.list_plugin_distinfo())
    theirs = default_registry(entry_points)
    if theirs is not plan.registry:
        _check_same_plugins(plan, theirs)
    return PlanRecipe(plan.config.model_dump_json(), entry_points, str(plan.config.path_base.directory))


@functools.cache
def rebuild(plan_recipe: PlanRecipe) -> ExperimentPlan:
    """The plan of ``plan_recipe`` (built once per worker process)."""
    config = ExperimentConfig.model_validate_json(plan_recipe.config).located(plan_recipe.base_dir)
    return build_plan(config, default_registry(plan_recipe.entry_points), dry_run=False)


def _check_same_plugins(plan: ExperimentPlan, theirs: Registry) -> None:
    for kind, cls in _plugin_classes(plan):
        try:
            found = theirs.get(kind, cls.name)
        except UnknownPluginError:
            found = None
        if found is None or _path(found) != _path(cls):
            raise PluginError(f"{kind} plugin {cls.name!r} ({_path(cls)}) {_where(cls)}, so worker processes, "
                              f"which rebuild the experiment from its config, cannot use it: {_FIX}")
    ours = [_path(type(o)) for o in make_observers(plan)]
    rebuilt = [_path(type(o)) for o in make_observers(build_plan(plan.config, theirs, dry_run=False))]
    if ours != rebuilt:
        raise PluginError(f"the step observers of this process ({', '.join(ours) or 'none'}) are not those worker "
                          f"processes would use ({', '.join(rebuilt) or 'none'}): for the plugin that adds them, {_FIX}")


def _plugin_classes(plan: ExperimentPlan) -> Iterator[tuple[str, type]]:
    yield "allocator", plan.allocator_cls
    for bandit in plan.bandits:
        yield "source", bandit.source_cls
    for spec in plan.policies:
        yield "policy", spec.cls
        if spec.allocator_cls is not None:
            yield "allocator", spec.allocator_cls


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _where(cls: type) -> str:
    defined = getattr(cls, "scalar", cls)  # a ScalarPolicy's vectorized wrapper: where the scalar class is
    if defined.__module__ == "__main__":
        return "is defined in __main__"
    if "<locals>" in defined.__qualname__:
        return "is defined inside a function"
    return "is registered in this process only"

"""Golden fingerprints: every built-in policy makes the same choices it made when reviewed.

Each built-in policy runs on a fixed, seeded problem of the objective it serves (K = 6
Bernoulli arms, R = 8 replicas, 300 trials) in three scenarios: ``immediate`` (every result
seen before the next choice) and ``delayed`` (random delays of 0 to 5 steps, at most 3
trials pending per replica, so policies choose with pending pulls and the replicas fall out
of step), and ``clear-delayed`` (the same delays on far-apart means and 450 trials, where the
fixed-confidence rules stop).  The test hashes, step by step, which replicas chose, the arm each chose, and
which replicas the policy stopped, then the final recommendation, and compares the hash with
the table below.  Any change of any policy's numbers therefore fails here, by name.

Updating the table: a change of numbers must be intended and reviewed.  After the review,
run ``python tests/plugins/regenerate_fingerprints.py``, paste the dict it prints over
``FINGERPRINTS`` below, and commit the new table in the same commit as the change, saying in
the message which policies changed and why.  A new built-in policy fails here until its
fingerprints are added the same way.
"""

from __future__ import annotations

import pytest

from armlab.plugins.registry import default_registry
from armlab.problem import Objective
from armlab.testing.choices import choice_fingerprint

#: True means of the six Bernoulli arms: distinct gaps, best arm 0, top-2 {0, 1}, and three
#: arms on each side of the threshold 0.5.
MEANS = [0.8, 0.65, 0.55, 0.45, 0.35, 0.2]
REPLICAS = 8
SEED = 20

#: Far-apart means on which the fixed-confidence rules stop within the budget.
CLEAR = [0.95, 0.9, 0.2, 0.15, 0.1, 0.05]
DELAYS = {"delay": 0, "delay_model": "uniform", "delay_max": 5, "in_flight": 3}

#: ``(means, [feedback], budget)`` of each scenario; on the clear problem LUCB1 and UGapEc
#: stop after about 310 to 390 trials, so stops are fingerprinted too.
SCENARIOS: dict[str, tuple[list[float], dict, int]] = {
    "immediate": (MEANS, {}, 300),
    "delayed": (MEANS, DELAYS, 300),
    "clear-delayed": (CLEAR, DELAYS, 450),
}

#: Parameters that make a policy do more than its warm-up within the budget.
PARAMS: dict[str, dict] = {
    # the default epsilon = delta = 0.1 make the first round longer than the budget
    "median-elimination": {"epsilon": 0.9, "square": False},
    # with the default 1.96, VBR rejects in Successive Rejects' order on all three problems
    "vbr": {"gamma": 10.0},
}

#: The objective a policy is fingerprinted on: regret if it serves regret, else top-m (m = 2)
#: if it serves top-m, else best-arm, else threshold.
PREFERENCE = (Objective.REGRET, Objective.TOP_M, Objective.BEST_ARM, Objective.THRESHOLD)
PROBLEM = {
    Objective.REGRET: {"objective": "regret"},
    Objective.TOP_M: {"objective": "top-m", "m": 2, "delta": 0.3, "epsilon": 0.1},
    Objective.BEST_ARM: {"objective": "best-arm", "delta": 0.3, "epsilon": 0.1},
    Objective.THRESHOLD: {"objective": "threshold", "threshold": 0.5},
}


def builtin_policies() -> dict[str, type]:
    """Name -> class of every built-in policy (entry points not loaded)."""
    return {info.name: info.cls for info in default_registry(False).infos("policy")}


def objective_of(cls: type) -> Objective:
    return next(o for o in PREFERENCE if o in cls.objectives)


def scenario_config(name: str, scenario: str) -> dict:
    """The config of built-in policy ``name`` in ``scenario``."""
    objective = objective_of(default_registry(False).get("policy", name))
    means, feedback, budget = SCENARIOS[scenario]
    return {
        "name": "fingerprint", "seed": SEED, "replicas": REPLICAS, "checkpoints": [budget],
        "problem": {"budget": budget, **PROBLEM[objective]},
        "source": {"plugin": "bernoulli", "means": means},
        "feedback": feedback,
        "policies": [{"plugin": name, **PARAMS.get(name, {})}],
    }


def fingerprint(name: str, scenario: str) -> str:
    """Run built-in policy ``name`` in ``scenario``; the hex hash of its choices."""
    return choice_fingerprint(scenario_config(name, scenario))


def current_table() -> dict[str, dict[str, str]]:
    """The fingerprint table of the code as it is now (what the regeneration script prints)."""
    return {scenario: {name: fingerprint(name, scenario) for name in sorted(builtin_policies())}
            for scenario in SCENARIOS}


FINGERPRINTS: dict[str, dict[str, str]] = {'immediate': {'agapev': '7b1f06d3001eada3',
               'agapev-topm': '2ac4f3c0e509fcd8',
               'apt': 'a07b8f5b7bdcce3e',
               'augucb': 'e8a93a9f35e76eb4',
               'bayes-topm': '8ae19c27c4d9abaa',
               'bayes-ucb': 'e975afd58f8eeeb8',
               'csar': '5e39b75a760f30d4',
               'dmed': 'b9329f2db36ccde7',
               'eucbv': '070871d37e6cb28d',
               'gape': '354c3fe89d19e1d3',
               'gapev': 'b503edc563491244',
               'klucb': '8be909d9ead5cf02',
               'lucb1': 'bb5d920fb658f95b',
               'median-elimination': '2772800a53e361b8',
               'moss': '236c8e7d8d4a9410',
               'ocucb': 'c421bea02d749178',
               'pac': 'd90de882bd368557',
               'sh': '2f8bf8154d7ad357',
               'shadavar': '5abd3e44567a4789',
               'shvar': '8ff440c24aae7c2b',
               'sr': 'acef694ea5a83277',
               'thompson': '045e391914e14e84',
               'ucb-improved': 'f2c9157a9e68cc6c',
               'ucb1': 'd42096b86faf5c94',
               'ucbe': '49f188675f5b5e82',
               'ucbev': '167da6f6ef0cae42',
               'ucbv': '974718b2df2e7a04',
               'ugapeb': 'ba81885d564ca8fb',
               'ugapec': '8faef3f4a0dd2527',
               'uniform': '98405c56c04fd788',
               'vbr': 'acef694ea5a83277'},
 'delayed': {'agapev': '1bcd16c493a9eac1',
             'agapev-topm': 'd0b71c9d2ac5a7b3',
             'apt': '2feabd39f4469322',
             'augucb': '107e821037fc8ae4',
             'bayes-topm': '9b99c5b40bc951c4',
             'bayes-ucb': 'c25b1d53651ab9fc',
             'csar': '160a41e0084587f5',
             'dmed': '6b4176e1708fc3db',
             'eucbv': 'e24912aa6187f5fa',
             'gape': '171c6b7ba8e0a78b',
             'gapev': 'd4bdbda02f932c19',
             'klucb': '20218ec2e2a1248b',
             'lucb1': '7f2ae0906cec777a',
             'median-elimination': '86b2df7d052a1b73',
             'moss': '31eb728358f8a564',
             'ocucb': '99dada15c48a284d',
             'pac': 'c516e8753ca0f2a5',
             'sh': 'ec22aa0932ce0247',
             'shadavar': '9d85a54b7d0f9725',
             'shvar': '90fe444414da3339',
             'sr': '251b2c85af2e169d',
             'thompson': '0f2f66dfc1570c8d',
             'ucb-improved': 'd991cf4f7473ff0c',
             'ucb1': 'a0e7ae417381f578',
             'ucbe': 'a6abe9c0f1e8ac76',
             'ucbev': '353088ba0ece23f3',
             'ucbv': 'b734f4a67224838e',
             'ugapeb': '2d0b2b4053628777',
             'ugapec': '7541fb5f324083a3',
             'uniform': 'e4ffde4247417e3d',
             'vbr': '6b36c7d9f603594f'},
 'clear-delayed': {'agapev': '2e6c8c60ba844e05',
                   'agapev-topm': '42cd64a12fa317f7',
                   'apt': '7e632f260ce7c8b7',
                   'augucb': 'f2efe67cac28fa42',
                   'bayes-topm': '6d8cce906a8a8b2d',
                   'bayes-ucb': 'a0406e5ddf1f09ab',
                   'csar': 'f78eb5723ebf72c3',
                   'dmed': 'f5ebc07ad814c6e1',
                   'eucbv': 'cf5b82f1f8b5f65d',
                   'gape': '029feb09c70ad63c',
                   'gapev': 'd477b5206a04d3a7',
                   'klucb': '50129554a4c46ece',
                   'lucb1': '078c6e4318ca5ac7',
                   'median-elimination': '7cc8828ee3c79a9b',
                   'moss': 'e8286826f48ffd86',
                   'ocucb': '35313fb088cbaff8',
                   'pac': '83407554e2c42cb4',
                   'sh': 'a7a5d8aaff4a3d6d',
                   'shadavar': '3517432798973190',
                   'shvar': 'fd037d31d11dddbd',
                   'sr': '05775d3fb77aedf2',
                   'thompson': 'd7acb34425b37adb',
                   'ucb-improved': '29796750b10528c8',
                   'ucb1': '80c7e18f81bfa723',
                   'ucbe': '4f66612ee4851f7e',
                   'ucbev': 'd3991fbbb1214296',
                   'ucbv': '9ae552cd5fff816a',
                   'ugapeb': 'cc065e04ece2ceaa',
                   'ugapec': 'b8fc094f0ab6c6a3',
                   'uniform': 'd92d07d062ee481d',
                   'vbr': '846d3c9cc3df0b27'}}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("name", sorted(builtin_policies()))
def test_policy_makes_its_reviewed_choices(name, scenario):
    expected = FINGERPRINTS[scenario].get(name)
    assert expected is not None, (
        f"no fingerprint for built-in policy {name!r}: run python tests/plugins/regenerate_fingerprints.py"
    )
    assert fingerprint(name, scenario) == expected, (
        f"{name!r} ({scenario}) chose differently from its reviewed fingerprint; if the change is "
        "intended, regenerate the table (see this module's docstring)"
    )


def test_the_table_names_only_built_in_policies():
    """A removed or renamed policy leaves no stale entry behind."""
    for table in FINGERPRINTS.values():
        assert set(table) == set(builtin_policies())

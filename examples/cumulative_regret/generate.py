"""Write the EUCBV experiments (Mukherjee, Naveen, Sudarsanam & Ravindran) as armlab experiment files.

    python examples/cumulative_regret/generate.py              # (re)write the .toml files from the results files
    python examples/cumulative_regret/generate.py --check      # exit 1 if a file differs from what it would write
    python examples/cumulative_regret/generate.py --run [STEM..]   # run (all, or e.g. exp1_bernoulli), record, rewrite
    python examples/cumulative_regret/generate.py --table DIR..    # experiment 3's table from `armlab run --out` dirs

Experiments 1, 2 and 4 are one file each.  Experiment 3 plots the regret at the horizon
against K with T = 1e5 + K^3: K and T change together, which one ``[sweep]`` (one parameter)
cannot express, so it is one file per K; the K = 100 file's header carries the table over K.

Each header's "Ours" lines are rendered from ``results/STEM.json``, which ``--run`` writes
(examples/_headers.py): every replica's regret at every checkpoint, the commit, the scale,
and a cheap check that tests/plugins/regret/test_examples.py re-runs.  Files whose full run takes
more than about ten minutes are run at a reduced scale (RUN_REPLICAS) and say so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPLICAS = 100


sys.path.insert(0, str(HERE.parent))  # examples/ is not a package
import _headers as headers

#: the check the tests re-run: the first CHECK_REPLICAS replicas with budget CHECK_BUDGET
CHECK_REPLICAS, CHECK_BUDGET = 3, 2000
#: files run with fewer replicas than they hold (their full run takes more than ~10 minutes)
RUN_REPLICAS = {"exp3_k100.toml": 50}

#: the regret-family index policies run with random ties, as the EUCBV paper's comparison does
#: (Bernoulli indices are often exactly equal early on; docs/algorithms/index.md)
RANDOM_TIES = {"tie_break": "random"}
EUCBV = {"plugin": "eucbv", **RANDOM_TIES}
EUCBV_AUTHOR = {"plugin": "eucbv", "label": "eucbv-log-M", "log_uses": "M", **RANDOM_TIES}
MOSS = {"plugin": "moss", **RANDOM_TIES}
OCUCB = {"plugin": "ocucb", **RANDOM_TIES}
UCB1 = {"plugin": "ucb1", **RANDOM_TIES}
UCBV = {"plugin": "ucbv", **RANDOM_TIES}
DMED = {"plugin": "dmed"}
UCB_IMPROVED = {"plugin": "ucb-improved"}
MEDIAN_ELIMINATION = {"plugin": "median-elimination"}
TS_BETA = {"plugin": "thompson", "label": "ts"}
TS_GAUSS = {"plugin": "thompson", "label": "ts", "prior": "gaussian"}
KL_BERNOULLI = {"plugin": "klucb", "label": "kl-ucb", **RANDOM_TIES}
KL_GAUSS = {"plugin": "klucb", "label": "kl-ucb-gauss", "divergence": "gaussian", **RANDOM_TIES}
BU_BETA = {"plugin": "bayes-ucb", "label": "bayes-ucb", **RANDOM_TIES}
BU_GAUSS = {"plugin": "bayes-ucb", "label": "bayes-ucb-gauss", "posterior": "gaussian", **RANDOM_TIES}

SEED_TEXT = 'Mukherjee, Naveen, Sudarsanam & Ravindran, "Efficient-UCBV: An Almost Optimal'
SEED_TEXT_2 = 'Algorithm using Variance Estimates" (AAAI 2018).'
EXP3_KS = list(range(20, 101, 10))

#: Notes under a file's generated result lines (interpretation; the numbers are rendered).
NOTES: dict[str, list[str]] = {
    "exp2_failure_of_ts.toml": [
        "EUCBV's large standard error and its linear growth come from runs that eliminated the",
        "optimal arm; Median Elimination never leaves its first round (regret T times the mean gap).",
    ],
    "exp3_k100.toml": [
        "The paper's claim that EUCBV's regret grows much more slowly with K than that of TS, OCUCB",
        "and MOSS is read off the table above.",
    ],
}


def _cell(mean: float, se: float) -> str:
    return f"{mean:,.0f} +- {se:,.0f}"


def result_lines(file_name: str, results: dict[str, Any] | None) -> list[str]:
    """The "Ours" lines of one file, from its results file."""
    if results is None:
        return [f"not run yet: `generate.py --run {file_name.removesuffix('.toml')}`"]
    run = results["run"]
    summary = headers.summary(results)
    order = sorted(summary, key=lambda label: (summary[label]["mean"][-1], label))
    half = run["checkpoints"].index(min(run["checkpoints"], key=lambda c: abs(c - run["budget"] / 2)))
    lines = [f"mean regret at T = {run['budget']:,} +- standard error, lowest first:"]
    lines += headers.wrap([f"{label} {_cell(summary[label]['mean'][-1], summary[label]['stderr'][-1])}" for label in order], width=92)
    lines.append(f"at t = {run['checkpoints'][half]:,}:")
    lines += headers.wrap([f"{label} {summary[label]['mean'][half]:,.0f}" for label in order], width=92)
    where = f"From results/{file_name.removesuffix('.toml')}.json ({run['replicas']} replicas, seed {results['seed']}, commit {results['commit']})"
    if run["replicas"] != REPLICAS:
        lines += [where + ":", f"a REDUCED SCALE, {run['replicas']} of this file's {REPLICAS} replicas (the full run takes over ten minutes)."]
    else:
        lines += [where + ";", "`armlab run` of this file gives the same numbers."]
    return lines


def exp3_table(results_of) -> list[str]:
    """Final regret against K from the experiment-3 results files."""
    rows = []
    for k in EXP3_KS:
        results = results_of(f"exp3_k{k:03d}.toml")
        if results is None:
            continue
        summary = headers.summary(results)
        rows.append((k, results["run"]["budget"], results["run"]["replicas"],
                     {label: (e["mean"][-1], e["stderr"][-1]) for label, e in summary.items()}))
    if not rows:
        return []
    labels = list(rows[0][3])
    out = ["Final regret against K (mean +- standard error; from the exp3 results files):",
           "K    T          runs" + "".join(f"{label:>18s}" for label in labels)]
    for k, budget, replicas, cells in rows:
        out.append(f"{k:<4d} {budget:<10d} {replicas:>4d}" + "".join(f"{_cell(*cells[label]):>18s}" for label in labels))
    return out


def experiments() -> dict[str, dict[str, Any]]:
    """File name -> header lines and experiment table."""
    out = {
        "exp1_bernoulli.toml": {
            "header": [
                "Experiment 1 (Fig. 1a): Bernoulli arms, uniform small gaps, short horizon.",
                "K = 20: 19 arms with mean 0.07, the optimal arm (here the last) 0.1; T = 60000; 100 runs;",
                "cumulative pseudo-regret against t with standard errors (checkpoints every 2000 pulls).",
                "EUCBV psi = T/K^2, rho = 1/2; TS Beta-Bernoulli, KL-UCB and Bayes-UCB (Beta) with c = 0,",
                "DMED (pymaBandits list version), OCUCB (alpha 3, psi 2);",
                "eucbv-log-M is the authors' code's log(psi M eps) variant (log_uses = \"M\"), for comparison.",
                "",
                "Paper: EUCBV below MOSS, OCUCB, UCB1, UCB-V, KL-UCB and Bayes-UCB, slightly below TS.",
                "An independent simulation of this setup (means at T): TS 426, DMED 482, BU 622, KL-UCB 724,",
                "MOSS 734, OCUCB 916, EUCBV 970, UCB-V 1327, UCB1 1607; EUCBV log-M 275.",
            ],
            "table": {
                "name": "cumulative-regret-exp1",
                "seed": 1001,
                "checkpoint_every": 2000,
                "budget": 60_000,
                "source": {"plugin": "bernoulli", "means": [0.07] * 19 + [0.1]},
                "policies": [EUCBV, MOSS, UCB1, UCBV, KL_BERNOULLI, TS_BETA, BU_BETA, DMED, OCUCB, EUCBV_AUTHOR],
            },
        },
        "exp2_failure_of_ts.toml": {
            "header": [
                "Experiment 2 (Fig. 1b, \"failure of TS\"): 100 Gaussian arms, T = 3e5, 100 runs.",
                "Arms 1-33: mean 0.7, variance 0.7; arms 34-99: mean 0.8, variance 0.1; arm 100: mean 0.9,",
                "variance 0.7 (the seed's \"r*_100 = 0.7\" is a typo for the variance).  Rewards are raw",
                "(no clipping); TS, KL-UCB and Bayes-UCB use their Gaussian forms with variance 1.",
                "Cumulative pseudo-regret against t with standard errors (checkpoints every 10000 pulls).",
                "",
                "Paper: EUCBV below MOSS, OCUCB, UCB1, TS, UCB-Improved and Median Elimination (left off",
                "the plot, far worse); TS weak; Bayes-UCB and KL-UCB-Gauss much worse than TS; y-axis ~1e4.",
                "An independent simulation: MOSS 3,101, EUCBV 4,251 (median 2,409; about 6 % of runs lose the optimal arm),",
                "OCUCB 4,798, TS 8,690, Bayes-UCB 13,800, UCB1 16,567, KL-UCB-Gauss 16,612 (= UCB1),",
                "UCB-Improved 28,120, Median Elimination 39,600 (it never leaves round 1).",
                "There, EUCBV < MOSS was not robust to the seed; EUCBV below the others was.",
            ],
            "table": {
                "name": "cumulative-regret-exp2",
                "seed": 1002,
                "checkpoint_every": 10_000,
                "budget": 300_000,
                "source": {
                    "plugin": "gaussian",
                    "means": [0.7] * 33 + [0.8] * 66 + [0.9],
                    "variances": [0.7] * 33 + [0.1] * 66 + [0.7],
                },
                "policies": [EUCBV, MOSS, OCUCB, UCB1, TS_GAUSS, UCB_IMPROVED, MEDIAN_ELIMINATION, BU_GAUSS, KL_GAUSS],
            },
        },
        "exp4_advanced.toml": {
            "header": [
                "Experiment 4 (Fig. 2b, \"advanced setting\": the optimal arm has the largest variance).",
                "100 Gaussian arms: 1-33 mean 0.4, variance 0.2; 34-99 mean 0.6, variance 0.1; arm 100",
                "mean 0.9, variance 0.4.  T = 3e5; the seed gives no run count, 100 here.",
                "Cumulative pseudo-regret against t with standard errors (checkpoints every 10000 pulls).",
                "",
                "Paper: EUCBV below TS, MOSS and OCUCB; UCB-V, KL-UCB and Bayes-UCB far worse (not plotted).",
                "An independent simulation: EUCBV 977, MOSS 1,341, OCUCB 2,641, TS 4,145, Bayes-UCB 5,526, UCB1 6,823,",
                "KL-UCB-Gauss 6,829, UCB-V 7,108; EUCBV's curve is flat from t ~ 30000.",
            ],
            "table": {
                "name": "cumulative-regret-exp4",
                "seed": 1004,
                "checkpoint_every": 10_000,
                "budget": 300_000,
                "source": {
                    "plugin": "gaussian",
                    "means": [0.4] * 33 + [0.6] * 66 + [0.9],
                    "variances": [0.2] * 33 + [0.1] * 66 + [0.4],
                },
                "policies": [EUCBV, MOSS, OCUCB, TS_GAUSS, UCBV, KL_GAUSS, BU_GAUSS, UCB1],
            },
        },
    }
    for k in EXP3_KS:
        out[f"exp3_k{k:03d}.toml"] = {
            "header": [
                f"Experiment 3 (Fig. 2a), K = {k}: Gaussian arms with uniform gaps, regret at T against K.",
                f"{k - 1} arms with mean 0.05 and variance 0.25, the optimal arm (the last) mean 0.1 and",
                f"variance 0.7; T = 1e5 + K^3 = {100_000 + k**3}; 100 runs.  One file per K = 20, 30, ..., 100",
                "(K and T change together); `generate.py --table DIR...` gathers the final regrets.",
                "",
                "Paper: EUCBV's regret grows with K much more slowly than that of TS, OCUCB and MOSS.",
                "An independent simulation (mean, median): K = 20: MOSS 1,187, EUCBV 1,345 (970), OCUCB 1,395, TS 2,324;",
                "K = 50: MOSS 2,739, EUCBV 3,156, OCUCB 3,714, TS 6,694; K = 100: MOSS 6,384, OCUCB 9,841,",
                "EUCBV 12,047 (6,128; some runs eliminate the optimal arm), TS 19,818.",
            ],
            "table": {
                "name": f"cumulative-regret-exp3-k{k:03d}",
                "seed": 1003,
                "budget": 100_000 + k**3,
                "source": {
                    "plugin": "gaussian",
                    "means": [0.05] * (k - 1) + [0.1],
                    "variances": [0.25] * (k - 1) + [0.7],
                },
                "policies": [EUCBV, MOSS, OCUCB, TS_GAUSS],
            },
        }
    return out


def _value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value)


def _array(values: list[float]) -> str:
    if len(values) <= 10:
        return "[" + ", ".join(_value(v) for v in values) + "]"
    rows = [", ".join(_value(v) for v in values[i : i + 10]) for i in range(0, len(values), 10)]
    return "[\n" + "".join(f"    {row},\n" for row in rows) + "]"


def _table(entries: dict[str, Any]) -> list[str]:
    return [f"{key} = {_array(v) if isinstance(v, list) else _value(v)}" for key, v in entries.items()]


def results_path(file_name: str) -> Path:
    return HERE / "results" / (file_name.removesuffix(".toml") + ".json")


def results_of(file_name: str) -> dict[str, Any] | None:
    return headers.read(results_path(file_name))


def body(file_name: str, spec: dict[str, Any]) -> str:
    """The config without its header."""
    return render(file_name, spec, header=False)


def render(file_name: str, spec: dict[str, Any], header: bool = True) -> str:
    """The text of one experiment file."""
    t = spec["table"]
    ours = result_lines(file_name, results_of(file_name)) + NOTES.get(file_name, [])
    if file_name == "exp3_k100.toml":
        ours += exp3_table(results_of)
    lines = [f"# {SEED_TEXT}", f"# {SEED_TEXT_2}"] + [f"# {line}".rstrip() for line in spec["header"]]
    lines += ["#", f"# Ours (this file as shipped, `armlab run examples/cumulative_regret/{file_name}`):"]
    lines += [f"#   {line}".rstrip() for line in ours]
    lines += ["#", "# Generated by examples/cumulative_regret/generate.py; edit that script, not this file."]
    if not header:
        lines = []
    top = {"name": t["name"], "seed": t["seed"], "replicas": REPLICAS}
    if "checkpoint_every" in t:
        top["checkpoint_every"] = t["checkpoint_every"]
    lines += _table(top)
    lines += ["", "[problem]", 'objective = "regret"', f"budget = {t['budget']}", "", "[source]"]
    lines += _table(t["source"])
    for policy in t["policies"]:
        lines += ["", "[[policies]]", *_table(policy)]
    return "\n".join(lines) + "\n"


def final_regret_table(dirs: list[Path]) -> str:
    """Final regret (mean +- standard error) per policy against K from ``summary.json`` files."""
    rows = []
    for directory in dirs:
        path = directory / "summary.json"
        if not path.is_file():
            raise SystemExit(f"--table: {path} does not exist; pass the --out directories of the exp3 runs")
        summary = json.loads(path.read_text(encoding="utf-8"))
        policies = summary["policies"]
        k = summary["name"].rsplit("-k", 1)[-1]  # cumulative-regret-exp3-k020
        cells = {label: (p["regret_mean"][-1], p["regret_stderr"][-1]) for label, p in policies.items()}
        rows.append((int(k), summary["budget"], cells))
    labels = list(rows[0][2]) if rows else []
    out = ["K    T        " + "".join(f"{label:>20s}" for label in labels)]
    for k, budget, cells in sorted(rows):
        out.append(f"{k:<4d} {budget:<8d} " + "".join(f"{cells[lb][0]:>11.0f} +- {cells[lb][1]:<5.0f}" for lb in labels))
    return "\n".join(out)


def run(file_name: str, spec: dict[str, Any]) -> None:
    config = headers.config_from_text(body(file_name, spec))
    if file_name in RUN_REPLICAS:
        config = headers.scaled(config, RUN_REPLICAS[file_name], config.problem.budget, config.checkpoint_list())
    print(f"running {file_name} ({config.replicas} replicas, T = {config.problem.budget}) ...", flush=True)
    headers.write(results_path(file_name), headers.record(config, CHECK_REPLICAS, CHECK_BUDGET))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only compare the files with what would be written")
    mode.add_argument("--run", nargs="*", metavar="STEM",
                      help="run these files (default: all), e.g. exp1_bernoulli; write their results files")
    mode.add_argument("--table", nargs="+", type=Path, metavar="DIR", help="print experiment 3's table from result dirs")
    args = parser.parse_args(argv)
    if args.table:
        print(final_regret_table(args.table))
        return 0
    specs = experiments()
    if args.run is not None:
        names = [f"{stem.removesuffix('.toml')}.toml" for stem in args.run] or list(specs)
        unknown = [name for name in names if name not in specs]
        if unknown:
            parser.error(f"unknown file(s) {unknown}; known: {', '.join(specs)}")
        for name in names:
            run(name, specs[name])
    stale = []
    for file_name, spec in specs.items():
        path, text = HERE / file_name, render(file_name, spec)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(file_name)
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("out of date (run examples/cumulative_regret/generate.py): " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

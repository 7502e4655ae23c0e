"""``reteco compare`` and ``reteco.compare`` (issue 35): a participant's runs compared with the
leaderboard's procedure, ``reteco.metrics.significance.compare_systems``, on the per-unit
official figures that ``reteco.evaluate`` reports; the command prints what the API returns."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.paths import SAMPLES

import reteco
from reteco.commands import main
from reteco.metrics.significance import bootstrap_ci, compare_systems, paired_randomization_test
from reteco.release.prepare import prepare_release
from reteco.release.synthetic.release import write_synthetic_release


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    prepare_release(write_synthetic_release(root / "release"), "dev", root / "ref", subtracks=("2a", "2b"))
    return root / "ref"


@pytest.fixture(scope="module")
def runs(ref, tmp_path_factory):
    """The 2a sample, and a worse run: each topic's first document moved to the end."""
    folder = tmp_path_factory.mktemp("runs")
    sample = SAMPLES / "2a" / "run.txt"
    lines = [line.split() for line in sample.read_text().splitlines()]
    worse = [[t, q, d, r, str(-1.0 if r == "1" else float(s)), g] for t, q, d, r, s, g in lines]
    (folder / "worse.txt").write_text("".join(" ".join(w) + "\n" for w in worse))
    return {"sample": sample, "worse": folder / "worse.txt"}


def test_the_api_is_the_leaderboards_procedure_on_the_per_unit_figures(ref, runs):
    found = reteco.compare(runs, ref / "2a", resamples=2000)
    per_unit = {name: reteco.evaluate(path, ref / "2a").per_topic["ndcg_10"] for name, path in runs.items()}
    order = sorted(per_unit, key=lambda n: -per_unit[n].mean())
    matrix = np.vstack([per_unit[n].to_numpy() for n in order])
    expected = compare_systems(matrix, order, resamples=2000)
    assert [s["name"] for s in found["systems"]] == order == ["sample", "worse"]
    for i, system in enumerate(found["systems"]):
        assert system["mean"] == pytest.approx(matrix[i].mean(), abs=1e-15)
        assert (system["ci_low"], system["ci_high"]) == (expected.ci_low[i], expected.ci_high[i])
        low, high = bootstrap_ci(matrix[i], resamples=2000)  # a run's interval is its own, whatever the others
        assert (system["ci_low"], system["ci_high"]) == (low, high)
    assert [(p["a"], p["b"], p["delta"], p["p_adjusted"]) for p in found["pairs"]] == [
        (p.a, p.b, p.delta, p.p_adjusted) for p in expected.pairs]
    assert found["pairs"][0]["significant"] == (found["pairs"][0]["p_adjusted"] <= 0.05)
    holm = reteco.compare(runs, ref / "2a", procedure="holm", resamples=2000)
    single = paired_randomization_test(matrix[0], matrix[1], resamples=2000)
    assert holm["pairs"][0]["p_value"] == single.p_value  # one pair: Holm leaves it as it is
    assert found["units"] == 51 and found["official"] == "ndcg_10"


def test_the_command_prints_and_writes_what_the_api_returns(ref, runs, tmp_path, capsys):
    out = tmp_path / "compare.json"
    argv = ["compare", "--ref", str(ref / "2a"), str(runs["worse"]), str(runs["sample"]), "--resamples", "2000",
            "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out.splitlines()
    written = json.loads(out.read_text())
    api = reteco.compare([runs["worse"], runs["sample"]], ref / "2a", resamples=2000)
    assert written == json.loads(json.dumps(api))
    assert printed[0] == "ndcg_10 over 51 units; 95% bootstrap intervals; tukey-hsd at alpha 0.05"
    best = api["systems"][0]
    assert printed[2].split() == [str(runs["sample"]), f"{best['mean']:.4f}", f"[{best['ci_low']:.4f},",
                                  f"{best['ci_high']:.4f}]", best["letters"]]
    pair = api["pairs"][0]
    verdict = "significant" if pair["significant"] else "not significant"
    assert printed[-1].endswith(f"{pair['delta']:+.4f}, p adjusted {pair['p_adjusted']:.4f}: {verdict}")


def test_mistakes_are_usage_or_input_errors(ref, runs, capsys):
    assert main(["compare", "--ref", str(ref / "2a"), str(runs["sample"])]) == 2
    assert "give two runs or more" in capsys.readouterr().err
    assert main(["compare", "--ref", str(ref / "2b"), str(runs["sample"]), str(runs["worse"])]) == 2
    assert "scores answers" in capsys.readouterr().err
    with pytest.raises(reteco.InputError, match="give two runs or more"):
        reteco.compare([runs["sample"]], ref / "2a")
    with pytest.raises(reteco.InputError, match="procedure"):
        reteco.compare(runs, ref / "2a", procedure="t-test")

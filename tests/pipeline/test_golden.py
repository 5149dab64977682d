"""Behaviour kept through refactoring: six fixed-seed gate runs (release and gate-only flows;
copies, noisy copies, an independent sample, MST with MAMA-MIA shadow + oracle, households with
entities and the dependency test) give the verdicts, checks and metrics recorded in
``tests/golden/verdicts.json``. Regenerated (``python -m tests.golden.scenarios --write``) when
the decision became one error budget (gate/budget.py): the six decisions stayed what they were
(BLOCK for the copies, the noisy copies, the gate-only copies and the households; APPROVE for the
independent sample and MST), the checks are now the budget's tests and the rules' bars. The MST
release draws fresh DP noise each run, so only its structure (metrics, checks, thresholds,
decision) is compared."""

import ast
import json
import re

import pytest

from ..golden.scenarios import GOLDEN, SCENARIOS, STRUCTURE_ONLY, canonical, differences, is_count

EXPECTED = json.loads(GOLDEN.read_text())

#: Differences made on purpose after the redesign, each with its reason (none open: the entries are
#: re-recorded). Everything else must match.
INTENDED: dict[str, set[str]] = {}


#: Scenarios judged with the *default* attack list, which gained ``dcr_ratio`` (the others name
#: their attacks in the frozen config).
DEFAULT_ATTACK_SCENARIOS = {"gate_only"}


def per_sample_change(diff: str, *, default_attacks: bool = False) -> bool:
    """Differences the per-sample gates make on purpose:

    - the exposure scan adds its figures (``exposed.*``);
    - small subgroups are no longer merged into "<cols>=other": that group and its figures are
      gone, and every group (small ones included) gains its rank test, its exposed count and its
      sizes (new ``subgroup/...`` metrics; no existing figure of a named group changes);
    - with ``default_attacks`` (a scenario run with the default attack list): ``dcr_ratio``'s own
      figures, and the figures it joins (the combined query, the strongest attack).
    """
    if diff.startswith("metric exposed.") and (": None -> " in diff or diff.endswith(": new")):
        return True
    if default_attacks and (
        "dcr_ratio" in diff
        or diff.startswith(
            ("metric combined.", "metric strongest.", "reasons ('combined.", "checks ('combined.")
        )
    ):
        return True
    if diff.startswith("metric subgroup/") and diff.endswith((": new", ": missing")):
        return diff.endswith(": new") or "/other/" in diff
    if diff.startswith("metric subgroup/"):
        key, _, change = diff.removeprefix("metric ").partition(": ")
        return change.startswith("None -> ") or ("/other/" in key and change.endswith("-> None"))
    if diff.startswith("flagged_subgroups: "):
        before, _, after = diff.removeprefix("flagged_subgroups: ").partition(" -> ")
        return [
            g for g in ast.literal_eval(before) if not g.endswith("=other")
        ] == ast.literal_eval(after)
    if diff.startswith(("reasons ", "checks ", "check (")):  # "check (": the structure-only form
        return "=other: " in diff and diff.endswith(": missing")
    return False


def dependency_addition(diff: str) -> bool:
    """Figures the dependent-data gate adds on purpose: the train-vs-reference source
    shift (``dependency.*``) and MACE bounds on the dependency test's targets
    (``<attack>.dependency.mace.*``). Only additions: a changed existing figure still fails."""
    key, _, change = diff.removeprefix("metric ").partition(": ")
    added = change.startswith("None -> ") or change == "new"
    return (
        diff.startswith("metric ")
        and added
        and (key.startswith("dependency.") or ".dependency.mace." in key)
    )


#: a pooled rare-values group's label (``1st-4th|Preschool``) is outside MLflow's
#: key alphabet. Its key segment used to be the lossy ``1st-4th_Preschool`` (which a value
#: ``1st-4th_Preschool`` would share); ``names.key_segment`` keeps that spelling and appends a hash
#: of the label. The same figure under the renamed key is not a difference; a changed figure still
#: is.
_KEY_HASH = re.compile(r"-h[0-9a-f]{10}")


def renamed_subgroup_keys(diffs: list[str]) -> set[str]:
    """The diffs that drop a ``subgroup/`` key whose figure reappears, equal, under the key with one
    segment renamed by ``names.key_segment`` (its spelling plus ``-h`` and 10 hex digits)."""

    def parse(diff: str) -> tuple[str, str, str] | None:
        if not diff.startswith("metric subgroup/"):
            return None
        key, _, change = diff.removeprefix("metric ").partition(": ")
        if change in ("missing", "new"):
            return key, change, ""
        before, _, after = change.partition(" -> ")
        if after == "None":
            return key, "missing", before
        if before == "None":
            return key, "new", after
        return None

    parsed = [(d, p) for d in diffs if (p := parse(d))]
    added = {(key, value) for _, (key, kind, value) in parsed if kind == "new"}
    explained = set()
    for diff, (key, kind, value) in parsed:
        if kind != "missing":
            continue
        parts = key.split("/")
        for i in range(1, len(parts) - 1):
            stem = "/".join(parts[:i]) + "/" + re.escape(parts[i])
            pattern = re.compile(
                stem + _KEY_HASH.pattern + "/" + re.escape("/".join(parts[i + 1 :]))
            )
            if any(pattern.fullmatch(k) and v == value for k, v in added):
                explained.add(diff)
    return explained


@pytest.fixture(scope="module")
def golden_folder(tmp_path_factory):
    from ..golden.scenarios import _small_adult

    folder = tmp_path_factory.mktemp("golden")
    _small_adult(folder)
    return folder


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_verdicts_and_metrics_unchanged(prefect_server, golden_folder, name):
    actual = canonical(SCENARIOS[name](golden_folder))
    found = differences(EXPECTED[name], actual, values=name not in STRUCTURE_ONLY)
    renamed = renamed_subgroup_keys(found)
    diffs = [
        d
        for d in found
        if d not in INTENDED.get(name, ())
        and not dependency_addition(d)
        and d not in renamed
        and not per_sample_change(d, default_attacks=name in DEFAULT_ATTACK_SCENARIOS)
    ]
    assert not diffs, f"{name}: {len(diffs)} differences:\n" + "\n".join(diffs[:30])


def test_per_sample_allowance_is_narrow():
    """Only additions and the removed "other" group pass; a changed figure of a named group does
    not."""
    assert per_sample_change("metric subgroup/race/Other/membership_test.p_value: None -> 0.44")
    assert per_sample_change("metric subgroup/sex_x_race/other/dcr.auc: 0.51 -> None")
    assert not per_sample_change("metric subgroup/race/Black/dcr.auc: 0.51 -> 0.52")
    assert not per_sample_change("metric dcr.auc: 0.51 -> 0.52")
    assert not per_sample_change("metric strongest.auc: 0.53 -> 0.56")
    assert per_sample_change("metric strongest.auc: 0.53 -> 0.56", default_attacks=True)
    assert not per_sample_change("metric combined.mace.advantage: 0.1 -> 0.2")
    assert per_sample_change(
        "check ('sex&race=other: dcr.auc', '[each subgroup] any.auc <= 0.7', 0.7): missing"
    )
    assert not per_sample_change("verdict: 'APPROVE' -> 'REVIEW'")
    assert not per_sample_change("flagged_subgroups: ['race=Black'] -> []")
    assert per_sample_change(
        "checks ('sex&race=other: dcr.auc', '[each subgroup] any.auc <= 0.7'): missing"
    )
    assert not per_sample_change(
        "checks ('race=Black: dcr.auc', '[each subgroup] any.auc <= 0.7'): missing"
    )


def test_renamed_key_allowance_is_narrow():
    """A dropped key is explained only by the same figure under its key_segment-renamed key."""
    old, new = (
        "subgroup/education/1st-4th_Preschool/n_members",
        "subgroup/education/1st-4th_Preschool-h0123456789/n_members",
    )
    assert renamed_subgroup_keys([f"metric {old}: 3.0 -> None", f"metric {new}: None -> 3.0"]) == {
        f"metric {old}: 3.0 -> None"
    }
    assert renamed_subgroup_keys([f"metric {old}: missing", f"metric {new}: new"]) == {
        f"metric {old}: missing"
    }
    assert not renamed_subgroup_keys([f"metric {old}: 3.0 -> None", f"metric {new}: None -> 4.0"])
    assert not renamed_subgroup_keys(
        [
            f"metric {old}: 3.0 -> None",
            "metric subgroup/education/Preschool-h0123456789/n_members: None -> 3.0",
        ]
    )
    assert not renamed_subgroup_keys([f"metric {old}: 3.0 -> None"])


def test_dependency_allowance_is_narrow():
    assert dependency_addition("metric dependency.source_tv: None -> 0.02")
    assert dependency_addition("metric dcr.dependency.mace.advantage_lower: None -> 0.96")
    assert not dependency_addition("metric dcr.dependency.auc: 0.91 -> 0.92")
    assert not dependency_addition("metric dcr.dependency.mace.advantage_lower: 0.5 -> 0.96")
    assert not dependency_addition("verdict: 'BLOCK' -> 'REVIEW'")


def test_the_comparison_can_fail():
    """A changed metric, check or decision is reported (the comparison is not vacuous)."""
    base = EXPECTED["independent"]
    changed = json.loads(json.dumps(base))
    changed["verdict"] = "REVIEW"
    key = next(iter(changed["metrics"]))
    changed["metrics"][key] += 1e-6
    changed["checks"][0]["passed"] = not changed["checks"][0]["passed"]
    diffs = differences(base, changed)
    assert any(d.startswith("verdict") for d in diffs)
    assert any(key in d for d in diffs) and any("passed" in d for d in diffs)


def _one_change(name: str, edit) -> list[str]:
    changed = json.loads(json.dumps(EXPECTED[name]))
    edit(changed)
    return differences(EXPECTED[name], changed)


def test_the_float_tolerance_takes_blas_rounding_only():
    """The comparison tolerates what another CPU's BLAS kernels change (<= 5.4e-8 relative,
    measured; see scenarios.REL_TOL) and nothing a real change makes: a float beyond the
    tolerance, one target changing rank in the largest AUC, a count off by one, a flipped check,
    an action, a threshold, a flagged group or a hash."""
    name = "households"  # the largest target sets (805 per class): the smallest rank step
    base = EXPECTED[name]
    metrics = base["metrics"]

    def scale(key, factor):
        return lambda v: v["metrics"].__setitem__(key, v["metrics"][key] * factor)

    # what was observed between two CPUs, and 10x that: not a difference
    assert not _one_change(name, scale("combined.mace.advantage", 1 + 5.4e-8))
    assert not _one_change(name, scale("domias.auc", 1 - 5.4e-7))
    assert not _one_change(
        "independent",
        lambda v: v["metrics"].__setitem__("combined.mace.advantage", 0.22320729667595815),
    )  # the example
    # beyond the tolerance: reported
    assert _one_change(name, scale("combined.mace.advantage", 1 + 2e-6)) == [
        f"metric combined.mace.advantage: {metrics['combined.mace.advantage']!r} -> "
        f"{metrics['combined.mace.advantage'] * (1 + 2e-6)!r}"
    ]
    # one member overtaking one non-member in the 805 x 805 AUC
    n1, n0 = metrics["dcr.n_members"], metrics["dcr.n_non_members"]
    assert n1 * n0 >= 600 * 600
    for key in ("dcr.auc", "domias.auc"):
        step = 1 / (n1 * n0)
        assert _one_change(
            name, lambda v, k=key, s=step: v["metrics"].__setitem__(k, v["metrics"][k] + s)
        )
        assert _one_change(
            name, lambda v, k=key, s=step: v["metrics"].__setitem__(k, v["metrics"][k] - s)
        )
    # counts are exact, however large: one target more is reported
    for key in ("dcr.n_members", "utility.n_pairs", "validation.synthetic.failed"):
        assert _one_change(
            name, lambda v, k=key: v["metrics"].__setitem__(k, v["metrics"][k] + 1)
        ), key
    assert _one_change(
        name,
        lambda v: v["metrics"].__setitem__("dcr.n_members", metrics["dcr.n_members"] * (1 + 1e-7)),
    )
    assert (
        is_count("subgroup/sex/Female/n_members")
        and is_count("exposed.count")
        and is_count("exposed.tested")
    )
    assert not is_count("dcr.auc") and not is_count("exposed.share_upper")
    # a new or missing metric, None vs a value
    assert _one_change(name, lambda v: v["metrics"].pop("dcr.auc"))
    assert _one_change(name, lambda v: v["metrics"].__setitem__("dcr.auc", None))
    # checks and reasons: pass/fail, action, threshold exactly; observed like the metric
    check = base["checks"][0]
    for field, value in (
        ("passed", not check["passed"]),
        ("action", "review" if check["action"] != "review" else "block"),
        ("threshold", check["threshold"] * (1 + 1e-9)),
    ):
        assert _one_change(name, lambda v, f=field, x=value: v["checks"][0].__setitem__(f, x)), (
            field
        )
    assert _one_change(
        name,
        lambda v: v["checks"][0].__setitem__("observed", (check["observed"] or 0) * 1.01 + 1e-3),
    )
    assert not _one_change(
        name,
        lambda v: v["checks"][0].__setitem__(
            "observed", None if check["observed"] is None else check["observed"] * (1 + 5e-8)
        ),
    )
    assert _one_change(name, lambda v: v["reasons"].pop())
    # decisions, flagged groups, hashes: exact
    assert _one_change(name, lambda v: v.__setitem__("status", "error"))
    assert _one_change(
        name, lambda v: v.__setitem__("flagged_subgroups", v["flagged_subgroups"] + ["race=Other"])
    )
    assert _one_change(name, lambda v: v["data_hashes"].__setitem__("train_sha256", "0" * 64))
    assert _one_change(name, lambda v: v.__setitem__("rules_hash", "0" * 16))

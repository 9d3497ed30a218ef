"""
What a `--budget` decision spent against the full protocol (every search trial to the end,
every seed to the cap), in encoder passes: a pruned trial extended to its planned epochs, the
seeds to the last look of `--sequential`, the table and the answer's line.
"""

import json

import pytest

from allennlp_tune.reporting.budgets import DECISION_TITLE
from allennlp_tune.reporting.costs import encoder_passes, passes_to_the_end
from allennlp_tune.reporting.render import render_markdown
from allennlp_tune.rundir import load_run
from tests.results.test_report_verdict import make, notes, report, table, wrong_every

CACHE = {"feature_cache": {"disk_mb": 100}}


def _run(make_run, tmp_path, name, epochs, instances, trained, cached=False, lookups=None):
    run_dir = make_run(tmp_path / name / "seed_1", 1, 0.5)
    embedder = {"type": "pretrained_transformer_mismatched", **(CACHE if cached else {})}
    config = {
        "trainer": {"num_epochs": epochs, "validation_metric": "+accuracy"},
        "model": {"text_field_embedder": {"token_embedders": {"tokens": embedder}}},
    }
    (run_dir / "config.json").write_text(json.dumps(config))
    cost = {"epoch_instances": instances, "epoch_encoder_trained": trained}
    if lookups is not None:
        cost["epoch_cache_lookups"] = lookups
    (run_dir / "cost.json").write_text(json.dumps(cost))
    return load_run(run_dir)


@pytest.mark.parametrize(
    "epochs, trained, cached, spent, to_the_end",
    [
        # ft pruned after 2 of 5 epochs: 3 more epochs forward and backward.
        (5, [True, True], False, (200, 0), (500, 0)),
        # sf pruned in its first tuned epoch: its later epochs tune too.
        (4, [False, True], False, (100, 100), (300, 100)),
        # fe with a cache: later frozen epochs read the cache and run no encoder.
        (10, [False, False], True, (0, 100), (0, 100)),
        # fe without a cache: every frozen epoch runs the encoder forward.
        (4, [False, False], False, (0, 200), (0, 400)),
        # A run that trained all it planned (or early-stopped at it) counts as trained.
        (2, [True, True], False, (200, 0), (200, 0)),
    ],
)
def test_a_pruned_trial_to_the_end(tmp_path, make_run, epochs, trained, cached, spent, to_the_end):
    run = _run(
        make_run, tmp_path, "reviews_minilm_ft", epochs, [100] * len(trained), trained, cached
    )
    assert encoder_passes(run) == spent
    assert passes_to_the_end(run) == to_the_end


@pytest.mark.parametrize(
    "lookups, spent, to_the_end",
    [
        # It filled the cache in its first epoch and read it after: as without the lookups.
        ([[120, 0], [0, 120]], (0, 100), (0, 100)),
        # It read a cache an earlier trial had filled: no encoder pass at all.
        ([[0, 120], [0, 120]], (0, 0), (0, 0)),
        # Its cache kept a quarter of the entries (a disk budget): the rest every epoch.
        ([[120, 0], [90, 30]], (0, 175), (0, 475)),
    ],
)
def test_a_cached_run_pays_the_entries_its_encoder_computed(
    tmp_path, make_run, lookups, spent, to_the_end
):
    run = _run(
        make_run, tmp_path, "reviews_minilm_fe", 6, [100, 100], [False, False], True, lookups
    )
    assert encoder_passes(run) == spent
    assert passes_to_the_end(run) == pytest.approx(to_the_end)


def _budget_folder(tmp_path, make_run, cap=None):
    """--budget 3 over fe and ft, three seeds each (fe wrong on every third example, ft on every
    tenth); ft's search pruned trials (spent 400 fwd+bwd, 600 to the end), fe's none; each ft
    seed 3 epochs x 120 instances fwd+bwd, each fe seed 3 epochs x 120 forward (no cache)."""
    root = tmp_path / "runs"
    settings = {"fe": {"TUNE_LR": "0.001"}, "ft": {"TUNE_LR": "0.0001"}}
    for seed in (1, 2, 3):
        for mode, every in (("fe", 3), ("ft", 10)):
            run_dir = make(make_run, root, f"reviews_minilm_{mode}", seed, wrong_every(every, seed))
            cost = {"epoch_instances": [120] * 3, "epoch_encoder_trained": [mode == "ft"] * 3}
            (run_dir / "cost.json").write_text(json.dumps(cost))
            info = {"ext_vars": settings[mode]}
            (run_dir / "tune_run.json").write_text(json.dumps(info))
    modes = [
        {"mode": "fe", "trials": {"complete": 3}, "setting": settings["fe"],
         "passes": [0, 240], "full_passes": [0, 240]},
        {"mode": "ft", "trials": {"complete": 1, "pruned": 2}, "setting": settings["ft"],
         "passes": [400, 0], "full_passes": [600, 0], "start_passes": [300, 0]},
    ]  # fmt: skip
    budget = {"task": "reviews", "encoder": "minilm", "budget": 3, "modes": modes}
    (root / "budget.json").write_text(json.dumps(budget))
    if cap is not None:
        sequential = {"task": "reviews", "encoder": "minilm", "plan": {"looks": [3, cap]}}
        (root / "sequential.json").write_text(json.dumps(sequential))
    return root


def test_the_decision_against_the_full_protocol(tmp_path, make_run):
    """Seeds stopped at the first look of 3 and 5: the full protocol trains 5 of each.
    In forward passes (fwd+bwd = 3): ft trials 1,200 of 1,800, seeds 3,240 of 5,400; fe trials
    240 of 240, seeds 1,080 of 1,800; 5,760 of 9,240 in all, 62%."""
    markdown = render_markdown(report(_budget_folder(tmp_path, make_run, cap=5)))
    header, rows = table(markdown, DECISION_TITLE)
    assert header[1:] == [
        "Search trials: spent / to the end",
        "Seeds: trained / the cap",
        "Spent",
        "Full protocol",
        "Share",
        "Naive experiment",
        "Spent / naive",
    ]
    ft, fe = rows["minilm reviews ft"], rows["minilm reviews fe"]
    total = rows["minilm reviews, all modes"]
    assert ft["Search trials: spent / to the end"] == "1.2k / 1.8k"
    assert ft["Seeds: trained / the cap"] == "3 of 5: 3.2k / 5.4k"
    assert (ft["Spent"], ft["Full protocol"], ft["Share"]) == ("4.4k", "7.2k", "62%")
    assert (fe["Spent"], fe["Full protocol"], fe["Share"]) == ("1.3k", "2.0k", "65%")
    assert total["Seeds: trained / the cap"] == "6 of 10: 4.3k / 7.2k"
    assert (total["Spent"], total["Full protocol"], total["Share"]) == ("5.8k", "9.2k", "62%")
    # The naive experiment, one run per mode at its recipe: ft's start trial to its end (300
    # fwd+bwd, 900 forward passes); fe's recipe was not a trial here, so one of its seeds (360).
    assert (ft["Naive experiment"], ft["Spent / naive"]) == ("900", "4.9x")
    assert (fe["Naive experiment"], fe["Spent / naive"]) == ("360 (est.)", "3.7x")
    assert (total["Naive experiment"], total["Spent / naive"]) == ("1.3k (est.)", "4.6x")
    answer = notes(markdown, "The answer")
    assert answer[0].startswith("minilm reviews (accuracy, points, 95% intervals): use ft")
    assert "equal budgets (3 trials per mode" in answer[0]
    assert answer[1].startswith("The decision on minilm reviews cost 5.8k encoder passes")
    assert "62% of the full protocol's 9.2k" in answer[1] and "6 of 10 seed runs" in answer[1]
    assert (
        "and 4.6x the naive experiment's 1.3k (one run per mode at its config's recipe, "
        in (answer[1])
    )


def test_without_looks_the_seeds_trained_are_all_the_seeds(tmp_path, make_run):
    markdown = render_markdown(report(_budget_folder(tmp_path, make_run)))
    _header, rows = table(markdown, DECISION_TITLE)
    assert rows["minilm reviews ft"]["Seeds: trained / the cap"] == "3 of 3: 3.2k / 3.2k"
    # Only ft's pruned trials make the difference: 5,760 of 6,360.
    assert rows["minilm reviews, all modes"]["Share"] == "91%"


def test_a_budget_file_from_before_full_passes_gets_no_table(tmp_path, make_run):
    root = _budget_folder(tmp_path, make_run, cap=5)
    saved = json.loads((root / "budget.json").read_text())
    for mode in saved["modes"]:
        del mode["full_passes"]
    (root / "budget.json").write_text(json.dumps(saved))
    markdown = render_markdown(report(root))
    assert DECISION_TITLE not in markdown and "The decision on" not in markdown
    assert "equal budgets (3 trials per mode" in markdown


def test_a_rising_mode_is_told_to_search_epochs_only_where_its_search_did_not(tmp_path, make_run):
    """Both modes' best epoch was their last (3 of 3). ft's search set its epochs (TUNE_EPOCHS
    in its setting): widen the range. fe's did not (its default space is rate, dropout and
    patience), so 'a wider epoch range' would point at nothing: the answer names the variable
    to add to its space instead."""
    root = _budget_folder(tmp_path, make_run)
    budget = json.loads((root / "budget.json").read_text())
    budget["modes"][1]["setting"]["TUNE_EPOCHS"] = "3"
    (root / "budget.json").write_text(json.dumps(budget))
    for mode in ("fe", "ft"):
        for seed in (1, 2, 3):
            run_dir = root / f"reviews_minilm_{mode}" / f"seed_{seed}"
            metrics = json.loads((run_dir / "metrics.json").read_text())
            metrics.update(epoch=2, best_epoch=2)
            (run_dir / "metrics.json").write_text(json.dumps(metrics))
            if mode == "ft":
                info = {"ext_vars": budget["modes"][1]["setting"]}
                (run_dir / "tune_run.json").write_text(json.dumps(info))
    warnings = [
        line for line in notes(render_markdown(report(root)), "The answer") if "best epoch" in line
    ]
    assert warnings == [
        "Warning: minilm reviews fe: its best epoch was its last in 3 of 3 runs (3 epochs): "
        "still improving when training stopped, at the best setting of its search; its search "
        "did not set the epochs (its config's 3): adding TUNE_EPOCHS=3:6 to its space (--space "
        "fe='<its space> TUNE_EPOCHS=3:6') may change its verdict.",
        "Warning: minilm reviews ft: its best epoch was its last in 3 of 3 runs (3 epochs): "
        "still improving when training stopped, at the best setting of its search; a wider "
        "epoch range (--space) may change its verdict.",
    ]


def test_a_rerun_with_other_seeds_counts_its_own_seeds(tmp_path, make_run):
    """The folder also holds seed 9 of each mode from another decision (its sequential.json
    was replaced by this one's, seeds 1-5): the cost is this decision's (the same 62% as above),
    and the answer says what it left out."""
    root = _budget_folder(tmp_path, make_run, cap=5)
    sequential = json.loads((root / "sequential.json").read_text())
    sequential["seed_order"] = [1, 2, 3, 4, 5]
    (root / "sequential.json").write_text(json.dumps(sequential))
    for mode in ("fe", "ft"):
        run_dir = make(make_run, root, f"reviews_minilm_{mode}", 9, wrong_every(5, 1))
        cost = {"epoch_instances": [120] * 3, "epoch_encoder_trained": [mode == "ft"] * 3}
        (run_dir / "cost.json").write_text(json.dumps(cost))
        (run_dir / "tune_run.json").write_text(
            (root / f"reviews_minilm_{mode}" / "seed_1" / "tune_run.json").read_text()
        )
    markdown = render_markdown(report(root))
    _, rows = table(markdown, DECISION_TITLE)
    total = rows["minilm reviews, all modes"]
    assert total["Seeds: trained / the cap"] == "6 of 10: 4.3k / 7.2k"
    assert (total["Spent"], total["Full protocol"], total["Share"]) == ("5.8k", "9.2k", "62%")
    [spent] = [line for line in notes(markdown, "The answer") if line.startswith("The decision")]
    assert spent.endswith(
        "6 of 10 seed runs (not counted: 2 seed runs of an earlier decision in the folder, which "
        "the scores above pool)."
    )


def test_a_seed_kept_from_the_search_counts_toward_the_cap_not_the_spent(tmp_path, make_run):
    """ft's seed 1 is its best search trial kept as that seed (`kept_from_trial`): paid for in
    the search, so ft spends its trials and 2 seeds (2,160 forward passes), against the same
    full protocol (5 seeds of 1,080); 3,360 of 7,200, 47%."""
    root = _budget_folder(tmp_path, make_run, cap=5)
    info_path = root / "reviews_minilm_ft" / "seed_1" / "tune_run.json"
    info = json.loads(info_path.read_text())
    info["kept_from_trial"] = "search/reviews_minilm_ft/trial_0"
    info_path.write_text(json.dumps(info))
    markdown = render_markdown(report(root))
    _header, rows = table(markdown, DECISION_TITLE)
    ft, total = rows["minilm reviews ft"], rows["minilm reviews, all modes"]
    assert ft["Seeds: trained / the cap"] == "2 of 5 (+1 kept trial): 2.2k / 5.4k"
    assert (ft["Spent"], ft["Full protocol"], ft["Share"]) == ("3.4k", "7.2k", "47%")
    assert (ft["Naive experiment"], ft["Spent / naive"]) == ("900", "3.7x")
    assert rows["minilm reviews fe"]["Seeds: trained / the cap"] == "3 of 5: 1.1k / 1.8k"
    assert total["Seeds: trained / the cap"] == "5 of 10 (+1 kept trial): 3.2k / 7.2k"
    assert (total["Spent"], total["Share"]) == ("4.7k", "51%")
    answer = notes(markdown, "The answer")[1]
    assert "51% of the full protocol's 9.2k" in answer
    assert "5 of 10 seed runs trained and 1 kept from the search" in answer

"""tune-report's answer first (one sentence per task before the tables), its under-training
warning, and the paper's columns left out of tables of tasks that are not the paper's."""

import json

from allennlp_tune.reporting.answer import (
    ANSWER_TITLE,
    BY_COMPUTE,
    BY_PASSES,
    DEFAULT_RECIPES,
    _against,
    choose_arm,
    cost_unit,
)
from allennlp_tune.reporting.html_report import render_report_html
from allennlp_tune.reporting.render import render_json, render_markdown
from tests.results.test_report_verdict import GOLDS, make, notes, report, table, wrong_every

COSTS = {  # mode: (seconds per epoch, trainable parameters)
    "fe": (5.0, 21_000_000),
    "ft": (40.0, 22_600_000),
    "lora": (30.0, 300_000),
}


def own_task(tmp_path, make_run, modes=("fe", "ft", "lora"), rising=("ft",)):
    """A task of one's own with MiniLM: fe wrong on every third example (never on exactly the
    minority class, which would make it a one-class predictor), ft and lora right on all; the
    modes in `rising` had their best epoch at the last of 2."""
    root = tmp_path / "runs"
    for mode in modes:
        for seed in (1, 2, 3):
            predictions = wrong_every(3, 1 + seed % 2) if mode == "fe" else list(GOLDS)
            run_dir = make(make_run, root, f"reviews_minilm_{mode}", seed, predictions)
            seconds, params = COSTS[mode]
            cost = {"trainable_params": params, "total_params": 23e6, "mean_epoch_seconds": seconds}
            cost.update(epoch_instances=[120, 120], epoch_encoder_trained=[mode != "fe"] * 2)
            (run_dir / "cost.json").write_text(json.dumps(cost))
            metrics = json.loads((run_dir / "metrics.json").read_text())
            metrics.update(epoch=1, best_epoch=1 if mode in rising else 0)
            (run_dir / "metrics.json").write_text(json.dumps(metrics))
    return root


def test_the_answer_comes_first_with_its_interval_cost_and_fairness(tmp_path, make_run):
    rendered = report(own_task(tmp_path, make_run))
    markdown = render_markdown(rendered)
    assert markdown.index(f"## {ANSWER_TITLE}") < markdown.index("## minilm\n")
    sentence, warning = notes(markdown, ANSWER_TITLE)
    # ft and lora both beat fe and tie each other, with the same encoder passes: the one with
    # fewer trainable parameters is the arm.
    assert choose_arm(rendered.rows()[0]) == "lora"
    assert sentence.startswith(
        "minilm reviews (accuracy, points, 95% intervals): use lora (low-rank adapters) (the "
        "cheapest, in encoder passes, of the arms that no other beats): it beats fe by +33.3 ["
    )
    assert "], ties ft (+0.0 [+0.0, +0.0]); it costs" in sentence
    assert (
        "it costs 30.0 s/epoch, 300.0k trainable, encoder passes 240 fwd+bwd, 0 fwd against "
        "fe 5.0 s/epoch, 21.00M trainable, encoder passes 0 fwd+bwd, 240 fwd; "
        "ft 40.0 s/epoch, 22.60M trainable, encoder passes 240 fwd+bwd, 0 fwd; "
    ) in sentence
    assert sentence.endswith(DEFAULT_RECIPES + ".")
    assert warning.startswith(
        "Warning: minilm reviews ft: its best epoch was its last in 3 of 3 runs (2 epochs)"
    )
    assert render_json(rendered)["answer"] == [sentence, warning]
    page = render_report_html(rendered)
    assert page.index(f"<h2>{ANSWER_TITLE}</h2>") < page.index("<h2>minilm</h2>")
    assert "use lora (low-rank adapters)" in page


def test_a_clear_single_winner_and_no_warning_for_early_stopped_runs(tmp_path, make_run):
    rendered = report(own_task(tmp_path, make_run, modes=("fe", "ft"), rising=()))
    [sentence] = notes(render_markdown(rendered), ANSWER_TITLE)
    assert "use ft (fine-tuning): it beats fe by +33.3 [" in sentence
    assert "ties" not in sentence and "cheapest" not in sentence


def test_no_paper_columns_for_a_task_that_is_not_the_papers(tmp_path, make_run):
    markdown = render_markdown(report(own_task(tmp_path, make_run)))
    header, rows = table(markdown, "minilm")
    assert not [name for name in header if "paper" in name]
    assert header[:6] == ["Task", "Metric", "fe (ours)", "ft (ours)", "Δ ft−fe (ours)"] + [
        "Verdict ft vs fe (95% CI)"
    ]
    assert rows["reviews"]["lora (ours)"].endswith("(n=3)")
    assert "Paper: Peters" not in markdown


def test_the_papers_columns_stay_beside_the_papers_tasks(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed in (1, 2):
        make(make_run, root, "sick_e_bert_fe", seed, wrong_every(3, seed))
        make(make_run, root, "sick_e_bert_ft", seed, list(GOLDS))
    markdown = render_markdown(report(root))
    header, _ = table(markdown, "BERT")
    assert "fe (paper)" in header and "Δ (paper)" in header
    assert "Paper: Peters, Ruder & Smith (2019), Table 2." in markdown
    [sentence] = notes(markdown, ANSWER_TITLE)
    assert sentence.startswith("BERT SICK-E (accuracy, points, 95% intervals): use ft")
    assert "no costs recorded" in sentence


def test_a_mode_trained_one_epoch_is_warned_of(tmp_path, make_run):
    """A single epoch cannot show a rising curve (no best-was-last warning), so the answer
    says that it cannot tell, for that mode only."""
    root = own_task(tmp_path, make_run, rising=())
    for seed in (1, 2):
        metrics_file = root / "reviews_minilm_lora" / f"seed_{seed}" / "metrics.json"
        metrics = json.loads(metrics_file.read_text())
        metrics.update(epoch=0, best_epoch=0)
        metrics_file.write_text(json.dumps(metrics))
    sentence, *warnings = notes(render_markdown(report(root)), ANSWER_TITLE)
    assert warnings == [
        "Warning: minilm reviews lora: trained a single epoch in 2 of 3 runs, so whether it was "
        "still improving cannot be told; train it longer (TUNE_EPOCHS) before acting on its "
        "verdict."
    ]


def test_a_run_that_gave_every_example_one_class_is_warned_of(tmp_path, make_run):
    """One fe seed gave every dev example the majority class (as a frozen head stopped by
    patience before it learned did on CoLA): the answer says so for fe only; runs that predict
    both classes, however badly, are not named."""
    root = tmp_path / "runs"
    majority = [max(set(GOLDS), key=GOLDS.count)] * len(GOLDS)
    for seed in (1, 2, 3):
        fe = majority if seed == 2 else wrong_every(3, 1)
        make(make_run, root, "reviews_minilm_fe", seed, fe)
        make(make_run, root, "reviews_minilm_ft", seed, wrong_every(2, seed))
    sentence, *warnings = notes(render_markdown(report(root)), ANSWER_TITLE)
    assert warnings == [
        "Warning: minilm reviews fe: predicted '1' for every validation example in 1 of 3 "
        "runs: it had not learned the task when training stopped (early stopping can end a run "
        "whose dev metric has not yet moved); more patience (TUNE_PATIENCE), another rate or a "
        "search (--budget) may change its verdict."
    ]


def tied_fe_and_ft(tmp_path, make_run, passes=True, head=None):
    """fe and ft equally good (a tie); fe's epochs took longer on the clock (its first epoch
    fills the feature cache, and the machine was busy) but it ran the encoder forward once,
    where ft ran 3 x 120 fwd+bwd passes. With `passes=False` ft's runs predate the count. With
    `head` ((fe's head parameters, where it runs), the runs record their parameters: a
    10M-parameter dense encoder, ft's head 770 parameters (counted per token, as its runs do)."""
    root = tmp_path / "runs"
    for seed in (1, 2, 3):
        for mode, seconds in (("fe", 12.0), ("ft", 9.0)):
            run_dir = make(make_run, root, f"reviews_minilm_{mode}", seed, wrong_every(10, seed))
            cost = {
                "trainable_params": 1e6 if mode == "fe" else 2.3e7,
                "mean_epoch_seconds": seconds,
            }
            if passes or mode == "fe":
                cost.update(epoch_instances=[120] * 3, epoch_encoder_trained=[mode == "ft"] * 3)
            if head is not None:
                params, runs_per = head if mode == "fe" else (770, "token")
                cost.update(
                    encoder_params=22_000_000,
                    encoder_dense_params=10_000_000,
                    total_params=22_000_000 + params,
                    head_runs_per=runs_per,
                )
            (run_dir / "cost.json").write_text(json.dumps(cost))
    return root


def test_cheapest_is_counted_in_encoder_passes_not_the_clock(tmp_path, make_run):
    rendered = report(tied_fe_and_ft(tmp_path, make_run))
    assert choose_arm(rendered.rows()[0]) == "fe"
    [sentence] = notes(render_markdown(rendered), ANSWER_TITLE)
    assert "use fe (feature extraction) (the cheapest, in encoder passes, of the arms" in sentence
    assert "encoder passes 0 fwd+bwd, 360 fwd against ft 9.0 s/epoch" in sentence


def test_cheapest_counts_the_head_where_the_runs_record_it(tmp_path, make_run):
    """
    A BCN-sized frozen head (21M parameters over every token): per instance and epoch it costs
    3 x 21M / 10M = 6.3 encoder forward passes, 3 epochs x 120 instances x 6.3 = 2,268 on top of
    its 360 cached passes, against ft's 3 x 360 = 1,080 fwd+bwd-as-forward: ft is the cheaper
    arm, in compute. Where fe's head runs on one pooled vector (a run records no wordpieces to
    weigh it by) the row is counted in encoder passes, as before: fe.
    """
    rendered = report(tied_fe_and_ft(tmp_path / "bcn", make_run, head=(21_000_000, "token")))
    row = rendered.rows()[0]
    assert cost_unit(row, ["fe", "ft"]) == BY_COMPUTE
    assert choose_arm(row) == "ft"
    [sentence] = notes(render_markdown(rendered), ANSWER_TITLE)
    assert (
        "use ft (fine-tuning) (the cheapest, in compute (encoder passes and the task " in sentence
    )
    assert "encoder passes 0 fwd+bwd, 360 fwd, compute 2.6k fwd" in sentence  # fe: 360 + 2,268
    assert "encoder passes 360 fwd+bwd, 0 fwd, compute 1.1k fwd" in sentence  # ft: 1,080 + 0.03
    light = report(tied_fe_and_ft(tmp_path / "linear", make_run, head=(1_538, "instance")))
    assert cost_unit(light.rows()[0], ["fe", "ft"]) == BY_PASSES
    assert choose_arm(light.rows()[0]) == "fe"


def test_cheapest_falls_back_to_seconds_when_a_mode_has_no_passes(tmp_path, make_run):
    rendered = report(tied_fe_and_ft(tmp_path, make_run, passes=False))
    assert choose_arm(rendered.rows()[0]) == "ft"
    [sentence] = notes(render_markdown(rendered), ANSWER_TITLE)
    assert "use ft (fine-tuning) (the cheapest, in seconds per epoch, of the arms" in sentence


def test_a_recipe_given_by_hand_is_named_not_called_the_default(tmp_path, make_run):
    """Runs given TUNE_LR and TUNE_EPOCHS were not trained at their configs' recipes: the answer
    names what was set instead of "default recipes", per group of modes where they differ."""
    root = own_task(tmp_path, make_run, modes=("fe", "ft", "lora"), rising=())

    def given(recipes):
        for mode, recipe in recipes.items():
            for seed in (1, 2, 3):
                info = {"ext_vars": {**recipe, "TUNE_POOLING": "mean", "TUNE_SEED": str(seed)}}
                run_dir = root / f"reviews_minilm_{mode}" / f"seed_{seed}"
                (run_dir / "tune_run.json").write_text(json.dumps(info))
        [sentence, *_] = notes(render_markdown(report(root)), ANSWER_TITLE)
        assert DEFAULT_RECIPES not in sentence
        return sentence[sentence.index("; recipes set by hand") + 2 :]

    same = {"TUNE_LR": "1e-4", "TUNE_EPOCHS": "5"}
    assert given({"fe": same, "ft": same, "lora": same}) == (
        "recipes set by hand (TUNE_EPOCHS=5, TUNE_LR=1e-4), none searched, so the verdict "
        "compares recipes as much as ways of adapting the encoder."
    )
    fe = {"TUNE_LR": "4e-4", "TUNE_PATIENCE": "1"}
    assert given({"fe": fe, "ft": same, "lora": {}}).startswith(
        "recipes set by hand (fe: TUNE_LR=4e-4, TUNE_PATIENCE=1; ft: TUNE_EPOCHS=5, "
        "TUNE_LR=1e-4; lora: its config's), none searched"
    )


def test_the_under_training_warning_names_a_recipe_set_by_hand(tmp_path, make_run):
    """A rising mode given its rate by hand (perhaps the best of an earlier search) is said to
    be at that recipe, not at its config's; a mode given none is at its config's."""
    root = own_task(tmp_path, make_run, modes=("fe", "ft", "lora"), rising=("ft", "lora"))
    for seed in (1, 2, 3):
        info = {"ext_vars": {"TUNE_LR": "1e-4", "TUNE_EPOCHS": "2", "TUNE_SEED": str(seed)}}
        (root / "reviews_minilm_ft" / f"seed_{seed}" / "tune_run.json").write_text(json.dumps(info))
    _sentence, ft, lora = notes(render_markdown(report(root)), ANSWER_TITLE)
    assert ft.startswith("Warning: minilm reviews ft: its best epoch was its last in 3 of 3")
    assert "under-trained at a recipe set by hand (TUNE_EPOCHS=2, TUNE_LR=1e-4), not " in ft
    assert lora.startswith("Warning: minilm reviews lora: its best epoch was its last in 3 of 3")
    assert "under-trained at its config's recipe, not searched for this task;" in lora


def near_tie(tmp_path, make_run, fe_wrong_every):
    """fe (cheap: forward passes only) wrong on every `fe_wrong_every`-th of 120 dev examples,
    ft on every 10th (90.0), over three seeds."""
    root = tmp_path / "runs"
    for seed in (1, 2, 3):
        for mode, every in (("fe", fe_wrong_every), ("ft", 10)):
            predictions = wrong_every(every, seed)
            run_dir = make(make_run, root, f"reviews_minilm_{mode}", seed, predictions)
            cost = {"trainable_params": 1e6 if mode == "fe" else 2.3e7, "mean_epoch_seconds": 9.0}
            cost.update(epoch_instances=[120] * 3, epoch_encoder_trained=[mode == "ft"] * 3)
            (run_dir / "cost.json").write_text(json.dumps(cost))
    return root


def test_a_tie_that_may_hide_a_gap_is_cautioned(tmp_path, make_run):
    """fe at 87.5 against ft's 90.0 on 120 dev examples: a tie, so the cheaper fe is the
    answer, but ft may lead by several points, and the caution says how far and what to do."""
    root = near_tie(tmp_path, make_run, fe_wrong_every=8)
    rendered = report(root)
    [result] = rendered.rows()[0].paired
    assert result.verdict == "tie"
    sentence, caution = notes(render_markdown(rendered), ANSWER_TITLE)
    assert "use fe (feature extraction) (the cheapest" in sentence
    _other, difference, low, _high = _against(result, "fe")
    reach = -low
    assert round(difference, 6) == -2.5 and reach > 1.0
    assert caution == (
        "Caution: minilm reviews: fe was chosen on a tie, which says the runs cannot tell it "
        f"from ft, not that the two are equal: ft may be better by up to {reach:.1f} points "
        "(the far end of the interval, over 120 dev examples and 3 seeds). To use fe only if "
        "it is within M points of the best arm, rerun tune-report with --margin M; more seeds "
        "or a larger dev set narrow the interval."
    )
    # With a margin the choice is already bounded: ft is the answer and no caution is given.
    [sentence] = notes(render_markdown(report(root, margin=1.0)), ANSWER_TITLE)
    assert "use ft (fine-tuning)" in sentence


def test_an_exact_tie_gets_no_caution(tmp_path, make_run):
    """fe and ft wrong on the same examples: nothing to caution about."""
    [sentence] = notes(render_markdown(report(near_tie(tmp_path, make_run, 10))), ANSWER_TITLE)
    assert "use fe (feature extraction)" in sentence

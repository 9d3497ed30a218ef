"""
The README-commands runner: every shell block (and Python block) of README.md and of the pages
in docs/ is run here exactly as written, fixture-sized, or says why not (docs/DEVELOPMENT.md,
"The README-commands runner", has the convention).

A block runs with `bash -e` (a Python block, with this interpreter) in a temporary folder,
with an empty `HOME`, this interpreter's `bin/` first on `PATH` (what `. .venv/bin/activate`
does), `TUNE_EPOCHS=1` (AllenNLP reads ext vars from the environment: the commands train as
written, one epoch each) and a temporary `HF_HOME` whose cache holds a fixture-sized model
under the hub name the README uses, `sentence-transformers/all-MiniLM-L6-v2`
(`HF_HUB_OFFLINE=1`, as tests/conftest.py sets it).
The HTML comment on the line before a block, `<!-- run: KIND ARGUMENT -->`, says how:

- none: the block runs in a folder of its own;
- `setup NAME`: in the folder of `SETUPS[NAME]`, shared with the page's other blocks of that
  setup, in page order (the README's report and export read its trained runs);
- `file PATH`: a non-shell block written to PATH in the next shell block's folder;
- `ci WHY`: too long for a test; every command line must stand in .ci/run (activating the venv
  apart, which the runner does for every block);
- `skip WHY`: not run; WHY is the reason pytest reports.

Run time: the README's own-data example trains two runs (fe and ft) of the tiny fixture BERT,
then its report and export (marked `slow`); the docs' pair task only plans.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from allennlp_tune.data.paths import FIXTURE_MODELS_DIR, REPO_ROOT

DOCS = [*REPO_ROOT.glob("docs/*.md"), *REPO_ROOT.glob("docs/results/*.md")]
PAGES = ["README.md", *sorted(str(p.relative_to(REPO_ROOT)) for p in DOCS)]
# Pages whose blocks are records of what was run, not instructions to run.
NOT_INSTRUCTIONS = {
    "docs/results/NOTEBOOK.md": "a record of real-data runs (each block is what was run there)",
}
SHELL = ("bash", "sh", "shell", "console")
# A Python block runs as a shell block does, with this interpreter (the README's `Comparison`).
PYTHON = ("python",)
RUNNABLE = SHELL + PYTHON
KINDS = ("setup", "file", "ci", "skip")
MARKER = re.compile(r"^<!-- run: (\w+)(?: (.*?))? -->$")
FENCE = re.compile(r"^```(\S*)\s*$")
ACTIVATE = re.compile(r"^\. \S*bin/activate$")
HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"
HUB_COMMIT = "0123456789abcdef0123456789abcdef01234567"
OWN_DATA = REPO_ROOT / "fixtures" / "own_data"


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    kind: Optional[str] = None
    argument: str = ""
    files: List[Tuple[str, str]] = field(default_factory=list)  # (path, text) to write first

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def read_blocks(page: str) -> List[Block]:
    """The fenced blocks of a page, each with the marker on the line before it."""
    lines = (REPO_ROOT / page).read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        end = i + 1
        while end < len(lines) and lines[end].rstrip() != "```":
            end += 1
        block = Block(page, i + 1, opened.group(1), "\n".join(lines[i + 1 : end]) + "\n")
        marker = MARKER.match(lines[i - 1].strip()) if i > 0 else None
        if marker:
            block.kind, block.argument = marker.group(1), (marker.group(2) or "").strip()
        blocks.append(block)
        i = end + 1
    return blocks


def shell_blocks(page: str) -> List[Block]:
    """The page's shell and Python blocks, each with the `file` blocks before it attached."""
    found, pending = [], []
    for block in read_blocks(page):
        if block.lang in RUNNABLE:
            block.files, pending = pending, []
            found.append(block)
        elif block.kind == "file":
            pending.append((block.argument, block.text))
    return found


def all_shell_blocks() -> List[Block]:
    return [b for page in PAGES if page not in NOT_INSTRUCTIONS for b in shell_blocks(page)]


# Setups: what a folder holds before its blocks run -------------------------------------------


def setup_questions(folder: Path) -> None:
    for name in ("train.csv", "dev.csv"):
        shutil.copy(OWN_DATA / "questions" / name, folder / name)


def setup_pairs(folder: Path) -> None:
    (folder / "data").mkdir()
    for name in ("train.csv", "dev.csv"):
        shutil.copy(OWN_DATA / "pairs" / name, folder / "data" / name)


SETUPS: Dict[str, Callable[[Path], None]] = {"questions": setup_questions, "pairs": setup_pairs}


def groups() -> Dict[str, List[Block]]:
    """Test id -> the blocks it runs in one folder, in page order."""
    found: Dict[str, List[Block]] = {}
    for block in all_shell_blocks():
        if block.kind == "setup":
            found.setdefault(f"{block.page}:{block.argument}", []).append(block)
        elif block.kind is None:
            found[block.where] = [block]
    return found


# The structure of the pages (fast) ------------------------------------------------------------


def test_every_shell_block_runs_or_says_why():
    problems = []
    for page in PAGES:
        for block in read_blocks(page):
            if block.kind is not None and block.kind not in KINDS:
                problems.append(f"{block.where}: unknown marker {block.kind!r}")
            elif block.kind in ("ci", "skip") and not block.argument:
                problems.append(f"{block.where}: `run: {block.kind}` needs a reason")
            elif block.kind == "setup" and block.argument not in SETUPS:
                problems.append(f"{block.where}: no setup {block.argument!r} ({sorted(SETUPS)})")
            elif block.kind == "file" and (block.lang in RUNNABLE or not block.argument):
                problems.append(f"{block.where}: `run: file PATH` marks a non-shell block")
    assert not problems, "\n".join(problems)
    # The README's own-data example, its --budget form (minutes: the fixture path is
    # tests/results/test_budget.py), the decision on a real CSV (not in the repository), its
    # report and export, its Python form, and the test command are here.
    readme = [b for b in all_shell_blocks() if b.page == "README.md"]
    kinds = [b.kind for b in readme]
    assert kinds == ["ci", "setup", "skip", "skip", "setup", "setup", "ci", "skip"], readme


@pytest.mark.parametrize("page", sorted(NOT_INSTRUCTIONS))
def test_pages_of_records_are_not_run(page):
    assert (REPO_ROOT / page).is_file()
    pytest.skip(f"{page}: {NOT_INSTRUCTIONS[page]}")


def command_lines(text: str) -> List[str]:
    """The block's commands, one per line, comments and continuations joined."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [
        line.split("#", 1)[0].strip()
        for line in joined.splitlines()
        if line.split("#", 1)[0].strip()
    ]


CI_BLOCKS = [b for b in all_shell_blocks() if b.kind == "ci"]


@pytest.mark.parametrize("block", CI_BLOCKS, ids=[b.where for b in CI_BLOCKS])
def test_a_ci_block_is_what_ci_runs(block):
    ci = {line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text().splitlines()}
    for command in command_lines(block.text):
        assert ACTIVATE.match(command) or command in ci, (
            f"{block.where}: {command!r} is not a line of .ci/run ({block.argument})"
        )


SKIPPED = [b for b in all_shell_blocks() if b.kind == "skip"]


@pytest.mark.parametrize("block", SKIPPED, ids=[b.where for b in SKIPPED])
def test_a_skipped_block(block):
    pytest.skip(f"{block.where}: {block.argument}")


# Running the blocks ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_home(tmp_path_factory) -> Path:
    """A Hugging Face cache with the fixture BERT as `sentence-transformers/all-MiniLM-L6-v2`:
    `hub/models--<org>--<name>/refs/main` naming a snapshot that holds the model, with the
    sentence-transformers `modules.json` and `1_Pooling/config.json` (mean pooling) of the real
    one, and `hub/version.txt` as transformers writes it."""
    home = tmp_path_factory.mktemp("hf_home")
    entry = home / "hub" / f"models--{HUB_NAME.replace('/', '--')}"
    snapshot = entry / "snapshots" / HUB_COMMIT
    shutil.copytree(FIXTURE_MODELS_DIR / "bert-uncased", snapshot)
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {
            "idx": 1,
            "name": "1",
            "path": "1_Pooling",
            "type": "sentence_transformers.models.Pooling",
        },
    ]
    (snapshot / "modules.json").write_text(json.dumps(modules))
    (snapshot / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": 16, "pooling_mode_mean_tokens": True}
    (snapshot / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(HUB_COMMIT)
    (home / "hub" / "version.txt").write_text("1")
    return home


def environment(home: Path, hf_home: Path) -> Dict[str, str]:
    env = dict(os.environ)
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "TUNE_DATA_DIR"):
        env.pop(name, None)
    env.update(
        HOME=str(home),
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
        HF_HOME=str(hf_home),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TUNE_EPOCHS="1",
    )
    return env


@dataclass
class Ran:
    block: Block
    returncode: int
    stdout: str
    stderr: str


def run_block(block: Block, folder: Path, env: Dict[str, str]) -> Ran:
    for path, text in block.files:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    python = block.lang in PYTHON
    script = folder.parent / f"block_{block.line}.{'py' if python else 'sh'}"
    script.write_text(block.text, encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)] if python else ["bash", "-e", str(script)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    ran = Ran(block, result.returncode, result.stdout, result.stderr)
    assert ran.returncode == 0, (
        f"{block.where} exited with {ran.returncode}:\n{block.text}\n--- stdout\n"
        f"{ran.stdout[-3000:]}\n--- stderr\n{ran.stderr[-5000:]}"
    )
    return ran


NOISE = re.compile(r"warning|\bINFO\b|Traceback", re.IGNORECASE)


def check_readme_questions(ran: List[Ran], folder: Path, home: Path) -> None:
    """The own-data example printed the report, with no warning and no INFO line, needing no
    plugins file; its report and export wrote their files; its Python form, on the same
    folder, trained nothing more and printed the same answer."""
    compare, follow_up, python = ran
    assert "| questions | accuracy |" in compare.stdout, compare.stdout
    assert "Verdict ft vs fe (95% CI)" in compare.stdout
    noisy = [line for line in compare.stderr.splitlines() if NOISE.search(line)]
    assert not noisy, "\n".join(noisy)
    assert "declares mean pooling" in compare.stderr  # the hub snapshot's modules.json
    assert not (folder / ".allennlp_plugins").exists()
    assert not (home / ".allennlp" / "plugins").exists()  # (~/.allennlp/cache is AllenNLP's)
    # The report and the export: no AllenNLP line of loading the archive; the export's own two
    # lines (what it compared, where it wrote) and matplotlib's one line when it first builds its
    # font cache in a new HOME (as here) are all that may come.
    allowed = ("generated new fontManager", " - allennlp_tune.export.")
    noisy = [
        line
        for line in follow_up.stderr.splitlines()
        if NOISE.search(line) and not any(text in line for text in allowed)
    ]
    assert not noisy, "\n".join(noisy)
    assert "tune-export: ft run exported to exported" in follow_up.stdout
    assert (folder / "report.html").is_file()
    assert (folder / "exported" / "encoder" / "config.json").is_file()
    assert (folder / "exported" / "README.md").is_file()
    # (answer_lines gives the report's answer bullets without their "- ")
    answer = [line for line in compare.stdout.splitlines() if ": use " in line]
    assert len(answer) == 1 and answer[0][2:] in python.stdout.splitlines(), python.stdout
    # Each run the command trained printed its time against the plan; `run()` found them done.
    assert compare.stderr.count(" seed 1 took ") == 2, compare.stderr[-2000:]
    assert " took " not in python.stderr and "2/2" in python.stderr, python.stderr[-2000:]
    noisy = [line for line in python.stderr.splitlines() if NOISE.search(line)]
    assert not noisy, "\n".join(noisy)


def check_own_data_pairs(ran: List[Ran], folder: Path, home: Path) -> None:
    """`--plan-only` checked the pair task (paths relative to data/) and trained nothing."""
    (plan,) = ran
    printed = plan.stdout + plan.stderr
    assert "sick_e_table_minilm_fe" in printed and "sick_e_table_minilm_ft" in printed
    assert (folder / "runs" / "compare" / "configs" / "sick_e_table_minilm_fe.jsonnet").is_file()
    assert not list((folder / "runs" / "compare").glob("*/seed_*"))


CHECKS = {
    "README.md:questions": check_readme_questions,
    "docs/OWN_DATA.md:pairs": check_own_data_pairs,
}
GROUPS = groups()


# Groups that train: about 180 s of CPU in all (eight `allennlp` processes: the comparison, two
# trainings and their dev predictions, the report, the export, the pair task's plan).
SLOW = {"README.md:questions"}


@pytest.mark.parametrize(
    "group",
    [pytest.param(g, marks=[pytest.mark.slow] if g in SLOW else []) for g in sorted(GROUPS)],
)
def test_the_blocks_run_as_written(group, tmp_path, hf_home):
    blocks = GROUPS[group]
    folder, home = tmp_path / "work", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    setup = blocks[0].argument if blocks[0].kind == "setup" else None
    if setup is not None:
        SETUPS[setup](folder)
    env = environment(home, hf_home)
    ran = [run_block(block, folder, env) for block in blocks]
    if group in CHECKS:
        CHECKS[group](ran, folder, home)


def test_every_group_with_checks_exists():
    assert set(CHECKS) <= set(GROUPS), sorted(GROUPS)

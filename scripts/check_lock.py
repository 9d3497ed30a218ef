"""Verify that the installed environment matches a pinned lock file exactly.

`pip install --no-deps` verifies nothing, and `pip check` keeps reporting allennlp's stale pins,
so this is the check that the environment is the tested one: every `name==version` line of the
lock must be installed at that version, and allennlp-tune's start-up hook (allennlp_tune.pth,
installed with the package; allennlp_tune/compat.py) must be active, without which AllenNLP
does not import on requirements/lock-modern.txt's transformers 5.

    python scripts/check_lock.py requirements/lock.txt
    python scripts/check_lock.py requirements/lock-modern.txt
"""

import re
import sys
from importlib import metadata


def main(lock_path: str) -> int:
    problems = []
    for line_no, raw in enumerate(open(lock_path, encoding="utf-8"), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, _, marker = line.partition(";")
        if marker.strip() and "Linux" in marker and sys.platform != "linux":
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s]+)", requirement.strip())
        if match is None:
            problems.append(f"{lock_path}:{line_no}: expected 'name==version', got {line!r}")
            continue
        name, wanted = match.groups()
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            problems.append(f"{name}=={wanted} is not installed (lock line {line_no})")
            continue
        if installed.split("+")[0] != wanted.split("+")[0]:
            problems.append(f"{name}: installed {installed}, lock says {wanted} (line {line_no})")
    if not any(getattr(finder, "_allennlp_tune_preimport", False) for finder in sys.meta_path):
        problems.append(
            "allennlp-tune's start-up hook is not active: allennlp_tune.pth is missing from "
            "site-packages (reinstall allennlp-tune: pip install --no-deps -e .) or "
            "ALLENNLP_TUNE_NO_PREIMPORT is set"
        )
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        hint = "make install" if "modern" not in lock_path else f"make install LOCK={lock_path}"
        print(f"Environment does not match {lock_path}: run `{hint}`.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "requirements/lock.txt"))

"""JSON files of a run directory: read with the reason a file cannot be used, written
atomically (a temporary file and a rename), so that a kill never leaves half a file."""

import json
import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple


def describe_value(value: Any) -> str:
    """`a list ([1, 2])`, `a string ("adam")`: a JSON value's type and a short excerpt."""
    kinds = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    kind = "null" if value is None else kinds.get(type(value), "a number")
    text = json.dumps(value)
    return f"{kind} ({text if len(text) <= 40 else text[:37] + '...'})"


def read_json_object(path: Path) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """
    `(object, None)` for a JSON object, `(None, None)` for a missing file, and `(None, what is
    wrong)` for a file that exists but cannot be read, is not JSON or is not an object.
    `read_json` is the same without saying why.
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError) as error:
        return None, f"cannot be read ({error.__class__.__name__}: {error})"
    try:
        loaded = json.loads(text)
    except ValueError as error:
        return None, f"not valid JSON ({error})"
    if not isinstance(loaded, dict):
        return None, f"holds {describe_value(loaded)}, expected a JSON object"
    return loaded, None


def read_json(path: Path) -> Optional[Dict[str, Any]]:
    """A JSON object from `path`, or `None` if the file is absent, unreadable or not an object."""
    try:
        with open(path, encoding="utf-8") as handle:
            loaded = json.load(handle)
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def write_json(path: Path, data: Dict[str, Any]) -> None:
    """Writes atomically (temp file + rename), so a kill never leaves half a `tune_run.json`."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.replace(temporary, path)

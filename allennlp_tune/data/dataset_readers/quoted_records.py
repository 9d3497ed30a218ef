"""
The records of a CSV / TSV file with CSV quoting, numbered by the lines they start on (a quoted
field may hold line breaks), for `tune_table`: each record's cells and the line it ends on, or
an `InvalidRow` saying what is wrong (broken quoting, a field over Python's CSV field limit). A
quote never closed is a `ConfigurationError`: the rest of the file is inside it.
"""

import csv
import logging
import sys
from typing import Iterable, Iterator, List, Tuple

from allennlp.common.checks import ConfigurationError
from allennlp.data.dataset_readers.dataset_reader import PathOrStr

from allennlp_tune.data.dataset_readers.task_reader import InvalidRow, warn_once

logger = logging.getLogger(__name__)

# Python's `csv` refuses a field longer than this many characters (`csv.field_size_limit()`).
FIELD_LIMIT_ERROR = "field larger than field limit"
# Python < 3.11's `csv` refuses a line holding a NUL byte ("line contains NUL") before any cell
# is read; such lines reach it with NUL as this noncharacter, put back in the record's cells, so
# that the reader names the cell that holds it, as on Python 3.11.
NUL_STANDIN = "\uffff" if sys.version_info < (3, 11) else None


def field_too_large(start: int, end: int) -> InvalidRow:
    """What is wrong with a record whose field is over Python's CSV field limit."""
    where = f"line {start}" if end == start else f"lines {start}-{end}"
    return InvalidRow(
        f"a field on {where} is longer than Python's CSV field limit "
        f"({csv.field_size_limit():,} characters). A text that long is more than any encoder "
        "reads: shorten it; if the field is a quote opened and not closed where intended, close "
        'it (a literal quote inside a quoted field is ""); a TSV file without quotes can be read '
        "with quoting: false, which has no limit"
    )


def quoted_records(
    file_path: PathOrStr, lines: Iterable[Tuple[int, str]], delimiter: str
) -> Iterator[Tuple[int, object]]:
    """`(first line, (cells, last line))` per record of `lines`, or `(first line, InvalidRow)`;
    logs how many records span several lines, once the file is read."""
    position = {"line": 0, "nul": False}

    def source() -> Iterator[str]:
        for line_number, line in lines:
            position["line"] = line_number
            if NUL_STANDIN and "\x00" in line:
                position["nul"] = True
                line = line.replace("\x00", NUL_STANDIN)
            yield line + "\n"

    reader = csv.reader(source(), delimiter=delimiter, quotechar='"', strict=True)
    start = 1
    spanning: List[Tuple[int, int]] = []
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            end = position["line"]
            if FIELD_LIMIT_ERROR in str(error):
                yield start, field_too_large(start, end)
            elif "unexpected end of data" in str(error):
                raise ConfigurationError(
                    f"{file_path}, line {start}: a quoted field starts on line {start} and is "
                    "never closed (the file ends inside it). Expected CSV quoting: close the "
                    'quote, and write a literal quote inside a quoted field as "".'
                ) from None
            else:
                lines_ = f"line {end}" if end == start else f"lines {start}-{end}"
                yield (
                    start,
                    InvalidRow(
                        f"broken CSV quoting on {lines_} ({error}); expected a field either "
                        'unquoted or wholly quoted, with "" for a literal quote inside quotes'
                    ),
                )
            start = end + 1
            position["nul"] = False
            continue
        end = position["line"]
        if position["nul"]:
            cells = [cell.replace(NUL_STANDIN, "\x00") for cell in cells]
        yield start, (cells, end)
        if end > start:
            spanning.append((start, end))
        start = end + 1
        position["nul"] = False
    if spanning:
        first_start, first_end = spanning[0]
        warn_once(
            logger,
            file_path,
            f"{file_path}: {len(spanning)} record(s) span several lines (quoted fields with line "
            f"breaks), the first on lines {first_start}-{first_end}; check the quotes if that is "
            "not intended.",
        )

"""
The searched variables of tune-search and `tune-compare --budget`, and the config's check
against them before any trial: `SearchParam` (one `--param`: a float or integer range, or
choices), `parse_settings` (one `--enqueue`), and `check_config`, which refuses a variable
searched twice, a value the search can draw that the config's own checks refuse (`TUNE_EPOCHS=0`,
or a float range of an integer variable) and a variable the config does not read, naming the
nearest one it reads. tune-search runs it when its trials start; `tune-compare --budget` runs it
for every mode before its plan (`budget.check_spaces`), so `--plan-only` refuses what the
trials would.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, Tuple

from allennlp.common.checks import ConfigurationError

from allennlp_tune.rundir import SEED_EXT_VAR, metric_of_config


@dataclass(frozen=True)
class SearchParam:
    """One searched ext var: a float or integer range, or a list of string choices."""

    name: str
    low: Optional[float] = None
    high: Optional[float] = None
    log: bool = False
    integer: bool = False
    choices: Optional[Tuple[str, ...]] = None
    # The `--param` text it was parsed from, for messages.
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, spec: str) -> "SearchParam":
        """`NAME=low:high[:log]` or `NAME=choice1,choice2,...`; errors say what was expected."""
        usage = (
            f"--param {spec!r}: expected NAME=low:high, NAME=low:high:log or "
            "NAME=choice1,choice2 (e.g. TUNE_LR=1e-5:1e-3:log, TUNE_EPOCHS=1:4, "
            "TUNE_DROPOUT=0.0,0.1,0.3)"
        )
        name, equals, values = spec.partition("=")
        if not equals or not name.isidentifier() or not values:
            raise ConfigurationError(usage)
        if name == SEED_EXT_VAR:
            raise ConfigurationError(f"--param {name}: the seed is --seed, not a hyperparameter.")
        if ":" in values:
            parts = values.split(":")
            log = len(parts) == 3 and parts[2] == "log"
            if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
                raise ConfigurationError(usage)
            try:
                low, high = float(parts[0]), float(parts[1])
            except ValueError:
                raise ConfigurationError(usage) from None
            if not low < high:
                raise ConfigurationError(f"--param {spec!r}: low ({low}) must be below high.")
            if log and low <= 0:
                raise ConfigurationError(f"--param {spec!r}: a log range needs low > 0.")
            # Both ends written as whole numbers (float read them: only digits after the sign).
            integer = all(part.strip().lstrip("+-").isdigit() for part in parts[:2])
            return cls(name, low, high, log=log, integer=integer, text=spec)
        choices = tuple(choice.strip() for choice in values.split(","))
        if len(choices) < 2 or not all(choices):
            raise ConfigurationError(
                f"{usage}. For a fixed value use --ext-var {name}={values} instead."
            )
        return cls(name, choices=choices, text=spec)

    def suggest(self, trial: Any) -> str:
        """Asks the trial for a value and returns it as the ext var string."""
        if self.choices is not None:
            return str(trial.suggest_categorical(self.name, list(self.choices)))
        if self.integer:
            return str(trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log))
        return repr(trial.suggest_float(self.name, self.low, self.high, log=self.log))

    def value(self, text: str, source: str) -> Any:
        """
        `text` as a value of this parameter, as the trial would suggest it (float, int or
        choice), for `--enqueue`; `source` names where it came from in the error.
        """
        if self.choices is not None:
            if text not in self.choices:
                raise ConfigurationError(
                    f"{source}: {self.name}={text} is not one of the --param choices "
                    f"{', '.join(self.choices)}."
                )
            return text
        try:
            value: Any = int(text) if self.integer else float(text)
        except ValueError:
            kind = "an integer" if self.integer else "a number"
            raise ConfigurationError(
                f"{source}: {self.name}={text} is not {kind} (its --param is a range)."
            ) from None
        if not (self.low <= value <= self.high):
            raise ConfigurationError(
                f"{source}: {self.name}={text} is outside its --param range "
                f"{self.low:g}..{self.high:g}; widen the range or change the value."
            )
        return value

    def examples(self) -> Tuple[str, str]:
        """Two different values, to check that the config reads this ext var."""
        if self.choices is not None:
            return self.choices[0], self.choices[-1]
        if self.integer:
            return str(int(self.low)), str(int(self.high))
        return repr(self.low), repr(self.high)

    def draws(self) -> Tuple[str, ...]:
        """Values the search can draw, as ext var strings, to check that the config takes them:
        every choice; a range's ends and, for a float range, a value inside that is no whole
        number (a float `TUNE_EPOCHS=1.5:2.5`, or `1.0:3.0`, draws such values)."""
        if self.choices is not None or self.integer:
            return tuple(dict.fromkeys(self.examples()))
        if self.log:
            inside = self.low * (self.high / self.low) ** 0.37
        else:
            inside = self.low + (self.high - self.low) * 0.37
        return (*self.examples(), repr(inside))


def parse_settings(text: str, params: Sequence[SearchParam]) -> Dict[str, Any]:
    """
    One `--enqueue` value, `"NAME=VALUE NAME=VALUE ..."` with a value for every searched
    parameter and nothing else, as the Optuna params of a trial to run first.
    """
    source = f"--enqueue {text!r}"
    by_name = {param.name: param for param in params}
    settings: Dict[str, Any] = {}
    for word in text.split():
        name, equals, value = word.partition("=")
        if not equals or not value:
            raise ConfigurationError(f"{source}: {word!r} is not NAME=VALUE.")
        if name not in by_name:
            raise ConfigurationError(
                f"{source}: {name} is not searched (the --param names are "
                f"{', '.join(by_name)}); fix a value with --ext-var instead."
            )
        if name in settings:
            raise ConfigurationError(f"{source}: {name} is given twice.")
        settings[name] = by_name[name].value(value, source)
    missing = [name for name in by_name if name not in settings]
    if missing:
        raise ConfigurationError(f"{source}: give a value for {', '.join(missing)} as well.")
    return settings


def _load_params(config: Path, ext_vars: Dict[str, str], overrides: Optional[str]):
    from allennlp.common.params import Params

    try:
        return Params.from_file(str(config), overrides or "", ext_vars)
    except RuntimeError as error:  # Jsonnet's errors, e.g. an ext var that is not set
        raise ConfigurationError(
            f"{config} does not evaluate with ext vars {sorted(ext_vars)}: {error}".strip()
        ) from None


class _Renders:
    """The config rendered with given ext vars (over the environment, as a trial renders it),
    each set of values once: `(rendered, None)`, or `(None, the first line of Jsonnet's error)`."""

    def __init__(self, config: Path, overrides: Optional[str]) -> None:
        self.config, self.overrides = config, overrides
        self._done: Dict[Tuple[Tuple[str, str], ...], Tuple[Optional[Dict], Optional[str]]] = {}

    def __call__(self, ext_vars: Dict[str, str]) -> Tuple[Optional[Dict], Optional[str]]:
        from allennlp.common.params import Params

        key = tuple(sorted(ext_vars.items()))
        if key not in self._done:
            try:
                params = Params.from_file(str(self.config), self.overrides or "", ext_vars)
                self._done[key] = (params.as_dict(quiet=True), None)
            except RuntimeError as error:  # Jsonnet's errors, e.g. an ext var that is not set
                lines = [line.strip() for line in str(error).splitlines() if line.strip()]
                self._done[key] = (None, lines[0] if lines else repr(error))
        return self._done[key]


def _check_distinct(params: Sequence[SearchParam], option: str) -> None:
    """Refuses a variable searched twice (Optuna would fail every trial on its second range)."""
    for index, param in enumerate(params):
        again = [other for other in params[index + 1 :] if other.name == param.name]
        if again:
            raise ConfigurationError(
                f"{option}: {param.name} is given twice ({param.text or param.name} and "
                f"{again[0].text or again[0].name}); give each variable one range or list."
            )


def _refused_draw(
    renders: _Renders, params: Sequence[SearchParam], ext_vars: Dict[str, str], option: str
) -> Optional[str]:
    """
    The message refusing the first value a search can draw that the config does not take (each
    parameter's `draws`, the others at their first), `None` when it takes them all. Where the
    first values together are refused, the one to blame is found by trying each parameter
    alone (the others at the config's own values), else by the value that, changed, renders;
    `None` when none is (`_load_params`' own error then says why).
    """
    first = {param.name: param.examples()[0] for param in params}

    def refused(param: SearchParam, value: str, failure: str) -> str:
        return (
            f"{option} {param.text or param.name}: the search can draw {param.name}={value}, "
            f"which {renders.config} refuses: {failure}. Give a range the config takes."
        )

    base_failure = renders({**ext_vars, **first})[1]
    if base_failure is None:
        for param in params:
            for value in param.draws()[1:]:
                failure = renders({**ext_vars, **first, param.name: value})[1]
                if failure is not None:
                    return refused(param, value, failure)
        return None
    if renders(ext_vars)[1] is None:  # the config has its own values: each parameter alone
        for param in params:
            for value in param.draws():
                failure = renders({**ext_vars, param.name: value})[1]
                if failure is not None:
                    return refused(param, value, failure)
    for param in params:
        for other in param.draws()[1:]:
            if renders({**ext_vars, **first, param.name: other})[1] is None:
                return refused(param, first[param.name], base_failure)
    return None


def check_config(
    config: Path,
    params: Sequence[SearchParam],
    ext_vars: Dict[str, str],
    overrides: Optional[str] = None,
    option: str = "--param",
) -> Tuple[str, bool]:
    """
    Evaluates the config before any trial: no variable may be searched twice, it must evaluate
    at every value of `SearchParam.draws` (the configs' own checks refuse `TUNE_EPOCHS=0` or
    `1.5`), and each searched ext var must change it (a misspelt `--param` would search nothing;
    the nearest variable the config reads is named). `option` names the parameters in messages
    (`--space ft` for tune-compare's budget). Returns (metric, higher is better).
    """
    _check_distinct(params, option)
    renders = _Renders(Path(config), overrides)
    refused = _refused_draw(renders, params, ext_vars, option)
    if refused is not None:
        raise ConfigurationError(refused)
    base = {**ext_vars, **{param.name: param.examples()[0] for param in params}}
    evaluated = renders(base)[0]
    if evaluated is None:  # no value is to blame: the config's own error, whole
        _load_params(config, base, overrides)
    for param in params:
        if renders({**base, param.name: param.examples()[1]})[0] == evaluated:
            raise ConfigurationError(
                f"{option} {param.name}: {config} does not change when {param.name} does; "
                f'does it read std.extVar("{param.name}")?{_nearest_read(param.name, config)}'
            )
    return metric_of_config(evaluated)


def _nearest_read(name: str, config: Path) -> str:
    """` Did you mean X?`, X the nearest variable the config or the plugin reads, else ""."""
    import difflib

    from allennlp_tune.config_vars import CONFIG_VARS, ext_vars_read_by, jsonnet_texts

    known = sorted(set(CONFIG_VARS) | ext_vars_read_by(jsonnet_texts([config]).values()))
    if name in known:  # read by name, in a part of the config this one does not use
        return ""
    close = difflib.get_close_matches(name, [other for other in known if other != name], n=1)
    return f" Did you mean {close[0]}?" if close else ""

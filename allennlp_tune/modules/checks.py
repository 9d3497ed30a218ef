"""Checks of the object-valued parameters of the modules (`scalar_mix`, `lora`, `feature_cache`)
that name the parameter, what is wrong and what is allowed."""

from typing import Any, Mapping, Sequence

from allennlp.common.checks import ConfigurationError


def refuse_unknown_keys(
    config: Mapping[str, Any], allowed: Sequence[str], where: str, note: str = ""
) -> None:
    """Raises a `ConfigurationError` naming the keys of `config` that are not in `allowed`."""
    unknown = sorted(set(config) - set(allowed))
    if unknown:
        raise ConfigurationError(
            f"{where} has unknown key(s) {unknown}; the allowed keys are {list(allowed)}{note}."
        )

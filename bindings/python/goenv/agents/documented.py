"""The agents' help lists every option, made from goenv.agents.options() (agents/config.cc),
never retyped: help(goenv.agents.GO) and inspect.signature show each option's type, default
and meaning.

Made when first asked for, not when goenv.agents is imported: the options come from
goenv._agents, which loads torch, and importing goenv.agents does not.
"""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from goenv.agents.native import options

_TYPES = {"i": int, "d": float, "b": bool, "s": str}


def _fields(cls: type) -> list[tuple[str, str, Any, str]] | None:
    """The options a class takes as keywords (not `algorithm` when the class fixes it); None
    when the agents module cannot load (the doc then says why)."""
    try:
        fields = options()
    except ImportError:
        return None
    fixed = cls.__dict__.get("algorithm") or getattr(cls, "algorithm", None)
    return [field for field in fields if not (fixed and field[0] == "algorithm")]


def options_section(cls: type) -> str:
    """The docstring's list of options: name (type, default): meaning."""
    fields = _fields(cls)
    if fields is None:
        return "Options: see goenv.agents.options() (the agents module is not available here)."
    lines = ["Options (keywords; goenv.agents.options()):", ""]
    for name, kind, default, meaning in fields:
        lines.append(f"    {name} ({_TYPES[kind].__name__}, default {default!r})")
        lines.extend(textwrap.wrap(meaning, width=88, initial_indent="        ", subsequent_indent="        "))
    return "\n".join(lines)


def options_signature(cls: type) -> inspect.Signature:
    """(env=None, *, option: type = default, ...): what the constructor takes, option by option."""
    parameters = [inspect.Parameter("env", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Any)]
    fields = _fields(cls)
    if fields is None:
        parameters.append(inspect.Parameter("options", inspect.Parameter.VAR_KEYWORD, annotation=Any))
    else:
        parameters += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                         annotation=_TYPES[kind]) for name, kind, default, _ in fields]
    return inspect.Signature(parameters)


class DocumentedOptions(type):
    """The agents' metaclass: a class's __doc__ is its own docstring followed by the options
    section, and its __signature__ lists the options (both made on first access, then kept)."""

    @property
    def __doc__(cls) -> str:  # a metaclass property: found before the class's own __doc__
        cached = cls.__dict__.get("_options_doc")
        if cached is None:
            own = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
            cached = f"{own}\n\n{options_section(cls)}" if own else options_section(cls)
            type.__setattr__(cls, "_options_doc", cached)
        return cached

    @property
    def __signature__(cls) -> inspect.Signature:
        cached = cls.__dict__.get("_options_signature")
        if cached is None:
            cached = options_signature(cls)
            type.__setattr__(cls, "_options_signature", cached)
        return cached

"""goenv._agents, the LibTorch agents module, loaded on first use (after torch), and the agent
options it declares. Below both goenv.agents.agent (the agents) and goenv.agents.documented
(their help, made from the options): importing this module loads neither torch nor goenv._agents.
"""

from __future__ import annotations

from typing import Any

_NATIVE = None


def native():
    """goenv._agents, loaded after torch so that one LibTorch is mapped, shared by both."""
    global _NATIVE
    if _NATIVE is None:
        try:
            import torch  # noqa: F401  (maps the LibTorch goenv._agents was linked against)
        except ImportError as error:
            raise ImportError(
                "goenv.agents needs PyTorch: pip install 'torch==2.13.0' (or pip install 'goenv[torch]'), "
                "then rebuild goenv so that goenv._agents is built against it") from error
        try:
            import goenv._agents as _agents
        except ImportError as error:
            raise ImportError(
                "goenv was built without its agents module (goenv._agents): LibTorch was not found when goenv "
                f"was built ({error}). Install torch==2.13.0 and rebuild (make build).") from error
        _NATIVE = _agents
    return _NATIVE


def options() -> list[tuple[str, str, Any, str]]:
    """Every agent option as (name, type, default, meaning); type is 'i', 'd', 'b' or 's'."""
    return [tuple(field) for field in native().config_fields()]

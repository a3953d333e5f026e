"""pydantic-ai capability: `Agent(model, capabilities=[LoopGuard()])`.

Needs `pip install "loopguard-engine[pydantic-ai]"`. See docs/integrations.md.
"""

from .._missing import needs

try:
    from .capability import LoopGuard
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("pydantic-ai", exc) from exc

__all__ = ["LoopGuard"]

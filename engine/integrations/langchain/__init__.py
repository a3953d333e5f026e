"""LangChain v1 `create_agent` middleware: `middleware=[LoopGuardMiddleware()]`.

Needs `pip install "loopguard-engine[langchain]"`. See docs/integrations.md.
"""

from loopguard.integrations._missing import needs

try:
    from loopguard.integrations.langchain.middleware import LoopGuardMiddleware
except ImportError as exc:  # the framework is not installed: say which extra brings it
    raise needs("langchain", exc) from exc

__all__ = ["LoopGuardMiddleware"]

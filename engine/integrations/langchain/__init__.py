"""LangChain v1 `create_agent` middleware: `middleware=[LoopGuardMiddleware()]`.

Needs `pip install "loopguard-engine[langchain]"`. See docs/integrations.md.
"""

from .middleware import LoopGuardMiddleware

__all__ = ["LoopGuardMiddleware"]

"""Adapters that make loopguard a two-line addition to agent frameworks.

One subpackage per framework, each behind its own extra and imported only when used:
`loopguard.integrations.langchain`, `.openai_agents`, `.claude_agent_sdk`, `.pydantic_ai`,
`.google_adk`, `.strands`, `.crewai`, `.agent_framework`.
See docs/integrations.md. Besides them, `.otel` (the `otel` extra) puts decisions on
OpenTelemetry traces: docs/observability.md.
"""

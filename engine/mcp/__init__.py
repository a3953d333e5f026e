"""The MCP stdio proxy behind `loopguard mcp-proxy` (docs/mcp.md).

`calls` guards one connection's `tools/call` requests on plain JSON-RPC dicts; `proxy`
runs the connection with the MCP SDK (the `[mcp]` extra), which it imports only when the
proxy starts, so `import loopguard` never loads the SDK.
"""

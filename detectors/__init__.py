"""The built-in detectors, one module each, named after the detector's id.

`BUILTINS` is the explicit list the plugin discovery loads (in this order, which
is also the order `loopguard detectors` lists them); no directory scanning.
"""

BUILTINS = (
    "generic_repeat",
    "known_poll_no_progress",
    "ping_pong",
    "unknown_tool_repeat",
    "global_circuit_breaker",
    "doom_loop_exact",
    "doom_loop_fuzzy",
    "post_compaction_guard",
    "cycle",
)

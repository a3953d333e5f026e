"""A complete agent turn driven through the Session API (`run_turn`, `arun_turn`)."""

"""Replaying recorded transcripts through a guard: the readers, the replayer, its records."""

"""The per-call API: `Guard`, `Session`, `StoredSession` and the texts the model sees."""

"""Compaction: a long context replaced by a model-written summary that only this server can read."""

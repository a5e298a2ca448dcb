"""The knowledge aggregate: files, vector stores with their files and chunks, and the vector index's interface."""

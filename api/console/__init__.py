"""The console at `/console`: pages for people, served by the API process itself (docs/console.md)."""

"""The containers aggregate: a tenant's sandbox containers, the files known in them, and the record of each
code or shell call run in one (so a call's outcome is recorded once, whatever crashes)."""

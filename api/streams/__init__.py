"""Turn events as a live feed: the event hub each API process runs over the store, the streams read from it and
the bound on how many are open. Shared by every dialect; imports no dialect package."""

"""What the API checks before a handler runs: API keys and tenants, Host and Origin, body size and rate.
Shared by every dialect; imports no dialect package."""

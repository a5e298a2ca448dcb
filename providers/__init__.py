"""Chat models the inference activity talks to: any OpenAI-compatible server, or the offline model.

May import workflows (its contracts), configuration and domain."""

"""Chat models the inference activity talks to: any OpenAI-compatible server, or the offline model."""

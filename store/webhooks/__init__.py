"""The webhooks aggregate: endpoints, the outbox of events, deliveries and their attempts."""

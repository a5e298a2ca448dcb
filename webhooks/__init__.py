"""Webhooks: signed notifications, delivered durably under Temporal, when a response or turn ends or
waits for its caller. The event catalogue, signing, endpoint secrets, the sender and the dispatcher."""

"""Webhooks: signed notifications, delivered durably under Temporal, when a response or turn ends or
waits for its caller. Signing, endpoint secrets, the sender and the dispatcher; the event catalogue is
domain/webhook_events.py, the outbox store/webhooks/webhook_store.py."""

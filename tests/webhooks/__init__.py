"""Webhooks: endpoints, signed deliveries, their durability and their log."""

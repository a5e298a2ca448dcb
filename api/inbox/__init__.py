"""What waits for a person or a caller, across the three dialects: `GET /v1/inbox`, acting on an item, and the
console that shows them. Apart from the dialect families, which it reads and acts through."""

"""What waits for a person or a caller, across the three dialects: `GET /v1/inbox` and acting on an item
(the console, api/console/, shows them). Apart from the dialect families, which it reads and acts through."""

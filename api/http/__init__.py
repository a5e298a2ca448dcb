"""HTTP conventions every dialect shares: error bodies, list pages, the OpenAPI document. Imports no dialect package."""

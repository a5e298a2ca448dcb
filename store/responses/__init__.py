"""The Responses aggregate: responses, conversations and their items, compactions."""

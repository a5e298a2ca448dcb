"""What is counted per tenant or API key: the spend of Agents API sessions, request budgets of keys."""

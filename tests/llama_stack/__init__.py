"""The llama-stack Agents API dialect: its official client, turns, tools, shields and the chat requests it sends."""

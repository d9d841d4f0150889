"""The acor launcher: discover tools, run them, relay ACOR to the agent."""

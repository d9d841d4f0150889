"""How events reach the agent or the person: Markdown, JSON lines, the
rich view."""

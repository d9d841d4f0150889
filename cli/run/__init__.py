"""Running one tool: spawn its process, relay its stream, build its result."""

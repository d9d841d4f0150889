"""The built-in commands (the click application): one module per command."""

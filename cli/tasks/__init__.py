"""Tasks: long runs kept in a durable store, owned by a live server."""

"""Finding tools: the config, manifests, the cache and the sources searched."""

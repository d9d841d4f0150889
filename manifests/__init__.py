"""The tools acor ships (the ``pytest`` wrapper), as manifests in this
folder; the ``acor.tools`` entry point names it. A package, not a bare
folder, so that an editable install, which maps ``acor.manifests`` to this
folder, can import it."""

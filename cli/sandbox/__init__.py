"""The sandbox a tool runs in: what its manifest declares, enforced by the
kernel (Landlock for the file system, a network namespace for the
network), applied in the tool's own process before its program runs.

:mod:`.policy` turns a manifest's ``sandbox`` (or the default box) into
absolute paths; :mod:`.kernel` says what this kernel offers (probed once,
cached); :mod:`.enter` makes the system calls, in the child.
"""

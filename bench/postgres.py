"""A throwaway PostgreSQL server for the shared task store's rows: initdb
into a temporary folder, a unix socket there and no TCP port, stopped and
removed when the rows are measured. As root (PostgreSQL refuses root) it
runs as the ``postgres`` user, which Debian's packages create."""

import glob
import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager


def _program(name):
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return versions[-1] if versions else None


def missing():
    """Why no server can be started here, or None."""
    if not (_program("initdb") and _program("pg_ctl")):
        return "no PostgreSQL here (initdb, pg_ctl)"
    try:
        import procrastinate  # noqa: F401  (the extra the store needs)
    except ImportError:
        return "the tasks-postgres extra is not installed"
    return None


@contextmanager
def server():
    """The libpq URL of a database on a new server."""
    folder = tempfile.mkdtemp(prefix="acor-bench-pg-")
    as_db_user = []
    if os.getuid() == 0:
        as_db_user = ["runuser", "-u", "postgres", "--"]
        shutil.chown(folder, "postgres")
    data = os.path.join(folder, "data")
    pg_ctl = _program("pg_ctl")
    subprocess.run([*as_db_user, _program("initdb"), "-D", data, "-A",
                    "trust", "-U", "acor"], check=True, capture_output=True)
    subprocess.run([*as_db_user, pg_ctl, "-D", data, "-l",
                    os.path.join(folder, "log"), "-w", "start", "-o",
                    f"-p 5432 -k {folder} -c listen_addresses=''"],
                   check=True, capture_output=True)
    try:
        yield f"postgresql://acor@/postgres?host={folder}&port=5432"
    finally:
        subprocess.run([*as_db_user, pg_ctl, "-D", data, "-m", "fast",
                        "stop"], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)

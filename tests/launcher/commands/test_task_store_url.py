"""What acor prints of a shared task store's URL (`ACOR_TASK_STORE`,
`--task-store`): never its password, wherever libpq lets one be written,
and never a traceback, whatever the value. Nothing here needs a database:
the URLs name a port where none listens, or are refused before a
connection is tried."""

import json
import shlex

import pytest

SECRET = "s3cret-pw"
NOWHERE = "127.0.0.1:1"  # nothing listens: refused at once

URLS = [
    f"postgresql://acor:{SECRET}@{NOWHERE}/acor",
    f"postgresql://acor@{NOWHERE}/acor?password={SECRET}&sslmode=disable",
    f"postgresql://acor@{NOWHERE}/acor?sslpassword={SECRET}",
    f"host=db password={SECRET}",           # libpq's key=value form
    f"postgresql://acor:{SECRET}@[db/acor",  # not a URL Python can read
]


def _env(project, url):
    return {**project.env, "ACOR_TASK_STORE": url}


@pytest.mark.parametrize("url", URLS)
def test_doctor_names_the_store_without_its_password(project, url):
    text = project.acor("doctor", env=_env(project, url))
    data = project.acor("doctor", "--json", env=_env(project, url))
    for done in (text, data):
        shown = done.stdout + done.stderr
        assert SECRET not in shown
        assert "Traceback" not in shown
    store = json.loads(data.stdout)["task_store"]
    assert store["kind"] == "Procrastinate on PostgreSQL"
    assert "tasks:      Procrastinate on PostgreSQL" in text.stdout


@pytest.mark.parametrize("url", URLS)
@pytest.mark.parametrize("command", [("tasks",), ("tasks", "--format", "json"),
                                     ("mcp",)])
def test_a_store_acor_cannot_use_is_a_clear_error_without_its_password(
        project, url, command):
    done = project.acor(*command, "--task-store", url, input="")
    shown = done.stdout + done.stderr
    assert done.returncode == 2, shown
    assert "E_TASK_STORE" in shown
    assert SECRET not in shown
    assert "Traceback" not in shown
    if url.startswith("postgresql://") and "[" not in url:
        # The next command is one a person can paste as it is: psql asks
        # for the password it leaves out.
        command = shown.split("`psql ", 1)[1].split("`", 1)[0]
        words = shlex.split(command)
        assert words[0].startswith(f"postgresql://acor@{NOWHERE}/acor")
        assert words[1:] == ["-c", "SELECT 1"]

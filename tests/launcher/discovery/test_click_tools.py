"""Click programs are tools without a rewrite (issue 35, item 4): a
manifest {"click": "package.module:cli"} serves each command of a click
group, its schema from the command's parameters, run inside an AcorTool.
Through the real boundary: `acor list`, `acor NAME --help`, a run, `acor
call`, `acor doctor`, and the SDK client against a real `acor mcp`. The
parameters are read in a boxed child (no writes, no network), once per
version of the module's files."""

import json
import os
import socket
import subprocess
import textwrap
import threading
import time

import pytest

from acor.cli.discovery.clicktools import NO_WRITES
from acor.cli.sandbox import kernel

LACKS = kernel.missing(NO_WRITES, kernel.offers())
pytestmark = pytest.mark.skipif(
    bool(LACKS), reason=f"this kernel cannot box the reading: {LACKS}")

GREET = '''
import click


@click.group()
def cli():
    """Greetings."""


@cli.command()
@click.argument("name")
@click.option("--count", type=click.IntRange(1, 5), default=1,
              help="how many times")
@click.option("--style", type=click.Choice(["plain", "loud"]),
              default="plain", help="how to say it")
@click.option("--ratio", type=click.FloatRange(0, 1), default=0.5)
@click.option("--shout/--no-shout", default=True, help="shout it")
@click.option("--tag", multiple=True, help="a tag")
def hello(name, count, style, ratio, shout, tag):
    """Say hello to NAME.

    A longer paragraph that is not the description."""
    for _ in range(count):
        click.echo(f"hello {name} style={style} shout={shout} "
                   f"tags={','.join(tag)} ratio={ratio}")


@cli.command()
@click.argument("how")
def end(how):
    """End as HOW says."""
    if how == "abort":
        raise click.Abort()
    if how == "bad":
        raise click.BadParameter("not a good one", param_hint="HOW")
    if how == "click":
        raise click.ClickException("the command refused")
    if how == "crash":
        raise RuntimeError("it broke")
    click.echo("ended well")
'''


def old(*paths):
    """Files written more than the racy window ago (a reading of files
    this fresh is not kept: see cli.discovery.cache.RACY_NS)."""
    past = time.time() - 60
    for path in paths:
        os.utime(path, (past, past))


def add_click(project, folder, module, code, target=None, **manifest):
    where = project.root / "tools" / folder
    where.mkdir(parents=True, exist_ok=True)
    (where / f"{module}.py").write_text(textwrap.dedent(code))
    data = {"click": target or f"{module}:cli", **manifest}
    (where / "manifest.json").write_text(json.dumps(data))
    old(where / f"{module}.py", where / "manifest.json")
    return where


@pytest.fixture
def greet(project):
    add_click(project, "greet", "greetings", GREET)
    return project


def test_each_command_of_a_click_group_is_a_tool_named_after_its_group(
        greet):
    listed = greet.run("list")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines()}
    assert "Say hello to NAME." in lines["greet-hello"]
    assert "not the description" not in lines["greet-hello"]
    assert "End as HOW says." in lines["greet-end"]


def test_help_is_the_commands_own_under_the_tools_name(greet):
    shown = greet.run("greet-hello", "--help")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert "## Output\nUsage: acor greet-hello [OPTIONS] NAME" in shown.stdout
    assert "--count INTEGER RANGE" in shown.stdout
    assert shown.stdout.rstrip().endswith("## Status: Complete")


def test_a_run_from_the_command_line_gives_each_echo_as_output(greet):
    run = greet.run("greet-hello", "amy", "--count", "2", "--no-shout",
                    "--tag", "a", "--tag", "b")
    assert run.returncode == 0, run.stdout + run.stderr
    line = "hello amy style=plain shout=False tags=a,b ratio=0.5"
    assert run.stdout.count(f"## Output\n{line}\n") == 2
    assert run.stdout.rstrip().endswith("## Status: Complete")


def test_acor_call_passes_json_values_as_the_commands_options(greet):
    run = greet.run("call", "greet-hello", json.dumps(
        {"name": "bo", "style": "loud", "no_shout": True, "tag": ["x"],
         "ratio": 1}))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "hello bo style=loud shout=False tags=x ratio=1.0" in run.stdout


def test_the_schema_has_the_commands_choices_ranges_defaults_and_help(
        greet):
    shown = greet.run("show", "greet-hello", "--json")
    assert shown.returncode == 0, shown.stderr
    args = json.loads(shown.stdout)["args"]
    props = args["properties"]
    assert args["required"] == ["name"]
    assert props["name"] == {"type": "string"}
    assert props["count"] == {"type": "integer", "minimum": 1, "maximum": 5,
                              "default": 1, "description": "how many times"}
    assert props["style"]["enum"] == ["plain", "loud"]
    assert props["style"]["default"] == "plain"
    assert props["ratio"] == {"type": "number", "minimum": 0, "maximum": 1,
                              "default": 0.5}
    # On by default: the flag that turns it off is the property.
    assert props["no_shout"]["type"] == "boolean"
    assert "shout" not in props
    assert props["tag"] == {"type": "array", "items": {"type": "string"},
                            "description": "a tag"}
    refused = greet.run("call", "greet-hello", '{"name": "x", "count": 9}')
    assert refused.returncode == 2 and "at most 5" in refused.stdout


def test_a_usage_error_is_e_usage_with_the_usage(greet):
    missing = greet.run("greet-hello")
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert "## Error: Missing argument 'NAME'." in missing.stdout
    assert "**Code**: E_USAGE" in missing.stdout
    assert "Usage: acor greet-hello [OPTIONS] NAME" in missing.stdout
    assert "**Next**: acor greet-hello --help" in missing.stdout
    bad = greet.run("greet-end", "bad")
    assert bad.returncode == 2 and "**Code**: E_USAGE" in bad.stdout
    assert "not a good one" in bad.stdout


def test_abort_ends_the_run_cancelled(greet):
    run = greet.run("greet-end", "abort")
    assert run.returncode == 130, run.stdout + run.stderr
    assert run.stdout.rstrip().endswith("## Status: Cancelled")


def test_other_exceptions_end_failed_with_an_error(greet):
    refused = greet.run("greet-end", "click")
    assert refused.returncode == 1
    assert "## Error: the command refused" in refused.stdout
    assert "**Code**: E_CLICK_ERROR" in refused.stdout
    crashed = greet.run("greet-end", "crash")
    assert crashed.returncode == 1
    assert "## Error: RuntimeError: it broke" in crashed.stdout
    assert crashed.stdout.rstrip().endswith("## Status: Failed")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_sdk_client_lists_and_calls_a_click_command(greet, mode):
    pytest.importorskip("mcp", reason="needs the mcp extra")
    from mcp import Client
    from mcp_helpers import acor_mcp_stdio
    async with Client(acor_mcp_stdio(greet), mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool("greet-hello",
                                        {"name": "mcp", "count": 2})
        wrong = await client.call_tool("greet-end", {"how": "bad"})
    schema = tools["greet-hello"].input_schema
    assert schema["properties"]["style"]["enum"] == ["plain", "loud"]
    assert schema["required"] == ["name"]
    text = "\n".join(b.text for b in result.content if b.type == "text")
    assert text.count("hello mcp style=plain shout=True") == 2
    assert not result.is_error
    assert wrong.is_error
    assert "E_USAGE" in "\n".join(b.text for b in wrong.content
                                  if b.type == "text")


NOSY = '''
import os, socket, time
import click

MARK = {mark!r}
try:
    with open(MARK, "w") as f:
        f.write("the reading wrote")
    wrote = "write:yes"
except OSError:
    wrote = "write:no"
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    net = "net:yes"
except OSError:
    net = "net:no"
READ = f"{{wrote}} {{net}} token:{{os.urandom(8).hex()}}"


@click.command(help=READ)
def cli():
    click.echo(READ)
'''


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


def described(project, name, env=None):
    listed = subprocess.run(project.argv("list"), cwd=project.root,
                            env=env or project.env, capture_output=True,
                            text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    line = next(line for line in listed.stdout.splitlines()
                if line.split()[0] == name)
    return line


def test_the_reading_child_can_neither_write_nor_reach_the_network(
        project, tmp_path, listener):
    port, accepted = listener
    mark = tmp_path / "written-by-the-reading"
    add_click(project, "nosy", "nosy", NOSY.format(mark=str(mark),
                                                  port=port))
    line = described(project, "nosy")
    assert "write:no net:no" in line, line
    assert not mark.exists()
    assert accepted == []
    # The same module run as the tool (no box declared) can do both: the
    # reading's denials are the box's, not the module's.
    run = project.run("nosy")
    assert "write:yes net:yes" in run.stdout, run.stdout + run.stderr
    assert mark.exists()


def test_the_reading_is_kept_until_the_modules_file_changes(
        project, tmp_path, listener):
    port, _ = listener
    folder = add_click(project, "nosy", "nosy", NOSY.format(
        mark=str(tmp_path / "mark"), port=port))
    first = described(project, "nosy")
    # A rescan of the registry (no registry cache) reads nothing again.
    again = described(project, "nosy",
                      env=dict(project.env, ACOR_NO_CACHE="1"))
    assert again == first
    module = folder / "nosy.py"
    module.write_text(module.read_text() + "\n# changed\n")
    old(module)
    changed = described(project, "nosy")
    assert changed != first and "write:no net:no" in changed


WHO = '''
import click


@click.command()
def cli():
    """{where}"""
    click.echo("ran from {where}")
'''


def test_the_module_is_found_in_the_manifests_folder_then_the_environment(
        project, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for name in ("both", "envonly"):
        (site / f"{name}.py").write_text(WHO.format(where="the environment"))
        old(site / f"{name}.py")
    project.env["PYTHONPATH"] = str(site)
    add_click(project, "both", "both", WHO.format(where="the folder"))
    where = project.root / "tools" / "envonly"
    where.mkdir()
    (where / "manifest.json").write_text('{"click": "envonly:cli"}')
    listed = project.run("list").stdout
    assert "both  " in listed and "the folder" in listed, listed
    assert "envonly" in listed and "the environment" in listed
    assert "ran from the folder" in project.run("both").stdout
    assert "ran from the environment" in project.run("envonly").stdout


def test_a_module_that_cannot_be_read_is_refused_with_the_reason_and_fix(
        project):
    add_click(project, "gone", "gone", "import click\n",
              target="no_such_module:cli")
    add_click(project, "plain", "plain", "cli = 42\n")
    add_click(project, "eager", "eager", '''
        import click

        @click.command()
        def cli():
            pass

        cli()
    ''')
    doctor = project.run("doctor")
    assert doctor.returncode != 0
    out = doctor.stdout
    assert "no_such_module:cli cannot be imported: importing " \
        "no_such_module failed: ModuleNotFoundError" in out, out
    assert "plain:cli is int, not a click command or group" in out
    assert "it runs a command when imported" in out
    assert 'if __name__ == "__main__":' in out
    listed = project.run("list")
    assert "gone" not in listed.stdout and "plain" not in listed.stdout


def test_a_module_file_others_may_change_is_never_run(project):
    folder = add_click(project, "greet", "greetings", GREET)
    (folder / "greetings.py").chmod(0o646)
    doctor = project.run("doctor")
    assert "the module file" in doctor.stdout, doctor.stdout
    assert "is not used: it is writable by others" in doctor.stdout
    assert "greet-hello" not in project.run("list").stdout


def test_a_parameter_acor_cannot_pass_refuses_the_command_saying_which(
        project):
    add_click(project, "plot", "plot", '''
        import click

        @click.command()
        @click.option("--point", nargs=2, type=int)
        def cli(point):
            pass
    ''')
    doctor = project.run("doctor")
    assert "the command 'plot' cannot be served: option --point takes 2 " \
        "values at once" in doctor.stdout, doctor.stdout


def test_a_module_whose_import_does_not_end_is_stopped_and_refused(
        project):
    add_click(project, "slow", "slow", '''
        import subprocess, time
        import click

        subprocess.Popen(["sleep", "300"])
        time.sleep(300)

        @click.command()
        def cli():
            pass
    ''')
    env = dict(project.env, ACOR_CLICK_READ_TIMEOUT="1")
    doctor = subprocess.run(project.argv("doctor"), cwd=project.root,
                            env=env, capture_output=True, text=True,
                            timeout=120)
    assert "reading slow:cli failed: the reading took over 1 seconds" in \
        doctor.stdout, doctor.stdout
    assert "ACOR_CLICK_READ_TIMEOUT" in doctor.stdout


def test_a_kernel_that_cannot_box_the_reading_refuses_the_manifest(
        project, isolated_discovery, monkeypatch):
    from acor.cli.discovery.registry import load_registry
    add_click(project, "greet", "greetings", GREET)
    monkeypatch.setattr(kernel, "_memo", {"landlock": 0,
                                          "namespaces": False,
                                          "seccomp": False})
    registry = load_registry(cwd=str(project.root))
    assert registry.get("greet-hello") is None
    (skipped,) = [s for s in registry.skipped if s.name == "greet"]
    assert "acor does only in a sandbox" in skipped.reason
    assert "Landlock" in skipped.reason
    assert "acor doctor" in skipped.recovery

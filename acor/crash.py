"""What a crash tells the agent: where in the tool's own code it happened,
and, for a missing module, what is missing and, when acor knows for
certain which distribution provides it, the command that installs it.

A traceback's innermost frame is often in the standard library (``<frozen
genericpath>:50 in getsize`` for a missing file): true, but no help for
fixing the call that led there. :func:`report` names the innermost frame in
the tool's own files, with its line of code, and the innermost frame as well
when that is elsewhere. An ImportError is a missing dependency, reported
with the interpreter that ran the tool; ``next`` is ``python -m pip install
DIST`` for that interpreter only for a well-known module
(:data:`KNOWN_DISTRIBUTIONS`) or an installed one (its distribution is on
disk). Any other name gets no command: an agent follows ``next`` as is, and
a mistyped name (``numpyy``) may be a stranger's package.

Imported only when a tool crashes.
"""

from __future__ import annotations

import errno
import linecache
import os
import shlex
import sys
import sysconfig

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType
    from typing import Any

    Frame = tuple[str, int, str]  # file name, line, function
    Fields = dict[str, Any]  # the keyword arguments of AcorTool.error
    # (kind, message, usage, exit code): how a parser refused the run
    Refusal = tuple[str, str, str | None, int]

# The distributions acor names for a missing module: well-known modules
# only. A module's name is not its distribution's (yaml is PyYAML), and a
# name nobody knows must not become an install command an agent runs as
# is: a typo would install whatever a stranger published under it.
KNOWN_DISTRIBUTIONS = {
    "yaml": "PyYAML", "cv2": "opencv-python", "PIL": "Pillow",
    "sklearn": "scikit-learn", "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil", "dotenv": "python-dotenv",
    "attr": "attrs", "magic": "python-magic", "serial": "pyserial",
    "usb": "pyusb", "Crypto": "pycryptodome", "jwt": "PyJWT",
    "OpenSSL": "pyOpenSSL", "docx": "python-docx", "pptx": "python-pptx",
    "fitz": "PyMuPDF", "skimage": "scikit-image", "zmq": "pyzmq",
    "MySQLdb": "mysqlclient", "git": "GitPython", "markdown": "Markdown",
    "grpc": "grpcio", "markdown_it": "markdown-it-py",
    **{name: name for name in (
        "numpy", "pandas", "scipy", "matplotlib", "requests", "httpx",
        "aiohttp", "urllib3", "click", "rich", "typer", "tqdm", "jinja2",
        "lxml", "openpyxl", "xlrd", "pyarrow", "polars", "sqlalchemy",
        "psutil", "pydantic", "fastapi", "flask", "django", "uvicorn",
        "boto3", "botocore", "redis", "pymongo", "psycopg", "paramiko",
        "cryptography", "certifi", "chardet", "idna", "filelock",
        "jsonschema", "toml", "tomli", "regex", "seaborn", "plotly",
        "networkx", "sympy", "torch", "tensorflow", "transformers",
        "pytest", "mcp", "anyio", "orjson", "ujson", "tabulate", "pexpect",
        "docker", "kubernetes", "openai", "anthropic", "tiktoken", "nltk",
        "spacy", "statsmodels", "h5py", "numba", "shapely", "pyproj",
        "xmltodict", "pygments", "colorama", "termcolor",
        "watchdog", "websockets", "simplejson", "pytz", "arrow",
        "pendulum", "tzdata", "filetype", "chromadb", "duckdb", "sqlglot")},
}

CRASH_RECOVERY = ("The tool crashed. Check the input it was given; if the "
                  "input is right, report this to the tool's author with the "
                  "details above.")


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the tool's: the standard library, every
    site-packages, and acor itself."""
    paths = sysconfig.get_paths()
    roots = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib",
                                    "platlib")}
    roots |= {p for p in sys.path if p.rstrip(os.sep).endswith(
        ("site-packages", "dist-packages"))}
    roots.add(os.path.dirname(os.path.abspath(__file__)))
    return tuple(os.path.join(os.path.abspath(r), "")
                 for r in roots if r)


def _frames(tb: TracebackType | None) -> list[Frame]:
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno,
                       tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def own_frame(frames: list[Frame], tool_folder: str) -> Frame | None:
    """The innermost frame in the tool's own files: under its folder if
    any is, else any real file outside the libraries; None if none is."""
    roots = _library_roots()
    folder = os.path.join(os.path.abspath(tool_folder), "")

    def real(filename: str) -> bool:
        return not filename.startswith("<") and os.path.isfile(filename)

    own = [f for f in frames if real(f[0])
           and not os.path.abspath(f[0]).startswith(roots)]
    beside = [f for f in own if os.path.abspath(f[0]).startswith(folder)]
    return (beside or own)[-1] if beside or own else None


def _where(frame: Frame) -> str:
    return f"{frame[0]}:{frame[1]} in {frame[2]}"


def where_details(frames: list[Frame], tool_folder: str) -> str | None:
    """``raised at FILE:LINE in FUNCTION: <the line>``, and the innermost
    frame when it is not that one; None without frames."""
    if not frames:
        return None
    own = own_frame(frames, tool_folder) or frames[-1]
    text = f"raised at {_where(own)}"
    line = linecache.getline(own[0], own[1]).strip()
    if line:
        text += f": {line}"
    if own != frames[-1]:
        text += f"\ninnermost frame: {_where(frames[-1])}"
    return text


def _is_tool_module(exc: BaseException, tool_folder: str) -> bool:
    """An ImportError about one of the tool's own modules (a wrong name in
    its own code): not a dependency to install."""
    path = getattr(exc, "path", None)
    folder = os.path.join(os.path.abspath(tool_folder), "")
    return bool(path) and os.path.abspath(str(path)).startswith(folder)


# No space left on the device; the user's disk quota used up.
DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def disk_full(where: object = None) -> str:
    """What to do when a tool's write found the disk full."""
    place = f"the filesystem holding {os.fspath(where)!s}" \
        if isinstance(where, (str, bytes, os.PathLike)) else \
        "the filesystem the tool was writing to"
    return (f"The disk is full: no space is left on {place}. Nothing is "
            f"wrong with the input or the tool. Free space there (`df -h` "
            f"shows what is left; old builds, caches and `acor sessions "
            f"--clear-output` are places to look), then run the tool again.")


def _fields(code: str, message: str, recovery: str, details: str | None,
            next: list[str] | None = None) -> Fields:
    """The keyword arguments of AcorTool.error."""
    fields: Fields = {"code": code, "message": message, "recovery": recovery,
              "details": details}
    return fields if next is None else {**fields, "next": next}


def _installed(module: str) -> bool:
    from importlib.util import find_spec  # 5 ms: only an ImportError pays
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def report(exc: BaseException, tb: TracebackType | None,
           tool_folder: str) -> Fields:
    """The keyword arguments of ``AcorTool.error`` for an unhandled
    exception: code, message, recovery, details and next."""
    frames = _frames(tb)
    title = f"{type(exc).__name__}: {exc}"
    where = where_details(frames, tool_folder)
    name = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
    top = name.split(".")[0] if name else None
    if isinstance(exc, OSError) and exc.errno in DISK_FULL:
        return _fields("E_DISK_FULL", title, disk_full(exc.filename), where)
    if top is None or _is_tool_module(exc, tool_folder):
        return _fields("E_UNHANDLED_EXCEPTION", title, CRASH_RECOVERY, where)
    interpreter = f"interpreter: {sys.executable}"
    details = interpreter if where is None else f"{where}\n{interpreter}"
    if top in sys.stdlib_module_names:
        if not isinstance(exc, ModuleNotFoundError):  # a name it lacks
            version = sys.version.split()[0]
            return _fields("E_UNHANDLED_EXCEPTION", title,
                           f"{name} of this Python ({version}) does not have "
                           f"what the tool imports: the tool may need another "
                           f"version of Python.", details)
        return _fields("E_MISSING_DEPENDENCY", title,
                       f"{sys.executable} lacks {top}, a module of the "
                       f"standard library (built without it). Run the tool "
                       f"with a Python that has it.", details)
    if isinstance(exc, ModuleNotFoundError) and not _installed(top):
        package = KNOWN_DISTRIBUTIONS.get(top)
        if package is None:
            return _fields("E_MISSING_DEPENDENCY", title, _unknown(top),
                           details)
        command = [sys.executable, "-m", "pip", "install", package]
        recovery = (f"The tool needs {package}, which the Python that runs it "
                    f"does not have. Install it there, then run the tool "
                    f"again: {shlex.join(command)}")
        return _fields("E_MISSING_DEPENDENCY", title, recovery, details,
                       command)
    # A name or submodule it lacks: not the version the tool needs. The
    # module is installed, so its distribution is known for certain.
    package = _installed_distribution(top) or KNOWN_DISTRIBUTIONS.get(top)
    if package is None:
        return _fields("E_MISSING_DEPENDENCY", title,
                       f"The installed {top} is not the version the tool "
                       f"needs (the import above fails). Install the "
                       f"version the tool's author names, then run the "
                       f"tool again.", details)
    command = [sys.executable, "-m", "pip", "install", "--upgrade", package]
    recovery = (f"The installed {package} is not the version the tool "
                f"needs (the import above fails). Upgrade it, or install "
                f"the version the tool's author names, then run the "
                f"tool again: {shlex.join(command)}")
    return _fields("E_MISSING_DEPENDENCY", title, recovery, details, command)


def _unknown(module: str) -> str:
    """What to say of a missing module acor knows no distribution for:
    no command, since a name that only looks right may install anything."""
    return (f"The tool imports {module}, which {sys.executable} does not "
            f"have, and acor does not know which package provides it. A "
            f"person should decide what to install: check the tool's "
            f"requirements (its README, requirements.txt or pyproject.toml) "
            f"for the package that provides {module}, install it for that "
            f"Python, then run the tool again. Do not install a package just "
            f"because its name matches: a mistyped or unknown name may be "
            f"an unrelated or malicious package.")


def _installed_distribution(module: str) -> str | None:
    """The one distribution that installed ``module``, or None."""
    try:
        # 250 ms: only a module that lacks what the tool imports pays
        from importlib.metadata import packages_distributions
        names = packages_distributions().get(module) or []
    except Exception:  # broken metadata must not hide the crash
        return None
    names = sorted(set(names))
    return names[0] if len(names) == 1 else None


# --- a tool that ends itself: SystemExit ------------------------------------

EXIT_RECOVERY = ("The tool stopped itself with this message. Read it for "
                 "the cause, fix the input (or the tool), then run it again.")
CODE_RECOVERY = ("The tool stopped itself with exit code {code} and no "
                 "message: its documentation may say what the code means. "
                 "Check the input it was given, then run it again.")


def exit_report(exc: SystemExit, tb: TracebackType | None,
                tool_folder: str, command: Callable[..., list[str]],
                reported: bool = False) -> Fields | None:
    """The keyword arguments of ``AcorTool.error`` for a ``SystemExit``
    that ends the run Failed (a code other than 0 and None), or None when
    it adds nothing: a bare code when the tool has ``reported`` its own
    error already.

    The tool's own argparse refusing its arguments is ``E_USAGE`` with its
    usage text and ``next`` the tool's ``--help`` (``command`` makes the
    argv); click's usage errors likewise. A message (``sys.exit("...")``,
    ``parser.exit(1, "...")``, a click error) is the Error's title, with
    code ``E_EXIT_N`` as acor gives a wrapped program's unexplained exit
    code N; a bare code is ``E_EXIT_N`` too, titled with the code."""
    frames = _frames(tb)
    where = where_details(frames, tool_folder)
    refused = _argparse_refusal(tb) or _click_refusal(exc, tb)
    if refused is not None:
        kind, message, usage, refused_code = refused
        if kind == "usage":
            help_argv = command("--help")
            return _fields("E_USAGE", message, (
                f"Run `{shlex.join(help_argv)}` for the arguments, then "
                f"run the corrected command."), usage, help_argv)
        return _fields(f"E_EXIT_{refused_code}", message, EXIT_RECOVERY,
                       _with_code(refused_code, where))
    code = exc.code
    if isinstance(code, int):
        if reported:
            return None
        status = int(code) & 0xFF  # what the process exits with: -1 is 255
        return _fields(f"E_EXIT_{status}",
                       f"The tool exited with code {status}",
                       CODE_RECOVERY.format(code=status),
                       _with_code(status, where))
    # Python prints any other object to stderr and exits 1.
    message = str(code).strip() or "The tool exited with code 1"
    return _fields("E_EXIT_1", message, EXIT_RECOVERY, _with_code(1, where))


def _with_code(code: int, where: str | None) -> str:
    return f"exit code: {code}" + (f"\n{where}" if where else "")


def _argparse_refusal(tb: TracebackType | None) -> Refusal | None:
    """(kind, message, usage, exit code) when argparse ended the process:
    ``ArgumentParser.error`` (kind "usage"), or ``ArgumentParser.exit``
    with a message (kind "exit"); else None."""
    argparse = sys.modules.get("argparse")
    if argparse is None:
        return None
    error_code = argparse.ArgumentParser.error.__code__
    exit_code = argparse.ArgumentParser.exit.__code__
    found = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code is error_code:
            parser: Any = frame.f_locals.get("self")
            message = frame.f_locals.get("message")
            usage = None
            try:
                usage = parser.format_usage().strip()
            except Exception:  # a parser broken enough must not hide this
                pass
            return ("usage", str(message), usage, 2)
        if frame.f_code is exit_code and found is None:
            message = frame.f_locals.get("message")
            status = frame.f_locals.get("status")
            if message and isinstance(status, int) and status:
                found = ("exit", str(message).strip(), None, status)
        tb = tb.tb_next
    return found


def _click_refusal(exc: SystemExit,
                   tb: TracebackType | None) -> Refusal | None:
    """The same for click's standalone mode: its ClickException, found
    as the exit's context (click 8.1) or in the frame of the command's
    ``main`` that reported it (8.2 and later)."""
    click = sys.modules.get("click")
    if click is None:
        return None
    base = getattr(click, "ClickException", None)
    if base is None:
        return None
    error = exc.__context__ if isinstance(exc.__context__, base) else None
    while error is None and tb is not None:
        inside = str(tb.tb_frame.f_globals.get("__name__", ""))
        for value in (tb.tb_frame.f_locals.values()
                      if inside.split(".")[0] == "click" else ()):
            owner = getattr(value, "__self__", value)
            if isinstance(owner, base):
                error = owner
                break
        tb = tb.tb_next
    if error is None:
        return None
    try:
        message = error.format_message()
    except Exception:
        message = str(error)
    usage_error = getattr(click, "UsageError", None)
    if usage_error is not None and isinstance(error, usage_error):
        usage = None
        try:
            ctx = error.ctx
            usage = ctx.get_usage() if ctx is not None else None
        except Exception:
            pass
        return ("usage", message, usage, 2)
    return ("exit", message, None, getattr(error, "exit_code", 1))

"""What a crash tells the agent: where in the tool's own code it happened,
and, for a missing module, the exact command that installs it.

A traceback's innermost frame is often in the standard library (``<frozen
genericpath>:50 in getsize`` for a missing file): true, but no help for
fixing the call that led there. :func:`report` names the innermost frame in
the tool's own files, with its line of code, and the innermost frame as well
when that is elsewhere. An ImportError is a missing dependency, reported
with the interpreter that ran the tool and ``python -m pip install NAME``
for that interpreter as ``next``.

Imported only when a tool crashes.
"""

import errno
import linecache
import os
import shlex
import sys
import sysconfig

# Modules whose pip distribution has another name (the common ones).
PIP_NAMES = {
    "yaml": "PyYAML", "cv2": "opencv-python", "PIL": "Pillow",
    "sklearn": "scikit-learn", "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil", "dotenv": "python-dotenv",
    "attr": "attrs", "magic": "python-magic", "serial": "pyserial",
    "usb": "pyusb", "Crypto": "pycryptodome", "jwt": "PyJWT",
    "OpenSSL": "pyOpenSSL", "docx": "python-docx", "pptx": "python-pptx",
    "fitz": "PyMuPDF", "skimage": "scikit-image", "zmq": "pyzmq",
}

CRASH_RECOVERY = ("The tool crashed. Check the input it was given; if the "
                  "input is right, report this to the tool's author with the "
                  "details above.")


def _library_roots():
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


def _frames(tb):
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_lineno,
                       tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    return frames


def own_frame(frames, tool_folder):
    """The innermost frame in the tool's own files: under its folder if
    any is, else any real file outside the libraries; None if none is."""
    roots = _library_roots()
    folder = os.path.join(os.path.abspath(tool_folder), "")

    def real(filename):
        return not filename.startswith("<") and os.path.isfile(filename)

    own = [f for f in frames if real(f[0])
           and not os.path.abspath(f[0]).startswith(roots)]
    beside = [f for f in own if os.path.abspath(f[0]).startswith(folder)]
    return (beside or own or [None])[-1]


def _where(frame):
    return f"{frame[0]}:{frame[1]} in {frame[2]}"


def where_details(frames, tool_folder):
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


def _is_tool_module(exc, tool_folder):
    """An ImportError about one of the tool's own modules (a wrong name in
    its own code): not a dependency to install."""
    path = getattr(exc, "path", None)
    folder = os.path.join(os.path.abspath(tool_folder), "")
    return bool(path) and os.path.abspath(path).startswith(folder)


# No space left on the device; the user's disk quota used up.
DISK_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def disk_full(where=None):
    """What to do when a tool's write found the disk full."""
    place = f"the filesystem holding {os.fspath(where)!s}" \
        if isinstance(where, (str, bytes, os.PathLike)) else \
        "the filesystem the tool was writing to"
    return (f"The disk is full: no space is left on {place}. Nothing is "
            f"wrong with the input or the tool. Free space there (`df -h` "
            f"shows what is left; old builds, caches and `acor sessions "
            f"--clear-output` are places to look), then run the tool again.")


def _fields(code, message, recovery, details, next=None):
    """The keyword arguments of AcorTool.error."""
    fields = {"code": code, "message": message, "recovery": recovery,
              "details": details}
    return fields if next is None else {**fields, "next": next}


def _installed(module):
    from importlib.util import find_spec
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def report(exc, tb, tool_folder) -> dict:
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
    package = PIP_NAMES.get(top, top)
    if isinstance(exc, ModuleNotFoundError) and not _installed(top):
        command = [sys.executable, "-m", "pip", "install", package]
        recovery = (f"The tool needs {package}, which the Python that runs it "
                    f"does not have. Install it there, then run the tool "
                    f"again: {shlex.join(command)}")
    else:  # a name or submodule it lacks: not the version the tool needs
        command = [sys.executable, "-m", "pip", "install", "--upgrade",
                   package]
        recovery = (f"The installed {package} is not the version the tool "
                    f"needs (the import above fails). Upgrade it, or install "
                    f"the version the tool's author names, then run the "
                    f"tool again: {shlex.join(command)}")
    return _fields("E_MISSING_DEPENDENCY", title, recovery, details, command)

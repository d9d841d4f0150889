"""The rich view: ACOR for people at a terminal.

A live progress bar, coloured statuses, highlighted Output Data, and Error
and Input Needed as panels. Imported only for ``--format rich`` (the default
on a terminal); honours NO_COLOR through rich itself.
"""

import json
import re

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn
from rich.syntax import Syntax
from rich.table import Column
from rich.text import Text

STATUS_STYLES = {"ready": "cyan", "working": "blue", "complete": "bold green",
                 "failed": "bold red", "cancelled": "bold yellow"}
# "label (current/total)", as tool.progress_bar() writes it: the count gets
# its own column so that a long label is cut, never the count.
COUNT = re.compile(r"\s*\((\d+)/(\d+)\)$")


class RichSink:
    def __init__(self, tool, console=None):
        self.tool = tool
        self.console = console if console is not None else Console()
        self._progress = None
        self._task = None

    def emit(self, event):
        handler = getattr(self, "_" + event.type, None)
        if event.type == "progress":
            self._show_progress(event)
            return
        renderable = handler(event) if handler else Text(str(event.to_dict()))
        if event.type == "status" and event.is_final or \
                event.type == "input_needed":
            self._stop_progress()  # the bar's last frame stays above the end
        self.console.print(renderable)

    def close(self):
        self._stop_progress()

    def _show_progress(self, event):
        if self._progress is None:
            fixed = dict(no_wrap=True, overflow="ellipsis")
            self._progress = Progress(
                TextColumn("[bold]{task.fields[tool]}",
                           table_column=Column(max_width=24, **fixed)),
                BarColumn(bar_width=30), TaskProgressColumn(),
                TextColumn("{task.fields[count]}",
                           table_column=Column(**fixed)),
                TextColumn("{task.description}",
                           table_column=Column(ratio=1, **fixed)),
                console=self.console, expand=True)
            self._task = self._progress.add_task(
                "", total=100, tool=escape(self.tool), count="")
            self._progress.start()
        label = event.message.split("\n")[0]
        count = COUNT.search(label)
        if count:
            label = label[:count.start()]
            count = f"{count.group(1)}/{count.group(2)}"
        self._progress.update(self._task, completed=event.percent,
                              description=escape(label), count=count or "")

    def _stop_progress(self):
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _status(self, event):
        style = STATUS_STYLES.get(event.state, "magenta")
        line = Text.assemble(("● ", style), (event.state.capitalize(), style),
                             (f"  {self.tool}", "dim"))
        if event.message:
            return Group(line, Text(event.message))
        return line

    def _output(self, event):
        return Text(event.text)

    def _text(self, event):
        return Text(event.text, style="dim")

    def _output_data(self, event):
        data = event.data
        code = data if isinstance(data, str) else json.dumps(data, indent=2)
        lexer = event.format if event.format in ("json", "yaml", "markdown") \
            else "text"
        return Panel(Syntax(code, lexer, word_wrap=True),
                     title="Output Data", title_align="left")

    def _output_files(self, event):
        lines = Text()
        for f in event.files:
            lines.append(f["path"], style="bold")
            if f["kind"] == "file":
                lines.append(f"  {f['bytes']} bytes  sha256 {f['sha256']}",
                             style="dim")
            else:
                lines.append(f"  ({f['kind']})", style="yellow")
            if f["description"]:
                lines.append("  " + f["description"])
            lines.append("\n")
        return Panel(lines, title="Output Files", title_align="left")

    def _error(self, event):
        body = Text()
        body.append(f"{event.code}\n", style="bold")
        if event.details:
            body.append(event.details + "\n")
        if event.recovery:
            body.append("→ " + event.recovery, style="green")
        return Panel(body, title=Text("Error: " + event.title),
                     title_align="left", border_style="red")

    def _input_needed(self, event):
        return Panel(Text(event.message), title="Input Needed",
                     title_align="left", border_style="yellow")

    def _bullets(self, title, items, style):
        body = Text("\n".join("• " + item for item in items))
        return Panel(body, title=title, title_align="left", border_style=style)

    def _ai_directive(self, event):
        return self._bullets("AI Directive", event.items, "magenta")

    def _suggestions(self, event):
        title = "Suggestions" + (f": {event.title}" if event.title else "")
        return self._bullets(Text(title), event.items, "blue")

    def _session(self, event):
        return Text(f"Session {event.id}", style="cyan")

    def _checkpoint(self, event):
        return Text(f"Checkpoint {event.id}", style="dim cyan")

    def _unknown(self, event):
        return Text(f"## {event.heading}\n{event.body}", style="dim")

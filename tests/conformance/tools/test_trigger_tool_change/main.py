"""The conformance suite's hook for tools/list_changed: each call edits
this tool's own manifest (its description), so the served set really
changes and acor announces it as it would any edit."""
import json
from pathlib import Path

from acor import AcorTool

CHANGED = " (changed)"

with AcorTool() as tool:
    tool.parse_args()
    manifest = Path(__file__).resolve().with_name("manifest.json")
    data = json.loads(manifest.read_text())
    text = data["description"]
    data["description"] = text[:-len(CHANGED)] if text.endswith(CHANGED) \
        else text + CHANGED
    manifest.write_text(json.dumps(data, indent=2) + "\n")
    tool.output("the tool list changed")

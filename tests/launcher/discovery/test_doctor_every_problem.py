"""`acor doctor` and `acor list --all` report every problem of a manifest
at once, each with its field and its fix (issue 38, point 6), while a run
of the tool still stops at the first, as it always did: through real
`acor` processes."""

import json

import pytest

# Three distinct problems: a description that is not a string, a timeout
# that is not a duration, and an argument schema with a type no argument
# can have.
THREE = {"description": 3, "timeout": "soon",
         "args": {"type": "object", "properties": {
             "n": {"type": "matrix", "x-acor": {"flag": "--n"}}}}}


@pytest.fixture
def proj(project):
    project.add_tool("bad", "print('never run')\n", **THREE)
    project.add_tool("fine", "from acor import AcorTool\n"
                     "with AcorTool() as t: t.output('ok')\n")
    return project


def test_doctor_lists_each_problem_with_its_field(proj):
    result = proj.run("doctor")
    assert result.returncode == 1
    out = result.stdout
    assert ": 3 problems" in out
    assert "    description: field 'description' must be" in out
    assert "    timeout: field 'timeout' must be" in out
    assert "    args.properties.n.type" in out
    assert out.count("      fix:  ") == 3
    assert out.rstrip().endswith("3 problems found.")


def test_doctor_json_lists_each_problem_and_counts_them(proj):
    result = proj.run("doctor", "--json")
    assert result.returncode == 1
    data = json.loads(result.stdout)
    (skipped,) = data["skipped"]
    fields = [p["field"] for p in skipped["problems"]]
    assert sorted(fields, key=str) == sorted(
        ["description", "timeout", "args.properties.n.type"], key=str)
    assert all(p["reason"] and p["recovery"] for p in skipped["problems"])
    assert data["problems"] == 3
    # What discovery stopped at stays as it was: the first.
    assert skipped["reason"] == skipped["problems"][0]["reason"]


def test_one_problem_reads_as_before_and_is_one_problem(project):
    project.add_tool("bad", "print('never run')\n", description=3)
    out = project.run("doctor").stdout
    assert "    why:  field 'description' must be a non-empty string" in out
    assert "problems" not in out.split("Skipped manifests:")[1]
    assert out.rstrip().endswith("1 problem found.")


def test_a_run_of_the_tool_still_reports_only_the_first(proj):
    result = proj.run("bad")
    assert result.returncode == 2
    assert "field 'description' must be a non-empty string" in result.stdout
    assert "soon" not in result.stdout and "matrix" not in result.stdout


def test_list_all_lists_each_problem_as_doctor_does(proj):
    out = proj.run("list", "--all").stdout
    assert ": 3 problems" in out
    assert "    timeout: field 'timeout' must be" in out
    assert out.count("      fix:  ") == 3
    data = json.loads(proj.run("list", "--all", "--json").stdout)
    (skipped,) = data["skipped"]
    assert len(skipped["problems"]) == 3
    assert skipped["reason"] == skipped["problems"][0]["reason"]

"""The project configuration: finding it, reading it, and refusing bad ones
with a message that names the file, the line and the fix."""

import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from acor.cli.discovery.config import (Config, ConfigError, find_config, load_config,
                        read_config)

EXAMPLES = int(os.environ.get("ACOR_FUZZ_EXAMPLES", "60"))


# Each test gets its own cache dir and no config from the environment.
pytestmark = pytest.mark.usefixtures("isolated_discovery")


@pytest.fixture(params=["libyaml", "pure-python"])
def both_parsers(request, monkeypatch):
    """Run a test with libyaml and again with PyYAML's own parser (used
    where libyaml is not installed)."""
    if request.param == "pure-python":
        import yaml
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)


def write_config(root, text):
    path = root / ".acor" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def config_error(root, text):
    write_config(root, text)
    with pytest.raises(ConfigError) as info:
        load_config(str(root))
    return info.value


# -- finding the file ------------------------------------------------------

def test_config_is_found_upward_and_root_is_its_project(tmp_path):
    path = write_config(tmp_path, "tools_dirs: [mytools]\n")
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_config(str(deep)) == str(path)
    config = load_config(str(deep))
    assert config.path == str(path)
    assert config.root == str(tmp_path)
    # Relative dirs are relative to the project root, not to cwd.
    assert config.tools_dirs == [str(tmp_path / "mytools")]
    assert config.state_dir == str(tmp_path / ".acor" / "state")


def test_without_config_the_defaults_apply_in_cwd(tmp_path):
    assert find_config(str(tmp_path)) is None
    config = load_config(str(tmp_path))
    assert config.path is None and config.root == str(tmp_path)
    assert config.tools_dirs == [str(tmp_path / ".acor" / "tools"),
                                 str(tmp_path / "tools"),
                                 str(tmp_path / "manifests")]
    assert (config.timeout, config.idle_timeout, config.format,
            config.progress_interval) == (120, None, None, 0.1)
    assert config.warnings == []  # missing default dirs are not news


def test_explicit_path_wins_over_the_upward_search(tmp_path):
    write_config(tmp_path, "timeout: 1\n")
    other = tmp_path / "elsewhere" / "acor.yaml"
    other.parent.mkdir()
    other.write_text("timeout: 7\n")
    config = load_config(str(tmp_path), explicit="elsewhere/acor.yaml")
    assert config.path == str(other) and config.timeout == 7
    # A config outside any .acor/ makes its own directory the root.
    assert config.root == str(other.parent)


def test_env_var_names_the_config(tmp_path, monkeypatch):
    other = tmp_path / "x.yaml"
    other.write_text("timeout: 9\n")
    monkeypatch.setenv("ACOR_CONFIG", str(other))
    assert load_config(str(tmp_path)).timeout == 9


def test_explicit_path_that_does_not_exist_is_an_error(tmp_path):
    with pytest.raises(ConfigError) as info:
        find_config(str(tmp_path), "nope.yaml")
    exc = info.value
    assert exc.path == str(tmp_path / "nope.yaml")
    assert "does not exist" in exc.reason and "ACOR_CONFIG" in exc.recovery


# -- reading it ------------------------------------------------------------

def test_every_key_is_read(tmp_path):
    (tmp_path / "a").mkdir()
    config = read_config(str(write_config(tmp_path, """\
        tools_dirs: [a, /abs/b]
        timeout: 30
        idle_timeout: 2.5
        format: json
        progress_interval: 0
        state_dir: var/state
        """.replace("        ", ""))), str(tmp_path))
    assert config.tools_dirs == [str(tmp_path / "a"), "/abs/b"]
    assert (config.timeout, config.idle_timeout, config.format,
            config.progress_interval) == (30, 2.5, "json", 0)
    assert config.state_dir == str(tmp_path / "var" / "state")
    assert len(config.warnings) == 1 and "'/abs/b'" in config.warnings[0]
    assert "does not exist" in config.warnings[0]


def test_empty_file_and_null_values_mean_defaults(tmp_path):
    assert load_config(str(tmp_path)).timeout == 120
    write_config(tmp_path, "")
    assert load_config(str(tmp_path)).timeout == 120
    write_config(tmp_path, "timeout:\nformat: null\n")
    assert load_config(str(tmp_path)).timeout == 120


def test_unknown_key_is_a_warning_with_a_suggestion(tmp_path):
    write_config(tmp_path, "timeout: 5\ntimout: 6\n")
    config = load_config(str(tmp_path))
    assert config.timeout == 5
    [warning] = config.warnings
    assert "line 2" in warning and "'timout'" in warning
    assert "did you mean 'timeout'" in warning


def test_missing_and_repeated_tools_dirs_are_warnings(tmp_path):
    (tmp_path / "tools").mkdir()
    write_config(tmp_path, "tools_dirs: [tools, ./tools, gone]\n")
    config = load_config(str(tmp_path))
    assert config.tools_dirs == [str(tmp_path / "tools"),
                                 str(tmp_path / "gone")]
    assert any("listed twice" in w for w in config.warnings)
    assert any("'gone'" in w and "does not exist" in w
               for w in config.warnings)


def test_repeated_key_is_a_warning(tmp_path):
    write_config(tmp_path, "timeout: 5\ntimeout: 6\n")
    config = load_config(str(tmp_path))
    assert config.timeout == 6
    assert any("repeated" in w and "line 1" in w for w in config.warnings)


def test_config_round_trips_through_a_dict(tmp_path):
    config = load_config(str(tmp_path))
    assert Config.from_dict(config.to_dict()) == config


# -- refusing bad ones -----------------------------------------------------

def test_invalid_yaml_names_file_and_line(tmp_path, both_parsers):
    exc = config_error(tmp_path, "timeout: 5\ntools_dirs: [a\nformat: x\n")
    assert exc.path.endswith("config.yaml") and exc.line in (2, 3)
    assert "invalid YAML" in exc.reason
    assert f"{exc.path}, line {exc.line}" in str(exc)
    assert exc.recovery in str(exc)


def test_control_character_is_refused_with_its_line(tmp_path, both_parsers):
    exc = config_error(tmp_path, "timeout: 5\nformat: \x1f\n")
    assert exc.line == 2 and "U+001F" in exc.reason


def test_alias_bomb_is_refused_before_it_expands(tmp_path, both_parsers):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    exc = config_error(tmp_path, "\n".join(lines) + "\n")
    # Refused at the first alias used (line 2): nothing was expanded.
    assert exc.line == 2 and "alias" in exc.reason


def test_huge_file_is_refused(tmp_path):
    exc = config_error(tmp_path, "# padding\n" * 120_000)
    assert "1 MiB" in exc.reason


def test_deep_nesting_is_refused_at_its_bound(tmp_path, both_parsers):
    exc = config_error(tmp_path, "a: " + "[" * 50_000 + "]" * 50_000 + "\n")
    assert "nested more than" in exc.reason and exc.line == 1


def test_thousands_of_values_are_refused_at_their_bound(tmp_path,
                                                       both_parsers):
    exc = config_error(tmp_path, "".join(f"k{i}: {i}\n"
                                         for i in range(50_000)))
    assert "more than" in exc.reason and "values" in exc.reason


def test_many_unknown_keys_make_few_warnings(tmp_path):
    write_config(tmp_path, "".join(f"k{i}: {i}\n" for i in range(100)))
    warnings = load_config(str(tmp_path)).warnings
    assert len(warnings) == 11 and "90 more" in warnings[-1]


def test_python_tags_are_refused(tmp_path, both_parsers):
    exc = config_error(tmp_path,
                       "timeout: !!python/object/apply:os.system [echo]\n")
    assert exc.line == 1 and "invalid YAML" in exc.reason


def test_top_level_must_be_a_mapping(tmp_path):
    exc = config_error(tmp_path, "- timeout\n- 5\n")
    assert "mapping" in exc.reason and "a list" in exc.reason


def test_not_utf8_is_refused_with_its_line(tmp_path):
    path = write_config(tmp_path, "")
    path.write_bytes(b"timeout: 5\nformat: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(tmp_path))
    assert "UTF-8" in info.value.reason and info.value.line == 2


def test_unreadable_config_is_an_error(tmp_path):
    # A directory where the file should be: unreadable even for root.
    target = tmp_path / "cfg.yaml"
    target.mkdir()
    with pytest.raises(ConfigError):
        load_config(str(tmp_path), explicit=str(target))
    with pytest.raises(ConfigError) as info:
        read_config(str(target), str(tmp_path))
    assert "regular file" in info.value.reason or "read" in info.value.reason


@pytest.mark.parametrize("text, key, found", [
    ("timeout: soon", "timeout", "the string 'soon'"),
    ("timeout: 0", "timeout", "the number 0"),
    ("timeout: -3", "timeout", "the number -3"),
    ("timeout: true", "timeout", "the boolean true"),
    ("timeout: .inf", "timeout", "the number inf"),
    ("idle_timeout: 0", "idle_timeout", "the number 0"),
    ("format: html", "format", "the string 'html'"),
    ("progress_interval: -1", "progress_interval", "the number -1"),
    ("timeout: 2147484", "timeout", "the number 2147484"),
    ("timeout: '30'", "timeout", "the string '30'"),
    ("idle_timeout: 1.0e+300", "idle_timeout", "the number 1e+300"),
    ("progress_interval: 604801", "progress_interval", "the number 604801"),
    ("tools_dirs: tools", "tools_dirs", "the string 'tools'"),
    ("tools_dirs: [tools, 5]", "tools_dirs", "the number 5"),
    ("tools_dirs: {a: 1}", "tools_dirs", "a mapping"),
    ("state_dir: [x]", "state_dir", "a list"),
    ('state_dir: "a\\0b"', "state_dir", "the string 'a\\x00b'"),
    ('tools_dirs: ["\\0"]', "tools_dirs", "the string '\\x00'"),
])
def test_wrong_types_name_key_expectation_and_value(tmp_path, text, key,
                                                    found):
    exc = config_error(tmp_path, "# acor\n" + text + "\n")
    assert f"'{key}'" in exc.reason and "must be" in exc.reason
    assert found in exc.reason
    assert exc.line == 2 and key in exc.recovery


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_property_any_text_is_a_config_or_a_config_error(tmp_path, text):
    path = write_config(tmp_path, "")
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        config = read_config(str(path), str(tmp_path))
    except ConfigError as exc:
        assert exc.reason and exc.recovery
    else:
        assert config.timeout > 0


@pytest.mark.parametrize("key", ["timeout", "idle_timeout",
                                 "progress_interval"])
def test_every_duration_names_the_upper_bound(tmp_path, key):
    """Each duration key is bounded by MAX_SECONDS (the selector overflows
    past ~24.8 days), and says so; the bound itself is accepted."""
    from acor.cli.durations import MAX_SECONDS
    exc = config_error(tmp_path, f"{key}: {MAX_SECONDS + 1}\n")
    assert f"at most {MAX_SECONDS} (7 days)" in exc.reason
    write_config(tmp_path, f"{key}: {MAX_SECONDS}\n")
    assert getattr(load_config(str(tmp_path)), key) == MAX_SECONDS


def test_progress_interval_may_be_zero(tmp_path):
    write_config(tmp_path, "progress_interval: 0\n")
    assert load_config(str(tmp_path)).progress_interval == 0
    exc = config_error(tmp_path, "timeout: 0\n")
    assert "above 0 and at most 604800" in exc.reason


def test_config_messages_show_a_hostile_path_on_one_line(tmp_path):
    """A warning or error naming a path with control characters in it
    (the project's own directory name) shows them escaped."""
    root = tmp_path / "proj\x1b]0;title\x07\u202e"
    root.mkdir()
    write_config(root, "tools_dirs: [missing]\nbogus: 1\n")
    config = load_config(str(root))
    assert len(config.warnings) == 2
    for warning in config.warnings:
        assert "\x1b" not in warning and "\u202e" not in warning
        assert "proj\\x1b]0;title\\x07\\u202e" in warning
    exc = config_error(root, "timeout: -1\n")
    assert "\x1b" not in str(exc) and "\x1b" not in exc.recovery

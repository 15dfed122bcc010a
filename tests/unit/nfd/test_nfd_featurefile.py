"""Feature files per NFD version: directives, naming, limits; property tests for the parser."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from console.nfd.featurefile import MAX_FEATURE_FILE_SIZE, parse_feature_lines, parse_rfc3339, read_features_dir
from console.nfd.labels import label_value_errors, qualified_name_errors

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)

# The customization guide's example feature file.
DOC_FILE = """\
# +no-label
foo=value-for-foo
bar=baz
# +no-feature
label-only=value

# +expiry-time=2012-07-28T11:22:33Z
expired=true
# +expiry-time=2080-07-28T11:22:33Z
vendor.io/expires-later=true
"""


def test_doc_feature_file_directives() -> None:
    p = parse_feature_lines(DOC_FILE, "my-features", "v0.19.0", NOW)
    assert p.labels == {"bar": "baz", "label-only": "value", "vendor.io/expires-later": "true"}
    assert p.features == {"foo": "value-for-foo", "bar": "baz", "vendor.io/expires-later": "true"}
    assert p.expired == ["expired"]


def test_v014_has_expiry_but_no_no_label() -> None:
    p = parse_feature_lines(DOC_FILE, "f", "v0.14.0", NOW)
    assert "foo" in p.labels and p.features == {}
    assert any("unknown feature file directive 'no-label'" in w for w in p.warnings)


def test_before_v014_no_trimming_no_comments() -> None:
    p = parse_feature_lines("  spaced=1\n# comment\nk=v=w\nbare\n", "f", "v0.13.0", NOW)
    assert p.labels == {"  spaced": "1", "# comment": "true", "k": "v=w", "bare": "true"}


def test_legacy_prefix_naming() -> None:
    p = parse_feature_lines("kernel.x=1\n/kernel.y=2\nexample.dev/kernel.z=3\n", "my-script", "v0.8.0")
    assert p.labels == {"my-script-kernel.x": "1", "kernel.y": "2", "example.dev/kernel.z": "3"}
    # v0.10 dropped the prefix; a leading "/" is then kept (and the label is invalid)
    assert parse_feature_lines("/kernel.y=2\n", "f", "v0.10.0").labels == {"/kernel.y": "2"}


def test_expiry_directive_errors_keep_previous_expiry() -> None:
    text = "# +expiry-time=2000-01-01T00:00:00Z\n# +expiry-time=tomorrow\na=1\n# +expiry-time\nb=1\n"
    p = parse_feature_lines(text, "f", "v0.19.0", NOW)
    assert p.labels == {} and p.expired == ["a", "b"]
    assert any("failed to parse expiry-date" in w for w in p.warnings)
    assert any("invalid directive format" in w for w in p.warnings)


def test_no_label_deletes_earlier_key_and_applies_to_next_line_only() -> None:
    p = parse_feature_lines("a=1\n# +no-label\na=2\nb=3\n", "f", "v0.15.0", NOW)
    assert p.labels == {"b": "3"} and p.features == {"a": "2", "b": "3"}


def test_rfc3339() -> None:
    assert parse_rfc3339("2024-01-02T03:04:05.5+02:00") is not None
    assert parse_rfc3339("2024-01-02 03:04:05Z") is None
    assert parse_rfc3339("2024-13-02T03:04:05Z") is None


def test_directory_rules(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("x=a\n")
    (tmp_path / "b").write_text("x=b\n")
    (tmp_path / ".tmp").write_text("hidden=1\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_text("nested=1\n")
    (tmp_path / "big").write_text("k=v\n" * (MAX_FEATURE_FILE_SIZE // 4 + 1))
    os.symlink(tmp_path / "a", tmp_path / "link")
    r = read_features_dir(tmp_path, "v0.19.0")
    assert r.labels == {"x": "a"}  # files read in name order: a, b, link(->a)
    assert "big" not in r.files and any("file size limit exceeded" in w for w in r.warnings)
    assert "hidden" not in r.labels and "nested" not in r.labels
    old = read_features_dir(tmp_path, "v0.13.0")
    assert old.labels["hidden"] == "1" and old.labels["k"] == "v"  # no dot-file rule, no size limit


def test_exactly_64k_is_accepted(tmp_path: Path) -> None:
    line = "k=v\n"
    (tmp_path / "f").write_text(line * (MAX_FEATURE_FILE_SIZE // len(line)))
    assert (tmp_path / "f").stat().st_size == MAX_FEATURE_FILE_SIZE
    assert read_features_dir(tmp_path, "v0.19.0").labels == {"k": "v"}


def test_missing_dir_and_binary_content(tmp_path: Path) -> None:
    assert "does not exist" in read_features_dir(tmp_path / "nope").warnings[0]
    (tmp_path / "bin").write_bytes(b"\xff\xfe=\x00\x01\nok=1\n")
    r = read_features_dir(tmp_path)
    assert r.labels["ok"] == "1" and any(qualified_name_errors(k) for k in r.labels)


keys = st.text(alphabet=st.characters(blacklist_characters="\n=\r", blacklist_categories=("Cs",)), min_size=1,
               max_size=20).filter(lambda s: s.strip() and not s.strip().startswith("#"))
values = st.text(alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=20)


@given(st.dictionaries(keys, values, max_size=10))
def test_roundtrip_property(d: dict[str, str]) -> None:
    text = "\n".join(f"{k}={v}" for k, v in d.items())
    p = parse_feature_lines(text, "f", "v0.19.0", NOW)
    expected: dict[str, str] = {}
    for k, v in d.items():
        line = f"{k}={v}".strip()
        kk, _, vv = line.partition("=")
        expected[kk] = vv
    assert p.labels == expected == p.features


@given(st.binary(max_size=300), st.sampled_from(["v0.8.0", "v0.12.0", "v0.14.0", "v0.19.0"]))
def test_parser_never_crashes(data: bytes, version: str) -> None:
    p = parse_feature_lines(data, "f", version, NOW)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in p.labels.items())


@given(st.text(max_size=80))
def test_label_validators_never_crash(s: str) -> None:
    assert isinstance(qualified_name_errors(s), list)
    assert (label_value_errors(s) == []) == (len(s) <= 63 and (s == "" or (s[0].isascii() and s[0].isalnum() and
                                                                         s[-1].isascii() and s[-1].isalnum() and
                                                                         all(c.isascii() and (c.isalnum() or c in "-_.")
                                                                             for c in s))))

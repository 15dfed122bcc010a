"""NFD's local source unit tests, ported: feature files, directives, hidden files, size limit, hooks.

Reference: github:kubernetes-sigs/node-feature-discovery source/local/local_test.go (TestGetExpirationDate,
TestParseDirectives) and its testdata/features.d (recreated here byte for byte, big_file by size), at the
tags named; source/local/local.go parseFeatureFile / parseDirectives / getFeaturesFromHooks at the same tags.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from console.nfd.featurefile import parse_feature_lines, read_features_dir
from console.nfd.local import local_source

FNS = "feature.node.kubernetes.io"
NOW = datetime(2026, 12, 1, tzinfo=UTC)

TESTDATA = {  # source/local/testdata/features.d at v0.15.0 .. v0.19.0 (v0.14.0: without the two marked v0.15)
    ".my.feature": "hiddenFeatureKey=hiddenFeatureValue\n",  # v0.15
    "expired_feature": "# +expiry-time=2012-07-28T11:22:33Z\nfeatureKeyExpired=featureValue\n",
    "feature_with_comments": "# Notes: foo bar\nfeatureKeyRandomComment=featureValue\n",
    "features_with_labels": ("# +no-feature\nlabel-only=value\n\n# +no-feature\nlabel-only-2=value\n\n"
                             "my-feature=value\n\nfoo=bar\n# +no-label\nfoo=baz\n"),  # v0.15
    "multiple_expiration_dates": ("# +expiry-time=2012-07-28T11:22:33Z\nfeatureKey=featureValue\n\n"
                                  "# +expiry-time=2080-07-28T11:22:33Z\nfeatureKey2=featureValue2\n\n"
                                  "# +expiry-time=2070-07-28T11:22:33Z\nfeatureKey3=featureValue3\n\n"
                                  "# +expiry-time=2002-07-28T11:22:33Z\nfeatureKey4=featureValue4\n"),
    "unparsable_expiry_comment": "# +expiry-time=2080-07-28T11:22:33X\nfeatureKeyUnparsable=featureValue\n",
    "valid_feature": "# +expiry-time=2080-07-28T11:22:33Z\nfeatureKeyValid=featureValue\n",
}
BIG_HEAD = ("# This feature file should be skipped as its size is 70kB which is bigger than maximum size 64kB\n"
            "# +expiry-time=2080-07-28T11:22:33Z\nfeatureKeyValid2=featureValue\n\n")


def make_testdata(tmp_path: Path, v015: bool = True) -> Path:
    d = tmp_path / "features.d"
    d.mkdir()
    for name, text in TESTDATA.items():
        if v015 or name not in (".my.feature", "features_with_labels"):
            (d / name).write_text(text)
    filler = "zadievpeiacqyzsriojtdohwpbrghxyfjadmrkefagehfihylpggoinxdcozhbijwaubltuijfhmmjwgsvuxeng\n"
    big = BIG_HEAD + filler * ((70262 - len(BIG_HEAD)) // len(filler) + 1)
    (d / "big_file").write_text(big[:70262])
    return d


@pytest.mark.parametrize("version", ["v0.15.0", "v0.16.0", "v0.19.0"])
def test_get_expiration_date(tmp_path: Path, version: str) -> None:
    """local_test.go TestGetExpirationDate (v0.15.0-v0.19.0): 7 features and 8 labels — expired keys, the
    hidden file and the >64 KiB big_file are skipped; `# +no-feature` / `# +no-label` apply to the next line
    only, and `# +no-label` deletes the key the file had labelled before (foo); an unparsable expiry-time is
    logged and ignored (the key stays)."""
    res = read_features_dir(make_testdata(tmp_path), version, NOW)
    assert res.features == {"featureKeyRandomComment": "featureValue", "featureKey2": "featureValue2",
                            "featureKey3": "featureValue3", "featureKeyUnparsable": "featureValue",
                            "featureKeyValid": "featureValue", "my-feature": "value", "foo": "baz"}
    assert res.labels == {"featureKeyRandomComment": "featureValue", "featureKey2": "featureValue2",
                          "featureKey3": "featureValue3", "featureKeyUnparsable": "featureValue",
                          "featureKeyValid": "featureValue", "label-only": "value", "label-only-2": "value",
                          "my-feature": "value"}
    assert any("big_file" in w and "size limit" in w for w in res.warnings)


def test_get_expiration_date_v0_14(tmp_path: Path) -> None:
    """local_test.go TestGetExpirationDate at v0.14.0: expectedFeaturesLen 5 (v0.14 has one map: features are
    the labels; no hidden-file rule, no +no-label)."""
    res = read_features_dir(make_testdata(tmp_path, v015=False), "v0.14.0", NOW)
    assert set(res.labels) == {"featureKeyRandomComment", "featureKey2", "featureKey3", "featureKeyUnparsable",
                               "featureKeyValid"}


@pytest.mark.parametrize(("directive", "want_err"), [
    ("# +expiry-time=2080-07-28T11:22:33Z", False),
    ("# +random-key=random-value", True),
    ("# + Something", True),
])
def test_parse_directives(directive: str, want_err: bool) -> None:
    """local_test.go TestParseDirectives (v0.19.0): an unknown directive or one without '=' is an error (logged
    by nfd-worker; the line is skipped either way and the following key is still read)."""
    parsed = parse_feature_lines(f"{directive}\nkey=value\n", "f", "v0.19.0", NOW)
    assert parsed.labels == {"key": "value"}
    assert bool(parsed.warnings) == want_err, parsed.warnings


def test_expiry_directive_without_value_is_an_error() -> None:
    """local.go parseDirectives: `# +expiry-time` alone is "invalid directive format"; the previous expiry stays."""
    parsed = parse_feature_lines("# +expiry-time\nkey=value\n", "f", "v0.19.0", NOW)
    assert parsed.labels == {"key": "value"} and any("expiry-time" in w for w in parsed.warnings)


def test_hidden_files_read_before_v0_15(tmp_path: Path) -> None:
    """local.go getFeaturesFromFiles: `strings.HasPrefix(fileName, ".")` is skipped from v0.15.0 only."""
    d = tmp_path / "features.d"
    d.mkdir()
    (d / ".hidden").write_text("hiddenFeatureKey=hiddenFeatureValue\n")
    assert read_features_dir(d, "v0.14.0", NOW).labels == {"hiddenFeatureKey": "hiddenFeatureValue"}
    assert read_features_dir(d, "v0.15.0", NOW).labels == {}


def test_hooks_output_parsed_like_feature_files(tmp_path: Path) -> None:
    """local.go v0.16.0 getFeaturesFromHooks: hook stdout goes through parseFeatureFile (directives included);
    hidden hooks are skipped; with hooksEnabled a hook overrides a feature file's key."""
    hooks, features = tmp_path / "source.d", tmp_path / "features.d"
    hooks.mkdir()
    features.mkdir()
    (features / "f").write_text("shared=from-file\n")
    (hooks / "h").write_text("#!/bin/sh\necho '# +no-label'\necho 'feat-only=1'\necho 'shared=from-hook'\n")
    (hooks / ".hidden").write_text("#!/bin/sh\necho hidden=1\n")
    for h in hooks.iterdir():
        h.chmod(0o755)
    res = local_source(features, hooks, "v0.16.0", hooks_enabled=True, now=NOW)
    assert res.labels == {f"{FNS}/shared": "from-hook"}
    assert res.features["local.feature"] == {"feat-only": "1", "shared": "from-hook"}

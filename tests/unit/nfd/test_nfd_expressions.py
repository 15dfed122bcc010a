"""Match operators, ported from NFD's expression_test.go plus feature-type semantics."""

from __future__ import annotations

import pytest

from console.nfd.expressions import (
    EvaluationError,
    MatchExpression,
    atoi,
    match_multi,
    match_multi_bool,
    match_names_multi,
    parse_semver,
)

OK_CASES = [
    ("", (), "2", False, True),
    ("In", ("1",), "2", False, False),
    ("In", ("1",), "2", True, False),
    ("In", ("1", "2", "3"), "2", False, False),
    ("In", ("1", "2", "3"), "2", True, True),
    ("NotIn", ("2",), "2", False, False),
    ("NotIn", ("1",), "2", True, True),
    ("NotIn", ("1", "2", "3"), "2", False, False),
    ("NotIn", ("1", "2", "3"), "2", True, False),
    ("InRegexp", ("val-[0-9]$",), "val-1", False, False),
    ("InRegexp", ("val-[0-9]$",), "val-1", True, True),
    ("InRegexp", ("val-[0-9]$",), "val-12", True, False),
    ("InRegexp", ("val-[0-9]$", "al-[1-9]"), "val-12", True, True),
    ("Exists", (), None, False, False),
    ("Exists", (), None, True, True),
    ("DoesNotExist", (), "false", False, True),
    ("DoesNotExist", (), "false", True, False),
    ("Gt", ("2",), "3", False, False),
    ("Gt", ("2",), "2", True, False),
    ("Gt", ("2",), "3", True, True),
    ("Gt", ("-10",), "-3", True, True),
    ("Lt", ("2",), "1", False, False),
    ("Lt", ("2",), "2", True, False),
    ("Lt", ("-10",), "-3", True, False),
    ("Lt", ("2",), "1", True, True),
    ("GtLt", ("1", "10"), "1", False, False),
    ("GtLt", ("1", "10"), "1", True, False),
    ("GtLt", ("1", "10"), "10", True, False),
    ("GtLt", ("1", "10"), "2", True, True),
    ("IsTrue", (), "true", False, False),
    ("IsTrue", (), "true", True, True),
    ("IsTrue", (), "false", True, False),
    ("IsTrue", (), "True", True, False),
    ("IsFalse", (), "false", False, False),
    ("IsFalse", (), "false", True, True),
    ("IsFalse", (), "true", True, False),
    ("Ge", ("2",), "2", True, True),
    ("Le", ("2",), "3", True, False),
    ("GeLe", ("1", "10"), "10", True, True),
    ("In", ("",), "", True, True),  # an empty attribute value is a value
]


@pytest.mark.parametrize(("op", "values", "value", "valid", "want"), OK_CASES)
def test_evaluate(op: str, values: tuple[str, ...], value: str | None, valid: bool, want: bool) -> None:
    assert MatchExpression(op, values).test(valid, value) is want


ERR_CASES = [
    ("", ("1",), "val"),
    ("In", (), "val"),
    ("NotIn", (), "val"),
    ("InRegexp", (), "val"),
    ("InRegexp", ("(",), "val"),
    ("Exists", ("1",), None),
    ("DoesNotExist", ("1",), None),
    ("Gt", (), "1"),
    ("Gt", ("1", "2"), "1"),
    ("Gt", ("",), "1"),
    ("Gt", ("2",), "3a"),
    ("Lt", (), "1"),
    ("Lt", ("1", "2", "3"), "1"),
    ("Lt", ("a",), "1"),
    ("Lt", ("2",), "1.0"),
    ("Lt", ("2",), "0x1"),
    ("Lt", ("2",), " 1"),
    ("GtLt", (), "1"),
    ("GtLt", ("1",), "1"),
    ("GtLt", ("2", "1"), "1"),
    ("GtLt", ("1", "2", "3"), "1"),
    ("GtLt", ("a", "2"), "1"),
    ("GtLt", ("1", "10"), "1.0"),
    ("IsTrue", ("1",), "true"),
    ("IsFalse", ("1", "2"), "false"),
    ("non-existent-op", ("1",), "1"),
]


@pytest.mark.parametrize(("op", "values", "value"), ERR_CASES)
def test_evaluate_errors(op: str, values: tuple[str, ...], value: str | None) -> None:
    with pytest.raises(EvaluationError):
        MatchExpression(op, values).test(True, value)


def test_errors_only_when_a_value_is_compared() -> None:
    # NFD checks value counts and numbers lazily: a missing key or a flag never raises.
    assert MatchExpression("Gt", ("x",)).test(False, None) is False
    assert MatchExpression("In", ()).test(True, None) is False
    assert MatchExpression("GtLt", ("5", "1")).test(False, "3") is False


def test_error_messages_name_the_problem() -> None:
    with pytest.raises(EvaluationError, match=r"not a number \"abc\""):
        MatchExpression("Gt", ("1",)).test(True, "abc")
    with pytest.raises(EvaluationError, match="must contain exactly two elements"):
        MatchExpression("GtLt", ("1",)).test(True, "1")
    with pytest.raises(EvaluationError, match="valid regexps"):
        MatchExpression("InRegexp", ("(",)).test(True, "x")
    with pytest.raises(EvaluationError, match="invalid Op"):
        MatchExpression("IsEmpty").test(True, "")


def test_version_type() -> None:
    assert MatchExpression("Gt", ("5.4",), "version").test(True, "5.15.0-76-generic")
    assert not MatchExpression("Lt", ("5.4",), "version").test(True, "5.15")
    assert MatchExpression("GeLe", ("1", "2.0.0"), "version").test(True, "2")
    with pytest.raises(EvaluationError, match="not a version"):
        MatchExpression("Gt", ("1",), "version").test(True, "abc")
    with pytest.raises(EvaluationError, match="'type' field only accepts"):
        MatchExpression("Gt", ("1",), "semver").test(True, "1")


def test_atoi_and_semver_are_strict() -> None:
    assert atoi("+42") == 42 and atoi("-0") == 0
    for bad in ("", "1.0", "0x10", " 1", "1 ", "1_000", "٣", str(2**63)):
        assert atoi(bad) is None, bad
    assert parse_semver("v1.2.3-rc1+meta") == (1, 2, 3)
    assert parse_semver("1.2.3.4") is None


def ex(**kw: dict) -> list[tuple[str, MatchExpression]]:
    return sorted((k, MatchExpression(v["op"], tuple(v.get("value", ())))) for k, v in kw.items())


FLAGS = {"AVX", "AVX2"}
ATTRS = {"AVX10_VERSION": "1", "family": "6"}


def test_flags_value_ops_are_false() -> None:
    assert match_multi(ex(AVX={"op": "In", "value": ["AVX"]}), FLAGS, None, None)[0] is False
    assert match_multi(ex(AVX={"op": "IsTrue"}), FLAGS, None, None)[0] is False
    ok, elems = match_multi(ex(AVX={"op": "Exists"}, SSE={"op": "DoesNotExist"}), FLAGS, None, None)
    assert ok and elems == [{"Name": "AVX"}, {"Name": "SSE"}]


def test_attributes_missing_key_makes_notin_false() -> None:
    assert match_multi(ex(missing={"op": "NotIn", "value": ["x"]}), None, ATTRS, None)[0] is False
    assert match_multi(ex(family={"op": "NotIn", "value": ["5"]}), None, ATTRS, None)[0] is True


def test_flag_plus_attribute_union_and_doesnotexist() -> None:
    # Exists matches on either type; DoesNotExist needs absence from both.
    assert match_multi(ex(AVX10_VERSION={"op": "Exists"}), FLAGS, ATTRS, None)[0]
    assert match_multi(ex(AVX10_VERSION={"op": "Gt", "value": ["0"]}), FLAGS, ATTRS, None)[0]
    assert not match_multi(ex(AVX10_VERSION={"op": "DoesNotExist"}), FLAGS, ATTRS, None)[0]
    assert not match_multi(ex(AVX={"op": "DoesNotExist"}), FLAGS, ATTRS, None)[0]
    assert match_multi(ex(SSE={"op": "DoesNotExist"}), FLAGS, ATTRS, None)[0]
    for exprs in (ex(AVX10_VERSION={"op": "DoesNotExist"}), ex(SSE={"op": "DoesNotExist"}),
                  ex(AVX={"op": "DoesNotExist"})):
        assert match_multi_bool(exprs, FLAGS, ATTRS, None) == match_multi(exprs, FLAGS, ATTRS, None)[0]


DEVS = [{"vendor": "8086", "class": "0200", "sriov_totalvfs": "64"}, {"vendor": "10de", "class": "0300"}]


def test_instances_same_instance_and_doesnotexist_means_some() -> None:
    ok, elems = match_multi(ex(vendor={"op": "In", "value": ["10de"]}, class_={"op": "In", "value": ["0300"]}),
                            None, None, DEVS)
    assert not ok  # "class_" key is missing on every instance
    ok, elems = match_multi(ex(vendor={"op": "In", "value": ["10de"]}), None, None, DEVS)
    assert ok and elems == [DEVS[1]]
    both = sorted([("vendor", MatchExpression("In", ("8086",))), ("class", MatchExpression("In", ("0300",)))])
    assert not match_multi(both, None, None, DEVS)[0]  # no single device has both
    ok, elems = match_multi(ex(sriov_totalvfs={"op": "DoesNotExist"}), None, None, DEVS)
    assert ok and elems == [DEVS[1]]  # "some device lacks it"


def test_empty_expression_set() -> None:
    assert match_multi([], set(), None, None)[0]  # feature present (even empty)
    assert match_multi([], None, None, DEVS)[0]
    assert not match_multi([], None, None, [])[0]


def test_instance_errors_propagate_even_after_a_match() -> None:
    devs = [{"n": "1"}, {"n": "x"}]
    with pytest.raises(EvaluationError):
        match_multi_bool(ex(n={"op": "Gt", "value": ["0"]}), None, None, devs)


def test_match_name() -> None:
    ok, elems = match_names_multi(MatchExpression("InRegexp", ("^AVX",)), {"AVX", "SSE", "AVX2"}, None, None)
    assert ok and elems == [{"Name": "AVX"}, {"Name": "AVX2"}]
    ok, elems = match_names_multi(MatchExpression("Exists"), None, ATTRS, None)
    assert ok and elems == [{"Name": "AVX10_VERSION", "Value": "1"}, {"Name": "family", "Value": "6"}]
    assert not match_names_multi(MatchExpression("DoesNotExist"), FLAGS, ATTRS, DEVS)[0]
    ok, elems = match_names_multi(MatchExpression("In", ("sriov_totalvfs",)), None, None, DEVS)
    assert ok and elems == [DEVS[0]]
    with pytest.raises(EvaluationError, match="not a number"):
        match_names_multi(MatchExpression("Gt", ("1",)), FLAGS, None, None)


def test_from_api_rejects_bad_shapes() -> None:
    with pytest.raises(ValueError, match="value: must be a list"):
        MatchExpression.from_api({"op": "In", "value": "x"}, "t")
    with pytest.raises(ValueError, match="must be a mapping"):
        MatchExpression.from_api("Exists", "t")
    assert MatchExpression.from_api({"op": "In", "value": [1, True]}).values == ("1", "true")

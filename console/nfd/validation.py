"""NodeFeatureRule validation with precise messages: rule name, field, what is wrong.

Combines what the CRD schema rejects (operator enum per version), what `kubectl nfd validate`
checks (label/annotation/taint/ER validators, template parsing, `<domain>.<feature>` names) and
errors NFD would only hit at evaluation time but that are certain from the rule alone
(wrong value counts, non-integer Gt/Lt operands, bad regexps).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from console.nfd import versions as V
from console.nfd.expressions import BASE_OPS, INCLUSIVE_OPS, atoi, crd_ops, parse_semver
from console.nfd.labels import LabelPolicy, add_ns
from console.nfd.master import annotation_error, filter_extended_resource, taint_error
from console.nfd.model import Features
from console.nfd.regex import RegexpError, compile_regexp
from console.nfd.rules import RuleError, Taint, object_name, rules_of, shape_error
from console.nfd.templates import TemplateError, parse_template


@dataclass(frozen=True)
class Issue:
    severity: str  # "error" or "warning"
    rule: str
    field: str
    message: str
    # True: the API server accepts the object (the CRD's schema does not check this) and nfd-master meets the
    # error only when it evaluates the expression or runs the template, then skips the rule; a dry run evaluates
    # such a rule as the master does rather than refusing it
    evaluated: bool = False

    def __str__(self) -> str:
        return f"{self.severity}: rule {self.rule!r}: {self.field}: {self.message}"


_COUNTS = {"In": "1+", "NotIn": "1+", "InRegexp": "1+", "Exists": 0, "DoesNotExist": 0, "IsTrue": 0, "IsFalse": 0,
           "Gt": 1, "Lt": 1, "Ge": 1, "Le": 1, "GtLt": 2, "GeLe": 2}


def _check_expr(raw: Any, fld: str, rule: str, v: V.NfdVersion, issues: list[Issue]) -> None:
    # the CRD's schema checks the shape and the op (an enum); the rest only the master's evaluation
    # (v0.19.0 pkg/apis/nfd/nodefeaturerule/expression.go evaluateExpression)
    def schema(msg: str) -> None:
        issues.append(Issue("error", rule, fld, msg))

    def err(msg: str) -> None:
        issues.append(Issue("error", rule, fld, msg, evaluated=True))

    if not isinstance(raw, Mapping):
        schema(f"must be a mapping with 'op' (got {raw!r})")
        return
    op = raw.get("op")
    allowed = crd_ops(v)
    if op not in allowed:
        hint = " (Ge, Le and GeLe need NFD v0.18+)" if op in INCLUSIVE_OPS else ""
        schema(f"op {op!r} is not one of {', '.join(allowed)}{hint}")
        return
    vals = raw.get("value") or []
    if not isinstance(vals, list):
        schema(f"value must be a list of strings (got {vals!r})")
        return
    vals = [str(x) for x in vals]
    want = _COUNTS[op]
    if want == "1+" and not vals:
        err(f"op {op} needs at least one value")
    elif isinstance(want, int) and len(vals) != want:
        err(f"op {op} needs exactly {want} value(s), has {len(vals)}: {vals}")
        return
    typ = raw.get("type") or ""
    if typ and not V.inclusive_ops_supported(v):
        issues.append(Issue("warning", rule, fld, f"'type' needs NFD v0.18+; NFD {v} ignores it"))
        typ = ""
    if typ and (typ != "version" or op not in ("Gt", "Lt", "Ge", "Le", "GtLt", "GeLe")):
        err(f"type {typ!r} is invalid: only 'version', and only with Gt, Ge, Lt, Le, GtLt or GeLe")
        return
    if op == "InRegexp":
        for p in vals:
            try:
                compile_regexp(p)
            except RegexpError as exc:
                err(f"invalid regexp {p!r}: {exc.describe()}")
    elif op in ("Gt", "Lt", "Ge", "Le", "GtLt", "GeLe"):
        parse = parse_semver if typ == "version" else atoi
        parsed = [parse(x) for x in vals]
        for x, p in zip(vals, parsed, strict=True):
            if p is None:
                err(f"{x!r} is not {'a version' if typ else 'an integer (base 10, as strconv.Atoi)'}")
        if len(parsed) == 2 and None not in parsed and not parsed[0] < parsed[1]:  # type: ignore[operator]
            if typ != "version":
                err(f"value[0] must be less than value[1] for op {op} (have {vals})")
            # NFD checks the order of numbers only (expression.go, MatchGtLt/MatchGeLe): version bounds are taken
            # as they are, so GeLe [v, v] matches v alone and reversed bounds match nothing
            elif op == "GtLt" or parsed[0] > parsed[1]:  # type: ignore[operator]
                issues.append(Issue("warning", rule, fld, f"op {op} with versions {vals} matches no version"))


def _check_terms(raw: Any, fld: str, rule: str, v: V.NfdVersion, issues: list[Issue]) -> None:
    if raw is None:
        return
    if not isinstance(raw, list):
        issues.append(Issue("error", rule, fld, "must be a list of {feature, matchExpressions, matchName}"))
        return
    for i, term in enumerate(raw):
        f = f"{fld}[{i}]"
        if not isinstance(term, Mapping):
            issues.append(Issue("error", rule, f, "must be a mapping with 'feature'"))
            continue
        feat = term.get("feature")
        if not isinstance(feat, str) or not feat:
            issues.append(Issue("error", rule, f"{f}.feature", "required"))
        elif len(feat.split(".")) != 2:
            issues.append(Issue("error", rule, f"{f}.feature",
                                f"invalid feature name {feat} (not <domain>.<feature>), cannot be used for templating"))
        elif feat != feat.lower() and V.feature_names_lowercased(v):
            issues.append(Issue("warning", rule, f"{f}.feature", f"{feat!r} is looked up as {feat.lower()!r}; "
                                "template data keeps the case written here"))
        me = term.get("matchExpressions")
        if me is not None:
            if not isinstance(me, Mapping):
                issues.append(Issue("error", rule, f"{f}.matchExpressions", "must be a mapping of name -> {op, value}"))
            else:
                for k, e in me.items():
                    _check_expr(e, f"{f}.matchExpressions.{k}", rule, v, issues)
        if term.get("matchName") is not None:
            if not V.match_name_supported(v):
                issues.append(Issue("warning", rule, f"{f}.matchName", f"needs NFD v0.15+; NFD {v} ignores it"))
            else:
                _check_expr(term["matchName"], f"{f}.matchName", rule, v, issues)


def validate_rule(raw: Any, version: V.NfdVersion | str | None = None, index: int = 0,
                  policy: LabelPolicy | None = None) -> list[Issue]:
    """Issues for one `spec.rules[]` entry."""
    v = V.parse_version(version)
    policy = policy or LabelPolicy(v)
    if not isinstance(raw, Mapping):
        return [Issue("error", f"#{index}", "rule", "must be a mapping")]
    name = raw.get("name")
    rule = name if isinstance(name, str) and name else f"#{index}"
    issues: list[Issue] = []
    if not isinstance(name, str) or not name:
        issues.append(Issue("error", rule, "name", "rule name cannot be empty"))
    known = {"name", "labels", "labelsTemplate", "vars", "varsTemplate", "annotations", "taints",
             "extendedResources", "matchFeatures", "matchAny"}
    for k in raw:
        if k not in known:
            issues.append(Issue("warning", rule, str(k), "unknown field (pruned by the API server)"))
    for fld in ("annotations", "taints", "extendedResources"):
        if raw.get(fld) and v.minor < V.rule_field_since(fld):
            issues.append(Issue("warning", rule, fld, f"needs NFD v0.{V.rule_field_since(fld)}+; NFD {v} ignores it"))
    if not V.rules_supported(v):
        issues.append(Issue("error", rule, "rule", f"NodeFeatureRule needs NFD v0.10+ (got {v})"))
    fake = Features(attributes={})
    prefix = policy.prefix_mode == "prefix"
    for fld in ("labels", "vars", "annotations", "extendedResources"):
        m = raw.get(fld)
        if m is not None and not isinstance(m, Mapping):
            issues.append(Issue("error", rule, fld, "must be a mapping of strings"))
    for k, val in (raw.get("labels") or {}).items() if isinstance(raw.get("labels"), Mapping) else ():
        key = add_ns(str(k)) if prefix else str(k)
        value = "0" if str(val).startswith("@") else str(val)
        if str(val).startswith("@") and len(str(val)[1:].split(".", 2)) != 3:
            issues.append(Issue("error", rule, f"labels.{k}", f"value {val} is not in the form of "
                                "'@domain.feature.element'"))
        fv, reason = policy.filter_label(key, value, fake.attributes)
        if fv is None:
            issues.append(Issue("error", rule, f"labels.{k}", reason))
    if v.at_least(15) and isinstance(raw.get("annotations"), Mapping):
        for k, val in raw["annotations"].items():
            key = add_ns(str(k)) if prefix else str(k)
            reason = annotation_error(key, str(val))
            if reason and not (policy.prefix_mode == "keep-unprefixed" and "unprefixed" in reason):
                issues.append(Issue("error", rule, f"annotations.{k}", reason))
    if v.at_least(13) and isinstance(raw.get("extendedResources"), Mapping):
        for k, val in raw["extendedResources"].items():
            key = add_ns(str(k)) if prefix else str(k)
            value = "0" if str(val).startswith("@") else str(val)
            fv, reason = filter_extended_resource(key, value, fake, policy.prefix_mode)
            if fv is None:
                issues.append(Issue("error", rule, f"extendedResources.{k}", reason))
    if v.at_least(12) and raw.get("taints") is not None:
        if not isinstance(raw["taints"], list):
            issues.append(Issue("error", rule, "taints", "must be a list of {key, value, effect}"))
        else:
            for i, t in enumerate(raw["taints"]):
                if not isinstance(t, Mapping):
                    issues.append(Issue("error", rule, f"taints[{i}]", "must be a mapping"))
                    continue
                reason = taint_error(Taint(str(t.get("key") or ""), str(t.get("value") or ""),
                                            str(t.get("effect") or "")))
                if reason:
                    issues.append(Issue("error", rule, f"taints[{i}]", f"{t.get('key')}: {reason}"))
    for fld in ("labelsTemplate", "varsTemplate"):
        src = raw.get(fld)
        if src:
            try:
                parse_template(str(src), sprig=V.sprig_functions(v), size_capped=V.template_size_capped(v))
            except TemplateError as exc:
                issues.append(Issue("error", rule, fld, str(exc), evaluated=True))
            if not raw.get("matchFeatures") and not raw.get("matchAny"):
                issues.append(Issue("warning", rule, fld, "never executed: NFD runs templates only on the features "
                                    "matched by matchFeatures/matchAny"))
    _check_terms(raw.get("matchFeatures"), "matchFeatures", rule, v, issues)
    ma = raw.get("matchAny")
    if ma is not None:
        if not isinstance(ma, list):
            issues.append(Issue("error", rule, "matchAny", "must be a list of {matchFeatures}"))
        else:
            for i, elem in enumerate(ma):
                mf = elem.get("matchFeatures") if isinstance(elem, Mapping) else None
                _check_terms(mf, f"matchAny[{i}].matchFeatures", rule, v, issues)
    return issues


def validate_rule_object(obj: Any, version: V.NfdVersion | str | None = None, policy: LabelPolicy | None = None
                         ) -> list[Issue]:
    """Issues for a whole NodeFeatureRule object."""
    v = V.parse_version(version)
    if not isinstance(obj, Mapping):
        return [Issue("error", "-", "object", "a NodeFeatureRule must be a mapping")]
    if obj.get("kind") not in (None, "NodeFeatureRule"):
        return [Issue("error", "-", "kind", f"expected NodeFeatureRule, got {obj.get('kind')!r}")]
    issues: list[Issue] = []
    shape = shape_error(obj)
    if shape:
        return [Issue("error", "-", *shape)]
    if not object_name(obj):
        issues.append(Issue("error", "-", "metadata.name", "required"))
    try:
        rules = rules_of(obj)
    except RuleError as exc:
        return [*issues, Issue("error", "-", "spec.rules", str(exc))]
    if not rules:
        issues.append(Issue("warning", "-", "spec.rules", "no rules"))
    for i, r in enumerate(rules):
        issues.extend(validate_rule(r, v, i, policy))
    return issues


__all__ = ["BASE_OPS", "Issue", "validate_rule", "validate_rule_object"]

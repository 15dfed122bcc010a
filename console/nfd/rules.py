"""NodeFeatureRule rules compiled once and executed like nodefeaturerule.Execute (failFast=true)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from console.nfd import versions as V
from console.nfd.expressions import (
    Element,
    EvaluationError,
    ExpressionSet,
    MatchExpression,
    match_multi,
    match_multi_bool,
    match_names_multi,
)
from console.nfd.labels import add_ns_to_keys
from console.nfd.model import Features
from console.nfd.template_values import DomainFeatures, matched_features_map
from console.nfd.templates import Template, TemplateError, expand_map, parse_template

BACKREF_FEATURE = "rule.matched"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class RuleError(ValueError):
    """A rule cannot be compiled (wrong shape, unparsable template); message names rule and field."""


@dataclass
class Term:
    feature: str
    lookup: str  # lower-cased name (v0.12+)
    dom: str
    nam: str
    exprs: ExpressionSet | None
    match_name: MatchExpression | None


@dataclass
class Taint:
    key: str
    value: str
    effect: str

    def to_string(self) -> str:
        """corev1.Taint.ToString: key[=value]:effect."""
        return f"{self.key}={self.value}:{self.effect}" if self.value else f"{self.key}:{self.effect}"

    def as_dict(self) -> dict[str, str]:
        d = {"key": self.key, "effect": self.effect}
        if self.value:
            d["value"] = self.value
        return d


@dataclass
class RuleOutput:
    matched: bool
    labels: dict[str, str] = field(default_factory=dict)
    vars: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    extended_resources: dict[str, str] = field(default_factory=dict)
    taints: list[Taint] = field(default_factory=list)


_NO_MATCH = RuleOutput(False)  # shared; never mutated


def _freeze(mf: dict[str, dict[str, list[dict[str, str]]]]) -> Any:
    return tuple((dom, tuple((nam, tuple(tuple(e.items()) for e in elems)) for nam, elems in feats.items()))
                 for dom, feats in mf.items())


@dataclass
class CompiledRule:
    name: str
    labels: dict[str, str]
    vars: dict[str, str]
    annotations: dict[str, str]
    extended_resources: dict[str, str]
    taints: list[Taint]
    labels_template: Template | None
    vars_template: Template | None
    template_error: str | None  # parse error, raised at execution like NFD
    match_features: list[Term]
    match_any: list[list[Term]]
    version: V.NfdVersion
    ignored_fields: list[str] = field(default_factory=list)

    def prefixed_labels(self, labels: dict[str, str]) -> dict[str, str]:
        """addNsToMapKeys(labels), precomputed for rules whose labels are static."""
        if labels is self.labels:
            return self._prefixed
        return add_ns_to_keys(labels)

    def __post_init__(self) -> None:
        self._prefixed = add_ns_to_keys(self.labels)
        self._tmpl_memo: dict[Any, Any] = {}
        self._has_tmpl = self.labels_template is not None or self.vars_template is not None or bool(
            self.template_error)
        self._static: RuleOutput | None = None
        if not self._has_tmpl:
            self._static = RuleOutput(True, self.labels, self.vars, self.annotations, self.extended_resources,
                                      self.taints)

    def execute(self, features: Features) -> RuleOutput:
        """Execute; raises EvaluationError when NFD would log "failed to process rule".

        The returned output may be shared between calls: treat it as read-only.
        """
        if self._static is not None:  # no templates: the output is fixed, only the match varies
            if self.match_any and not any(self._match_bool(t, features) for t in self.match_any):
                return _NO_MATCH
            if self.match_features and not self._match_bool(self.match_features, features):
                return _NO_MATCH
            return self._static
        has_tmpl = self._has_tmpl
        labels: dict[str, str] = {}
        vars_: dict[str, str] = {}
        if self.match_any:
            any_ok = False
            for terms in self.match_any:
                ok, mf = self._match(terms, features, has_tmpl)
                if ok:
                    any_ok = True
                    if not has_tmpl:
                        break
                    self._templates(mf, labels, vars_)
            if not any_ok:
                return _NO_MATCH
        if self.match_features:
            ok, mf = self._match(self.match_features, features, has_tmpl)
            if not ok:
                return _NO_MATCH
            self._templates(mf, labels, vars_)
        if not has_tmpl:
            labels, vars_ = self.labels, self.vars  # shared, read-only (see prefixed_labels)
        else:
            labels.update(self.labels)
            vars_.update(self.vars)
        return RuleOutput(True, labels, vars_, dict(self.annotations) if self.annotations else {},
                          dict(self.extended_resources) if self.extended_resources else {},
                          list(self.taints) if self.taints else [])

    def _templates(self, mf: dict[str, Any], labels: dict[str, str], vars_: dict[str, str]) -> None:
        if self.template_error:
            raise EvaluationError(self.template_error)
        # Templates are pure functions of the matched elements; nodes of a cluster repeat them a lot.
        key = _freeze(mf)
        hit = self._tmpl_memo.get(key)
        if hit is None:
            hit = self._expand(mf)
            if len(self._tmpl_memo) < 4096:
                self._tmpl_memo[key] = hit
        if isinstance(hit, EvaluationError):
            raise hit
        labels.update(hit[0])
        vars_.update(hit[1])

    def _expand(self, mf: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]] | EvaluationError:
        res: list[dict[str, str]] = []
        for tmpl, what in ((self.labels_template, "labelsTemplate"), (self.vars_template, "varsTemplate")):
            if tmpl is None:
                res.append({})
                continue
            try:
                res.append(expand_map(tmpl, mf))
            except TemplateError as exc:
                return EvaluationError(f"failed to expand template ({what}): {exc}")
            except RecursionError:
                return EvaluationError(f"failed to expand template ({what}): too deeply nested")
        return res[0], res[1]

    def _match(self, terms: list[Term], features: Features, want: bool) -> tuple[bool, dict[str, Any]]:
        if not want:
            return self._match_bool(terms, features), {}
        mf = matched_features_map()
        union = V.multi_term_union(self.version)
        for t in terms:
            dom = mf.get(t.dom)
            if dom is None:
                dom = mf[t.dom] = DomainFeatures()
            keys = features.flags.get(t.lookup)
            values = features.attributes.get(t.lookup)
            inst = features.instances.get(t.lookup)
            if keys is None and values is None and inst is None:
                return False, mf  # "feature not available"
            ok = True
            elems: list[Element] = []
            if t.exprs is not None:
                ok, elems = match_multi(t.exprs, keys, values, inst, want)
            if ok and t.match_name is not None:
                ok, more = match_names_multi(t.match_name, keys, values, inst)
                elems = elems + more
            if union:
                dom.setdefault(t.nam, []).extend(elems)
            else:
                dom[t.nam] = elems
            if not ok:
                return False, mf
        return True, mf


    @staticmethod
    def _match_bool(terms: list[Term], features: Features) -> bool:
        """_match without template data (most rules have no template)."""
        flags, attrs, insts = features.flags, features.attributes, features.instances
        for t in terms:
            lk = t.lookup
            keys = flags.get(lk)
            values = attrs.get(lk)
            inst = insts.get(lk)
            if keys is None and values is None and inst is None:
                return False
            ok = True
            exprs = t.exprs
            if exprs is not None:
                if inst is None and len(exprs) == 1:  # the common case, inlined
                    name, e = exprs[0]
                    mk = mv = False
                    if keys is not None:
                        mk = e.test(name in keys, None)
                        if not mk and e.op == "DoesNotExist":
                            return False
                    if values is not None:
                        v = values.get(name)
                        mv = e.test(v is not None, v)
                        if not mv and e.op == "DoesNotExist":
                            return False
                    ok = mk or mv
                else:
                    ok = match_multi_bool(exprs, keys, values, inst)
            if ok and t.match_name is not None:
                ok = match_names_multi(t.match_name, keys, values, inst)[0]
            if not ok:
                return False
        return True


def _str_map(raw: Any, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise RuleError(f"{where}: must be a mapping of strings (got {type(raw).__name__})")
    out = {}
    for k, v in raw.items():
        if isinstance(v, Mapping | list):
            raise RuleError(f"{where}.{k}: value must be a string (got {type(v).__name__})")
        out[str(k)] = "" if v is None else ("true" if v is True else "false" if v is False else str(v))
    return out


def _terms(raw: Any, where: str, version: V.NfdVersion, ignored: list[str]) -> list[Term]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RuleError(f"{where}: must be a list of feature terms")
    out = []
    for i, t in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(t, Mapping):
            raise RuleError(f"{w}: must be a mapping with 'feature'")
        feat = t.get("feature")
        if not isinstance(feat, str) or not feat:
            raise RuleError(f"{w}.feature: required (a '<domain>.<feature>' name)")
        exprs: ExpressionSet | None = None
        me = t.get("matchExpressions")
        if me is not None:
            if not isinstance(me, Mapping):
                raise RuleError(f"{w}.matchExpressions: must be a mapping of element name -> {{op, value}}")
            try:
                exprs = sorted(((str(k), MatchExpression.from_api(e, f"{w}.matchExpressions.{k}"))
                                for k, e in me.items()), key=lambda kv: kv[0])
            except ValueError as exc:
                raise RuleError(str(exc)) from None
        mn = None
        if t.get("matchName") is not None:
            if V.match_name_supported(version):
                try:
                    mn = MatchExpression.from_api(t["matchName"], f"{w}.matchName")
                except ValueError as exc:
                    raise RuleError(str(exc)) from None
            else:
                ignored.append(f"{w}.matchName (needs NFD v0.15+)")
        lookup = feat.lower() if V.feature_names_lowercased(version) else feat
        dom, sep, nam = feat.partition(".")
        if not sep:
            dom, nam = lookup, ""
        out.append(Term(feat, lookup, dom, nam, exprs, mn))
    return out


def compile_rule(raw: Mapping[str, Any], version: V.NfdVersion | str | None = None, where: str = "rule"
                 ) -> CompiledRule:
    """Compile one `spec.rules[]` entry. Raises RuleError for a shape NFD's API would reject.

    Fields the version does not know are ignored (the CRD prunes them) and listed in `ignored_fields`.
    A template that does not parse does not raise here: NFD fails the rule when it runs it.
    """
    v = V.parse_version(version)
    if not isinstance(raw, Mapping):
        raise RuleError(f"{where}: must be a mapping")
    name = raw.get("name")
    if not isinstance(name, str):
        raise RuleError(f"{where}.name: required string")
    where = f"rule {name!r}"
    ignored: list[str] = []
    for fld in ("annotations", "taints", "extendedResources"):
        if raw.get(fld) and v.minor < V.rule_field_since(fld):
            ignored.append(f"{fld} (needs NFD v0.{V.rule_field_since(fld)}+)")
    labels = _str_map(raw.get("labels"), f"{where}: labels")
    vars_ = _str_map(raw.get("vars"), f"{where}: vars")
    ann = _str_map(raw.get("annotations"), f"{where}: annotations") if v.at_least(15) else {}
    ers = _str_map(raw.get("extendedResources"), f"{where}: extendedResources") if v.at_least(13) else {}
    taints: list[Taint] = []
    if v.at_least(12):
        rt = raw.get("taints") or []
        if not isinstance(rt, list):
            raise RuleError(f"{where}: taints: must be a list of {{key, value, effect}}")
        for i, t in enumerate(rt):
            if not isinstance(t, Mapping) or not isinstance(t.get("key"), str):
                raise RuleError(f"{where}: taints[{i}]: must be a mapping with a string 'key'")
            taints.append(Taint(t["key"], str(t.get("value") or ""), str(t.get("effect") or "")))
    tmpl_err = None
    lt = vt = None
    sprig, capped = V.sprig_functions(v), V.template_size_capped(v)
    for fld in ("labelsTemplate", "varsTemplate"):
        src = raw.get(fld)
        if src in (None, ""):
            continue
        if not isinstance(src, str):
            raise RuleError(f"{where}: {fld}: must be a string")
        try:
            parsed = parse_template(src, sprig=sprig, size_capped=capped)
        except TemplateError as exc:
            tmpl_err = tmpl_err or f"failed to parse template ({fld}): {exc}"
            continue
        if fld == "labelsTemplate":
            lt = parsed
        else:
            vt = parsed
    mf = _terms(raw.get("matchFeatures"), f"{where}: matchFeatures", v, ignored)
    ma_raw = raw.get("matchAny")
    if ma_raw is not None and not isinstance(ma_raw, list):
        raise RuleError(f"{where}: matchAny: must be a list of {{matchFeatures}}")
    ma = []
    for i, elem in enumerate(ma_raw or []):
        if not isinstance(elem, Mapping):
            raise RuleError(f"{where}: matchAny[{i}]: must be a mapping with matchFeatures")
        ma.append(_terms(elem.get("matchFeatures"), f"{where}: matchAny[{i}].matchFeatures", v, ignored))
    return CompiledRule(name, labels, vars_, ann, ers, taints, lt, vt, tmpl_err, mf, ma, v, ignored)


def object_name(obj: Any) -> str:
    """metadata.name of an API object as written, "" when the object, its metadata or the name has the wrong shape."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    name = meta.get("name") if isinstance(meta, Mapping) else None
    return name if isinstance(name, str) else ""


def shape_error(obj: Any) -> tuple[str, str] | None:
    """(field, what is wrong) when a NodeFeatureRule object's top level has the wrong shape."""
    if not isinstance(obj, Mapping):
        return "object", f"a NodeFeatureRule must be a mapping (got {type(obj).__name__})"
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, Mapping):
        return "metadata", f"must be a mapping (got {type(meta).__name__})"
    if isinstance(meta, Mapping) and meta.get("name") is not None and not isinstance(meta.get("name"), str):
        return "metadata.name", f"must be a string (got {type(meta.get('name')).__name__})"
    spec = obj.get("spec")
    if spec is not None and not isinstance(spec, Mapping):
        return "spec", f"must be a mapping (got {type(spec).__name__})"
    rules = spec.get("rules") if isinstance(spec, Mapping) else None
    if not isinstance(rules, list):
        return "spec.rules", "spec.rules must be a list" + (" (missing)" if rules is None else
                                                             f" (got {type(rules).__name__})")
    return None


def rules_of(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """`spec.rules` of a NodeFeatureRule object."""
    err = shape_error(obj)
    if err:
        fld, msg = err
        what = msg if fld == "spec.rules" else f"{fld}: {msg}"
        raise RuleError(f"NodeFeatureRule {object_name(obj) or '?'!r}: {what}")
    return obj["spec"]["rules"]


@dataclass
class CompiledRuleObject:
    name: str
    rules: list[CompiledRule]

    def warnings(self, v: V.NfdVersion) -> list[str]:
        """Fields this NFD version ignores, one line each."""
        return [f"NodeFeatureRule {self.name!r} rule {r.name!r}: {ign}; ignored by NFD {v}"
                for r in self.rules for ign in r.ignored_fields]


def compile_rule_objects(objs: Sequence[Mapping[str, Any]], version: V.NfdVersion | str | None = None
                         ) -> list[CompiledRuleObject]:
    """Compile NodeFeatureRule objects, sorted by metadata.name as nfd-master runs them."""
    v = V.parse_version(version)
    out = []
    for obj in objs:
        if not isinstance(obj, Mapping):
            raise RuleError("a NodeFeatureRule must be a mapping")
        kind = obj.get("kind")
        if kind not in (None, "NodeFeatureRule"):
            raise RuleError(f"expected kind NodeFeatureRule, got {kind!r}")
        name = object_name(obj)
        rules = [compile_rule(r, v, where=f"NodeFeatureRule {name!r} spec.rules[{i}]")
                 for i, r in enumerate(rules_of(obj))]
        out.append(CompiledRuleObject(name, rules))
    out.sort(key=lambda o: o.name)
    return out

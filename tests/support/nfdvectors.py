"""NFD's own rule-engine test vectors (v0.19.0 pkg/apis/nfd/nodefeaturerule/rule_test.go TestTemplating), shared by
the unit tests of the console's engine (tests/unit/nfd/test_nfd_upstream_rules.py) and the conformance test that
runs them through the real nfd-master (tests/integration/nfd_lab/test_conformance_real_nfd.py)."""

from __future__ import annotations

from typing import Any


def ex(op: str, *values: str) -> dict[str, Any]:
    return {"op": op, "value": list(values)} if values else {"op": op}


R1_TERMS = [
    {
        "feature": "domain_1.kf_1",
        "matchExpressions": {"key-a": ex("Exists"), "key-c": ex("Exists"), "foo": ex("DoesNotExist")},
    },
    {"feature": "domain_1.vf_1", "matchExpressions": {"key-1": ex("In", "val-1", "val-2"), "bar": ex("DoesNotExist")}},
    {"feature": "domain_1.if_1", "matchExpressions": {"attr-1": ex("Lt", "100")}},
    {
        "feature": "domain_1.if_1",
        "matchExpressions": {"attr-1": ex("Exists"), "attr-2": ex("Exists"), "attr-3": ex("Exists")},
    },
]
R1 = {
    "labels": {"label-1": "label-val-1"},
    "labelsTemplate": """
label-1=will-be-overridden
label-2=
{{range .domain_1.kf_1}}kf-{{.Name}}=present
{{end}}
{{range .domain_1.vf_1}}vf-{{.Name}}=vf-{{.Value}}
{{end}}
{{range .domain_1.if_1}}if-{{index . "attr-1"}}_{{index . "attr-2"}}=present
{{end}}""",
    "vars": {"var-1": "var-val-1"},
    "varsTemplate": """
var-1=value-will-be-overridden-by-vars
var-2=
{{range .domain_1.kf_1}}kf-{{.Name}}=true
{{end}}""",
    "matchFeatures": R1_TERMS,
}
R2_TERMS = [{"feature": "domain_1.kf_1", "matchExpressions": {"key-a": ex("Exists")}}]

"""The rules editor's buffer goes through console/bounded.py: hostile YAML is an error under the editor, at once."""

from __future__ import annotations

from console.nfd import versions as V
from console.tui.screens.rules import parse_rule

BOMB = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        + "".join(f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True)))


def test_editor_buffer_bomb_depth_and_shape_errors() -> None:
    obj, errors, _ = parse_rule(BOMB, V.CURRENT)
    assert obj is None and errors[0].startswith("document contains excessive aliasing")
    obj, errors, _ = parse_rule("x: " + "[" * 10000 + "]" * 10000, V.CURRENT)
    assert obj is None and "nesting deeper than 100 levels" in errors[0]
    obj, errors, _ = parse_rule("kind: NodeFeatureRule\nmetadata: 5\nspec: {rules: []}\n", V.CURRENT)
    assert errors == ["error: rule '-': metadata: must be a mapping (got int)"]
    obj, errors, _ = parse_rule("a: [1,\n", V.CURRENT)
    assert obj is None and errors[0].startswith("YAML error at line ")

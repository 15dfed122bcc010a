"""The rules editor's buffer goes through console/bounded.py: hostile YAML is an error under the editor, at once."""

from __future__ import annotations

import asyncio

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


async def test_validation_as_you_type_runs_in_a_worker() -> None:
    """Typing never parses on the UI thread: the debounced validation is a thread worker reporting RuleValidated."""
    from textual.widgets import Static
    from tuitools import Host

    from console.config import Settings
    from console.tui.screens.rules import RulesScreen, RuleValidated

    seen: list[RuleValidated] = []

    class Recording(RulesScreen):
        def on_rule_validated(self, msg: RuleValidated) -> None:
            seen.append(msg)
            super().on_rule_validated(msg)

    screen = Recording(settings=Settings())
    app = Host(screen, screen.settings)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen.editor.load_text("kind: NodeFeatureRule\nmetadata: {name: a}\nspec: {rules: [{name: r, labels: 5}]}\n")
        screen.editor.insert("#")  # a keystroke: TextArea.Changed starts the debounce timer
        problems = screen.query_one("#rules-problems", Static)
        deadline = asyncio.get_running_loop().time() + 20
        while "labels: must be a mapping" not in str(problems.render()):
            assert asyncio.get_running_loop().time() < deadline, str(problems.render())
            await pilot.pause(0.05)
        assert [m.text for m in seen] == [screen.editor.text]  # the worker's result is what is shown

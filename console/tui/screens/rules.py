"""NodeFeatureRules: list, edit YAML with validation as you type, dry-run on every node, apply safely."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

import yaml
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from console.bounded import InputError, load_yaml
from console.config import Settings
from console.gateways import Gateways
from console.guard import GuardRefusal
from console.kube.nfdstore import NfdStoreError, RuleStore, StoreConflict
from console.nfd import versions as V
from console.nfd.budget import Cancelled, cancellable
from console.nfd.master import MasterConfig
from console.nfd.validation import Issue, validate_rule_object
from console.nfd_preview import RULE_TEMPLATES, RuleDryRun, dry_run_rule, resolve_version
from console.tui.safety import ConfirmDanger, dangerous
from console.tui.screens.editor_base import EditorScreen
from console.tui.widgets.diff import unified_text
from console.tui.widgets.diff_dialog import ConflictDialog
from console.tui.widgets.editor import load_into
from console.tui.widgets.nfdstatus import NfdStatusLine

VALIDATE_DELAY = 0.3  # seconds after the last keystroke
NEW = "(new)"


def no_rules_text(version: V.NfdVersion) -> str:
    """What an NFD without NodeFeatureRules (before v0.10) offers instead: nfd-worker's custom source (rules in
    its config, `sources.custom`) and the local source (feature files and hooks). kubernetes-sigs/
    node-feature-discovery docs/usage/customization-guide.md, "Custom feature source" / "Local feature source"."""
    return (f"NFD {version} has no NodeFeatureRules (added in v0.10): write custom rules in nfd-worker's config "
            "(sources.custom), or feature files and hooks (:hooks)")


def rule_yaml(obj: dict[str, Any]) -> str:
    """The editable part of a NodeFeatureRule as YAML (no status or server-set metadata)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k in ("name", "labels", "annotations")}
    doc = {"apiVersion": obj.get("apiVersion", "nfd.k8s-sigs.io/v1alpha1"), "kind": "NodeFeatureRule",
           "metadata": meta, "spec": obj.get("spec") or {}}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def parse_rule(text: str, version: V.NfdVersion) -> tuple[dict[str, Any] | None, list[str], list[str]]:
    """(object, errors, warnings): YAML errors with line numbers, then the rule validator's issues."""
    try:
        obj = load_yaml(text, "editor")  # bounded: size, depth and alias expansion (console/bounded.py)
    except InputError as e:
        return None, [str(e).removeprefix("editor: ").replace("invalid YAML: ", "YAML error at ")], []
    if not isinstance(obj, dict):
        return None, ["the document must be a NodeFeatureRule mapping (apiVersion, kind, metadata, spec)"], []
    issues: list[Issue] = validate_rule_object(obj, version)
    errors = [str(i) for i in issues if i.severity == "error"]
    warnings = [str(i) for i in issues if i.severity != "error"]
    return obj, errors, warnings


class RulesLoaded(Message):
    def __init__(self, rules: list[dict[str, Any]], version: V.NfdVersion, version_text: str, error: str = "") -> None:
        super().__init__()
        self.rules, self.version, self.version_text, self.error = rules, version, version_text, error


class RuleDryRunReady(Message):
    def __init__(self, result: RuleDryRun | None, content: str, error: str = "", cancelled: bool = False) -> None:
        super().__init__()
        self.result, self.content, self.error, self.cancelled = result, content, error, cancelled


class RuleValidated(Message):
    """parse_rule's result for `text`, computed in a worker (a big buffer never stalls typing)."""

    def __init__(self, text: str, version: V.NfdVersion, result: tuple[dict[str, Any] | None, list[str], list[str]]
                 ) -> None:
        super().__init__()
        self.text, self.version, self.result = text, version, result


class RuleApplied(Message):
    def __init__(self, obj: dict[str, Any], verb: str, content: str) -> None:
        super().__init__()
        self.obj, self.verb, self.content = obj, verb, content  # content: the editor's text that was applied


class RuleApplyFailed(Message):
    def __init__(self, error: NfdStoreError | GuardRefusal, content: str) -> None:
        super().__init__()
        self.error, self.content = error, content


class TemplatePicker(ModalScreen[str | None]):
    """Pick a template for a new rule."""

    DEFAULT_CSS = """
    TemplatePicker { align: center middle; }
    TemplatePicker #tpl-box { width: 60; height: auto; max-height: 16; border: thick $primary; background: $surface; }
    TemplatePicker OptionList { height: auto; max-height: 10; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="rules-template-cancel")]

    def compose(self) -> ComposeResult:
        with Vertical(id="tpl-box"):
            yield Label("New NodeFeatureRule from a template:", markup=False)
            yield OptionList(*[Option(name, id=name) for name in RULE_TEMPLATES], id="tpl-list")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RulesScreen(EditorScreen):
    """`:rules` — NodeFeatureRules with a cluster-wide dry-run before every apply."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    PREFIX = "rules"
    LIST_TITLE = "NodeFeatureRules"
    OUTPUT_TITLE = "dry-run"
    LOADING = "Loading NodeFeatureRules…"
    HINT = "e: edit · ctrl+r: dry-run on every node · a/ctrl+s: apply · n: new from a template"
    EDITOR_KIND = "rule"
    SAVE_WORD = "apply"
    PREVIEW_WORD = "dry-run"
    EDIT_ACTIONS = frozenset({"apply", "not_saved", "dry_run", "reload"})
    BROWSE_KEYS = "a: apply · d: diff · n: new"
    BROWSE_KEYS_READ_ONLY = "d: diff · n: new"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "edit", "Edit", id="rules-edit"),
        dangerous(Binding("ctrl+s,a", "apply", "Apply", id="rules-apply"), needs="rule-apply"),
        Binding("ctrl+s", "not_saved", "Apply", show=False, id="rules-apply-read-only"),
        Binding("ctrl+r", "dry_run", "Dry-run", id="rules-dry-run"),
        Binding("d", "diff", "Diff", id="rules-diff"),
        Binding("v", "diff_mode", "Split/unified", id="rules-diff-mode", show=False),
        Binding("n", "new_rule", "New", id="rules-new"),
        Binding("ctrl+l", "reload", "Reload", id="rules-reload", show=False),
        Binding("escape", "back", "Back", id="rules-back"),
    ]

    def __init__(self, gateways: Gateways | None = None, settings: Settings | None = None) -> None:
        super().__init__(gateways, settings)
        self.store: RuleStore | None = None  # built on mount, from the cluster gateway
        self.rules: list[dict[str, Any]] = []
        self.loaded: dict[str, Any] | None = None  # the cluster object being edited; None for a new rule
        self.drafts: dict[str, str] = {}
        self.parsed: dict[str, Any] | None = None
        self.errors: list[str] = []
        self.warnings: list[str] = []
        self.dry_run: RuleDryRun | None = None
        self.dry_run_content: str | None = None
        self._apply_after_dry_run = False
        self._validate_timer: Timer | None = None
        self._dry_run_cancel: threading.Event | None = None  # set to stop the running dry-run
        self._validated: tuple[str, V.NfdVersion, Any] | None = None  # (text, version, parse_rule result)
        self._clean = ""  # the editor's text as last opened or applied: anything else is unsaved

    def hint(self) -> str:
        if not V.rules_supported(self.version):
            return no_rules_text(self.version)
        if self.read_only:
            return "e: edit · ctrl+r: dry-run on every node · read-only: nothing is applied"
        return self.HINT

    # -- unsaved edits, modes (editor_base) ---------------------------------------------------------------
    def open_name(self) -> str | None:
        if self.loaded is not None:
            return str(self.loaded["metadata"]["name"])
        name = (self.parsed or {}).get("metadata", {}).get("name") if isinstance(self.parsed, dict) else None
        return f"{name} (new)" if isinstance(name, str) and name else "the new rule"

    def saved_text(self) -> str | None:
        return self._clean

    def can_edit(self) -> str:
        return "" if V.rules_supported(self.version) else no_rules_text(self.version)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("new_rule", "apply", "dry_run", "edit") and not V.rules_supported(self.version):
            return False  # no templates, nothing to apply: the hint says what this NFD offers instead
        return super().check_action(action, parameters)

    def compose_under_editor(self) -> ComposeResult:
        yield Static("", id="rules-problems", markup=False)

    def on_mount(self) -> None:
        self.mount_common()
        self.mount(NfdStatusLine(self.gateways, id="rules-nfd"), before="#rules-status")  # NFD as deployed
        if self.gateways is None:
            self.query_one("#rules-status", Static).update("no cluster connection: NodeFeatureRules need one")
            return
        self.store = self.gateways.rule_store(self.guard)
        self.load_rules()

    # -- loading ------------------------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="rules-load", exit_on_error=False)
    def load_rules(self) -> None:
        version, text, error = self.version, f"NFD {self.version} (from settings)", ""
        assert self.store is not None and self.gateways is not None
        try:
            if not self.settings.nfd_version:
                version, text = resolve_version(None, self.gateways.nfd_version())
            rules = self.store.list()
        except NfdStoreError as e:
            rules, error = [], str(e)
        self.post_message(RulesLoaded(rules, version, text, error))

    def on_rules_loaded(self, msg: RulesLoaded) -> None:
        self.rules, self.version, self.version_text = msg.rules, msg.version, msg.version_text
        if msg.error:
            self.notify(msg.error, title="cannot list NodeFeatureRules", severity="error")
        supported = V.rules_supported(self.version)
        if not supported:
            self.notify(no_rules_text(self.version), severity="warning", timeout=12)
        olist = self.query_one("#rules-list", OptionList)
        olist.clear_options()
        for r in self.rules:
            olist.add_option(Option(r["metadata"]["name"], id=r["metadata"]["name"]))
        if not self.rules:
            olist.add_option(Option("(none yet: press n)" if supported else f"(none: NFD {self.version})", id=NEW,
                                    disabled=True))
        if self.dry_run is None and not self.query_one("#rules-diffview").display:
            self.query_one("#rules-result", Static).update(self.hint())
        self.refresh_bindings()
        self.render_mode()
        if self.loaded is not None:
            fresh = next((r for r in self.rules if r["metadata"]["name"] == self.loaded["metadata"]["name"]), None)
            if fresh is not None and rule_yaml(fresh) == rule_yaml(self.loaded):
                self.loaded = fresh
        elif self.rules and not self.editor.text:
            self.open_rule(self.rules[0])
        self._render_status()

    def _render_status(self) -> None:
        n = len(self.rules)
        editing = self.loaded["metadata"]["name"] if self.loaded else (self.parsed or {}).get("metadata", {}).get(
            "name", NEW) if isinstance(self.parsed, dict) else NEW
        # the name first: at 80 columns the line is cut at its end
        self.query_one("#rules-status", Static).update(f"editing {editing} · {n} NodeFeatureRule(s) · "
                                                       f"{self.version_text}")

    def open_rule(self, obj: dict[str, Any] | None, text: str | None = None) -> None:
        if self.editor.text.strip():
            key = self.loaded["metadata"]["name"] if self.loaded else NEW
            if self.editor.text != self._clean:
                self.drafts[key] = self.editor.text  # keep unsaved edits while switching
        self.loaded = obj
        key = obj["metadata"]["name"] if obj else NEW
        self._clean = rule_yaml(obj) if obj else ""
        content = text if text is not None else self.drafts.get(key, self._clean)
        load_into(self.editor, "rule", key, content)
        self.dry_run, self.dry_run_content = None, None
        self.validate_now()
        self._render_status()
        self.render_mode()

    @on(OptionList.OptionSelected, "#rules-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        obj = next((r for r in self.rules if r["metadata"]["name"] == event.option.id), None)
        if obj is None:
            return
        if self.loaded is not None and self.loaded["metadata"]["name"] == obj["metadata"]["name"]:
            self.editor.focus()  # already open: nothing to ask
            return

        def open_it() -> None:
            self.open_rule(obj)
            self.editor.focus()

        self.ask_discard(open_it, f"open {obj['metadata']['name']}")

    def action_reload(self) -> None:
        if self.store is not None:
            self.ask_discard(self.load_rules, "reload")

    def action_new_rule(self) -> None:
        if not V.rules_supported(self.version):
            self.notify(no_rules_text(self.version), severity="warning")
            return

        def picked(name: str | None) -> None:
            if name:
                self.open_rule(None, RULE_TEMPLATES[name])
                self.editor.focus()

        self.ask_discard(lambda: self.app.push_screen(TemplatePicker(), picked), "start a new rule")

    # -- validation as you type ------------------------------------------------------------------------------
    @on(TextArea.Changed, "#rules-editor")
    def _changed(self) -> None:
        if self._validate_timer is not None:
            self._validate_timer.stop()
        self._validate_timer = self.set_timer(VALIDATE_DELAY, lambda: self.run_validation(self.editor.text,
                                                                                           self.version))

    @work(thread=True, exclusive=True, group="rules-validate", exit_on_error=False)
    def run_validation(self, text: str, version: V.NfdVersion) -> None:
        self.post_message(RuleValidated(text, version, parse_rule(text, version)))

    def on_rule_validated(self, msg: RuleValidated) -> None:
        self._validated = (msg.text, msg.version, msg.result)
        if msg.text == self.editor.text:
            self.validate_now()

    def validate_now(self) -> None:
        text = self.editor.text
        cached = self._validated
        if cached is not None and cached[0] == text and cached[1] == self.version:
            result = cached[2]  # what the worker found for this very text
        else:
            result = parse_rule(text, self.version)
            self._validated = (text, self.version, result)
        self.parsed, self.errors, self.warnings = result
        problems = self.query_one("#rules-problems", Static)
        colors = self.app.get_css_variables()
        shown = Text()
        if not self.editor.text.strip():
            shown.append("empty: pick a rule or press n for a template" if V.rules_supported(self.version)
                         else no_rules_text(self.version))
        elif self.errors:
            for e in self.errors[:3]:
                shown.append(f"✗ {e}\n", style=colors.get("error", "red"))
            if len(self.errors) > 3:
                shown.append(f"… {len(self.errors) - 3} more error(s)\n", style=colors.get("error", "red"))
        else:
            shown.append("✓ valid", style=colors.get("success", "green"))
            for w in self.warnings[:2]:
                shown.append(f"\n! {w}", style=colors.get("warning", "yellow"))
        shown.rstrip()
        problems.update(shown)
        problems.set_class(bool(self.errors), "-invalid")

    # -- dry-run ------------------------------------------------------------------------------------------
    def _need_cluster(self) -> bool:
        if self.store is None:
            self.notify("no cluster connection: NodeFeatureRules need one", severity="warning")
        return self.store is not None

    def action_dry_run(self) -> None:
        if not self._need_cluster():
            return
        self.validate_now()
        if self.parsed is None or self.errors:
            self.notify("fix the errors shown under the editor first", severity="warning")
            self._apply_after_dry_run = False
            return
        self._show_result(Text("dry-run: reading NodeFeatures and nodes, evaluating every rule on every node… "
                               "(esc cancels)"))
        self.query_one("#rules-output").loading = True
        self.cancel_dry_run()
        self._dry_run_cancel = threading.Event()
        self.run_dry_run(self.parsed, self.editor.text, self._dry_run_cancel)

    def cancel_dry_run(self) -> bool:
        """Stop the running dry-run (its evaluation checks the flag); True when one was running."""
        ev, self._dry_run_cancel = self._dry_run_cancel, None
        if ev is None or ev.is_set():
            return False
        ev.set()
        return True

    @work(thread=True, exclusive=True, group="rules-dry-run", exit_on_error=False)
    def run_dry_run(self, obj: dict[str, Any], content: str, cancel: threading.Event) -> None:
        assert self.store is not None and self.gateways is not None
        try:
            gw = self.gateways
            rules, nfs, nodes = self.store.list(), gw.node_features(), gw.node_objects()
            config = _deployed_master(gw, self.version)
        except NfdStoreError as e:
            self.post_message(RuleDryRunReady(None, content, str(e)))
            return
        try:
            with cancellable(cancel):  # templates and the per-rule loop stop soon after the flag is set
                result = dry_run_rule(obj, rules, nfs, nodes, config)
        except Cancelled:
            self.post_message(RuleDryRunReady(None, content, "dry-run cancelled: nothing was evaluated to the end",
                                              cancelled=True))
            return
        self.post_message(RuleDryRunReady(result, content))

    def on_rule_dry_run_ready(self, msg: RuleDryRunReady) -> None:
        self.query_one("#rules-output").loading = False
        if msg.cancelled:
            self._apply_after_dry_run = False
            self._show_result(Text(msg.error))
            return
        self._dry_run_cancel = None
        if msg.result is None:
            self._apply_after_dry_run = False
            self.notify(msg.error, title="dry-run failed", severity="error")
            self._show_result(Text(f"dry-run failed: {msg.error}"))
            return
        self.dry_run, self.dry_run_content = msg.result, msg.content
        self._show_result(render_dry_run(msg.result, self.app.get_css_variables(),
                                         rule_output_keys(self.parsed)))
        if self._apply_after_dry_run:
            self._apply_after_dry_run = False
            self.action_apply()

    # -- diff ---------------------------------------------------------------------------------------------
    def _deployed(self) -> tuple[str, str] | None:
        return (rule_yaml(self.loaded), "deployed") if self.loaded else ("", "(new rule)")

    # -- apply --------------------------------------------------------------------------------------------
    def action_apply(self) -> None:
        if self.read_only:
            self.notify("read-only mode: applying is disabled", severity="warning")
            return
        if not self._need_cluster():
            return
        self.validate_now()
        if self.parsed is None or self.errors:
            self.notify("fix the errors shown under the editor first", severity="warning")
            return
        content = self.editor.text
        if self.dry_run is None or self.dry_run_content != content:
            self._apply_after_dry_run = True  # always preview before applying
            self.action_dry_run()
            return
        if self.dry_run.error:
            self.notify(self.dry_run.error, title="rule cannot be evaluated", severity="error")
            return
        obj, name = self.parsed, self.dry_run.rule
        replacing = self.loaded is not None and self.loaded["metadata"]["name"] == name
        rv = self.loaded["metadata"].get("resourceVersion", "") if replacing and self.loaded else ""
        affected = len(self.dry_run.affected)
        before = rule_yaml(self.loaded) if replacing and self.loaded else ""
        preview = dry_run_summary(self.dry_run) + "\n\n" + unified_text(before, content, "deployed", "edited")
        target = f"NodeFeatureRule {name} ({affected} node{'s' if affected != 1 else ''} affected)"

        def confirmed(ok: bool | None) -> None:
            if ok:
                self.apply_rule(obj, content, rv, before)

        self.app.push_screen(ConfirmDanger("Replace" if replacing else "Create", target, preview), confirmed)

    @work(thread=True, exclusive=True, group="rules-apply", exit_on_error=False)
    def apply_rule(self, obj: dict[str, Any], content: str, resource_version: str, before: str) -> None:
        verb = "replace" if resource_version else "create"
        assert self.store is not None
        try:
            # the server validates first (dry-run persists nothing), then the real write with the same precondition;
            # the store's guard refuses it in read-only and audits it (intent before, outcome after)
            if resource_version:
                self.store.replace(obj, resource_version=resource_version, dry_run=True)
                out = self.store.replace(obj, resource_version=resource_version, before=before or None)
            else:
                self.store.create(obj, dry_run=True)
                out = self.store.create(obj)
        except (NfdStoreError, GuardRefusal) as e:
            self.post_message(RuleApplyFailed(e, content))
            return
        self.post_message(RuleApplied(out, verb, content))

    def on_rule_applied(self, msg: RuleApplied) -> None:
        name = msg.obj["metadata"]["name"]
        self.drafts.pop(name, None)
        self.drafts.pop(NEW, None)
        self.loaded = msg.obj
        if self.editor.text == msg.content:
            self._clean = msg.content  # applied as typed: nothing unsaved
        self.render_mode()
        self.notify(f"{msg.verb}d NodeFeatureRule {name}; nfd-master relabels the nodes")
        self.load_rules()

    def on_rule_apply_failed(self, msg: RuleApplyFailed) -> None:
        err = msg.error
        if isinstance(err, GuardRefusal):  # refused before the write (or, `done`, written but not audited)
            self.notify_refusal(err, "applied; audit record missing", "apply refused")
            if err.done:
                self.load_rules()
            return
        if not isinstance(err, StoreConflict) or not isinstance(err.current, dict):
            self.notify(str(err), title="apply failed", severity="error")
            return
        current = err.current

        def chosen(choice: str | None) -> None:
            if choice == "reload":
                self.drafts.pop(current["metadata"]["name"], None)
                self.loaded = None
                self.editor.load_text("")
                self.open_rule(current)
            elif choice == "overwrite" and self.parsed is not None:
                self.apply_rule(self.parsed, msg.content, err.current_version, rule_yaml(current))

        self.app.push_screen(ConflictDialog(str(err), rule_yaml(current), msg.content), chosen)

    def action_back(self) -> None:
        # esc first stops a running dry-run (the screen stays); pressed again, it goes back
        if self.cancel_dry_run():
            self.query_one("#rules-output").loading = False
            self._show_result(Text("dry-run cancelling…"))
            return
        super().action_back()

    def on_unmount(self) -> None:
        self.cancel_dry_run()  # leaving (or quitting with ctrl+q) stops the evaluation thread too

    def _worker_failed(self) -> None:
        self._apply_after_dry_run = False


def dry_run_summary(r: RuleDryRun) -> str:
    """Plain-text per-node changes (for the confirmation)."""
    lines = [f"{len(r.affected)} of {len(r.nodes)} node(s) change under NFD {r.version}"]
    for n in r.affected:
        lines.append(f"{n.node}:")
        for section, change in n.sections():
            for tag, row in change.lines():
                lines.append(f"  {tag} {section[:-1] if section.endswith('s') else section} {row}")
    return "\n".join(lines)


def render_dry_run(r: RuleDryRun, colors: dict[str, str], keys: set[str] | None = None) -> Text:
    keys = keys or set()
    add = colors.get("diff-add") or colors.get("success", "green")
    remove = colors.get("diff-remove") or colors.get("error", "red")
    change = colors.get("diff-change") or colors.get("warning", "yellow")
    warn = colors.get("warning", "yellow")
    t = Text()
    if r.error:
        t.append(f"✗ {r.error}\n", style=f"bold {remove}")
        return t
    t.append(f"{r.rule}: {len(r.affected)} of {len(r.nodes)} node(s) change (NFD {r.version})\n", style="bold")
    for w in r.warnings[:5]:
        t.append(f"! {w}\n", style=warn)
    style = {"+": add, "-": remove, "~": change}
    quiet = [n.node for n in r.nodes if not n.changed and not n.errors and not n.matched]
    # nodes that change (or match, or fail) first; the rest on one line
    for n in [n for n in r.nodes if n.node not in quiet]:
        status = "changes" if n.changed else "no change"
        matched = f"matched: {', '.join(n.matched)}" if n.matched else "no rule of it matched"
        t.append(f"{n.node}", style="bold")
        t.append(f" — {status}; {matched}\n")
        for e in n.errors:
            t.append(f"  ✗ {e} (nfd-master skips this rule)\n", style=remove)
        for section, ch in n.sections():
            for tag, row in ch.lines():
                t.append(f"  {tag} {section}: {row}\n", style=style[tag])
        for d in n.dropped:
            if d.key in keys:
                t.append(f"  ! dropped {d.key}={d.value}: {d.reason}\n", style=warn)
    if quiet:
        t.append(f"no match, no change: {', '.join(quiet)}\n")
    return t


def rule_output_keys(obj: dict[str, Any] | None) -> set[str]:
    """Label/annotation/ER/taint keys a rule object writes statically (to show only its dropped items)."""
    keys: set[str] = set()
    rules = ((obj or {}).get("spec") or {}).get("rules") or []
    for r in rules if isinstance(rules, list) else []:
        if not isinstance(r, dict):
            continue
        for fld in ("labels", "annotations", "extendedResources"):
            for k in (r.get(fld) or {}) if isinstance(r.get(fld), dict) else {}:
                keys.update({str(k), f"feature.node.kubernetes.io/{k}"})
        for taint in r.get("taints") or [] if isinstance(r.get("taints"), list) else []:
            if isinstance(taint, dict):
                keys.add(str(taint.get("key")))
    return keys


def _deployed_master(gateways: Any, version: V.NfdVersion) -> MasterConfig:
    """The cluster's nfd-master flags and config file (console/kube/nfddiscovery.py, cached by the gateways) at
    the version this screen models; NFD's defaults when no deployment is found. NfdStoreError."""
    from dataclasses import replace

    from console.kube.nfddiscovery import NfdDiscoveryError

    try:
        dep = gateways.nfd_deployment()
    except NfdDiscoveryError as e:
        raise NfdStoreError(str(e)) from e
    if dep is None:
        return MasterConfig(version=version)
    return replace(dep.master_config(), version=version)

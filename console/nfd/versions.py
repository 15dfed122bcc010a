"""NFD versions the console models, and which behaviour each one has.

Every predicate here cites the release that introduced the behaviour (see
shared/reference/nfd.md); the rest of `console.nfd` asks these functions instead
of comparing version numbers itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?$")


@total_ordering
@dataclass(frozen=True)
class NfdVersion:
    """A released NFD version (major.minor.patch); pre-release suffixes are ignored."""

    major: int
    minor: int
    patch: int = 0

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, NfdVersion):
            return NotImplemented
        return (self.major, self.minor, self.patch) < (other.major, other.minor, other.patch)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}.{self.patch}"

    def at_least(self, minor: int, patch: int = 0) -> bool:
        return (self.major, self.minor, self.patch) >= (0, minor, patch)


OLDEST = NfdVersion(0, 4, 0)
NEWEST = NfdVersion(0, 20, 0)  # v0.20.0-devel (HEAD) behaves like v0.19 for everything modelled here
#: "current" NFD: the newest release (v0.19.0, 2026-07).
CURRENT = NfdVersion(0, 19, 0)


class UnsupportedVersion(ValueError):
    """The version string is malformed or outside the modelled range."""


def parse_version(text: str | NfdVersion | None) -> NfdVersion:
    """Parse "v0.8.0", "0.8", "v0.20.0-devel"; None means CURRENT."""
    if text is None:
        return CURRENT
    if isinstance(text, NfdVersion):
        return text
    m = _VERSION_RE.match(text.strip())
    if not m:
        raise UnsupportedVersion(f"not an NFD version: {text!r} (expected e.g. v0.18.0)")
    v = NfdVersion(int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
    if v < OLDEST or v > NEWEST:
        raise UnsupportedVersion(f"NFD {v} is not modelled (supported: {OLDEST} .. v0.20.0-devel)")
    return v


# --- local source (feature files and hooks) -------------------------------------------------------

def local_file_prefix(v: NfdVersion) -> bool:
    """v0.4-v0.9: `<file>-<key>` naming and the leading-`/` override (dropped in v0.10, b89429a4d)."""
    return not v.at_least(10)


def feature_file_directives(v: NfdVersion) -> bool:
    """v0.14: trimming, `#` comments, `# +expiry-time=`, 64 KiB limit."""
    return v.at_least(14)


def feature_file_no_label_directives(v: NfdVersion) -> bool:
    """v0.15: `# +no-label`, `# +no-feature` and the `local.feature` feature."""
    return v.at_least(15)


def dotfiles_ignored(v: NfdVersion) -> bool:
    return v.at_least(15)


def hooks_status(v: NfdVersion) -> str:
    """'enabled' (on, always or by default), 'disabled-by-default' (v0.14-v0.16) or 'removed' (v0.17+)."""
    if v.at_least(17):
        return "removed"
    if v.at_least(14):
        return "disabled-by-default"
    return "enabled"


def hooks_labels_lost(v: NfdVersion) -> bool:
    """v0.15.0-v0.15.1 merged hook labels into the wrong map, so hooks produced no labels (fixed 12ee13dab)."""
    return v.minor == 15 and v.patch < 2


# --- master ---------------------------------------------------------------------------------------

def rules_supported(v: NfdVersion) -> bool:
    """NodeFeatureRule (v0.10)."""
    return v.at_least(10)


def nodefeature_api(v: NfdVersion) -> bool:
    return v.at_least(12)


def label_dynamic_values(v: NfdVersion) -> bool:
    """`@domain.feature.element` label values (v0.14)."""
    return v.at_least(14)


def rule_field_since(field: str) -> int:
    """Minor version in which a NodeFeatureRule rule field appeared."""
    return {"taints": 12, "extendedResources": 13, "annotations": 15}.get(field, 10)


def match_name_supported(v: NfdVersion) -> bool:
    return v.at_least(15)


def inclusive_ops_supported(v: NfdVersion) -> bool:
    """Ge, Le, GeLe and `type: version` (v0.18)."""
    return v.at_least(18)


def multi_term_union(v: NfdVersion) -> bool:
    """Several terms on the same feature are united in template data (v0.15, 63c22551d)."""
    return v.at_least(15)


def feature_names_lowercased(v: NfdVersion) -> bool:
    return v.at_least(12)


def sprig_functions(v: NfdVersion) -> bool:
    return v.at_least(18)


def template_size_capped(v: NfdVersion) -> bool:
    return v.at_least(19)


def label_namespace_era(v: NfdVersion) -> str:
    """Which namespace policy nfd-master applies to labels (nfd.md section 2)."""
    if v.at_least(15):
        return "validate"  # every ns but kubernetes.io; validate.Label
    if v.at_least(13):
        return "deny-list"
    if v.at_least(10):
        return "feature-profile"
    if v.at_least(9):
        return "feature-subns"
    return "feature-only"


def auto_prefix_mode(v: NfdVersion, disable_auto_prefix: bool) -> str:
    """'prefix', 'drop-unprefixed' (v0.15-v0.17 with prefixing off) or 'keep-unprefixed' (v0.18+)."""
    if not disable_auto_prefix or not v.at_least(15):
        return "prefix"
    return "keep-unprefixed" if v.at_least(18) else "drop-unprefixed"


def resource_labels_supported(v: NfdVersion) -> bool:
    """nfd-master -resource-labels / config resourceLabels: v0.6.0 to v0.16.x (removed in v0.17.0)."""
    return v.at_least(6) and not v.at_least(17)


def resource_labels_validated(v: NfdVersion) -> bool:
    """v0.13+: labels turned into extended resources also pass filterExtendedResources (names, quantities)."""
    return v.at_least(13)


def tracks_extended_resources(v: NfdVersion) -> bool:
    return v.at_least(6)

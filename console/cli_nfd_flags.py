"""The nfd-master / nfd-worker options of `nfd local` and `nfd dryrun`, under nfd-master's own names.

    --extra-label-ns=a.com,b.com  --deny-label-ns=LIST  --label-whitelist=RE  --resource-labels=LIST
    --enable-taints[=true|false]  --disable-auto-prefix  --master-config FILE  --worker-config FILE (local)
    --from-cluster

Lists are comma-separated and a repeated flag replaces the earlier one, as nfd-master's flags do
(pkg/utils/flags.go StringSetVal.Set); booleans take Go's flag syntax (`-enable-taints`,
`-enable-taints=false`, strconv.ParseBool). Precedence, lowest first: NFD's defaults < the cluster's
deployment (`--from-cluster`: master flags + nfd-master.conf, worker config and version, found by
console.kube.nfddiscovery) < `--master-config` / `--worker-config` files < the flags given here.
A bad file or flag is a usage error (exit 2, JSON with -o json); no NFD in the cluster exits 1.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

EXIT_FAILED, EXIT_USAGE, EXIT_BACKEND = 1, 2, 6

_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


class FlagStop(Exception):
    """The preview cannot start: exit code, JSON error kind, one-line message."""

    def __init__(self, code: int, kind: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code, self.kind, self.extra = code, kind, extra

    def report(self, command: str, output: str) -> int:
        from console.exit_codes import print_error

        return print_error(f"nfd {command}", output == "json", self.kind, str(self), self.code, **self.extra)


def go_bool(value: str) -> bool:
    """strconv.ParseBool, as Go's flag package parses `-flag=VALUE`."""
    if value in _GO_TRUE:
        return True
    if value in _GO_FALSE:
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r} (parse error)")


def comma_set(value: str) -> frozenset[str]:
    """StringSetVal.Set: the comma-separated entries (empty entries kept, as nfd-master keeps them)."""
    return frozenset(value.split(","))


def add_master_flags(p: argparse.ArgumentParser, regexp_type: Any) -> None:
    p.add_argument("--extra-label-ns", type=comma_set, default=None, metavar="NS[,NS…]",
                   help="nfd-master -extra-label-ns: namespaces allowed besides NFD's own")
    p.add_argument("--deny-label-ns", type=comma_set, default=None, metavar="NS[,NS…]",
                   help="nfd-master -deny-label-ns (v0.13+; '*.example.com' denies sub-namespaces)")
    p.add_argument("--label-whitelist", default=None, type=regexp_type, metavar="REGEXP",
                   help="nfd-master -label-whitelist regexp (Go/RE2 syntax), matched against the name")
    p.add_argument("--resource-labels", type=comma_set, default=None, metavar="LABEL[,LABEL…]",
                   help="nfd-master -resource-labels (v0.6-v0.16): labels published as extended resources")
    p.add_argument("--enable-taints", nargs="?", const=True, default=None, type=go_bool, metavar="BOOL",
                   help="nfd-master -enable-taints (v0.12+): let NodeFeatureRules taint nodes")
    p.add_argument("--disable-auto-prefix", action="store_const", const=True, default=None,
                   help="nfd-master -feature-gates DisableAutoPrefix=true (v0.16+; autoDefaultNs: false in v0.15)")
    p.add_argument("--master-config", metavar="FILE", help="nfd-master.conf to model (v0.13+)")
    p.add_argument("--from-cluster", action="store_true",
                   help="model the cluster's NFD: its version, master flags and config, worker config")


def add_worker_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--worker-config", metavar="FILE",
                   help="nfd-worker.conf to model (core.labelWhiteList, core.labelSources, sources.local.hooksEnabled)")


@dataclass
class PreviewSetup:
    config: Any  # MasterConfig
    worker: Any  # WorkerConfig
    source: str  # where the configuration came from, for the output


def _load_yaml(path: str, what: str) -> Any:
    from console.bounded import load_yaml_file_all

    try:
        docs = [d for d in load_yaml_file_all(path) if d is not None]
    except (OSError, ValueError) as exc:
        raise FlagStop(EXIT_USAGE, "bad-config", f"{what} {path}: {exc}") from None
    if len(docs) > 1:
        raise FlagStop(EXIT_USAGE, "bad-config", f"{what} {path}: one YAML document expected, found {len(docs)}")
    return docs[0] if docs else None


def _connect(args: argparse.Namespace) -> Any:
    """The cluster's API client, as the cluster-changing commands build it (the same kubeconfig and settings)."""
    from console import cli_nfd_deploy

    try:
        return cli_nfd_deploy._connect(cli_nfd_deploy._settings(args))
    except cli_nfd_deploy.Stop as e:
        raise FlagStop(e.code, e.kind, str(e), **e.extra) from None


def _from_cluster(args: argparse.Namespace) -> Any:
    api = _connect(args)
    from console.kube.nfddiscovery import NfdDiscoveryError, discover_nfd  # the kubernetes client: only here

    try:
        dep = discover_nfd(api)
    except NfdDiscoveryError as exc:  # the cluster could not be read (a 403 names what is missing): exit 6
        from console.cli_nfd_status import discovery_failed

        kind, message, extra = discovery_failed(exc, getattr(args, "kubeconfig", None), getattr(args, "context", None))
        raise FlagStop(EXIT_BACKEND, kind, message, **extra) from None
    if dep is None:
        raise FlagStop(EXIT_FAILED, "no-nfd", "no node-feature-discovery found in this cluster (no nfd-master or "
                       "nfd-worker workload in any namespace); previews still work without --from-cluster, with "
                       "the NFD version and master flags given here")
    return dep


Objs = dict[str, dict[str, Any]]


def cluster_node_features(args: argparse.Namespace) -> tuple[Objs, dict[str, list[dict[str, Any]]]]:
    """The cluster's Nodes by name and its NodeFeatures by the node they target (NFD's node-name label), read
    in pages; FlagStop (exit 6) when they cannot be read, naming what to do."""
    api = _connect(args)
    from console.kube.nfddiscovery import NfdDiscoveryError, node_feature_crd_served
    from console.kube.nfdstore import NfdStoreError, StoreForbidden, list_node_features, list_nodes

    try:
        served = node_feature_crd_served(api)
    except NfdDiscoveryError as exc:
        from console.cli_nfd_status import discovery_failed

        kind, message, extra = discovery_failed(exc, getattr(args, "kubeconfig", None), getattr(args, "context", None))
        raise FlagStop(EXIT_BACKEND, kind, message, **extra) from None
    if not served:
        raise FlagStop(EXIT_USAGE, "no-nodefeature-api", "this cluster serves no NodeFeature API "
                       "(nodefeatures.nfd.k8s-sigs.io: NFD older than v0.12, or not installed): give the node's "
                       "features with --nodefeature FILE")
    try:
        return list_nodes(api), list_node_features(api)
    except StoreForbidden as exc:
        raise FlagStop(EXIT_BACKEND, "kube-forbidden", str(exc), missing=exc.missing) from None
    except NfdStoreError as exc:
        raise FlagStop(EXIT_BACKEND, "kube-unreachable", f"reading the cluster's nodes and NodeFeatures: {exc}"
                       ) from None


def resolve(args: argparse.Namespace, *, worker_side: bool, deployment: Any = None) -> PreviewSetup:
    """MasterConfig + WorkerConfig for this preview, from defaults, the cluster, files and flags.

    With `--from-cluster` the cluster's NfdDeployment (console/nfd/deployment.py) is `deployment`, or
    discovered here when None.
    """
    from console.nfd import versions as V
    from console.nfd.master import MasterConfig
    from console.nfd.masterconf import MasterConfigError, master_config_from_file, with_flags
    from console.nfd.workerconfig import WorkerConfig, WorkerConfigError, worker_config_from_file

    version = V.parse_version(args.nfd_version) if args.nfd_version else None  # exit 1, as before
    config, worker, source = MasterConfig(version=version or V.CURRENT), WorkerConfig(), "defaults"
    if args.from_cluster:
        dep = deployment if deployment is not None else _from_cluster(args)
        config, worker = dep.master_config(), dep.worker_config()
        if version is None and dep.version is None:
            raise FlagStop(EXIT_USAGE, "nfd-version-unknown", f"the NFD version in namespace {dep.namespace} is "
                           f"unknown ({dep.version_source or 'no image tag or annotation'}); give --nfd-version")
        config = with_flags(config, {"version": version or dep.version})
        source = f"cluster: NFD {config.version} in {dep.namespace}"
    if args.master_config:
        try:
            config = master_config_from_file(_load_yaml(args.master_config, "--master-config"), config)
        except MasterConfigError as exc:
            raise FlagStop(EXIT_USAGE, "bad-config", f"--master-config {args.master_config}: {exc}") from None
        source += f" + {args.master_config}"
    if worker_side and getattr(args, "worker_config", None):
        try:
            worker = worker_config_from_file(_load_yaml(args.worker_config, "--worker-config"), config.version,
                                             worker)
        except WorkerConfigError as exc:
            raise FlagStop(EXIT_USAGE, "bad-config", f"--worker-config {args.worker_config}: {exc}") from None
        source += f" + {args.worker_config}"
    config = with_flags(config, {
        "extra_label_ns": args.extra_label_ns, "deny_label_ns": args.deny_label_ns,
        "label_whitelist": args.label_whitelist, "resource_labels": args.resource_labels,
        "enable_taints": args.enable_taints, "disable_auto_prefix": args.disable_auto_prefix})
    try:
        config.policy()  # a whitelist from the cluster or a file is compiled here
    except ValueError as exc:
        raise FlagStop(EXIT_USAGE, "bad-config", str(exc)) from None
    return PreviewSetup(config, worker, source)


def describe(config: Any) -> dict[str, Any]:
    """The master options a preview used, under nfd-master's flag names (for -o json and the text header)."""
    return {
        "extra-label-ns": sorted(config.extra_label_ns), "deny-label-ns": sorted(config.deny_label_ns),
        "label-whitelist": config.label_whitelist or "", "resource-labels": sorted(config.resource_labels),
        "enable-taints": config.enable_taints, "disable-auto-prefix": config.disable_auto_prefix,
    }

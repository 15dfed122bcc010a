"""Pure NFD (node-feature-discovery) semantics, exact per NFD version; no network, no UI imports.

Public API (import the submodules):
- `master.compute_node_outcome(node_features, rules, version, extra_label_ns, config=, node=)`
- `master.dry_run_many(rule_objects, node_features_by_node, config)`
- `rules.compile_rule_objects(objs, version)`, `rules.compile_rule(raw, version)`
- `validation.validate_rule_object(obj, version)`
- `featurefile.parse_feature_lines(data, file_name, version)`, `featurefile.read_features_dir(dir, version)`
- `hooks.run_hooks(dir, version, enabled=, timeout=, max_output=, env=)` (each hook under `hookwrap.py`,
  which kills every process it leaves behind), `hooks.check_limits(timeout, max_output)`
- `regex.compile_regexp(pattern)` -> `Regexp` (Go regexp semantics on RE2: `match_string`, `find_string`,
  `find_all_string`, `replace_all_string`, `split`), `regex.RegexpError` (Go's message, `.describe()` + hint)
- `local.local_source(features_dir, hooks_dir, version, extra_label_ns, config=, worker=)`
- `masterconf.master_config_from_file(data, base)` (nfd-master.conf), `workerconfig.WorkerConfig`,
  `workerconfig.worker_config_from_file(data, version)` (nfd-worker.conf)
- `versions.parse_version(text)`, `versions.CURRENT`
"""

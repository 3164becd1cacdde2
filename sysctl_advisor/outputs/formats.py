"""The output formats each command writes: the renderers' registry.

The renderers dispatch on these names and refuse others, and the command line offers exactly
these (cli_options builds its closed choices from them); nothing else lists them.
"""

from __future__ import annotations

# where each Kubernetes platform takes a node's keys (node_platforms; rules/catalog/node-platforms)
NODE = ("daemonset", "talos", "bottlerocket", "aks", "gke", "eks")
RECOMMEND = ("conf", "json", "markdown", "tuned", "ansible", "kubernetes", *NODE)  # plan_render
DIFF = ("text", "markdown", "json")  # diff_report
CHECK = ("text", "json", "github", "sarif", "markdown")  # check_report
FACTS = ("yaml", "json")  # facts_file
# where a Kubernetes workload's pods run (engine/kubernetes_placement): auto from the node's
# listeners, in pods of their own network namespace, or hostNetwork in the node's
WORKLOAD_NETWORK = ("auto", "pod", "host")
# how much a conf or tuned file says of each value (plan_render); the first is the default
DETAIL = ("normal", "brief", "none")

"""The facts' `kubernetes` section: a port range the API server would take, in ASCII digits."""

from __future__ import annotations

import pytest

from sysctl_advisor.model.errors import InputError
from sysctl_advisor.model.host_facts import facts_from_data


@pytest.mark.parametrize(
    "text",
    ["0-0", "65535-1", "30000-32767-1", "-1-5", " 1-5", "1-99999", "３００００-３２７６７", "١-٢"],
)
def test_a_port_range_the_api_server_would_refuse_is_one_error(text: str) -> None:
    with pytest.raises(InputError, match="node_port_range"):
        facts_from_data({"memory": {"total": 2**33}, "kubernetes": {"node_port_range": text}})


def test_a_port_range_and_the_node_flag_are_kept() -> None:
    facts = facts_from_data(
        {"memory": {"total": 2**33}, "kubernetes": {"node": True, "node_port_range": "40000-40999"}}
    )
    assert facts.kubernetes is not None and facts.kubernetes.node_port_range == "40000-40999"


def test_the_kubelet_and_cni_files_found_are_kept() -> None:
    facts = facts_from_data(
        {
            "memory": {"total": 2**33},
            "kubernetes_files": {
                "found": ["/var/lib/kubelet/config.yaml", "/etc/cni/net.d/10-calico.conflist"],
                "kubelet_port": 10251,
            },
        }
    )
    assert facts.kubernetes_files is not None and facts.kubernetes_files.kubelet_port == 10251
    assert facts_from_data({"memory": {"total": 2**33}}).kubernetes_files is None  # not looked


@pytest.mark.parametrize(
    "files",
    [
        {"found": ["var/lib/kubelet/config.yaml"]},  # not absolute
        {"found": ["/etc/cni/net.d/../../shadow"]},
        {"found": ["/etc/cni/net.d/x\nport: 1"]},
        {"found": [f"/etc/cni/net.d/{i}.conf" for i in range(65)]},
        {"found": [], "kubelet_port": 0},
        {"found": [], "kubelet_port": 65536},
        {"found": [], "listeners": []},
    ],
)
def test_kubelet_and_cni_files_that_no_collector_writes_are_one_error(files: object) -> None:
    with pytest.raises(InputError, match="kubernetes_files"):
        facts_from_data({"memory": {"total": 2**33}, "kubernetes_files": files})

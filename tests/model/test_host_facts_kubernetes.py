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

"""`recommend --undo`, `diff --undo` and `fleet --undo` through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from sysctl_advisor.outputs.plan_render import rendered_settings
from tests.conftest import EXAMPLES, TESTS, invoke

HAPROXY = str(EXAMPLES / "haproxy-frontend-rhel7.yaml")
TREE = TESTS / "fixtures" / "ansible" / "tree"
MAP = TESTS / "fixtures" / "ansible" / "profile-map.yaml"
INVENTORY = TESTS / "fixtures" / "ansible" / "inventory.json"
WRITTEN = ["door-07", "dtn-01", "web-01"]  # the fixture fleet's hosts the advisor can advise


def run(*args: str) -> tuple[int, str, str]:
    result = invoke(*args)
    return result.exit_code, result.stdout, result.stderr


def test_recommend_undo_conf_restores_the_values_in_force() -> None:
    code, out, err = run("recommend", "--facts", HAPROXY, "-p", "frontend-proxy", "--undo")
    assert code == 0, err
    settings = rendered_settings("conf", out)
    assert settings is not None
    assert settings["net.core.somaxconn"] == "128"
    assert settings["net.ipv4.ip_local_port_range"] == "32768 60999"
    assert settings["net.ipv4.tcp_slow_start_after_idle"] == "1"  # not in the facts: default
    assert out.startswith("# sysctl.conf undoing the frontend-proxy plan for lb-rhel7-02")
    rebuild = next(line for line in out.splitlines() if line.startswith("# rebuild:"))
    assert rebuild.endswith("--profile frontend-proxy --undo")


def test_recommend_undo_json_is_a_plan_of_the_restored_values() -> None:
    code, out, err = run(
        "recommend", "--facts", HAPROXY, "-p", "frontend-proxy", "--undo", "-f", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    assert document["schema"] == "sysctl-advisor/plan/v1"
    assert document["host"]["hostname"] == "lb-rhel7-02"
    values = {s["key"]: s["value"] for s in document["settings"]}
    assert values["net.ipv4.tcp_max_syn_backlog"] == "2048"
    assert document["notes"][0].startswith("Undo of the frontend-proxy plan")


def test_recommend_undo_refuses_the_kubernetes_format_in_one_line() -> None:
    code, out, err = run(
        "recommend", "--facts", HAPROXY, "-p", "frontend-proxy", "--undo", "-f", "kubernetes"
    )
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "--undo" in err and "-f conf" in err


def test_diff_undo_shows_each_key_from_the_plan_value_to_the_restored_one() -> None:
    code, out, err = run("diff", "--facts", HAPROXY, "-p", "frontend-proxy", "--undo")
    assert code == 1, err  # the undo changes keys
    row = next(line for line in out.splitlines() if "net.core.somaxconn" in line)
    assert row.split()[:4] == ["change", "net.core.somaxconn", "16384", "128"]
    assert "PLAN" in out and "RESTORED" in out
    code, out, _ = run("diff", "--facts", HAPROXY, "-p", "frontend-proxy", "--undo", "-f", "json")
    entries = {e["key"]: e for e in json.loads(out)["entries"]}
    assert (
        entries["net.core.somaxconn"]["current"],
        entries["net.core.somaxconn"]["recommended"],
    ) == (
        "16384",
        "128",
    )


def test_fleet_undo_writes_an_undo_file_beside_each_plan(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["fleet", "--ansible-facts", str(TREE), "-p", "base", "--out", str(out)]
    args += ["--profile-map", str(MAP), "--inventory", str(INVENTORY)]  # dtn-01: gridftp
    code, _, err = run(*args, "--undo")
    assert code == 1, err  # three hosts of the fixture cannot be advised
    assert sorted(p.name for p in (out / "host_undo").iterdir()) == [f"{h}.conf" for h in WRITTEN]
    listed = (out / ".sysctl-advisor-fleet").read_text().splitlines()
    assert all(f"host_undo/{h}.conf" in listed for h in WRITTEN)
    undo = (out / "host_undo" / "dtn-01.conf").read_text()
    plan = rendered_settings("conf", (out / "host_files" / "dtn-01.conf").read_text())
    restored = rendered_settings("conf", undo)
    assert plan and restored and set(restored) <= set(plan)
    assert "--undo" in next(line for line in undo.splitlines() if line.startswith("# rebuild:"))
    # without --undo, no undo files
    code, _, err = run(*args)
    assert code == 1, err
    assert not (out / "host_undo").exists()


def test_an_undo_from_facts_that_report_a_starved_host_names_what_it_will_not_restore(
    tmp_path: Path,
) -> None:
    """A facts file (hostile, or from a broken host) reporting fs.file-max = 1 and
    fs.nr_open = 64 in force: root applying the undo would starve the host. No format writes
    them back, and each says which keys it leaves and why."""
    data = yaml.safe_load((EXAMPLES / "c1m-server.yaml").read_text())
    data["sysctl"] |= {"fs.file-max": "1", "fs.nr_open": "64"}
    facts = tmp_path / "starved.yaml"
    facts.write_text(yaml.safe_dump(data))
    base = ["recommend", "--facts", str(facts), "-p", "c1m-server", "--undo"]
    for fmt in ("conf", "tuned", "ansible"):
        for detail in ("normal", "none"):
            code, out, err = run(*base, "-f", fmt, "--detail", detail)
            assert code == 0, err
            settings = rendered_settings(fmt, out)
            assert settings and not {"fs.file-max", "fs.nr_open"} & set(settings), (fmt, detail)
            said = " ".join(" ".join(line.lstrip("# ") for line in out.splitlines()).split())
            assert "Not restored: fs.file-max = 1, in force" in said, (fmt, detail)
            assert "Not restored: fs.nr_open = 64, in force" in said, (fmt, detail)
    code, out, err = run(*base, "-f", "json")
    assert code == 0, err
    document = json.loads(out)
    assert not {"fs.file-max", "fs.nr_open"} & {s["key"] for s in document["settings"]}
    assert {("undo.below-floor", "fs.file-max"), ("undo.below-floor", "fs.nr_open")} <= {
        (f["id"], f["key"]) for f in document["findings"]
    }
    code, out, err = run(*base, "-f", "talos")
    assert code == 0, err
    assert "Not restored: fs.file-max = 1" in " ".join(out.split())
    code, out, err = run("diff", "--facts", str(facts), "-p", "c1m-server", "--undo", "-f", "json")
    report = json.loads(out)
    assert "fs.file-max" not in {e["key"] for e in report["entries"]}
    assert ("undo.below-floor", "fs.file-max") in {(f["id"], f["key"]) for f in report["findings"]}
    # and check of such an undo file, as one that restored them would read, says so
    undo = tmp_path / "undo.conf"
    undo.write_text("fs.file-max = 1\nfs.nr_open = 64\n")
    code, out, err = run("check", str(undo), "-f", "json")
    assert code == 1, err
    found = {f["key"] for f in json.loads(out)["findings"] if f["id"] == "check.below-floor"}
    assert found == {"fs.file-max", "fs.nr_open"}


def test_an_undo_never_writes_a_value_the_kernel_will_not_take(tmp_path: Path) -> None:
    """`vm.dirty_bytes` reads 0 while the ratio is in force, but no write may set 0 (EINVAL
    from 5.2, skipped before): the undo of a plan that sets the bytes wrote `= 0`, on which
    `sysctl -p` failed. It now names each such key instead, and `check` of the undo is clean of
    values the kernel refuses."""
    facts = str(EXAMPLES / "dcache-32bit.yaml")
    args = ["--facts", facts, "-p", "postgresql", "--set", "storage_write_mbps=200"]
    code, plan, err = run("recommend", *args)
    assert code == 0, err
    assert "vm.dirty_bytes = " in plan  # the plan sets the bytes
    code, out, err = run("recommend", *args, "--undo")
    assert code == 0, err
    settings = rendered_settings("conf", out)
    assert settings is not None
    assert "vm.dirty_bytes" not in settings and "vm.dirty_background_bytes" not in settings
    assert "undo.refused-by-kernel (vm.dirty_bytes)" in out
    undo = tmp_path / "undo.conf"
    undo.write_text(out)
    code, report, err = run("check", str(undo), "--facts", facts, "--format", "json")
    ids = {f["id"] for f in json.loads(report)["findings"]}
    assert not ids & {"check.out-of-bounds", "check.stored-out-of-range"}, ids

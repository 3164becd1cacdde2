"""Everything that reads the outside world into model types: this host's /proc and /sys, copied
trees, facts files, Ansible facts, sysctl.conf files, sysctl.d trees and `sysctl -a` dumps,
services' own configs (nginx), and the calibration probe.

The only stage that looks at the host being advised. Imports only `model`.
"""

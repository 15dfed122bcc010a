"""The scale world's heartbeat rates (console/lab/nodeleases.py): a kubelet's up to 250 nodes, then at most 25
renewals a second, and kube-controller-manager's grace period five renewal intervals, as 50 s is to 10 s."""

from __future__ import annotations

from console.lab.nodeleases import grace_period, renew_interval


def test_a_few_nodes_renew_as_kubelets_do() -> None:
    assert renew_interval(2) == renew_interval(250) == 10
    assert grace_period(2) == grace_period(250) == "50s"  # kube-controller-manager's default


def test_many_nodes_renew_at_a_bounded_rate_with_a_grace_period_to_match() -> None:
    assert renew_interval(500) == 20 and grace_period(500) == "100s"
    assert renew_interval(5000) == 200 and grace_period(5000) == "1000s"
    assert 5000 / renew_interval(5000) == 25

"""console/infra/capacity.py against stand-ins shaped as openstacksdk returns them: the price read from a flavor
extra_spec (fetched per flavor when the list, below microversion 2.61, carries none), and Placement or Nova
limits refused (403: Placement's default policy is admin-only) as notes, never errors."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import requests
from openstack import exceptions

from console.config import PlanSettings
from console.infra.capacity import _flavors, _placement, _quota


def forbidden(message: str) -> exceptions.ForbiddenException:
    """What openstacksdk raises for a 403 answer (exceptions.raise_from_response)."""
    response = requests.Response()
    response.status_code = 403
    return exceptions.ForbiddenException(message, response=response)


class Compute:
    def __init__(self, specs: dict[str, dict[str, str]], limits: Any = None) -> None:
        self.specs, self.limits, self.fetched = specs, limits, []

    def flavors(self, details: bool = True) -> list[Any]:
        return [SimpleNamespace(name=n, vcpus=v, ram=r, disk=20, extra_specs={})
                for n, v, r in (("m1.small", 1, 2048), ("m1.large", 8, 12288))]

    def fetch_flavor_extra_specs(self, flavor: Any) -> Any:
        self.fetched.append(flavor.name)
        return SimpleNamespace(extra_specs=self.specs.get(flavor.name, {}))

    def get_limits(self) -> Any:
        if isinstance(self.limits, Exception):
            raise self.limits
        return SimpleNamespace(absolute=self.limits)


class Placement:
    def resource_providers(self) -> list[Any]:
        raise forbidden("Policy does not allow placement:resource_providers:list")


class Backend:
    def __init__(self, compute: Compute) -> None:
        self.conn = SimpleNamespace(compute=compute, placement=Placement())

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        return fn(*args)


def test_prices_come_from_the_extra_spec_fetched_per_flavor():
    compute = Compute({"m1.large": {"console:price": "0.5"}})
    flavors = _flavors(Backend(compute), PlanSettings(price_extra_spec="console:price",
                                                      flavor_prices={"m1.small": 0.1}))
    assert {f.name: dict(f.extra_specs) for f in flavors} == {"m1.small": {}, "m1.large": {"console:price": "0.5"}}
    assert compute.fetched == ["m1.large"]  # m1.small is priced by the settings: nothing to ask
    assert _flavors(Backend(Compute({})), PlanSettings())[0].extra_specs == {}  # no extra_spec named: no calls


def test_placement_and_limits_refused_are_notes():
    hosts, note = _placement(Backend(Compute({})))
    assert hosts == {} and "403" in note and "Placement is admin-only by default" in note
    quota, note = _quota(Backend(Compute({}, forbidden("Policy does not allow os_compute_api:limits"))))
    assert (quota.cores, quota.ram_mib) == (None, None) and "quota is not bounded" in note
    limits = SimpleNamespace(total_cores=36, total_cores_used=17, total_ram=81920, total_ram_used=30720)
    quota, note = _quota(Backend(Compute({}, limits)))
    assert (quota.cores, quota.ram_mib, note) == (19, 51200, "")

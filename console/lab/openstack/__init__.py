"""The lab's OpenStack: Keystone v3 + Nova v2.1 on loopback, driving the lab hypervisor.

`nova.Nova` is the state machine (no HTTP); `server.start_openstack` serves it.
"""

"""The lab's OpenStack: the real Keystone, Nova and Placement from PyPI, on loopback.

Two child processes, because Keystone and Nova both register their options on oslo.config's global CONF:
`keystone_main` (Keystone's WSGI app) and `nova_main` (Placement's WSGI app, nova-api, conductor, scheduler and one
nova-compute per lab compute host, on oslo.messaging's in-process `fake://` transport, which has no broker).
Configured as DevStack configures them: keystonemiddleware's auth_token in the API pipelines, service users.

The computes drive the lab's libvirt through `virt` (a Nova ComputeDriver loaded as Nova loads drivers), one
libvirt connection per compute host. `stack.Cloud` starts and stops the two processes from the lab.
"""

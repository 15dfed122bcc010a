"""The capacity planner (pure, no I/O): which VMs to grow, to what, so that the Pending pods schedule at least cost.

console/planner/model.py holds its inputs and outputs; solving, the cost model and the reasons live beside it.
"""

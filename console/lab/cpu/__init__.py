"""The lab nodes' CPUs: the CPUID instruction answered with a node's CPU model (cpuid_run.c, cpuid.py)."""

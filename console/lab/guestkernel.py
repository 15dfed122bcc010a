"""What a simulated guest's kernel shows in /proc and /sys, as file contents (pure; `guestroot` writes them).

Shapes follow a Nova KVM guest (one socket per vCPU, as Nova's `_get_guest_xml` writes the topology;
field report 2) running Ubuntu 20.04's 5.4 kernel:
- /proc/cpuinfo lists online CPUs only (arch/x86/kernel/cpu/proc.c iterates cpu_online_mask), each its own
  `physical id`, so `fgrep 'physical id' /proc/cpuinfo | sort -u | wc -l` counts online vCPUs;
- /sys/devices/system/cpu: `possible`/`present`/`online`/`offline` in the kernel's cpulist format,
  `cpuN/online` for every present CPU but cpu0 (x86 cannot offline the boot CPU), `topology/` and `cache/`
  only while a CPU is online (drivers/base/topology.c and cacheinfo.c remove them on offline) — what
  util-linux lscpu reads (sys-utils/lscpu-cputype.c, lscpu-topology.c);
- /proc/meminfo from the guest's MemTotal; /proc/sys values as systemd 245 on focal leaves them
  (kernel.pid_max 4194304 from systemd's 50-pid-max.conf, threads-max = MemTotal pages / 32).
"""

from __future__ import annotations

from collections.abc import Iterable

from console.lab.vm import Guest

CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
OS_RELEASE = """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
HOME_URL="https://www.ubuntu.com/"
SUPPORT_URL="https://help.ubuntu.com/"
BUG_REPORT_URL="https://bugs.launchpad.net/ubuntu/"
PRIVACY_POLICY_URL="https://www.ubuntu.com/legal/terms-and-policies/privacy-policy"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"""
MODEL = "Intel Xeon Processor (Skylake, IBRS)"
FLAGS = ("fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss "
         "syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid tsc_known_freq pni pclmulqdq "
         "ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand "
         "hypervisor lahf_lm abm 3dnowprefetch cpuid_fault invpcid_single pti ssbd ibrs ibpb fsgsbase "
         "tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm mpx avx512f avx512dq rdseed adx smap clflushopt "
         "clwb avx512cd avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves arat pku ospke md_clear")
# (index, level, type, size, ways, sets): QEMU's Skylake-Server-IBRS cache model
CACHES = ((0, 1, "Data", "32K", 8, 64), (1, 1, "Instruction", "32K", 8, 64),
          (2, 2, "Unified", "4096K", 16, 4096), (3, 3, "Unified", "16384K", 16, 16384))
VULNERABILITIES = {
    "itlb_multihit": "KVM: Mitigation: VMX unsupported", "l1tf": "Mitigation: PTE Inversion",
    "mds": "Mitigation: Clear CPU buffers; SMT Host state unknown", "meltdown": "Mitigation: PTI",
    "spec_store_bypass": "Mitigation: Speculative Store Bypass disabled via prctl and seccomp",
    "spectre_v1": "Mitigation: usercopy/swapgs barriers and __user pointer sanitization",
    "spectre_v2": "Mitigation: Full generic retpoline, IBPB conditional, IBRS_FW, STIBP disabled, RSB filling",
    "srbds": "Not affected", "tsx_async_abort": "Not affected",
}


def cpu_list(cpus: Iterable[int]) -> str:
    """The kernel's cpulist format: 0-7,9."""
    runs: list[list[int]] = []
    for c in sorted(cpus):
        if runs and runs[-1][1] == c - 1:
            runs[-1][1] = c
        else:
            runs.append([c, c])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def cpu_mask(cpus: Iterable[int], nbits: int) -> str:
    """The kernel's cpumask format (bitmap_print_to_pagebuf): hex, 32-bit words separated by commas."""
    value = sum(1 << c for c in cpus)
    digits = max(1, (nbits + 3) // 4)
    text = f"{value:0{digits}x}"
    words: list[str] = []
    while len(text) > 8:
        words.insert(0, text[-8:])
        text = text[:-8]
    return ",".join([text, *words])


def cpuinfo(online: Iterable[int]) -> str:
    blocks = []
    for n in sorted(online):
        rows = [("processor", n), ("vendor_id", "GenuineIntel"), ("cpu family", 6), ("model", 85),
                ("model name", MODEL), ("stepping", 4), ("microcode", "0x1"), ("cpu MHz", "2394.374"),
                ("cache size", "16384 KB"), ("physical id", n), ("siblings", 1), ("core id", 0),
                ("cpu cores", 1), ("apicid", n), ("initial apicid", n), ("fpu", "yes"),
                ("fpu_exception", "yes"), ("cpuid level", 13), ("wp", "yes"), ("flags", FLAGS),
                ("bugs", "cpu_meltdown spectre_v1 spectre_v2 spec_store_bypass l1tf mds swapgs taa itlb_multihit"),
                ("bogomips", "4788.74"), ("clflush size", 64), ("cache_alignment", 64),
                ("address sizes", "40 bits physical, 48 bits virtual"), ("power management", "")]
        blocks.append("".join(f"{k}\t: {v}\n" if len(k) >= 8 else f"{k}\t\t: {v}\n" for k, v in rows))
    return "\n".join(blocks) + "\n"


def meminfo(total_kib: int) -> str:
    free = total_kib * 62 // 100
    rows = [("MemTotal", total_kib), ("MemFree", free), ("MemAvailable", total_kib * 81 // 100),
            ("Buffers", total_kib // 60), ("Cached", total_kib * 15 // 100), ("SwapCached", 0),
            ("Active", total_kib // 5), ("Inactive", total_kib // 9), ("SwapTotal", 0), ("SwapFree", 0),
            ("Dirty", 128), ("Shmem", 2048), ("Slab", total_kib // 40), ("CommitLimit", total_kib // 2),
            ("Committed_AS", total_kib // 4), ("VmallocTotal", 34359738367), ("HugePages_Total", 0),
            ("HugePages_Free", 0), ("Hugepagesize", 2048)]
    return "".join(
        f"{k + ':':<16}{v:>8}\n" if k.startswith("HugePages_") else f"{k + ':':<16}{v:>8} kB\n" for k, v in rows
    )


def identity_files(hostname: str, machine_id: str, kernel_release: str, os_release: str) -> dict[str, str]:
    """Files that do not change while the guest runs: /etc identity, /proc/version, fixed sysctls."""
    build = "#185-Ubuntu SMP Tue Oct 3 09:34:44 UTC 2023"
    return {
        "/etc/hostname": hostname + "\n",
        "/etc/machine-id": machine_id + "\n",
        "/etc/os-release": os_release,
        "/etc/hosts": f"127.0.0.1 localhost\n127.0.1.1 {hostname}\n",
        "/etc/passwd": "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
        "/proc/version": (f"Linux version {kernel_release} (buildd@lcy02-amd64-001) (gcc version 9.4.0 "
                          f"(Ubuntu 9.4.0-1ubuntu1~20.04.2)) {build}\n"),
        "/proc/cmdline": f"BOOT_IMAGE=/boot/vmlinuz-{kernel_release} root=LABEL=cloudimg-rootfs ro console=ttyS0\n",
        "/proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        "/proc/loadavg": "0.08 0.03 0.01 1/180 4242\n",
        "/proc/sys/kernel/hostname": hostname + "\n",
        "/proc/sys/kernel/osrelease": kernel_release + "\n",
        "/proc/sys/kernel/ostype": "Linux\n",
        "/proc/sys/kernel/version": build + "\n",
        "/proc/sys/kernel/pid_max": "4194304\n",
        "/proc/sys/kernel/panic": "0\n",
        "/proc/sys/vm/swappiness": "60\n",
        "/proc/sys/vm/max_map_count": "65530\n",
        "/proc/sys/vm/overcommit_memory": "0\n",
        "/proc/sys/fs/file-max": "9223372036854775807\n",
        "/proc/sys/net/core/somaxconn": "4096\n",
        "/proc/sys/net/ipv4/ip_forward": "1\n",
        f"{CPU_DIR}/kernel_max": "8191\n",
        **{f"{CPU_DIR}/vulnerabilities/{k}": v + "\n" for k, v in VULNERABILITIES.items()},
    }


def guest_files(guest: Guest) -> tuple[dict[str, str], set[str]]:
    """(path -> content) for the guest's current CPUs and memory, and the directories that must be gone
    (topology/cache of offline CPUs, CPUs no longer present)."""
    present = set(range(guest.present_vcpus)) if guest.running else set()
    online = set(guest.online_cpus) & present
    nbits = max(len(present), 1)
    mem = guest.mem_total_kib
    files = {
        "/proc/cpuinfo": cpuinfo(online),
        "/proc/meminfo": meminfo(mem),
        "/proc/sys/kernel/threads-max": f"{max(mem // 4 // 32, 1)}\n",
        f"{CPU_DIR}/possible": cpu_list(present) + "\n",
        f"{CPU_DIR}/present": cpu_list(present) + "\n",
        f"{CPU_DIR}/online": cpu_list(online) + "\n",
        f"{CPU_DIR}/offline": cpu_list(present - online) + "\n",
        f"{NODE_DIR}/online": "0\n",
        f"{NODE_DIR}/possible": "0\n",
        f"{NODE_DIR}/has_cpu": "0\n",
        f"{NODE_DIR}/node0/cpumap": cpu_mask(online, nbits) + "\n",
        f"{NODE_DIR}/node0/cpulist": cpu_list(online) + "\n",
    }
    gone: set[str] = set()
    for n in sorted(present):
        base = f"{CPU_DIR}/cpu{n}"
        if n:
            files[f"{base}/online"] = "1\n" if n in online else "0\n"
        if n not in online:
            gone.update({f"{base}/topology", f"{base}/cache"})
            continue
        own = cpu_mask([n], nbits) + "\n"
        files.update({
            f"{base}/topology/physical_package_id": f"{n}\n", f"{base}/topology/die_id": "0\n",
            f"{base}/topology/core_id": "0\n", f"{base}/topology/core_siblings": own,
            f"{base}/topology/core_siblings_list": f"{n}\n", f"{base}/topology/thread_siblings": own,
            f"{base}/topology/thread_siblings_list": f"{n}\n", f"{base}/topology/core_cpus": own,
            f"{base}/topology/core_cpus_list": f"{n}\n", f"{base}/topology/package_cpus": own,
            f"{base}/topology/package_cpus_list": f"{n}\n",
        })
        for index, level, kind, size, ways, sets in CACHES:
            c = f"{base}/cache/index{index}"
            files.update({
                f"{c}/level": f"{level}\n", f"{c}/type": f"{kind}\n", f"{c}/size": f"{size}\n",
                f"{c}/ways_of_associativity": f"{ways}\n", f"{c}/number_of_sets": f"{sets}\n",
                f"{c}/coherency_line_size": "64\n", f"{c}/physical_line_partition": "1\n",
                f"{c}/id": f"{n}\n", f"{c}/shared_cpu_map": own, f"{c}/shared_cpu_list": f"{n}\n",
            })
    return files, gone


"""A lab node's CPU as the CPUID instruction answers it: the table `cpuid-run` serves (console/lab/cpu/cpuid_run.c).

The lab writes its nodes' CPUs; what reads them is real (nfd-worker's cpu source, through klauspost/cpuid, and the Go
runtime). Leaves and bits are the hardware's (Intel SDM vol. 2A, CPUID; AMD APM vol. 3, appendix E), named as
klauspost/cpuid v2 (cpuid.go `support()`) names the features it decodes from them, which are the names NFD labels
(`cpu-cpuid.<NAME>`). A node's CPU is its scenario model's flags over an x86-64 baseline every QEMU model has (x87,
CMPXCHG8, SYSENTER, CMOV, MMX, FXSR, SSE, SSE2, SSE3, SYSCALL, NX, LAHF), as a KVM guest sees it: the hypervisor bit
and KVM's signature (leaf 0x40000000), the model's vendor, family, model number and brand string.

XGETBV is not an instruction the lab can answer: AVX and AVX-512 are only reported where the host's XCR0 enables
their register state, as on a real guest. `unsupported(flags)` names the flags this machine's CPU lacks: a program
told it has them may execute them (the Go runtime picks AVX2 memmove from CPUID), so the lab refuses such a model.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from console.lab.scenarios import CpuModel

EAX, EBX, ECX, EDX = range(4)

# flag -> (leaf, subleaf, register, bit); subleaf None: the leaf has none
BITS: dict[str, tuple[int, int | None, int, int]] = {
    # leaf 1
    "X87": (1, None, EDX, 0),
    "CMPXCHG8": (1, None, EDX, 8),
    "SYSEE": (1, None, EDX, 11),
    "CMOV": (1, None, EDX, 15),
    "MMX": (1, None, EDX, 23),
    "FXSR": (1, None, EDX, 24),
    "SSE": (1, None, EDX, 25),
    "SSE2": (1, None, EDX, 26),
    "SSE3": (1, None, ECX, 0),
    "CLMUL": (1, None, ECX, 1),
    "SSSE3": (1, None, ECX, 9),
    "FMA3": (1, None, ECX, 12),
    "CX16": (1, None, ECX, 13),
    "SSE4": (1, None, ECX, 19),
    "SSE42": (1, None, ECX, 20),
    "MOVBE": (1, None, ECX, 22),
    "POPCNT": (1, None, ECX, 23),
    "AESNI": (1, None, ECX, 25),
    "XSAVE": (1, None, ECX, 26),
    "OSXSAVE": (1, None, ECX, 27),
    "AVX": (1, None, ECX, 28),
    "F16C": (1, None, ECX, 29),
    "RDRAND": (1, None, ECX, 30),
    "HYPERVISOR": (1, None, ECX, 31),
    # leaf 7 subleaf 0
    "BMI1": (7, 0, EBX, 3),
    "AVX2": (7, 0, EBX, 5),
    "BMI2": (7, 0, EBX, 8),
    "ERMS": (7, 0, EBX, 9),
    "AVX512F": (7, 0, EBX, 16),
    "AVX512DQ": (7, 0, EBX, 17),
    "RDSEED": (7, 0, EBX, 18),
    "ADX": (7, 0, EBX, 19),
    "AVX512IFMA": (7, 0, EBX, 21),
    "AVX512CD": (7, 0, EBX, 28),
    "SHA": (7, 0, EBX, 29),
    "AVX512BW": (7, 0, EBX, 30),
    "AVX512VL": (7, 0, EBX, 31),
    "AVX512VBMI": (7, 0, ECX, 1),
    "AVX512VBMI2": (7, 0, ECX, 6),
    "GFNI": (7, 0, ECX, 8),
    "VAES": (7, 0, ECX, 9),
    "VPCLMULQDQ": (7, 0, ECX, 10),
    "AVX512VNNI": (7, 0, ECX, 11),
    "AVX512BITALG": (7, 0, ECX, 12),
    "AVX512VPOPCNTDQ": (7, 0, ECX, 14),
    # leaf 0x80000001
    "LAHF": (0x80000001, None, ECX, 0),
    "LZCNT": (0x80000001, None, ECX, 5),
    "SYSCALL": (0x80000001, None, EDX, 11),
    "NX": (0x80000001, None, EDX, 20),
    "RDTSCP": (0x80000001, None, EDX, 27),
    "LM": (0x80000001, None, EDX, 29),  # long mode: every x86-64 CPU has it, klauspost/cpuid does not decode it
}
# what /proc/cpuinfo calls the flags whose CPUID name differs (for `unsupported`)
CPUINFO_NAMES = {
    "X87": "fpu",
    "CMPXCHG8": "cx8",
    "SYSEE": "sep",
    "SSE3": "pni",
    "CLMUL": "pclmulqdq",
    "FMA3": "fma",
    "SSE4": "sse4_1",
    "SSE42": "sse4_2",
    "AESNI": "aes",
    "AVX512VBMI": "avx512vbmi",
    "AVX512VBMI2": "avx512_vbmi2",
    "AVX512VNNI": "avx512_vnni",
    "AVX512BITALG": "avx512_bitalg",
    "AVX512VPOPCNTDQ": "avx512_vpopcntdq",
    "SHA": "sha_ni",
    "LAHF": "lahf_lm",
    "LZCNT": "abm",
}
# bits /proc/cpuinfo does not list (Linux: cpufeatures.h names them ""): the OS's and the hypervisor's
NOT_IN_CPUINFO = ("OSXSAVE", "HYPERVISOR")
BASELINE = (
    "X87",
    "CMPXCHG8",
    "SYSEE",
    "CMOV",
    "MMX",
    "FXSR",
    "SSE",
    "SSE2",
    "SSE3",
    "SYSCALL",
    "NX",
    "LM",
    "LAHF",
    "HYPERVISOR",
)
# scenario spellings of a feature klauspost/cpuid names otherwise
ALIASES = {"CMPXCHG16B": "CX16"}
VENDORS = {"Intel": b"GenuineIntel", "AMD": b"AuthenticAMD"}
KVM_SIGNATURE = b"KVMKVMKVM\0\0\0"
MAX_BASIC, MAX_EXTENDED = 0xD, 0x80000008

Leaf = tuple[int, int | None, tuple[int, int, int, int]]


class UnknownFlag(ValueError):
    """A scenario flag the table has no bit for."""


def _words(data: bytes) -> list[int]:
    return [int.from_bytes(data[i : i + 4], "little") for i in range(0, len(data), 4)]


def features(model: CpuModel) -> set[str]:
    """The CPUID features of the model's CPU: its flags (klauspost/cpuid names), the baseline, what they imply."""
    names = {ALIASES.get(f, f) for f in model.flags} | set(BASELINE)
    if names & {"AVX", "AVX2", "FMA3", "F16C"} or any(n.startswith("AVX512") for n in names):
        names |= {"XSAVE", "OSXSAVE", "AVX"}  # the hardware has no AVX without XSAVE, which the OS enables
    unknown = sorted(names - BITS.keys())
    if unknown:
        raise UnknownFlag(f"CPU model {model.model_name!r}: no CPUID bit known for {', '.join(unknown)}")
    return names


def signature(family: int, model: int, stepping: int = 1) -> int:
    """Leaf 1 EAX: family and model split into base and extended fields as the SDM says."""
    base_family, ext_family = (family, 0) if family < 0xF else (0xF, family - 0xF)
    base_model, ext_model = model & 0xF, model >> 4
    return stepping | base_model << 4 | base_family << 8 | ext_model << 16 | ext_family << 20


def leaves(model: CpuModel) -> list[Leaf]:
    """The CPUID leaves of the model's CPU, one vCPU (topology is the node's sysfs)."""
    regs: dict[tuple[int, int | None], list[int]] = {}
    names = features(model)
    for name in names:
        leaf, subleaf, reg, bit = BITS[name]
        regs.setdefault((leaf, subleaf), [0, 0, 0, 0])[reg] |= 1 << bit
    ebx, edx, ecx = _words(VENDORS[model.vendor_id])
    regs[(0, None)] = [MAX_BASIC, ebx, ecx, edx]
    leaf1 = regs.setdefault((1, None), [0, 0, 0, 0])
    leaf1[EAX] = signature(model.family, model.model_id)
    leaf1[EBX] = 1 << 16 | 8 << 8  # one logical processor, a 64-byte CLFLUSH line
    regs.setdefault((7, 0), [0, 0, 0, 0])
    xcr0 = 0x7 | (0xE0 if any(n.startswith("AVX512") for n in names) else 0)
    regs[(0xD, 0)] = [xcr0, 0, 0, 0]
    regs[(0x40000000, None)] = [0x40000001, *_words(KVM_SIGNATURE)]
    regs[(0x80000000, None)] = [MAX_EXTENDED, 0, 0, 0]
    brand = model.model_name.encode()[:47].ljust(48, b"\0")
    for i in range(3):
        regs[(0x80000002 + i, None)] = _words(brand[16 * i : 16 * i + 16])
    regs[(0x80000008, None)] = [0x3028, 0, 0, 0]  # 40 physical, 48 virtual address bits
    table: list[Leaf] = []
    for (leaf, subleaf), r in sorted(regs.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        table.append((leaf, subleaf, (r[0], r[1], r[2], r[3])))
    return table


def table_text(model: CpuModel) -> str:
    lines = [f"# {model.model_name}"]
    for leaf, subleaf, r in leaves(model):
        sub = "*" if subleaf is None else f"{subleaf:x}"
        lines.append(f"{leaf:x} {sub} " + " ".join(f"{v:x}" for v in r))
    return "\n".join(lines) + "\n"


def host_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    for line in cpuinfo.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def unsupported(names: Iterable[str], host: set[str]) -> list[str]:
    """The features this machine's CPU lacks (by /proc/cpuinfo), which a program told of them might execute."""
    return sorted(n for n in names if n not in NOT_IN_CPUINFO and CPUINFO_NAMES.get(n, n.lower()) not in host)

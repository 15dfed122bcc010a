"""cpu source: CPUID flags, model, hardware multithreading.

NFD reads x86 flags with the CPUID instruction (klauspost/cpuid); here they come from
/proc/cpuinfo's `flags`, mapped to klauspost's names. Flags without a known mapping are skipped.
"""

from __future__ import annotations

import re

from console.discovery.paths import HostPaths, read_attr, read_text
from console.nfd.model import Features

# /proc/cpuinfo flag -> klauspost/cpuid name (as NFD labels them)
FLAG_NAMES = {
    "fpu": "X87", "cmov": "CMOV", "mmx": "MMX", "mmxext": "MMXEXT", "sse": "SSE", "sse2": "SSE2", "pni": "SSE3",
    "ssse3": "SSSE3", "sse4_1": "SSE4", "sse4_2": "SSE42", "sse4a": "SSE4A", "avx": "AVX", "avx2": "AVX2",
    "fma": "FMA3", "fma4": "FMA4", "f16c": "F16C", "bmi1": "BMI1", "bmi2": "BMI2", "abm": "LZCNT", "popcnt": "POPCNT",
    "adx": "ADX", "aes": "AESNI", "pclmulqdq": "CLMUL", "sha_ni": "SHA", "rdrand": "RDRAND", "rdseed": "RDSEED",
    "rdtscp": "RDTSCP", "ht": "HTT", "nx": "NX", "cx16": "CX16", "cx8": "CX8", "erms": "ERMS", "fsrm": "FSRM",
    "movbe": "MOVBE", "vmx": "VMX", "svm": "SVM", "hypervisor": "HYPERVISOR", "sgx": "SGX", "sgx_lc": "SGXLC",
    "rtm": "RTM", "hle": "HLE", "clflushopt": "CLFLUSHOPT", "clwb": "CLWB", "wbnoinvd": "WBNOINVD",
    "xsave": "XSAVE", "xsaveopt": "XSAVEOPT", "xsavec": "XSAVEC", "xsaves": "XSAVES", "osxsave": "OSXSAVE",
    "vaes": "VAES", "vpclmulqdq": "VPCLMULQDQ", "gfni": "GFNI", "avx_vnni": "AVXVNNI", "avx512f": "AVX512F",
    "avx512dq": "AVX512DQ", "avx512cd": "AVX512CD", "avx512bw": "AVX512BW", "avx512vl": "AVX512VL",
    "avx512ifma": "AVX512IFMA", "avx512vbmi": "AVX512VBMI", "avx512_vbmi2": "AVX512VBMI2",
    "avx512_vnni": "AVX512VNNI", "avx512_bitalg": "AVX512BITALG", "avx512_vpopcntdq": "AVX512VPOPCNTDQ",
    "avx512_bf16": "AVX512BF16", "avx512_fp16": "AVX512FP16", "avx512_vp2intersect": "AVX512VP2INTERSECT",
    "amx_bf16": "AMXBF16", "amx_int8": "AMXINT8", "amx_tile": "AMXTILE", "movdiri": "MOVDIRI",
    "movdir64b": "MOVDIR64B", "serialize": "SERIALIZE", "waitpkg": "WAITPKG", "tsxldtrk": "TSXLDTRK",
    "md_clear": "MD_CLEAR", "ibpb": "IBPB", "stibp": "STIBP", "ssbd": "SSBD", "ibrs": "IBRS", "lm": "LM",
    "constant_tsc": "CONSTANT_TSC", "invpcid": "INVPCID", "la57": "LA57", "pku": "PKU", "ospke": "OSPKE",
    "cldemote": "CLDEMOTE", "enqcmd": "ENQCMD", "sev": "SEV", "sev_es": "SEV_ES", "sme": "SME",
}

# NFD's default cpuid label blacklist (attributeBlacklist)
LABEL_BLACKLIST = frozenset((
    "AVX10", "BMI1", "BMI2", "CLMUL", "CMOV", "CX16", "ERMS", "F16C", "HTT", "LZCNT", "MMX", "MMXEXT", "NX", "POPCNT",
    "RDRAND", "RDSEED", "RDTSCP", "SGX", "SGXLC", "SSE", "SSE2", "SSE3", "SSE4", "SSE42", "SSSE3", "TDX_GUEST",
))

_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon", "CentaurHauls": "VIA"}


def parse_cpuinfo(text: str) -> dict[str, str]:
    """Fields of the first processor block."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if out:
                break
            continue
        k, sep, v = line.partition(":")
        if sep:
            out.setdefault(k.strip(), v.strip())
    return out


def _siblings(text: str) -> int:
    n = 0
    for part in text.strip().split(","):
        if "-" in part:
            a, b = part.split("-", 1)
            n += int(b) - int(a) + 1
        elif part:
            n += 1
    return n


def discover_cpu(paths: HostPaths, features: Features, warnings: list[str]) -> None:
    text = read_text(paths.proc / "cpuinfo")
    if text is None:
        warnings.append(f"cpu: {paths.proc / 'cpuinfo'} not readable")
        return
    info = parse_cpuinfo(text)
    flags = {FLAG_NAMES[f] for f in info.get("flags", "").split() if f in FLAG_NAMES}
    features.flags["cpu.cpuid"] = flags
    model: dict[str, str] = {}
    if "vendor_id" in info:
        model["vendor_id"] = _VENDORS.get(info["vendor_id"], info["vendor_id"])
    if info.get("cpu family", "").isdigit():
        model["family"] = info["cpu family"]
    if info.get("model", "").isdigit():
        model["id"] = info["model"]
    hv = read_attr(paths.sys / "hypervisor" / "type")
    if hv:
        model["hypervisor"] = hv
    elif "HYPERVISOR" not in flags:
        model["hypervisor"] = "none"
    # else: NFD names the hypervisor from CPUID leaf 0x40000000, which /proc/cpuinfo does not show
    features.attributes["cpu.model"] = model
    topo: dict[str, str] = {}
    cpu_dir = paths.sys / "devices" / "system" / "cpu"
    ht = False
    sockets: set[str] = set()
    if cpu_dir.is_dir():
        for d in cpu_dir.iterdir():
            if not re.fullmatch(r"cpu\d+", d.name):
                continue
            sib = read_attr(d / "topology" / "thread_siblings_list")
            if sib:
                try:
                    ht = ht or _siblings(sib) > 1
                except ValueError:
                    warnings.append(f"cpu: bad thread_siblings_list in {d.name}: {sib!r}")
            pkg = read_attr(d / "topology" / "physical_package_id")
            if pkg is not None:
                sockets.add(pkg)
        topo["hardware_multithreading"] = "true" if ht else "false"
        if sockets:
            topo["socket_count"] = str(len(sockets))
    features.attributes["cpu.topology"] = topo


def cpu_labels(features: Features) -> dict[str, str]:
    labels = {f"cpu-cpuid.{f}": "true" for f in sorted(features.flags.get("cpu.cpuid", ())) if f not in LABEL_BLACKLIST}
    for k in ("vendor_id", "family", "id", "hypervisor"):
        if k in features.attributes.get("cpu.model", {}):
            labels[f"cpu-model.{k}"] = features.attributes["cpu.model"][k]
    topo = features.attributes.get("cpu.topology", {})
    if "hardware_multithreading" in topo:
        labels["cpu-hardware_multithreading"] = topo["hardware_multithreading"]
    return labels

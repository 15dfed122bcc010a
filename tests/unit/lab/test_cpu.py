"""The lab nodes' CPUs (console/lab/cpu): the CPUID table of a scenario model, and cpuid-run answering a real
program's CPUID instructions with it.

Leaf encodings from the Intel SDM vol. 2A (CPUID: leaf 0 vendor in EBX-EDX-ECX, leaf 1 EAX family/model fields,
leaves 0x80000002-4 the brand string); bit names from klauspost/cpuid v2.4.0 cpuid.go `support()`.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from console.lab.cpu import cpuid, tracer
from console.lab.scenarios import HASWELL, SKYLAKE, ZEN3, CpuModel

PROBE = r"""
#include <cpuid.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    unsigned a, b, c, d, brand[12];
    char vendor[13];
    if (argc > 1 && strcmp(argv[1], "segv") == 0) { volatile int *p = 0; return *p; }
    if (argc > 1 && strcmp(argv[1], "wait") == 0) { puts("waiting"); fflush(stdout); pause(); return 0; }
    __cpuid(0, a, b, c, d);
    memcpy(vendor, &b, 4); memcpy(vendor + 4, &d, 4); memcpy(vendor + 8, &c, 4); vendor[12] = 0;
    printf("max=%x vendor=%s\n", a, vendor);
    __cpuid(1, a, b, c, d);
    printf("1: eax=%x ecx=%x edx=%x\n", a, c, d);
    __cpuid_count(7, 0, a, b, c, d);
    printf("7: ebx=%x ecx=%x\n", b, c);
    for (unsigned i = 0; i < 3; i++) __cpuid(0x80000002 + i, brand[4*i], brand[4*i+1], brand[4*i+2], brand[4*i+3]);
    printf("brand=%.48s\n", (char *)brand);
    return 0;
}
"""


def test_family_and_model_are_split_as_the_sdm_says() -> None:
    assert cpuid.signature(6, 85) == 0x00050651  # Skylake-SP: family 6, model 0x55, stepping 1
    assert cpuid.signature(25, 1) == 0x00A00F11  # Zen 3: base family 0xF + extended 0xA
    assert cpuid.signature(6, 63) == 0x000306F1


def test_a_models_features_are_its_flags_over_the_baseline() -> None:
    names = cpuid.features(HASWELL)
    assert "CX16" in names and "CMPXCHG16B" not in names  # klauspost/cpuid's name
    assert {"SSE2", "X87", "SYSCALL", "HYPERVISOR", "XSAVE", "AVX"} <= names
    assert not any(n.startswith("AVX512") for n in names)
    with pytest.raises(cpuid.UnknownFlag, match="NOSUCHFLAG"):
        cpuid.features(CpuModel("Intel", 6, 85, "odd", ("NOSUCHFLAG",)))


def test_a_flag_the_host_lacks_is_named_by_its_cpuinfo_spelling() -> None:
    host = {"fpu", "sse4_1", "avx", "avx2"}
    assert cpuid.unsupported({"X87", "SSE4", "AVX", "AVX2", "OSXSAVE", "HYPERVISOR", "AVX512F"}, host) == ["AVX512F"]


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc (./dev installs it)")
    d = tmp_path_factory.mktemp("probe")
    (d / "probe.c").write_text(PROBE)
    subprocess.run(["gcc", "-static", "-o", str(d / "probe"), str(d / "probe.c")], check=True)
    return d / "probe"


def _table(tmp: Path, model: CpuModel) -> Path:
    path = tmp / "cpuid.table"
    path.write_text(cpuid.table_text(model))
    return path


@pytest.mark.parametrize("model", [SKYLAKE, ZEN3], ids=["skylake", "zen3"])
def test_cpuid_run_answers_the_programs_cpuid_with_the_model(probe: Path, tmp_path: Path, model: CpuModel) -> None:
    if "cpuid_fault" not in cpuid.host_flags():
        pytest.skip("this machine's CPU cannot make CPUID fault")
    out = subprocess.run(
        [str(tracer.binary()), str(_table(tmp_path, model)), str(probe)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.splitlines()
    vendor = {"Intel": "GenuineIntel", "AMD": "AuthenticAMD"}[model.vendor_id]
    assert out[0] == f"max=d vendor={vendor}"
    eax = int(out[1].split()[1].removeprefix("eax="), 16)
    assert eax == cpuid.signature(model.family, model.model_id)
    ebx7 = int(out[2].split()[1].removeprefix("ebx="), 16)
    assert bool(ebx7 & 1 << 16) == ("AVX512F" in model.flags)  # leaf 7 EBX bit 16: AVX512F
    assert bool(ebx7 & 1 << 5)  # AVX2: every model here has it
    assert out[3] == f"brand={model.model_name}"
    # without the tracer the same program sees the host
    native = subprocess.run([str(probe)], capture_output=True, text=True, check=True).stdout.splitlines()
    assert native[1] != out[1]


def test_cpuid_run_delivers_other_faults_and_passes_on_signals(probe: Path, tmp_path: Path) -> None:
    table = str(_table(tmp_path, HASWELL))
    segv = subprocess.run([str(tracer.binary()), table, str(probe), "segv"], capture_output=True, timeout=30)
    assert segv.returncode == 128 + signal.SIGSEGV  # a real fault is the program's, not answered as a CPUID
    proc = subprocess.Popen([str(tracer.binary()), table, str(probe), "wait"], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "waiting\n"
    proc.send_signal(signal.SIGTERM)  # what a kubelet sends a container's process
    assert proc.wait(30) == 128 + signal.SIGTERM
    missing = subprocess.run(
        [str(tracer.binary()), table, str(tmp_path / "nothing")], capture_output=True, text=True, timeout=30
    )
    assert missing.returncode == 127 and "nothing" in missing.stderr
    bad = tmp_path / "bad.table"
    bad.write_text("zz\n")
    broken = subprocess.run([str(tracer.binary()), str(bad), str(probe)], capture_output=True, text=True, timeout=30)
    assert broken.returncode == 125 and "bad line" in broken.stderr

"""The crash-proof model probe: one completion in a child process, a crash is a verdict."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rolecall.llm import probe
from tests.cli_runs import run_to_end


@pytest.fixture
def fakes_in_children(monkeypatch):
    """The probe's child imports the fake backend the way a subprocess of the CLI does."""
    from tests.paths import REPO

    monkeypatch.setenv("ROLECALL_PLUGINS", "tests.fakes")
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def test_a_crashing_backend_is_a_failed_probe_that_names_signal_cpu_build_and_fix(
    fakes_in_children,
):
    result = probe.probe_model("fake:x?crash=true", timeout=120)
    assert not result.ok and result.signal == "SIGSEGV" and result.returncode < 0
    text = "\n".join(probe.explain(result))
    assert "killed by SIGSEGV" in text
    assert "CPU:" in text and "build:" in text and "fix:" in text
    assert "GGML_NATIVE=OFF" in text  # the fix says how to rebuild
    assert "Fatal Python error" in text  # faulthandler's stack of the crash is shown


def test_a_working_backend_passes_and_a_failing_one_says_why(fakes_in_children):
    good = probe.probe_model("fake:x", timeout=120)
    assert good.ok and good.answer["tokens_out"] > 0, good
    assert probe.explain(good)[0].startswith("model fake:x: OK")
    bad = probe.probe_model("fake:x?nonsense=1", timeout=120)
    assert not bad.ok and bad.signal is None
    assert "nonsense" in bad.error and bad.fix


def test_signal_note_for_shells():
    assert probe.signal_note(0) is None and probe.signal_note(1) is None
    note = probe.signal_note(128 + 11)
    assert "SIGSEGV" in note and "rolecall doctor" in note


def test_cpu_summary_names_the_cpu_and_the_features_it_has(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\nflags\t\t: fpu avx2 sse4_2 fma\n"
        "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: avx512f\n",
        encoding="utf-8",
    )
    present = [f for f in probe.FEATURES if f in {"avx2", "sse4_2", "fma"}]
    assert probe.cpu_summary(cpuinfo) == f"Test CPU @ 2.0GHz; features: {' '.join(present)}"
    cpuinfo.write_text("model name\t: Old CPU\nflags\t\t: fpu\n", encoding="utf-8")
    assert probe.cpu_summary(cpuinfo) == f"Old CPU; features: none of {' '.join(probe.FEATURES)}"
    missing = probe.cpu_summary(tmp_path / "none")
    assert missing == "unknown CPU (features unknown: no /proc/cpuinfo)"


@pytest.mark.embedded
def test_the_embedded_model_runs_cleanly_in_a_child_process():
    """The portable-build check: a fresh process loads the embedded model with the
    installed llama.cpp build, completes one prompt and exits 0 (a native build on a CPU
    with AMX died here with SIGSEGV)."""
    result = probe.probe_model("llamacpp:embedded", timeout=300)
    assert result.ok, "\n".join(probe.explain(result))
    assert result.returncode == 0 and result.answer["tokens_out"] > 0
    # a speed is reported, not judged: a loaded 2-core machine ran it at 0.6 tokens/s
    assert result.tokens_per_second and result.tokens_per_second > 0
    assert result.system_info and "CPU" in result.system_info
    record = Path(sys.prefix) / probe.BUILD_RECORD
    if record.is_file():  # set up by scripts/setup.sh: the portable flags, never native
        args = json.loads(record.read_text(encoding="utf-8"))["cmake_args"]
        assert "-DGGML_NATIVE=OFF" in args
        assert "AMX_INT8 = 1" not in result.system_info


def test_doctor_survives_a_crashing_backend_and_prints_its_report():
    result = run_to_end("doctor", "-m", "fake:x?crash=true")
    assert result.returncode == 1
    assert "killed by SIGSEGV" in result.stdout and "fix:" in result.stdout
    assert "backends" in result.stdout and "packages" in result.stdout
    assert "Traceback" not in result.stderr


def test_the_probe_command_exits_1_on_a_crash(fakes_in_children):
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", "rolecall.llm.probe", "fake:x?crash=true", "--setup"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert "SIGSEGV" in proc.stderr and "set-up failed" in proc.stderr


# AVX-512 shows as zmm registers, mask registers k1-k7 or the upper 16 xmm/ymm registers
# (EVEX only); AMX as tile registers and tile instructions.
WIDE = re.compile(
    r"%(zmm\d+|k[1-7]\b|[xy]mm(1[6-9]|2\d|3[01])\b|tmm\d)|\b(ld|st)tilecfg\b"
    r"|\btile(loadd|stored|zero|release)"
)


def wide_instructions(disassembly: str) -> list[str]:
    return [line for line in disassembly.splitlines() if WIDE.search(line)]


def test_the_wide_instruction_pattern_finds_avx512_and_amx_only():
    sample = (
        "  10:\tvpdpbusd %zmm1,%zmm2,%zmm3\n  14:\ttileloadd (%rax,%rbx,1),%tmm0\n"
        "  18:\tvaddps %ymm17,%ymm2,%ymm3\n  1c:\tkmovw %k1,%eax\n"
        "  20:\tvaddps %ymm1,%ymm2,%ymm3\n  24:\tvfmadd231ps %ymm15,%ymm14,%ymm0\n"
    )
    assert len(wide_instructions(sample)) == 4


def test_the_installed_llama_cpp_build_has_no_avx512_or_amx_instructions():
    """The portable build, read from its machine code: a CPU without AVX-512 or AMX (or
    one whose AMX path crashed) never meets an instruction it cannot run."""
    record = Path(sys.prefix) / probe.BUILD_RECORD
    if not record.is_file() or shutil.which("objdump") is None:
        pytest.skip("needs the llama.cpp build of scripts/setup.sh and objdump (binutils)")
    if json.loads(record.read_text(encoding="utf-8"))["level"] == "custom":
        pytest.skip("ROLECALL_LLAMA_CMAKE_ARGS chose the instruction set")
    import llama_cpp

    libraries = sorted((Path(llama_cpp.__file__).parent / "lib").glob("lib*.so"))
    assert any(lib.name.startswith("libggml-cpu") for lib in libraries), libraries
    for library in libraries:
        code = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", str(library)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        found = wide_instructions(code)
        assert not found, f"{library.name}: {len(found)} AVX-512/AMX instructions: {found[:3]}"

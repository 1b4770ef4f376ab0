"""One real completion in a child process: does this model run on this machine?

llama.cpp runs in-process, so a build that does not fit the CPU (an instruction it lacks,
or a code path that crashes on it, such as the AMX path of a ``-march=native`` build) kills
the Python process with a signal: no exception, no message. ``probe_model`` makes the first
call in a child process instead; a crash becomes a ``ProbeResult`` that names the signal,
the CPU's features, the llama.cpp build flags and the fix. Set-up (``scripts/setup.sh``)
and ``rolecall doctor`` both use it.

``python -m rolecall.llm.probe [MODEL] [--setup]`` prints the verdict and exits 0 or 1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PROMPT = "한국어로 인사해 주세요: 안녕하세요,"
MAX_TOKENS = 16
# the CPU features that decide which llama.cpp builds run (x86-64)
FEATURES = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "bmi2",
    "avx_vnni",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)
BUILD_RECORD = "llama-build.json"  # written into the venv by scripts/setup.sh
SETUP_FIX = (
    "rebuild llama-cpp-python portably: delete .venv and run 'make test' (or "
    "'bash scripts/setup.sh'), which builds with GGML_NATIVE=OFF and a fixed "
    "instruction set; to choose the set yourself, set ROLECALL_LLAMA_CMAKE_ARGS, "
    'e.g. "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"'
)


@dataclass
class ProbeResult:
    """What the child did: ``ok``, or how it died (``signal``) or failed (``error``)."""

    model: str
    ok: bool
    returncode: int | None
    seconds: float
    signal: str | None = None
    error: str | None = None
    fix: str | None = None
    answer: dict = field(default_factory=dict)
    system_info: str | None = None
    stderr_tail: str = ""

    @property
    def tokens_per_second(self) -> float | None:
        tokens, seconds = self.answer.get("tokens_out"), self.answer.get("generate_seconds")
        return round(tokens / seconds, 1) if tokens and seconds else None


def cpu_summary(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name and the features of ``FEATURES`` it has (Linux)."""
    name, flags = "unknown CPU", set()
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and name == "unknown CPU":
                name = value.strip()
            elif key.strip() == "flags":
                flags = set(value.split())
                break
    except OSError:
        return f"{name} (features unknown: no /proc/cpuinfo)"
    present = [f for f in FEATURES if f in flags]
    return f"{name}; features: {' '.join(present) or 'none of ' + ' '.join(FEATURES)}"


def build_summary() -> str:
    """How the installed llama-cpp-python was built, as recorded by scripts/setup.sh."""
    path = Path(sys.prefix) / BUILD_RECORD
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return (
            "not recorded: this llama-cpp-python was not built by scripts/setup.sh "
            "(a pip install from source builds for the build host's CPU, "
            "GGML_NATIVE=ON)"
        )
    return (
        f"llama-cpp-python {record.get('version')} {record.get('level')}: "
        f"{record.get('cmake_args')}"
    )


def _child_main(model: str) -> None:
    """In the child: report the build, load the model, complete one prompt, print JSON."""
    import faulthandler

    faulthandler.enable()
    from rolecall.errors import RolecallError
    from rolecall.llm import LLM, Request, SamplingParams, load_backend
    from rolecall.llm.registry import parse_model_string

    try:
        if parse_model_string(model).scheme == "llamacpp":
            import llama_cpp

            info = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
            print(json.dumps({"event": "system_info", "system_info": info}), flush=True)
        started = time.perf_counter()
        backend = load_backend(model)
        loaded = time.perf_counter()
        llm = LLM(backend, retries=0)
        completion = llm.complete(
            Request(prompt=PROMPT, params=SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS))
        )
    except RolecallError as exc:
        print(
            json.dumps(
                {"event": "error", "message": exc.message, "fix": exc.fix}, ensure_ascii=False
            ),
            flush=True,
        )
        sys.exit(1)
    done = time.perf_counter()
    print(
        json.dumps(
            {
                "event": "done",
                "model_id": llm.model_id,
                "text": completion.text,
                "tokens_out": completion.tokens_out,
                "load_seconds": round(loaded - started, 3),
                "generate_seconds": round(done - loaded, 3),
                "capabilities": sorted(k for k, v in backend.capabilities().items() if v),
            },
            ensure_ascii=False,
        ),
        flush=True,
    )


def probe_model(model: str | None = None, timeout: float = 300.0) -> ProbeResult:
    """Run one completion of ``model`` (default: the default model) in a child process."""
    from rolecall.llm.registry import default_model

    model = model or default_model()
    started = time.perf_counter()
    command = [sys.executable, "-X", "faulthandler", "-m", "rolecall.llm.probe", "--child", model]
    try:
        proc = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    except subprocess.TimeoutExpired:
        return ProbeResult(
            model,
            False,
            None,
            round(time.perf_counter() - started, 2),
            error=f"no answer within {timeout:.0f} s",
        )
    result = ProbeResult(
        model,
        False,
        proc.returncode,
        round(time.perf_counter() - started, 2),
        stderr_tail=_crash_report(proc.stderr),
    )
    for line in proc.stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("event") == "system_info":
            result.system_info = event["system_info"]
        elif event.get("event") == "done":
            result.answer = event
        elif event.get("event") == "error":
            result.error, result.fix = event["message"], event.get("fix")
    if proc.returncode < 0:
        result.signal = signal.Signals(-proc.returncode).name
    elif proc.returncode != 0 or not result.answer:
        result.error = (
            result.error or _last_error_line(proc.stderr) or f"exit status {proc.returncode}"
        )
    else:
        result.ok = True
    return result


def _crash_report(stderr: str, keep: int = 12) -> str:
    """faulthandler's report (from its "Fatal Python error" line), else the last lines."""
    lines = stderr.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Fatal Python error")]
    return "\n".join(lines[starts[0] : starts[0] + keep] if starts else lines[-keep:])


def _last_error_line(stderr: str) -> str | None:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if line.startswith(("error:", "rolecall.errors.")) or "Error" in line.split(":")[0]:
            return line
    return lines[-1] if lines else None


def explain(result: ProbeResult) -> list[str]:
    """The lines a person reads: what happened, on which CPU and build, and the fix."""
    if result.ok:
        answer = result.answer
        rate = result.tokens_per_second
        return [
            f"model {result.model}: OK ({answer.get('model_id')}) in {result.seconds} s, "
            f"load {answer.get('load_seconds')} s, {answer.get('tokens_out')} tokens"
            + (f" at {rate} tokens/s" if rate else "")
            + f" -> {answer.get('text')!r}"
        ]
    if result.signal:
        lines = [
            f"model {result.model}: the process running it was killed by {result.signal} "
            "(a crash inside the native library, not a Python error)"
        ]
    else:
        lines = [f"model {result.model}: FAILED: {result.error}"]
        if result.fix:
            return lines + [f"  fix: {result.fix}"]
    lines.append(f"  CPU:   {cpu_summary()}")
    lines.append(f"  build: {build_summary()}")
    if result.system_info:
        lines.append(f"  llama.cpp system info: {result.system_info}")
    if result.signal or (result.stderr_tail and "Fatal Python error" in result.stderr_tail):
        lines.append("  last lines of the child's output:")
        lines.extend(f"    {line}" for line in result.stderr_tail.splitlines())
        lines.append(f"  fix: {SETUP_FIX}")
    return lines


def signal_note(returncode: int) -> str | None:
    """A line for a shell that saw a command die with ``returncode`` > 128 (Makefile)."""
    if returncode <= 128:
        return None
    try:
        name = signal.Signals(returncode - 128).name
    except ValueError:
        return None
    return (
        f"rolecall died from {name}: a crash in a native library (llama.cpp, torch), "
        f"not a Python error. Run '.venv/bin/rolecall doctor' to test the model in a "
        f"child process; CPU: {cpu_summary()}; build: {build_summary()}"
    )


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:
        _child_main(args[1])
        return 0
    if args[:1] == ["--signal-note"]:
        note = signal_note(int(args[1]))
        if note:
            print(note, file=sys.stderr)
        return 0
    setup = "--setup" in args
    models = [a for a in args if not a.startswith("--")]
    result = probe_model(models[0] if models else None)
    stream = sys.stdout if result.ok else sys.stderr
    prefix = "set-up check: " if setup else ""
    for i, line in enumerate(explain(result)):
        print((prefix if i == 0 else "") + line, file=stream)
    if not result.ok and setup:
        print(
            "set-up failed: the embedded model does not run with this build on this "
            "machine (nothing else is wrong with the set-up)",
            file=sys.stderr,
        )
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())

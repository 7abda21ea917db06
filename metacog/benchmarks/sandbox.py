"""Run untrusted Python (model-written code) in a separate, resource-limited process.

Never in-process. Each run gets:

- a fresh temporary working directory, deleted afterwards;
- ``resource.setrlimit`` limits set in the child before it starts: CPU seconds,
  address space (memory), file size, no core dumps;
- a wall-clock timeout (the process group is killed when it expires);
- no network: a new network namespace (``unshare -n``, or ``unshare -rn`` as an
  unprivileged user) when the machine allows it, and in every case a socket
  guard installed before the code runs (``socket.socket`` and friends raise
  PermissionError) plus an environment without proxy variables;
- ``python -I`` (isolated mode: no user site-packages, PYTHON* variables ignored)
  and single-threaded BLAS.

This guards against accidents (runaway loops, memory blow-ups, stray network
calls), not against a determined adversary: the code runs as the same user.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BOOT = Path(__file__).with_name("_sandbox_boot.py")

#: Environment variables passed to the child (everything else, proxies included, is dropped).
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ")


@dataclass
class SandboxResult:
    """What happened in one sandboxed run."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    network_isolation: str  # 'netns' (unshare) or 'socket-guard'
    outputs: dict[str, bytes] = field(default_factory=dict)  # requested files read back

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def summary(self) -> str:
        state = "timed out" if self.timed_out else f"exit {self.returncode}"
        tail = self.stderr.strip().splitlines()[-1:] if self.stderr.strip() else []
        return f"sandbox: {state} after {self.seconds:.2f}s ({self.network_isolation})" + (
            f"; {tail[0]}" if tail else "")


@functools.lru_cache(maxsize=1)
def _unshare_prefix() -> tuple[str, ...]:
    """The command prefix that puts the child in a fresh network namespace, or ()."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    for prefix in ((exe, "-n"), (exe, "-rn")):
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return prefix
    return ()


def network_isolation() -> str:
    """'netns' when runs get their own network namespace, else 'socket-guard'."""
    return "netns" if _unshare_prefix() else "socket-guard"


def _limits(cpu_seconds: int, memory_mb: int, file_mb: int):
    def apply() -> None:
        os.setsid()  # own process group, so a timeout kills children too
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        mem = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        size = file_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


def run_script(script: str | Path, args: list[str] | None = None, **kw) -> SandboxResult:
    """Run the Python file ``script`` in the sandbox.

    Keywords: ``files`` (name -> bytes) are written into the working directory
    first; ``outputs`` names files read back afterwards (missing ones are left
    out); ``timeout`` (wall seconds; the CPU limit is the same, rounded up),
    ``memory_mb`` (address space), ``file_mb`` (largest file written);
    ``extra_path`` folders are put on the child's ``sys.path`` by the boot
    script (``-I`` ignores PYTHONPATH).
    """
    return _run(str(Path(script).resolve()), args, **kw)


def _run(script: str, args: list[str] | None = None, *,
         files: dict[str, bytes] | None = None, outputs: tuple[str, ...] = (),
         timeout: float = 60.0, memory_mb: int = 2048, file_mb: int = 64,
         extra_path: tuple[str, ...] = ()) -> SandboxResult:
    if timeout <= 0:
        raise ValueError(f"run_script: timeout must be positive, got {timeout}.")
    work = Path(tempfile.mkdtemp(prefix="metacog-sandbox-"))
    try:
        for name, data in (files or {}).items():
            (work / name).write_bytes(data)
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(HOME=str(work), TMPDIR=str(work), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1", MPLBACKEND="Agg", METACOG_SANDBOX_PATH=os.pathsep.join(extra_path))
        prefix = _unshare_prefix()
        cmd = [*prefix, sys.executable, "-I", str(BOOT), script, *(args or [])]
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                preexec_fn=_limits(int(timeout) + 1, memory_mb, file_mb))
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate()
        seconds = time.monotonic() - start
        # A CPU-limit kill (SIGXCPU / SIGKILL) is a timeout too.
        if proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and not timed_out:
            timed_out = seconds >= 0.5 * timeout or proc.returncode == -signal.SIGXCPU
        got = {n: (work / n).read_bytes() for n in outputs if (work / n).is_file()}
        return SandboxResult(proc.returncode, out.decode("utf-8", "replace"),
                             err.decode("utf-8", "replace"), timed_out, seconds,
                             "netns" if prefix else "socket-guard", got)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_code(code: str, **kw) -> SandboxResult:
    """Run a string of Python source in the sandbox (keywords as for :func:`run_script`)."""
    files = dict(kw.pop("files", None) or {})
    files["__main_code__.py"] = code.encode("utf-8")
    return _run("__main_code__.py", files=files, **kw)

"""Run untrusted Python (model-written code) sealed off from this process and this machine.

Never in-process. Each run is started, with an environment holding nothing but
PATH and the locale, as PID 1 of its own PID, mount, network and IPC namespaces
(``unshare``), from which :mod:`metacog.benchmarks._sandbox_init`:

- makes the whole host filesystem read-only; covers the checkout, /root, /home,
  the users' homes, the metacog caches and the data mirror with empty tmpfs,
  binding back read-only only the Python installation (even a venv inside the
  checkout) and the scripts it runs, so no answer key, API-key file or .git is
  readable;
- gives the run one size-limited tmpfs (``disk_mb``) that holds its work folder
  and its /tmp, /var/tmp, /dev/shm and /run/lock, and another for its stdout
  and stderr (twice the file cap, 128 MB at most): the total it writes is
  capped, and none of it reaches the disk;
- runs the code as a fresh unprivileged uid that owns only its work folder,
  with rlimits on CPU seconds, address space, file size and process count;
- sends its output to files (never pipes), and at exit or at the deadline
  kills every process in the namespace: no child, detached or not, outlives
  the run;
- optionally runs a trusted *judge* afterwards, as a separate process the
  untrusted code could never reach, which alone writes the verdict.

SysV shared memory, message queues and semaphores made inside live in the
run's IPC namespace and vanish with it. The network namespace has no
interfaces up, so sockets fail however they are made; a socket guard
(``_sandbox_boot``) also makes the first attempt fail with a clear
PermissionError. Where the namespaces or root are not available,
:func:`run_script` raises :class:`SandboxUnavailable` instead of running the
code unsafely.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BOOT = HERE / "_sandbox_boot.py"
INIT = HERE / "_sandbox_init.py"

#: Environment variables passed to the sandbox (everything else, keys and proxies included, is dropped).
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TZ")
_UNSHARE_FLAGS = ("--pid", "--fork", "--net", "--ipc", "--mount", "--mount-proc", "--kill-child")
#: World-writable folders that get a private, throw-away folder of the run's quota tmpfs.
SCRATCH = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")
_READ_CAP = 4 * 1024 * 1024


class SandboxUnavailable(RuntimeError):
    """This machine cannot seal a run (no root, or no PID/mount/network namespaces)."""


@dataclass
class Judge:
    """A trusted command run after the untrusted one, as root inside the namespaces.

    ``script`` runs with ``private/`` as its working folder, where ``files`` are
    written first and the untrusted run's requested outputs are copied to
    ``out/`` (regular files only); ``outputs`` names the files it writes there.
    """

    script: str | Path
    args: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    timeout: float = 120.0


@dataclass
class SandboxResult:
    """What happened in one sandboxed run."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float
    network_isolation: str  # 'netns'
    outputs: dict[str, bytes] = field(default_factory=dict)  # requested files read back
    uid: int = -1  # the unprivileged uid the code ran as
    disk_bytes: int = 0  # bytes held in the run's quota tmpfs at its end
    disk_full: bool = False  # the quota (``disk_mb``) was used up at the end of the run
    judge_returncode: int | None = None
    judge_stderr: str = ""
    judge_outputs: dict[str, bytes] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        state = "timed out" if self.timed_out else f"exit {self.returncode}"
        tail = self.stderr.strip().splitlines()[-1:] if self.stderr.strip() else []
        full = "; disk quota full" if self.disk_full else ""
        return f"sandbox: {state} after {self.seconds:.2f}s ({self.network_isolation}){full}" + (
            f"; {tail[0]}" if tail else "")


@functools.lru_cache(maxsize=1)
def _probe() -> tuple[bool, str]:
    if not sys.platform.startswith("linux"):
        return False, f"needs Linux namespaces (this is {sys.platform})"
    if os.geteuid() != 0:
        return False, ("needs root, to run the code as a throw-away unprivileged uid inside its own "
                       "PID, mount, network and IPC namespaces")
    exe = shutil.which("unshare")
    if not exe:
        return False, "`unshare` (util-linux) is not installed"
    try:
        done = subprocess.run([exe, *_UNSHARE_FLAGS, "true"], capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"`unshare {' '.join(_UNSHARE_FLAGS)} true` failed: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        return False, f"`unshare {' '.join(_UNSHARE_FLAGS)} true` failed: {why[0]}"
    return True, ""


def available() -> tuple[bool, str]:
    """(True, '') when runs can be sealed here, else (False, the reason)."""
    return _probe()


def network_isolation() -> str:
    """'netns' when runs get their own network namespace, else 'unavailable'."""
    return "netns" if available()[0] else "unavailable"


def require() -> None:
    """Raise :class:`SandboxUnavailable` (with the reason and the way out) unless runs can be sealed."""
    ok, why = available()
    if not ok:
        raise SandboxUnavailable(
            f"the code sandbox {why}; refusing to run untrusted code without it. Run as root on a "
            "Linux machine where `unshare --pid --fork --net --ipc --mount --mount-proc true` works "
            "(in a container: --privileged or CAP_SYS_ADMIN), or leave code benchmarks (SciCode) out.")


#: Folders never covered whole, whatever a home or setting says (they hold the system).
_SYSTEM = frozenset({"/", "/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/opt",
                     "/proc", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var"})


def checkout() -> Path | None:
    """The source checkout this package runs from (the folder holding .git), if any."""
    for folder in HERE.parents:
        if (folder / ".git").exists():
            return folder
    return None


def _hidden() -> list[str]:
    import pwd

    from metacog.data.fetch import cache_dir

    paths = {str(Path.home()), "/root", "/home", str(cache_dir())}
    paths |= {u.pw_dir for u in pwd.getpwall() if u.pw_uid >= 1000 and u.pw_dir.startswith("/")}
    if os.environ.get("METACOG_DATA_MIRROR"):
        paths.add(os.environ["METACOG_DATA_MIRROR"])
    if checkout() is not None:
        paths.add(str(checkout()))
    real = {os.path.realpath(p) for p in paths}
    return sorted(p for p in real if p not in _SYSTEM and os.path.isdir(p))


def _exposed(*scripts: str) -> list[str]:
    """What the run may read inside hidden folders: the Python installation and the scripts it runs."""
    paths = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable)), str(BOOT)}
    paths |= {s for s in scripts if os.path.isabs(s)}
    return sorted(os.path.realpath(p) for p in paths)


def _copy_sources(folders: tuple[str, ...], lib: Path) -> None:
    """Copy the .py files (only) of ``folders`` into ``lib``: helpers without their data files."""
    for folder in folders:
        root = Path(folder)
        for src in root.rglob("*.py"):
            dest = lib / src.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.chmod(dest.parent, 0o755)
            shutil.copyfile(src, dest)
            os.chmod(dest, 0o644)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def _read(path: Path, cap: int = _READ_CAP) -> bytes:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - cap))
            return fh.read(cap)
    except OSError:
        return b""


def run_script(script: str | Path, args: list[str] | None = None, **kw) -> SandboxResult:
    """Run the Python file ``script`` sealed; returns a :class:`SandboxResult`.

    Keywords: ``files`` (name -> bytes) are written into the work folder first;
    ``outputs`` names files read back afterwards (regular files only; missing
    ones are left out); ``timeout`` (wall seconds; the CPU limit is the same,
    rounded up), ``memory_mb`` (address space), ``file_mb`` (largest file
    written), ``disk_mb`` (all bytes written, the work folder and /tmp together;
    default the larger of 64 and ``file_mb``), ``max_procs`` (processes the run
    may have at once);
    ``extra_path`` folders whose .py files are copied (read-only) onto the
    run's ``sys.path``; ``judge`` a :class:`Judge` run afterwards.
    Raises :class:`SandboxUnavailable` where runs cannot be sealed.
    """
    return _run(str(Path(script).resolve()), args, **kw)


def run_code(code: str, **kw) -> SandboxResult:
    """Run a string of Python source sealed (keywords as for :func:`run_script`)."""
    files = dict(kw.pop("files", None) or {})
    files["__main_code__.py"] = code.encode("utf-8")
    return _run("__main_code__.py", files=files, **kw)


def _run(script: str, args: list[str] | None = None, *,
         files: dict[str, bytes] | None = None, outputs: tuple[str, ...] = (),
         timeout: float = 60.0, memory_mb: int = 2048, file_mb: int = 64, max_procs: int = 64,
         disk_mb: int | None = None, extra_path: tuple[str, ...] = (),
         judge: Judge | None = None) -> SandboxResult:
    if timeout <= 0:
        raise ValueError(f"run_script: timeout must be positive, got {timeout}.")
    disk_mb = max(64, int(file_mb)) if disk_mb is None else int(disk_mb)
    if disk_mb < 1:
        raise ValueError(f"run_script: disk_mb must be at least 1, got {disk_mb}.")
    require()
    uid = 1_000_000 + secrets.randbelow(1_000_000)
    work = Path(tempfile.mkdtemp(prefix="metacog-sandbox-"))
    try:
        os.chmod(work, 0o711)  # the uid may pass through to box/ and lib/, never list or write here
        box, private, lib = work / "box", work / "private", work / "lib"
        private.mkdir(mode=0o700)
        lib.mkdir(mode=0o755)
        box.mkdir(mode=0o700)  # mount points: box/ gets the quota tmpfs's box, quota/ the tmpfs
        (work / "quota").mkdir(mode=0o700)
        (work / "streams").mkdir(mode=0o700)
        (private / "in").mkdir(mode=0o700)
        for name, data in (files or {}).items():
            if "/" in name or name in ("", ".", ".."):
                raise ValueError(f"run_script: file names are plain names, got {name!r}.")
            _write_private(private / "in" / name, data)
        _copy_sources(extra_path, lib)
        env = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   MPLBACKEND="Agg", METACOG_SANDBOX_PATH=str(lib))
        spec = {
            "work": str(work), "box": str(box), "private": str(private), "uid": uid, "gid": uid,
            "cmd": [sys.executable, "-I", str(BOOT), script, *(args or [])],
            "env": {**env, "HOME": str(box), "TMPDIR": str(box)},
            "timeout": float(timeout), "cpu_seconds": int(timeout) + 1, "memory_mb": int(memory_mb),
            "file_mb": int(file_mb), "max_procs": int(max_procs), "outputs": list(outputs),
            "disk_mb": disk_mb, "stream_mb": min(64, int(file_mb)), "stream_cap": _READ_CAP,
            "hide": _hidden(), "scratch": list(SCRATCH),
            "expose": _exposed(script, *([str(Path(judge.script).resolve())] if judge else [])),
        }
        if judge is not None:
            for name, data in judge.files.items():
                _write_private(private / name, data)
            spec["judge"] = {"cmd": [sys.executable, "-I", str(Path(judge.script).resolve()),
                                     *judge.args], "timeout": float(judge.timeout)}
            spec["judge_env"] = {**env, "HOME": str(private), "TMPDIR": str(private)}
        _write_private(private / "spec.json", json.dumps(spec).encode())
        clean = {k: os.environ[k] for k in _KEEP_ENV if k in os.environ}
        limit = timeout + (judge.timeout if judge else 0) + 30
        with open(private / "init.log", "wb") as log:
            proc = subprocess.Popen([shutil.which("unshare"), *_UNSHARE_FLAGS, sys.executable, "-I",
                                     str(INIT), str(private / "spec.json")], env=clean,
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, close_fds=True)
            try:
                proc.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # --kill-child takes the namespace down with it
                proc.wait()
        try:
            status = json.loads((private / "status.json").read_text())
        except (OSError, ValueError):
            status = {"error": "the sandbox init wrote no status: "
                      + _read(private / "init.log", 2000).decode("utf-8", "replace").strip()}
        if status.get("error"):
            raise RuntimeError(f"sandbox: {status['error']} (stage {status.get('stage', '?')})")
        text = lambda name: _read(private / name).decode("utf-8", "replace")  # noqa: E731
        cap = int(file_mb) * 1024 * 1024  # outputs whole (the run could not write more)
        got = {n: _read(private / "out" / n, cap) for n in status.get("outputs", [])}
        judged = {n: _read(private / n, cap) for n in (judge.outputs if judge else ())
                  if (private / n).is_file()}
        return SandboxResult(status.get("returncode"), text("stdout"), text("stderr"),
                             bool(status.get("timed_out")), float(status.get("seconds", 0.0)), "netns",
                             got, uid, int(status.get("disk_bytes", 0)), bool(status.get("disk_full")),
                             status.get("judge_returncode"), text("judge.stderr"), judged)
    finally:
        shutil.rmtree(work, ignore_errors=True)

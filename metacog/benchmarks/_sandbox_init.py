"""PID 1 of a sealed sandbox run: executed ONLY by metacog.benchmarks.sandbox, under
``unshare --pid --fork --net --mount --mount-proc``, as root, with a clean environment.

Reads ``spec.json`` (its only argument), then:

1. mounts empty tmpfs over the hidden folders (the user's home, the metacog
   caches) and over the world-writable ones (/tmp, /var/tmp, /dev/shm, ...),
   binding back read-only only what Python needs and the run's work folder;
2. runs the untrusted command as an unprivileged uid that owns nothing but
   ``box/``, with rlimits (CPU, address space, file size, process count) and
   its output going to files, not pipes;
3. on exit or at the deadline kills every process in the namespace, so no
   child outlives the run;
4. copies the requested output files (regular files only, size-capped) into
   ``private/out/``, which the untrusted code could never write;
5. optionally runs a trusted *judge* command (as root, still without network)
   that reads those copies and writes its verdict into ``private/``;
6. writes ``private/status.json``.

Not imported by the package.
"""

import ctypes
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype, flags, data=None):
    enc = (lambda s: None if s is None else s.encode())
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def seal(spec):
    """Hide and cover folders, then bind back what must stay visible (same paths)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    covers = [p for p in spec["hide"] + spec["scratch"] if os.path.isdir(p)]
    keep = {}
    for p in spec["expose"] + [spec["work"]]:
        if os.path.exists(p) and _under(p, covers):
            keep[p] = os.open(p, os.O_PATH)
    for p in spec["hide"]:
        if os.path.isdir(p):
            _mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=16m")
    for p in spec["scratch"]:
        if os.path.isdir(p):
            _mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m")
    for p, fd in sorted(keep.items()):
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "a").close()
        _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
        if p != spec["work"]:
            _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)
        os.close(fd)


def _limits(spec, nproc):
    def apply():
        cpu = int(spec["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        mem = int(spec["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        size = int(spec["file_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if nproc:
            resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    return apply


def kill_all():
    """SIGKILL every other process of this PID namespace and reap them."""
    try:
        os.kill(-1, signal.SIGKILL)
    except ProcessLookupError:
        pass
    while True:
        try:
            pid, _ = os.waitpid(-1, 0)
        except ChildProcessError:
            return


def run(cmd, cwd, env, stdout, stderr, timeout, limits, user=None):
    """Run ``cmd`` to its end or the deadline; (returncode, timed_out, seconds). Kills all after."""
    kw = {} if user is None else {"user": user[0], "group": user[1], "extra_groups": []}
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, preexec_fn=limits, umask=0o077, **kw)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.kill()
            proc.wait()
        seconds = time.monotonic() - start
        kill_all()  # whatever it left behind, detached or not
    rc = proc.returncode
    if rc in (-signal.SIGXCPU, -signal.SIGKILL) and not timed_out:
        timed_out = rc == -signal.SIGXCPU or seconds >= 0.5 * timeout
    return rc, timed_out, seconds


def copy_out(box, names, dest, limit):
    """Copy box/<name> (regular files only, no symlinks, at most ``limit`` bytes) into dest."""
    got = []
    for name in names:
        if "/" in name or name.startswith("."):
            continue
        try:
            fd = os.open(os.path.join(box, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                continue
            with os.fdopen(fd, "rb", closefd=False) as fh, open(os.path.join(dest, name), "wb") as out:
                out.write(fh.read(limit))
            got.append(name)
        finally:
            os.close(fd)
    return got


def main():
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    private, box = spec["private"], spec["box"]
    status = {"stage": "seal"}
    try:
        seal(spec)
        status["stage"] = "run"
        user = (spec["uid"], spec["gid"])
        rc, timed_out, seconds = run(spec["cmd"], box, spec["env"], os.path.join(private, "stdout"),
                                     os.path.join(private, "stderr"), spec["timeout"],
                                     _limits(spec, spec["max_procs"]), user)
        status.update(returncode=rc, timed_out=timed_out, seconds=seconds)
        out = os.path.join(private, "out")
        os.makedirs(out, exist_ok=True)
        status["outputs"] = copy_out(box, spec["outputs"], out, int(spec["file_mb"]) * 1024 * 1024)
        judge = spec.get("judge")
        if judge:
            status["stage"] = "judge"
            jrc, jto, jsec = run(judge["cmd"], private, spec["judge_env"],
                                 os.path.join(private, "judge.stdout"),
                                 os.path.join(private, "judge.stderr"), judge["timeout"],
                                 _limits(spec, 0))
            status.update(judge_returncode=jrc, judge_timed_out=jto, judge_seconds=jsec)
        status["stage"] = "done"
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises
        status["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        kill_all()
        with open(os.path.join(private, "status.json"), "w") as fh:
            json.dump(status, fh)


if __name__ == "__main__":
    main()

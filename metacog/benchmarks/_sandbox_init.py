"""PID 1 of a sealed sandbox run: executed ONLY by metacog.benchmarks.sandbox, under
``unshare --pid --fork --net --ipc --mount --mount-proc``, as root, with a clean environment.

Reads ``spec.json`` (its only argument), then:

1. makes every mount read-only, puts one size-limited tmpfs (the disk quota)
   under ``box/`` and the world-writable folders (/tmp, /var/tmp, /dev/shm, ...),
   mounts empty tmpfs over the hidden folders (the checkout, homes, the metacog
   caches), binding back read-only only what Python needs (see :func:`seal`);
2. runs the untrusted command as an unprivileged uid that owns nothing but
   ``box/``, with rlimits (CPU, address space, file size, process count) and
   its stdout and stderr going to files (not pipes) in a tmpfs of their own,
   whose tails are copied out;
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
import re
import resource
import signal
import stat
import subprocess
import sys
import time

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = (
    1, 2, 4, 8, 32, 4096, 16384, 1 << 18)
#: Per-mount options kept when a mount is made read-only (mountinfo name -> flag).
_KEEP_OPTS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024,
              "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(source, target, fstype, flags, data=None):
    enc = (lambda s: None if s is None else s.encode())
    if _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _under(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _mounts():
    """(mount point, per-mount option flags) of every mount visible here, outermost first."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
            flags = sum(_KEEP_OPTS.get(o, 0) for o in fields[5].split(","))
            out.append((point, flags))
    return sorted(set(out), key=lambda pf: (pf[0].count("/"), pf[0]))


def read_only_everywhere():
    """Remount every mount of this (private) namespace read-only, keeping its other options."""
    for point, flags in _mounts():
        if os.path.exists(point):
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _quota(spec):
    """The one size-limited tmpfs that takes every byte the run writes: box/ and the scratch folders.

    Mounted on work/quota; holds box/ (the uid's, with the input files copied in) and one
    sticky world-writable folder per scratch path. Returns an O_PATH fd on its root.
    """
    root = os.path.join(spec["work"], "quota")
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode=711,size={int(spec['disk_mb'])}m,nr_inodes=65536")
    box = os.path.join(root, "box")
    os.mkdir(box, 0o700)
    inputs = os.path.join(spec["private"], "in")
    for name in sorted(os.listdir(inputs)):
        dest = os.path.join(box, name)
        with open(os.path.join(inputs, name), "rb") as src, open(dest, "wb") as out:
            out.write(src.read())
        os.chown(dest, spec["uid"], spec["gid"])
    os.chown(box, spec["uid"], spec["gid"])
    _mount(box, spec["box"], None, MS_BIND)
    for i, _ in enumerate(spec["scratch"]):
        os.mkdir(os.path.join(root, f"scratch{i}"))
        os.chmod(os.path.join(root, f"scratch{i}"), 0o1777)
    return os.open(root, os.O_PATH)


def seal(spec):
    """Make the host read-only, hide folders, cap writes, then bind back what must stay visible.

    1. every mount read-only (in this private mount namespace only);
    2. the quota tmpfs (see :func:`_quota`) on box/ and on /tmp, /var/tmp, /dev/shm, ...,
       and a small tmpfs for the run's stdout and stderr;
    3. empty read-only tmpfs over the hidden folders (the checkout, homes, caches);
    4. bind back, read-only at the same paths, what Python needs (its installation, the
       scripts to run), and the work folder itself, writable (its private/ is root's alone).
    """
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    read_only_everywhere()
    qfd = _quota(spec)
    # stdout and stderr: apart from the quota, so a run that fills it can still say so;
    # root's alone (mode 700), each file capped by RLIMIT_FSIZE, together by the size
    _mount("tmpfs", os.path.join(spec["work"], "streams"), "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode=700,size={2 * int(spec['stream_mb'])}m,nr_inodes=16")
    # a folder to hide that lies under a scratch folder (a checkout under /tmp) is already covered
    # by that folder's fresh tmpfs; mounting over it again fails (EINVAL), so it is left out
    spec["hide"] = [p for p in spec["hide"] if not _under(p, spec["scratch"])]
    covers = [p for p in spec["hide"] + spec["scratch"] if os.path.isdir(p)]
    keep = {}
    for p in spec["expose"] + [spec["work"]]:
        if os.path.exists(p) and _under(p, covers):
            keep[p] = os.open(p, os.O_PATH)
    for i, p in enumerate(spec["scratch"]):
        if os.path.isdir(p):
            _mount(f"/proc/self/fd/{qfd}/scratch{i}", p, None, MS_BIND)
    for p in spec["hide"]:
        if os.path.isdir(p):
            _mount("tmpfs", p, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755,size=1m")
    for p, fd in sorted(keep.items()):
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(p, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(p), exist_ok=True)
            open(p, "a").close()
        _mount(f"/proc/self/fd/{fd}", p, None, MS_BIND | MS_REC)
        os.close(fd)
    if spec["work"] not in keep:  # not under a cover: still read-only from step 1
        _mount(spec["work"], spec["work"], None, MS_BIND | MS_REC)
    _mount(None, spec["work"], None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV)
    for p in spec["hide"]:
        if os.path.isdir(p):
            _mount(None, p, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.close(qfd)


def disk_use(spec):
    """(bytes used, full?) of the quota tmpfs at the end of the run."""
    st = os.statvfs(os.path.join(spec["work"], "quota"))
    used = (st.f_blocks - st.f_bfree) * st.f_frsize
    return used, st.f_bavail * st.f_frsize < max(1 << 20, st.f_blocks * st.f_frsize // 100)


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


def copy_tail(src, dest, cap):
    """Copy the last ``cap`` bytes of ``src`` to ``dest``."""
    with open(src, "rb") as fh, open(dest, "wb") as out:
        fh.seek(max(0, os.fstat(fh.fileno()).st_size - cap))
        out.write(fh.read(cap))


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
        streams = os.path.join(spec["work"], "streams")  # a tmpfs of their own: see seal()
        rc, timed_out, seconds = run(spec["cmd"], box, spec["env"], os.path.join(streams, "stdout"),
                                     os.path.join(streams, "stderr"), spec["timeout"],
                                     _limits(spec, spec["max_procs"]), user)
        status.update(returncode=rc, timed_out=timed_out, seconds=seconds)
        status["disk_bytes"], status["disk_full"] = disk_use(spec)
        for name in ("stdout", "stderr"):
            copy_tail(os.path.join(streams, name), os.path.join(private, name), int(spec["stream_cap"]))
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

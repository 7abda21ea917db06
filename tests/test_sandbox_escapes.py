"""The sealed sandbox against the escapes of issues #16 and #27.

Each test runs hostile code and checks, from the host, that it got nowhere:
a detached child that outlives the limit, the parent's environment through
/proc, a forged verdict from the stack, the network through a re-imported
_socket or a child python, a fork bomb, a write outside the work folder,
SysV shared memory / message queues / semaphores left for the host, the
checkout's .git/config, a world-writable host file, and a disk filled with
files each under the per-file cap.
Where the machine cannot make the namespaces, the sandbox refuses to run (one
test checks the refusal) and the others are skipped with the reason.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import socket
import textwrap
import threading
import time
from pathlib import Path

import pytest

from metacog.benchmarks import sandbox

ROOT = Path(__file__).resolve().parents[1]
_OK, _WHY = sandbox.available()
sealed = pytest.mark.skipif(not _OK, reason=f"sealed sandbox unavailable here: {_WHY}")


def _procs_of(uid: int) -> list[int]:
    """Host pids whose real uid is ``uid``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            for line in (d / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    if int(line.split()[1]) == uid:
                        out.append(int(d.name))
                    break
        except OSError:
            continue
    return out


def _scicode():
    from metacog.benchmarks import scicode

    try:
        scicode.package_dir()
    except (FileNotFoundError, OSError) as exc:
        pytest.skip(f"nvidia-scicode wheel unavailable: {exc}")
    return scicode


def test_refuses_clearly_when_namespaces_are_missing(monkeypatch):
    monkeypatch.setattr(sandbox, "available", lambda: (False, "unshare: operation not permitted"))
    with pytest.raises(sandbox.SandboxUnavailable, match="refusing to run untrusted code"):
        sandbox.run_code("print(1)")


@sealed
def test_detached_children_die_with_the_limit():
    code = textwrap.dedent("""
        import subprocess, time
        subprocess.Popen(['sleep', '45'], start_new_session=True)
        subprocess.Popen(['sleep', 'infinity'], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print('spawned', flush=True)
        time.sleep(60)
    """)
    res = sandbox.run_code(code, timeout=3)
    assert res.timed_out and "spawned" in res.stdout  # cut at its timeout, not after its 60 s sleep
    assert _procs_of(res.uid) == []


@sealed
def test_detached_child_of_a_finished_run_is_killed_at_once():
    code = "import subprocess\nsubprocess.Popen(['sleep', '45'], start_new_session=True)\nprint('bye')\n"
    res = sandbox.run_code(code, timeout=20)
    # not timed out: the run ended with its own process instead of waiting out the 45 s child
    assert res.ok and not res.timed_out and res.stdout.strip() == "bye"
    assert _procs_of(res.uid) == []


@sealed
def test_parent_environment_is_out_of_reach(monkeypatch):
    canary = "canary" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    code = textwrap.dedent("""
        import os
        seen = []
        for pid in [os.getppid(), 1] + [int(p) for p in os.listdir('/proc') if p.isdigit()]:
            try:
                seen.append(open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1'))
            except OSError as exc:
                seen.append(type(exc).__name__)
        print(os.environ.get('OPENAI_API_KEY'), '|'.join(seen))
    """)
    res = sandbox.run_code(code)
    assert res.returncode == 0, res.stderr
    assert canary not in res.stdout and canary not in res.stderr
    assert res.stdout.startswith("None ")


@sealed
def test_network_closed_even_to_reimported_socket_and_child_python():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    port = srv.getsockname()[1]
    hits = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                hits.append(1)
                conn.close()
            except OSError:
                pass

    th = threading.Thread(target=accept, daemon=True)
    th.start()
    code = textwrap.dedent(f"""
        import subprocess, sys
        del sys.modules['_socket']
        import _socket
        s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
        try:
            s.connect(('127.0.0.1', {port}))
            print('reimport: connected')
        except OSError as exc:
            print('reimport: blocked', type(exc).__name__)
        probe = "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('child: connected')"
        done = subprocess.run([sys.executable, '-c', probe], capture_output=True, text=True)
        print(done.stdout.strip() or 'child: blocked')
    """)
    try:
        res = sandbox.run_code(code, timeout=20)
    finally:
        stop.set()
        th.join(2)
        srv.close()
    assert "reimport: blocked" in res.stdout and "child: blocked" in res.stdout, res.stdout + res.stderr
    assert hits == []


@sealed
def test_fork_bomb_is_capped_and_cleaned_up():
    code = textwrap.dedent("""
        import os, sys, time
        made = 0
        try:
            for _ in range(10000):
                pid = os.fork()
                if pid == 0:
                    time.sleep(30)
                    os._exit(0)
                made += 1
        except OSError as exc:
            print('stopped after', made, type(exc).__name__, flush=True)
        os._exit(0)
    """)
    res = sandbox.run_code(code, timeout=10, max_procs=32)
    assert not res.timed_out  # ended with its parent, not by waiting out the 30 s children
    assert "stopped after" in res.stdout, res.stdout + res.stderr
    made = int(res.stdout.split("stopped after")[1].split()[0])
    assert made < 32
    assert _procs_of(res.uid) == []


@sealed
def test_writes_outside_the_work_folder_do_not_land(tmp_path):
    token = secrets.token_hex(8)
    targets = [f"/tmp/escape-{token}", str(Path.cwd() / f"escape-{token}"), f"/root/escape-{token}",
               f"/var/tmp/escape-{token}", f"/dev/shm/escape-{token}", str(tmp_path / f"escape-{token}")]
    code = textwrap.dedent(f"""
        import os
        for p in {targets!r} + [os.path.join(os.path.dirname(os.getcwd()), 'escape-{token}')]:
            try:
                open(p, 'w').write('x')
                print('wrote', p)
            except OSError as exc:
                print('refused', p, type(exc).__name__)
        open('inside.txt', 'w').write('fine')
    """)
    res = sandbox.run_code(code, outputs=("inside.txt",))
    assert res.ok, res.stderr
    assert res.outputs == {"inside.txt": b"fine"}
    for p in targets:
        assert not Path(p).exists(), f"{p} was written from inside the sandbox"


@sealed
def test_stack_walk_cannot_forge_a_scicode_pass():
    sc = _scicode()
    item = sc.load_items()[0]  # 10.1 get_alpha, 4 tests
    forger = textwrap.dedent("""
        import gc, json, os, sys
        found = []
        f = sys._getframe()
        while f is not None:
            for scope in (f.f_locals, f.f_globals):
                for name in ('job', 'nonce', 'targets', 'target'):
                    if name in scope:
                        found.append(name)
            f = f.f_back
        for obj in gc.get_objects():
            if isinstance(obj, dict) and ('nonce' in obj or 'targets' in obj):
                found.append('gc')
        fake = {'nonce': '', 'tests': [{'passed': True, 'error': ''}] * 4}
        for place in ('result.json', '../result.json', '../private/result.json', '../private/verdict.json'):
            try:
                with open(place, 'w') as fh:
                    json.dump(fake, fh)
            except OSError:
                pass
        print('FOUND', sorted(set(found)), file=sys.stderr)

        def get_alpha(recvec, alpha_scaling=5):
            g = globals()
            return g.get('target', 0.0)
    """)
    res = sc.run_tests(item, forger)
    assert not res.passed and res.n_passed == 0, res.describe()


@sealed
def test_patching_the_comparison_cannot_forge_a_scicode_pass():
    sc = _scicode()
    item = sc.load_items()[0]
    patcher = textwrap.dedent("""
        import builtins, numpy
        numpy.allclose = lambda *a, **k: True
        numpy.array_equal = lambda *a, **k: True
        builtins.AssertionError = type('Never', (Exception,), {})

        def get_alpha(recvec, alpha_scaling=5):
            return -1.0
    """)
    res = sc.run_tests(item, patcher)
    assert not res.passed and res.n_passed == 0, res.describe()
    assert sc.run_tests(item, item.gold).passed  # the same step passes with the reference


def _sysv_keys() -> dict[str, set[int]]:
    """Keys of the host's SysV shared memory segments, message queues and semaphore sets."""
    keys = {}
    for kind in ("shm", "msg", "sem"):
        lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        keys[kind] = {int(line.split()[0]) for line in lines if line.strip()}
    return keys


_IPC_MAKER = """
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
key, token = int(sys.argv[1]), sys.argv[2].encode()
shm = libc.shmget(key, 4096, 0o1666)            # IPC_CREAT | 0666
addr = libc.shmat(shm, None, 0)
ctypes.memmove(addr, token, len(token))
msq = libc.msgget(key, 0o1666)
class Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]
sent = libc.msgsnd(msq, ctypes.byref(Msg(1, token)), len(token), 0)
sem = libc.semget(key, 1, 0o1666)
print("made", shm, msq, sem, sent, flush=True)
time.sleep(float(sys.argv[3]))
"""


@sealed
def test_sysv_ipc_made_inside_never_reaches_the_host():
    key = secrets.randbelow(2**31 - 2) + 1
    token = "ipc" + secrets.token_hex(8)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    seen_during: list[str] = []
    box: dict = {}
    th = threading.Thread(
        target=lambda: box.update(res=sandbox.run_code(_IPC_MAKER, args=[str(key), token, "2"])))
    th.start()
    while th.is_alive():  # look while the run holds its objects, not only after
        seen_during += [kind for kind, keys in _sysv_keys().items() if key in keys]
        th.join(0.05)
    res = box["res"]
    after = {kind for kind, keys in _sysv_keys().items() if key in keys}
    leaked = ""
    shm = libc.shmget(key, 0, 0)
    shm_errno = ctypes.get_errno()
    if shm >= 0:  # the old sandbox: the host reads what the code wrote, then cleans up
        leaked = ctypes.string_at(libc.shmat(shm, None, 0), len(token)).decode("latin-1")
        libc.shmctl(shm, 0, None)  # IPC_RMID
    for get, rm in ((lambda: libc.msgget(key, 0), libc.msgctl), (lambda: libc.semget(key, 0, 0), None)):
        ident = get()
        if ident >= 0:
            rm(ident, 0, None) if rm else libc.semctl(ident, 0, 0)
    # the run did make all three objects (in its own namespace)...
    made = res.stdout.split()
    assert res.ok and made[0] == "made" and all(int(x) >= 0 for x in made[1:4]), res.stdout + res.stderr
    assert int(made[4]) == 0
    # ...and the host never saw them, during the run or after
    assert token not in leaked, f"the host read {leaked!r} from the run's shared memory"
    assert seen_during == [] and after == set(), (sorted(set(seen_during)), after)
    assert shm == -1 and shm_errno == errno.ENOENT


@sealed
def test_checkout_is_hidden_but_python_and_numpy_still_load():
    secrets_to_try = [ROOT / ".git" / "config", ROOT / "README.md",
                      ROOT / "notebooks" / "manifest.yml", ROOT / "metacog" / "benchmarks" / "scicode.py"]
    code = textwrap.dedent(f"""
        import os, numpy, scipy.special
        for p in {[str(p) for p in secrets_to_try]!r}:
            try:
                print('read', p, len(open(p, 'rb').read()))
            except OSError as exc:
                print('refused', p, type(exc).__name__)
        print('checkout holds', sorted(os.listdir({str(ROOT)!r})))
        print('numpy', float(scipy.special.gamma(5)))
    """)
    assert (ROOT / ".git" / "config").is_file()  # readable here, on the host
    res = sandbox.run_code(code)
    assert res.ok, res.stderr
    for p in secrets_to_try:
        assert f"refused {p} FileNotFoundError" in res.stdout, res.stdout
    assert "numpy 24.0" in res.stdout
    listed = res.stdout.split("checkout holds")[1].splitlines()[0]
    assert ".git" not in listed and "README.md" not in listed


@sealed
def test_host_filesystem_is_read_only_even_where_the_uid_may_write():
    token = secrets.token_hex(8)
    # world-writable, on no covered path: beside the filesystem root, since the checkout itself may lie
    # under /tmp, which the sandbox replaces with its own scratch tmpfs
    open_dir = Path("/") / f".sandbox-escape-{token}"
    open_dir.mkdir(mode=0o777)
    os.chmod(open_dir, 0o1777)
    victim = open_dir / "victim.txt"
    victim.write_text("original")
    os.chmod(victim, 0o666)
    code = textwrap.dedent(f"""
        import errno
        for p, mode in (({str(victim)!r}, 'a'), ({str(open_dir / 'new.txt')!r}, 'w')):
            try:
                open(p, mode).write('forged')
                print('wrote', p)
            except OSError as exc:
                print('refused', p, errno.errorcode[exc.errno])
        open('inside.txt', 'w').write('fine')
    """)
    try:
        res = sandbox.run_code(code, outputs=("inside.txt",))
        assert res.ok and res.outputs == {"inside.txt": b"fine"}, res.stderr
        assert res.stdout.count("EROFS") == 2, res.stdout  # the mount refuses, not the permissions
        assert victim.read_text() == "original" and sorted(os.listdir(open_dir)) == ["victim.txt"]
    finally:
        for f in open_dir.iterdir():
            f.unlink()
        open_dir.rmdir()


@sealed
def test_total_writes_are_capped_by_the_disk_quota():
    code = textwrap.dedent("""
        import errno, os
        chunk = b'x' * (1 << 20)
        whole = []
        for i in range(12):  # 12 x 60 MB, each under the 64 MB file cap; box, /tmp, /dev/shm share the quota
            path = (f'big{i}', f'/tmp/big{i}', f'/dev/shm/big{i}')[i % 3]
            try:
                with open(path, 'wb') as fh:
                    for _ in range(60):
                        fh.write(chunk)
                whole.append(path)
            except OSError as exc:
                print('failed', path, errno.errorcode[exc.errno])
        print('whole', len(whole))
    """)
    res = sandbox.run_code(code, file_mb=64)  # disk_mb defaults to 64
    assert res.ok, res.stderr
    assert "whole 1" in res.stdout and res.stdout.count("ENOSPC") == 11, res.stdout
    assert res.disk_full and res.disk_bytes <= 64 * 1024 * 1024 and "disk quota full" in res.describe()
    # the per-file cap still holds under a larger quota
    one = sandbox.run_code("import errno\ntry:\n    open('f', 'wb').write(b'x' * (9 << 20))\n"
                           "except OSError as exc:\n    print(errno.errorcode[exc.errno])\n",
                           file_mb=8, disk_mb=64)
    assert one.stdout.strip() == "EFBIG" and not one.disk_full, one.stdout + one.stderr
    # and the output streams are capped too (128 MB together, whatever the file cap): 140 MB fails
    loud = sandbox.run_code("import sys\nsys.stdout.write('y' * (140 << 20))\n", file_mb=512)
    assert loud.returncode != 0 and 0 < len(loud.stdout) <= 4 * 1024 * 1024

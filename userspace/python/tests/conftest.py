# SPDX-License-Identifier: GPL-2.0
"""pytest environment of the fluxonkv Python package.

Tests that take the ``kv`` (or ``fluxon_env``) fixture need the real module
and daemon: they run only as root inside the test VM (FLUXON_VM=1, set by
tools/vm/run) with the paths selftests/run_tests exports:

  FLUXONKV_KO     kmod/fluxonkv.ko
  FLUXOND         BUILD/fluxond

and the extension built in place (``make python``: fluxonkv/_native*.so).

Everywhere else they are skipped with the reason; the tests that need no
device (tests/test_local.py) run anywhere.

The session loads a fresh module (segment_mb=128), starts ``fluxond
--foreground`` (dying with this process: PR_SET_PDEATHSIG) and unloads the
module at the end.  The daemon log is /tmp/fluxonkv-pytest-fluxond.log and is
printed when the daemon fails to start.
"""
import ctypes
import errno
import itertools
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

SYSFS = Path("/sys/kernel/fluxonkv")
DEV = Path("/dev/fluxonkv")
DAEMON_LOG = "/tmp/fluxonkv-pytest-fluxond.log"
SEGMENT_MB = 128


def sysfs(name):
    """An integer counter of /sys/kernel/fluxonkv/."""
    return int((SYSFS / name).read_text().strip(), 0)


def wait_sysfs(name, want, timeout=3.0):
    """Wait for counter @name to read @want; returns the last value."""
    end = time.monotonic() + timeout
    while True:
        v = sysfs(name)
        if v == want or time.monotonic() > end:
            return v
        time.sleep(0.01)


def _why_not():
    if os.environ.get("FLUXON_VM") != "1":
        return "needs the test VM (FLUXON_VM=1; run through tools/vm/run)"
    if os.geteuid() != 0:
        return "needs root (loads fluxonkv.ko)"
    ko = os.environ.get("FLUXONKV_KO")
    if not ko or not os.access(ko, os.R_OK):
        return f"FLUXONKV_KO={ko!r} is not a readable module"
    daemon = os.environ.get("FLUXOND")
    if not daemon or not os.access(daemon, os.X_OK):
        return f"FLUXOND={daemon!r} is not an executable fluxond"
    try:
        import fluxonkv._native  # noqa: F401
    except ImportError as e:
        return f"fluxonkv._native: {e} (run 'make python')"
    return None


def _run(*argv):
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)


def _unload():
    end = time.monotonic() + 3
    while SYSFS.exists() or Path("/sys/module/fluxonkv").exists():
        r = _run("rmmod", "fluxonkv")
        if r.returncode == 0:
            break
        if time.monotonic() > end:
            raise RuntimeError(f"rmmod fluxonkv: {r.stdout}")
        time.sleep(0.05)


def _pdeathsig():
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _start_daemon(args):
    """fluxond --foreground ARGS, registered (its log appended)."""
    log = open(DAEMON_LOG, "a")
    daemon = subprocess.Popen([os.environ["FLUXOND"], "--foreground"] + args,
                              stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT,
                              preexec_fn=_pdeathsig)
    log.close()
    end = time.monotonic() + 10
    while sysfs("daemon_pid") != daemon.pid:
        if daemon.poll() is not None or time.monotonic() > end:
            daemon.kill()
            daemon.wait()
            pytest.fail("fluxond did not register:\n" +
                        Path(DAEMON_LOG).read_text())
        time.sleep(0.02)
    return daemon


def _stop_daemon(daemon):
    daemon.send_signal(signal.SIGTERM)
    try:
        daemon.wait(5)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()
    if daemon.returncode != 0:
        sys.stderr.write(Path(DAEMON_LOG).read_text())
    wait_sysfs("daemon_pid", 0)


class Env:
    def __init__(self, daemon):
        self.daemon = daemon

    def restart_daemon(self, args):
        """Stop fluxond and start it again with ARGS (a warm restart:
        the module keeps every value)."""
        _stop_daemon(self.daemon)
        self.daemon = _start_daemon(args)

    sysfs = staticmethod(sysfs)
    wait_sysfs = staticmethod(wait_sysfs)

    def call_with_daemon_stopped(self, call, spin=0.3):
        """Run @call in a thread while fluxond is stopped (SIGSTOP) and
        check that this thread keeps running Python code meanwhile and
        that the call is still waiting in the kernel; then let the daemon
        go and return the call's result.  A call that held the GIL while
        it waits could not let this thread spin."""
        done, errors = [], []

        def run():
            try:
                done.append(call())
            except BaseException as e:  # reported below
                errors.append(e)

        os.kill(self.daemon.pid, signal.SIGSTOP)
        try:
            th = threading.Thread(target=run)
            th.start()
            deadline = time.monotonic() + spin
            spins = 0
            while time.monotonic() < deadline:  # pure Python, needs the GIL
                spins += 1
            assert spins > 1000
            assert th.is_alive() and not done  # still in the kernel
        finally:
            os.kill(self.daemon.pid, signal.SIGCONT)
        th.join(30)
        assert not th.is_alive() and errors == [] and len(done) == 1
        return done[0]


@pytest.fixture(scope="session")
def fluxon_env():
    why = _why_not()
    if why:
        pytest.skip(why)
    _unload()
    r = _run("insmod", os.environ["FLUXONKV_KO"], f"segment_mb={SEGMENT_MB}")
    if r.returncode:
        pytest.fail(f"insmod failed: {r.stdout}")
    end = time.monotonic() + 3
    while not (DEV.exists() and (SYSFS / "daemon_pid").exists()):
        if time.monotonic() > end:
            pytest.fail("module loaded but /dev/fluxonkv did not appear")
        time.sleep(0.01)
    open(DAEMON_LOG, "w").close()
    env = Env(_start_daemon([]))
    try:
        yield env
    finally:
        _stop_daemon(env.daemon)
        _unload()


@pytest.fixture
def puts_via_master(fluxon_env):
    """fluxond with --put-via-master for one test: every put then waits
    for the daemon (PUT_START / PUT_DONE), which is what a test of a call
    blocked in the kernel needs; by default a single node's module
    publishes puts itself and a put needs no daemon."""
    fluxon_env.restart_daemon(["--put-via-master"])
    try:
        yield
    finally:
        fluxon_env.restart_daemon([])


# The tenants of test_tenants.py: fluxond's `tenants:` section.  uid
# NOBODY may use alpha, not beta (root, CAP_SYS_ADMIN, may bind to any).
NOBODY = 65534
TENANTS = {"alpha": 1, "beta": 2}
TENANTS_YAML = f"""\
fluxonkv_spec:
  tenants:
    - {{name: alpha, id: 1, uids: [0, {NOBODY}], gids: []}}
    - {{name: beta, id: 2, uids: [0], gids: []}}
"""
TENANTS_CONFIG = "/tmp/fluxonkv-pytest-tenants.yaml"


@pytest.fixture(scope="module")
def tenants(fluxon_env):
    """fluxond restarted with TENANTS_YAML for one test module (a warm
    restart: it loads the tenant table into the module), back to no
    configuration after it.  Skips where the module has no tenants
    (FLUXONKV_INFO_TENANTS) or fluxond does not resolve them.  Yields
    TENANTS (name -> id)."""
    import fluxonkv
    from fluxonkv import FluxonKVError

    with fluxonkv.Store() as kv:
        if not kv.info().tenants:
            pytest.skip("the module has no tenants (FLUXONKV_INFO_TENANTS "
                        "unset: it predates FLUXONKV_IOC_TENANT)")
    Path(TENANTS_CONFIG).write_text(TENANTS_YAML)
    fluxon_env.restart_daemon(["--config", TENANTS_CONFIG])
    try:
        end = time.monotonic() + 5
        while True:
            try:
                if fluxonkv.tenant_id("alpha") == TENANTS["alpha"]:
                    break
            except FluxonKVError as e:
                if e.errno == errno.EOPNOTSUPP:
                    pytest.skip(f"fluxond has no tenants: {e}")
                if time.monotonic() > end:
                    pytest.fail(f"fluxond does not resolve tenant alpha: {e}"
                                "\n" + Path(DAEMON_LOG).read_text())
            time.sleep(0.05)
        yield TENANTS
    finally:
        fluxon_env.restart_daemon([])


def in_child_as(uid, fn):
    """Run @fn() in a forked child as @uid (gid too), a member of the
    control socket's group only (as an operator adds a tenant's users to
    fluxond's group), with /dev/fluxonkv open to everyone meanwhile; fail
    with the child's traceback if it raised."""
    import traceback

    sock = os.environ.get("FLUXOND_CONTROL", "/run/fluxonkv/fluxond.sock")
    groups = [os.stat(sock).st_gid] if os.path.exists(sock) else []
    mode = DEV.stat().st_mode & 0o7777
    os.chmod(DEV, 0o666)
    r, w = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:        # the child: never returns into pytest
            os.close(r)
            code = 0
            try:
                os.setgroups(groups)
                os.setgid(uid)
                os.setuid(uid)
                fn()
            except BaseException:
                os.write(w, traceback.format_exc().encode())
                code = 1
            os._exit(code)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            report = f.read().decode(errors="replace")
        _, status = os.waitpid(pid, 0)
    finally:
        os.chmod(DEV, mode)
    assert os.waitstatus_to_exitcode(status) == 0, \
        f"the child as uid {uid} failed:\n{report}"


@pytest.fixture
def kv(fluxon_env):
    """An open Store; closed (and its holders released) after the test."""
    import fluxonkv

    store = fluxonkv.Store()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def key(request):
    """key() -> a fresh key unique to this test: 'test_name/N'."""
    counter = itertools.count()
    name = request.node.name[:200]
    return lambda: f"{name}/{next(counter)}"


def pattern(size, seed):
    """@size bytes that differ with @seed and with every 4 KiB block.

    Each 4096-byte block starts with (seed, block number) so a value that
    comes back shifted, truncated or from another key does not compare equal.
    """
    body = bytes((seed * 131 + i * 7) & 0xFF for i in range(4096 - 8))
    blocks = (size + 4095) // 4096
    data = b"".join(struct.pack("<II", seed & 0xFFFFFFFF, j) + body
                    for j in range(blocks))
    return data[:size]

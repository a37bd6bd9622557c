# SPDX-License-Identifier: GPL-2.0
"""One Store shared by several threads: every value read is the one written."""
import threading

from conftest import pattern

THREADS = 6
ROUNDS = 25


def test_threads_put_and_get_concurrently(kv, key, fluxon_env):
    base = fluxon_env.sysfs("holders")
    shared = [key() for _ in range(4)]
    shared_values = {k: pattern(50_000, 1000 + i) for i, k in enumerate(shared)}
    kv.put_many(shared_values)
    prefix = key()
    errors = []
    start = threading.Barrier(THREADS)

    def worker(t):
        try:
            start.wait()
            for r in range(ROUNDS):
                k = f"{prefix}/t{t}/r{r}"
                seed = t * ROUNDS + r
                value = pattern(4096 * (1 + (seed % 16)) + seed, seed)
                put_id = kv.put(k, value)
                with kv.get(k) as h:
                    assert h.put_id == put_id, (k, h.put_id, put_id)
                    assert bytes(h) == value, k
                sk = shared[seed % len(shared)]
                with kv.get(sk) as h:
                    assert h.view() == shared_values[sk], sk
                if r % 3 == 0:
                    assert kv.delete(k)
                    assert kv.get(k) is None
        except BaseException as e:  # reported by the main thread
            errors.append((t, repr(e)))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads)
    assert errors == []
    assert fluxon_env.wait_sysfs("holders", base) == base


def test_threads_share_one_holder(kv, key):
    k = key()
    value = pattern(200_000, 77)
    kv.put(k, value)
    h = kv.get(k)
    results = []

    def reader():
        results.append(bytes(h) == value and h.view() == value)

    threads = [threading.Thread(target=reader) for _ in range(THREADS)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert results == [True] * THREADS
    h.release()


def test_calls_release_the_gil_while_in_the_kernel(kv, key, fluxon_env,
                                                   puts_via_master):
    """A put waiting on a stopped daemon must not stop other threads."""
    k = key()
    put_ids = fluxon_env.call_with_daemon_stopped(
        lambda: kv.put_many({k: b"waits for the daemon"}), spin=0.5)
    assert len(put_ids) == 1 and put_ids[0] > 0
    with kv.get(k) as h:
        assert bytes(h) == b"waits for the daemon"

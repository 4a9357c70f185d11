"""The loop thread's hand-off of recording samples (RecorderFeed): every sample recorded, in order,
by the writer thread; a full ring drops and counts instead of making the loop wait."""

from __future__ import annotations

import threading

import numpy as np

from hebictl.control.recorder import FIELDS, Recorder, RecorderFeed


def _sample(i: int, dof: int) -> list[np.ndarray]:
    return [np.full(dof, 10.0 * k + i) for k in range(len(FIELDS))]


def test_every_sample_is_recorded_in_order_by_the_writer_thread():
    """5,000 samples put from a producer thread while the writer drains every 1 ms: after close()
    the recorder holds exactly the samples put, in order (compared with the values put)."""
    rec = Recorder(3)
    feed = RecorderFeed(rec, capacity=256, poll=0.001)
    puts: list[bool] = []

    def produce() -> None:
        for i in range(5000):
            while not feed.put(float(i), *_sample(i, 3)):  # a full ring: this test waits, a loop would not
                feed.dropped -= 1
                threading.Event().wait(0.0005)
            puts.append(True)

    t = threading.Thread(target=produce)
    t.start()
    t.join(60)
    feed.close()
    assert len(rec) == 5000 and feed.dropped == 0
    np.testing.assert_array_equal(rec.times, np.arange(5000.0))
    for k, field in enumerate(FIELDS):
        np.testing.assert_array_equal(rec.series(field)[:, 1], 10.0 * k + np.arange(5000.0))


def test_a_full_ring_drops_and_counts_without_waiting():
    """A writer that has not drained yet (long poll): put() returns False once the ring is full and
    counts the drop; what fitted is recorded at close()."""
    rec = Recorder(2)
    feed = RecorderFeed(rec, capacity=8, poll=60.0)
    results = [feed.put(float(i), *_sample(i, 2)) for i in range(12)]
    assert results == [True] * 8 + [False] * 4 and feed.dropped == 4
    feed.close()
    np.testing.assert_array_equal(rec.times, np.arange(8.0))

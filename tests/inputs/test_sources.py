"""Samples that arrive in a burst between two polls: the axes are the newest's, and no button state is
skipped (a tap whose down and up reached the controller inside one cycle is still a press).

A burst is what a busy robot PC makes of a steady 50 Hz stream: the broker, the bridge process or the
arm thread stalls, then several samples land in one cycle. Before, the mailbox kept only the newest, so
the tap's down and up were both lost (CI saw the gravcomp app's quit press vanish)."""

from __future__ import annotations

import json

from hebictl.hardware.clock import SimClock
from hebictl.inputs.guard import InputGuard
from hebictl.inputs.sources import MAX_BUTTON_BACKLOG, Coalescer, MailboxSource, TimedSource
from hebictl.inputs.state import InputState

UP = (0,) * 8
B3 = (0, 0, 1, 0, 0, 0, 0, 0)


def state(t: float, buttons: tuple[int, ...], axis: float = 0.0, seq: int = 0) -> InputState:
    return InputState(t, buttons, (axis,) + (0.0,) * 7, seq=seq)


def message(seq: int, buttons: tuple[int, ...], axis: float) -> str:
    return json.dumps({"seq": seq, "ts": 0.0, "client": "op", "buttons": list(buttons),
                       "axes": [axis] + [0.0] * 7})


def test_a_tap_inside_one_cycle_is_a_press_then_a_release_with_the_newest_axes():
    box = MailboxSource(SimClock())
    assert box.offer(message(1, UP, 0.1))
    assert box.poll(0.0).buttons == UP
    for seq, (buttons, axis) in enumerate([(B3, 0.2), (B3, 0.3), (UP, 0.4), (UP, 0.5)], start=2):
        assert box.offer(message(seq, buttons, axis))   # four samples between two polls
    got = [box.poll(0.0), box.poll(0.0), box.poll(0.0)]
    assert [g.buttons if g else None for g in got] == [B3, UP, None]
    assert [g.axes[0] for g in got if g] == [0.5, 0.5]   # the axes are always the newest sample's
    assert got[0].seq == got[1].seq == 5
    guard = InputGuard(lifetime=0.25, enable=1, quit=3)
    guard.step(0.0, state(0.0, UP))
    edges = [guard.step(0.01 * i, g).edge(3) for i, g in enumerate(got[:2], start=1)]
    print(f"B3 edges over the two cycles after the burst: {edges}")
    assert edges == [1, -1]


def test_samples_without_a_button_change_coalesce_to_the_newest():
    box = MailboxSource(SimClock())
    for seq in range(1, 30):
        assert box.offer(message(seq, UP, seq / 100))
    got = box.poll(0.0)
    assert got is not None and got.axes[0] == 0.29 and got.seq == 29
    assert box.poll(0.0) is None


def test_the_bridge_process_path_keeps_button_states_too():
    box = MailboxSource(SimClock())
    for i, buttons in enumerate([UP, B3, UP]):
        box.keep(state(0.001 * i, buttons, seq=i + 1))
    assert [box.poll(0.0).buttons for _ in range(3)] == [UP, B3, UP]
    assert box.poll(0.0) is None


def test_a_flood_of_toggling_buttons_is_bounded_and_counted():
    box = MailboxSource(SimClock())
    n = 1000
    for seq in range(1, n + 1):
        assert box.offer(message(seq, B3 if seq % 2 else UP, seq / n))
    polls = []
    while (got := box.poll(0.0)) is not None:
        polls.append(got)
        assert got.axes[0] == 1.0   # the newest axes, whatever the backlog
    print(f"{n} toggles in one cycle: {len(polls)} polls, counts {box.counts()}")
    assert len(polls) == MAX_BUTTON_BACKLOG
    assert box.counts() == (n, {"button_backlog": n - MAX_BUTTON_BACKLOG})
    assert polls[-1].buttons == UP   # the newest button state is the last delivered


def test_clear_forgets_what_waits_and_keeps_the_last_state_as_reference():
    c = Coalescer()
    c.add(state(0.0, B3))
    assert c.take().buttons == B3
    c.add(state(0.1, UP))
    c.add(state(0.2, B3))
    c.clear()
    assert c.take() is None and not c.waiting
    c.add(state(0.3, B3))   # the same buttons as the newest forgotten sample: no new state, axes only
    got = c.take()
    assert got is not None and got.buttons == B3


def test_a_replay_faster_than_the_loop_keeps_its_taps():
    # a script at 1 kHz replayed by a 100 Hz loop: a 3 ms tap falls between two polls
    samples = [state(0.000, UP), state(0.011, B3), state(0.012, B3), state(0.013, UP), state(0.025, UP, 0.7)]
    src = TimedSource(samples)
    got = [src.poll(0.01 * i) for i in range(5)]
    assert [g.buttons if g else None for g in got] == [UP, None, B3, UP, None]
    assert got[2].axes[0] == 0.0 and got[3].axes[0] == 0.7   # the release carries the newest axes
    assert src.exhausted

"""Every arm at a glance, and which arms run as one group: what the panel's overview shows.

An arm of a multi-arm config (``hebictl teleop ARMS.multi.yaml``, hebictl/teleop/group.py) says in its
status's ``group`` which arms are served with it, in one process under one supervisor, and whether
one of them holds them all (``by``, ``cause``). Each arm's ``group`` was checked on arrival
(:func:`hebictl.teleop.state_schema.validate_status`: a bad one is dropped and counted, the status
kept); what is left is still only that arm's *claim*. Any account that may publish an arm's state can
claim a group with any other arm, so the overview shows a group as such only when it is
**confirmed**: every member is on the broker and its own status names the same arms. An arm whose
claim is not confirmed keeps its claim in its own card (``group_unconfirmed``) and is drawn alone;
another arm's card never shows what someone else claims about it (each card's state, ``held`` and
``by`` included, comes from that arm's own status).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from hebictl.panel.link import ArmView

__all__ = ["arm_summary", "confirmed_members", "group_words", "overview"]


def group_words(group: Mapping[str, Any] | None) -> str | None:
    """What holds the group, in words ("right e-stopped", "right stopped: contact ..."), or None
    while nothing does."""
    if not group or not group.get("held"):
        return None
    by, cause = group.get("by"), str(group.get("cause") or "")
    if by is None:
        return f"every arm stopped ({cause})" if cause else "every arm stopped"
    if "e-stop" in cause or cause.startswith("estop"):
        return f"{by} e-stopped"
    return f"{by} stopped: {cause}" if cause else f"{by} stopped"


def arm_summary(view: ArmView, now: float) -> dict[str, Any]:
    """One arm's card: its id, data health (offline, stale), state, mode, e-stop, M-stop, what its
    own status says of its group, and the last ``group_hold`` refusal it answered (anyone's)."""
    st = view.status or {}
    health = view.health(now)
    group = st.get("group")
    refusal = view.group_refusal if group and group.get("held") else None
    desc = view.description or {}
    return {"id": view.arm_id, "status": st.get("status"), "offline": view.offline, "stale": health["stale"],
            "writable": view.writable, "backend": desc.get("backend"),
            "config": desc.get("config"), "state": st.get("state"), "mode": st.get("mode"),
            "estop": bool(st.get("estop")), "m_stopped": bool(st.get("m_stopped")),
            "group": None if not group else {k: group.get(k) for k in ("arms", "held", "by", "cause", "time")},
            "held": bool(group and group.get("held")), "held_by": None if not group else group.get("by"),
            "held_words": group_words(group), "refusal": refusal, "group_dropped": view.group_dropped,
            "group_unconfirmed": False}


def confirmed_members(arms: Mapping[str, ArmView], arm_id: str) -> list[str]:
    """The arms of ``arm_id``'s group (itself included, in the order they name themselves) if the
    group is confirmed (every member on the broker and its own status naming the same arms), else []."""
    view = arms.get(arm_id)
    members = ((view.status or {}).get("group") or {}).get("arms") if view is not None else None
    if not members:
        return []
    for m in members:
        other = arms.get(m)
        if other is None or ((other.status or {}).get("group") or {}).get("arms") != members:
            return []
    return list(members)


def overview(arms: Mapping[str, ArmView], now: float | None = None) -> dict[str, Any]:
    """Every arm's card (:func:`arm_summary`, sorted by id) and the confirmed groups, each
    ``{"arms": [...], "held": bool, "by", "cause", "words"}`` in the order its members name
    themselves. Held, by and cause are the first member's that reports the group held (they publish
    their statuses apart, so for a moment they may differ; each card shows its own)."""
    now = time.monotonic() if now is None else now
    cards = {arm_id: arm_summary(view, now) for arm_id, view in sorted(arms.items())}
    groups: list[dict[str, Any]] = []
    seen: set[tuple[str, ...]] = set()
    for card in cards.values():
        group = card["group"]
        if not group:
            continue
        members = tuple(group["arms"])
        if members in seen:
            continue
        confirmed = all(m in cards and (cards[m]["group"] or {}).get("arms") == list(members) for m in members)
        if not confirmed:
            card["group_unconfirmed"] = True
            continue
        seen.add(members)
        holder = next((cards[m]["group"] for m in members if cards[m]["held"]), None)
        groups.append({"arms": list(members), "held": holder is not None,
                       "by": None if holder is None else holder.get("by"),
                       "cause": None if holder is None else holder.get("cause"), "words": group_words(holder)})
    grouped = {m for g in groups for m in g["arms"]}
    for arm_id, card in cards.items():
        card["in_group"] = arm_id in grouped
        if card["group"] and arm_id not in grouped:
            card["group_unconfirmed"] = True
    return {"arms": list(cards.values()), "groups": groups}

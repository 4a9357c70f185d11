"""HEBI's Mobile IO layout files (``user_data.mobile_io_layout``), read with a bound and checked.

A layout is a JSON list of widgets, each ``{"id", "channels", "type", "x", "y", "width", "height",
"parameters"}`` (HEBI's ``kits/arms/config/layouts/*.json``): buttons (``b1``..``b8``, parameters
``text`` and ``mode`` momentary/toggle), sliders and joysticks on axes (``a1``..``a8``). hebictl
sends it to a real device as it is; it also reads it to know which buttons a config's layout
labels (``labels``), for the docs and the text shown on the phone. Every error names the file and
the widget.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from hebictl.errors import ConfigError
from hebictl.limits import read_regular_file

#: HEBI's layouts are 1-3 KB; 64 KiB bounds a hostile one
MAX_LAYOUT_BYTES = 64 << 10
MAX_WIDGETS = 64
WIDGET_KEYS = {"id", "channels", "type", "x", "y", "width", "height", "parameters"}
CHANNEL_NAMES = {f"{c}{i}" for c in "ab" for i in range(1, 9)}


def layout_path(user_data: dict[str, Any], config_dir: str | os.PathLike[str]) -> Path | None:
    """The layout file a config names (relative to the config's folder), or None."""
    ref = user_data.get("mobile_io_layout")
    if ref is None:
        return None
    if not isinstance(ref, str) or not ref:
        raise ConfigError("mobile_io_layout must be a file name", key="user_data.mobile_io_layout")
    return Path(config_dir) / ref


def load_layout(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The widgets of a layout file, checked (see the module docstring)."""
    data = read_regular_file(path, what="Mobile IO layout", max_bytes=MAX_LAYOUT_BYTES, error=ConfigError)
    try:
        widgets = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not a JSON Mobile IO layout: {exc}", file=path) from None
    if not isinstance(widgets, list) or len(widgets) > MAX_WIDGETS:
        raise ConfigError(f"a Mobile IO layout is a list of at most {MAX_WIDGETS} widgets", file=path)
    for i, w in enumerate(widgets):
        _check_widget(w, f"[{i}]", path)
    return widgets


def _check_widget(w: Any, where: str, path: str | os.PathLike[str]) -> None:
    if not isinstance(w, dict):
        raise ConfigError("a widget must be an object", file=path, key=where)
    missing = {"id", "channels", "type"} - set(w)
    unknown = set(w) - WIDGET_KEYS
    if missing or unknown:
        raise ConfigError(f"widget keys: missing {sorted(missing)}, unknown {sorted(unknown)}", file=path, key=where)
    channels = w["channels"]
    if not isinstance(channels, list) or not channels or any(c not in CHANNEL_NAMES for c in channels):
        raise ConfigError(f"channels must name b1..b8 or a1..a8, got {channels!r}"[:200], file=path,
                          key=f"{where}.channels")
    for key in ("x", "y", "width", "height"):
        v = w.get(key, 0.0)
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or abs(v) > 2.0:
            raise ConfigError(f"{key} must be a number in [-2, 2], got {v!r}"[:200], file=path, key=f"{where}.{key}")
    params = w.get("parameters", {})
    if not isinstance(params, dict):
        raise ConfigError("parameters must be an object", file=path, key=f"{where}.parameters")
    mode = params.get("mode")
    if mode is not None and mode not in ("momentary", "toggle"):
        raise ConfigError(f"a button's mode is momentary or toggle, got {mode!r}"[:200], file=path,
                          key=f"{where}.parameters.mode")


def labels(widgets: list[dict[str, Any]]) -> dict[str, str]:
    """Channel -> the label the layout shows on it (``{"b1": "🏠", ...}``)."""
    out: dict[str, str] = {}
    for w in widgets:
        text = (w.get("parameters") or {}).get("text")
        label = " ".join(str(t) for t in text) if isinstance(text, list) else str(text or w["id"])
        for c in w["channels"]:
            out[c] = label
    return out

"""Where the bundled kits and configs live (``hrdf_kits/`` and ``configs/`` of the repository).

An editable install (``pip install -e .``, ``tools/dev``) reads them from the repository; a wheel
installs copies under ``<prefix>/share/hebictl/`` (``[tool.setuptools.data-files]``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from hebictl.errors import InstallationError

REPO_ROOT = Path(__file__).resolve().parents[1]
_SHARE = Path(sys.prefix) / "share" / "hebictl"
_BASE = REPO_ROOT if (REPO_ROOT / "hrdf_kits").is_dir() or not (_SHARE / "hrdf_kits").is_dir() else _SHARE
KITS_DIR = _BASE / "hrdf_kits"
CONFIGS_DIR = _BASE / "configs"
DEFAULT_KIT = "x-series-6dof.hrdf"
DEFAULT_CONFIG = "x-series-6dof.cfg.yaml"


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise InstallationError(f"bundled {what} not found at {path} (nor in {_SHARE}): reinstall hebictl, "
                                "or give the file explicitly")
    return path


def bundled_kit(name: str = DEFAULT_KIT) -> Path:
    return _existing(KITS_DIR / name, "kit")


def bundled_config(name: str = DEFAULT_CONFIG) -> Path:
    return _existing(CONFIGS_DIR / name, "config")

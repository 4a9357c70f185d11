"""Where the bundled kits and configs live (``hrdf_kits/`` and ``configs/`` of the repository)."""

from __future__ import annotations

from pathlib import Path

from hebictl.errors import InstallationError

REPO_ROOT = Path(__file__).resolve().parents[1]
KITS_DIR = REPO_ROOT / "hrdf_kits"
CONFIGS_DIR = REPO_ROOT / "configs"
DEFAULT_KIT = "x-series-6dof.hrdf"
DEFAULT_CONFIG = "x-series-6dof.cfg.yaml"


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise InstallationError(f"bundled {what} not found at {path}: hebictl must be installed from its repository "
                                "(pip install -e .) for the bundled kits and configs")
    return path


def bundled_kit(name: str = DEFAULT_KIT) -> Path:
    return _existing(KITS_DIR / name, "kit")


def bundled_config(name: str = DEFAULT_CONFIG) -> Path:
    return _existing(CONFIGS_DIR / name, "config")

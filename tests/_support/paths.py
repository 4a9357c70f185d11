"""Where the repository and its bundled kits and configs are, for tests in any folder."""

from __future__ import annotations

from pathlib import Path

#: the repository (tests/ is one level below it)
REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = REPO_ROOT / "tests"
CONFIGS_DIR = REPO_ROOT / "configs"
KITS_DIR = REPO_ROOT / "hrdf_kits"
#: the bundled configs every safety claim is shown on (configs/*.cfg.yaml)
BUNDLED_CONFIGS = tuple(sorted(CONFIGS_DIR.glob("*.cfg.yaml")))
#: the 6-DoF X-series kit: the default arm of the examples and of most end-to-end tests
KIT6_CONFIG = CONFIGS_DIR / "x-series-6dof.cfg.yaml"
KIT6_HRDF = KITS_DIR / "x-series-6dof.hrdf"
#: the 6-DoF kit's home pose [rad] (elbow up, inside its joint limits, away from singularities)
KIT6_HOME = (0.0, 1.2, 1.8, 2.2, -1.57, 0.0)

"""Every corpus file that loads gives finite gravity compensation at random configurations (issue 12.3).

hebictl.model.bounds refuses physically absurd values at load; this checks the other half of the
promise on real files of every format: a model that loads has finite dynamics everywhere.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

from hebictl.errors import HebictlError
from hebictl.formats import load_model
from tests._support.corpus import CORPUS_DIR
from tests.formats.references import random_q

pytestmark = pytest.mark.corpus

SUFFIXES = (".hrdf", ".urdf", ".sdf", ".world", ".xml", ".skel", ".mjcf")
#: the corpus is checked in this many shards, so pytest-xdist spreads the ~650 loads over its workers
SHARDS = 8
FILES = sorted(p for p in CORPUS_DIR.rglob("*") if p.suffix.lower() in SUFFIXES and p.is_file()) \
    if CORPUS_DIR.is_dir() else []


def _check_shard(shard: int) -> int:
    """Load every ``SHARDS``-th corpus file from ``shard`` on; check its gravity compensation and link
    poses at 3 random configurations; return how many loaded."""
    loaded = 0
    rng = np.random.default_rng(12 + shard)
    for path in FILES[shard::SHARDS]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = load_model(path)
        except HebictlError:
            continue  # not a robot description, or refused with a reason (the readers' own tests)
        loaded += 1
        g = np.array([0.3, -1.1, -9.81])
        for _ in range(3):
            q = random_q(model, rng)
            tau = model.gravity_compensation(q, gravity=g)
            assert np.all(np.isfinite(tau)), Path(path).relative_to(CORPUS_DIR)
            assert np.all(np.isfinite(model.link_poses(q))), Path(path).relative_to(CORPUS_DIR)
    return loaded


@pytest.mark.parametrize("shard", range(SHARDS))
def test_every_loaded_corpus_model_has_finite_gravity_compensation(shard):
    """Each shard loads its share of the corpus (656 files load today; every shard loads about 80)."""
    assert _check_shard(shard) >= 600 // SHARDS

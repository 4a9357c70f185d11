"""The names `import hebictl` promises all resolve (they are imported lazily)."""

import hebictl


def test_every_public_name_resolves():
    """Each name in hebictl.__all__ is importable through the package."""
    for name in hebictl.__all__:
        assert getattr(hebictl, name) is not None, name


def test_errors_share_one_root():
    """Every exception class hebictl exports derives from HebictlError."""
    errors = [getattr(hebictl, n) for n in hebictl.__all__ if n.endswith(("Error", "Failed", "Expired",
                                                                           "Violation", "Rejected"))]
    assert len(errors) >= 8
    assert all(issubclass(e, hebictl.HebictlError) for e in errors)

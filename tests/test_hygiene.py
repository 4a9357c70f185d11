"""Rules for the test suite itself (issue 22 item 5), checked on its source with :mod:`ast`.

* **No private names of another module.** A test that calls ``module._helper()``, reads
  ``module._state``, patches ``monkeypatch.setattr(module, "_state", ...)``, imports
  ``from module import _name`` or imports a private module (``hebictl.model._warm``) pins an
  implementation detail: the module cannot be changed without breaking a test that is not about
  its behaviour. Tests go through public names
  (a benchmark's rows too: ``benchmarks.safety.teleop_row``); the few exceptions are listed in
  :data:`ALLOWED_PRIVATE` with the reason each one needs.
* **Helpers come from tests/_support, not from a conftest or another test module.** ``conftest.py``
  files hold fixtures; pytest imports them itself (under a name that depends on the rootdir and
  import mode), so a test importing one may get a second copy of its module state. A ``test_*.py``
  imported for its helpers runs its module-level skips in the importing module. A fixture of
  tests/conftest.py (the broker, the corpus, hebi-py) is not defined again elsewhere.
* **Extras are imported by the tests that need them.** A test module that imports an optional
  dependency (``aiomqtt`` of the ``teleop`` extra, ``mujoco`` of ``sim`` ...) at module level,
  directly or through a tests/ helper module, must skip first with ``pytest.importorskip`` naming
  it, so that a user without that extra still collects and runs the rest of the suite. The
  subprocess test at the end checks the same thing for real: the whole suite collects with the
  extras' packages made unimportable.
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._support.extras import EXTRA_OF_PACKAGE
from tests._support.paths import REPO_ROOT, TESTS_DIR

#: top-level packages whose modules are "project modules" (their private names are off limits)
PROJECT_PACKAGES = frozenset({"hebictl", "sim_backend", "benchmarks", "tools", "tests"})
#: (test file relative to tests/, private name) -> why the test needs it (one line each)
ALLOWED_PRIVATE: dict[tuple[str, str], str] = {}
#: distribution name in pyproject.toml -> import name, where they differ
IMPORT_NAME = {"mcap-protobuf-support": "mcap_protobuf", "foxglove-schemas-protobuf": "foxglove_schemas_protobuf",
               "foxglove-sdk": "foxglove", "pin": "pinocchio", "drake": "pydrake"}
#: optional dependencies of the test extra that are tools, not imported by any test module
NOT_IMPORTED = frozenset({"pytest", "pytest-timeout", "pytest-xdist", "mypy", "ruff"})


def _test_sources() -> list[Path]:
    return sorted(p for p in TESTS_DIR.rglob("*.py") if "__pycache__" not in p.parts)


def _rel(path: Path) -> str:
    return path.relative_to(TESTS_DIR).as_posix()


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved against ``path``)."""
    if not node.level:
        return node.module or ""
    base = _module_name(path).split(".")
    if path.name != "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Finding:
    """One private reference: where, which name, and how it was reached."""

    rel: str
    line: int
    name: str
    how: str

    def __str__(self) -> str:
        return f"tests/{self.rel}:{self.line}: {self.how}"


def _project_bindings(path: Path, tree: ast.Module) -> dict[str, str]:
    """Local name -> the project module (or module.attribute) it is bound to by an import."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROJECT_PACKAGES:
                    bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                        alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(path, node)
            if module.split(".")[0] in PROJECT_PACKAGES:
                for alias in node.names:
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    return bound


def _string_arg(call: ast.Call, index: int) -> str | None:
    if len(call.args) > index and isinstance(call.args[index], ast.Constant) and isinstance(
            call.args[index].value, str):
        return call.args[index].value
    return None


def private_references(path: Path, tree: ast.Module) -> Iterator[Finding]:
    """Every reference of this test file to a private name of another module (see the module docstring)."""
    rel = _rel(path)
    bound = _project_bindings(path, tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [_resolve(path, node)] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            for module in modules:  # a private module of the code under test (tests._support is the suite's own)
                private = [part for part in module.split(".") if _is_private(part)]
                if module.split(".")[0] in PROJECT_PACKAGES - {"tests"} and private:
                    yield Finding(rel, node.lineno, private[0], f"import of the private module {module}")
        if isinstance(node, ast.ImportFrom):
            module = _resolve(path, node)
            for alias in node.names:
                if _is_private(alias.name):
                    yield Finding(rel, node.lineno, alias.name, f"from {module} import {alias.name}")
        elif isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                yield Finding(rel, node.lineno, node.attr, f"{ast.unparse(node)} (private name of {bound[base.id]})")
        elif isinstance(node, ast.Call):
            f = node.func
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname not in ("setattr", "getattr", "delattr", "hasattr"):
                continue
            target = _string_arg(node, 0)
            if target is not None and "." in target:  # monkeypatch.setattr("pkg.module._name", value)
                name = target.rsplit(".", 1)[1]
                if target.split(".")[0] in PROJECT_PACKAGES and _is_private(name):
                    yield Finding(rel, node.lineno, name, f"{fname}({target!r}, ...)")
                continue
            name = _string_arg(node, 1)
            obj = node.args[0] if node.args else None
            if name is not None and _is_private(name) and isinstance(obj, ast.Name) and obj.id in bound:
                yield Finding(rel, node.lineno, name, f"{fname}({obj.id}, {name!r}) (private name of {bound[obj.id]})")


@functools.cache
def _trees() -> dict[Path, ast.Module]:
    return {p: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for p in _test_sources()}


def test_no_test_reaches_a_private_name_of_another_module():
    findings = [f for path, tree in _trees().items() for f in private_references(path, tree)
                if (f.rel, f.name) not in ALLOWED_PRIVATE]
    assert not findings, "tests use private names (make them public, or test through the public entry):\n" + \
        "\n".join(map(str, findings))


def test_every_allowed_private_name_is_still_used():
    """An allow-list entry whose reference is gone is removed, so the list only shrinks."""
    used = {(f.rel, f.name) for path, tree in _trees().items() for f in private_references(path, tree)}
    stale = [f"{rel}: {name}" for rel, name in ALLOWED_PRIVATE if (rel, name) not in used]
    assert not stale, f"allow-list entries no longer needed: {stale}"


def test_the_rule_sees_each_form_of_private_reference(tmp_path):
    """The checker on a made-up test file: each forbidden form is found once, public names are not."""
    source = '''
import hebictl.model.warmup
from benchmarks import safety
from hebictl.hardware import registry as reg
from hebictl.hardware.registry import register_backend, _BUILTIN
from hebictl.control.arm import Arm
from . import _local
from hebictl.model._warm import main

def test_x(monkeypatch, arm):
    safety._teleop_row("sim")
    reg._registered.clear()
    hebictl.model.warmup._mode()
    Arm._private_helper()
    monkeypatch.setattr(reg, "_registered", {})
    monkeypatch.setattr("hebictl.hardware.registry._registered", {})
    safety.teleop_row("sim")
    register_backend("a", "b:c")
    arm._state  # an object's attribute: not a module's name
    monkeypatch.setattr(reg, "available_backends", lambda: ())
    obj.__class__
'''
    path = TESTS_DIR / "made_up" / "test_made_up.py"
    found = sorted((f.line, f.name) for f in private_references(path, ast.parse(source)))
    assert found == [(5, "_BUILTIN"), (7, "_local"), (8, "_warm"), (11, "_teleop_row"), (12, "_registered"),
                     (13, "_mode"), (14, "_private_helper"), (15, "_registered"), (16, "_registered")], found


# ---------------------------------------------------------------------------------------- conftest
def _imports_of(path: Path, tree: ast.Module, forbidden: Callable[[str], bool]) -> Iterator[str]:
    """Each import in ``tree`` of a module (or module.name) ``forbidden`` says no to."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = _resolve(path, node)
            names = [f"{module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            if forbidden(name):
                yield f"tests/{_rel(path)}:{node.lineno}: imports {name}"


def test_no_module_imports_a_conftest():
    """Helpers shared by test modules live in tests/_support/; conftest.py files only hold fixtures."""
    found = [line for path, tree in _trees().items()
             for line in _imports_of(path, tree, lambda name: "conftest" in name.split("."))]
    assert not found, "import these helpers from tests/_support/ instead:\n" + "\n".join(found)


def test_no_module_imports_a_test_module():
    """Helpers shared by test modules live in helper modules (tests/_support/, or a folder's own such
    as tests/formats/references.py), not in a test_*.py: importing one runs its module-level
    skips, so a test could be skipped for another module's missing extra."""
    tests = {_module_name(p) for p in _trees() if p.name.startswith("test_")}
    found = [line for path, tree in _trees().items()
             for line in _imports_of(path, tree, lambda name: name in tests or name.rsplit(".", 1)[0] in tests)]
    assert not found, "move these helpers into a helper module:\n" + "\n".join(found)


def test_support_is_a_package_of_plain_helpers():
    """tests/_support defines no fixtures and no tests (pytest would not see them; conftest.py does)."""
    support = TESTS_DIR / "_support"
    assert (support / "__init__.py").is_file()
    bad = []
    for path in sorted(support.glob("*.py")):
        for node in ast.walk(_trees()[path]):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
                bad.append(f"tests/{_rel(path)}:{node.lineno}: {node.name}")
        bad += [f"tests/{_rel(path)}:{line}: fixture {name}" for line, name in _fixtures(_trees()[path])]
    assert not bad, bad


def _fixtures(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                "fixture" in ast.unparse(d) for d in node.decorator_list):
            yield node.lineno, node.name


def test_no_module_redefines_a_shared_fixture():
    """The fixtures of tests/conftest.py (the broker, the corpus, hebi-py ...) are defined once: a
    module or folder with its own copy drifts from the shared one (as three broker copies did)."""
    shared = {name for _, name in _fixtures(_trees()[TESTS_DIR / "conftest.py"])}
    assert {"broker", "corpus_dir", "hebi"} <= shared
    found = [f"tests/{_rel(path)}:{line}: {name}" for path, tree in _trees().items()
             if path != TESTS_DIR / "conftest.py" for line, name in _fixtures(tree) if name in shared]
    assert not found, "use the fixture of tests/conftest.py instead:\n" + "\n".join(found)


# ---------------------------------------------------------------------------------------- extras
def _importorskip_target(node: ast.stmt) -> str | None:
    """``pytest.importorskip("pkg.sub", ...)`` at module level (as a statement or an assignment) -> "pkg"."""
    value = node.value if isinstance(node, ast.Expr | ast.Assign | ast.AnnAssign) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "importorskip":
        name = _string_arg(value, 0)
        return name.split(".")[0] if name else None
    return None


def _module_level_imports(path: Path, tree: ast.Module) -> Iterator[tuple[int, str, set[str]]]:
    """(line, imported module, packages skipped-for so far) of each import that runs when the module is
    imported: module level, including ``try``/``if`` blocks but not function bodies or TYPE_CHECKING."""
    guarded: set[str] = set()

    def walk(body: list[ast.stmt]) -> Iterator[tuple[int, str, set[str]]]:
        for node in body:
            target = _importorskip_target(node)
            if target is not None:
                guarded.add(target)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield node.lineno, alias.name, set(guarded)
            elif isinstance(node, ast.ImportFrom):
                module = _resolve(path, node)
                for alias in node.names:
                    yield node.lineno, f"{module}.{alias.name}" if module.startswith("tests") else module, set(guarded)
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                yield from walk(node.body)
                yield from walk(node.orelse)
            elif isinstance(node, ast.Try):
                if any("ImportError" in ast.unparse(h.type) for h in node.handlers if h.type is not None):
                    continue  # an import that may fail on purpose
                yield from walk(node.body)

    yield from walk(tree.body)


def _unguarded_extras() -> dict[str, list[str]]:
    """tests/ module -> the extras it imports at import time without skipping first, each with the
    line and the chain through tests/ helper modules."""
    modules = {_module_name(p): p for p in _trees()}
    memo: dict[str, list[tuple[str, str]]] = {}

    def needs(name: str, stack: tuple[str, ...]) -> list[tuple[str, str]]:
        """(package, where) of each extra ``name`` imports at import time, unguarded."""
        if name in memo:
            return memo[name]
        path = modules[name]
        out: list[tuple[str, str]] = []
        for line, imported, guarded in _module_level_imports(path, _trees()[path]):
            top = imported.split(".")[0]
            where = f"tests/{_rel(path)}:{line}"
            if top in EXTRA_OF_PACKAGE and top not in guarded:
                out.append((top, f"{where}: import {imported} (the {EXTRA_OF_PACKAGE[top]} extra)"))
            helper = next((m for m in (imported, imported.rsplit(".", 1)[0]) if m in modules), None)
            if top == "tests" and helper is not None and helper not in stack:
                out += [(pkg, f"{where}: via {helper}: {msg}") for pkg, msg in needs(helper, (*stack, helper))
                        if pkg not in guarded]
        memo[name] = out
        return out

    return {f"tests/{_rel(path)}": [msg for _, msg in needs(name, (name,))] for name, path in modules.items()
            if (path.name.startswith("test_") or path.name == "conftest.py") and needs(name, (name,))}


def test_extras_are_imported_by_the_tests_that_need_them():
    """A test module (or conftest) that needs an extra at import time skips first with importorskip."""
    found = _unguarded_extras()
    assert not found, "skip first with pytest.importorskip('<package>', reason='... the <extra> extra'):\n" + \
        "\n".join(line for lines in found.values() for line in lines)


def test_the_extras_table_covers_pyproject():
    """Every optional dependency of pyproject.toml that tests may import is in tests/_support/extras.py."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"]
    missing = []
    for extra, requirements in extras.items():
        for requirement in requirements:
            dist = re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0]
            if dist == "hebictl" or dist in NOT_IMPORTED:
                continue
            name = IMPORT_NAME.get(dist, dist.replace("-", "_"))
            if name not in EXTRA_OF_PACKAGE:
                missing.append(f"{dist} ({extra})")
    assert not missing, f"add these to EXTRA_OF_PACKAGE: {missing}"


#: runs pytest with the packages named in argv[1] absent, as on a machine without them: every
#: finder answers "not found" for them (``import`` raises ModuleNotFoundError, find_spec gives None)
BLOCKER = """
import sys
BLOCKED = set(sys.argv[1].split(","))
class Absent:
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            return None
        return self.finder.find_spec(name, path, target)
    def __getattr__(self, attr):
        return getattr(self.finder, attr)
sys.meta_path[:] = [Absent(f) for f in sys.meta_path]
import pytest
sys.exit(pytest.main(["-p", "no:cacheprovider", "--collect-only", "-q", *sys.argv[2:]]))
"""


@pytest.mark.timeout(300)
@pytest.mark.parametrize("extras", [
    ("teleop",),
    # mujoco (the sim extra's package) is a core dependency too: the collision checks use its pipeline
    ("teleop", "panel", "plot", "record", "live", "test"),
], ids=["without-teleop", "without-any-extra"])
def test_suite_collects_without_the_extras(extras):
    """With the extras' packages unimportable (as on a machine without them), the whole suite
    collects without an error, and the tests that do not need them are still there."""
    blocked = sorted(p for p, e in EXTRA_OF_PACKAGE.items() if e in extras)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "HEBICTL_CORPUS": "none"}
    out = subprocess.run([sys.executable, "-c", BLOCKER, ",".join(blocked), "tests"], cwd=REPO_ROOT, env=env,
                         capture_output=True, text=True, timeout=280)
    summary = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    assert out.returncode == 0 and "error" not in summary, out.stdout[-4000:] + out.stderr[-2000:]
    collected = int(re.search(r"(\d+) tests? collected", out.stdout).group(1))  # type: ignore[union-attr]
    print(f"without {', '.join(extras)}: {summary}")
    # the pure-python tests of a folder that also holds broker tests are still collected
    assert "tests/teleop/test_schema.py::" in out.stdout and "tests/test_config.py::" in out.stdout
    assert collected > 1000, summary


def test_the_import_rules_see_conftests_and_test_modules():
    """The two import rules on a made-up module: relative and absolute imports are both found."""
    tests = {_module_name(p) for p in _trees() if p.name.startswith("test_")}
    source = ("from tests.formats.sdf.test_vs_drake import compare\nfrom .test_write_roundtrip import x\n"
              "from .conftest import y\nimport tests.teleop.conftest\nfrom tests.formats.references import random_q\n")
    tree, path = ast.parse(source), TESTS_DIR / "formats" / "test_made_up.py"
    found = list(_imports_of(path, tree, lambda name: name in tests or name.rsplit(".", 1)[0] in tests))
    assert found == ["tests/formats/test_made_up.py:1: imports tests.formats.sdf.test_vs_drake.compare",
                     "tests/formats/test_made_up.py:2: imports tests.formats.test_write_roundtrip.x"]
    found = list(_imports_of(path, tree, lambda name: "conftest" in name.split(".")))
    assert found == ["tests/formats/test_made_up.py:3: imports tests.formats.conftest.y",
                     "tests/formats/test_made_up.py:4: imports tests.teleop.conftest"]

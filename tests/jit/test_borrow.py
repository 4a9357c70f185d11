"""jit.borrowed and jit.exclusive (hebictl.jit.borrow): what Python and compiled code each get.

Why it matters: the model's single-call kernels cut their tables from borrowed arguments (no
reference counting) and reuse scratch held in the packed model (jit.exclusive). Compiled, both
must be the caller's memory itself; interpreted (a cold cache, where a kernel does not hold the GIL
through a call), exclusive must be a private copy, or two threads would share the scratch.
"""

from __future__ import annotations

import numpy as np

from hebictl import jit
from hebictl.jit.borrow import install


def test_in_python_borrowed_is_the_array_and_exclusive_a_private_copy():
    a = np.arange(6.0)
    assert jit.borrowed(a) is a
    b = jit.exclusive(a)
    assert b is not a and np.array_equal(b, a)
    b[0] = 99.0
    assert a[0] == 0.0


def test_compiled_both_are_the_callers_memory():
    import numba

    install()

    @numba.njit
    def write_through(a):
        v = jit.borrowed(a)[2:]  # a view of a borrowed array: still the caller's data
        v[0] = 5.0
        s = jit.exclusive(a[:2])  # held scratch: the region itself, not a copy
        s[1] = 7.0
        return v.sum() + s.sum()

    a = np.zeros(6)
    assert write_through(a) == 12.0
    assert a.tolist() == [0.0, 7.0, 5.0, 0.0, 0.0, 0.0]


def test_a_borrowed_array_carries_no_owner():
    """numba's meminfo pointer of a borrowed array is null (no counting); the argument's is not."""
    import numba
    from numba.core import types
    from numba.extending import intrinsic

    install()

    @intrinsic
    def meminfo_address(typingctx, arr):
        def codegen(context, builder, sig, args):
            ary = context.make_array(sig.args[0])(context, builder, value=args[0])
            return builder.ptrtoint(ary.meminfo, context.get_value_type(types.intp))

        return types.intp(arr), codegen

    @numba.njit
    def owners(a):
        return meminfo_address(a), meminfo_address(jit.borrowed(a)), meminfo_address(jit.borrowed(a)[1:])

    own, borrowed, view = owners(np.zeros(4))
    assert own != 0 and borrowed == 0 and view == 0
